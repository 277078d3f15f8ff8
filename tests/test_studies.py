"""The study sweeps (host/studies/gains.py: Appendix D, control rate, weights, RMAC kp) and the
timing column (host/studies/timing.py): each run's scenario carries the swept value, short runs."""
import pytest

import math
from pathlib import Path

import numpy as np

from host.studies import gains, timing
from host.scenario.loader import from_dict, read_toml

THESIS = Path(__file__).resolve().parents[1] / "scenarios" / "thesis"


def test_trend_reads_direction_and_monotony():
    assert gains.trend([3.0, 2.0, 1.0]) == "down"
    assert gains.trend([1.0, 1.005, 2.0]) == "up"          # steps under 1 % are flat
    assert gains.trend([1.0, 1.0]) == "flat"
    assert gains.trend([2.0, 1.0, 1.5]) == "down overall, not monotone"


@pytest.mark.slow
def test_every_study_run_sets_the_swept_value(tmp_path):
    jobs = gains.jobs()
    # Table D.20 runs 01-15 on both trajectories, 5 rates x 3 gain scales, 8 weights, 2 x 4 RMAC gains,
    # 3 centralised controllers with and without the payload in their model
    assert len(jobs) == 15 * 2 + len(gains.RATES) * len(gains.SCALES) + len(gains.WEIGHTS) + 2 * len(gains.RMAC_KP) + 2 * 3
    fname, changes = jobs["d11-step"]
    lin = changes["rmdac"]["linear"]
    assert (lin["wp"], lin["wv"], lin["alpha"], lin["beta"]) == (900.0, 480.0, 4.0, 1.0)
    name, s = gains._run_one("d11-step", str(THESIS / fname), {"rmdac": changes["rmdac"],
                                                              "simulation": {"duration": 0.5}}, tmp_path / "d11")
    assert s["status"] == "ok" and s["scenario"] == "d11-step"
    fname, changes = jobs["weight-1.5"]
    data, sources = read_toml(THESIS / fname)
    data["behaviours"]["centering"].update(changes["behaviours"]["centering"])
    sc = from_dict(data, THESIS / fname, sources)
    assert sc.behaviours[0]["centering"]["weight"] == 1.5 and "rmoa" in sc.behaviours[0]


def test_inprocess_timing_counts_agent_time_within_the_run():
    per_link_us, dt_n_ms, ticks = timing.inprocess(5, 0.5)
    assert ticks == 61                                      # 120 Hz over 0.5 s, both ends
    assert 0 < per_link_us * ticks * 5 * 1e-3 < dt_n_ms * 500 * 5   # agents' time inside the run's wall time


# Table D.20 (thesis Appendix D), written out from the thesis: run -> (w_p, w_v, alpha, beta)
TABLE_D20 = {1: (100, 20, 1, 1), 2: (225, 30, 1, 1), 3: (400, 40, 1, 1), 4: (625, 50, 1, 1),
             5: (900, 60, 1, 1), 6: (1600, 80, 1, 1), 7: (900, 120, 1, 1), 8: (900, 240, 1, 1),
             9: (900, 480, 1, 1), 10: (900, 480, 2, 1), 11: (900, 480, 4, 1), 12: (900, 480, 6, 1),
             13: (900, 480, 1, 2), 14: (900, 480, 1, 4), 15: (900, 480, 1, 6)}


def test_every_appendix_d_job_carries_table_d20s_gains():
    jobs = gains.jobs()
    for run, (wp, wv, alpha, beta) in TABLE_D20.items():
        for traj, fname in (("reference", "reference.toml"), ("step", "step.toml")):
            f, changes = jobs["d%02d-%s" % (run, traj)]
            assert f == fname
            for coord in ("linear", "rotation"):   # only w_p, w_v, alpha, beta: other integral gains zero
                assert changes["rmdac"][coord] == {"wp": wp, "wv": wv, "alpha": alpha, "beta": beta}, (run, coord)
        if run <= 6:                                # D.21: w_v = 2 sqrt(w_p)
            assert wv == 2 * math.sqrt(wp)
    # each study sweeps its parameter over the thesis's rows, the others held
    swept = {t: [(v, run) for v, run, _ in rows] for t, _, _, rows in gains.D_STUDIES}
    assert swept["D.21"] == [(100, 1), (225, 2), (400, 3), (625, 4), (900, 5), (1600, 6)]
    assert swept["D.22"] == [(60, 5), (120, 7), (240, 8), (480, 9)]
    assert swept["D.23"] == [(1, 9), (2, 10), (4, 11), (6, 12)]
    assert swept["D.24"] == [(1, 9), (2, 13), (4, 14), (6, 15)]
    for kind in ("rmac", "rmac-nullspace"):       # RMAC's kp sweep is critically damped
        for kp in gains.RMAC_KP:
            c = jobs["%s-kp%g" % (kind, kp)][1]["controller"]
            assert c["kp"] == kp and math.isclose(c["kv"], 2 * math.sqrt(kp))


@pytest.mark.slow
def test_the_control_rate_sweep_changes_the_control_rate(tmp_path):
    # the runs themselves tick at the swept rate: 0.1 s holds 0.1 * rate + 1 ticks, both ends
    jobs = gains.jobs()
    alpha = read_toml(THESIS / "reference.toml")[0]["rmdac"]["linear"]["alpha"]
    for hz in (min(gains.RATES), max(gains.RATES)):
        for x in gains.SCALES:
            assert jobs["rate-%g-x%g" % (hz, x)][1]["rmdac"]["linear"]["alpha"] == x * alpha
        f, changes = jobs["rate-%g-x1" % hz]
        changes = dict(changes, simulation=dict(changes["simulation"], duration=0.1))
        _, s = gains._run_one("rate-%g" % hz, str(THESIS / f), changes, tmp_path / str(hz))
        assert s["status"] == "ok" and s["control_rate_hz"] == hz
        assert len(np.load(tmp_path / str(hz) / "timeseries.npz")["t"]) == round(0.1 * hz) + 1
    assert {60.0, 1000.0} <= set(gains.RATES)


def test_weight_sweep_windows_tell_a_growing_error_from_a_falling_one(tmp_path):
    # a synthetic 40 s run at 120 Hz whose error is 1, 2, 3, 4 mm (along x) in its four 10 s windows
    t = np.arange(0, 40 * 120 + 1) / 120.0
    err = 1e-3 * (1 + np.minimum(np.floor(t / 10.0), 3))
    p_d = np.zeros((len(t), 3))
    np.savez(tmp_path / "timeseries.npz", t=t, p_d=p_d, p=p_d - np.c_[err, 0 * err, 0 * err])
    windows = gains.window_rms(tmp_path)
    assert np.allclose(windows, [1e-3, 2e-3, 3e-3, 4e-3])
    assert gains.growth(windows) == "growing" and gains.growth(windows[::-1]) == "bounded"
    # the measured weight-5 and weight-4 windows (mm) of the 40 s sweep
    assert gains.growth([32, 40, 57, 64]) == "growing" and gains.growth([24, 35, 16, 9]) == "bounded"
