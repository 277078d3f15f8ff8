"""The study sweeps (host/gains.py: Appendix D, control rate, weights, RMAC kp) and the
timing column (host/timing.py): each run's scenario carries the swept value, short runs."""
from pathlib import Path

from host import gains, timing
from host.scenario import from_dict, read_toml

THESIS = Path(__file__).resolve().parents[1] / "scenarios" / "thesis"


def test_trend_reads_direction_and_monotony():
    assert gains.trend([3.0, 2.0, 1.0]) == "down"
    assert gains.trend([1.0, 1.005, 2.0]) == "up"          # steps under 1 % are flat
    assert gains.trend([1.0, 1.0]) == "flat"
    assert gains.trend([2.0, 1.0, 1.5]) == "down overall, not monotone"


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
