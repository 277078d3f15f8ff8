"""PNG plots of a run (headless matplotlib)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from host.report.run_dir import COMPONENTS  # noqa: E402


def _save(fig, path, dpi=110):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def knot_indices(t, knot_times):
    return [int(np.argmin(np.abs(t - tk))) for tk in knot_times]


def path_plot_3d(d, out, title, knot_times=()):
    fig = plt.figure(figsize=(7, 6.5))
    ax = fig.add_subplot(projection="3d")
    ax.plot(*d["p_d"].T, "k--", lw=1, label="desired")
    ax.plot(*d["p"].T, "C0", lw=1.2, label="actual")
    for i in knot_indices(d["t"], knot_times):
        ax.plot(*d["frames"][i].T, "-o", color="0.6", ms=2, lw=0.8)
    pts = np.concatenate([d["frames"].reshape(-1, 3), d["p_d"]])
    c, r = 0.5 * (pts.max(0) + pts.min(0)), 0.5 * (pts.max(0) - pts.min(0)).max()
    ax.set_xlim(c[0] - r, c[0] + r)
    ax.set_ylim(c[1] - r, c[1] + r)
    ax.set_zlim(c[2] - r, c[2] + r)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_zlabel("z (m)")
    ax.set_title("%s: end-effector path (grey: arm at knot points)" % title)
    ax.legend(loc="upper left")
    return _save(fig, out)


def path_plot(d, out, title, knot_times=(), dpi=110):
    fig, ax = plt.subplots(figsize=(6.5, 6))
    ax.plot(d["p_d"][:, 0], d["p_d"][:, 1], "k--", lw=1, label="desired")
    ax.plot(d["p"][:, 0], d["p"][:, 1], "C0", lw=1.2, label="actual")
    for i in knot_indices(d["t"], knot_times):
        fr = d["frames"][i]
        ax.plot(fr[:, 0], fr[:, 1], "-o", color="0.6", ms=2, lw=0.8)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title("%s: end-effector path (grey: arm at knot points)" % title)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return _save(fig, out, dpi)


def error_plot(d, out, title):
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    err = np.linalg.norm(d["p_d"] - d["p"], axis=1)
    a1.semilogy(d["t"], np.maximum(err, 1e-9))
    a1.set_ylabel("|p_d - p_n| (m)")
    a1.set_title("%s: tracking error" % title)
    a1.grid(alpha=0.3, which="both")
    a2.plot(d["t"], d["e_phi"])
    a2.set_ylabel("orientation error (rad)\n(planar: about z; 3-D: |2 dq|)", fontsize=8)
    a2.set_xlabel("t (s)")
    a2.grid(alpha=0.3)
    return _save(fig, out)


TORQUE_UNIT = "N m; N for a prismatic joint"
TRANSIENT_FACTOR = 3.0   # a start transient: torques above this x the second half's 99th percentile


def settle_time(t, y):
    """When the start transient is over: the sample after the last one whose magnitude (over
    the trailing axes) exceeds TRANSIENT_FACTOR x the 99th percentile of the run's second
    half; None where nothing in the first half stands out so (no transient to set apart)."""
    a = np.abs(np.asarray(y, dtype=float).reshape(len(t), -1)).max(axis=1)
    half = len(a) // 2
    if half < 2:
        return None
    ref = np.percentile(a[half:], 99)
    over = np.nonzero(a > TRANSIENT_FACTOR * max(ref, 1e-12))[0]
    if not len(over) or over[-1] >= half:
        return None
    return float(t[over[-1] + 1])


def _steady_ylim(ax, t, ys, t0):
    """Scale ax to the curves ys after t0 (the start transient runs off the top, as said)."""
    keep = t >= t0
    lo = min(float(np.nanmin(y[keep])) for y in ys)
    hi = max(float(np.nanmax(y[keep])) for y in ys)
    pad = 0.08 * max(hi - lo, 1e-9)
    ax.set_ylim(lo - pad, hi + pad)


def torque_plot(d, out, title):
    """Applied torques; where a start transient would flatten the rest, a second panel
    shows the run after it on its own scale."""
    n = d["u"].shape[1]
    t = d["t"]
    ts = settle_time(t, d["u"])
    fig, axes = plt.subplots(1 if ts is None else 2, 1, figsize=(8, 4.5 if ts is None else 7), squeeze=False)
    for k, ax in enumerate(axes[:, 0]):
        keep = t >= (ts if k else t[0])
        for i in range(n):
            ax.plot(t[keep], d["u"][keep, i], lw=0.8, label="link %d" % (i + 1))
        ax.set_xlabel("t (s)")
        ax.set_ylabel("joint torque (%s)" % TORQUE_UNIT, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title("%s: applied joint torques" % title)
    axes[0, 0].legend(ncol=5, fontsize=7)
    if ts is not None:
        axes[1, 0].set_title("after the start transient (t >= %.2f s), on its own scale" % ts, fontsize=9)
    return _save(fig, out)


def behaviour_plot(d, out, title, links=None, with_range=False, dpi=110):
    """Per-link torque broken down by behaviour (thesis figs 7.42-7.46, 7.54-7.58); with
    with_range, the link's range to the nearest obstacle surface on a right axis (7.67)."""
    n = d["comp"].shape[1]
    links = links or list(range(1, n + 1))
    ts = settle_time(d["t"], d["comp"])
    fig, axes = plt.subplots(len(links), 1, figsize=(8, 1.6 * len(links) + 0.6), sharex=True, squeeze=False)
    for ax, i in zip(axes[:, 0], links):
        drawn = []
        for j, name in enumerate(COMPONENTS):
            c = d["comp"][:, i - 1, j]
            if np.any(c != 0):
                ax.plot(d["t"], c, lw=0.8, label=name)
                drawn.append(c)
        if ts is not None and drawn:   # the start transient off the scale, its peak said
            _steady_ylim(ax, d["t"], drawn, ts)
            peak = max(float(np.abs(c[d["t"] < ts]).max()) for c in drawn)
            ax.text(0.99, 0.95, "start: up to %.0f N m before t = %.2f s" % (peak, ts), transform=ax.transAxes,
                    ha="right", va="top", fontsize=6, color="0.3")
        ax.set_ylabel("link %d (%s)" % (i, "N m" if n > 4 else TORQUE_UNIT), fontsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
        rho = d.get("rho")
        if with_range and rho is not None and np.any(np.isfinite(rho[:, i - 1])):
            ax2 = ax.twinx()
            ax2.plot(d["t"], rho[:, i - 1], "k:", lw=0.8)
            ax2.set_ylabel("range (m)", fontsize=7)
            ax2.tick_params(labelsize=6)
    axes[0, 0].set_title("%s: torque by behaviour (%s)%s" % (title, TORQUE_UNIT, "; dotted: range to surface" if with_range else ""))
    axes[-1, 0].set_xlabel("t (s)")
    return _save(fig, out, dpi)


def range_plot(d, out, title, dpi=110):
    """Range from each link's axis to the nearest obstacle surface (blank: beyond the clearance)."""
    fig, ax = plt.subplots(figsize=(8, 3.8))
    rho = d["rho"]
    for i in range(rho.shape[1]):
        if np.any(np.isfinite(rho[:, i])):
            ax.plot(d["t"], rho[:, i], lw=0.9, label="link %d" % (i + 1))
    ax.set_xlabel("t (s)")
    ax.set_ylabel("range to surface (m)")
    ax.set_title("%s: range to the obstacle surface" % title)
    ax.grid(alpha=0.3)
    ax.legend(ncol=5, fontsize=7)
    return _save(fig, out, dpi)


def tracking_grid(runs, out, dpi=70):
    """Tracking error of several runs, one small log panel each."""
    names = list(runs)
    cols = 4
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.1 * rows), squeeze=False, sharex=True)
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names):
        d = runs[name]
        ax.set_visible(True)
        err = np.linalg.norm(d["p_d"] - d["p"], axis=1)
        ax.semilogy(d["t"], np.maximum(err, 1e-7), lw=0.6)
        ax.set_title(name, fontsize=8)
        ax.set_ylim(1e-6, 1.0)
        ax.tick_params(labelsize=6)
        ax.grid(alpha=0.3, which="major")
    fig.suptitle("|p_d - p_n| (m) against t (s)")
    return _save(fig, out, dpi)


def snapshots_plot(d, out, title, knot_times, dpi=110):
    idx = knot_indices(d["t"], knot_times)
    cols = min(4, max(1, len(idx)))
    rows = (len(idx) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.2 * rows), squeeze=False)
    lim = np.abs(d["frames"][:, :, :2]).max() * 1.05
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, i in zip(axes.flat, idx):
        ax.set_visible(True)
        fr = d["frames"][i]
        ax.plot(d["p_d"][:, 0], d["p_d"][:, 1], "k:", lw=0.6)
        ax.plot(fr[:, 0], fr[:, 1], "-o", ms=3, color="C0")
        ax.plot(fr[0, 0], fr[0, 1], "ks", ms=5)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_title("t = %.1f s" % d["t"][i], fontsize=9)
        ax.set_xlabel("x (m)", fontsize=7)
        ax.set_ylabel("y (m)", fontsize=7)
        ax.tick_params(labelsize=7)
    fig.suptitle("%s: arm at the knot points (square: base; dotted: desired path)" % title)
    return _save(fig, out, dpi)


def all_plots(d, out_dir, title, knot_times, spatial=False):
    out = Path(out_dir)
    if spatial:
        return [path_plot_3d(d, out / "path.png", title, knot_times),
                error_plot(d, out / "error.png", title),
                torque_plot(d, out / "torques.png", title),
                behaviour_plot(d, out / "behaviours.png", title)]
    return [path_plot(d, out / "path.png", title, knot_times),
            error_plot(d, out / "error.png", title),
            torque_plot(d, out / "torques.png", title),
            behaviour_plot(d, out / "behaviours.png", title),
            snapshots_plot(d, out / "snapshots.png", title, knot_times)] + (
        [range_plot(d, out / "range.png", title)] if "rho" in d and np.any(np.isfinite(d["rho"])) else [])
