# The native core of a link agent (firmware/native/linkcore.c, a native .mpy module):
# the per-cycle float work (A_i(q), K_{i-1} -> K_i, the global-proxy share, arbitration
# and saturation) and the hot frames (KINEMATIC and GOAL in, KINEMATIC, gravity ASSERT
# and TORQUE out) on one float array S, so a cycle makes no Python floats for them.
# Used when `import linkcore` works (a board with linkcore.mpy on its path; CPython with
# the same core built as an extension module by `make setup`, firmware/native/
# linkcore_cpython.c) and the link's config is one it covers; otherwise the agent runs
# the pure-Python firmware, which is also the oracle it is tested against
# (tests/test_native.py, test_mcu.py, test_linkcore_cpython.py). A test forces the pure
# Python by setting `linkcore` here to None before it configures agents (CPython: or by
# LINKTEAM_PURE_PYTHON=1 for a whole process).
from array import array
from math import cos, sin

try:
    import linkcore
except ImportError:
    linkcore = None

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# the layout of S: the same numbers as in linkcore.c
S_QD = const(7)         # the joint speed of this tick (S_Q: its angle)
S_DH = const(8)         # d, a, cos(alpha/2), sin(alpha/2)
S_IN = const(12)        # K_{i-1} to compose from: quat(4) p(3) v(3) w(3)
S_Z = const(38)         # the joint axis z_i (world), composed with K_i
S_K = const(41)         # K_i: quat(4) p(3) v(3) w(3)
S_COUPLET = const(54)   # gravity couplet: p(3), then the weight's wrench (6)
S_GOAL = const(63)      # p_app(3), f(6)
S_GAIN = const(72)      # k_proxy, k_assert, k_local, k_joint_limit
S_PD = const(76)        # q_c, kq, kw
S_JL = const(79)        # q_low, q_high, eta, rho0
S_USAT = const(83)
S_CENTROID = const(84)
S_C = const(87)         # torque components (6)
S_U = const(93)
S_ASSERT = const(94)    # MAX_ASSERT couplets p(3), f(6)
S_JOINT = const(238)    # JOINT_STATE as received: q, qd, p_psh(3), x_r(3)
S_Q = const(246)        # the joint angle of this tick
S_THETA = const(247)    # the DH theta (its offset, revolute; the angle, prismatic)
SLOTS = const(248)

# the agent's integers I, an array('i') (LinkAgent.I: with or without linkcore, the one
# place they are held: agent.I[I_TICK] is its tick, and so on). Ticks run to
# 2^31 - 1 (LinkAgent.dispatch drops a frame of a later one); 'i', not 'q': MicroPython
# makes a long-int object of every 'q' item read
I_TICK = const(0)       # the tick synced to (-1: none yet)
I_SEQ = const(1)        # the sequence number of the agent's next frame
I_KIN = const(2)        # the tick whose K_i went out (kin_tick)
I_ACTED = const(3)      # the tick whose torque went out (acted_tick)
I_NA = const(4)         # assertion couplets of this tick (S_ASSERT)
I_GOAL = const(5)       # the tick of the last goal taken
I_LINK = const(6)
I_DOWN = const(7)       # K_i's destination
I_FLAGS = const(8)      # FLAG_*
I_RX = const(9)         # linkcore.rx: a SYNC's or JOINT_STATE's tick, then its flags
I_EVERY = const(11)     # STATUS every this many ticks, at tick % I_EVERY == I_EVERY_AT
I_EVERY_AT = const(12)
I_TIMING_AT = const(13)   # TIMING at tick % services.TIMING_SLOTS == I_TIMING_AT
I_COPIES = const(14)    # K_i goes out this many times (kinematic_copies)
I_JOINT = const(15)     # 1: the HAL's reading is the JOINT_STATE linkcore.rx took into S_JOINT
INTS = const(16)
FLAG_REV = const(1)     # a revolute joint
FLAG_GRAVITY = const(2)   # K_i goes with the gravity couplet's ASSERT (its frame at tx[64:])
FLAG_PLAIN = const(4)   # this tick's goal is closed in linkcore.rx (agent._on_sync says when)
FLAG_TORQUE_BUS = const(8)   # the TORQUE report goes on the bus (the HAL has no report())
FLAG_SAMPLED = const(16)   # linkcore.sample took this tick's reading: it is in S (agent._reading)
# linkcore.rx's answers beyond a frame type: what it did with the frame at once
K_QUEUED = const(0x12)   # K_i composed, its frames queued on the node's transmit buffers
K_SENT = const(0x13)     # K_i composed: its frames in tx
GOAL_ACTED = const(0x14)   # the cycle closed: u in S_U, the TORQUE frame in tx,
DUE_STATUS = const(1)      # | these where STATUS, TIMING go out after it
DUE_TIMING = const(2)
DUE_QUEUED = const(8)      # | this where the TORQUE frame is queued on the node's

# safety's per-sample state (firmware/safety.py): its integers N, an array('i') ...
N_TICK_PREV = const(0)  # the tick of the last sample (-2: none)
N_LAST_GOAL = const(1)  # the tick of the last goal (the goal watchdog's)
N_WATCHDOG = const(2)   # watchdog_cycles
N_FROZEN = const(3)     # samples the reading has stood still (check_response)
N_U_RUN = const(4)      # the last torque was a RUN torque that reached the motor
N_PREV = const(5)       # V_Q_PREV, V_QD_PREV hold a reading
N_PYTHON = const(6)     # every sample is the Python's (safety checks the torque: on_torque)
NS = const(7)
# ... and its floats V, an array of FLOAT like S
V_Q_PREV = const(0)     # the previous reading
V_QD_PREV = const(1)
V_LAST_U = const(2)     # the torque the joint had on it since
V_MAX_Q = const(3)      # max_q_step and its negative
V_MAX_Q_NEG = const(4)
V_QD_MAX = const(5)     # qd_max and its negative
V_QD_MAX_NEG = const(6)
V_RESPOND_U = const(7)  # respond_u (0: the dead-motor check is off)
VS = const(8)

if linkcore is not None:
    _have = tuple(getattr(linkcore, x, None) for x in ("SLOTS", "INTS", "NS", "VS"))
    if _have != (SLOTS, INTS, NS, VS):
        raise ImportError("linkcore.mpy does not match firmware/linkstate.py (slots, ints, N, V: %r; want %r): "
                          "rebuild it from this firmware's linkcore.c" % (_have, (SLOTS, INTS, NS, VS)))

# the arrays' float: linkcore's (float32 on the boards, double elsewhere); without it the
# interpreter's own, so that a float stored and read back is the same number
if linkcore is not None:
    FLOAT = "f" if linkcore.FLOAT_BYTES == 4 else "d"
else:
    FLOAT = "f" if array("f", (1.1,))[0] == 1.1 else "d"


def covers(cfg):
    """The native core does what the agent does for this config: proxy, assertions,
    centering/retraction, joint limit and gravity by assertion, but no neighbour check or
    bridge, load, identification, RMOA or fault injection (those run in Python)."""
    beh = cfg.get("behaviours", {})
    nb = cfg.get("neighbours") or {}
    return not (cfg.get("load") or cfg.get("identify") or cfg.get("inject") or beh.get("rmoa")
                or nb.get("dh") or nb.get("to_host"))   # (to_host: K_{N-1} to the host too)


def state(agent, old=None):
    """S for the agent's configuration (LinkAgent.configure has set its fields); with
    `old`, its S until now, whose tick's state (A_i, K, the goal, the reading, ...) it
    keeps."""
    S = array(FLOAT, bytes(SLOTS * linkcore.FLOAT_BYTES)) if old is None else array(FLOAT, old)
    theta, d, a, alpha = agent.dh
    put(S, S_DH, (d, a, cos(0.5 * alpha), sin(0.5 * alpha)))   # as kinematic_bus.dh_local
    S[S_THETA] = theta
    if old is None:
        S[S_Z + 2] = 1.0   # the joint axis before any K_i: the pure Python's z, (0, 0, 1)
    put(S, S_GAIN, (agent.k_proxy, agent.k_assert, agent.k_local, agent.k_jl))
    put(S, S_PD, agent.local_pd)
    put(S, S_JL, (agent.q_low, agent.q_high) + agent.jl)
    S[S_USAT] = agent.u_sat
    put(S, S_CENTROID, agent.centroid)
    put(S, S_COUPLET + 3, (0.0,) * 6 if agent.weight is None else agent.weight)
    return S


def packet(S, tick):
    """The KINEMATIC values of K_i in S (a copy to the host: not in the hot path)."""
    return (tick,) + tuple(S[S_K + j] for j in range(13))


def put(S, at, values, start=0, end=None):
    """S[at:] = values[start:end], value by value (no slice object)."""
    for j in range(start, len(values) if end is None else end):
        S[at + j - start] = values[j]
