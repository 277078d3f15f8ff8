# The agent's core and its state. The core is chosen once for the process (`core`): the
# native core linkcore (firmware/native/linkcore.c, a native .mpy module) when `import
# linkcore` works (a board with linkcore.mpy on its path; CPython with the same core built
# as an extension module by `make setup`, firmware/native/linkcore_cpython.c), else the
# pure Python of firmware/pycore.py, the reference it is tested against (tests/test_native.py,
# test_mcu.py, test_linkcore_cpython.py, test_core_diff.py). Both do the per-cycle float
# work (A_i(q), K_{i-1} -> K_i, the global-proxy share, arbitration and saturation) and
# the hot frames (KINEMATIC and GOAL in, KINEMATIC, gravity ASSERT and TORQUE out) on one
# float array S, the agent's only copy of that state. A test forces the pure Python by
# setting `linkcore` here to None before it configures agents (CPython: or by
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
S_DH = const(8)
S_Z = const(38)
S_COUPLET = const(54)
S_GAIN = const(72)
S_PD = const(76)
S_JL = const(79)
S_USAT = const(83)
S_CENTROID = const(84)
S_THETA = const(247)
S_NB_DH = const(261)
S_NB_TOL = const(266)
SLOTS = const(271)
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


def core():
    """The core every agent of this process runs on: linkcore where `import linkcore`
    worked, else the pure Python (firmware/pycore.py, imported only then)."""
    if linkcore is not None:
        return linkcore
    from firmware import pycore
    return pycore


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


def get(S, at, n):
    """S[at:at + n] as a tuple (no slice object)."""
    return tuple(S[at + j] for j in range(n))


def put(S, at, values, start=0, end=None):
    """S[at:] = values[start:end], value by value (no slice object)."""
    for j in range(start, len(values) if end is None else end):
        S[at + j - start] = values[j]
