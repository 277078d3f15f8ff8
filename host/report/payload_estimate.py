"""The payload estimate of a run (Fernández et al.'s identification, firmware/identification.py): the last link's
ESTIMATE frames -> time series, summary.json `payload_estimate` and payload_estimate.png."""
import numpy as np

from firmware.identification import INERTIA_AXES, N_PAR, NAMES


def _inertia_matrix(v):
    """(I_xx, I_yy, I_zz, I_xy, I_xz, I_yz) -> 3x3."""
    xx, yy, zz, xy, xz, yz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def truth_theta(payload):
    """The plant's payload as theta: m, m c, inertia about the frame-N origin (parallel axes)."""
    m = payload["mass"]
    c = np.array(payload["centroid"])
    i_o = np.diag(payload["inertia"]) + m * (c @ c * np.eye(3) - np.outer(c, c))
    return np.concatenate([[m], m * c, np.diag(i_o), [i_o[0, 1], i_o[0, 2], i_o[1, 2]]])


def arrays(estimates):
    """Time series: est_t (s), est_theta (k x 10)."""
    return {"est_t": np.array([e[0] for e in estimates]),
            "est_theta": np.array([e[2] for e in estimates], dtype=float).reshape(-1, N_PAR)}


def _settled(t, ok):
    """First time from which `ok` holds to the end (None if it does not hold at the end)."""
    if not len(ok) or not ok[-1]:
        return None
    bad = np.flatnonzero(~ok)
    return float(t[0] if not len(bad) else t[bad[-1] + 1])


def summarise(sc, estimates):
    """summary.json `payload_estimate`: the final estimate as mass, centroid and inertia
    (about the centroid, frame N), the parameters the motion excites, the truth the plant
    had, and when the mass came within 10 % and the centroid within 0.05 m for good."""
    a = arrays(estimates)
    t, th = a["est_t"], a["est_theta"]
    planar = sc.task == "planar"
    params = sc.agent_configs[-1]["identify"]["params"]
    m = th[:, 0]
    c = th[:, 1:4] / np.where(np.abs(m) > 1e-9, m, np.nan)[:, None]
    m_f, c_f = float(m[-1]), c[-1]
    i_o = _inertia_matrix(th[-1, 4:])
    i_c = i_o - m_f * (c_f @ c_f * np.eye(3) - np.outer(c_f, c_f))
    i_c = [float(i_c[a, b]) for k, (a, b) in enumerate(INERTIA_AXES) if 4 + k in params]   # identified, about the centroid
    out = {"identified": [NAMES[k] for k in params],
           "mass": m_f, "centroid": [float(x) for x in c_f],
           "inertia_about_centroid": i_c or None,
           "samples": len(t)}
    pl = sc.raw["payload"]
    if pl["mass"] > 0:
        c_true = np.array(pl["centroid"])
        cols = [0, 1] if planar else [0, 1, 2]   # a planar arm cannot see c_z
        c_err = np.linalg.norm(c[:, cols] - c_true[cols], axis=1)
        m_err = np.abs(m - pl["mass"]) / pl["mass"]
        out.update({"truth": {"mass": pl["mass"], "centroid": list(c_true), "inertia": list(pl["inertia"])},
                    "mass_error": float(m_err[-1]), "centroid_error_m": float(c_err[-1]),
                    "converged_mass_10pct_s": _settled(t, m_err <= 0.1),
                    "converged_centroid_5cm_s": _settled(t, np.nan_to_num(c_err, nan=np.inf) <= 0.05)})
    return out


def plot(sc, estimates, out_dir):
    import matplotlib.pyplot as plt
    from host.report.plots import _save
    a = arrays(estimates)
    t, th = a["est_t"], a["est_theta"]
    pl = sc.raw["payload"]
    truth = truth_theta(pl) if pl["mass"] > 0 else None
    params = sc.agent_configs[-1]["identify"]["params"]
    fig, axes = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    groups = ((axes[0], [0], "mass (kg)"), (axes[1], [1, 2, 3], "first moment m c (kg m)"),
              (axes[2], [4, 5, 6, 7, 8, 9], "inertia about frame N (kg m^2)"))
    for ax, ks, label in groups:
        for j, k in enumerate(kk for kk in ks if kk in params):
            ax.plot(t, th[:, k], "C%d" % j, lw=1.2, label=NAMES[k])
            if truth is not None:
                ax.axhline(truth[k], color="C%d" % j, ls="--", lw=0.8)
        ax.set_ylabel(label)
        ax.legend(loc="best", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0].set_title("%s: load estimate of the last link (dashed: the plant's payload)" % sc.name)
    axes[-1].set_xlabel("t (s)")
    return _save(fig, out_dir / "payload_estimate.png")
