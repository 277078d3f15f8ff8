"""A run's memory does not grow with its duration: ticks are made as the run goes
(ControlLoop.tick_steps), and the recorder lets go of rows once they are on disk
(host/report/run_dir.py Recorder.reload), reading them back for the end."""
import numpy as np
import pytest

from host.report.run_dir import Recorder
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
    rec.reload = lambda n: {k: np.concatenate([c[k] for c in disk])[:n] for k in disk[0]}
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
