"""End-effector (and obstacle) trajectories from knot points (DESIGN 8, thesis 5.2.3).

A knot moves from the previous pose to its target over `interval = [t0, t1]` on a
cubic blend s(tau) = 3 tau^2 - 2 tau^3 (straight line, parabolic velocity profile), or
jumps at t0 (`type = "step"`). Orientation turns about the fixed axis of the rotation
between the two knot orientations (the thesis's interpolation); planar tasks carry the
angle about z directly so multi-turn angles survive.
"""
import math

import numpy as np


def blend(t, t0, t1, kind):
    """(s, sdot, sddot) of the segment's profile at time t."""
    if kind == "step":
        return (1.0 if t >= t0 else 0.0), 0.0, 0.0
    if t <= t0:
        return 0.0, 0.0, 0.0
    if t >= t1:
        return 1.0, 0.0, 0.0
    T = t1 - t0
    tau = (t - t0) / T
    return 3 * tau**2 - 2 * tau**3, 6 * tau * (1 - tau) / T, (6 - 12 * tau) / T**2


# --- quaternion helpers (w, x, y, z), numpy -------------------------------------------
def qmul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def qconj(q):
    return np.array([q[0], -q[1], -q[2], -q[3]])


def qexp(rotvec):
    ang = float(np.linalg.norm(rotvec))
    if ang < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0])
    ax = np.asarray(rotvec) / ang
    return np.concatenate([[math.cos(ang / 2)], math.sin(ang / 2) * ax])


def qlog(q):
    """Rotation vector (axis * angle, angle in [0, pi]) of a unit quaternion."""
    q = np.asarray(q, float)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return np.zeros(3)
    return q[1:] / s * 2.0 * math.atan2(s, q[0])


def quat_from_rpy(r, p, y):
    """R = Rz(y) Ry(p) Rx(r)."""
    return qmul(qmul(qexp([0, 0, y]), qexp([0, p, 0])), qexp([r, 0, 0]))


def quat_from_matrix(R):
    R = np.asarray(R, float)
    w = math.sqrt(max(0.0, 1 + R[0, 0] + R[1, 1] + R[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + R[0, 0] - R[1, 1] - R[2, 2])) / 2, R[2, 1] - R[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] + R[1, 1] - R[2, 2])) / 2, R[0, 2] - R[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - R[0, 0] - R[1, 1] + R[2, 2])) / 2, R[1, 0] - R[0, 1])
    q = np.array([w, x, y, z])
    return q / np.linalg.norm(q)


def yaw_of(q):
    w, x, y, z = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


class Sample:
    """Desired state at one instant (world frame): p, v, a (3); quat; w, wd (3);
    angle (planar: about z, unwrapped)."""
    __slots__ = ("p", "v", "a", "quat", "w", "wd", "angle")


class Trajectory:
    def __init__(self, knots, p_start, quat_start, planar):
        self.planar = planar
        self.segments = []
        p0 = np.asarray(p_start, float)
        q0 = np.asarray(quat_start, float)
        a0 = yaw_of(q0)
        for kn in knots:
            p1 = np.asarray(kn["position"], float)
            if planar:
                a1 = kn["angle"] if kn.get("angle") is not None else a0
                q1 = qexp([0, 0, a1])
            else:
                q1 = _knot_quat(kn, q0)
                a1 = a0
            rel = qlog(qmul(q1, qconj(q0)))   # fixed rotation axis (world) * angle
            if planar:
                rel = np.array([0.0, 0.0, a1 - a0])
            t0, t1 = kn["interval"]
            self.segments.append((t0, t1, kn.get("type", "cubic"), p0, p1 - p0, q0, rel, a0, a1 - a0))
            p0, q0, a0 = p1, q1, a1
        self.end = self.segments[-1][1] if self.segments else 0.0

    def sample(self, t):
        seg = self.segments[0]
        for s in self.segments:
            if t >= s[0]:
                seg = s
            else:
                break
        t0, t1, kind, p0, dp, q0, rel, a0, da = seg
        s, sd, sdd = blend(t, t0, t1, kind)
        out = Sample()
        out.p = p0 + s * dp
        out.v = sd * dp
        out.a = sdd * dp
        out.quat = qmul(qexp(s * rel), q0)
        out.w = sd * rel
        out.wd = sdd * rel
        out.angle = a0 + s * da
        return out


def _knot_quat(kn, q_prev):
    r = kn.get("rotation")
    if r is None:
        return q_prev
    if len(r) == 3:
        return quat_from_rpy(*r)
    q = np.asarray(r, float)
    return q / np.linalg.norm(q)
