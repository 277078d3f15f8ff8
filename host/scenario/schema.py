"""The scenario schema (docs/design.md §8): every field once, with its type, default and
range, and the checker that applies it. A missing, unknown or out-of-range field is a
`ScenarioError` naming the file, the line (`_line_of`) and the field."""
import math
import re

from bus_protocol.states import DEFAULT_REACTIONS
from host.errors import ScenarioError
from sim_host import fault_injection as fault_kinds

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
               "readmit_cycles": F("int", 0, 0),
               "kin_stale_cycles": F("int", 12, 1), "over_torque_cycles": F("int", 0, 0),
               # joint response checks (firmware/safety.py check_response): 0 turns one off
               "frozen_cycles": F("int", 3, 0), "frozen_du": F("float", 2.0, 0.0),
               "respond_u": F("float", 0.0, 0.0), "respond_a": F("float", 10.0, 0.0),
               "respond_ms": F("float", 150.0, 0.0),
               # position_limit: a reading beyond q_low, q_high by more than this; unset: off
               "position_margin": F("float", None, 0.0),
               "reactions": {name: F("str", None, choices=("report", "hold", "damp", "brake"))
                             for name in DEFAULT_REACTIONS}},
    # redundant kinematics (firmware/neighbours.py): check and bridge `depth` proximal
    # neighbours. On in every scenario that does not write the table (ON_BY_DEFAULT);
    # depth = 0 turns it off
    "neighbours": {"depth": F("int", 1, 0, 2), "tol": F("float", 1e-2, 0.0),
                   "readmit_cycles": F("int", 3, 1),
                   # the host checks the tip's K_N from K_{N-1} (one more K frame a tick)
                   "check_tip": F("bool", False)},
}
# behaviours on with their defaults where a scenario writes no table for them (fault
# tolerance: docs/design.md §5 "Fault tolerance by default"); the others are off unless written
ON_BY_DEFAULT = ("neighbours",)
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
         "gain": F("float", None, 0.0), "offset": F("float", None), "target": F("str", None, choices=("kinematic", "torque")),
         "seed": F("int", None, 0)}
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
    # the kinematic bus's time redundancy (thesis 7.6.1 "redundant communication"): every
    # K_i (K_0 from the host too) goes out this many times back to back; receivers take
    # the first copy of a tick and drop the rest (firmware/agent.py LinkAgent.compose)
    # auth: the host's COMMAND, CONFIG and GOAL frames carry a freshness value and a MAC
    # (bus_protocol/SPEC.md §9, docs/security.md); "commands": COMMAND and CONFIG only (the
    # GOAL check's cost off the cycle: docs/security.md); "unauthenticated": none, said in every summary
    "bus": {"kinematic_copies": F("int", 1, 1, 3),
            "auth": F("str", "on", choices=("on", "commands", "unauthenticated"))},
    "rmdac": {"linear": GAINS, "rotation": GAINS},
    "trajectory": {"knot": ("array", KNOT)},
    "obstacle": ("array", OBSTACLE),
    "fault": ("array", FAULT),   # fault injection schedules (sim_host/fault_injection.py)
    # centralised baselines (host/centralised.py): task-space kp, kv (RMAC 8.342) or joint-space
    # KP, KD (computed torque, Hamilton et al. eq. 2), IK gain, damped least-squares lambda
    "controller": {"kind": F("str", "multiagent", choices=("multiagent", "rmac", "rmac-nullspace", "computed-torque")),
                   "kp": F("float", 100.0, 0.0), "kv": F("float", 20.0, 0.0),
                   "k_ik": F("float", 10.0, 0.0), "dls_lambda": F("float", 0.05, 0.0),
                   "model_payload": F("bool", True)},
    # where a gains overlay came from: `linkteam tune` writes it (host/studies/tune_gains.py)
    "tuned": {"arm": F("str", None), "arm_name": F("str", None), "arm_summary": F("str", None),
              "study": F("str", None), "trial": F("int", None, 0),
              # a scenario that applies them to another arm on purpose says why here:
              # linkteam run then runs it without --gains-anyway (run.log and summary say so)
              "other_arm": F("str", None)},
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
