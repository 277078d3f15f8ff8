# One cycle of a link agent (docs/design.md §6) around its core (firmware/linkstate.py
# `core`: linkcore or firmware/pycore.py, called the same way): the sync's sample, K_i's
# frames onto the bus, and the cycle's close after its torque. Module functions, not
# methods: from native code a call of one costs ~300 instructions on a Cortex-M4F, a
# method's ~900 (its name is looked for among the agent's attributes first; make
# mcu-bench). `self` is the LinkAgent, which also has them as methods.
from bus_protocol import messages as m
from firmware import safety
from firmware.hal import ticks_diff
from firmware.injection import injected
from firmware.safety import BIG, LOW
from firmware.safety import on_sample as _on_sample
from firmware.services import record as _record

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_S_QD = const(7)
_S_K = const(41)
_S_JOINT = const(238)
_S_Q = const(246)
I_TICK = const(0)
_I_SEQ = const(1)
_I_ACTED = const(3)
_I_NA = const(4)
_I_FLAGS = const(8)
I_EVERY = const(11)
I_EVERY_AT = const(12)
_I_TIMING_AT = const(13)
_I_JOINT = const(15)
_FLAG_GRAVITY = const(2)
_FLAG_PLAIN = const(4)
_FLAG_SAMPLED = const(16)
_DUE_STATUS = const(1)
_DUE_TIMING = const(2)
DUE_QUEUED = const(8)
_N_U_RUN = const(4)
_V_LAST_U = const(2)
_K_FRAME = const(64)
_ASSERT_FRAME = const(50)
_TORQUE_FRAME = const(41)
_TIMING_SLOTS = const(12)
_RUN = const(1)
_BRAKED = const(2)
_F_SENSOR = const(64)
# ---- end of layout ----


@micropython.native   # (LinkAgent.receive)
def kinematic_out(self, queued=False):
    """The frames the core made of K_i (send_kinematic, or rx at once: K_SENT) onto
    the bus: the agent's own assertions in Python (`amend`), the gravity assertion, then
    K_i, `copies` times (`queued`: rx has put them on the node's transmit buffers,
    K_QUEUED); then K_{N-1} to the host where it bridges the tip."""
    if not queued:
        amend = self.amend
        if amend is not None and amend(self):   # (True: the node is silent)
            return
        send = self.hal.send
        if self._flags & _FLAG_GRAVITY:
            send(self._tx_assert, _ASSERT_FRAME)
        copies = self.copies
        while copies > 0:
            send(self._tx, _K_FRAME)
            copies -= 1
    if self.tip_out and not self.k_to_host:   # the host bridges the tip from K_{N-1} (with
        # k_to_host it has it: assertions.before_k)
        self.send(m.KINEMATIC, m.HOST, packet(self.S, self.I[I_TICK]), None, self.copies)


def packet(S, tick):
    """The KINEMATIC values of K_i in S (a copy to the host: not in the hot path)."""
    return (tick,) + tuple(S[_S_K + j] for j in range(13))


@micropython.native   # (LinkAgent.receive)
def close(self, u, encoded, state, due=-1):
    """The cycle after its torque u (None: the core's, in S): to the motor, safety's torque
    checks, the TORQUE report, STATUS, the completion record and the host services.
    `due` >= 0: linkcore's rx closed a plain cycle (GOAL_ACTED: the TORQUE frame in _tx, or
    on the node's transmit buffer with DUE_QUEUED; no torque checks, no identification:
    on_sync's FLAG_PLAIN) and found which of STATUS and TIMING are due; -1: all of it is
    done here (the core's frame in _tx where `encoded` and the state is still `state`)."""
    # what is used more than once is held in locals: on a Cortex-M4F an attribute of
    # the agent costs ~100 instructions a load (make mcu-bench)
    hal, finish, logq, write = self._books
    held = self.u   # the torque's one-item view of S (S_U: no float made)
    if due < 0:
        if u is None:
            u = held[0]
        else:
            held[0] = u
    if write is not None:   # the motor (a simulated joint's is the host's: TORQUE)
        write(held[0] if u is None else u)
    sf = self.safety
    if due < 0:   # (linkcore's rx has set them for its plain cycle)
        sf.V[_V_LAST_U] = u   # unless it never reached the motor (the node is silent)
        sf.N[_N_U_RUN] = sf.state == _RUN and not self._silent
    I = self.I
    tick = I[I_TICK]
    if due < 0 and sf.checks_torque:
        sf.on_torque(u, self.qd, self.u_sat)
    I[_I_ACTED] = tick
    t_finish = hal.ticks_us()
    cycle_us = self.cycle_us = ticks_diff(t_finish, self.t_sync)
    # TORQUE reports the cycle to the host: on the bus, or through hal.report
    out = self._report
    if due >= 0 or (encoded and sf.state == state):   # the core's frame, of the right state
        if due < DUE_QUEUED:   # (else on its way already)
            (out or hal.send)(self._tx, _TORQUE_FRAME)
        I[_I_SEQ] = (I[_I_SEQ] + 1) & 0xFFFF
    else:
        c = self.components
        self.send(m.TORQUE, m.HOST, (tick, u, sf.state, c[0], c[1], c[2], c[3], c[4], c[5]), out)
    if due < 0:
        if self.ident is not None:
            self.ident.after_torque(self, u)
        # STATUS after the torque, when the cycle's traffic is through, and staggered by
        # link so that a chain carries about one per tick, never N at once (linkcore's
        # rx finds the same from I)
        due = (_DUE_STATUS if tick % I[I_EVERY] == I[I_EVERY_AT] else 0) | (
            _DUE_TIMING if tick % _TIMING_SLOTS == I[_I_TIMING_AT] else 0)
    if due & _DUE_STATUS:
        self.send_status()
    _record(finish, tick, cycle_us, t_finish)
    # the host services' frames, called only where there is one to send
    # (benchmarks/README.md, firmware design figures)
    if logq.waiting:
        logq.pump(self)
    if due & _DUE_TIMING:
        finish.pump(self, tick)


@micropython.native   # (LinkAgent.receive)
def on_sync(self, tick):
    """Step 2: sample the joint; check the watchdog and the sensor; A_i(q) in the core."""
    hal = self.hal
    self.t_sync = hal.ticks_us()
    if self.inject:
        injected(self, tick)
    I = self.I
    I[I_TICK] = tick
    I[_I_NA] = 0
    if self.lockstep:   # an emulated joint's state of this tick, on a wire of its own
        wait = getattr(hal, "wait_state", None)
        if wait is not None:
            wait(tick)
    ok = hal.read()
    sf = self.safety
    lc = self._lc
    core = lc[0]
    S = lc[1]
    # the core's sample: safety's checks of the reading where they latch nothing, A_i(q)
    # and the plain cycle's flag in one call, where nothing is latched or locked (the
    # Python's, here below, makes floats: benchmarks/README.md, firmware design figures)
    if ok and sf.state == _RUN and not sf.faults and self.q_lock is None:
        if not I[_I_JOINT]:   # the reading is the HAL's q, qd (a board's encoder): into S too
            S[_S_JOINT] = hal.q
            S[_S_JOINT + 1] = hal.qd
        if core.sample(S, I, lc[5], lc[6]):
            return
    sample(self, ok)
    _on_sample(sf, tick, self.q, self.qd)
    # A_i(q) now, so that K_{i-1} -> K_i is only the composition; a braked joint
    # still carries the kinematic bus (its links beyond see it where it is held)
    q = self.q
    if sf.faults & _F_SENSOR:   # its encoder is not to be trusted: the brake holds it at the last good angle
        if self.q_lock is None:
            self.q_lock = self._q_good
        q = self.q_lock
        self.qd = 0.0
    core.a_i(S, I, q, self.qd)   # (linkcore: its trigonometry is math.cos and math.sin, bit for bit)
    # the core's rx closes this tick's cycle at its goal where nothing is latched or locked
    # and nothing in Python amends the torque after it (receive: GOAL_ACTED; a fault after the
    # sync changes the state rx is given)
    plain = not sf.faults and self.q_lock is None and self.ident is None and not sf.checks_torque and not self.inject
    I[_I_FLAGS] = self._flags | _FLAG_PLAIN if plain else self._flags
    if sf.state >= _BRAKED:   # safety.is_fault_state, written out
        self.actuate(False)  # a braked (held, damped) joint needs no goal


def sample(self, ok=None):
    """The joint's reading of this tick, where it is usable (a sensor fault otherwise):
    the JOINT_STATE linkcore.rx took into S (I_JOINT), or the HAL's q, qd. `ok`:
    hal.read()'s answer, where the caller has read."""
    hal = self.hal
    reading(self)
    self._q_good = self.q
    if ok is None:
        ok = hal.read()
    if not ok:   # keep the last good reading
        self.safety.trip(_F_SENSOR, "joint read failed")
        return
    if self.I[_I_JOINT]:
        S = self.S
        q = S[_S_JOINT]
        qd = S[_S_JOINT + 1]
    else:
        q = hal.q
        qd = hal.qd
    if LOW < q < BIG and LOW < qd < BIG:   # safety.finite, written out
        self.q = q
        self.qd = qd
    else:   # keep the last good reading: a reaction about NaN would command NaN
        self.safety.trip(safety.F_NAN, "NaN/inf joint reading")


def reading(self):
    """self.q, self.qd: the joint's last good reading, where the core's sample left it in
    S only (FLAG_SAMPLED: the Python floats it does not make)."""
    I = self.I
    if I[_I_FLAGS] & _FLAG_SAMPLED:
        I[_I_FLAGS] &= ~_FLAG_SAMPLED
        S = self.S
        self.q = S[_S_Q]
        self.qd = S[_S_QD]
