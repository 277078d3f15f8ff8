"""What a run directory holds when a run does not end normally (host/report/run_dir.py RunDir):
an unstable plant, Ctrl-C, SIGTERM, and a run killed outright, which must leave the
previous run whole. Signals are sent once the run has written a chunk of its time series
(the run is under way); the runs are long enough that none finishes first."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from host.cli import main
from host.report.run_dir import load_run
from tests.conftest import needs

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = (ROOT / "scenarios" / "reference.toml").as_posix()


def scenario(tmp_path, name, text=""):
    p = tmp_path / (name + ".toml")
    p.write_text('extends = "%s"\nname = "%s"\n%s' % (REFERENCE, name, text))
    return p


def test_unstable_plant_aborts_with_reason_and_data(tmp_path):
    """Torques far beyond anything physical: MuJoCo finds the state unstable and resets it;
    the run must stop there with that reason, not carry on from the reset pose."""
    p = scenario(tmp_path, "unstable", "[simulation]\nduration = 2.0\n[robot.link]\nu_sat = 1.0e15\n"
                 "[rmdac.linear]\nwp = 1.8e12\nwv = 800.0\n")
    out = tmp_path / "unstable"
    assert main(["run", str(p), "--out", str(out), "--quiet", "--no-plots"]) == 3
    summary, data = load_run(out)
    assert summary["status"] == "aborted" and "unstable" in summary["reason"], summary["reason"]
    assert 0 < len(data["t"]) and data["t"][-1] < 2.0
    assert "PlantUnstable" in (out / "run.log").read_text()
    assert not (tmp_path / "unstable.partial").exists()


def start_run(tmp_path, out, duration=600.0, args=()):
    p = scenario(tmp_path, "long", "[simulation]\nduration = %r\n" % duration)
    proc = subprocess.Popen([sys.executable, "-m", "host.cli", "run", str(p), "--out", str(out), "--quiet",
                             "--no-plots", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = out.with_name(out.name + ".partial") / "timeseries"
    deadline = time.monotonic() + 300.0   # start-up on a busy machine; the run itself takes minutes
    while not (chunks.is_dir() and any(chunks.glob("*.npz"))):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the run wrote no chunk: %r" % (proc.communicate(),))
        time.sleep(0.05)
    return proc


@pytest.mark.parametrize("sig, reason, args", [
    (signal.SIGINT, "interrupted (Ctrl-C)", ()),
    (signal.SIGTERM, "interrupted (SIGTERM)", ()),
    # one MicroPython process per link (UART ring, synthetic clock)
    pytest.param(signal.SIGTERM, "interrupted (SIGTERM)", ("--mode", "processes", "--lockstep"),
                 marks=needs("micropython"))])
def test_signal_mid_run_leaves_aborted_summary_and_partial_series(tmp_path, sig, reason, args):
    out = tmp_path / "run"
    proc = start_run(tmp_path, out, args=args)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3 and b"Traceback" not in err, err
    summary, data = load_run(out)
    assert summary["status"] == "aborted" and summary["reason"] == reason, summary
    t = data["t"]
    assert 0.0 < t[-1] < 600.0 and np.all(np.diff(t) > 0) and len(data["p"]) == len(t)
    assert summary["sim_seconds"] == t[-1]
    assert ("status aborted " + reason) in (out / "run.log").read_text()
    assert not out.with_name("run.partial").exists()


def test_killed_run_leaves_partial_dir_and_previous_run_whole(tmp_path):
    out = tmp_path / "run"
    p = scenario(tmp_path, "short", "[simulation]\nduration = 0.5\n")
    assert main(["run", str(p), "--out", str(out), "--quiet", "--no-plots"]) == 0
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    proc = start_run(tmp_path, out)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before   # the previous run, untouched
    partial = out.with_name("run.partial")
    summary, data = load_run(partial)
    assert summary["status"] == "aborted" and "did not finish" in summary["reason"], summary
    assert summary["scenario"] == "long"
    assert len(data["t"]) > 0 and np.all(np.diff(data["t"]) > 0)
    # rewritten after each chunk, the summary names where one of them ends
    if "t = " in summary["reason"]:
        t_named = float(summary["reason"].split("t = ")[1].split()[0])
        assert np.isclose(data["t"], t_named, atol=5e-4).any(), (t_named, summary)
    assert (partial / "run.log").read_text().startswith("scenario long")


def test_error_after_the_loop_leaves_aborted_summary_and_all_rows(tmp_path, monkeypatch):
    """A failure of the host itself after the control loop (here: computing the metrics)
    still leaves the run directory, with the reason and every row recorded."""
    from host import run
    from host.scenario.loader import load

    def boom(*a):
        raise RuntimeError("boom")

    monkeypatch.setattr(run.metrics, "summarise", boom)
    out = tmp_path / "run"
    with pytest.raises(RuntimeError):
        run.run_scenario(load(scenario(tmp_path, "short", "[simulation]\nduration = 0.5\n")), out, quiet=True,
                         make_plots=False)
    summary, data = load_run(out)
    assert summary["status"] == "aborted" and summary["reason"] == "RuntimeError: boom", summary
    assert len(data["t"]) == 0.5 * 120 + 1 and data["t"][-1] == 0.5
    assert "RuntimeError: boom" in (out / "run.log").read_text()


def test_a_directory_that_is_not_a_run_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    p = scenario(tmp_path, "short", "[simulation]\nduration = 0.1\n")
    assert main(["run", str(p), "--out", str(out), "--quiet", "--no-plots"]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert [f.name for f in out.iterdir()] == ["notes.txt"] and not (tmp_path / "mine.partial").exists()


def test_ctrl_c_swallowed_by_a_finaliser_still_stops_the_run(tmp_path, monkeypatch):
    """Python drops an exception raised by a signal handler inside a finaliser that the
    garbage collector runs (seen: a Popen.__del__): the run must stop at its next tick all
    the same, aborted with the reason."""
    from host import run
    from host.runners.base import ControlLoop
    from host.scenario.loader import load

    real_record, calls = ControlLoop.record, []

    def record(self, k, t):
        calls.append(k)
        if len(calls) == 10:
            try:   # a finaliser: whatever the handler raises ends here
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)
            except KeyboardInterrupt:
                pass
        real_record(self, k, t)

    monkeypatch.setattr(ControlLoop, "record", record)
    out = tmp_path / "run"
    summary, _ = run.run_scenario(load(scenario(tmp_path, "short", "[simulation]\nduration = 2.0\n")), out,
                                  quiet=True, make_plots=False)
    assert summary["status"] == "aborted" and summary["reason"] == "interrupted (Ctrl-C)", summary
    assert len(calls) == 10   # stopped at the tick after the signal, not at the end (241 ticks)
