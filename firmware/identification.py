# On-line identification of an unknown load carried by the last link (docs/design.md §11;
# Fernández et al. after Johansson: tau = Y(q, qd, qdd) theta, linear in the inertial
# parameters). The load is a rigid body welded to frame N; its 10 parameters are
#   theta = (m, h_x, h_y, h_z, I_xx, I_yy, I_zz, I_xy, I_xz, I_yz)
# with h = m c the first moment and I the inertia about the origin of frame N, both in
# frame-N coordinates. The wrench that moves the load (and holds its weight) at p_N is
#   F = m (a - g) + alpha x s + w x (w x s)            s = R h
#   M = s x (a - g) + R (I alpha_b + w_b x I w_b)      alpha_b, w_b = R^T alpha, R^T w
# and joint j of the last `window` joints carries its row of J^T of it, which is the
# global-goal-proxy share (4.128) of the couplet (p_N, [F; M]): each column of the
# regressor is share_j of the wrench of one parameter. The joint's measured torque, less
# viscous friction and the inertial wrenches of the known links j..N, is that share.
# Every window agent j < N sends the last agent one IDENT frame per tick (after its
# torque): its torque less friction, its joint axis and origin (z_{j-1}, p_{j-1}) and its
# own link's inertial wrench at p_{j-1}. The last agent runs recursive least squares:
# Johansson's gradient law theta' = -P Y^T e (Fernández (5), (24)) with the gain P the
# regressor's own inverse information matrix instead of a constant.
# Velocities come from the kinematic bus (K_i: R, p, v, w of frame i); accelerations are
# differences over one control interval, over which the torque was held (zero-order
# hold), so the equation holds for the interval's mean: velocities are averaged.
from bus_protocol import messages as m
from firmware import global_proxy
from firmware.vec import add, cross, qnormalize, qrot, scale, sub

N_PAR = 10
PLANAR = (0, 1, 2, 6)   # a planar arm turning about z excites only m, h_x, h_y, I_zz
NAMES = ("m", "h_x", "h_y", "h_z", "I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")
# inertia parameter k -> the two axes (a, b) of its entry: I v = sum I_ab (e_a v_b + e_b v_a)
_AXES = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def sample_time(tick, period, grid):
    """When tick k's joint state was sampled: k T, on the plant's step grid if it has one."""
    if grid > 0.0:
        return round(tick * period / grid) * grid
    return tick * period


def _qconj(q):
    return (q[0], -q[1], -q[2], -q[3])


class Motion:
    """One frame's motion over the last control interval, from two successive K packets:
    mid-interval orientation (quat), angular velocity w, angular and linear acceleration
    (alpha, a of the frame origin), and the joint's mean velocity qd."""

    def __init__(self, period, grid):
        self.period = period
        self.grid = grid
        self.tick = -1
        self.k = None          # (quat, p, v, w, qd) of the last tick
        self.valid = False
        self.quat = self.w = self.alpha = self.a = None
        self.qd = 0.0

    def update(self, tick, quat, p, v, w, qd):
        prev = self.k
        self.valid = prev is not None and tick == self.tick + 1
        if self.valid:
            dt = (sample_time(tick, self.period, self.grid)
                  - sample_time(tick - 1, self.period, self.grid))
            self.quat = quat_mid(prev[0], quat)
            self.w = scale(add(prev[3], w), 0.5)
            self.alpha = scale(sub(w, prev[3]), 1.0 / dt)
            self.a = scale(sub(v, prev[2]), 1.0 / dt)
            self.qd = 0.5 * (prev[4] + qd)
        self.tick = tick
        self.k = (quat, p, v, w, qd)
        return self.valid


def add4(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def body_inertia_moment(quat, w, alpha, inertia, axes):
    """R (I alpha_b + w_b x I w_b) for I = one entry pattern `axes` (a, b) with unit value,
    or, with axes None, for the diagonal `inertia` (link frame)."""
    qc = _qconj(quat)
    wb = qrot(qc, w)
    ab = qrot(qc, alpha)
    if axes is None:
        ia = (inertia[0] * ab[0], inertia[1] * ab[1], inertia[2] * ab[2])
        iw = (inertia[0] * wb[0], inertia[1] * wb[1], inertia[2] * wb[2])
    else:
        ia = _entry(axes, ab)
        iw = _entry(axes, wb)
    return qrot(quat, add(ia, cross(wb, iw)))


def _entry(axes, v):
    a, b = axes
    out = [0.0, 0.0, 0.0]
    if a == b:
        out[a] = v[a]
    else:
        out[a] = v[b]
        out[b] = v[a]
    return (out[0], out[1], out[2])


def link_wrench(mo, p_prev, p, mass, centroid, inertia, g):
    """Inertial wrench of a known link (mass, centroid and diagonal inertia in its frame)
    as (F, M about p_prev): what its joint and the joints base-ward of it must supply to
    move it and hold its weight (Newton-Euler)."""
    s = qrot(mo.quat, centroid)
    ac = add(add(mo.a, cross(mo.alpha, s)), cross(mo.w, cross(mo.w, s)))
    f = scale(sub(ac, g), mass)
    mc = body_inertia_moment(mo.quat, mo.w, mo.alpha, inertia, None)
    arm = sub(add(p, s), p_prev)
    return f, add(mc, cross(arm, f))


def load_column(k, mo, g):
    """Wrench (F, M about p_N) of load parameter k with unit value (the regressor column)."""
    zero = (0.0, 0.0, 0.0)
    if k == 0:
        return sub(mo.a, g), zero
    if k < 4:
        e = [0.0, 0.0, 0.0]
        e[k - 1] = 1.0
        s = qrot(mo.quat, (e[0], e[1], e[2]))
        f = add(cross(mo.alpha, s), cross(mo.w, cross(mo.w, s)))
        return f, cross(s, sub(mo.a, g))
    return zero, body_inertia_moment(mo.quat, mo.w, mo.alpha, None, _AXES[k - 4])


def quat_mid(a, b):
    """Normalised mean of two unit quaternions (same hemisphere)."""
    if a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
    return qnormalize(add4(a, b))


def weight_couplet(quat, p, m, h, g, own_mass, own_centroid):
    """The weight of the link (own_mass at own_centroid, link frame) and of a load (m, first
    moment h, frame N) as one couplet at p: (-(own_mass + m) g, (R (own_mass c + h)) x (-g))."""
    s = qrot(quat, (own_mass * own_centroid[0] + h[0], own_mass * own_centroid[1] + h[1],
                    own_mass * own_centroid[2] + h[2]))
    f = scale(g, -(own_mass + m))
    return p + f + cross(s, scale(g, -1.0))


class Identifier:
    """The last agent's estimator. cfg (its "identify" table): window, types (joint type
    of each window joint, base-most first), params (indices of theta estimated; the rest
    keep their initial value theta0), p0, forgetting."""

    def __init__(self, cfg, n_links, g):
        self.window = int(cfg.get("window", 2))
        self.first = n_links - self.window + 1
        self.types = list(cfg.get("types", [0] * self.window))
        self.params = list(cfg.get("params", range(N_PAR)))
        self.g = g
        self.lam = float(cfg.get("forgetting", 1.0))
        self.theta = [float(x) for x in cfg.get("theta0", [0.0] * N_PAR)]
        n = len(self.params)
        p0 = float(cfg.get("p0", 100.0))
        self.P = [[p0 if r == c else 0.0 for c in range(n)] for r in range(n)]
        self._phi = [0.0] * n
        self._pphi = [0.0] * n
        # per tick slot (tick & 1): the window's rows (IDENT layout: tick, y, z(3),
        # p_prev(3), F(3), M(3)), the load's regressor columns and p_N
        self._rows = [[None] * self.window, [None] * self.window]
        self._cols = [[None] * N_PAR, [None] * N_PAR]
        self._p_n = [None, None]
        self.updates = 0       # ticks whose rows went into the estimate
        self.incomplete = 0    # ticks skipped: an IDENT missing

    def on_ident(self, src, v):
        j = src - self.first
        if 0 <= j < self.window - 1:
            self._rows[v[0] & 1][j] = v

    def own(self, tick, row, mo, p_n):
        """The last agent's own row of `tick` and the load's regressor at that tick."""
        slot = tick & 1
        self._rows[slot][self.window - 1] = row
        cols = self._cols[slot]
        for k in self.params:
            cols[k] = load_column(k, mo, self.g)
        self._p_n[slot] = p_n

    def update(self, tick):
        """All rows of `tick` in: one least-squares step per window joint."""
        slot = tick & 1
        rows = self._rows[slot]
        for r in rows:
            if r is None or r[0] != tick:
                self.incomplete += 1
                return False
        cols = self._cols[slot]
        p_n = self._p_n[slot]
        phi = self._phi
        theta = self.theta
        for j in range(self.window):
            r = rows[j]
            jt = self.types[j]
            z = r[2:5]
            pp = r[5:8]
            e = r[1]   # torque less friction, less the shares of the known links j..N
            for i in range(j, self.window):
                e -= global_proxy.share(jt, z, pp, rows[i][5:8], rows[i][8:14])
            for c in range(len(phi)):
                k = self.params[c]
                f, mom = cols[k]
                phi[c] = global_proxy.share(jt, z, pp, p_n, f + mom)
                e -= phi[c] * theta[k]
            self._rls(e)
        self.updates += 1
        return True

    def _rls(self, e):
        """theta += P phi e / (lam + phi' P phi);  P = (P - P phi phi' P / (...)) / lam."""
        phi, pphi, P = self._phi, self._pphi, self.P
        n = len(phi)
        den = self.lam
        for r in range(n):
            s = 0.0
            row = P[r]
            for c in range(n):
                s += row[c] * phi[c]
            pphi[r] = s
            den += phi[r] * s
        g = e / den
        for r in range(n):
            self.theta[self.params[r]] += pphi[r] * g
        inv = 1.0 / den
        lam = self.lam
        for r in range(n):
            row = P[r]
            a = pphi[r] * inv
            for c in range(n):
                row[c] = (row[c] - a * pphi[c]) / lam


class LinkIdent:
    """A window agent's part (cfg: the link config's "identify" table: period, grid, g,
    damping, inertia, and on the last link the estimator's settings and `use`): after
    each torque, its row of the interval that just ended."""

    def __init__(self, cfg, agent):
        self.g = tuple(cfg.get("g", (0.0, 0.0, 0.0)))
        self.motion = Motion(float(cfg["period"]), float(cfg.get("grid", 0.0)))
        self.damping = float(cfg.get("damping", 0.0))
        self.inertia = tuple(cfg.get("inertia", (0.0, 0.0, 0.0)))
        last = agent.link == agent.n_links
        self.est = Identifier(cfg, agent.n_links, self.g) if last else None
        self.use = bool(cfg.get("use", False)) and last   # the estimate feeds the weight assertion
        self.m_max = float(cfg.get("m_max", 1e9))

    def after_torque(self, a, u_prev):
        """a: the agent, its K_i of this tick done; u_prev: the torque held since last tick."""
        mo = self.motion
        if a.kin_tick != a.tick or not mo.update(a.tick, a.quat, a.p, a.vel, a.w, a.qd):
            return
        f, mom = link_wrench(mo, a.p_prev, a.p, a.mass, a.centroid, self.inertia, self.g)
        z, pp = a.z, a.p_prev
        row = (a.tick, u_prev - self.damping * mo.qd) + z + pp + f + mom
        if self.est is None:
            a.send(m.IDENT, a.n_links, row)
        else:
            self.est.update(a.tick - 1)
            self.est.own(a.tick, row, mo, a.p)

    def load(self):
        """(m, h) of the load to assert the weight of: the estimate, clamped to [0, m_max]."""
        th = self.est.theta
        m = th[0]
        if m <= 0.0:
            return 0.0, (0.0, 0.0, 0.0)
        k = 1.0 if m <= self.m_max else self.m_max / m
        return k * m, (k * th[1], k * th[2], k * th[3])
