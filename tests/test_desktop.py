"""What only the desktop emulation needs (host/runners/desktop.py, docs/design.md §13):
the hypervisor-pause rule on scripted sentinel logs, the sentinel program itself under
MicroPython, and the CPU wake-up latency request. The schedule moving by an absorbed
pause: tests/test_processes.py. A whole run with a frozen vCPU: `make bench`."""
import os
import struct
import subprocess
import time
from array import array

from host.runners.desktop import SENTINEL, PauseLog
from host.runners.wallclock import cpu_latency_qos

from .conftest import MICROPYTHON, needs

PERIOD_US, THRESHOLD_US = 2000, 300


def write_log(path, times_us):
    path.write_bytes(array("q", times_us).tobytes())
    return str(path)


def test_a_late_wakeup_is_a_pause_from_its_due_time(tmp_path):
    """cpu0 wakes every 2 ms but at 60 ms after 12 ms (a pause from its due time, 14 ms, to 60 ms); cpu1
    wakes 0.2 ms late once (under the threshold: no pause) and stops at 40 ms (overdue:
    paused now). lost() is the union of both, clipped to the window asked."""
    cpu0 = list(range(0, 12001, PERIOD_US)) + list(range(60000, 80001, PERIOD_US))
    cpu1 = list(range(0, 20001, PERIOD_US)) + list(range(22200, 40201, PERIOD_US))
    log = PauseLog([write_log(tmp_path / "cpu0", cpu0), write_log(tmp_path / "cpu1", cpu1)], PERIOD_US, THRESHOLD_US)
    try:
        assert log.pauses(0, 80000) == [(14000, 60000), (40200 + PERIOD_US, 80000)]
        # union of [14, 60] and [42.2, 80] ms within [30, 70] ms: 40 ms
        assert abs(log.lost(0.030, 0.070) - 0.040) < 1e-9
        assert log.lost(0.001, 0.011) == 0.0                 # before any pause
        count, total_ms = log.totals()                        # pauses that ended (the overdue one has not)
        assert count == 1 and abs(total_ms - 46.0) < 1e-9
    finally:
        log.close()


@needs("micropython")
def test_the_sentinel_writes_its_wakeups_on_the_hosts_clock(tmp_path):
    """The sentinel program under MicroPython (unpinned here): records PauseLog reads,
    on perf_counter's clock (CLOCK_MONOTONIC), one a period."""
    path = tmp_path / "cpu"
    path.write_bytes(b"")
    t0 = time.perf_counter()
    p = subprocess.Popen([MICROPYTHON, "-c", SENTINEL % (str(path), PERIOD_US)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while path.stat().st_size < 8 * 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        p.kill()
        p.wait()
    t1 = time.perf_counter()
    w = array("q", path.read_bytes()[:path.stat().st_size // 8 * 8])
    assert len(w) >= 5, p.stderr.read()
    assert t0 * 1e6 <= w[0] and w[-1] <= t1 * 1e6
    assert all(b - a >= PERIOD_US for a, b in zip(w, w[1:]))   # it sleeps a whole period each time


def test_cpu_latency_request_is_zero_while_held_and_closed_after(tmp_path):
    req = tmp_path / "cpu_dma_latency"
    req.write_bytes(b"\xff" * 4)
    with cpu_latency_qos(str(req)) as q:
        assert q.held and struct.unpack("i", req.read_bytes()[:4])[0] == 0
    assert not q.held
    with cpu_latency_qos(str(tmp_path / "absent" / "file")) as q:   # not allowed: a run goes on without it
        assert not q.held
    assert not os.path.exists(tmp_path / "absent")
