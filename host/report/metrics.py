"""Run metrics (docs/design.md §9, thesis 6.213-6.215, 7.310)."""
import numpy as np


def e_rms(p_d, p):
    """sqrt(mean_k |p_d(k) - p_n(k)|^2), metres."""
    return float(np.sqrt(np.mean(np.sum((np.asarray(p_d) - np.asarray(p)) ** 2, axis=1))))


def phi_rms(e_phi):
    """RMS of the orientation error (planar: about z; spatial: |2 dq|), radians."""
    return float(np.sqrt(np.mean(np.asarray(e_phi) ** 2)))


def q_rms(q, q_c):
    """sqrt(mean_k |q(k) - q_c|^2): displacement from mid-range (centering quality)."""
    return float(np.sqrt(np.mean(np.sum((np.asarray(q) - np.asarray(q_c)) ** 2, axis=1))))


def summarise(arr, q_c):
    if not len(arr.get("t", [])):
        return {"e_rms_m": None, "phi_rms_rad": None, "q_rms_rad": None, "e_max_m": None}
    err = np.linalg.norm(arr["p_d"] - arr["p"], axis=1)
    return {"e_rms_m": e_rms(arr["p_d"], arr["p"]), "phi_rms_rad": phi_rms(arr["e_phi"]),
            "q_rms_rad": q_rms(arr["q"], q_c), "e_max_m": float(err.max())}
