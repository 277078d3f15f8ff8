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

# the layouts (firmware/layout.py; the same numbers as linkcore's linkcore_layout.h)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_ROT = const(0)
S_TRANS = const(4)
S_QD = const(7)
S_DH = const(8)
S_PREV = const(25)
S_Z = const(38)
S_K = const(41)
S_COUPLET = const(54)
S_GAIN = const(72)
S_PD = const(76)
S_JL = const(79)
S_USAT = const(83)
S_CENTROID = const(84)
S_Q = const(246)
S_THETA = const(247)
S_NB_DH = const(261)
S_NB_TOL = const(266)
SLOTS = const(271)
I_FLAGS = const(8)
FLAG_SAMPLED = const(16)
LAYOUT_ID = const(0x147510F)
# ---- end of layout ----

if linkcore is not None and getattr(linkcore, "LAYOUT_ID", None) != LAYOUT_ID:
    raise ImportError("linkcore.mpy does not match firmware/linkstate.py (layout %r; want %r): "
                      "rebuild it from this firmware's linkcore.c" % (getattr(linkcore, "LAYOUT_ID", None), LAYOUT_ID))

# the arrays' float: linkcore's (float32 on the boards, double elsewhere); without it the
# interpreter's own, so that a float stored and read back is the same number
if linkcore is not None:
    FLOAT = "f" if linkcore.FLOAT_BYTES == 4 else "d"
else:
    FLOAT = "f" if array("f", (1.1,))[0] == 1.1 else "d"


def covers(cfg):
    """The native core does what the agent does for this config: proxy, assertions,
    centering/retraction, joint limit, gravity by assertion, the neighbour check (depth 1) and
    the bridge, but no load, identification, RMOA or fault injection (those run in Python)."""
    beh = cfg.get("behaviours", {})
    nb = cfg.get("neighbours") or {}
    return not (cfg.get("load") or cfg.get("identify") or cfg.get("inject") or beh.get("rmoa")
                or nb.get("to_host"))   # (to_host: K_{N-1} to the host too)


def state(agent, old=None):
    """S for the agent's configuration (LinkAgent.configure has set its fields); with
    `old`, its S until now, whose tick's state (A_i, K, the goal, the reading, ...) it
    keeps."""
    S = array(FLOAT, bytes(SLOTS * (4 if FLOAT == "f" else 8))) if old is None else array(FLOAT, old)
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
    if agent.nb:   # neighbour i-1's DH, as dh_local takes it
        theta, d, a, alpha = agent.nb[0][1]
        put(S, S_NB_DH, (d, a, cos(0.5 * alpha), sin(0.5 * alpha), theta))
    S[S_NB_TOL] = agent.nb_tol
    return S


def to_python(agent, S):
    """The tick's state in S (A_i and the speed it is of, the reading, K_i, z_i, p_{i-1})
    as the pure Python's attributes: a CONFIG that moves the link off linkcore."""
    if agent.I[I_FLAGS] & FLAG_SAMPLED:   # the reading where linkcore.sample left it
        agent.q = S[S_Q]
        agent.qd = S[S_QD]
    agent.a_i = (_get(S, S_ROT, 4), _get(S, S_TRANS, 3))
    agent.qd_a = S[S_QD]
    agent.quat = _get(S, S_K, 4)
    agent.p = _get(S, S_K + 4, 3)
    agent.vel = _get(S, S_K + 7, 3)
    agent.w = _get(S, S_K + 10, 3)
    agent.z = _get(S, S_Z, 3)
    agent.p_prev = _get(S, S_PREV + 4, 3)


def from_python(agent, S):
    """The pure Python's tick state into S (to_python's inverse): a CONFIG that moves the
    link onto linkcore."""
    rot, trans = agent.a_i
    put(S, S_ROT, rot)
    put(S, S_TRANS, trans)
    S[S_QD] = agent.qd_a
    S[S_Q] = agent.q
    put(S, S_K, agent.quat + agent.p + agent.vel + agent.w)
    put(S, S_Z, agent.z)
    put(S, S_PREV + 4, agent.p_prev)


def _get(S, at, n):
    return tuple(S[at + j] for j in range(n))


def packet(S, tick):
    """The KINEMATIC values of K_i in S (a copy to the host: not in the hot path)."""
    return (tick,) + tuple(S[S_K + j] for j in range(13))


def put(S, at, values, start=0, end=None):
    """S[at:] = values[start:end], value by value (no slice object)."""
    for j in range(start, len(values) if end is None else end):
        S[at + j - start] = values[j]
