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
# Every `every`-th tick each window agent j < N sends the last agent one IDENT frame
# (after its torque): its torque less friction, its joint axis and origin (z_{j-1},
# p_{j-1}) and its own link's inertial wrench at p_{j-1}. The last agent runs recursive
# least squares, Johansson's gradient law theta' = -P Y^T e (Fernández (5), (24)) with
# the gain P the regressor's own inverse information matrix instead of a constant, one
# window row a tick.
# Velocities come from the kinematic bus (K_i: R, p, v, w of frame i); accelerations are
# differences over one control interval, over which the torque was held (zero-order
# hold), so the equation holds for the interval's mean: velocities are averaged.
# Floats are objects on MicroPython boards (each result allocates), so the work per
# identified tick is kept small: R once as three columns, the body-frame w and alpha once,
# each row's lever z x (p_N - p_{j-1}) once, the symmetric P updated on one triangle, one
# row a tick; `every` (default 4) spaces the identified ticks, which a constant load allows.
from bus_protocol import messages as m
from firmware import global_proxy
from firmware.linkstate import get as _get
from firmware.vec import add, cross, dot, qnormalize, scale, sub

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_PREV = const(25)
S_Z = const(38)
S_K = const(41)
I_TICK = const(0)
I_KIN = const(2)
# ---- end of layout ----

N_PAR = 10
PLANAR = (0, 1, 2, 6)   # a planar arm turning about z excites only m, h_x, h_y, I_zz
MASS = (0, 1, 2, 3)     # the weight's parameters: m and h
NAMES = ("m", "h_x", "h_y", "h_z", "I_xx", "I_yy", "I_zz", "I_xy", "I_xz", "I_yz")
# inertia parameter k -> the two axes (a, b) of its entry: I v = sum I_ab (e_a v_b + e_b v_a)
INERTIA_AXES = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
_ZERO = (0.0, 0.0, 0.0)


def sample_time(tick, period, grid):
    """When tick k's joint state was sampled: k T, on the plant's step grid if it has one."""
    if grid > 0.0:
        return round(tick * period / grid) * grid
    return tick * period


def quat_mid(a, b):
    """Normalised mean of two unit quaternions (same hemisphere)."""
    if a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
    return qnormalize((a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]))


def rot_columns(q):
    """The columns of R(q): the frame's x, y, z axes in world coordinates."""
    w, x, y, z = q
    return ((1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + w * z), 2.0 * (x * z - w * y)),
            (2.0 * (x * y - w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + w * x)),
            (2.0 * (x * z + w * y), 2.0 * (y * z - w * x), 1.0 - 2.0 * (x * x + y * y)))


def _to_world(r, v):
    """R v from R's columns."""
    r0, r1, r2 = r
    return (r0[0] * v[0] + r1[0] * v[1] + r2[0] * v[2], r0[1] * v[0] + r1[1] * v[1] + r2[1] * v[2],
            r0[2] * v[0] + r1[2] * v[1] + r2[2] * v[2])


class Motion:
    """One frame's motion over a control interval, from the K packets of its two ends:
    mid-interval R (columns r), angular velocity w, angular and linear acceleration
    (alpha, a of the frame origin), w and alpha in body coordinates (wb, ab), and the
    joint's mean velocity qd. `store` every tick (no arithmetic), `compute` when needed."""

    def __init__(self, period, grid):
        self.period = period
        self.grid = grid
        self.tick = -1
        self.prev = None   # (quat, p, v, w, qd) of tick - 1, or None
        self.cur = None
        self.r = self.w = self.alpha = self.a = self.wb = self.ab = None
        self.qd = 0.0

    def store(self, tick, quat, p, v, w, qd):
        self.prev = self.cur if tick == self.tick + 1 else None
        self.cur = (quat, p, v, w, qd)
        self.tick = tick

    def reset(self):
        self.cur = self.prev = None

    def compute(self):
        prev, cur = self.prev, self.cur
        if prev is None:
            return False
        tick = self.tick
        dt = sample_time(tick, self.period, self.grid) - sample_time(tick - 1, self.period, self.grid)
        r = self.r = rot_columns(quat_mid(prev[0], cur[0]))
        w = self.w = scale(add(prev[3], cur[3]), 0.5)
        al = self.alpha = scale(sub(cur[3], prev[3]), 1.0 / dt)
        self.a = scale(sub(cur[2], prev[2]), 1.0 / dt)
        self.wb = (dot(r[0], w), dot(r[1], w), dot(r[2], w))
        self.ab = (dot(r[0], al), dot(r[1], al), dot(r[2], al))
        self.qd = 0.5 * (prev[4] + cur[4])
        return True


def _entry(k, v):
    """E_k v for inertia entry k (unit value, body frame)."""
    a, b = INERTIA_AXES[k]
    if a == b:
        return (v[0] if a == 0 else 0.0, v[1] if a == 1 else 0.0, v[2] if a == 2 else 0.0)
    out = [0.0, 0.0, 0.0]
    out[a] = v[b]
    out[b] = v[a]
    return (out[0], out[1], out[2])


def link_wrench(mo, p_prev, p, mass, centroid, inertia, g):
    """Inertial wrench of a known link (mass, centroid and diagonal inertia in its frame)
    as (F, M about p_prev): what its joint and the joints base-ward of it must supply to
    move it and hold its weight (Newton-Euler)."""
    s = _to_world(mo.r, centroid)
    w = mo.w
    ac = add(add(mo.a, cross(mo.alpha, s)), cross(w, cross(w, s)))
    f = scale(sub(ac, g), mass)
    wb, ab = mo.wb, mo.ab
    iw = (inertia[0] * wb[0], inertia[1] * wb[1], inertia[2] * wb[2])
    mc = _to_world(mo.r, add((inertia[0] * ab[0], inertia[1] * ab[1], inertia[2] * ab[2]), cross(wb, iw)))
    return f, add(mc, cross(sub(add(p, s), p_prev), f))


def load_column(k, mo, g):
    """Wrench (F, M about p_N) of load parameter k with unit value (the regressor column)."""
    if k == 0:
        return sub(mo.a, g), _ZERO
    if k < 4:
        s = mo.r[k - 1]
        w = mo.w
        return add(cross(mo.alpha, s), cross(w, cross(w, s))), cross(s, sub(mo.a, g))
    k -= 4
    wb = mo.wb
    return _ZERO, _to_world(mo.r, add(_entry(k, mo.ab), cross(wb, _entry(k, wb))))


def weight_couplet(quat, p, m, h, g, own_mass, own_centroid):
    """The weight of the link (own_mass at own_centroid, link frame) and of a load (m, first
    moment h, frame N) as one couplet at p: (-(own_mass + m) g, (R (own_mass c + h)) x (-g))."""
    s = _to_world(rot_columns(quat), (own_mass * own_centroid[0] + h[0], own_mass * own_centroid[1] + h[1],
                                      own_mass * own_centroid[2] + h[2]))
    f = scale(g, -(own_mass + m))
    return p + f + cross(s, scale(g, -1.0))


class Identifier:
    """The last agent's estimator. cfg (its "identify" table): window, types (joint type
    of each window joint, base-most first), params (indices of theta estimated; the rest
    keep their initial value theta0), p0, forgetting, every."""

    def __init__(self, cfg, n_links, g):
        self.window = int(cfg.get("window", 2))
        self.first = n_links - self.window + 1
        self.every = int(cfg.get("every", 1))
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
        self._cols = [None] * n
        # per identified tick, two slots ((tick // every) & 1): the window's rows (IDENT
        # layout: tick, y, z(3), p_prev(3), F(3), M(3)), the load's columns and p_N
        self._rows = [[None] * self.window, [None] * self.window]
        self._slot_cols = [None, None]
        self._p_n = [None, None]
        self.updates = 0       # identified ticks whose rows went into the estimate
        self.incomplete = 0    # identified ticks skipped: an IDENT missing, or rows left
        self._pending = -1     # identified tick whose rows step() works through
        self._next_row = 0

    def _slot(self, tick):
        return (tick // self.every) & 1

    def on_ident(self, src, v):
        j = src - self.first
        if 0 <= j < self.window - 1:
            self._rows[self._slot(v[0])][j] = v

    def own(self, tick, row, mo, p_n):
        """The last agent's own row of `tick` and the load's regressor at that tick."""
        slot = self._slot(tick)
        self._rows[slot][self.window - 1] = row
        self._slot_cols[slot] = [load_column(k, mo, self.g) for k in self.params]
        self._p_n[slot] = p_n

    def begin(self, tick):
        """The rows of identified tick `tick` become the pending ones if they are all in;
        step() then takes one a call, so a tick never carries more than one row's work."""
        if self._pending >= 0:
            self.incomplete += 1   # rows of the one before left over (window > every)
        slot = self._slot(tick)
        for r in self._rows[slot]:
            if r is None or r[0] != tick:
                self.incomplete += 1
                self._pending = -1
                return False
        self._pending = tick
        self._next_row = 0
        return True

    def step(self):
        """One least-squares step with the next pending row (window joint), base-most first."""
        tick = self._pending
        if tick < 0:
            return False
        slot = self._slot(tick)
        rows = self._rows[slot]
        j = self._next_row
        cols = self._slot_cols[slot]
        p_n = self._p_n[slot]
        phi = self._phi
        theta = self.theta
        params = self.params
        r = rows[j]
        jt = self.types[j]
        z = r[2:5]
        pp = r[5:8]
        e = r[1]   # torque less friction, less the shares of the known links j..N
        for i in range(j, self.window):
            e -= global_proxy.share(jt, z, pp, rows[i][5:8], rows[i][8:14])
        # share (4.128) = lever . F + axis . M, the same for every column
        if jt == 0:
            lever, axis = cross(z, sub(p_n, pp)), z
        else:
            lever, axis = z, _ZERO
        for c in range(len(params)):
            f, mom = cols[c]
            phi[c] = dot(lever, f) + dot(axis, mom)
            e -= phi[c] * theta[params[c]]
        self._rls(e)
        self._next_row = j + 1
        if j + 1 == self.window:
            self._pending = -1
            self.updates += 1
        return True

    def _rls(self, e):
        """theta += P phi e / (lam + phi' P phi);  P = (P - P phi phi' P / (...)) / lam,
        P symmetric: one triangle computed, mirrored."""
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
        scale_p = 1.0 / self.lam
        for r in range(n):
            row = P[r]
            a = pphi[r] * inv
            for c in range(r, n):
                x = row[c] - a * pphi[c]
                if scale_p != 1.0:
                    x *= scale_p
                row[c] = x
                P[c][r] = x


class LinkIdent:
    """A window agent's part (cfg: the link config's "identify" table: period, grid, g,
    damping, inertia, every, and on the last link the estimator's settings and `use`):
    after the torque of every `every`-th tick, its row of the interval that just ended."""

    def __init__(self, cfg, agent):
        self.g = tuple(cfg.get("g", (0.0, 0.0, 0.0)))
        self.motion = Motion(float(cfg["period"]), float(cfg.get("grid", 0.0)))
        self.damping = float(cfg.get("damping", 0.0))
        self.inertia = tuple(cfg.get("inertia", (0.0, 0.0, 0.0)))
        self.every = int(cfg.get("every", 1))
        last = agent.link == agent.n_links
        self.est = Identifier(cfg, agent.n_links, self.g) if last else None
        self.use = bool(cfg.get("use", False)) and last   # the estimate feeds the weight assertion
        self.m_max = float(cfg.get("m_max", 1e9))
        self.u = 0.0   # the torque of the last cycle, held since

    def after_torque(self, a, u):
        """a: the agent, its K_i of this tick done; u: this tick's torque (the interval that
        ended is the last one's)."""
        u_prev = self.u
        self.u = u
        mo = self.motion
        est = self.est
        tick = a.I[I_TICK]
        composed = a.I[I_KIN] == tick   # its K_i of this tick
        identified = composed and tick % self.every == 0
        if est is not None:
            if identified:   # the last identified tick's rows are all in by now
                est.begin(tick - self.every)
            est.step()
        if not composed:
            mo.reset()
            return
        S = a.S   # K_i, z_i and p_{i-1} of this tick, in the agent's core state
        p = _get(S, S_K + 4, 3)
        mo.store(tick, _get(S, S_K, 4), p, _get(S, S_K + 7, 3), _get(S, S_K + 10, 3), a.qd)
        if not identified or not mo.compute():
            return
        p_prev = _get(S, S_PREV + 4, 3)
        f, mom = link_wrench(mo, p_prev, p, a.mass, a.centroid, self.inertia, self.g)
        row = (tick, u_prev - self.damping * mo.qd) + _get(S, S_Z, 3) + p_prev + f + mom
        if est is None:
            a.send(m.IDENT, a.n_links, row)
        else:
            est.own(tick, row, mo, p)

    def load(self):
        """(m, h) of the load to assert the weight of: the estimate, clamped to [0, m_max],
        once it rests on at least twice as many equations as it has unknowns."""
        est = self.est
        th = est.theta
        mass = th[0]
        if mass <= 0.0 or est.updates * est.window < 2 * len(est.params):   # fewer equations than
            return 0.0, _ZERO                                                # twice the unknowns
            return 0.0, _ZERO
        k = 1.0 if mass <= self.m_max else self.m_max / mass
        return k * mass, (k * th[1], k * th[2], k * th[3])
