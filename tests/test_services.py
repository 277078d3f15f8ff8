"""Host services (NYMPH): bounded log requests on the node, per-node log files
and `linkteam console` on the host, completion history (TIMING) and the critical path."""
import pytest

import json
import threading
import time

import numpy as np

from bus_protocol import messages as m
from host.report import critical_path
from host import node_services
from host.run import run_scenario
from host.scenario.loader import load
from tests.conftest import REPO, needs, run_both


def test_node_services_same_under_micropython_and_cpython():
    out, cp = run_both("mp_services.py")
    assert out == cp
    lines = out.splitlines()
    # 4 slots: the 5th and 6th request are dropped and counted; the host hears of the
    # loss first, then the four requests in order
    assert lines[0] == "kept [True, True, True, True, False, False] dropped 2"
    assert lines[1] == "LOG (b'[2 log lines dropped]',)"
    assert lines[2:6] == ["LOG (b'line %d',)" % i for i in range(4)]
    # link 3's TIMING slot is tick % 12 == 9: ticks 9 (too early: fewer than 12 cycles) and 21
    timing = [ln for ln in lines if ln.startswith("TIMING")]
    assert len(timing) == 3
    v = eval(timing[0][len("TIMING "):])
    assert v[0] == 10 and len(v) == 25
    assert v[1:13] == tuple(1000 + t if t != 20 else 0xFFFF for t in range(10, 22))
    assert v[13:25][:10] == tuple((65000 + 100 * t) & 0xFFFF for t in range(10, 20))
    # link 13 (TIMING at tick % 12 == 7) acted in 156 and 175, then in 163 (ticks that go
    # back): 152-163's frame still reports 156 after 164-175's said it was not acted in
    v = eval(timing[2][len("TIMING "):])
    assert v[0] == 152 and v[1:13] == (0xFFFF,) * 4 + (1156,) + (0xFFFF,) * 6 + (1163,)


def test_host_services_unwrap_finish_clock_and_write_node_logs(tmp_path):
    hs = node_services.HostServices()
    hs.open(tmp_path, shared_clock=True)
    hs.open_tick(100)
    t_open = hs._opened[100]
    # link 2 finished 1500 µs after the tick opened; its 16-bit clock wraps in between
    clk = (t_open + 1500) & 0xFFFF
    v = (100,) + (900,) + (0xFFFF,) * 11 + (clk,) + (0,) * 11
    hs.on_timing(1.0, 2, v)
    hs.on_log(1.5, 2, "hello")
    hs.close()
    assert hs.finish == {(100, 2): 900}
    assert hs.finish_common == {(100, 2): 1500}
    text = node_services.node_log_path(tmp_path, 2).read_text().splitlines()
    assert "cycles 100-111 finished after 900 us (median), 900 us (max), 11 not acted" in text[0]
    assert text[1].endswith("hello")


def test_critical_path_names_the_node_last_most_often():
    hs = node_services.HostServices()
    rng = np.random.default_rng(1)
    last = []
    for tick in range(200):
        times = rng.uniform(100, 1000, size=4)
        for i, us in enumerate(times):
            hs.finish_common[tick, i + 1] = float(us)
        last.append(int(np.argmax(times)) + 1)
    hs.finish_common[200, 1] = 5.0          # a cycle without every node: not counted
    s = critical_path.summarise(hs, 4)
    counts = [last.count(i) for i in (1, 2, 3, 4)]
    assert s["cycles"] == 200 and s["cycles_incomplete"] == 1
    assert s["times_critical"] == counts
    assert s["node_most_often"] == counts.index(max(counts)) + 1
    assert s["finish_from"] == "tick opening (host clock)"


def test_console_follows_a_node_log_until_the_run_ends(tmp_path):
    """A run writes RUN.partial and renames it to RUN at its end (host/report/run_dir.py)."""
    from host.report.run_dir import partial_dir
    run = tmp_path / "run"
    path = node_services.node_log_path(partial_dir(run), 4)

    def writer():
        time.sleep(0.3)
        path.parent.mkdir(parents=True)
        with open(path, "w", buffering=1) as f:
            for i in range(5):
                f.write("line %d\n" % i)
                time.sleep(0.05)
        partial_dir(run).rename(run)

    th = threading.Thread(target=writer)
    th.start()

    class Out:
        text = ""

        def write(self, s):
            Out.text += s

        def flush(self):
            pass
    n = node_services.follow(run, 4, Out(), poll_s=0.01, wait_s=30)
    th.join()
    assert n == 5 and Out.text == "".join("line %d\n" % i for i in range(5))
    Out.text = ""
    assert node_services.follow(run, 4, Out(), wait_s=0) == 5   # a finished run: printed whole


@pytest.mark.slow
@needs("micropython")
def test_processes_run_writes_critical_path_and_node_logs(tmp_path):
    sc = load(REPO / "scenarios" / "reference.toml")
    sc.duration = 1.0
    s, out = run_scenario(sc, tmp_path, mode="processes", quiet=True, lockstep=True)
    cp = s["critical_path"]
    assert cp["finish_from"] == "tick opening (host clock)"
    # 121 ticks; the first and the last block of 12 may miss a node's TIMING frame
    assert cp["cycles"] >= 121 - 2 * 12 and sum(cp["times_critical"]) == cp["cycles"]
    assert (out / "critical_path.png").exists()
    data = np.load(out / "critical_path.npz")
    assert data["finish_common_us"].shape[1] == 10
    assert "finish_us" not in np.load(out / "timeseries.npz")   # the plant's record stays as in process
    for link in range(1, 11):
        assert "finished after" in node_services.node_log_path(out, link).read_text()
    assert json.loads((out / "summary.json").read_text())["critical_path"]["node_most_often"] == cp["node_most_often"]


def test_timing_frame_fits_the_bus():
    assert m.frame_size(m.TIMING) <= m.MAX_FRAME


class _SilentBus:
    """A bus on which no node answers."""

    def send_batch(self, frames):
        pass

    def recv(self, wait):
        time.sleep(min(wait, 0.005))
        return None


def _silent_cycle(on_patience):
    import pytest

    from host.runners import wallclock
    from host.runners.base import Aborted, ControlLoop
    sc = load(REPO / "scenarios" / "reference.toml")
    sc.patience_s, sc.on_patience = 0.05, on_patience
    loop = ControlLoop(sc, "processes")
    stats = loop.stats
    exchange = wallclock.Exchange(loop.gp, stats, _SilentBus(), timeout=stats.wait_with_patience(sc))
    t0 = time.perf_counter()
    if on_patience == "abort":
        with pytest.raises(Aborted, match="within the patience of 0.05 s"):
            exchange(loop.gp.begin(0, 0.0), 0, None)
    else:
        exchange(loop.gp.begin(0, 0.0), 0, None)
    assert time.perf_counter() - t0 >= 0.05
    return loop


def test_patience_runs_out_abort_or_hold():
    for on_patience in ("abort", "hold"):
        loop = _silent_cycle(on_patience)
        assert loop.stats.patience["expired"] == {str(i): 1 for i in range(1, 11)}
        assert loop.stats.summary()["patience"]["on_patience"] == on_patience
        assert not loop.gp.complete
