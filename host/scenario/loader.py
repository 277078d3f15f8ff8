"""Scenario loading (docs/design.md §8): a TOML file -> a validated `Scenario`.

Every field is declared once in host/scenario/schema.py (SCHEMA) with its type, default
and range; a missing, unknown or out-of-range field is a `ScenarioError` naming the file,
the line and the field. The result is plain data: `arm` (sim_host's dict), `agent_configs` (one dict per
link, what a board reads as JSON), RMDAC gains, trajectory knots and obstacles.
"""
import re
import tomllib
from pathlib import Path

from firmware.identification import MASS, N_PAR, PLANAR
from host.scenario import thesis_format
from host.errors import ScenarioError
from host.scenario.schema import BEHAVIOURS, ON_BY_DEFAULT, SCHEMA, _Checker, _line_of
from host.scenario.toml_writer import dumps
from sim_host import fault_injection as fault_kinds


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
        self.kinematic_copies = raw["bus"]["kinematic_copies"]
        self.auth = raw["bus"]["auth"]
        self.key_file = None   # the arm's key (linkteam run --key); None: one per run
        if self.kinematic_copies > 1:
            for cfg in self.agent_configs:
                cfg["kinematic_copies"] = self.kinematic_copies
        for i, cfg in enumerate(self.agent_configs):
            self._neighbours(i, cfg)
        self._injections()
        self.controller = raw["controller"]
        self.gains_from = None   # from_dict: a tuned overlay's arm against this one (host/studies/tune_gains.py)

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
        A behaviour table that is written anywhere gets its defaults; others stay off,
        but for those ON_BY_DEFAULT."""
        merged = _merge(dict.fromkeys(ON_BY_DEFAULT, {}), self.raw["behaviours"])
        merged = _merge(merged, self._overrides[i])
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
                "safety": dict({k: v for k, v in beh.get("safety", {}).items() if v is not None},
                               period=1.0 / self.control_rate_hz),
                "brake_at_start": L["brake_at_start"]}


    def _neighbours(self, i, cfg):
        """A link's redundant-kinematics config: its proximal neighbours' DH, nearest first,
        and the control period."""
        nb = self.behaviours[i].get("neighbours")
        if nb is None or nb["depth"] == 0 or i == 0:
            return
        cfg["neighbours"] = {
            "dh": [[self.links[j][k] for k in ("type", "theta", "d", "a", "alpha")]
                   for j in range(i - 1, max(-1, i - 1 - nb["depth"]), -1)],
            "period": 1.0 / self.control_rate_hz,
            "tol": nb["tol"], "readmit_cycles": nb["readmit_cycles"]}
        if nb.get("check_tip") and i == len(self.links) - 2:   # link N-1: its K to the host too,
            cfg["neighbours"]["to_host"] = True                   # which checks the tip


    def _injections(self):
        """Faults the node's own firmware injects (node_silent, compute_fault), in ticks."""
        rate = self.control_rate_hz
        for f in self.faults:
            if f["kind"] not in fault_kinds.NODE_KINDS or f["link"] is None or not 1 <= f["link"] <= self.n:
                continue   # (a bad entry: _check_semantics says so)
            start, end, period, duty = fault_kinds.schedule_ticks(f, rate)
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
    """Scenario data `b` over `a`, as a file extending `a` would write it (host/studies/envelope.py's
    cells): tables merge key by key, values and arrays replace."""
    return _merge(a, b)


def load(path):
    """Read and validate a scenario file (TOML, or a thesis NAME.scenario directory)."""
    path = Path(path)
    if path.is_dir():
        if path.suffix != ".scenario":
            raise ScenarioError(path, None, "file", "a directory; give a scenario TOML file or a thesis "
                                "NAME.scenario directory (docs: README, Scenario files)")
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
    except UnicodeDecodeError as e:
        raise ScenarioError(path, None, "file", "not a text (UTF-8) file: byte %d is 0x%02x" % (e.start, e.object[e.start]))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line = re.search(r"line (\d+)", str(e))
        raise ScenarioError(path, line.group(1) if line else None, "syntax", str(e))
    sources = [(str(path), text)]
    bases = data.pop("extends", None)
    if bases is None:
        return data, sources
    if "name" not in data:   # a derived scenario runs under its own file's name (runs/NAME)
        data["name"] = path.stem
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
    from host.studies.tune_gains import gains_from
    sc.gains_from = gains_from(sc, sources)
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
