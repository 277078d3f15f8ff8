# The agent's core in pure Python: the reference implementation of linkcore's interface
# (firmware/native/linkcore_core.h), over the same arrays (S, I: firmware/layout.py;
# safety's N, V) with the same float operations in the same order, so the two give the
# same numbers and the same frames at the same float width. firmware/core.py chooses one
# of the two for a process; LinkAgent calls whichever it has the same way.
#   rx(frame, n, S, I, tx, state, blk, N, V) -> 0: the Python takes no frame at once; the
#       agent's decode (LinkAgent.decode, messages.Decoder) is the reference of what
#       linkcore.rx checks, takes into S and acts on;
#   sample(S, I, N, V) -> False: the agent's Python sample and safety.on_sample are the
#       reference of linkcore's plain sample;
#   a_i(S, I, q, qd): A_i(q) (kinematic_bus.dh_local) into S_ROT, S_TRANS; q, qd into S_Q, S_QD;
#   kinematic(S, I, tx): K_i from K_{i-1} (S_IN) and A_i (kinematic_bus.compose), its
#       frames in tx (with FLAG_GRAVITY the gravity couplet's ASSERT at K_FRAME, first);
#   torque(S, I, tx, goal, q, qd, state) -> u usable: the behaviours (global_proxy.share,
#       behaviours.pd, joint_limit), arbitration (5.177) and saturation (6.216), the
#       components into S_C, u into S_U, the TORQUE frame in tx;
#   bridge(S, I, q, qd): K_{i-1} composed from K_{i-2} (S_NB_IN) over neighbour i-1's
#       joint (q, qd) into S_IN.
from math import cos, sin

from bus_protocol import messages as m
from firmware import behaviours
from firmware.global_proxy import share
from firmware.kinematic_bus import PRISMATIC, REVOLUTE, compose
from firmware.linkstate import get as _get, put as _put
from firmware.vec import qrot

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_ROT = const(0)
S_TRANS = const(4)
S_QD = const(7)
S_DH = const(8)
S_IN = const(12)
S_PREV = const(25)
S_Z = const(38)
S_K = const(41)
S_COUPLET = const(54)
S_GOAL = const(63)
S_GAIN = const(72)
S_PD = const(76)
S_JL = const(79)
S_USAT = const(83)
S_CENTROID = const(84)
S_C = const(87)
S_U = const(93)
S_ASSERT = const(94)
S_Q = const(246)
S_THETA = const(247)
S_NB_IN = const(248)
S_NB_DH = const(261)
I_TICK = const(0)
I_SEQ = const(1)
I_KIN = const(2)
I_NA = const(4)
I_LINK = const(6)
I_DOWN = const(7)
I_FLAGS = const(8)
I_NB = const(16)
FLAG_REV = const(1)
FLAG_GRAVITY = const(2)
NB_REV = const(2)
K_FRAME = const(64)
# ---- end of layout ----

FLOAT_BYTES = 0   # (linkcore's float width; the pure Python's is the interpreter's)


def rx(frame, n, S, I, tx, state, blk, N, V):
    return 0


def sample(S, I, N, V):
    return False


def _dh(S, at, revolute, theta, q):
    """A(q) = Rz(theta) Tz(d) Tx(a) Rx(alpha) of the DH at S[at:] = (d, a, cos(alpha/2),
    sin(alpha/2)): (rot, trans), as kinematic_bus.dh_local."""
    d = S[at]
    a = S[at + 1]
    ca = S[at + 2]
    sa = S[at + 3]
    if revolute:
        theta = theta + q
    else:
        d = d + q
    ct = cos(0.5 * theta)
    st = sin(0.5 * theta)
    return (ct * ca, ct * sa, st * sa, st * ca), (a * cos(theta), a * sin(theta), d)


def a_i(S, I, q, qd):
    rot, trans = _dh(S, S_DH, I[I_FLAGS] & FLAG_REV, S[S_THETA], q)
    _put(S, S_ROT, rot)
    _put(S, S_TRANS, trans)
    S[S_Q] = q
    S[S_QD] = qd


def _compose(S, at_in, revolute, rot, trans, qd, at_out, at_z):
    """K from the packet at S[at_in:] over A = (rot, trans) at speed qd into S[at_out:]
    (and the joint axis z into S[at_z:], where at_z >= 0)."""
    quat, p, v, w, z = compose(REVOLUTE if revolute else PRISMATIC, rot, trans, qd, _get(S, at_in, 4),
                               _get(S, at_in + 4, 3), _get(S, at_in + 7, 3), _get(S, at_in + 10, 3))
    _put(S, at_out, quat + p + v + w)
    if at_z >= 0:
        _put(S, at_z, z)


def kinematic(S, I, tx):
    for j in range(13):
        S[S_PREV + j] = S[S_IN + j]
    _compose(S, S_PREV, I[I_FLAGS] & FLAG_REV, _get(S, S_ROT, 4), _get(S, S_TRANS, 3), S[S_QD], S_K, S_Z)
    tick = I[I_TICK]
    link = I[I_LINK]
    seq = I[I_SEQ]
    gravity = I[I_FLAGS] & FLAG_GRAVITY
    if gravity:   # the couplet's point p + R(quat) centroid (vec.qrot), then the weight
        r = qrot(_get(S, S_K, 4), _get(S, S_CENTROID, 3))
        for j in range(3):
            S[S_COUPLET + j] = S[S_K + 4 + j] + r[j]
        m.encode_into(memoryview(tx)[K_FRAME:], m.ASSERT, link, m.HOST, seq,
                      (tick, link, m.KIND_GRAVITY) + _get(S, S_COUPLET, 9))
        seq += 1
    m.encode_into(tx, m.KINEMATIC, link, I[I_DOWN], seq, (tick,) + _get(S, S_K, 13))
    I[I_SEQ] = (seq + 1) & 0xFFFF
    I[I_KIN] = tick


def _share(S, revolute, at):
    return share(REVOLUTE if revolute else PRISMATIC, _get(S, S_Z, 3), _get(S, S_PREV + 4, 3),
                 _get(S, at, 3), _get(S, at + 3, 6))


def torque(S, I, tx, goal, q, qd, state):
    revolute = I[I_FLAGS] & FLAG_REV
    for j in range(6):
        S[S_C + j] = 0.0
    if S[S_GAIN] != 0.0 and goal:
        S[S_C] = _share(S, revolute, S_GOAL)
    s = 0.0
    for j in range(I[I_NA]):
        s += _share(S, revolute, S_ASSERT + 9 * j)
    S[S_C + 1] = s
    if S[S_GAIN + 2] != 0.0:
        S[S_C + 2] = behaviours.pd(q, qd, S[S_PD], S[S_PD + 1], S[S_PD + 2])
    if S[S_GAIN + 3] != 0.0:
        S[S_C + 3] = behaviours.joint_limit(q, S[S_JL], S[S_JL + 1], S[S_JL + 2], S[S_JL + 3])
    u = (S[S_GAIN] * S[S_C] + S[S_GAIN + 1] * S[S_C + 1] + S[S_GAIN + 2] * S[S_C + 2]
         + S[S_GAIN + 3] * S[S_C + 3] + S[S_C + 4])
    u = behaviours.saturate(u, S[S_USAT])
    ok = -1e30 < u < 1e30   # safety.finite: never a NaN torque
    S[S_U] = u if ok else 0.0
    m.encode_into(tx, m.TORQUE, I[I_LINK], m.HOST, I[I_SEQ], (I[I_TICK], S[S_U], state) + _get(S, S_C, 6))
    return ok


def bridge(S, I, q, qd):
    revolute = I[I_NB] & NB_REV
    rot, trans = _dh(S, S_NB_DH, revolute, S[S_NB_DH + 4], q)
    _compose(S, S_NB_IN, revolute, rot, trans, qd, S_IN, -1)
