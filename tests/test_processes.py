"""Desktop multi-process mode: one real MicroPython process per link (DESIGN 13)."""
import os
import signal
import threading
import time

import pytest

from firmware import safety
from host.run import run_scenario
from host.runners import processes
from host.runners.base import Aborted
from host.scenario import load

from .conftest import REPO

SECONDS = 3.0


def _short(name="reference.toml", seconds=SECONDS):
    sc = load(REPO / "scenarios" / name)
    sc.duration = seconds
    return sc


@pytest.fixture(scope="module")
def inprocess_ref(tmp_path_factory):
    s, _ = run_scenario(_short(), tmp_path_factory.mktemp("inproc"), quiet=True, make_plots=False)
    return s


def _alive(pids):
    out = []
    for p in pids:
        try:
            os.kill(p, 0)
            with open("/proc/%d/stat" % p) as f:
                if f.read().split()[2] != "Z":
                    out.append(p)
        except (ProcessLookupError, FileNotFoundError):
            pass
    return out


@pytest.mark.parametrize("bus", ["uart", "can"])
def test_processes_mode_tracks_like_inprocess(bus, inprocess_ref, tmp_path):
    """10 MicroPython processes, wall clock: same tracking, (almost) no late torques.
    A shared VM can lose whole stretches to its hypervisor (vm_steal_ms; seen here: 0.5 s
    stolen in 10 s), so each run gets up to three attempts and one must meet every bound;
    the message lists all attempts."""
    ticks = int(SECONDS * 120)
    tries = []
    for attempt in range(3):
        s, out = run_scenario(_short(), tmp_path / str(attempt), mode="processes", quiet=True,
                              make_plots=False, bus=bus)
        assert s["status"] == "ok", s["reason"]
        assert s["mode"] == "processes" and s["clock"] == "wall"
        assert len(s["nodes"]) == 10
        assert "ready: link 10" in (out / "run.log").read_text()
        tries.append({k: s.get(k) for k in ("e_rms_m", "missed_cycles", "realtime_factor", "vm_steal_ms")})
        # at most 2 % late cycles (the UART chain has 3N sequential hops per cycle, ~3.5 ms
        # of the 8.3 ms period here); 15 % while the hypervisor stole over 2 % of the run
        stolen = (s.get("vm_steal_ms") or 0) > 0.02 * SECONDS * 1000
        if (abs(s["e_rms_m"] - inprocess_ref["e_rms_m"]) <= 0.2 * inprocess_ref["e_rms_m"]
                and s["missed_cycles"] <= (0.15 if stolen else 0.02) * ticks
                and 0.9 < s["realtime_factor"] < 1.1):
            return
    pytest.fail("no attempt within bounds (in-process e_rms %.3e): %s" % (inprocess_ref["e_rms_m"], tries))


@pytest.mark.parametrize("bus,wire,topology,joint_io", [
    ("uart", "socket", "ring", "wire"), ("uart", "socket", "chain", "wire"), ("uart", "pty", "ring", "wire"),
    ("uart", "socket", "ring", "bus"),    # JOINT_STATE down the ring, TORQUE round to the host
    ("can", None, None, "wire")])
def test_lockstep_is_synthetic_and_matches_inprocess(bus, wire, topology, joint_io, tmp_path):
    s, _ = run_scenario(_short(seconds=1.0), tmp_path, mode="processes", quiet=True, make_plots=False,
                        bus=bus, lockstep=True, wire=wire or "socket", topology=topology or "ring",
                        joint_io=joint_io)
    ref, _ = run_scenario(_short(seconds=1.0), tmp_path / "i", quiet=True, make_plots=False)
    assert s["status"] == "ok" and s["clock"] == "synthetic" and s["missed_cycles"] == 0
    assert s.get("topology") == topology
    assert abs(s["e_rms_m"] - ref["e_rms_m"]) <= 1e-6 + 1e-3 * ref["e_rms_m"]


@pytest.mark.parametrize("bus,wire", [("uart", "pty"), ("can", "socket")])
def test_lockstep_result_survives_stalls(bus, wire, tmp_path, monkeypatch):
    """Lockstep: no time passes between SYNCs, so a stall must change nothing. The host
    stops for 150 ms between ticks 30 and 31, and link 5 for 150 ms inside tick 60 (links
    6-10 hear nothing, links 1-4 wait for the goal): both are longer than a link's idle
    wait (100 ms) and its silent-bus watchdog (watchdog_ms, 50 ms), which once braked
    every link whatever the clock. Same result as in-process, every link running."""
    procs, stall = [], 0.15
    real_start, real_exchange = processes.Cluster.start, processes.make_exchange

    def start(self):
        real_start(self)
        procs.extend(self.procs)

    def make_exchange(*a, **kw):
        exchange = real_exchange(*a, **kw)

        def stalled(frames, k):
            if k == 31:
                time.sleep(stall)
            if k == 60:
                os.kill(procs[4].pid, signal.SIGSTOP)
                threading.Timer(stall, os.kill, (procs[4].pid, signal.SIGCONT)).start()
            return exchange(frames, k)
        return stalled
    monkeypatch.setattr(processes.Cluster, "start", start)
    monkeypatch.setattr(processes, "make_exchange", make_exchange)
    s, _ = run_scenario(_short(seconds=1.0), tmp_path, mode="processes", quiet=True, make_plots=False,
                        bus=bus, lockstep=True, wire=wire)
    ref, _ = run_scenario(_short(seconds=1.0), tmp_path / "i", quiet=True, make_plots=False)
    assert s["status"] == "ok", s["reason"]
    assert [(n["state"], n["faults"]) for n in s["nodes"]] == [(safety.RUN, 0)] * 10
    assert abs(s["e_rms_m"] - ref["e_rms_m"]) <= 1e-6 + 1e-3 * ref["e_rms_m"]


def test_processes_are_cleaned_up_on_error():
    """A node that dies at boot aborts with its traceback, and nothing is left behind."""
    sc = _short(seconds=0.5)
    cl = processes.Cluster(sc, bus="uart", ready_timeout=10,
                           entry="raise ValueError('boom ' + %r)\n")
    with pytest.raises(Aborted) as e:
        with cl:
            pass
    assert "boom" in str(e.value)
    pids = [p.pid for p in cl.procs]
    assert pids and not _alive(pids)


def test_processes_are_cleaned_up_on_interrupt(tmp_path):
    """Ctrl-C (KeyboardInterrupt inside the run) ends the run as aborted, children reaped."""
    sc = _short(seconds=30.0)
    seen = {}
    real_run = processes.Cluster.start

    def start(self):
        real_run(self)
        seen["pids"] = [p.pid for p in self.procs]
        signal.setitimer(signal.ITIMER_REAL, 0.5)

    old = signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    processes.Cluster.start = start
    try:
        s, _ = run_scenario(sc, tmp_path, mode="processes", quiet=True, make_plots=False, bus="can")
    finally:
        processes.Cluster.start = real_run
        signal.signal(signal.SIGALRM, old)
    assert s["status"] == "aborted" and "interrupt" in s["reason"]
    time.sleep(0.2)
    assert not _alive(seen["pids"])


def _wall_loop():
    from host.runners import inprocess
    from host.runners.base import ControlLoop
    loop = ControlLoop(_short(seconds=0.5), "inprocess", clock="wall")
    bus = inprocess.LoopbackBus([], loop.gp.on_frame)
    bus.agents = inprocess.make_agents(loop.sc, bus.send)
    return loop, bus


def test_a_host_stall_moves_the_schedule_and_is_not_a_missed_cycle():
    """Wall clock: when the simulator itself opens a tick late (here a 40 ms stall after
    t = 0.2 s), the schedule moves and the bus keeps its whole period: counted in
    late_start / host_lag_max, not as a missed cycle. A tick whose torques do not all
    come back is a missed cycle."""
    loop, bus = _wall_loop()
    stalled = []

    def progress(t, total):
        if t >= 0.2 and not stalled:
            stalled.append(t)
            time.sleep(0.04)
    assert loop.run(lambda frames, k: bus.run(frames), progress) == "ok"
    assert loop.missed_cycles == 0
    # the stall opens one tick late (40 ms less the tick's slack); a busy machine may open
    # another one over 1 ms late too (seen once in 5 lone runs)
    assert 1 <= loop.late_start <= 3 and 0.025 < loop.host_lag_max < 0.2
    assert loop.wall_seconds > 0.5 + 0.025   # the stall is in the run's wall time

    loop, bus = _wall_loop()
    assert loop.run(lambda frames, k: None if k == 30 else bus.run(frames)) == "ok"
    assert loop.missed_cycles == 1 and loop.late_start == 0


def test_a_host_that_wakes_late_moves_the_schedule(monkeypatch):
    """The same rule when the host's stall falls in its sleep before a tick (seen on the
    VM: both vCPUs taken for ~6 ms while the host's timer fired): the tick opens late and
    still gets its whole period. The exchange here answers only inside the deadline."""
    loop, bus = _wall_loop()
    real_sleep, calls = time.sleep, []

    def sleep(s):
        real_sleep(s)
        calls.append(s)
        if len(calls) == 24:
            real_sleep(0.03)   # woke 30 ms late

    def exchange(frames, k):
        if time.perf_counter() < loop.deadline - 0.002:
            bus.run(frames)
    monkeypatch.setattr(time, "sleep", sleep)
    assert loop.run(exchange) == "ok"
    assert loop.missed_cycles == 0
    assert 1 <= loop.late_start <= 3 and 0.025 < loop.host_lag_max < 0.2
