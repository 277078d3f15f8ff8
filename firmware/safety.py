# The node safety state machine (docs/design.md §5 "Fail-safe brake", thesis 7.271-7.273):
# watchdogs and plausibility checks latch fault codes; each fault puts the agent into its
# configured reaction (hold, damp, brake); COMMAND RELEASE clears them. States, fault bits
# and names are bus_protocol/states.py, shared with the host.
from bus_protocol.states import (  # noqa: F401  (re-exported for the agent and tests)
    BRAKED, DAMP, DEFAULT_REACTIONS, F_BUS_LOST, F_COMMAND, F_CONFIG, F_GOAL_STALE, F_INTERNAL,
    F_KIN_STALE, F_MOTOR, F_NAN, F_NEIGHBOUR_DISAGREES, F_NEIGHBOUR_SILENT, F_OVER_TORQUE,
    F_POSITION_LIMIT, F_SENSOR,
    FAULT_NAMES, HOLD, INIT, REACTION_STATE, RUN, STATE_NAMES, fault_names,
    is_fault_state, stronger)

from array import array

from firmware.linkstate import FLOAT

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

# the layout of the per-sample state N and V (firmware/layout.py) as private const:
# MicroPython inlines them and keeps no name
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_N_TICK_PREV = const(0)
_N_LAST_GOAL = const(1)
_N_WATCHDOG = const(2)
_N_FROZEN = const(3)
_N_U_RUN = const(4)
_N_PREV = const(5)
_N_PYTHON = const(6)
_NS = const(7)
_V_Q_PREV = const(0)
_V_QD_PREV = const(1)
_V_LAST_U = const(2)
_V_MAX_Q = const(3)
_V_MAX_Q_NEG = const(4)
_V_QD_MAX = const(5)
_V_QD_MAX_NEG = const(6)
_V_RESPOND_U = const(7)
_V_Q_MIN = const(8)
_V_Q_MAX = const(9)
_VS = const(10)
# ---- end of layout ----

BIG = 1e30   # |x| below this and not NaN: a usable number (comparing allocates nothing;
LOW = -1e30  # negating BIG would, on every call, under MicroPython)


def finite(x):
    return LOW < x < BIG


def all_finite(values):
    """Every value of a decoded frame is a usable number (NaN and +-inf are not)."""
    for x in values:
        if not LOW < x < BIG:
            return False
    return True


def on_sample(self, tick, q, qd):
    """Safety.on_sample, called once per cycle after sensing: goal watchdog and sensor
    plausibility (a module function: from native code a method call costs ~900
    instructions on a Cortex-M4F, this one's ~300). linkcore.sample does the same for a
    sample where it latches nothing and calls nothing (linkcore_core.h)."""
    N = self.N
    if self.state == INIT:
        self.state = RUN
        N[_N_LAST_GOAL] = tick
    if tick - N[_N_LAST_GOAL] > N[_N_WATCHDOG]:
        self.trip(F_GOAL_STALE, "no goal for %d cycles" % (tick - N[_N_LAST_GOAL]))
    V = self.V
    prev = N[_N_PREV]
    if prev:
        dq = q - V[_V_Q_PREV]   # |dq| > max_q_step, written out (above)
        if dq > self.max_q_step or dq < self._q_step_neg:
            self.trip(F_SENSOR, "encoder jump %.3f" % dq)
    if N[_N_U_RUN] and tick == N[_N_TICK_PREV] + 1 and self.state == RUN:
        # check_response has nothing to do for a joint whose reading moved while nothing is
        # counted and the motor check is off (the usual cycle): not called then
        # (benchmarks/README.md, firmware design figures)
        if (qd == 0.0 and prev and q == V[_V_Q_PREV]) or N[_N_FROZEN] or self.respond_u > 0.0:
            self.check_response(q, qd)
    V[_V_Q_PREV] = q
    V[_V_QD_PREV] = qd
    N[_N_TICK_PREV] = tick
    N[_N_PREV] = 1
    if qd > self.qd_max or qd < self._qd_max_neg:   # |qd| > qd_max
        self.trip(F_SENSOR, "overspeed %.2f" % qd)
    if q < V[_V_Q_MIN] or q > V[_V_Q_MAX]:   # beyond q_low, q_high by more than the margin
        self.trip(F_POSITION_LIMIT, "position %.3f beyond [%.3f, %.3f]" % (q, V[_V_Q_MIN], V[_V_Q_MAX]))


class Safety:
    """Watchdogs and plausibility checks. A fault latches its bit; the agent's state is the
    strongest reaction of the latched faults. `clear()` (COMMAND RELEASE) clears them all;
    with readmit_cycles > 0 the communication faults (bus lost, goal or kinematic packet
    stale) also clear by themselves after that many consecutive good goals (re-admission,
    Hamilton et al.). `pending` holds the bits latched since the agent last reported.
    What the sample checks keep from cycle to cycle is in two arrays, N (ints) and V
    (floats; firmware/layout.py N_*, V_*), which linkcore.sample reads and writes too:
    the agent's own (N, V), kept across its runs, or new ones."""

    def __init__(self, cfg, N=None, V=None):
        self.N = N = array("i", bytes(4 * _NS)) if N is None else N
        self.V = V = array(FLOAT, [0.0] * _VS) if V is None else V
        for j in range(_NS):
            N[j] = 0
        for j in range(_VS):
            V[j] = 0.0
        N[_N_TICK_PREV] = -2
        N[_N_LAST_GOAL] = -1
        self.configure(cfg)
        self.faults = 0
        self.pending = 0
        self.reason = ""
        self.state = INIT
        self._stalled = 0
        self._saturated = 0
        self._good = 0
        # V[V_LAST_U], N[N_U_RUN]: the torque the agent commanded last cycle and whether it
        # was a RUN torque that reached the motor: what the joint had on it since (set by
        # the agent every cycle, read by the response check)
        self._u_frozen = 0.0   # the torque over the first cycle the reading stood still
        self._against = 0

    def configure(self, cfg):
        """Thresholds and reactions from a link's `safety` table; ValueError if invalid."""
        N = self.N
        V = self.V
        self.watchdog_cycles = int(cfg.get("watchdog_cycles", 3))
        # N is int32: a larger count is the same watchdog (ticks run to 2^31 - 1 and a
        # goal's tick is >= 0 once running, so no gap exceeds 2^31 - 1)
        N[_N_WATCHDOG] = max(-0x7FFFFFFF, min(self.watchdog_cycles, 0x7FFFFFFF))
        self.watchdog_ms = int(cfg.get("watchdog_ms", 50))   # silent bus: no SYNC at all
        self.kin_stale_cycles = int(cfg.get("kin_stale_cycles", 12))
        self.max_q_step = float(cfg.get("max_q_step", 0.5))
        self.qd_max = float(cfg.get("qd_max", 50.0))
        # the bounds' negatives, made once: on a board abs(x) of a negative x is a new float
        # object (on_sample compares x against both, allocating nothing: make mcu-bench)
        V[_V_MAX_Q] = self.max_q_step
        V[_V_MAX_Q_NEG] = self._q_step_neg = -self.max_q_step
        V[_V_QD_MAX] = self.qd_max
        V[_V_QD_MAX_NEG] = self._qd_max_neg = -self.qd_max
        # the joint's travel (the link's q_low, q_high) and how far beyond it a reading may go
        # before position_limit latches; no margin: off
        margin = cfg.get("position_margin")
        V[_V_Q_MIN] = LOW if margin is None else float(cfg.get("q_low", LOW)) - float(margin)
        V[_V_Q_MAX] = BIG if margin is None else float(cfg.get("q_high", BIG)) + float(margin)
        self.stall_u = float(cfg.get("stall_u", 0.0))      # 0 disables the stall trigger
        self.stall_qd = float(cfg.get("stall_qd", 1e-3))
        self.stall_cycles = int(cfg.get("stall_cycles", 60))
        self.over_torque_cycles = int(cfg.get("over_torque_cycles", 0))   # 0: off
        # on_torque has work (make mcu-bench: a call costs ~1.5k instructions on a Cortex-M4F)
        self.checks_torque = self.stall_u > 0.0 or self.over_torque_cycles > 0
        # (on_torque reads the agent's qd); `python_sample`: the agent's Python acts on
        # every cycle's torque (identification, injected faults: config_parser)
        N[_N_PYTHON] = self.checks_torque or bool(cfg.get("python_sample"))
        self.readmit_cycles = int(cfg.get("readmit_cycles", 0))
        # joint response checks (on_sample); `period` is the control period (s)
        period = float(cfg.get("period", 1.0 / 120.0))
        self.frozen_cycles = int(cfg.get("frozen_cycles", 3))      # 0: off
        self.frozen_du = float(cfg.get("frozen_du", 2.0))          # N m (or N)
        self.respond_u = V[_V_RESPOND_U] = float(cfg.get("respond_u", 0.0))   # N m (or N); 0: off
        self._respond_u_neg = -self.respond_u
        respond_a = float(cfg.get("respond_a", 10.0))              # rad/s^2 (or m/s^2)
        self.respond_dqd = respond_a * period                      # as a speed change per cycle
        self._respond_dqd_neg = -self.respond_dqd                  # (negating allocates, every call)
        self.respond_cycles = max(1, int(float(cfg.get("respond_ms", 150.0)) * 1e-3 / period + 0.5))
        react = {}
        given = cfg.get("reactions", {})
        for name in given:
            if name not in DEFAULT_REACTIONS:
                raise ValueError("unknown fault %r in safety.reactions" % (name,))
        for bit in FAULT_NAMES:
            name = FAULT_NAMES[bit]
            r = given.get(name, DEFAULT_REACTIONS[name])
            if r not in REACTION_STATE:
                raise ValueError("safety.reactions.%s: %r is not report, hold, damp or brake" % (name, r))
            react[bit] = REACTION_STATE[r]
        self.reaction = react

    def trip(self, bit, reason="", react=None):
        """Latch fault `bit` (once: a latched fault does not re-trip) and react: the
        fault's configured reaction, or `react` (a state) when given."""
        if self.faults & bit:
            return
        self.faults |= bit
        self.pending |= bit
        self.reason = reason or FAULT_NAMES.get(bit, "fault")
        self.state = stronger(self.state, self.reaction.get(bit, BRAKED) if react is None else react)
        self._good = 0

    def clear(self):
        """COMMAND RELEASE: clear every latched fault; the watchdog restarts at the next
        sample (INIT)."""
        self.faults = 0
        self.pending = 0
        self._stalled = 0
        self._saturated = 0
        self.N[_N_FROZEN] = 0
        self._against = 0
        self._good = 0
        self.state = INIT

    release = clear

    on_sample = on_sample

    def check_response(self, q, qd):
        """Does the joint answer the torque u it had on it for the last cycle, as a body of
        bounded inertia I must? Its net torque is u plus the disturbance d (coupling to the
        other links, gravity, friction, contact): I qdd = u + d.
          frozen encoder: the reading has not changed by one bit and reads qd = 0 for
            frozen_cycles cycles while u moved by more than frozen_du from the torque over
            the first cycle it stood still. Held still, the joint's static loads (gravity,
            springs) are what they were, so its net torque changed by about that much and
            it accelerates at du / I: within a few cycles it moves by more than an encoder
            count (0.5 du/I t^2: 2 N m on the reference arm's largest I, joint 1 with the
            arm straight, 2.4e3 kg m^2, is 2.6e-7 rad in 25 ms; a float reading in
            simulation changes at once). frozen_du
            must exceed the static-friction band and the change of the coupling torque
            over the window; a stale sample repeats qd, never reads exactly 0 while moving.
          dead motor: for respond_ms the joint accelerates by more than respond_a against
            a torque |u| > respond_u. A motor that delivers u keeps its joint from being
            flung against it unless d exceeds |u| + I respond_a for that long: the
            reference arm's trajectory asks under 1 rad/s^2 of its joints, but its start
            transient flings the light distal joints at up to 170 rad/s^2, against a
            torque over 5 N m by more than 10 rad/s^2 for up to 11 cycles (92 ms) in a
            row at 120 Hz; a joint whose motor gives nothing swings freely, against its
            torque for up to 23 cycles in a row (measured on the time series of the
            reference and of motor-dead-link2, docs/design.md §5). How hard
            coupling flings a healthy joint is the arm's: at 60 Hz, or with the integral
            gains x2, the same arm flings a distal joint against 125-570 N m for 150 ms,
            so the check is off unless a scenario sets respond_u (reference-ft does).
        Called with the previous reading still in V (on_sample)."""
        N = self.N
        V = self.V
        u = V[_V_LAST_U]
        if q == V[_V_Q_PREV] and qd == 0.0:
            if N[_N_FROZEN] == 0:
                self._u_frozen = u
            N[_N_FROZEN] += 1
            if 0 < self.frozen_cycles <= N[_N_FROZEN] and abs(u - self._u_frozen) > self.frozen_du:
                self.trip(F_SENSOR, "encoder frozen, u moved %.1f" % (u - self._u_frozen))
        else:
            N[_N_FROZEN] = 0
        if self.respond_u <= 0.0:
            return
        dqd = qd - V[_V_QD_PREV]
        if ((u > self.respond_u and dqd < self._respond_dqd_neg)
                or (u < self._respond_u_neg and dqd > self.respond_dqd)):
            self._against += 1
            if self._against >= self.respond_cycles:
                self.trip(F_MOTOR, "joint flung against u %.1f for %d cycles" % (u, self._against))
        else:
            self._against = 0

    def on_kinematic_age(self, age):
        """Cycles since the last kinematic packet was composed (checked at the goal)."""
        if age > self.kin_stale_cycles:
            self.trip(F_KIN_STALE, "no kinematic packet for %d cycles" % age)

    def on_goal(self, tick):
        self.N[_N_LAST_GOAL] = tick
        if self.readmit_cycles > 0 and self.faults and not self.faults & ~(F_GOAL_STALE | F_BUS_LOST | F_KIN_STALE):
            self._good += 1
            if self._good >= self.readmit_cycles:
                self.clear()

    def on_torque(self, u, qd, u_sat):
        """Poor motor performance: torque commanded, no motion, for stall_cycles; torque at
        saturation for over_torque_cycles (called where checks_torque, after the agent has
        set V_LAST_U and N_U_RUN)."""
        if self.stall_u > 0.0:
            if abs(u) > self.stall_u and abs(qd) < self.stall_qd:
                self._stalled += 1
                if self._stalled >= self.stall_cycles:
                    self.trip(F_MOTOR, "stall: |u| %.1f, no motion" % abs(u))
            else:
                self._stalled = 0
        if self.over_torque_cycles > 0:
            if abs(u) >= u_sat:
                self._saturated += 1
                if self._saturated >= self.over_torque_cycles:
                    self.trip(F_OVER_TORQUE, "at u_sat %d cycles" % self._saturated)
            else:
                self._saturated = 0
