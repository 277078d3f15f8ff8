# The kinematic bus step of one link agent (docs/design.md §2, thesis 5.172-5.176).
# A packet K = (quat(4), p(3), v(3), w(3)) holds frame i's orientation, origin,
# linear and angular velocity, all in world coordinates.
from math import cos, sin


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
    # vec.qaxis_z, qmul, qnormalize, qrot, add, scale and cross written out, expression
    # for expression (the same float operations in the same order: bit-identical), as
    # the calls and intermediate tuples were a third of this function's time (CPython
    # cProfile of the reference run: benchmarks/README.md, firmware design figures)
    aw, ax, ay, az = quat0
    bw, bx, by, bz = rot
    z = (2.0 * (ax * az + aw * ay), 2.0 * (ay * az - aw * ax), 1.0 - 2.0 * (ax * ax + ay * ay))
    qw = aw * bw - ax * bx - ay * by - az * bz          # quat0 * rot (A.2)
    qx = aw * bx + ax * bw + ay * bz - az * by
    qy = aw * by - ax * bz + ay * bw + az * bx
    qz = aw * bz + ax * by - ay * bx + az * bw
    s = (qw * qw + qx * qx + qy * qy + qz * qz) ** 0.5
    quat = (1.0, 0.0, 0.0, 0.0) if s == 0.0 else (qw / s, qx / s, qy / s, qz / s)
    vx, vy, vz = trans                                   # r = R(quat0) trans
    tx = ay * vz - az * vy
    ty = az * vx - ax * vz
    tz = ax * vy - ay * vx
    tx, ty, tz = 2.0 * tx, 2.0 * ty, 2.0 * tz
    rx = vx + aw * tx + (ay * tz - az * ty)
    ry = vy + aw * ty + (az * tx - ax * tz)
    rz = vz + aw * tz + (ax * ty - ay * tx)
    p = (p0[0] + rx, p0[1] + ry, p0[2] + rz)
    if jtype == REVOLUTE:
        w = (w0[0] + z[0] * qd, w0[1] + z[1] * qd, w0[2] + z[2] * qd)
        v = v0
    else:
        w = w0
        v = (v0[0] + z[0] * qd, v0[1] + z[1] * qd, v0[2] + z[2] * qd)
    wx, wy, wz = w                                       # v += w x r
    v = (v[0] + (wy * rz - wz * ry), v[1] + (wz * rx - wx * rz), v[2] + (wx * ry - wy * rx))
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

