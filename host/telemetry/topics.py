"""The run's telemetry topics, one JSON message each, encoded from the rows of the per-tick
record (host/report/run_dir.Recorder: the same rows timeseries.npz holds) and the host controller's
side information (node log lines, team events), for run.mcap and the live
server alike. Every topic has a JSON schema (MCAP schema encoding `jsonschema`, Foxglove
ws-protocol channel `schemaEncoding`); /log and /scene use Foxglove's own message types
(foxglove.Log, foxglove.SceneUpdate) so its Log and 3D panels show them.

  /joints   every control tick: q, qd, torque u and its parts by behaviour, each link's
            state, team membership and obstacle range
  /tool     every control tick: desired and actual tool position, position and
            orientation error
  /goal     every control tick: the goal wrench f and RMDAC's adaptive gains k (6.206)
  /nodes    every node's state, fault names, membership: at every change and once a second
  /events   a node's state, faults or membership changed (with the host's reason), or the
            host reported a team event
  /bus      10 Hz: late ticks, the host's good and bad (CRC) frames, late assertions, each
            as it stood at the tick the message is stamped with
  /log      node log lines and host events (foxglove.Log)
  /scene    20 Hz: the arm (link frames joined by a line, a sphere per joint), obstacles
            and the desired path (foxglove.SceneUpdate)
"""
from collections import deque

import numpy as np

import orjson

from bus_protocol import states
from host.report.run_dir import COMPONENTS, HOST_BUS
from host.rmdac import K0_NAMES

SILENT = -1   # host/controller.SILENT: no torque came in the tick
BUS_HZ = 10.0
SCENE_HZ = 20.0
NODES_EVERY_S = 1.0
T_EPS = 1e-9   # a tick's t (k / rate in floats) may fall a hair short of the period it ends
GAINS = tuple(g[:-1] for g in K0_NAMES)   # RMDAC's k (6.206) by name: d, kp, kv, c, b, a
PATH_POINTS = 1200   # the scene's desired-path trail: 60 s at SCENE_HZ
PATH_HZ = 1.0        # the trail is sent this often (a SceneEntity stays until replaced)
LOG_INFO, LOG_WARNING, LOG_ERROR = 2, 3, 4   # foxglove.Log levels

_num = {"type": "number"}
_nums = {"type": "array", "items": {"type": ["number", "null"]}}
_time = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}}
_vec3 = {"type": "object", "properties": {k: _num for k in "xyz"}}
_node = {"type": "object", "properties": {
    "link": {"type": "integer"}, "state": {"type": "string"}, "braked": {"type": "boolean"},
    "faults": {"type": "array", "items": {"type": "string"}}, "member": {"type": "boolean"},
    "reason": {"type": "string"}, "since": {"type": "number"}}}


def _obj(title, **props):
    return {"title": title, "type": "object", "properties": props}


# topic -> (schema name, JSON schema)
SCHEMAS = {
    "/joints": ("linkteam.Joints", _obj(
        "linkteam.Joints", t=_num, tick=_num, q=_nums, qd=_nums, u=_nums,
        u_behaviours={"type": "object", "properties": {c: _nums for c in COMPONENTS}},
        state={"type": "array", "items": {"type": "string"}}, state_code=_nums,
        member={"type": "array", "items": {"type": "boolean"}}, rho=_nums)),
    "/tool": ("linkteam.Tool", _obj("linkteam.Tool", t=_num, p_d=_nums, p=_nums, error=_num, e_phi=_num)),
    "/goal": ("linkteam.Goal", _obj(
        "linkteam.Goal", t=_num, f=_nums,
        gains={"type": "object", "properties": {g: _nums for g in GAINS}})),
    "/nodes": ("linkteam.Nodes", _obj("linkteam.Nodes", t=_num, nodes={"type": "array", "items": _node})),
    "/events": ("linkteam.Event", _obj("linkteam.Event", t=_num, link={"type": "integer"},
                                        kind={"type": "string"}, what={"type": "string"},
                                        node=_node)),
    "/bus": ("linkteam.Bus", _obj("linkteam.Bus", t=_num, late_ticks=_num, host_good_frames=_num,
                                  host_bad_frames=_num, late_assertions=_num, contacts=_num)),
    "/log": ("foxglove.Log", _obj("foxglove.Log", timestamp=_time, level={"type": "integer"},
                                  message={"type": "string"}, name={"type": "string"},
                                  file={"type": "string"}, line={"type": "integer"})),
    "/scene": ("foxglove.SceneUpdate", _obj(
        "foxglove.SceneUpdate", deletions={"type": "array"},
        entities={"type": "array", "items": {"type": "object", "properties": {
            "timestamp": _time, "frame_id": {"type": "string"}, "id": {"type": "string"},
            "lines": {"type": "array"}, "spheres": {"type": "array"}}}})),
}
TOPICS = tuple(SCHEMAS)


def dumps(msg):
    """JSON bytes (orjson: floats, also numpy's, in their shortest exact form, as Python's
    repr; NaN and infinities, an obstacle range where there is none, as null)."""
    return orjson.dumps(msg, option=orjson.OPT_SERIALIZE_NUMPY)


def _split1(a):
    """JSON of each element of a 1-D array (one orjson call)."""
    return dumps(a)[1:-1].split(b",")


def _split2(a):
    """JSON of each row of a 2-D array, without its brackets (one orjson call)."""
    return dumps(np.ascontiguousarray(a))[2:-2].split(b"],[")


def _template(*fields):
    """A message's JSON with a %b per array row (its brackets around it) and number: fields
    are (key, '%b' | '[%b]' | '%d' | (key, ...) for an object of rows)."""
    def part(f):
        k, v = f
        key = dumps(k).replace(b"%", b"%%")
        if isinstance(v, tuple):
            return key + b":{" + b",".join(part((x, "[%b]")) for x in v) + b"}"
        return key + b":" + v.encode()
    return b"{" + b",".join(part(f) for f in fields) + b"}"


_JOINTS = _template(("t", "%b"), ("tick", "%d"), ("q", "[%b]"), ("qd", "[%b]"), ("u", "[%b]"),
                    ("u_behaviours", COMPONENTS), ("state", "%b"), ("state_code", "[%b]"),
                    ("member", "[%b]"), ("rho", "[%b]"))
_TOOL = _template(("t", "%b"), ("p_d", "[%b]"), ("p", "[%b]"), ("error", "%b"), ("e_phi", "%b"))
_GOAL = _template(("t", "%b"), ("f", "[%b]"))
_GOAL_GAINS = _template(("t", "%b"), ("f", "[%b]"), ("gains", GAINS))


def state_name(code):
    return "silent" if code == SILENT else states.state_name(code)


def _stamp(ns):
    return {"sec": ns // 1_000_000_000, "nsec": ns % 1_000_000_000}


def _color(r, g, b, a=1.0):
    return {"r": r, "g": g, "b": b, "a": a}


# the SceneEntity primitive lists a scene does not use (foxglove.SceneEntity has them all)
_NONE = {k: [] for k in ("arrows", "cubes", "cylinders", "triangles", "texts", "models")}
_IDENTITY = {"position": {"x": 0, "y": 0, "z": 0}, "orientation": {"x": 0, "y": 0, "z": 0, "w": 1}}


class Encoder:
    """Rows of the per-tick record -> (topic, log time ns, JSON bytes), in time order.

    meta: n (links), t0_ns (wall time of t = 0), obstacles [{name, radius, position}];
    obstacle_at(t) -> every obstacle's position (moving obstacles), or None. The scene's
    desired path is the trail of the desired tool position, its last PATH_POINTS samples."""

    def __init__(self, meta, obstacle_at=None):
        self.n = meta["n"]
        self.t0_ns = int(meta["t0_ns"])
        self.obstacles = meta.get("obstacles", [])
        self.path = deque(maxlen=PATH_POINTS)
        self.obstacle_at = obstacle_at
        self.last = None          # per link (state code, fault bits, member)
        self._key = None          # the last row's codes, bits, membership
        self.reason = [""] * self.n
        self.since = [0.0] * self.n   # t of each node's last change of state, faults or membership
        self.late_ticks = 0
        self.next_bus = self.next_scene = self.next_nodes = self.next_path = 0.0
        self.tick = 0
        self.nodes = []

    def ns(self, t):
        return self.t0_ns + int(round(t * 1e9))

    def side(self, info):
        """Host-controller side information of a chunk -> messages: node log lines and host
        events (foxglove.Log, /events)."""
        out = []
        for t, link, text in info.get("logs", ()):
            out.append(("/log", self.ns(t), dumps({"timestamp": _stamp(self.ns(t)), "level": LOG_INFO,
                                                   "message": text, "name": "link%02d" % link,
                                                   "file": "", "line": 0})))
        for t, link, what in info.get("events", ()):
            if 1 <= link <= self.n:
                self.reason[link - 1] = what
            out.append(("/log", self.ns(t), dumps({"timestamp": _stamp(self.ns(t)), "level": LOG_WARNING,
                                                   "message": "link %d %s" % (link, what), "name": "host",
                                                   "file": "", "line": 0})))
            out.append(("/events", self.ns(t), dumps({"t": t, "link": link, "kind": "host", "what": what})))
        return out

    def node(self, i, code, bits, member):
        braked = states.is_fault_state(code) if code >= 0 else not member
        faults = states.fault_names(bits)
        if code == SILENT and not member:   # no torque, out of the team: its driver brakes it
            faults = faults + ["silent"]
        return {"link": i + 1, "state": "braked" if braked and code == SILENT else state_name(code),
                "braked": bool(braked), "faults": faults, "member": bool(member), "reason": self.reason[i],
                "since": self.since[i]}

    def rows(self, a):
        """Messages of every row of `a` (the arrays of one chunk of the record)."""
        out = []
        tl = a["t"].tolist()
        rows = len(tl)
        if not rows:
            return out
        ns = (self.t0_ns + np.round(a["t"] * 1e9).astype(np.int64)).tolist()
        codes = a["state"].astype(np.int64)
        bits = a["faults"].astype(np.int64) if "faults" in a else np.zeros_like(codes)
        member = a["member"] > 0
        joints, tool, goal = self._tick_topics(a, codes, member, rows)
        changed_rows = self._changed_rows(codes, bits, member)
        p_d = a["p_d"]
        late = a["late"].tolist()
        contacts = a["contacts"].tolist()
        host_bus = a["host_bus"].astype(np.int64).tolist()
        for r in range(rows):
            t, at = tl[r], ns[r]
            out.append(("/joints", at, joints[r]))
            out.append(("/tool", at, tool[r]))
            out.append(("/goal", at, goal[r]))
            changed = ()
            if r in changed_rows:
                changed = self._node_events(out, t, at, codes[r].tolist(), bits[r].tolist(), member[r].tolist())
            if changed or t >= self.next_nodes - T_EPS:
                self.next_nodes = t + NODES_EVERY_S
                out.append(("/nodes", at, dumps({"t": t, "nodes": self.nodes})))
            self.late_ticks += int(late[r])
            if t >= self.next_bus - T_EPS:
                self.next_bus = t + 1.0 / BUS_HZ
                out.append(("/bus", at, dumps(dict(zip(HOST_BUS, host_bus[r]), t=t, late_ticks=self.late_ticks,
                                                   contacts=contacts[r]))))
            if t >= self.next_scene - T_EPS:
                pd = p_d[r].tolist()
                self.path.append({"x": pd[0], "y": pd[1], "z": pd[2]})
                self.next_scene = t + 1.0 / SCENE_HZ
                with_path = t >= self.next_path - T_EPS
                if with_path:
                    self.next_path = t + 1.0 / PATH_HZ
                out.append(("/scene", at, dumps(self.scene(at, t, a["frames"][r].tolist(), self.last, with_path))))
        self.tick += rows
        return out

    def _tick_topics(self, a, codes, member, rows):
        """The per-tick topics' messages (/joints, /tool, /goal), put together column by
        column: each array goes to orjson once (floats in the shortest form that reads back
        exactly, NaN as null), its JSON is split into rows and every row's message is one
        template filled in (the same JSON as a dict per row through orjson, at a tenth of
        the time)."""
        t_j = _split1(a["t"])
        names = {}
        state_j = []
        for ck in map(bytes, codes):   # a row's state names, encoded once per distinct row
            nm = names.get(ck)
            if nm is None:
                nm = names[ck] = dumps([state_name(c) for c in np.frombuffer(ck, np.int64).tolist()])
            state_j.append(nm)
        comp = [_split2(a["comp"][:, :, b]) for b in range(len(COMPONENTS))]
        ticks = range(self.tick, self.tick + rows)
        joints = [_JOINTS % x for x in zip(t_j, ticks, _split2(a["q"]), _split2(a["qd"]), _split2(a["u"]), *comp,
                                           state_j, _split2(codes), _split2(member), _split2(a["rho"]))]
        p_d = a["p_d"]
        err = np.sqrt(((p_d - a["p"]) ** 2).sum(axis=1))
        tool = [_TOOL % x for x in zip(t_j, _split2(p_d), _split2(a["p"]), _split1(err), _split1(a["e_phi"]))]
        if "gains" in a:
            gains = [_split2(a["gains"][:, :, g]) for g in range(len(GAINS))]
            goal = [_GOAL_GAINS % x for x in zip(t_j, _split2(a["f"]), *gains)]
        else:
            goal = [_GOAL % x for x in zip(t_j, _split2(a["f"]))]
        return joints, tool, goal

    def _changed_rows(self, codes, bits, member):
        """Rows where a node's state, faults or membership changed (from the row before)."""
        key = np.concatenate([codes, bits, member], axis=1)
        prev = np.concatenate([key[:1] if self.last is None else np.array([self._key]), key[:-1]])
        changed_rows = set(np.nonzero((key != prev).any(axis=1))[0].tolist())
        if self.last is None:
            changed_rows.add(0)
        self._key = key[-1].tolist()
        return changed_rows

    def _node_events(self, out, t, at, codes, bits, member):
        """A row where nodes changed: their table and, after the first, an /events message
        for each that changed. -> the links (0-based) that changed."""
        n = self.n
        now = list(zip(codes, bits, member))
        changed = [i for i in range(n) if self.last is None or now[i] != self.last[i]]
        for i in changed:
            self.since[i] = t
        self.nodes = [self.node(i, *now[i]) for i in range(n)]
        if self.last is not None:
            for i in changed:
                nd = self.nodes[i]
                what = "%s -> %s%s" % (state_name(self.last[i][0]), nd["state"],
                                       (" (" + ", ".join(nd["faults"]) + ")") if nd["faults"] else "")
                out.append(("/events", at, dumps({"t": t, "link": i + 1, "kind": "node",
                                                  "what": what, "node": nd})))
        self.last = now
        return changed

    def scene(self, ns, t, frames, now, with_path=True):
        pts = [{"x": f[0], "y": f[1], "z": f[2]} for f in frames]
        joints = [{"pose": {"position": pts[i], "orientation": _IDENTITY["orientation"]},
                   "size": {"x": 0.06, "y": 0.06, "z": 0.06},
                   "color": _color(0.9, 0.1, 0.1) if i and (not now[i - 1][2] or states.is_fault_state(now[i - 1][0]))
                   else _color(0.2, 0.4, 0.9)} for i in range(len(pts))]
        ents = [{"timestamp": _stamp(ns), "frame_id": "world", "id": "arm", "lifetime": _stamp(0),
                 "frame_locked": False, "metadata": [], **_NONE,
                 "lines": [{"type": 0, "pose": _IDENTITY, "thickness": 0.03, "scale_invariant": False,
                            "points": pts, "color": _color(0.6, 0.6, 0.6), "colors": [], "indices": []}],
                 "spheres": joints}]
        if with_path:
            ents.append({"timestamp": _stamp(ns), "frame_id": "world", "id": "path", "lifetime": _stamp(0),
                     "frame_locked": False, "metadata": [], **_NONE,
                     "lines": [{"type": 0, "pose": _IDENTITY, "thickness": 0.01, "scale_invariant": False,
                                "points": list(self.path), "color": _color(0.1, 0.7, 0.2), "colors": [], "indices": []}],
                     "spheres": []})
        if self.obstacles:
            where = self.obstacle_at(t) if self.obstacle_at else [o["position"] for o in self.obstacles]
            ents.append({"timestamp": _stamp(ns), "frame_id": "world", "id": "obstacles", "lifetime": _stamp(0),
                         "frame_locked": False, "metadata": [], **_NONE, "lines": [],
                         "spheres": [{"pose": {"position": {"x": p[0], "y": p[1], "z": p[2]},
                                               "orientation": _IDENTITY["orientation"]},
                                      "size": {"x": 2 * o["radius"], "y": 2 * o["radius"], "z": 2 * o["radius"]},
                                      "color": _color(0.9, 0.6, 0.1, 0.6)}
                                     for o, p in zip(self.obstacles, where)]})
        return {"deletions": [], "entities": ents}
