"""Plots read at a glance: a start transient does not flatten the rest of the torques, and
every axis is labelled (host/report/plots.py), on a synthetic run with a spike at the start."""
import numpy as np

from host.report import plots


def synthetic_run(n=3, seconds=4.0, rate=120.0, spike=1300.0):
    t = np.arange(0.0, seconds, 1.0 / rate)
    u = 5.0 * np.sin(np.outer(t, np.arange(1, n + 1)))
    u[t < 0.1] += spike   # the start transient
    comp = np.zeros((len(t), n, len(plots.COMPONENTS)))
    comp[:, :, 0] = u
    p_d = np.stack([np.cos(t), np.sin(t), 0 * t], axis=1)
    frames = np.cumsum(np.ones((len(t), n + 1, 3)) * [0.5, 0.1, 0.0], axis=1) - [0.5, 0.1, 0.0]
    return {"t": t, "u": u, "comp": comp, "p_d": p_d, "p": p_d + 1e-3, "frames": frames,
            "e_phi": 1e-3 * np.ones_like(t), "rho": np.full((len(t), n), np.nan)}


def test_settle_time_finds_the_start_transient_and_only_it():
    d = synthetic_run()
    ts = plots.settle_time(d["t"], d["u"])
    assert 0.1 <= ts < 0.1 + 2.0 / 120.0
    later = d["t"] >= 0.5
    assert plots.settle_time(d["t"][later], d["u"][later]) is None    # steady: nothing set apart
    late = d["u"].copy()
    late[-10:] += 1300.0   # a spike in the second half is part of the run, not a start
    assert plots.settle_time(d["t"], late) is None


def test_the_steady_state_is_readable_and_every_axis_labelled(tmp_path, monkeypatch):
    figs = {}
    real_save = plots._save

    def keep(fig, path, dpi=110):
        figs[path.name] = [(ax.get_xlabel(), ax.get_ylabel(), ax.get_ylim()) for ax in fig.axes if ax.get_visible()]
        return real_save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", keep)
    d = synthetic_run()
    plots.all_plots(d, tmp_path, "synthetic", [0.0, 2.0, 4.0])
    assert set(figs) == {"path.png", "error.png", "torques.png", "behaviours.png", "snapshots.png"}
    for name, axes in figs.items():
        assert all(ylabel for _, ylabel, _ in axes), name
        assert axes[-1][0], name   # the bottom panel names its x axis
    full, steady = figs["torques.png"]
    assert full[2][1] > 1000.0 and steady[2][1] < 10.0   # the second panel: the run after the spike
    assert all(ylim[1] < 10.0 for _, _, ylim in figs["behaviours.png"])
    assert all(x == "x (m)" and y == "y (m)" for x, y, _ in figs["snapshots.png"])
