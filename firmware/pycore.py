# The agent's core in pure Python: the reference implementation of linkcore's interface
# (firmware/native/linkcore_core.h), over the same arrays (S, I: firmware/layout.py;
# safety's N, V) with the same float operations in the same order, so the two give the
# same numbers and the same frames at the same float width. firmware/linkstate.py `core` chooses one
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
_S_ROT = const(0)
_S_TRANS = const(4)
_S_QD = const(7)
_S_DH = const(8)
_S_IN = const(12)
_S_PREV = const(25)
_S_Z = const(38)
_S_K = const(41)
_S_COUPLET = const(54)
_S_GOAL = const(63)
_S_GAIN = const(72)
_S_PD = const(76)
_S_JL = const(79)
_S_USAT = const(83)
_S_CENTROID = const(84)
_S_C = const(87)
_S_U = const(93)
_S_ASSERT = const(94)
_S_Q = const(246)
_S_THETA = const(247)
_S_NB_IN = const(248)
_S_NB_DH = const(261)
_I_TICK = const(0)
_I_SEQ = const(1)
_I_KIN = const(2)
_I_NA = const(4)
_I_LINK = const(6)
_I_DOWN = const(7)
_I_FLAGS = const(8)
_I_NB = const(16)
_FLAG_REV = const(1)
_FLAG_GRAVITY = const(2)
_NB_REV = const(2)
_K_FRAME = const(64)
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
    rot, trans = _dh(S, _S_DH, I[_I_FLAGS] & _FLAG_REV, S[_S_THETA], q)
    _put(S, _S_ROT, rot)
    _put(S, _S_TRANS, trans)
    S[_S_Q] = q
    S[_S_QD] = qd


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
        S[_S_PREV + j] = S[_S_IN + j]
    _compose(S, _S_PREV, I[_I_FLAGS] & _FLAG_REV, _get(S, _S_ROT, 4), _get(S, _S_TRANS, 3), S[_S_QD], _S_K, _S_Z)
    tick = I[_I_TICK]
    link = I[_I_LINK]
    seq = I[_I_SEQ]
    gravity = I[_I_FLAGS] & _FLAG_GRAVITY
    if gravity:   # the couplet's point p + R(quat) centroid (vec.qrot), then the weight
        r = qrot(_get(S, _S_K, 4), _get(S, _S_CENTROID, 3))
        for j in range(3):
            S[_S_COUPLET + j] = S[_S_K + 4 + j] + r[j]
        m.encode_into(memoryview(tx)[_K_FRAME:], m.ASSERT, link, m.HOST, seq,
                      (tick, link, m.KIND_GRAVITY) + _get(S, _S_COUPLET, 9))
        seq += 1
    m.encode_into(tx, m.KINEMATIC, link, I[_I_DOWN], seq, (tick,) + _get(S, _S_K, 13))
    I[_I_SEQ] = (seq + 1) & 0xFFFF
    I[_I_KIN] = tick


def _share(S, revolute, at):
    return share(REVOLUTE if revolute else PRISMATIC, _get(S, _S_Z, 3), _get(S, _S_PREV + 4, 3),
                 _get(S, at, 3), _get(S, at + 3, 6))


def torque(S, I, tx, goal, q, qd, state):
    revolute = I[_I_FLAGS] & _FLAG_REV
    for j in range(6):
        S[_S_C + j] = 0.0
    if S[_S_GAIN] != 0.0 and goal:
        S[_S_C] = _share(S, revolute, _S_GOAL)
    s = 0.0
    for j in range(I[_I_NA]):
        s += _share(S, revolute, _S_ASSERT + 9 * j)
    S[_S_C + 1] = s
    if S[_S_GAIN + 2] != 0.0:
        S[_S_C + 2] = behaviours.pd(q, qd, S[_S_PD], S[_S_PD + 1], S[_S_PD + 2])
    if S[_S_GAIN + 3] != 0.0:
        S[_S_C + 3] = behaviours.joint_limit(q, S[_S_JL], S[_S_JL + 1], S[_S_JL + 2], S[_S_JL + 3])
    u = (S[_S_GAIN] * S[_S_C] + S[_S_GAIN + 1] * S[_S_C + 1] + S[_S_GAIN + 2] * S[_S_C + 2]
         + S[_S_GAIN + 3] * S[_S_C + 3] + S[_S_C + 4])
    u = behaviours.saturate(u, S[_S_USAT])
    ok = -1e30 < u < 1e30   # safety.finite: never a NaN torque
    S[_S_U] = u if ok else 0.0
    m.encode_into(tx, m.TORQUE, I[_I_LINK], m.HOST, I[_I_SEQ], (I[_I_TICK], S[_S_U], state) + _get(S, _S_C, 6))
    return ok


def bridge(S, I, q, qd):
    revolute = I[_I_NB] & _NB_REV
    rot, trans = _dh(S, _S_NB_DH, revolute, S[_S_NB_DH + 4], q)
    _compose(S, _S_NB_IN, revolute, rot, trans, qd, _S_IN, -1)
