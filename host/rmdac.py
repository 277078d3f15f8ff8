"""RMDAC: resolved motion decentralised adaptive control, Seraji's configuration control
(DESIGN 4, thesis 6.205-6.210). One independent scalar controller per task coordinate j:

    r_j = wp_j e_j + wv_j ed_j                                               (6.207)
    f_j = d_j + c_j x_dj + b_j xd_dj + a_j xdd_dj + Kp_j e_j + Kv_j ed_j         (6.205)
    k(t) = k(0) + u1 int(r s dt) + u2 r s  for (k, s) in
           (d,1) (Kp,e) (Kv,ed) (c,x_d) (b,xd_d) (a,xdd_d)                    (6.206)

integrated with the trapezoid rule over the actual elapsed time (6.209-6.210). It holds
no model of the arm; cost O(task dimension) per cycle.
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
        self._rs_prev = None

    def update(self, dt, x_d, xd_d, xdd_d, e, ed):
        """One control tick; dt is the time since the previous tick (s). Returns f (list of m)."""
        f = []
        rs_now = []
        prev = self._rs_prev
        for j in range(self.m):
            ej, edj = float(e[j]), float(ed[j])
            r = self.wp[j] * ej + self.wv[j] * edj                          # (6.207)
            sig = (1.0, ej, edj, float(x_d[j]), float(xd_d[j]), float(xdd_d[j]))
            rs = [r * x for x in sig]
            integ, u1, u2, k0, k = self.integral[j], self.u1[j], self.u2[j], self.k0[j], self.k[j]
            out = 0.0
            for i in range(6):
                if prev is not None:
                    integ[i] += 0.5 * dt * (rs[i] + prev[j][i])           # trapezoid (6.209)
                k[i] = k0[i] + u1[i] * integ[i] + u2 * rs[i]               # (6.206)
                out += k[i] * sig[i]                                       # (6.205)
            rs_now.append(rs)
            f.append(out)
        self._rs_prev = rs_now
        return f


def coordinate_gains(rmdac_tables, task):
    """Per-coordinate gain dicts: planar = (x, y, rot z); spatial = (x, y, z, rx, ry, rz)."""
    lin, rot = rmdac_tables["linear"], rmdac_tables["rotation"]
    return [lin, lin, rot] if task == "planar" else [lin] * 3 + [rot] * 3
