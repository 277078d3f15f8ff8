# The kinematic bus step of one link agent (DESIGN 2, thesis 5.172-5.176).
# A packet K = (quat(4), p(3), v(3), w(3)) holds frame i's orientation, origin,
# linear and angular velocity, all in world coordinates.
from math import cos, sin

from firmware.vec import add, cross, qaxis_z, qmul, qnormalize, qrot, scale

REVOLUTE = 0
PRISMATIC = 1

BASE_PACKET = ((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def joint_type(name):
    if name == "revolute":
        return REVOLUTE
    if name == "prismatic":
        return PRISMATIC
    raise ValueError("joint type must be revolute or prismatic, not %r" % (name,))


def dh_local(jtype, theta, d, a, alpha, q):
    """A_i(q) = Rz(theta) Tz(d) Tx(a) Rx(alpha) with q added to theta (revolute)
    or d (prismatic). Returns (quat of rot(A_i), trans(A_i)) in frame i-1."""
    if jtype == REVOLUTE:
        theta = theta + q
    else:
        d = d + q
    ct = cos(0.5 * theta)
    st = sin(0.5 * theta)
    ca = cos(0.5 * alpha)
    sa = sin(0.5 * alpha)
    rot = (ct * ca, ct * sa, st * sa, st * ca)  # quat(Rz(theta)) * quat(Rx(alpha))
    trans = (a * cos(theta), a * sin(theta), d)
    return rot, trans


def step(jtype, theta, d, a, alpha, q, qd, quat0, p0, v0, w0):
    """K_i from K_{i-1} = (quat0, p0, v0, w0) and the sensed joint (q, qd)."""
    rot, trans = dh_local(jtype, theta, d, a, alpha, q)
    return compose(jtype, rot, trans, qd, quat0, p0, v0, w0)


def compose(jtype, rot, trans, qd, quat0, p0, v0, w0):
    """K_i from K_{i-1} and the link's own A_i(q) = (rot, trans) (an agent computes
    A_i when it samples, so only this is left when K_{i-1} arrives):

        R_i = R_{i-1} rot(A_i)          p_i = p_{i-1} + R_{i-1} trans(A_i)
        w_i = w_{i-1} + z qd  (revolute) | w_{i-1}  (prismatic)
        v_i = v_{i-1} + w_i x (p_i - p_{i-1})  [+ z qd  (prismatic)]
    with z = R_{i-1}[:, 2], the joint axis. Returns (quat, p, v, w, z)."""
    z = qaxis_z(quat0)
    quat = qnormalize(qmul(quat0, rot))
    r = qrot(quat0, trans)
    p = add(p0, r)
    if jtype == REVOLUTE:
        w = add(w0, scale(z, qd))
        v = add(v0, cross(w, r))
    else:
        w = w0
        v = add(add(v0, scale(z, qd)), cross(w, r))
    return quat, p, v, w, z


def chain(links, qs, qds, base=BASE_PACKET):
    """Run the bus along a whole chain (tests, host-side checks). links is a list of
    (jtype, theta, d, a, alpha); returns the list of packets K_0..K_N."""
    quat, p, v, w = base
    out = [(quat, p, v, w)]
    for i in range(len(links)):
        jt, th, d, a, al = links[i]
        quat, p, v, w, _ = step(jt, th, d, a, al, qs[i], qds[i], quat, p, v, w)
        out.append((quat, p, v, w))
    return out

