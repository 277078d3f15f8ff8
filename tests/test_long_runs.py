"""A run's memory does not grow with its duration: ticks are made as the run goes
(ControlLoop.tick_steps), and the recorder lets go of rows once they are on disk
(host/report/run_dir.py Recorder.reload), reading them back for the end."""
import numpy as np
import pytest

from host.report.run_dir import Recorder, Series, save_npz
from host.runners import inprocess
from host.runners.base import ControlLoop
from host.scenario.loader import load

from .conftest import REPO

pytestmark = pytest.mark.slow


def test_a_run_of_1e12_seconds_starts_at_once_and_stops_cleanly(tmp_path):
    p = tmp_path / "endless.toml"
    p.write_text('extends = "%s"\n[simulation]\nduration = 1e12\n' % (REPO / "scenarios" / "hil2.toml"))
    loop = ControlLoop(load(p), "inprocess")
    record = loop.record

    def stop_after_50(k, t):
        record(k, t)
        if k == 50:
            loop.interrupted = True   # as the SIGINT/SIGTERM handler does (host/report/run_dir.py RunDir)

    loop.record = stop_after_50
    stats = inprocess.run(loop)
    assert stats.status == "aborted" and stats.reason == "interrupted (Ctrl-C)"
    assert len(loop.rec) == 51


def test_recorder_lets_go_of_rows_on_disk_and_reads_them_back():
    disk = []
    rec = Recorder(2)
    rec.on_chunk = disk.append
    rec.reload = lambda n, key: [np.concatenate([c[key] for c in disk])[:n]]
    rows = 5 * Recorder.BLOCK + 17
    for i in range(rows):
        rec.add(t=float(i), q=[i, -i])
        if i % 700 == 699:
            rec.flush()
            assert len(rec.blocks["t"]) <= 2   # the blocks on disk are let go
    a = rec.arrays()
    assert np.array_equal(a["t"], np.arange(rows, dtype=float))
    assert np.array_equal(a["q"][:, 1], -np.arange(rows, dtype=float))
    rec.flush()
    assert np.array_equal(np.concatenate([c["t"] for c in disk]), a["t"])   # every row once on disk


def test_a_long_runs_end_reads_a_key_at_a_time_and_writes_the_same_npz(tmp_path):
    """Rows let go come back as a Series: each key read back when asked for (at most
    Series.CACHE held), and save_npz writes it part by part into the file
    np.savez_compressed writes of the whole arrays."""
    disk = []
    rec = Recorder(3)
    rec.on_chunk = disk.append
    reads = []
    rec.reload = lambda n, key: reads.append(key) or [np.concatenate([c[key] for c in disk])[:n]]
    rows = 3 * Recorder.BLOCK + 5
    for i in range(rows):
        rec.add(t=i / 120.0, q=[i, -i, np.nan if i % 7 else 0.5 * i], state=[i % 3, 1, 2])
        if i % 500 == 499:
            rec.flush()
    i = np.arange(rows, dtype=float)
    whole = {"t": i / 120.0, "q": np.stack([i, -i, np.where(i % 7, np.nan, 0.5 * i)], axis=1),
             "state": np.stack([i % 3, np.ones(rows), np.full(rows, 2.0)], axis=1)}
    a = rec.arrays()
    assert isinstance(a, Series) and set(a) == {"t", "q", "state"}
    assert np.array_equal(a["q"], whole["q"], equal_nan=True) and reads == ["q"]
    a["q"]
    assert reads == ["q"]   # kept
    a["t"], a["state"], a["q"]
    assert reads == ["q", "t", "state", "q"]   # two kept: q went first
    save_npz(tmp_path / "series.npz", a, {"knot_times": np.arange(3.0)})
    np.savez_compressed(tmp_path / "whole.npz", **whole, knot_times=np.arange(3.0))
    got, want = np.load(tmp_path / "series.npz"), np.load(tmp_path / "whole.npz")
    assert sorted(got.files) == sorted(want.files)
    for k in want.files:
        assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k], equal_nan=True), k
