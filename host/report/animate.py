"""`linkteam animate RUNDIR`: the arm's motion from a run directory as a GIF
(matplotlib PillowWriter; no ffmpeg needed). Obstacles come from the run's scenario."""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.animation import FuncAnimation, PillowWriter  # noqa: E402


def _obstacles(summary, t):
    """(radius, positions (len(t), 3)) per obstacle, from the scenario the run used."""
    try:
        from host.runners.base import obstacle_paths
        from host.scenario.loader import load
        sc = load(summary["path"])
    except Exception:
        return []
    out = []
    for ob, path in zip(sc.obstacles, obstacle_paths(sc)):
        pos = np.array([path.sample(tk).p if path is not None else ob["position"] for tk in t], float)
        out.append((ob["radius"], pos))
    return out


def animate(run_dir, output=None, fps=15, every=0.25, dpi=70):
    run_dir = Path(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    d = np.load(run_dir / "timeseries.npz")
    t, frames, p_d = d["t"], d["frames"], d["p_d"]
    dt = float(t[1] - t[0]) if len(t) > 1 else 1.0
    idx = np.arange(0, len(t), max(1, int(round(every / dt))))
    obs = _obstacles(summary, t[idx])
    lim = float(np.abs(frames[:, :, :2]).max()) * 1.05
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.plot(p_d[:, 0], p_d[:, 1], "k:", lw=0.7)
    arm, = ax.plot([], [], "-o", color="C0", ms=3, lw=2)
    trace, = ax.plot([], [], "C1", lw=0.8)
    circles = [plt.Circle((0, 0), r, color="C3", alpha=0.5) for r, _ in obs]
    for c in circles:
        ax.add_patch(c)
    label = ax.set_title("")
    name = summary.get("scenario", run_dir.name)

    def draw(j):
        k = idx[j]
        fr = frames[k]
        arm.set_data(fr[:, 0], fr[:, 1])
        trace.set_data(d["p"][:k + 1, 0], d["p"][:k + 1, 1])
        for c, (_, pos) in zip(circles, obs):
            c.center = (pos[j, 0], pos[j, 1])
        label.set_text("%s  t = %.2f s" % (name, t[k]))
        return [arm, trace, label] + circles

    anim = FuncAnimation(fig, draw, frames=len(idx), blit=False)
    out = Path(output) if output else run_dir / "arm.gif"
    anim.save(str(out), writer=PillowWriter(fps=fps), dpi=dpi)
    plt.close(fig)
    return out
