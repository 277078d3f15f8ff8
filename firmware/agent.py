# The link agent (docs/design.md §5-6): sense -> kinematic bus step -> behaviours -> arbitrate
# -> saturate -> actuate. Frame-driven: a runner or a board main loop hands every
# received frame to `receive()`; the agent answers through `hal.send()`.
from array import array

from bus_protocol import messages as m
from firmware import accel  # noqa: F401  (a board's CRC loop into messages.crc16)
from firmware import behaviours, linkstate, safety, services
from firmware.hal import ticks_diff
from firmware.safety import BIG, LOW
from firmware.safety import on_sample as _on_sample
from firmware.services import record as _record

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

# Imported on first need: as .mpy files on a board's filesystem every module's bytecode
# and names are copied into RAM (make mcu-bench, ram_mpy_by_module_bytes), and an agent
# on linkcore that checks no neighbour never runs these
kinematic_bus = global_proxy = None   # the pure-Python cycle: _python_cycle
neighbours = None       # the neighbour check and bridge: _neighbour_support
identification = None   # a link that carries or identifies a load: _load_support
qrot = None             # RMOA and the weight couplet in Python (firmware/vec.py)



def _python_cycle():
    """firmware/kinematic_bus.py and global_proxy.py: A_i, K_i and the proxy's share in
    Python (no linkcore, or a config it does not cover)."""
    global kinematic_bus, global_proxy, qrot
    if kinematic_bus is None:
        from firmware import global_proxy as gp, kinematic_bus as kb
        from firmware.vec import qrot as qr
        kinematic_bus, global_proxy, qrot = kb, gp, qr


def _neighbour_support():
    """firmware/neighbours.py, for a link that keeps proximal neighbours' DH."""
    global neighbours
    _python_cycle()
    if neighbours is None:
        from firmware import neighbours as mod
        neighbours = mod


def _load_support():
    """firmware/identification.py, imported on first need (as a .mpy file it holds
    ~5 KB of RAM, a fifth of a board's budget: make mcu-bench)."""
    global identification
    if identification is None:
        from firmware import identification as mod
        identification = mod
    return identification


def _once(name):
    """firmware.<name> for one call, then forgotten: its code is garbage once the call
    returns (the names it interned stay). For what runs only at start and between runs:
    a link's configuration (configure's ~1.1 KB of bytecode is not held in RAM as .mpy:
    make mcu-bench)."""
    import sys
    pkg = __import__("firmware." + name)
    mod = getattr(pkg, name)
    del sys.modules["firmware." + name]
    delattr(pkg, name)
    return mod


# the layouts, frame lengths and the hot frames' types this module uses, as const:
# MicroPython inlines them (a name imported from another module is a lookup per use)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_QD = const(7)
S_IN = const(12)
S_GOAL = const(63)
S_ASSERT = const(94)
S_JOINT = const(238)
S_Q = const(246)
S_NB_E = const(267)
I_TICK = const(0)
I_SEQ = const(1)
I_KIN = const(2)
I_ACTED = const(3)
I_NA = const(4)
I_GOAL = const(5)
I_LINK = const(6)
I_DOWN = const(7)
I_FLAGS = const(8)
I_RX = const(9)
I_EVERY = const(11)
I_EVERY_AT = const(12)
I_TIMING_AT = const(13)
I_JOINT = const(15)
I_NB = const(16)
INTS = const(20)
FLAG_GRAVITY = const(2)
FLAG_PLAIN = const(4)
FLAG_SAMPLED = const(16)
K_QUEUED = const(18)
K_SENT = const(19)
GOAL_ACTED = const(20)
DUE_STATUS = const(1)
DUE_TIMING = const(2)
DUE_QUEUED = const(8)
NB_TAKEN = const(16)
NB_FAILED = const(17)
N_U_RUN = const(4)
NS = const(7)
V_LAST_U = const(2)
VS = const(10)
K_FRAME = const(64)
ASSERT_FRAME = const(50)
TORQUE_FRAME = const(41)
TX_FRAMES = const(114)
MAX_ASSERT = const(16)
TIMING_SLOTS = const(12)
SYNC = const(1)
KINEMATIC = const(3)
GOAL = const(4)
RUN = const(1)
BRAKED = const(2)
F_SENSOR = const(64)
# ---- end of layout ----

_NO_AUTH = (0, 0, 0)   # STATUS.auth_rejected of a node that checks no host commands
TICK_MAX = const(0x7FFFFFFF)   # the last tick an agent takes (I is int32)
# fault injection (config "inject", sim_host/fault_injection.py; absent on a real arm)
INJ_SILENT = 1    # the node sends nothing (bus and motor command)
INJ_COMPUTE = 2   # Hamilton's ALU fault: K_i's x (or the torque) off by a value

# indices of TORQUE components
C_PROXY = 0
C_ASSERT = 1
C_LOCAL_PD = 2
C_JOINT_LIMIT = 3
C_BRAKE = 4


# The hot path's helpers are module functions, not methods: from native code a call of
# one costs ~300 instructions on a Cortex-M4F, a method's ~900 (its name is looked for
# among the agent's ~85 attributes first; make mcu-bench). `self` is the LinkAgent;
# those it also has as methods are named in the class.

@micropython.native   # (LinkAgent.receive)
def _kinematic_out(self, queued=False):
    """The frames linkcore made of K_i (send_kinematic, or rx at once: K_SENT) onto
    the bus: the gravity assertion first, then K_i, `copies` times (`queued`: rx has put
    them on the node's transmit buffers, K_QUEUED); then K_{N-1} to the host."""
    if not queued:
        send = self.hal.send
        if self._flags & FLAG_GRAVITY:
            send(self._tx_assert, ASSERT_FRAME)
        copies = self.copies
        while copies > 0:
            send(self._tx, K_FRAME)
            copies -= 1
    if self.tip_out:   # the host bridges the tip from K_{N-1} (check_tip's link runs
        # the pure Python: linkstate.covers leaves out neighbour checks)
        self.send(m.KINEMATIC, m.HOST, linkstate.packet(self.S, self.I[I_TICK]), None, self.copies)


@micropython.native   # (LinkAgent.receive)
def _close(self, u, encoded, state, due=-1):
    """The cycle after its torque u (None: linkcore's, in S): to the motor, safety's torque
    checks, the TORQUE report, STATUS, the completion record and the host services.
    `due` >= 0: linkcore's rx closed a plain cycle (GOAL_ACTED: the TORQUE frame in _tx, or
    on the node's transmit buffer with DUE_QUEUED; no torque checks, no identification:
    _on_sync's FLAG_PLAIN) and found which of STATUS and TIMING are due; -1: all of it is
    done here (linkcore's frame in _tx where `encoded` and the state is still `state`)."""
    # what is used more than once is held in locals: on a Cortex-M4F an attribute of
    # the agent costs ~100 instructions a load (make mcu-bench)
    hal, finish, logq, write = self._books
    held = self.u   # the torque's one-item array (linkcore: S's slot, no float made)
    if due < 0:
        u_prev = held[0]   # held since the last tick (the identification's interval)
        if u is None:
            u = held[0]
        else:
            held[0] = u
    if write is not None:   # the motor (a simulated joint's is the host's: TORQUE)
        write(held[0] if u is None else u)
    sf = self.safety
    if due < 0:   # (linkcore's rx has set them for its plain cycle)
        sf.V[V_LAST_U] = u   # unless it never reached the motor (the node is silent)
        sf.N[N_U_RUN] = sf.state == RUN and not self._silent
    I = self.I
    tick = I[I_TICK]
    if due < 0 and sf.checks_torque:
        sf.on_torque(u, self.qd, self.u_sat)
    I[I_ACTED] = tick
    t_finish = hal.ticks_us()
    cycle_us = self.cycle_us = ticks_diff(t_finish, self.t_sync)
    # TORQUE reports the cycle to the host: on the bus, or through hal.report
    out = self._report
    if due >= 0 or (encoded and sf.state == state):   # linkcore's frame, of the right state
        if due < DUE_QUEUED:   # (else on its way already)
            (out or hal.send)(self._tx, TORQUE_FRAME)
        I[I_SEQ] = (I[I_SEQ] + 1) & 0xFFFF
    else:
        c = self.components
        self.send(m.TORQUE, m.HOST, (tick, u, sf.state, c[0], c[1], c[2], c[3], c[4], c[5]), out)
    if due < 0:
        if self.ident is not None:
            self.ident.after_torque(self, u_prev)
        # STATUS after the torque, when the cycle's traffic is through, and staggered by
        # link so that a chain carries about one per tick, never N at once (linkcore's
        # rx finds the same from I)
        due = (DUE_STATUS if tick % I[I_EVERY] == I[I_EVERY_AT] else 0) | (
            DUE_TIMING if tick % TIMING_SLOTS == I[I_TIMING_AT] else 0)
    if due & DUE_STATUS:
        self.send_status()
    _record(finish, tick, cycle_us, t_finish)
    # the host services' frames, called only where there is one to send
    # (benchmarks/README.md, firmware design figures)
    if logq.waiting:
        logq.pump(self)
    if due & DUE_TIMING:
        finish.pump(self, tick)


@micropython.native   # (LinkAgent.receive)
def _on_sync(self, tick):
    """Step 2: sample the joint; check the watchdog and the sensor."""
    hal = self.hal
    self.t_sync = hal.ticks_us()
    if self.inject:
        self.injected(tick)
    I = self.I
    I[I_TICK] = tick
    I[I_NA] = 0
    if self.lockstep:   # an emulated joint's state of this tick, on a wire of its own
        wait = getattr(hal, "wait_state", None)
        if wait is not None:
            wait(tick)
    ok = hal.read()
    sf = self.safety
    lc = self._lc
    # linkcore: safety's checks of the reading where they latch nothing, A_i(q) and the
    # plain cycle's flag in one call, where nothing is latched or locked (the Python's,
    # here below, makes floats: benchmarks/README.md, firmware design figures)
    if ok and lc is not None and sf.state == RUN and not sf.faults and self.q_lock is None:
        S = lc[1]
        if not I[I_JOINT]:   # the reading is the HAL's q, qd (a board's encoder): into S too
            S[S_JOINT] = hal.q
            S[S_JOINT + 1] = hal.qd
        if lc[0].sample(S, I, lc[5], lc[6]):
            return
    _sample(self, ok)
    _on_sample(sf, tick, self.q, self.qd)
    # A_i(q) now, so that K_{i-1} -> K_i is only the composition; a braked joint
    # still carries the kinematic bus (its links beyond see it where it is held)
    q = self.q
    sensor_bad = sf.faults & F_SENSOR
    if sensor_bad:   # its encoder is not to be trusted: the brake holds it at the last good angle
        if self.q_lock is None:
            self.q_lock = self._q_good
        q = self.q_lock
        self.qd = 0.0
    if self.core is None:
        th, d, a, al = self.dh
        self.a_i = kinematic_bus.dh_local(self.jtype, th, d, a, al, q)
        self.qd_a = self.qd   # the speed K_i is composed with: the sync's (as linkcore's S_QD)
    else:   # in linkcore, with its trigonometry (math.cos and math.sin, bit for bit)
        self.core.a_i(self.S, I, q, self.qd)
        # linkcore closes this tick's cycle at its goal where nothing is latched or locked
        # and nothing checks the torque after it (receive: GOAL_ACTED; a fault after the
        # sync changes the state rx is given)
        plain = not sf.faults and self.q_lock is None and self.ident is None and not sf.checks_torque
        I[I_FLAGS] = self._flags | FLAG_PLAIN if plain else self._flags
    if sf.state >= BRAKED:   # safety.is_fault_state, written out
        self.actuate(None)  # a braked (held, damped) joint needs no goal


def _sample(self, ok=None):
    """The joint's reading of this tick, where it is usable (a sensor fault otherwise):
    the JOINT_STATE linkcore.rx took into S (I_JOINT), or the HAL's q, qd. `ok`:
    hal.read()'s answer, where the caller has read."""
    hal = self.hal
    _reading(self)
    self._q_good = self.q
    if ok is None:
        ok = hal.read()
    if not ok:   # keep the last good reading
        self.safety.trip(F_SENSOR, "joint read failed")
        return
    if self.I[I_JOINT]:
        S = self.S
        q = S[S_JOINT]
        qd = S[S_JOINT + 1]
    else:
        q = hal.q
        qd = hal.qd
    if LOW < q < BIG and LOW < qd < BIG:   # safety.finite, written out
        self.q = q
        self.qd = qd
    else:   # keep the last good reading: a reaction about NaN would command NaN
        self.safety.trip(safety.F_NAN, "NaN/inf joint reading")


def _reading(self):
    """self.q, self.qd: the joint's last reading, where linkcore.sample left it in S only
    (FLAG_SAMPLED: the Python floats it does not make)."""
    I = self.I
    if I[I_FLAGS] & FLAG_SAMPLED:
        I[I_FLAGS] &= ~FLAG_SAMPLED
        S = self.S
        self.q = S[S_Q]
        self.qd = S[S_QD]


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
        self.I = array("i", bytes(4 * INTS))
        # the frames out: the Python's and linkcore's, K_i's gravity ASSERT at 64 (linkcore)
        self._tx = bytearray(TX_FRAMES)
        self._tx_assert = memoryview(self._tx)[K_FRAME:]
        # HAL methods some back ends have, looked up once (getattr is ~2k instructions on a
        # Cortex-M4F): where the motor is the host's simulated plant on a wire of its own,
        # TORQUE goes there; a simulated joint's state comes in JOINT_STATE frames
        self._report = getattr(hal, "report", None)
        self._feed_joint = getattr(hal, "on_joint_state", None)
        self._take_joint = getattr(hal, "take_joint_state", None)   # the same from linkcore's S
        self._wire = None   # a ChainNode's block, where linkcore queues the hot frames (on_wire)
        # safety's per-sample state (Safety.N, V: linkcore.sample's), the same arrays every run
        self._safety_nv = (array("i", bytes(4 * NS)), array(linkstate.FLOAT, [0.0] * VS))
        self.configure(cfg)
        load = cfg.get("load")   # a load the last link carries and is told of: (m, m c)
        self.load = None if load is None else (float(load["mass"]), tuple(load["h"]))
        ident = cfg.get("identify")   # the last links identify a load nobody told them of
        self.ident = None if ident is None else _load_support().LinkIdent(ident, self)
        if load is not None:
            _load_support()   # weight_couplet's
        self.new_run()
        self._cfg_blob = None
        self.decoder = m.Decoder()
        self.logq = services.LogQueue()            # print/log requests (NYMPH host services)
        self.finish = services.FinishLog(self.link)   # completion history -> TIMING
        self.I[I_TIMING_AT] = self.finish.slot
        # _close's, in one attribute load; the HAL's motor (none for a simulated joint)
        self._books = (hal, self.finish, self.logq, getattr(hal, "write", None))
        self.down = self.I[I_DOWN] = self.link + 1 if self.link < self.n_links else m.HOST
        # per-cycle state
        self.q = 0.0
        self.qd = 0.0
        self.q_lock = None
        self.z = (0.0, 0.0, 1.0)
        self.a_i = ((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0))   # A_i(q) of this tick (rot, trans)
        self.qd_a = 0.0   # and the joint speed of its reading
        self.p_prev = (0.0, 0.0, 0.0)
        self.quat = (1.0, 0.0, 0.0, 0.0)
        self.p = (0.0, 0.0, 0.0)
        self.vel = (0.0, 0.0, 0.0)
        self.w = (0.0, 0.0, 0.0)
        self._ap = [None] * MAX_ASSERT   # assertion couplets (p, f) of this tick
        self._ak = [0] * MAX_ASSERT      # and their (origin << 8) | kind
        self.lockstep = False  # the run's clock is synthetic (COMMAND RESET, arg 1)
        self.t_sync = 0
        self.cycle_us = 0
        self.stale_kin = 0     # goals acted on with last cycle's kinematic packet
        self.late = 0          # packets for a past tick, dropped
        self.auth = None       # the check of host commands (firmware/auth.py guard)
        self.stale_goal = 0    # cycles acted on the last goal (this tick's did not come)
        self._q_good = 0.0     # the joint reading before this tick's
        self._silent = False
        self._k_off = self._u_off = 0.0
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
        if self._lc is not None:
            self._lc = self._lc[:4] + (blk,) + self._lc[5:]

    # ---- bus -------------------------------------------------------------------
    def send(self, mtype, dst, values, out=None, copies=1):
        """Encode into the agent's one transmit buffer and put it on the bus (or `out`),
        `copies` identical frames back to back (same seq: one frame, sent redundantly)."""
        if self._silent:
            return
        I = self.I
        n = m.encode_into(self._tx, mtype, self.link, dst, I[I_SEQ], values)
        I[I_SEQ] = (I[I_SEQ] + 1) & 0xFFFF
        out = out or self.hal.send
        while copies > 0:
            out(self._tx, n)
            copies -= 1

    def log(self, text):
        """NYMPH-style host service: the host prints/logs what the node says. Inside a
        cycle (SYNC in, torque not yet out) the request waits in a bounded queue that
        drains after the torque, so it never delays the cycle."""
        tick = self.I[I_TICK]
        if tick >= 0 and self.I[I_ACTED] != tick:
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
        lc = self._lc
        if lc is not None:
            # linkcore: SYNC, JOINT_STATE, this tick's K_{i-1} or GOAL checked and unpacked
            # into S by C (on a Cortex-M4F a Python decode is 8-15k instructions, the finite
            # check of a JOINT_STATE 7k), and K_i or a plain cycle's torque made at once
            # (make mcu-bench: a method call costs ~900 instructions from native code);
            # anything else, or anything odd, goes the Python way
            core, S, I, tx, wire, N, V = lc
            sf = self.safety
            t = core.rx(frame, n, S, I, tx, sf.state, wire, N, V)
            if t:   # (not counted in decoder.good, the Python decoder's count: ~1k a frame)
                try:
                    if t >= GOAL_ACTED:   # take_goal and actuate's torque, done by linkcore
                        if sf.faults:   # Safety.on_goal's re-admission counts goals (rx
                            sf.on_goal(I[I_TICK])   # has done the rest: N_LAST_GOAL)
                        if self._goal is None:   # (a load costs less than a store)
                            self._goal = True
                        _close(self, None, True, RUN, t - GOAL_ACTED)
                    elif t >= K_QUEUED or t == KINEMATIC:
                        if I[I_LINK] == 1:
                            self._base = True   # K_0, kept in S (S_IN) to bridge a lost one
                        if t == K_SENT or (t == K_QUEUED and self.tip_out):
                            _kinematic_out(self, t == K_QUEUED)
                    elif t >= NB_TAKEN:   # (K_{i-2} into S: nothing more to do)
                        if t == NB_FAILED:   # neighbour i-1's check failed: K_i unless it
                            neighbours.failed(self, 0, S[S_NB_E])   # is bridged now
                            if self.skip == 0:
                                self.send_kinematic()
                    elif t == GOAL:
                        self.take_goal(True)
                    elif t == SYNC:
                        if I[I_RX] != I[I_TICK]:
                            _on_sync(self, I[I_RX])
                    elif self._take_joint is not None:   # JOINT_STATE (its reading stays in S)
                        self._take_joint(S, S_JOINT, I, I_RX)
                except Exception as e:
                    sf.trip(safety.F_INTERNAL, "%s %s" % (type(e).__name__, e))
                if sf.pending:
                    self.report_faults()
                return
        self.decode(frame, n)

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
        tick = self.I[I_TICK]
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

    def report_faults(self):
        """EMCY-like: the STATUS with the new fault bits, then the reason as a LOG line."""
        sf = self.safety
        bits = sf.pending
        sf.pending = 0
        self.send_status()
        self.log("fault %s: %s" % (" ".join(safety.fault_names(bits)), sf.reason))

    # ---- one cycle (docs/design.md §6) ------------------------------------------------------
    on_sync = _on_sync
    sample = _sample

    def idle(self):
        """Called by the board loop whenever the bus has been quiet for a while: with no
        SYNC for watchdog_ms the bus is lost (the per-cycle watchdog needs SYNCs to run),
        so brake, and keep the brake PD going at the loop's rate. True while braked.
        In a lockstep run no time passes between SYNCs (the plant waits for the host),
        so a quiet bus is no fault and there is nothing to hold (docs/design.md §13);
        the joint is still read, which feeds a board's hardware watchdog (wdt_ms)."""
        sf = self.safety
        if self.jog is not None and _once("params").jog_expired(self):   # the jog's dead-man
            return True
        if sf.state == safety.INIT:
            return False
        if self.lockstep:
            self.hal.read()
            return safety.is_fault_state(sf.state)
        if ticks_diff(self.hal.ticks_us(), self.t_sync) > 1000 * sf.watchdog_ms:
            sf.trip(safety.F_BUS_LOST, "no SYNC for %d ms" % sf.watchdog_ms)
            if sf.pending:
                self.report_faults()
            self.sample()
            if self.I[I_TICK] >= 0:
                self.actuate(None)
            elif safety.is_fault_state(sf.state):   # no tick yet: the fault's torque to the
                _reading(self)                       # motor, and no TORQUE of no tick
                self._torque_python(None, sf.state)
                self.u[0] = self._arbitrate()
                write = self._books[3]
                if write is not None:
                    write(self.u[0])
        return safety.is_fault_state(sf.state)

    def on_kinematic(self, v, r=0):
        """Step 3: K_{i-1} -> K_i, forwarded base to tip, after the agent's own assertions.
        r > 0: K_{i-1-r}, overheard (addressed to link i - r) for the neighbour check and
        the bridge; the packet composed from is K_{i-1-skip} (skip links bridged)."""
        if v[0] != self.I[I_TICK]:
            if r == 0:
                self.late += 1
            return
        if self.link == 1:
            self._base = v   # K_0: constant for a fixed base, so it also bridges a lost one
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
        if self.core is not None:
            linkstate.put(self.S, S_IN, quat0 + p0 + v0 + w0)
            self.send_kinematic()
            return
        rot, trans = self.a_i
        quat, p, vel, w, z = kinematic_bus.compose(self.jtype, rot, trans, self.qd_a, quat0, p0, v0, w0)
        self.p_prev = p0
        self.z = z
        self.quat = quat
        self.p = p
        self.vel = vel
        self.w = w
        self.I[I_KIN] = self.I[I_TICK]
        # Assertions leave before K_i so that, on every medium (FIFO per node), they reach
        # the host ahead of K_N, which is when the host rebroadcasts them with the goal.
        if self.weight is not None:   # gravity compensation by assertion
            self.send(m.ASSERT, m.HOST, (self.I[I_TICK], self.link, m.KIND_GRAVITY) + self.weight_couplet(quat, p))
        if self.rmoa is not None and self.hal.range_valid:
            self.assert_rmoa(quat, p)
        if self._k_off:
            p = (p[0] + self._k_off, p[1], p[2])
        k = (self.I[I_TICK],) + quat + p + vel + w
        if self.k_to_host:   # the host checks the tip from K_{N-1}: first, so that it is in
            self.send(m.KINEMATIC, m.HOST, k, None, self.copies)   # before K_N on every medium
        self.send(m.KINEMATIC, self.down, k, None, self.copies)
        if self.tip_out and not self.k_to_host:   # the host bridges the tip from K_{N-1}
            self.send(m.KINEMATIC, m.HOST, k, None, self.copies)   # (after: as linkcore's)

    def send_kinematic(self):
        """compose() by linkcore from S: K_i and its frame (and the gravity assertion's,
        which leaves first), no Python float made."""
        self.core.kinematic(self.S, self.I, self._tx)
        _kinematic_out(self)

    def injected(self, tick):
        """Faults injected at this tick (config "inject")."""
        self._silent = False
        self._k_off = self._u_off = 0.0
        for kind, start, end, period, duty, value in self.inject:
            if tick < start or 0 <= end <= tick or (period and (tick - start) % period >= duty):
                continue
            if kind == INJ_SILENT:
                self._silent = True
            elif kind == INJ_COMPUTE and value[0] == "torque":
                self._u_off = value[1]
            elif kind == INJ_COMPUTE:
                self._k_off = value[1]

    # ---- fault tolerance: the bridge (the neighbour check: firmware/neighbours.py) ----
    def bridge_now(self):
        """No K_{i-1} in time this tick: compose K_i from the nearest earlier packet that
        came, over the links between (bridged ones locked, the others predicted). Link 1
        composes over the last K_0 (the base packet: constant for a fixed base)."""
        if self.link == 1:
            v = self._base
            if v is None:
                return False
            self.bridged += 1
            if v is True:   # linkcore: the last K_0 is in S
                self.send_kinematic()
            else:
                self.compose(v[1:5], v[5:8], v[8:11], v[11:14])
            return True
        return neighbours.bridge(self)   # (nb_depth > 0: imported by configure)

    def pending(self):
        """With neighbours to bridge (or the base packet, link 1): synced to a tick whose
        K_i has not gone out yet."""
        tick = self.I[I_TICK]
        return ((self.nb_depth or self._base is not None) and tick >= 0 and self.I[I_KIN] != tick
                and self.safety.state == safety.RUN)

    def on_quiet(self, goal=True):
        """The bus has gone quiet in this tick (a board's hop timeout; in-process, the loopback
        bus has nothing left to deliver): a K_{i-1} that did not come is bridged; with `goal`,
        a goal that did not come is replaced by the last one (stale goal), so the joint gets
        its torque. True if the agent sent anything."""
        I = self.I
        tick = I[I_TICK]
        if tick < 0 or I[I_ACTED] == tick or self.safety.state != safety.RUN:
            return False
        if I[I_KIN] != tick and (self.nb_depth or self.link == 1) and self.bridge_now():
            return True
        if goal and self._goal is not None and I[I_GOAL] >= tick - self.safety.watchdog_cycles:
            self.stale_goal += 1
            if I[I_KIN] != tick:
                self.stale_kin += 1
            self.actuate(self._goal)
            return True
        return False

    def weight_couplet(self, quat, p):
        """(p, f) of the link's weight, with the load it carries: told (`load`) or its
        estimate (identification `use`)."""
        load = self.ident.load() if self.ident is not None and self.ident.use else self.load
        if load is None:
            return _to_world(quat, p, self.centroid) + self.weight
        return identification.weight_couplet(quat, p, load[0], load[1], self.g, self.mass, self.centroid)

    def assert_rmoa(self, quat, p):
        """Step 5: range to the nearest obstacle under the clearance -> RMOA couplet."""
        x_r = qrot(quat, self.hal.x_r)
        rho = (x_r[0] * x_r[0] + x_r[1] * x_r[1] + x_r[2] * x_r[2]) ** 0.5
        eta, clearance, f_max = self.rmoa
        f = behaviours.rmoa_force(x_r, rho, eta, clearance, f_max)
        if f is not None:
            p_psh = _to_world(quat, p, self.hal.p_psh)
            self.send(m.ASSERT, m.HOST, (self.I[I_TICK], self.link, m.KIND_RMOA) + p_psh + f
                      + (0.0, 0.0, 0.0))

    def on_assert(self, v):
        # ASSERT: tick, origin, kind, p(3), f(6). Applied by base-ward agents j <= origin (7.250),
        # once per (origin, kind): where a ring's two goal waves meet, both copies arrive.
        I = self.I
        na = I[I_NA]
        if v[0] != I[I_TICK] or v[1] < self.link or na >= MAX_ASSERT:
            return
        key = (v[1] << 8) | v[2]
        for j in range(na):
            if self._ak[j] == key:
                return
        self._ak[na] = key
        if self.core is None:
            self._ap[na] = (v[3:6], v[6:12])
        else:
            linkstate.put(self.S, S_ASSERT + 9 * na, v, 3, 12)
        I[I_NA] = na + 1

    def on_goal(self, v):
        """Step 6: the broadcast global goal G = (p_app, f) closes this cycle."""
        if v[0] != self.I[I_TICK]:
            self.late += 1
            return
        if self.core is not None:
            linkstate.put(self.S, S_GOAL, v, 2, 11)
            v = True
        self.take_goal(v)

    def take_goal(self, goal):
        """This tick's goal (True: its values are in S, S_GOAL) closes the cycle
        (linkcore does this at once for a plain cycle: receive, GOAL_ACTED)."""
        I = self.I
        tick = I[I_TICK]
        sf = self.safety
        sf.on_goal(tick)
        self._goal = goal
        I[I_GOAL] = tick
        if sf.state == RUN and I[I_ACTED] != tick:
            if I[I_KIN] != tick:
                self.stale_kin += 1   # hold last frame (z, p_{i-1})
                sf.on_kinematic_age(tick - I[I_KIN])
            self.actuate(goal)

    @micropython.native   # (see receive)
    def actuate(self, goal):
        """Step 7: this tick's torque (a fault's reaction, or the behaviours arbitrated and
        saturated) to the motor, reported to the host (TORQUE); the cycle's bookkeeping."""
        _reading(self)
        state = self.safety.state
        core = self.core
        if core is None or state >= BRAKED or self.q_lock is not None:
            self._torque_python(goal, state)   # a fault's reaction, the brake's release, no linkcore
        encoded = False   # linkcore computed u and put the TORQUE frame in self._tx
        if core is not None and state < BRAKED:
            # linkcore: the behaviours, arbitration, saturation and the TORQUE frame, in C
            encoded = core.torque(self.S, self.I, self._tx, goal is not None, self.q, self.qd, state)
        _close(self, None if encoded else self._arbitrate(), encoded, state)

    def _torque_python(self, goal, state):
        """actuate() where it is not linkcore's plain RUN torque: a fault's reaction, the
        brake released after one (linkcore's torque follows), or the behaviours in Python
        (no linkcore); their components into self.components."""
        c = self.components
        q = self.q
        qd = self.qd
        hal = self.hal
        core = self.core
        fault = state >= BRAKED   # safety.is_fault_state, written out
        if fault or core is None:
            for j in range(6):
                c[j] = 0.0
        if fault:   # the fault's reaction
            if self.q_lock is None:
                self.q_lock = q
            braked = state == BRAKED
            if braked != hal.braked:
                hal.set_brake(braked)
            if self.safety.faults & F_SENSOR:
                c[C_BRAKE] = 0.0   # no servo on a reading it distrusts: the holding brake holds
            elif state == safety.DAMP:
                c[C_BRAKE] = -self.brake_gains[1] * qd
            else:   # hold or brake: the brake PD about the angle at the fault (7.274)
                c[C_BRAKE] = behaviours.pd(q, qd, self.q_lock, self.brake_gains[0], self.brake_gains[1])
            return
        if self.q_lock is not None:
            self.q_lock = None
            hal.set_brake(False)
        if core is not None:
            return
        jt = self.jtype
        z = self.z
        pp = self.p_prev
        if self.k_proxy and goal is not None:
            c[C_PROXY] = global_proxy.share(jt, z, pp, goal[2:5], goal[5:11])
        s = 0.0
        for j in range(self.I[I_NA]):
            pa, fa = self._ap[j]
            s += global_proxy.share(jt, z, pp, pa, fa)
        c[C_ASSERT] = s
        if self.k_local:
            qc, kq, kw = self.local_pd
            c[C_LOCAL_PD] = behaviours.pd(q, qd, qc, kq, kw)
        if self.k_jl:
            c[C_JOINT_LIMIT] = behaviours.joint_limit(q, self.q_low, self.q_high, self.jl[0], self.jl[1])

    def _arbitrate(self):
        """u from the components: linear arbitration u = sum k_j u_j (5.177), then
        saturation (6.216); never a NaN torque, whatever went wrong before."""
        c = self.components
        u = (self.k_proxy * c[C_PROXY] + self.k_assert * c[C_ASSERT] + self.k_local * c[C_LOCAL_PD]
             + self.k_jl * c[C_JOINT_LIMIT] + c[C_BRAKE])
        u = behaviours.saturate(u, self.u_sat)
        if self._u_off:
            u += self._u_off
        if not safety.finite(u):
            u = 0.0
            self.safety.trip(safety.F_INTERNAL, "non-finite torque")
        return u

    def send_status(self):
        self.send(m.STATUS, m.HOST, (self.I[I_TICK] & 0xFFFFFFFF, self.safety.state, self.safety.faults,
                                     self.decoder.bad & 0xFFFF, self.cycle_us & 0xFFFFFFFF,
                                     self.stale_kin & 0xFFFF, self.late & 0xFFFF)
                  + (self.auth.counts() if self.auth is not None else _NO_AUTH))
        if self.ident is not None and self.ident.est is not None:
            self.send(m.ESTIMATE, m.HOST, (self.I[I_TICK] & 0xFFFFFFFF,) + tuple(self.ident.est.theta))

    def on_command(self, cmd, arg):
        """BRAKE latches F_COMMAND, or the fault bit given in arg (the host braking a node a
        neighbour reported); RELEASE is the explicit clear of every latched fault."""
        if cmd == m.CMD_BRAKE:
            bit = int(arg)
            self.safety.trip(bit if bit in safety.FAULT_NAMES else safety.F_COMMAND, "commanded", safety.BRAKED)
            if self.I[I_TICK] >= 0:   # brake now: this tick's TORQUE reports BRAKED
                self.actuate(None)
        elif cmd == m.CMD_RELEASE:
            self.safety.clear()
        elif cmd == m.CMD_PING:
            self.send_status()
        elif cmd == m.CMD_RESET:
            self.new_run()
            self.lockstep = arg == 1.0
        elif cmd == m.CMD_CONFIG_APPLY:
            _once("config_parser").apply(self)
        elif m.CMD_PARAM <= cmd <= m.CMD_REBOOT:   # bring-up: parameters, save, zero, jog, reboot
            _once("params").command(self, cmd, arg)
        elif cmd == m.CMD_NODE_OUT or cmd == m.CMD_NODE_IN:
            if int(arg) == self.link + 1 == self.n_links:   # the tip, distal neighbour of N-1
                self.tip_out = cmd == m.CMD_NODE_OUT
            j = self.link - 1 - int(arg)   # a proximal neighbour's place in the tables
            if 0 <= j <= self.nb_depth:
                _neighbour_support()
                neighbours.node_out(self, j, cmd == m.CMD_NODE_OUT)

    def reset_neighbours(self):
        """Nothing bridged, no neighbour checked (a new run, a new config)."""
        if self.nb_depth:
            neighbours.reset(self)   # (imported by configure)
        else:
            self._kin = [None]
            self._out = [False]
            self.skip = 0
            self.I[I_NB] = 0

    def new_run(self):
        """Fresh safety state (watchdog, encoder history) and tick: a host starting a run
        on boards that stayed powered sends COMMAND RESET first."""
        self.safety = safety.Safety(self._safety_cfg, *self._safety_nv)
        if self._brake_at_start:
            self.safety.trip(safety.F_COMMAND)
        I = self.I
        I[I_TICK] = I[I_ACTED] = I[I_KIN] = I[I_GOAL] = -1
        self.reset_neighbours()
        self._goal = None                       # the last goal (stale goal; its tick: I_GOAL)
        self._base = None                       # link 1: the last K_0 (the base packet)
        self.tip_out = False                    # link N-1: the host took the tip out of the team


def _to_world(quat, p, x_link):
    """p + R x for a point given in link-frame coordinates."""
    r = qrot(quat, x_link)
    return (p[0] + r[0], p[1] + r[1], p[2] + r[2])
