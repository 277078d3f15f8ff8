"""Fault injection (Hamilton et al.'s failure schedules): a scenario's `[[fault]]` entries as
schedules, and what each does to the plant's sensors, motors and joints and to frames on
the bus. Deterministic: every random draw comes from one generator seeded per fault.

    kind            acts on                     parameters
    node_crash      the runner (agent stops; processes mode: SIGKILL of its process)
    node_silent     the node (firmware `inject`: receives, computes, sends nothing)
    compute_fault   the node (firmware `inject`: offset added to K_i's x, or to its torque)
    frame_loss      bus frames                  rate (0..1)
    corrupt         bus frames                  ber (bit error rate)
    latency         bus frames                  delay_ms, jitter_ms
    sensor_noise    the joint's encoder         sigma (rad or m), sigma_qd
    sensor_glitch   the joint's encoder         amplitude (a jump while active)
    encoder_dead    the joint's encoder         (the reading freezes, qd = 0)
    motor_dead      the joint's motor           (no torque)
    motor_weak      the joint's motor           gain (torque factor)
    joint_locked    the joint                   (held by its brake, whatever the agent does)

A fault is active from `start` to `end` (s; no end: for good); with `period` and `duty`
it is active for the first duty * period of every period (intermittent). Bus faults take
`link` = the wire into that link (0: the host's own port), none: every wire. `seed` (any
kind, default 0) picks another draw of the fault's random generator.
"""
import math

import numpy as np

from bus_protocol import messages as m

# kind -> (link: "required" | "optional", its parameters with defaults)
KINDS = {
    "node_crash": ("required", {}),
    "node_silent": ("required", {}),
    "compute_fault": ("required", {"offset": 0.1, "target": "kinematic"}),
    "frame_loss": ("optional", {"rate": 0.1}),
    "corrupt": ("optional", {"ber": 1e-4}),
    "latency": ("optional", {"delay_ms": 2.0, "jitter_ms": 0.0}),
    "sensor_noise": ("required", {"sigma": 1e-3, "sigma_qd": 0.0}),
    "sensor_glitch": ("required", {"amplitude": 1.0}),
    "encoder_dead": ("required", {}),
    "motor_dead": ("required", {}),
    "motor_weak": ("required", {"gain": 0.5}),
    "joint_locked": ("required", {}),
}
BUS_KINDS = ("frame_loss", "corrupt", "latency")
NODE_KINDS = ("node_silent", "compute_fault")   # injected by the node's firmware
INJECT_CODES = {"node_silent": 1, "compute_fault": 2}   # firmware/agent.py INJ_*


class Schedule:
    def __init__(self, start, end=None, period=None, duty=None):
        self.start = start
        self.end = math.inf if end is None else end
        self.period = period
        self.duty = 1.0 if duty is None else duty

    def active(self, t):
        if not self.start <= t < self.end:
            return False
        if self.period is None:
            return True
        return (t - self.start) % self.period < self.duty * self.period


class Fault:
    """One [[fault]] entry (a dict as the scenario loader checked it)."""

    def __init__(self, spec, index, seed=0):
        self.kind = spec["kind"]
        self.link = spec.get("link")
        self.index = index
        self.spec = spec
        self.schedule = Schedule(spec.get("start") or 0.0, spec.get("end"), spec.get("period"), spec.get("duty"))
        self.params = {k: (spec.get(k) if spec.get(k) is not None else v) for k, v in KINDS[self.kind][1].items()}
        own = spec.get("seed")
        self.rng = np.random.default_rng([seed if own is None else own, index])

    def active(self, t):
        return self.schedule.active(t)

    def describe(self):
        s = self.kind + ("" if self.link is None else " link %d" % self.link)
        for k, v in self.params.items():
            s += " %s=%s" % (k, v)
        when = "t >= %g s" % self.schedule.start
        if self.schedule.end < math.inf:
            when = "%g <= t < %g s" % (self.schedule.start, self.schedule.end)
        if self.schedule.period:
            when += ", %g %% of every %g s" % (100 * self.schedule.duty, self.schedule.period)
        return s + " (" + when + ")"


class FaultSet:
    """The run's faults, applied by the control loop (sensors, motors, joints) and by the
    runners (bus frames, node crashes)."""

    def __init__(self, specs, seed=0):
        self.faults = [Fault(s, i, seed) for i, s in enumerate(specs)]
        self.seed = seed
        self.frozen = {}     # encoder_dead: link -> (q, qd) when it died
        self.lost = 0        # bus frames dropped, corrupted, delayed
        self.counted = "every wire"   # processes mode: the host's port (each node counts its own)
        self.corrupted = 0
        self.delayed = 0

    def __bool__(self):
        return bool(self.faults)

    def of(self, kinds):
        return [f for f in self.faults if f.kind in kinds]

    # ---- plant side ----------------------------------------------------------------
    def sense(self, t, frames):
        """JOINT_STATE frames (one per link, in link order) as the faulty encoders read."""
        for f in self.of(("sensor_noise", "sensor_glitch", "encoder_dead")):
            i = f.link - 1
            if not f.active(t):
                if f.kind == "encoder_dead":
                    self.frozen.pop(f.link, None)
                continue
            v = list(m.Decoder().decode(frames[i])[4])
            if f.kind == "sensor_noise":
                v[1] += float(f.rng.normal(0.0, f.params["sigma"]))
                v[2] += float(f.rng.normal(0.0, f.params["sigma_qd"])) if f.params["sigma_qd"] else 0.0
            elif f.kind == "sensor_glitch":
                v[1] += f.params["amplitude"]
            else:
                v[1], v[2] = self.frozen.setdefault(f.link, (v[1], 0.0))
            frames[i] = m.encode(m.JOINT_STATE, m.HOST, f.link, frames[i][3] | (frames[i][4] << 8), tuple(v))
        return frames

    def motor(self, t, torques):
        """The torques the motors deliver."""
        out = torques
        for f in self.of(("motor_dead", "motor_weak")):
            if f.active(t):
                out = np.array(out, dtype=float)
                out[f.link - 1] *= 0.0 if f.kind == "motor_dead" else f.params["gain"]
        return out

    def locked(self, t):
        return [f.link - 1 for f in self.of(("joint_locked",)) if f.active(t)]

    # ---- bus side ------------------------------------------------------------------
    def crashed(self, t, link):
        for f in self.faults:
            if f.kind == "node_crash" and f.link == link and f.active(t):
                return True
        return False

    def on_wire(self, t, frame, link):
        """A bus frame crossing the wire into or out of `link` (0: the host's port): None
        if lost, else (frame as received, added delay in s)."""
        delay = 0.0
        for f in self.of(BUS_KINDS):
            if (f.link is not None and f.link != link) or not f.active(t):
                continue
            if f.kind == "frame_loss":
                if f.rng.random() < f.params["rate"]:
                    self.lost += 1
                    return None
            elif f.kind == "corrupt":
                nbits = 8 * len(frame)
                flips = f.rng.binomial(nbits, f.params["ber"])
                if flips:
                    b = bytearray(frame)
                    for bit in f.rng.choice(nbits, size=flips, replace=False):
                        b[bit // 8] ^= 1 << (bit % 8)
                    frame = bytes(b)
                    self.corrupted += 1
            else:
                delay += 1e-3 * (f.params["delay_ms"] + f.params["jitter_ms"] * f.rng.random())
                self.delayed += 1
        return frame, delay


def check(specs, n, fail):
    """Semantic checks of [[fault]] entries (the loader has checked types): fail(index,
    field, message) for the first problem."""
    for k, f in enumerate(specs):
        kind = f["kind"]
        need, params = KINDS[kind]
        if f.get("link") is None:
            if need == "required":
                fail(k, "link", "a %s fault needs the link it hits" % kind)
        elif not (0 if kind in BUS_KINDS else 1) <= f["link"] <= n:
            fail(k, "link", "link %d out of range %d..%d" % (f["link"], 0 if kind in BUS_KINDS else 1, n))
        for key in PARAMS:
            if f.get(key) is not None and key not in params:
                fail(k, key, "a %s fault takes %s" % (kind, ", ".join(sorted(params)) or "no parameters"))
        if f.get("end") is not None and f["end"] <= (f.get("start") or 0.0):
            fail(k, "end", "end (%g) must be after start (%g)" % (f["end"], f.get("start") or 0.0))
        if (f.get("period") is None) != (f.get("duty") is None):
            fail(k, "period" if f.get("period") is None else "duty", "period and duty go together")
        for key, lo, hi in (("rate", 0.0, 1.0), ("ber", 0.0, 1.0), ("duty", 0.0, 1.0)):
            if f.get(key) is not None and not lo <= f[key] <= hi:
                fail(k, key, "must be in [%g, %g], got %g" % (lo, hi, f[key]))
        if f.get("target") is not None and f["target"] not in ("kinematic", "torque"):
            fail(k, "target", "must be kinematic or torque, got %r" % (f["target"],))


def schedule_ticks(f, rate):
    """A [[fault]] entry's schedule in control ticks at `rate` Hz: (start, end (-1: none),
    period (0: steady), duty), as the node firmware and bus_protocol.wire_faults take it."""
    start = math.ceil((f.get("start") or 0.0) * rate - 1e-9)
    end = -1 if f.get("end") is None else math.ceil(f["end"] * rate - 1e-9)
    period = 0 if f.get("period") is None else max(1, round(f["period"] * rate))
    duty = 0 if f.get("period") is None else max(1, round((f.get("duty") or 1.0) * f["period"] * rate))
    return start, end, period, duty


def wire_specs(specs, rate):
    """The bus faults of [[fault]] entries for bus_protocol.wire_faults.WireFaults (processes
    mode: every node's port and the host's transport apply them)."""
    from bus_protocol.wire_faults import KIND_CODES
    out = []
    for f in specs:
        if f["kind"] in BUS_KINDS:
            p = {k: (f.get(k) if f.get(k) is not None else v) for k, v in KINDS[f["kind"]][1].items()}
            a, b = {"frame_loss": (p.get("rate"), 0.0), "corrupt": (p.get("ber"), 0.0),
                    "latency": (p.get("delay_ms"), p.get("jitter_ms"))}[f["kind"]]
            link = -1 if f.get("link") is None else f["link"]
            out.append([KIND_CODES[f["kind"]], link] + list(schedule_ticks(f, rate))
                       + [float(a), float(b), int(f.get("seed") or 0)])
    return out


PARAMS = sorted({p for _, params in KINDS.values() for p in params})
