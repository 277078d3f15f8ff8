"""Wall-clock desktop runs on a VM (DESIGN 13): CPU wake-up latency held at 0 while a run
lasts, and hypervisor pauses measured by pinned sentinels and absorbed by the schedule
(host/runners/vm_pause.py), while a node that is slow by itself still misses its cycle."""
import os
import signal
import struct
import subprocess
import time

import pytest

from host.run import run_scenario
from host.runners import processes
from host.runners.vm_pause import VmPauses
from host.runners.base import ControlLoop
from host.scenario import load

from .conftest import REPO

QOS = "/dev/cpu_dma_latency"


def _can_realtime():
    try:
        return os.access(QOS, os.W_OK) and os.sched_get_priority_max(os.SCHED_FIFO) > 0 and os.geteuid() == 0
    except (AttributeError, OSError):
        return False


needs_rt = pytest.mark.skipif(not _can_realtime(), reason="needs root (SCHED_FIFO, %s)" % QOS)


def _qos_now():
    with open(QOS, "rb") as f:
        return struct.unpack("i", f.read(4))[0]


@needs_rt
def test_cpu_latency_request_is_zero_while_held_and_released_after():
    before = _qos_now()   # 0 already if another wall-clock run holds it now
    with processes.cpu_latency_qos() as q:
        assert q.held and _qos_now() == 0
    assert not q.held and _qos_now() == before


@needs_rt
def test_sentinel_sees_its_cpu_frozen_while_and_after_it_happens():
    """SIGSTOP stands in for the hypervisor: a frozen sentinel is overdue (a pause going
    on now), then reports the pause it woke up late from."""
    v = VmPauses(processes.micropython_path(), cpus=[0])
    try:
        time.sleep(0.1)                       # running, heartbeat written
        assert v.alive
        t0 = time.perf_counter()
        os.kill(v.procs[0].pid, signal.SIGSTOP)
        time.sleep(0.06)
        ongoing = v.lost(t0, time.perf_counter())
        os.kill(v.procs[0].pid, signal.SIGCONT)
        time.sleep(0.02)
        t1 = time.perf_counter()
        done = v.lost(t0, t1)
        assert 0.05 < ongoing < 0.07
        assert 0.055 < done < 0.075
        assert v.lost(t1, t1 + 1.0) == 0.0    # nothing in a window after it
        # what a late cycle's record shows: ms from t0, with the 50-70 ms gap of the freeze
        seen = v.wakeups_since(t0)[0]
        assert seen[0] < 0 and seen == sorted(seen)
        assert 50 < max(b - a for a, b in zip(seen, seen[1:])) < 75
        count, total_ms = v.totals()
        assert count >= 1 and total_ms >= 55
    finally:
        v.close()
    assert not os.path.exists(v.dir)


def _frozen_run(tmp_path, freeze_sentinels, monkeypatch):
    """hil2 (2 links) in processes mode; at t = 0.5 s link 1 is frozen for 30 ms, with
    every pause sentinel too (as a paused vCPU freezes everything on it) or alone (a node
    that is slow by itself)."""
    sc = load(REPO / "scenarios" / "hil2.toml")
    sc.duration = 1.0
    seen = {}
    real_start, real_pauses = processes.Cluster.start, processes.start_vm_pauses

    def start(self):
        real_start(self)
        seen["link1"] = self.procs[0].pid

    def pauses():
        v = real_pauses()
        seen["sentinels"] = [p.pid for p in v.procs] if v else []
        return v

    def progress(t, total):
        if t >= 0.5 and "frozen" not in seen:
            pids = [seen["link1"]] + (seen["sentinels"] if freeze_sentinels else [])
            seen["frozen"] = subprocess.Popen(
                ["sh", "-c", "sleep 0.002; kill -STOP %s; sleep 0.03; kill -CONT %s"
                 % ((" ".join(map(str, pids)),) * 2)])

    monkeypatch.setattr(processes.Cluster, "start", start)
    monkeypatch.setattr(processes, "start_vm_pauses", pauses)
    monkeypatch.setattr(ControlLoop, "run", _with_progress(progress))
    s, _ = run_scenario(sc, tmp_path, mode="processes", quiet=True, make_plots=False)
    assert s["status"] == "ok", s["reason"]
    seen["frozen"].wait()
    return s


def _with_progress(progress, run=ControlLoop.run):
    def wrapped(self, exchange, _progress=None):
        return run(self, exchange, progress)
    return wrapped


@needs_rt
def test_a_vcpu_pause_moves_the_schedule_a_slow_node_misses(tmp_path, monkeypatch):
    paused = _frozen_run(tmp_path / "vm", True, monkeypatch)
    late = [c["tick"] for c in paused.get("late_cycles", [])]
    assert not [k for k in late if 58 <= k <= 66], paused["late_cycles"]   # t = 0.48..0.55 s
    assert paused["vm_pauses"]["ticks_moved"] >= 1 and paused["vm_pauses"]["moved_ms"] >= 20

    slow = _frozen_run(tmp_path / "node", False, monkeypatch)
    late = [c for c in slow["late_cycles"] if 58 <= c["tick"] <= 66]
    assert len(late) >= 2 and all(c["vm_paused_ms"] < 5 for c in late), slow["late_cycles"]
