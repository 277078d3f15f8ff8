"""RMDAC: resolved motion decentralised adaptive control, Seraji's configuration control
(docs/design.md §4, thesis 6.205-6.210). One independent scalar controller per task coordinate j:

    r_j = wp_j e_j + wv_j ed_j                                               (6.207)
    f_j = d_j + c_j x_dj + b_j xd_dj + a_j xdd_dj + Kp_j e_j + Kv_j ed_j         (6.205)
    k(t) = k(0) + u1 int(r s dt) + u2 r s  for (k, s) in
           (d,1) (Kp,e) (Kv,ed) (c,x_d) (b,xd_d) (a,xdd_d)                    (6.206)

integrated over the actual elapsed time dt between ticks (6.209-6.210). It holds no
model of the arm; cost O(task dimension) per cycle.

The integral pairs the error r(k) with the signal s(k-1) the force was computed from:

    int(r s dt) += dt * r(k) * s(k-1)

The force of tick k-1 is held until tick k (a sampled-data loop), so r(k) is the error
that force left behind: this is the discrete-time adaptive law's pairing (error now,
regressor of the previous step). For signals slow against the tick it agrees with the
trapezoid rule of (6.209), dt/2 (r(k) s(k) + r(k-1) s(k-1)), to O(dt).

Why not the trapezoid (measured on the reference arm, docs/design.md §4): a force held
for a period T is stable only while T * lambda_max(Kv J M^-1 J^T) < 2. The straight,
near-singular start winds Kv_x up to 603 N s/m with the trapezoid (359 with this
pairing), and Kv then stays nearly constant. Without a payload the tool point is light
(about 3 kg along x at the first knot, 14 kg with the 10 kg payload), so with Kv = 603
that figure reaches 2.11 by t = 10 s: a tick-to-tick oscillation grows ~8 % a tick and
the run diverged at 9.93 s; with Kv = 359 it peaks at 1.80. Under a sustained tick-to-tick
oscillation the trapezoid raises Kv while this pairing lowers it, but too slowly to be
what saves the run: the smaller wind-up is. The margin is finite (x4 integral gains
diverge without a payload); docs/design.md §4 and experiments/ENVELOPE.md give the map.
"""
# integral gain names in signal order 1, e, ed, x_d, xd_d, xdd_d
U1_NAMES = ("delta", "alpha", "beta", "nu", "gamma", "lambda")
K0_NAMES = ("d0", "kp0", "kv0", "c0", "b0", "a0")


class RMDAC:
    """Plain floats, coordinate by coordinate: at 3-6 coordinates of 6 signals, numpy's
    per-call overhead was most of the cost, and this runs between K_N and the goal."""

    def __init__(self, gains_per_coord):
        """gains_per_coord: one dict per task coordinate with wp, wv, u2, the U1_NAMES
        integral gains and the K0_NAMES initial values."""
        g = gains_per_coord
        self.m = len(g)
        self.wp = [float(c["wp"]) for c in g]
        self.wv = [float(c["wv"]) for c in g]
        self.u1 = [[float(c[k]) for k in U1_NAMES] for c in g]
        self.u2 = [float(c["u2"]) for c in g]
        self.k0 = [[float(c[k]) for k in K0_NAMES] for c in g]
        self.reset()

    def reset(self):
        self.integral = [[0.0] * 6 for _ in range(self.m)]
        self.k = [list(k) for k in self.k0]
        self._sig_prev = None   # each coordinate's signals of the previous tick

    def update(self, dt, x_d, xd_d, xdd_d, e, ed):
        """One control tick; dt is the time since the previous tick (s). Returns f (list of m)."""
        f = []
        sig_now = []
        prev = self._sig_prev
        for j in range(self.m):
            ej, edj = float(e[j]), float(ed[j])
            r = self.wp[j] * ej + self.wv[j] * edj                          # (6.207)
            sig = (1.0, ej, edj, float(x_d[j]), float(xd_d[j]), float(xdd_d[j]))
            integ, u1, u2, k0, k = self.integral[j], self.u1[j], self.u2[j], self.k0[j], self.k[j]
            out = 0.0
            for i in range(6):
                if prev is not None:
                    integ[i] += dt * r * prev[j][i]                        # (6.209), see above
                k[i] = k0[i] + u1[i] * integ[i] + u2 * r * sig[i]          # (6.206)
                out += k[i] * sig[i]                                       # (6.205)
            sig_now.append(sig)
            f.append(out)
        self._sig_prev = sig_now
        return f


def coordinate_gains(rmdac_tables, task):
    """Per-coordinate gain dicts: planar = (x, y, rot z); spatial = (x, y, z, rx, ry, rz)."""
    lin, rot = rmdac_tables["linear"], rmdac_tables["rotation"]
    return [lin, lin, rot] if task == "planar" else [lin] * 3 + [rot] * 3
