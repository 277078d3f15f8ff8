"""The thesis's own scenario format (Appendix C): a `NAME.scenario/` directory with

    theRobot.rbt       links (base to tip), their local controllers, gravity, payload
    theGoals.dat       global goal generators (RMDAC, obstacle-avoidance rebroadcast)
    theTrajectory.spt  end-effector knot points (4x4 homogeneous positions)
    theObstacle.obs    obstacles, each with its own knot points (optional)

Syntax (host/scenario/thesis_syntax.py): `define{X}` ... `end{X}` scopes (nested: controller in
link, knotpoint in obstacle), formal parameters `name = value`, informal ones
`@ name = value`; values are numbers (exponential format), vectors `<a b c>`, matrices
`[<row> <row> ...]` or bare strings. `#` starts a comment (our addition). Every
parameter is either mapped to our TOML schema or rejected: an error names the file, the
line and the offending text.

`to_dict(dir)` builds the same dict a TOML file holds; host.scenario.loader.load validates it
(from_dict) and host.scenario.loader.convert_thesis writes it as TOML.

Mapping (names from Appendix C; those marked * are our additions, documented here):
  link: name, type, theta, offset (d), alpha, length (a), mass, saturation (u_sat),
        velocity (initial joint rate: 0 only), inertia <3>, centroid <3>;
        informal* @ damping, @ q_low, @ q_high, @ q0, @ radius, @ brake_at_start (0/1)
  link controllers (define{controller} name = ...):
        resolved_motion_force_control          global goal proxy   (@ ControlRate, @ weight*)
        resolved_motion_obstacle_avoidance     RMOA (@ eta, @ clearance, @ ControlRate)
        joint_centering*                       (@ kq, @ kw, @ q_c, @ weight)
        joint_limit*                           (@ eta, @ rho0, @ weight)
        fail_safe_brake*                       (@ kq, @ kw)
  top level of theRobot.rbt: gravity <3>; define{payload}* mass, inertia, centroid
  theGoals.dat: resolved_motion_adaptive_control (@ ControlRate, @ Wp <6>, @ Wv <6>,
        @ f_zero/f_coeff (d), k0 (Kp), k1 (Kv), q0 (c), q1 (b), q2 (a): *_zero is k(0),
        *_coeff = <0, u1, u2>); resolved_motion_obstacle_avoidance (assertion rebroadcast,
        @ weight*)
  knotpoint: interval t0 t1, position [4x4], velocity <6> (final: zeros only),
        @ type = step_trajectory | cubic*; spiral*: @ type = spiral, @ center, @ axis, @ sweep
  obstacle: name, @ radius, position [4x4], velocity <6> (zeros), knotpoints
"""
import math
from pathlib import Path

from host.errors import ScenarioError
from host.scenario.thesis_syntax import Parser, Reader

FILES = ("theRobot.rbt", "theGoals.dat", "theTrajectory.spt", "theObstacle.obs")

def _pose(r, name, p, where):
    """4x4 homogeneous matrix -> (position, R) with checks."""
    M = r.get(name, "mat", informal=False, required=True)
    line, text = r.line_of(name)
    if len(M) != 4 or any(len(row) != 4 for row in M):
        p.fail(line, text, "%s: expected a 4x4 homogeneous matrix (4 rows <a b c d>), got %d rows" % (name, len(M)))
    if M[3] != [0.0, 0.0, 0.0, 1.0]:
        p.fail(line, text, "%s: the last row of a homogeneous matrix must be <0 0 0 1>" % name)
    R = [row[:3] for row in M[:3]]
    for i in range(3):
        for j in range(3):
            dot = sum(R[k][i] * R[k][j] for k in range(3))
            if abs(dot - (1.0 if i == j else 0.0)) > 1e-3:
                p.fail(line, text, "%s: the 3x3 part is not a rotation matrix" % name)
    return [M[0][3], M[1][3], M[2][3]], R


def _zero_velocity(r, p):
    v = r.get("velocity", "vec", informal=False)
    if v is not None and any(abs(x) > 0 for x in v):
        line, text = r.line_of("velocity")
        p.fail(line, text, "velocity: only zero final velocities are supported (knots blend to rest)")


def _knot(r, p, planar, in_obstacle=False):
    kn = {}
    iv = r.get("interval", "nums", informal=False, required=True)
    line, text = r.line_of("interval")
    if len(iv) != 2:
        p.fail(line, text, "interval: expected two times t0 t1")
    kn["interval"] = iv
    pos, R = _pose(r, "position", p, "knotpoint")
    kn["position"] = pos
    _zero_velocity(r, p)
    typ = r.get("type", "str", informal=True, default="cubic")
    types = {"cubic": "cubic", "cubic_trajectory": "cubic", "step_trajectory": "step", "step": "step",
             "spiral": "spiral", "spiral_trajectory": "spiral"}
    if typ not in types or (in_obstacle and types[typ] == "spiral"):
        line, text = r.line_of("type")
        p.fail(line, text, "type: expected step_trajectory or cubic%s, got %r" % ("" if in_obstacle else " or spiral", typ))
    if types[typ] != "cubic":
        kn["type"] = types[typ]
    if types[typ] == "spiral":
        kn["center"] = r.get("center", "vec", informal=True, required=True, length=3)
        ax = r.get("axis", "vec", informal=True, length=3)
        if ax is not None:
            kn["axis"] = ax
        sw = r.get("sweep", "num", informal=True)
        if sw is not None:
            kn["sweep"] = sw
    if not in_obstacle:
        if planar:
            line, text = r.line_of("position")
            if abs(R[2][2] - 1.0) > 1e-6:
                p.fail(line, text, "position: a planar arm's knot may only rotate about z")
            kn["angle"] = math.atan2(R[1][0], R[0][0])
        else:
            from host.trajectory import quat_from_matrix
            kn["rotation"] = [float(x) for x in quat_from_matrix(R)]
    r.done()
    return kn


def _robot(p, root):
    top = Reader(p, root)
    gravity = top.get("gravity", "vec", informal=False, default=[0.0, 0.0, 0.0], length=3)
    links, behaviours, payload = [], [], None
    rates = []
    for node in root.children:
        r = Reader(p, node)
        if node.kind == "payload":
            if payload is not None:
                p.fail(node.line, "define{payload}", "only one payload")
            payload = {"mass": r.get("mass", "num", False, required=True),
                       "inertia": r.get("inertia", "vec", False, default=[0.0, 0.0, 0.0], length=3),
                       "centroid": r.get("centroid", "vec", False, default=[0.0, 0.0, 0.0], length=3)}
            r.done()
            continue
        if node.kind != "link":
            p.fail(node.line, "define{%s}" % node.kind, "theRobot.rbt holds define{link} and define{payload} only")
        r.get("name", "str", informal=False)
        L = {"type": r.get("type", "str", False, default="revolute"),
             "theta": r.get("theta", "num", False, default=0.0), "d": r.get("offset", "num", False, default=0.0),
             "alpha": r.get("alpha", "num", False, default=0.0), "a": r.get("length", "num", False, default=0.0),
             "mass": r.get("mass", "num", False, required=True),
             "inertia": r.get("inertia", "vec", False, default=[0.0, 0.0, 0.0], length=3),
             "centroid": r.get("centroid", "vec", False, default=[0.0, 0.0, 0.0], length=3)}
        if L["type"] not in ("revolute", "prismatic"):
            line, text = r.line_of("type")
            p.fail(line, text, "type: expected revolute or prismatic, got %r" % L["type"])
        sat = r.get("saturation", "num", False)
        if sat is not None:
            L["u_sat"] = sat
        vel = r.get("velocity", "num", False, default=0.0)
        if vel != 0.0:
            line, text = r.line_of("velocity")
            p.fail(line, text, "velocity: the plant starts at rest; only 0 is supported")
        for key in ("damping", "q_low", "q_high", "q0", "radius"):
            v = r.get(key, "num", informal=True)
            if v is not None:
                L[key] = v
        b = r.get("brake_at_start", "num", informal=True)
        if b is not None:
            L["brake_at_start"] = bool(b)
        beh = {}
        for c in node.children:
            rc, cname = _entry(p, c, "controller", "a link", rates)
            if cname in ("resolved_motion_force_control",):
                beh["proxy"] = _fields(rc, {"weight": "num"})
            elif cname == "resolved_motion_obstacle_avoidance":
                beh["rmoa"] = _fields(rc, {"eta": "num", "clearance": "num"})
            elif cname == "joint_centering":
                beh["centering"] = _fields(rc, {"kq": "num", "kw": "num", "q_c": "num", "weight": "num"})
            elif cname == "joint_limit":
                beh["joint_limit"] = _fields(rc, {"eta": "num", "rho0": "num", "weight": "num"})
            elif cname == "fail_safe_brake":
                beh["brake"] = _fields(rc, {"kq": "num", "kw": "num"})
            else:
                line, text = rc.line_of("name")
                p.fail(line, text, "unknown local controller %r (known: resolved_motion_force_control, "
                       "resolved_motion_obstacle_avoidance, joint_centering, joint_limit, fail_safe_brake)" % cname)
            rc.done()
        r.done()
        links.append(L)
        behaviours.append(beh)
    top.done()
    if not links:
        p.fail(1, p.path.name, "no define{link}: a scenario needs a manipulator")
    return gravity, links, behaviours, payload, rates


def _entry(p, node, kind, where, rates):
    """A define{kind} entry: its reader and name; an informal ControlRate joins `rates`."""
    r = Reader(p, node)
    if node.kind != kind:
        p.fail(node.line, "define{%s}" % node.kind, "%s holds define{%s} only" % (where, kind))
    name = r.get("name", "str", informal=False, required=True)
    rate = r.get("ControlRate", "num", informal=True)
    if rate is not None:
        rates.append((rate, r.line_of("ControlRate")))
    return r, name


def _fields(r, spec):
    out = {}
    for k, kind in spec.items():
        v = r.get(k, kind, informal=True)
        if v is not None:
            out[k] = v
    return out


RMDAC_COEFFS = (("f", "delta", "d0"), ("k0", "alpha", "kp0"), ("k1", "beta", "kv0"),
                ("q0", "nu", "c0"), ("q1", "gamma", "b0"), ("q2", "lambda", "a0"))


def _goals(p, root):
    rmdac, assertions, rates = None, None, []
    Reader(p, root).done()
    for node in root.children:
        r, name = _entry(p, node, "globalgoal", "theGoals.dat", rates)
        if name == "resolved_motion_adaptive_control":
            wp = r.get("Wp", "vec", True, required=True, length=6)
            wv = r.get("Wv", "vec", True, required=True, length=6)
            lin, rot = {}, {}
            for group, sl, label in ((lin, slice(0, 3), "linear"), (rot, slice(3, 6), "rotation")):
                for key, vec in (("wp", wp), ("wv", wv)):
                    part = vec[sl]
                    if max(part) != min(part):
                        line, text = r.line_of("Wp" if key == "wp" else "Wv")
                        p.fail(line, text, "%s: the three %s components must be equal (one gain set per group)" % (
                            "Wp" if key == "wp" else "Wv", label))
                    group[key] = part[0]
            u2s = set()
            for short, u1, k0 in RMDAC_COEFFS:
                z = r.get(short + "_zero", "num", True, default=0.0)
                c = r.get(short + "_coeff", "vec", True, default=[0.0, 0.0, 0.0], length=3)
                if c[0] != 0.0:
                    line, text = r.line_of(short + "_coeff")
                    p.fail(line, text, "%s_coeff: the first coefficient has no counterpart in RMDAC (6.206); "
                           "expected <0 u1 u2>" % short)
                lin[u1] = rot[u1] = c[1]
                lin[k0] = rot[k0] = z
                u2s.add(c[2])
            if len(u2s) > 1:
                line, text = r.line_of("f_coeff")
                p.fail(line, text, "the proportional adaptation gains u2 (third coefficients) must be equal")
            lin["u2"] = rot["u2"] = u2s.pop()
            rmdac = {"linear": lin, "rotation": rot}
        elif name == "resolved_motion_obstacle_avoidance":
            assertions = _fields(r, {"weight": "num"})
        else:
            line, text = r.line_of("name")
            p.fail(line, text, "unknown global goal %r (known: resolved_motion_adaptive_control, "
                   "resolved_motion_obstacle_avoidance)" % name)
        r.done()
    return rmdac, assertions, rates


def _trajectory(p, root, planar):
    top = Reader(p, root)
    duration = top.get("duration", "num", informal=True)
    top.done()
    knots = []
    for node in root.children:
        if node.kind != "knotpoint":
            p.fail(node.line, "define{%s}" % node.kind, "theTrajectory.spt holds define{knotpoint} only")
        knots.append(_knot(Reader(p, node), p, planar))
    if not knots:
        p.fail(1, p.path.name, "no define{knotpoint}: the global goal needs a trajectory")
    return knots, duration


def _obstacles(p, root):
    Reader(p, root).done()
    out = []
    for node in root.children:
        if node.kind != "obstacle":
            p.fail(node.line, "define{%s}" % node.kind, "theObstacle.obs holds define{obstacle} only")
        r = Reader(p, node)
        ob = {"name": r.get("name", "str", False, default="obstacle%d" % len(out)),
              "radius": r.get("radius", "num", True, required=True)}
        ob["position"], _ = _pose(r, "position", p, "obstacle")
        _zero_velocity(r, p)
        knots = []
        for c in node.children:
            if c.kind != "knotpoint":
                p.fail(c.line, "define{%s}" % c.kind, "an obstacle holds define{knotpoint} only")
            knots.append(_knot(Reader(p, c), p, True, in_obstacle=True))
        if knots:
            ob["knot"] = knots
        r.done()
        out.append(ob)
    return out


def to_dict(directory):
    """Parse a NAME.scenario directory into (scenario dict, where) — `where` maps dotted
    fields to (file, line) for errors found later by schema validation."""
    d = Path(directory)
    if not d.is_dir():
        raise ScenarioError(d, None, "directory", "not a directory")
    extra = sorted(x.name for x in d.iterdir() if x.name not in FILES and not x.name.startswith("."))
    if extra:
        raise ScenarioError(d / extra[0], None, "file", "unexpected file in a .scenario directory (expected %s)"
                            % ", ".join(FILES))
    if not (d / "theRobot.rbt").exists():
        raise ScenarioError(d / "theRobot.rbt", None, "file", "missing: a scenario needs a manipulator description")
    if not (d / "theGoals.dat").exists():
        raise ScenarioError(d / "theGoals.dat", None, "file", "missing: our runner needs the RMDAC global goal "
                            "(the thesis's local-goals-only mode is not supported)")
    if not (d / "theTrajectory.spt").exists():
        raise ScenarioError(d / "theTrajectory.spt", None, "file", "missing: required with a global goal file")
    pr = Parser(d / "theRobot.rbt")
    gravity, links, behs, payload, rates = _robot(pr, pr.parse())
    pg = Parser(d / "theGoals.dat")
    rmdac, assertions, grates = _goals(pg, pg.parse())
    if rmdac is None:
        raise ScenarioError(pg.path, None, "resolved_motion_adaptive_control", "missing: define{globalgoal} "
                            "name = resolved_motion_adaptive_control is required")
    planar = all(L["alpha"] == 0.0 for L in links) and all(L["type"] == "revolute" for L in links)
    pt = Parser(d / "theTrajectory.spt")
    knots, duration = _trajectory(pt, pt.parse(), planar)
    obstacles = []
    if (d / "theObstacle.obs").exists():
        po = Parser(d / "theObstacle.obs")
        obstacles = _obstacles(po, po.parse())
    rate = None
    for r, (line, text), parser in [(r, w, pr) for r, w in rates] + [(r, w, pg) for r, w in grates]:
        if rate is None:
            rate = r
        elif r != rate:
            parser.fail(line, text, "ControlRate %g differs from %g elsewhere (one control rate per run)" % (r, rate))

    name = d.name[:-len(".scenario")] if d.name.endswith(".scenario") else d.name
    out = {"name": name, "description": "converted from the thesis scenario directory %s" % d.name,
           "simulation": {"duration": duration if duration is not None else max(k["interval"][1] for k in knots),
                          "task": "planar" if planar else "spatial"},
           "robot": {"links": len(links), "gravity": gravity}}
    if rate is not None:
        out["simulation"]["control_rate_hz"] = rate
    common = {k: v for k, v in links[0].items() if all(L.get(k) == v for L in links)}
    out["robot"]["link"] = common
    overrides = []
    for i, L in enumerate(links):
        diff = {k: v for k, v in L.items() if k not in common}
        _group(overrides, i + 1, diff)
    # behaviours: those every link has with identical parameters go to [behaviours]
    top = {}
    for bname in sorted(set().union(*[set(b) for b in behs])):
        vals = [b.get(bname) for b in behs]
        if all(v is not None and v == vals[0] for v in vals):
            top[bname] = vals[0]
    for i, b in enumerate(behs):
        diff = {k: v for k, v in b.items() if k not in top}
        if diff:
            _group(overrides, i + 1, {"behaviours": diff})
    if assertions is not None:
        top["assertions"] = assertions
    out["behaviours"] = top
    if overrides:
        out["robot"]["override"] = overrides
    if payload is not None:
        out["payload"] = payload
    out["rmdac"] = rmdac
    out["trajectory"] = {"knot": knots}
    if obstacles:
        out["obstacle"] = obstacles
    return out


def _group(overrides, link, fields):
    if not fields:
        return
    for ov in overrides:
        if {k: v for k, v in ov.items() if k != "links"} == fields:
            ov["links"].append(link)
            return
    overrides.append(dict({"links": [link]}, **fields))
