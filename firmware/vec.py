# 3-vectors and unit quaternions on plain tuples (MicroPython-safe, no numpy).
# Quaternions are (w, x, y, z) and rotate vectors from the local to the world frame.


def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0])


def qmul(a, b):
    """Hamilton product a * b (A.2 of the thesis)."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def qrot(q, v):
    """R(q) v, using v' = v + 2w(u x v) + 2u x (u x v) with q = (w, u)."""
    w = q[0]
    u = (q[1], q[2], q[3])
    t = cross(u, v)
    t = (2.0 * t[0], 2.0 * t[1], 2.0 * t[2])
    c = cross(u, t)
    return (v[0] + w * t[0] + c[0], v[1] + w * t[1] + c[1], v[2] + w * t[2] + c[2])


def qaxis_z(q):
    """Third column of R(q): the z axis of the frame, in world coordinates."""
    w, x, y, z = q
    return (2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y))


def qnormalize(q):
    s = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) ** 0.5
    if s == 0.0:
        return (1.0, 0.0, 0.0, 0.0)
    return (q[0] / s, q[1] / s, q[2] / s, q[3] / s)
