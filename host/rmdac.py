"""RMDAC: resolved motion decentralised adaptive control, Seraji's configuration control
(DESIGN 4, thesis 6.205-6.210). One independent scalar controller per task coordinate j:

    r_j = wp_j e_j + wv_j ed_j                                               (6.207)
    f_j = d_j + c_j x_dj + b_j xd_dj + a_j xdd_dj + Kp_j e_j + Kv_j ed_j         (6.205)
    k(t) = k(0) + u1 int(r s dt) + u2 r s  for (k, s) in
           (d,1) (Kp,e) (Kv,ed) (c,x_d) (b,xd_d) (a,xdd_d)                    (6.206)

integrated with the trapezoid rule over the actual elapsed time (6.209-6.210). It holds
no model of the arm; cost O(task dimension) per cycle.
"""
import numpy as np

# integral gain names in signal order 1, e, ed, x_d, xd_d, xdd_d
U1_NAMES = ("delta", "alpha", "beta", "nu", "gamma", "lambda")
K0_NAMES = ("d0", "kp0", "kv0", "c0", "b0", "a0")


class RMDAC:
    def __init__(self, gains_per_coord):
        """gains_per_coord: one dict per task coordinate with wp, wv, u2, the U1_NAMES
        integral gains and the K0_NAMES initial values."""
        g = gains_per_coord
        self.m = len(g)
        self.wp = np.array([c["wp"] for c in g], float)
        self.wv = np.array([c["wv"] for c in g], float)
        self.u1 = np.array([[c[k] for k in U1_NAMES] for c in g], float)
        self.u2 = np.array([c["u2"] for c in g], float)
        self.k0 = np.array([[c[k] for k in K0_NAMES] for c in g], float)
        self.reset()

    def reset(self):
        self.integral = np.zeros((self.m, 6))
        self.k = self.k0.copy()
        self._rs_prev = None

    def update(self, dt, x_d, xd_d, xdd_d, e, ed):
        """One control tick; dt is the time since the previous tick (s). Returns f (m)."""
        r = self.wp * e + self.wv * ed
        s = np.column_stack((np.ones(self.m), e, ed, x_d, xd_d, xdd_d))
        rs = r[:, None] * s
        if self._rs_prev is not None:
            self.integral += 0.5 * dt * (rs + self._rs_prev)   # trapezoid (6.209)
        self._rs_prev = rs
        self.k = self.k0 + self.u1 * self.integral + self.u2[:, None] * rs
        return np.einsum("ij,ij->i", self.k, s)


def coordinate_gains(rmdac_tables, task):
    """Per-coordinate gain dicts: planar = (x, y, rot z); spatial = (x, y, z, rx, ry, rz)."""
    lin, rot = rmdac_tables["linear"], rmdac_tables["rotation"]
    return [lin, lin, rot] if task == "planar" else [lin] * 3 + [rot] * 3
