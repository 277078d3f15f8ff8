# The link agent (docs/design.md §5-6): sense -> kinematic bus step -> behaviours -> arbitrate
# -> saturate -> actuate. Frame-driven: a runner or a board main loop hands every
# received frame to `receive()`; the agent answers through `hal.send()`. Its cycle is a few
# calls of its core (firmware/linkstate.py `core`: linkcore in C, or the pure Python of
# firmware/pycore.py, the same interface over the same arrays S, I, N, V); what the core
# does not do is Python on the same state around those calls (firmware/cycle.py,
# arbitration.py, assertions.py, injection.py, neighbours.py, identification.py).
from array import array

from bus_protocol import messages as m
from firmware import accel  # noqa: F401  (a board's CRC loop into messages.crc16)
from firmware import arbitration, commands, cycle, linkstate, quiet, safety, services
from firmware.commands import once as _once
from firmware.cycle import close as _close, kinematic_out as _kinematic_out, on_sync as _on_sync
from firmware.cycle import reading as _reading

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

# Imported on first need: as .mpy files on a board's filesystem every module's bytecode
# and names are copied into RAM (make mcu-bench, ram_mpy_by_module_bytes), and an agent
# that checks no neighbour never runs it
neighbours = None       # the neighbour check and bridge: _neighbour_support


def _neighbour_support():
    """firmware/neighbours.py, for a link that keeps proximal neighbours' DH."""
    global neighbours
    if neighbours is None:
        from firmware import neighbours as mod
        neighbours = mod


# the layouts, frame lengths and the hot frames' types this module uses, as const:
# MicroPython inlines them (a name imported from another module is a lookup per use)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_S_IN = const(12)
_S_GOAL = const(63)
_S_ASSERT = const(94)
_S_JOINT = const(238)
_S_NB_E = const(267)
_I_TICK = const(0)
_I_SEQ = const(1)
I_KIN = const(2)
_I_ACTED = const(3)
_I_NA = const(4)
_I_GOAL = const(5)
_I_LINK = const(6)
_I_DOWN = const(7)
_I_RX = const(9)
_I_TIMING_AT = const(13)
_I_NB = const(16)
_INTS = const(20)
K_QUEUED = const(18)
_K_SENT = const(19)
GOAL_ACTED = const(20)
_NB_TAKEN = const(16)
_NB_FAILED = const(17)
_NS = const(7)
_VS = const(10)
_BLK_RING_HELD = const(594)
_K_FRAME = const(64)
_TX_FRAMES = const(114)
_MAX_ASSERT = const(16)
_SYNC = const(1)
_KINEMATIC = const(3)
_GOAL = const(4)
_RUN = const(1)
_BRAKED = const(2)
# ---- end of layout ----

TICK_MAX = const(0x7FFFFFFF)   # the last tick an agent takes (I is int32)


class LinkAgent:
    """One joint's controller. `cfg` is the per-link dict a board reads from JSON:
    link, n_links, dh{type,theta,d,a,alpha}, q_low, q_high, u_sat, mass, centroid,
    behaviours{proxy, assertions, rmoa, gravity, centering, retraction, joint_limit, brake}, safety{}."""

    # The agent's integers (tick, sequence number, the ticks whose K_i and torque went
    # out, ...) live in one array I (firmware/layout.py I_*), which linkcore reads and
    # writes: a hot frame is one native call (make mcu-bench). Read them as
    # agent.I[I_TICK]: as properties they would make every attribute store of the agent
    # look its class up first under MicroPython (py/objtype.c: make mcu-bench, `sample`
    # and `actuate`), and a __getattr__ takes CPython's specialised attribute loads away
    # from every attribute of the class (make bench).

    def __init__(self, cfg, hal):
        self.hal = hal
        self.I = array("i", bytes(4 * _INTS))
        # the frames out: the Python's and linkcore's, K_i's gravity ASSERT at 64 (linkcore)
        self._tx = bytearray(_TX_FRAMES)
        self._tx_assert = memoryview(self._tx)[_K_FRAME:]
        # HAL methods some back ends have, looked up once (getattr is ~2k instructions on a
        # Cortex-M4F): where the motor is the host's simulated plant on a wire of its own,
        # TORQUE goes there; a simulated joint's state comes in JOINT_STATE frames
        self._report = getattr(hal, "report", None)
        self._feed_joint = getattr(hal, "on_joint_state", None)
        self._take_joint = getattr(hal, "take_joint_state", None)   # the same from linkcore's S
        self._wire = None   # a ChainNode's block, where linkcore queues the hot frames (on_wire)
        # safety's per-sample state (Safety.N, V: linkcore.sample's), the same arrays every run
        self._safety_nv = (array("i", bytes(4 * _NS)), array(linkstate.FLOAT, [0.0] * _VS))
        self._silent = False   # (injected faults: firmware/injection.py)
        self._k_off = self._u_off = 0.0
        self.configure(cfg)
        self.new_run()
        self._cfg_blob = None
        self.decoder = m.Decoder()
        self.logq = services.LogQueue()            # print/log requests (NYMPH host services)
        self.finish = services.FinishLog(self.link)   # completion history -> TIMING
        self.I[_I_TIMING_AT] = self.finish.slot
        # _close's, in one attribute load; the HAL's motor (none for a simulated joint)
        self._books = (hal, self.finish, self.logq, getattr(hal, "write", None))
        self.I[_I_DOWN] = self.link + 1 if self.link < self.n_links else m.HOST
        # per-cycle state besides S and I: the joint's last good reading (S_Q, S_QD hold
        # the sync's, which K_i is composed with)
        self.q = 0.0
        self.qd = 0.0
        self.q_lock = None
        self._ak = [0] * _MAX_ASSERT      # (origin << 8) | kind of this tick's couplets in S
        self.lockstep = False  # the run's clock is synthetic (COMMAND RESET, arg 1)
        self.t_sync = 0
        self.cycle_us = 0
        self.stale_kin = 0     # goals acted on with last cycle's kinematic packet
        self.late = 0          # packets for a past tick, dropped
        self.auth = None       # the check of host commands (firmware/auth.py guard)
        self.stale_goal = 0    # cycles acted on the last goal (this tick's did not come)
        self._q_good = 0.0     # the joint reading before this tick's
        self.bridged = 0       # packets composed over a missing K_{i-1}
        self.jog = None        # ticks_us of the last jog command (firmware/params.py), while jogging

    def configure(self, cfg):
        """Take a link's config (at start, or a CONFIG blob applied while not running);
        ValueError, KeyError or TypeError if it is not usable (firmware/config_parser.py)."""
        _once("config_parser").configure(self, cfg)

    def on_wire(self, blk):
        """A ChainNode's block (bus_protocol/framing.py): during its poll round linkcore
        queues the hot frames (K_i, its gravity ASSERT, a plain cycle's TORQUE) straight
        onto its transmit buffers (linkcore_core.h wire_out), as its send would."""
        self._wire = blk
        if self.amend is None:   # (the Python's frames around K_i go through send)
            self._lc = self._lc[:4] + (blk,) + self._lc[5:]

    # ---- bus -------------------------------------------------------------------
    def send(self, mtype, dst, values, out=None, copies=1):
        """Encode into the agent's one transmit buffer and put it on the bus (or `out`),
        `copies` identical frames back to back (same seq: one frame, sent redundantly)."""
        if self._silent:
            return
        I = self.I
        n = m.encode_into(self._tx, mtype, self.link, dst, I[_I_SEQ], values)
        I[_I_SEQ] = (I[_I_SEQ] + 1) & 0xFFFF
        out = out or self.hal.send
        while copies > 0:
            out(self._tx, n)
            copies -= 1

    def log(self, text):
        """NYMPH-style host service: the host prints/logs what the node says. Inside a
        cycle (SYNC in, torque not yet out) the request waits in a bounded queue that
        drains after the torque, so it never delays the cycle."""
        tick = self.I[_I_TICK]
        if tick >= 0 and self.I[_I_ACTED] != tick:
            self.logq.put(text)
        else:
            self.send(m.LOG, m.HOST, (text.encode()[:m.LOG_MAX_TEXT],))

    # native code (the hot path: this and actuate, ChainNode's poll and send; the rest of
    # each is bytecode in a method of its own): fewer instructions a cycle (make
    # mcu-bench); no RAM frozen into the firmware, some as .mpy files or in ROMFS (native
    # code is loaded into RAM: benchmarks/README.md)
    @micropython.native
    def receive(self, frame, n=None):
        """Decode one logical frame and act on it. Garbage is counted, never raised; a
        goal, packet or joint state holding NaN/inf is dropped and latches F_NAN (brake);
        an exception inside the cycle latches F_INTERNAL. A newly latched fault is
        reported at once (STATUS, then a LOG line with its reason)."""
        # the core's rx: SYNC, JOINT_STATE, this tick's K_{i-1} or GOAL checked and unpacked
        # into S (linkcore: by C; on a Cortex-M4F a Python decode is 8-15k instructions,
        # the finite check of a JOINT_STATE 7k), and K_i or a plain cycle's torque made at
        # once (make mcu-bench: a method call costs ~900 instructions from native code);
        # anything else, or anything odd (the pure Python's rx: everything), goes the
        # Python way
        core, S, I, tx, wire, N, V = self._lc
        sf = self.safety
        t = core.rx(frame, n, S, I, tx, sf.state, wire, N, V)
        if not t:
            self.decode(frame, n)
            return
        try:   # (not counted in decoder.good, the Python decoder's count: ~1k a frame)
            if t >= GOAL_ACTED:   # take_goal and actuate's torque, done by the core
                if sf.faults:   # Safety.on_goal's re-admission counts goals (rx
                    sf.on_goal(I[_I_TICK])   # has done the rest: N_LAST_GOAL)
                if not self._goal:   # (a load costs less than a store)
                    self._goal = True
                _close(self, None, True, _RUN, t - GOAL_ACTED)
            elif t >= K_QUEUED or t == _KINEMATIC:
                if I[_I_LINK] == 1:
                    self._base = True   # K_0, kept in S (S_IN) to bridge a lost one
                if t == _K_SENT or (t == K_QUEUED and self.tip_out):
                    _kinematic_out(self, t == K_QUEUED)
            elif t >= _NB_TAKEN:   # (K_{i-2} into S: nothing more to do)
                if t == _NB_FAILED:   # neighbour i-1's check failed: K_i unless it
                    neighbours.failed(self, 0, S[_S_NB_E])   # is bridged now
                    if self.skip == 0:
                        self.send_kinematic()
            elif t == _GOAL:
                self.take_goal(True)
            elif t == _SYNC:
                if I[_I_RX] != I[_I_TICK]:
                    _on_sync(self, I[_I_RX])
            elif self._take_joint is not None:   # JOINT_STATE (its reading stays in S)
                self._take_joint(S, _S_JOINT, I, _I_RX)
        except Exception as e:
            sf.trip(safety.F_INTERNAL, "%s %s" % (type(e).__name__, e))
        if sf.pending:
            self.report_faults()

    def decode(self, frame, n=None):
        """receive() in Python: the frame decoded by messages.Decoder and dispatched."""
        msg = self.decoder.decode(frame, n)
        if msg is None:
            return
        mtype, src, dst, seq, v = msg
        if dst != self.link and dst != m.BROADCAST:   # a neighbour's packet, overheard
            if mtype != m.KINEMATIC or dst > self.link or self.link - dst > self.nb_depth:
                return
        try:
            self.dispatch(mtype, src, v, dst)
        except Exception as e:   # never let a bug stop the node: brake and say why
            self.safety.trip(safety.F_INTERNAL, "%s %s" % (type(e).__name__, e))
        if self.safety.pending:
            self.report_faults()

    def dispatch(self, mtype, src, v, dst):
        if (mtype <= m.ASSERT or mtype == m.COMMAND) and not safety.all_finite(v):   # they carry numbers
            self.safety.trip(safety.F_NAN, "NaN/inf in %s" % m.NAMES[mtype])
            return
        if mtype <= m.ASSERT and v[0] > TICK_MAX:   # a tick the agent's I cannot hold:
            self.late += 1                         # dropped, as a frame of another tick is
            return
        tick = self.I[_I_TICK]
        if mtype == m.SYNC:
            if v[0] != tick:
                self.on_sync(v[0])
            return
        if m.KINEMATIC <= mtype <= m.ASSERT and v[0] > tick and (
                v[0] - tick < 8 if tick >= 0 else mtype == m.KINEMATIC):
            # this tick's SYNC was lost, or trails the packet: sample now. A node just
            # reset (a rebooted board) syncs on its first K too: on a shared medium a
            # neighbour's K can overtake the host's SYNC, and dropped it leaves the
            # tick without its K_i (kinematic_stale at the goal)
            self.on_sync(v[0])
        if mtype == m.KINEMATIC:
            self.on_kinematic(v, self.link - dst)
        elif mtype == m.ASSERT:
            self.on_assert(v)
        elif mtype == m.GOAL:
            self.on_goal(v)
        elif mtype == m.JOINT_STATE:
            if self._feed_joint is not None:
                self._feed_joint(v)
        elif mtype == m.COMMAND:
            self.on_command(v[0], v[1])
        elif mtype == m.IDENT and self.ident is not None and self.ident.est is not None:
            self.ident.est.on_ident(src, v)
        elif mtype == m.CONFIG:
            _once("config_parser").take(self, v)

    # ---- one cycle (docs/design.md §6) ------------------------------------------------------
    on_sync = _on_sync
    sample = cycle.sample
    idle = quiet.idle
    on_command = commands.on_command
    send_status = commands.send_status
    report_faults = commands.report_faults
    # fault tolerance: the bridge and the stale goal (the neighbour check: firmware/neighbours.py)
    bridge_now = quiet.bridge_now
    pending = quiet.pending
    on_quiet = quiet.on_quiet

    def on_kinematic(self, v, r=0):
        """Step 3: K_{i-1} -> K_i, forwarded base to tip, after the agent's own assertions.
        r > 0: K_{i-1-r}, overheard (addressed to link i - r) for the neighbour check and
        the bridge; the packet composed from is K_{i-1-skip} (skip links bridged)."""
        if v[0] != self.I[_I_TICK]:
            if r == 0:
                self.late += 1
            return
        if self.link == 1:
            self._base = True   # K_0 (into S_IN): constant for a fixed base, so it also bridges a lost one
        if self.nb_depth:
            if neighbours.overheard(self, r, v[0]) is not None:
                return   # another copy of a packet this tick has brought (time redundancy)
            neighbours.take(self, v, r)
            if r < self.nb_depth and neighbours.overheard(self, r + 1, v[0]) is not None:
                neighbours.check(self, r)
        if r != self.skip or self.I[I_KIN] == v[0]:   # (v[0] is this tick: above)
            return
        if r:   # bridge: the locked links i-r .. i-1 (qd = 0)
            neighbours.compose_over(self, v, r)
        else:
            self.compose(v[1:5], v[5:8], v[8:11], v[11:14])

    def compose(self, quat0, p0, v0, w0):
        """K_i from K_{i-1} = (quat0, p0, v0, w0) (decoded, or bridged) by the core."""
        linkstate.put(self.S, _S_IN, quat0 + p0 + v0 + w0)
        self.send_kinematic()

    def send_kinematic(self):
        """compose() by linkcore from S: K_i and its frame (and the gravity assertion's,
        which leaves first), no Python float made."""
        self.core.kinematic(self.S, self.I, self._tx)
        _kinematic_out(self)

    def on_assert(self, v):
        # ASSERT: tick, origin, kind, p(3), f(6). Applied by base-ward agents j <= origin (7.250),
        # once per (origin, kind): where a ring's two goal waves meet, both copies arrive.
        I = self.I
        na = I[_I_NA]
        if v[0] != I[_I_TICK] or v[1] < self.link or na >= _MAX_ASSERT:
            return
        key = (v[1] << 8) | v[2]
        for j in range(na):
            if self._ak[j] == key:
                return
        self._ak[na] = key
        linkstate.put(self.S, _S_ASSERT + 9 * na, v, 3, 12)
        I[_I_NA] = na + 1

    def on_goal(self, v):
        """Step 6: the broadcast global goal G = (p_app, f) closes this cycle."""
        if v[0] != self.I[_I_TICK]:
            self.late += 1
            return
        linkstate.put(self.S, _S_GOAL, v, 2, 11)
        self.take_goal(True)

    def take_goal(self, goal):
        """This tick's goal (its values in S, S_GOAL) closes the cycle (linkcore's rx
        does this at once for a plain cycle: receive, GOAL_ACTED)."""
        I = self.I
        tick = I[_I_TICK]
        sf = self.safety
        sf.on_goal(tick)
        self._goal = goal
        I[_I_GOAL] = tick
        if sf.state == _RUN and I[_I_ACTED] != tick:
            if I[I_KIN] != tick:
                self.stale_kin += 1   # hold last frame (z, p_{i-1})
                sf.on_kinematic_age(tick - I[I_KIN])
            self.actuate(goal)

    @micropython.native   # (see receive)
    def actuate(self, goal):
        """Step 7: this tick's torque (a fault's reaction, or the behaviours arbitrated and
        saturated by the core; `goal`: with this tick's goal in S) to the motor, reported
        to the host (TORQUE); the cycle's bookkeeping."""
        _reading(self)
        state = self.safety.state
        if state >= _BRAKED or self.q_lock is not None:
            arbitration.reaction(self, state)   # a fault's reaction, the brake's release
        encoded = False   # the core computed u and put the TORQUE frame in self._tx
        if state < _BRAKED:
            lc = self._lc
            encoded = lc[0].torque(lc[1], lc[2], lc[3], goal, self.q, self.qd, state) and not self.inject
        _close(self, None if encoded else arbitration.arbitrate(self), encoded, state)

    def reset_neighbours(self):
        """Nothing bridged, no neighbour checked (a new run, a new config)."""
        if self.nb_depth:
            neighbours.reset(self)   # (imported by configure)
        else:
            self._kin = [None]
            self._out = [False]
            self.skip = 0
            self.I[_I_NB] = 0

    def new_run(self):
        """Fresh safety state (watchdog, encoder history) and tick: a host starting a run
        on boards that stayed powered sends COMMAND RESET first."""
        self.safety = safety.Safety(self._safety_cfg, *self._safety_nv)
        if self._brake_at_start:
            self.safety.trip(safety.F_COMMAND)
        I = self.I
        I[_I_TICK] = I[_I_ACTED] = I[I_KIN] = I[_I_GOAL] = -1
        if self._wire is not None:   # a ring's goal tick held (node.py _goal_wave): none yet
            self._wire[_BLK_RING_HELD] = 0
        self.reset_neighbours()
        self._goal = False                      # a goal taken, in S (stale goal; its tick: I_GOAL)
        self._base = False                      # link 1: a K_0 taken, in S (the base packet)
        self.tip_out = False                    # link N-1: the host took the tip out of the team


