"""End-effector (and obstacle) trajectories from knot points (docs/design.md §8, thesis 5.2.3).

A knot moves from the previous pose to its target over `interval = [t0, t1]` on a
cubic blend s(tau) = 3 tau^2 - 2 tau^3 (straight line, parabolic velocity profile), or
jumps at t0 (`type = "step"`), or winds about an axis (`type = "spiral"`: radius, angle
about the axis and height along it all on the same parabolic-velocity blend, thesis 6.3). Orientation turns about the fixed axis of the rotation
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
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(R, float).tolist()   # floats: numpy scalars are slow
    w = math.sqrt(max(0.0, 1 + r00 + r11 + r22)) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + r00 - r11 - r22)) / 2, r21 - r12)
    y = math.copysign(math.sqrt(max(0.0, 1 - r00 + r11 - r22)) / 2, r02 - r20)
    z = math.copysign(math.sqrt(max(0.0, 1 - r00 - r11 + r22)) / 2, r10 - r01)
    q = np.array([w, x, y, z])
    return q / math.sqrt(q.dot(q))   # np.linalg.norm(q), which is this, without its wrapper


def yaw_of(q):
    w, x, y, z = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def orientation_error(d, quat, planar):
    """Orientation error from actual `quat` to the desired sample `d` (docs/design.md §4):
    planar, the wrapped angle about z (scalar); spatial, 2 dq with dq the vector part of
    Q_d conj(Q_a) (B.405), sign chosen for the shorter way round (3-vector)."""
    if planar:
        return math.remainder(d.angle - yaw_of(quat), 2 * math.pi)
    dq = qmul(d.quat, qconj(quat))
    return 2.0 * dq[1:] * (1.0 if dq[0] >= 0 else -1.0)


class Sample:
    """Desired state at one instant (world frame): p, v, a (3); quat; w, wd (3);
    angle (planar: about z, unwrapped). The vectors are worked out from the segment and
    its blend values (s, sd, sdd) when first asked for, and `planar_reference` gives the
    nine numbers a planar goal uses as plain floats (make bench: the vectors a planar
    task never reads, and numpy's per-call cost, were most of a sample)."""
    __slots__ = ("_seg", "s", "sd", "sdd", "angle", "_pva", "_quat", "_w", "_wd")

    def __init__(self, seg, s, sd, sdd):
        self._seg, self.s, self.sd, self.sdd = seg, s, sd, sdd
        self.angle = seg[7] + s * seg[8]   # a0 + s * da
        self._pva = self._quat = self._w = self._wd = None

    def _motion(self):
        if self._pva is None:
            dp, p0, s = self._seg[4], self._seg[3], self.s
            if self._seg[2] == "spiral":
                self._pva = dp.at(s, self.sd, self.sdd)
            else:
                self._pva = (p0 + s * dp, self.sd * dp, self.sdd * dp)
        return self._pva

    @property
    def p(self):
        return self._motion()[0]

    @property
    def v(self):
        return self._motion()[1]

    @property
    def a(self):
        return self._motion()[2]

    @property
    def w(self):
        if self._w is None:
            self._w = self.sd * self._seg[6]    # sd * rel
        return self._w

    @property
    def wd(self):
        if self._wd is None:
            self._wd = self.sdd * self._seg[6]  # sdd * rel
        return self._wd

    @property
    def quat(self):
        if self._quat is None:
            self._quat = qmul(qexp(self.s * self._seg[6]), self._seg[5])   # the turn s * rel from q0
        return self._quat

    def planar_reference(self):
        """([x, y, angle], [vx, vy, w_z], [ax, ay, wd_z]) as plain floats: the same
        doubles as p, v, a, angle, w[2], wd[2] (numpy computes element by element the
        products and sums written out here)."""
        seg, s, sd, sdd = self._seg, self.s, self.sd, self.sdd
        if seg[2] == "spiral":
            (x, y, _), (vx, vy, _), (ax, ay, _) = [u.tolist() for u in self._motion()]
        else:
            (px, py, _), (dx, dy, _) = seg[9]
            x, y, vx, vy, ax, ay = px + s * dx, py + s * dy, sd * dx, sd * dy, sdd * dx, sdd * dy
        rz = seg[10]
        return [x, y, float(self.angle)], [vx, vy, sd * rz], [ax, ay, sdd * rz]


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
            kind = kn.get("type", "cubic")
            dp = Spiral(p0, p1, kn) if kind == "spiral" else p1 - p0
            floats = None if kind == "spiral" else (p0.tolist(), dp.tolist())   # for planar_reference
            self.segments.append((t0, t1, kind, p0, dp, q0, rel, a0, a1 - a0, floats, float(rel[2])))
            p0, q0, a0 = p1, q1, a1
        self.end = self.segments[-1][1] if self.segments else 0.0

    def sample(self, t):
        seg = self.segments[0]
        for s in self.segments:
            if t >= s[0]:
                seg = s
            else:
                break
        return Sample(seg, *blend(t, seg[0], seg[1], seg[2]))


def _knot_quat(kn, q_prev):
    r = kn.get("rotation")
    if r is None:
        return q_prev
    if len(r) == 3:
        return quat_from_rpy(*r)
    q = np.asarray(r, float)
    return q / np.linalg.norm(q)


class Spiral:
    """Spiral segment (thesis 6.3, figs 6.32-6.33): about the axis through `center` along
    `axis` (default z), the radius, the angle about the axis and the height along it all
    move from the start point to the end point on the segment's blend s, so radius and
    angular displacement have parabolic velocity profiles. `sweep` is the signed angle
    (rad, right-handed about the axis) swept; the end point's angle must agree with it
    modulo 2 pi. Without `sweep` the shorter way round is taken."""

    def __init__(self, p0, p1, kn):
        c = np.asarray(kn["center"], float)
        k = np.asarray(kn.get("axis") or (0.0, 0.0, 1.0), float)
        k = k / np.linalg.norm(k)
        v0, v1 = np.asarray(p0, float) - c, np.asarray(p1, float) - c
        h0, h1 = float(v0 @ k), float(v1 @ k)
        r0v, r1v = v0 - h0 * k, v1 - h1 * k
        r0, r1 = float(np.linalg.norm(r0v)), float(np.linalg.norm(r1v))
        if r0 < 1e-9:
            raise ValueError("spiral: the start point %s lies on the axis" % (list(p0),))
        e1 = r0v / r0
        e2 = np.cross(k, e1)
        th1 = math.atan2(float(r1v @ e2), float(r1v @ e1))
        sweep = kn.get("sweep")
        if sweep is None:
            sweep = th1
        elif r1 > 1e-9 and abs(math.remainder(sweep - th1, 2 * math.pi)) > 1e-6:
            raise ValueError("spiral: sweep %.6g rad does not end at %s (angle there %.6g rad mod 2 pi)"
                             % (sweep, list(p1), th1))
        self.c, self.k, self.e1, self.e2 = c, k, e1, e2
        self.h0, self.dh, self.r0, self.dr, self.sweep = h0, h1 - h0, r0, r1 - r0, float(sweep)

    def at(self, s, sd, sdd):
        """(p, v, a) at blend value s with derivatives sd, sdd (chain rule)."""
        th = s * self.sweep
        r = self.r0 + s * self.dr
        u = math.cos(th) * self.e1 + math.sin(th) * self.e2
        w = -math.sin(th) * self.e1 + math.cos(th) * self.e2
        p = self.c + (self.h0 + s * self.dh) * self.k + r * u
        dps = self.dh * self.k + self.dr * u + r * self.sweep * w
        ddps = 2.0 * self.dr * self.sweep * w - r * self.sweep ** 2 * u
        return p, dps * sd, ddps * sd * sd + dps * sdd
