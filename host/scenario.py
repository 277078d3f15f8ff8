"""Scenario loading (docs/design.md §8): a TOML file -> a validated `Scenario`.

Every field is declared once in SCHEMA with its type, default and range; a missing,
unknown or out-of-range field is a `ScenarioError` naming the file, the line and the
field. The result is plain data: `arm` (sim_host's dict), `agent_configs` (one dict per
link, what a board reads as JSON), RMDAC gains, trajectory knots and obstacles.
"""
import math
import re
import tomllib
from pathlib import Path

from bus_protocol.states import DEFAULT_REACTIONS
from firmware.identification import MASS, N_PAR, PLANAR
from host import thesis_format
from host.errors import ScenarioError
from host.toml_writer import dumps
from sim_host import faults as fault_kinds

REQUIRED = object()


# kind, default, low, high  (None = unbounded). Nested dicts are TOML tables.
def F(kind, default=REQUIRED, lo=None, hi=None, choices=None):
    return (kind, default, lo, hi, choices)


LINK = {
    "type": F("str", "revolute", choices=("revolute", "prismatic")),
    "theta": F("float", 0.0), "d": F("float", 0.0), "a": F("float", 0.0), "alpha": F("float", 0.0),
    "mass": F("float", 1.0, 0.0), "inertia": F("vec3", [0.0, 0.0, 0.0], 0.0),
    "centroid": F("vec3", [0.0, 0.0, 0.0]),
    "q_low": F("float", -math.pi), "q_high": F("float", math.pi), "limited": F("bool", False),
    "u_sat": F("float", 1e6, 0.0), "damping": F("float", 1.0, 0.0), "radius": F("float", 0.1, 0.0),
    "q0": F("float", 0.0), "brake_at_start": F("bool", False), "physical_brake": F("bool", True),
}
BEHAVIOURS = {
    "proxy": {"weight": F("float", 1.0)},
    "assertions": {"weight": F("float", 1.0)},
    "centering": {"weight": F("float", 1.0), "kq": F("float", 100.0, 0.0), "kw": F("float", 20.0, 0.0),
                  "q_c": F("float", None)},
    "retraction": {"weight": F("float", 1.0), "kq": F("float", 100.0, 0.0), "kw": F("float", 20.0, 0.0),
                   "amplitude": F("float", 1.570)},
    "joint_limit": {"weight": F("float", 1.0), "eta": F("float", 5.0, 0.0), "rho0": F("float", 0.2, 0.0)},
    "rmoa": {"eta": F("float", 100.0, 0.0), "clearance": F("float", 0.75, 0.0),
             "f_max": F("float", 500.0, 0.0)},
    "gravity": {"enabled": F("bool", None)},
    "brake": {"kq": F("float", 2000.0, 0.0), "kw": F("float", 40.0, 0.0)},
    "safety": {"watchdog_cycles": F("int", 3, 1), "watchdog_ms": F("int", 50, 1),
               "max_q_step": F("float", 0.5, 0.0),
               "qd_max": F("float", 50.0, 0.0), "stall_u": F("float", 0.0, 0.0),
               "stall_qd": F("float", 1e-3, 0.0), "stall_cycles": F("int", 60, 1),
               "readmit_cycles": F("int", 0, 0), "watchdog_ms": F("int", 50, 1),
               "kin_stale_cycles": F("int", 12, 1), "over_torque_cycles": F("int", 0, 0),
               "reactions": {name: F("str", None, choices=("report", "hold", "damp", "brake"))
                             for name in DEFAULT_REACTIONS}},
    # redundant kinematics (firmware/neighbours.py): check and bridge `depth` proximal neighbours
    "neighbours": {"depth": F("int", 1, 1, 2), "tol": F("float", 1e-2, 0.0),
                   "readmit_cycles": F("int", 3, 1)},
}
GAINS = {"wp": F("float", REQUIRED, 0.0), "wv": F("float", REQUIRED, 0.0),
         "delta": F("float", 0.0, 0.0), "alpha": F("float", 0.0, 0.0), "beta": F("float", 0.0, 0.0),
         "nu": F("float", 0.0, 0.0), "gamma": F("float", 0.0, 0.0), "lambda": F("float", 0.0, 0.0),
         "u2": F("float", 0.0, 0.0),
         "d0": F("float", 0.0), "kp0": F("float", 0.0), "kv0": F("float", 0.0),
         "c0": F("float", 0.0), "b0": F("float", 0.0), "a0": F("float", 0.0)}
KNOT = {"interval": F("floats"), "position": F("vec3"),
        "angle": F("float", None), "rotation": F("floats", None),
        "type": F("str", "cubic", choices=("cubic", "step", "spiral")),
        # spiral knots (thesis 6.3): axis through `center` along `axis`, signed `sweep` (rad)
        "center": F("vec3", None), "axis": F("vec3", None), "sweep": F("float", None)}
OBSTACLE = {"name": F("str", "obstacle"), "radius": F("float", REQUIRED, 0.0), "position": F("vec3"),
            "knot": ("array", {"interval": F("floats"), "position": F("vec3"),
                               "type": F("str", "cubic", choices=("cubic", "step"))})}
FAULT = {"kind": F("str", choices=tuple(fault_kinds.KINDS)), "link": F("int", None, 0, 64),
         "start": F("float", 0.0, 0.0), "end": F("float", None, 0.0),
         "period": F("float", None, 1e-6), "duty": F("float", None, 0.0, 1.0),
         "rate": F("float", None, 0.0, 1.0), "ber": F("float", None, 0.0, 1.0),
         "delay_ms": F("float", None, 0.0), "jitter_ms": F("float", None, 0.0),
         "sigma": F("float", None, 0.0), "sigma_qd": F("float", None, 0.0), "amplitude": F("float", None),
         "gain": F("float", None, 0.0), "offset": F("float", None), "target": F("str", None, choices=("kinematic", "torque"))}
SCHEMA = {
    "name": F("str"), "description": F("str", ""),
    "simulation": {"duration": F("float", REQUIRED, 0.0), "control_rate_hz": F("float", 120.0, 1.0, 1000.0),
                   "timestep": F("float", 0.001, 1e-5, 0.01),
                   "task": F("str", "planar", choices=("planar", "spatial")),
                   "start_angle": F("float", None),
                   "divergence_m": F("float", 2.0, 0.0)},
    "robot": {"links": F("int", REQUIRED, 1, 64), "gravity": F("vec3", [0.0, 0.0, 0.0]),
              "link_collisions": F("bool", False), "base_position": F("vec3", [0.0, 0.0, 0.0]),
              # a joint's motor driver brakes after this many ticks without a torque command
              "driver_timeout_ticks": F("int", 2, 1),
              "link": dict(LINK),
              "override": ("array", dict(LINK, links=F("ints"), behaviours=BEHAVIOURS))},
    "payload": {"mass": F("float", 0.0, 0.0), "inertia": F("vec3", [0.0, 0.0, 0.0], 0.0),
                "centroid": F("vec3", [0.0, 0.0, 0.0]),
                "known": F("bool", False)},   # the last agent is told of it (its weight assertion)
    # the host's waits (NYMPH synch_wait with patience): how long a cycle may wait for its
    # torques with a synthetic clock (--lockstep), and what then: abort the run, or hold the
    # missing links' last torques for this cycle (counted)
    "host": {"patience_s": F("float", 5.0, 0.001), "on_patience": F("str", "abort", choices=("abort", "hold"))},
    # on-line identification of the payload by the last `window` links (firmware/identification.py)
    "identification": {"window": F("int", REQUIRED, 1, 64),
                       # identifiable: what the task's motion excites (planar: m, h_x, h_y, I_zz);
                       # all ten; mass: m and h only (the weight; a quarter of the work)
                       "params": F("str", "identifiable", choices=("identifiable", "all", "mass")),
                       "p0": F("float", 100.0, 0.0), "forgetting": F("float", 1.0, 0.9, 1.0),
                       "use": F("bool", True), "m_max": F("float", 1000.0, 0.0),
                       "every": F("int", 4, 1, 1000)},   # identified ticks: every k-th
    "behaviours": BEHAVIOURS,
    "rmdac": {"linear": GAINS, "rotation": GAINS},
    "trajectory": {"knot": ("array", KNOT)},
    "obstacle": ("array", OBSTACLE),
    "fault": ("array", FAULT),   # fault injection schedules (sim_host/faults.py)
    # centralised baselines (host/centralised.py): task-space kp, kv (RMAC 8.342) or joint-space
    # KP, KD (computed torque, Hamilton et al. eq. 2), IK gain, damped least-squares lambda
    "controller": {"kind": F("str", "multiagent", choices=("multiagent", "rmac", "rmac-nullspace", "computed-torque")),
                   "kp": F("float", 100.0, 0.0), "kv": F("float", 20.0, 0.0),
                   "k_ik": F("float", 10.0, 0.0), "dls_lambda": F("float", 0.05, 0.0),
                   "model_payload": F("bool", True)},
}


def _line_of(text, field):
    """Best line number for a dotted field path ('robot.link.mass', 'trajectory.knot[2].angle')."""
    parts = [re.sub(r"\[\d+\]$", "", p) for p in field.split(".")]
    table, want_n = [], None
    m_idx = re.findall(r"\[(\d+)\]", field)
    want_n = int(m_idx[-1]) if m_idx else None
    counts = {}
    best = None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        h = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?$", line)
        if h:
            table = [t.strip() for t in h.group(1).split(".")]
            key = ".".join(table)
            counts[key] = counts.get(key, -1) + 1
            if table == parts:
                if want_n is None or counts[key] == want_n:
                    best = best or no
            continue
        k = re.match(r"^([A-Za-z0-9_\-]+)\s*=", line)
        if k and table + [k.group(1)] == parts:
            key = ".".join(table)
            if want_n is None or counts.get(key, 0) == want_n:
                return no
        if k and len(parts) > len(table) and table + [k.group(1)] == parts[:len(table) + 1]:
            best = best or no  # inline table holding the field
    return best


class _Checker:
    """`sources`: (path, text) of the file and of the files it extends, child first;
    an error points at the first of them that writes the field."""

    def __init__(self, sources):
        self.sources = sources

    def fail(self, field, message):
        for path, text in self.sources:   # the field's line, else its table's
            line = _line_of(text, field) or (_line_of(text, field.rsplit(".", 1)[0]) if "." in field else None)
            if line:
                raise ScenarioError(path, line, field, message)
        raise ScenarioError(self.sources[0][0], None, field, message)

    def table(self, data, schema, prefix, fill=True):
        """Check a table against its schema. fill=False keeps only what was written
        (behaviour tables, link overrides): absent sub-tables and fields stay absent."""
        if not isinstance(data, dict):
            self.fail(prefix, "expected a table")
        out = {}
        for key in data:
            if key not in schema:
                self.fail(_join(prefix, key), "unknown field (allowed: %s)" % ", ".join(sorted(schema)))
        for key, spec in schema.items():
            field = _join(prefix, key)
            sub_fill = fill and key != "behaviours"
            if isinstance(spec, dict):
                if key in data:
                    out[key] = self.table(data[key], spec, field, sub_fill)
                elif key == "behaviours":
                    out[key] = {}   # no behaviour table written: none is on
                elif fill:
                    out[key] = self.table({}, spec, field) if _all_default(spec) else None
            elif spec[0] == "array":
                items = data.get(key, [])
                if not isinstance(items, list):
                    self.fail(field, "expected an array of tables ([[%s]])" % field)
                out[key] = [self.table(it, spec[1], "%s[%d]" % (field, i), key != "override")
                            for i, it in enumerate(items)]
            elif key in data:
                out[key] = self.value(data[key], spec, field)
            elif fill:
                out[key] = self.default(spec, field)
        return out

    def default(self, spec, field):
        if spec[1] is REQUIRED:
            self.fail(field, "missing required field")
        return spec[1]

    def value(self, v, spec, field):
        kind, _, lo, hi, choices = spec
        if kind == "float":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.fail(field, "expected a number, got %r" % (v,))
            v = float(v)
            if not math.isfinite(v):
                self.fail(field, "must be finite, got %r" % (v,))
            self.bounds(v, lo, hi, field)
        elif kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                self.fail(field, "expected an integer, got %r" % (v,))
            self.bounds(v, lo, hi, field)
        elif kind == "bool":
            if not isinstance(v, bool):
                self.fail(field, "expected true or false, got %r" % (v,))
        elif kind == "str":
            if not isinstance(v, str):
                self.fail(field, "expected a string, got %r" % (v,))
            if choices and v not in choices:
                self.fail(field, "must be one of %s, got %r" % (", ".join(choices), v))
        elif kind in ("vec3", "floats", "ints"):
            if not isinstance(v, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                self.fail(field, "expected a list of numbers, got %r" % (v,))
            if kind == "vec3" and len(v) != 3:
                self.fail(field, "expected 3 numbers, got %d" % len(v))
            if kind == "ints":
                if not all(isinstance(x, int) for x in v):
                    self.fail(field, "expected a list of integers, got %r" % (v,))
                return list(v)
            v = [float(x) for x in v]
            for x in v:
                self.bounds(x, lo, hi, field)
        return v

    def bounds(self, v, lo, hi, field):
        if lo is not None and v < lo:
            self.fail(field, "must be >= %g, got %g" % (lo, v))
        if hi is not None and v > hi:
            self.fail(field, "must be <= %g, got %g" % (hi, v))


def _join(prefix, key):
    return "%s.%s" % (prefix, key) if prefix else key


def _all_default(spec):
    """A table may be omitted when none of its fields is required."""
    for s in spec.values():
        if isinstance(s, dict):
            if not _all_default(s):
                return False
        elif s[0] != "array" and s[1] is REQUIRED:
            return False
    return True


class Scenario:
    """A validated scenario. `raw` keeps the checked tables; the rest is derived."""

    def __init__(self, raw, path):
        self.raw = raw
        self.path = str(path)
        self.name = raw["name"]
        sim = raw["simulation"]
        self.duration = sim["duration"]
        self.control_rate_hz = sim["control_rate_hz"]
        self.timestep = sim["timestep"]
        self.task = sim["task"]
        self.divergence_m = sim["divergence_m"]
        self.patience_s = raw["host"]["patience_s"]
        self.on_patience = raw["host"]["on_patience"]
        rob = raw["robot"]
        self.n = rob["links"]
        self.gravity = rob["gravity"]
        self.links = self._links(rob)
        self.arm = self._arm(rob, raw["payload"])
        self.behaviours = [self._behaviours(i) for i in range(self.n)]
        self.agent_configs = [self._agent_config(i) for i in range(self.n)]
        self._load_configs(raw["payload"], raw["identification"])
        self.rmdac = raw["rmdac"]
        self.knots = raw["trajectory"]["knot"]
        self.obstacles = raw["obstacle"]
        self.faults = raw["fault"]
        self.driver_timeout_ticks = rob["driver_timeout_ticks"]
        for i, cfg in enumerate(self.agent_configs):
            self._neighbours(i, cfg)
        self._injections()
        self.controller = raw["controller"]

    def _links(self, rob):
        links = [dict(rob["link"]) for _ in range(self.n)]
        self._overrides = [{} for _ in range(self.n)]
        for k, ov in enumerate(rob["override"]):
            if "links" not in ov:
                raise ScenarioError(self.path, None, "robot.override[%d].links" % k, "missing required field")
            for idx in ov["links"]:
                if not 1 <= idx <= self.n:
                    raise ScenarioError(self.path, None, "robot.override[%d].links" % k,
                                        "link %d out of range 1..%d" % (idx, self.n))
                for key, v in ov.items():
                    if key == "behaviours":
                        self._overrides[idx - 1] = _merge(self._overrides[idx - 1], v)
                    elif key != "links":
                        links[idx - 1][key] = v
        return links

    def _arm(self, rob, payload):
        base = rob["base_position"]
        return {"links": self.links,
                "payload": payload if payload["mass"] > 0 else None,
                "gravity": list(self.gravity),
                "base": {"pos": list(base), "quat": [1.0, 0.0, 0.0, 0.0]},
                "link_collisions": rob["link_collisions"]}

    def _behaviours(self, i):
        """Scenario-wide behaviours merged with the link's overrides (only fields set).
        A behaviour table that is written anywhere gets its defaults; others stay off."""
        merged = _merge(self.raw["behaviours"], self._overrides[i])
        return {name: _merge({k: s[1] for k, s in BEHAVIOURS[name].items() if not isinstance(s, dict)}, fields)
                for name, fields in merged.items()}

    def _agent_config(self, i):
        L = self.links[i]
        beh = self.behaviours[i]
        out = {}
        for name, fields in beh.items():
            if name in ("safety", "gravity", "neighbours"):
                continue
            out[name] = {k: v for k, v in fields.items() if v is not None}
        gravity_on = beh.get("gravity", {}).get("enabled")
        if gravity_on is None:
            gravity_on = any(abs(g) > 0 for g in self.gravity)
        if gravity_on:
            out["gravity"] = {"g": list(self.gravity)}
        out.setdefault("brake", {"kq": 2000.0, "kw": 40.0})
        return {"link": i + 1, "n_links": self.n,
                "dh": {k: L[k] for k in ("type", "theta", "d", "a", "alpha")},
                "q_low": L["q_low"], "q_high": L["q_high"], "u_sat": L["u_sat"],
                "mass": L["mass"], "centroid": list(L["centroid"]),
                "behaviours": out,
                "safety": {k: v for k, v in beh.get("safety", {}).items() if v is not None},
                "brake_at_start": L["brake_at_start"]}


    def _neighbours(self, i, cfg):
        """A link's redundant-kinematics config: its proximal neighbours' DH, nearest first,
        and the control period."""
        nb = self.behaviours[i].get("neighbours")
        if nb is None or i == 0:
            return
        cfg["neighbours"] = {
            "dh": [[self.links[j][k] for k in ("type", "theta", "d", "a", "alpha")]
                   for j in range(i - 1, max(-1, i - 1 - nb["depth"]), -1)],
            "period": 1.0 / self.control_rate_hz,
            "tol": nb["tol"], "readmit_cycles": nb["readmit_cycles"]}


    def _injections(self):
        """Faults the node's own firmware injects (node_silent, compute_fault), in ticks."""
        rate = self.control_rate_hz
        for f in self.faults:
            if f["kind"] not in fault_kinds.NODE_KINDS or f["link"] is None or not 1 <= f["link"] <= self.n:
                continue   # (a bad entry: _check_semantics says so)
            start = math.ceil(f["start"] * rate - 1e-9)
            end = -1 if f["end"] is None else math.ceil(f["end"] * rate - 1e-9)
            period = 0 if f["period"] is None else max(1, round(f["period"] * rate))
            duty = 0 if f["period"] is None else max(1, round((f["duty"] or 1.0) * f["period"] * rate))
            value = [f["target"] or "kinematic", 0.1 if f["offset"] is None else f["offset"]]
            self.agent_configs[f["link"] - 1].setdefault("inject", []).append(
                [fault_kinds.INJECT_CODES[f["kind"]], start, end, period, duty, value])

    def _load_configs(self, payload, ident):
        """A payload the last agent is told of (`known`), and the identification tables of
        the last `window` links: what each needs to compute its own link's inertial wrench
        (inertia, joint damping of the motor model, g, the sample times), and on the last
        one the estimator's settings (docs/design.md §11)."""
        last = self.agent_configs[-1]
        if payload["known"] and payload["mass"] > 0:
            last["load"] = {"mass": payload["mass"], "h": [payload["mass"] * c for c in payload["centroid"]]}
        if ident is None:
            return
        if ident["window"] > self.n:
            raise ScenarioError(self.path, None, "identification.window",
                                "window %d is longer than the arm (%d links)" % (ident["window"], self.n))
        first = self.n - ident["window"]
        for i in range(first, self.n):
            L = self.links[i]
            self.agent_configs[i]["identify"] = {
                "period": 1.0 / self.control_rate_hz, "grid": self.timestep, "g": list(self.gravity),
                "damping": L["damping"], "inertia": list(L["inertia"]), "every": ident["every"]}
        planar = self.task == "planar"
        last["identify"].update({
            "window": ident["window"], "p0": ident["p0"], "forgetting": ident["forgetting"],
            "use": ident["use"], "m_max": ident["m_max"],
            "types": [0 if L["type"] == "revolute" else 1 for L in self.links[first:]],
            "params": list(MASS if ident["params"] == "mass" else
                           PLANAR if planar and ident["params"] == "identifiable" else range(N_PAR))})


def _merge(a, b):
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in a.items()}
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def merge(a, b):
    """Scenario data `b` over `a`, as a file extending `a` would write it (host/envelope.py's
    cells): tables merge key by key, values and arrays replace."""
    return _merge(a, b)


def load(path):
    """Read and validate a scenario file (TOML, or a thesis NAME.scenario directory)."""
    path = Path(path)
    if path.is_dir():
        data = thesis_format.to_dict(path)
        try:
            return from_dict(data, path, "")
        except ScenarioError as e:   # name the line of the equivalent TOML
            text = dumps(data)
            no = _line_of(text, e.field)
            raise ScenarioError(path, None, e.field, "%s (as TOML: %s)" % (
                str(e).split(": ", 2)[-1], text.splitlines()[no - 1].strip() if no else e.field))
    data, sources = read_toml(path)
    return from_dict(data, path, sources)


def convert_thesis(directory, output):
    """`linkteam convert`: a thesis NAME.scenario directory as a TOML scenario file,
    validated before it is written."""
    data = thesis_format.to_dict(directory)
    text = "# Converted by `linkteam convert` from %s (thesis Appendix C format)\n" % Path(directory).name + dumps(data)
    from_dict(data, Path(directory), text)
    out = Path(output)
    out.write_text(text)
    return out


def read_toml(path, seen=()):
    """TOML data with `extends = "base.toml"` (or a list of bases, later ones over earlier)
    resolved: the base files' tables are merged under this file's (tables merge key by key;
    values and arrays replace)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(path, None, "file", e.strerror or str(e))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        raise ScenarioError(path, line.group(1) if line else None, "syntax", str(e))
    sources = [(str(path), text)]
    bases = data.pop("extends", None)
    if bases is None:
        return data, sources
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list) or not bases or not all(isinstance(b, str) for b in bases):
        raise ScenarioError(path, _line_of(text, "extends"), "extends", "expected a file name or a list of them")
    merged = {}
    for base in bases:   # a list: each base merged over the previous ones, this file over all
        base_path = (path.parent / base).resolve()
        if base_path in seen or base_path == path.resolve():
            raise ScenarioError(path, _line_of(text, "extends"), "extends", "circular extends of %s" % base)
        if not base_path.is_file():
            raise ScenarioError(path, _line_of(text, "extends"), "extends", "no such file %s" % base_path)
        base_data, base_sources = read_toml(base_path, seen + (path.resolve(),))
        merged = _merge(merged, base_data)
        sources = sources + base_sources
    return _merge(merged, data), sources


def from_dict(data, path="<dict>", sources=None):
    chk = _Checker(sources or [(str(path), "")])
    sc = Scenario(chk.table(data, SCHEMA, ""), path)
    _check_semantics(sc, chk)
    return sc


def _check_semantics(sc, chk):
    for i, L in enumerate(sc.links):
        if L["q_low"] >= L["q_high"]:
            chk.fail("robot.link.q_low", "link %d: q_low (%g) must be below q_high (%g)" % (i + 1, L["q_low"], L["q_high"]))
    for i, beh in enumerate(sc.behaviours):
        if "centering" in beh and "retraction" in beh:
            chk.fail("behaviours.retraction", "link %d: centering and retraction both drive the local PD; "
                     "choose one (retraction is centering with alternating setpoints)" % (i + 1))
    last = -1.0
    for k, kn in enumerate(sc.knots):
        f = "trajectory.knot[%d].interval" % k
        if len(kn["interval"]) != 2 or kn["interval"][1] <= kn["interval"][0]:
            chk.fail(f, "expected [t0, t1] with t1 > t0, got %r" % (kn["interval"],))
        if kn["interval"][0] < last - 1e-9:
            chk.fail(f, "knots must be in time order (starts at %g before the previous end %g)" % (kn["interval"][0], last))
        last = kn["interval"][1]
        if kn["type"] == "spiral" and kn["center"] is None:
            chk.fail("trajectory.knot[%d].type" % k, "a spiral knot needs 'center' (a point on its axis)")
        if kn["type"] != "spiral":
            for key in ("center", "axis", "sweep"):
                if kn[key] is not None:
                    chk.fail("trajectory.knot[%d].%s" % (k, key), "only a spiral knot takes '%s'" % key)
        if kn["axis"] is not None and sum(x * x for x in kn["axis"]) < 1e-12:
            chk.fail("trajectory.knot[%d].axis" % k, "the axis must not be zero")
        if kn["type"] == "spiral" and k > 0:
            from host.trajectory import Spiral
            try:
                Spiral(sc.knots[k - 1]["position"], kn["position"], kn)
            except ValueError as e:
                chk.fail("trajectory.knot[%d].sweep" % k, str(e))
        if kn["rotation"] is not None and len(kn["rotation"]) not in (3, 4):
            chk.fail("trajectory.knot[%d].rotation" % k, "expected roll-pitch-yaw (3) or a quaternion w,x,y,z (4)")
    if sc.knots and sc.task == "planar":
        for k, kn in enumerate(sc.knots):
            if kn["rotation"] is not None:
                chk.fail("trajectory.knot[%d].rotation" % k, "a planar task takes 'angle', not 'rotation'")
    if not sc.knots:
        chk.fail("trajectory.knot", "at least one knot point is needed")
    fault_kinds.check(sc.faults, sc.n, lambda k, f, msg: chk.fail("fault[%d].%s" % (k, f), msg))
    for name in ("linear", "rotation"):
        if sc.rmdac[name] is None:
            chk.fail("rmdac.%s" % name, "missing table [rmdac.%s] (wp, wv and the integral gains)" % name)
