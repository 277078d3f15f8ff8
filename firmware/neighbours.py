# Redundant kinematics for fault tolerance (thesis 7.6.1 "redundant communication";
# Hamilton et al.'s round-robin check). An agent keeps its proximal neighbours' DH
# parameters and overhears the packets they receive, so it can
#   check:   recompute K_j from K_{j-1} and compare with the K_j link j sent; the joint
#            value q_j comes from the packets themselves (R_{j-1}^T R_j for a revolute
#            joint, the advance along z_{j-1} for a prismatic one), so a packet that no
#            joint value explains (a wrong position: an ALU fault) fails;
#   bridge:  compose K_j itself from K_{j-1} and A_j(q_lock) when link j is silent or
#            computes wrongly, with q_lock the angle its holding brake locked it at.
from math import atan2, cos, sin

from firmware import kinematic_bus
from firmware.vec import cross, dot, qaxis_z, qmul, sub

_PI = 3.141592653589793


def joint_from_packets(jtype, dh, k0, k1):
    """(q_j, qd_j) that take K_{j-1} = k0 to K_j = k1 (decoded KINEMATIC values:
    tick, quat(4), p(3), v(3), w(3)) for a link with DH (theta, d, a, alpha)."""
    theta, d, a, alpha = dh
    q0 = (k0[1], -k0[2], -k0[3], -k0[4])          # conj(quat_{j-1})
    z = qaxis_z((k0[1], k0[2], k0[3], k0[4]))
    if jtype == kinematic_bus.REVOLUTE:
        # quat_j = quat_{j-1} Rz(theta + q) Rx(alpha): strip Rx(alpha) on the right
        ca = cos(0.5 * alpha)
        sa = sin(0.5 * alpha)
        rz = qmul(qmul(q0, (k1[1], k1[2], k1[3], k1[4])), (ca, -sa, 0.0, 0.0))
        q = 2.0 * atan2(rz[3], rz[0]) - theta
        q = (q + _PI) % (2.0 * _PI) - _PI
        qd = (z[0] * (k1[11] - k0[11]) + z[1] * (k1[12] - k0[12]) + z[2] * (k1[13] - k0[13]))
    else:
        dp = (k1[5] - k0[5], k1[6] - k0[6], k1[7] - k0[7])
        q = dot(z, dp) - d
        w = (k0[11], k0[12], k0[13])
        dv = sub(sub((k1[8], k1[9], k1[10]), (k0[8], k0[9], k0[10])), cross(w, dp))
        qd = dot(z, dv)
    return q, qd


def compose_link(jtype, dh, q, qd, quat, p, v, w):
    """K_j from K_{j-1} = (quat, p, v, w) and the joint (q, qd): the kinematic bus step."""
    theta, d, a, alpha = dh
    rot, trans = kinematic_bus.dh_local(jtype, theta, d, a, alpha, q)
    quat, p, v, w, _ = kinematic_bus.compose(jtype, rot, trans, qd, quat, p, v, w)
    return quat, p, v, w


def mismatch(jtype, dh, k0, k1):
    """Largest difference (m) between K_j's position as link j sent it (k1) and K_j
    recomputed from K_{j-1} (k0) with the joint value the two packets imply; and that
    (q, qd)."""
    q, qd = joint_from_packets(jtype, dh, k0, k1)
    quat, p, v, w = compose_link(jtype, dh, q, qd, (k0[1], k0[2], k0[3], k0[4]),
                                 (k0[5], k0[6], k0[7]), (k0[8], k0[9], k0[10]), (k0[11], k0[12], k0[13]))
    e = 0.0
    for i in range(3):   # positions only: a neighbour's bridged packet (predicted joint)
        x = p[i] - k1[5 + i]   # is off most in v and w, and a check must not blame it
        if x > e:
            e = x
        elif -x > e:
            e = -x
    # a rotation that is no Rz(theta + q) Rx(alpha) at all (revolute: z of R_j must be
    # R_{j-1} Rz Rx(alpha) e_z, checked through the recomputed quaternion's sign-free match)
    c = quat[0] * k1[1] + quat[1] * k1[2] + quat[2] * k1[3] + quat[3] * k1[4]
    if 1.0 - abs(c) > e:
        e = 1.0 - abs(c)
    return e, q, qd
