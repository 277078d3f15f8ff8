"""Desktop multi-process mode: one real MicroPython process per link (docs/design.md §13).
Correctness comes from runs whose figures must equal the in-process run's exactly
(lockstep, or a wall clock slow enough that every deadline is met on a busy machine);
the schedule's rules are checked on a scripted clock. Full-rate timing: `make bench`."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from bus_protocol import messages as m
from host.run import run_scenario
from host.runners import inprocess, processes, wallclock
from host.runners.base import Aborted, ControlLoop
from host.scenario.loader import from_dict, read_toml

from .conftest import REPO, differing, needs

SLOWDOWN = 12      # wall-clock runs: 100 ms of wall time per 8.3 ms tick of the reference
WATCHDOG_MS = 2000  # ... so the agents' silent-bus watchdog must allow for 100 ms SYNC spacing


def scenario(name="reference.toml", seconds=1.0, watchdog_ms=WATCHDOG_MS, checks=True, **simulation):
    """A scenario of scenarios/ cut to `seconds`; `simulation` fields and the agents'
    watchdog_ms as given (None: the scenario's own); `checks` False: neighbour checks off."""
    data, sources = read_toml(REPO / "scenarios" / name)
    data["simulation"].update(duration=seconds, **simulation)
    if not checks:
        data.setdefault("behaviours", {}).setdefault("neighbours", {})["depth"] = 0
    if watchdog_ms is not None:
        data.setdefault("behaviours", {}).setdefault("safety", {})["watchdog_ms"] = watchdog_ms
    return from_dict(data, REPO / "scenarios" / name, sources)


def same_run(out_a, out_b):
    """Names of the time series that differ between two run directories."""
    return differing(np.load(out_a / "timeseries.npz"), np.load(out_b / "timeseries.npz"))


@pytest.fixture(scope="module")
def inprocess_ref(tmp_path_factory):
    out = tmp_path_factory.mktemp("inproc")
    s, out = run_scenario(scenario(seconds=0.5), out, quiet=True, make_plots=False)
    return s, out


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


@pytest.mark.slow
@needs("micropython")
@pytest.mark.parametrize("bus", ["uart", "can"])
def test_wall_clock_run_meets_every_deadline_and_tracks_as_inprocess(bus, inprocess_ref, tmp_path):
    """10 MicroPython processes on the wall clock at 1/SLOWDOWN of real time (a 100 ms
    period against a ~5 ms bus cycle): every torque is in before its deadline, so the
    run is the in-process run to the last digit, and no tick opened before its time."""
    ref, ref_out = inprocess_ref
    s, out = run_scenario(scenario(seconds=0.5), tmp_path, mode="processes", quiet=True, make_plots=False,
                          bus=bus, slowdown=SLOWDOWN)
    assert s["status"] == "ok", s["reason"]
    assert s["mode"] == "processes" and s["clock"] == "wall"
    assert s["missed_cycles"] == 0 and "late_cycles" not in s, s.get("late_cycles")
    assert same_run(out, ref_out) == [] and s["e_rms_m"] == ref["e_rms_m"]
    assert s["wall_seconds"] >= 0.5 * SLOWDOWN
    assert s["tick_budget_ms"]["min"] > 0 and s["bus_cycle_ms"]["max"] < s["tick_budget_ms"]["p50"]
    assert [n["link"] for n in s["nodes"]] == list(range(1, 11))
    assert "ready: link 10" in (out / "run.log").read_text()


@pytest.mark.slow
@needs("micropython")
@pytest.mark.parametrize("bus,wire,topology,joint_io", [
    ("uart", "socket", "ring", "wire"), ("uart", "socket", "chain", "wire"), ("uart", "pty", "ring", "wire"),
    ("uart", "socket", "ring", "bus"),    # JOINT_STATE down the ring, TORQUE round to the host
    ("can", None, None, "wire")])
def test_lockstep_is_synthetic_and_identical_to_inprocess(bus, wire, topology, joint_io, tmp_path):
    sc = scenario(seconds=1.0)
    s, out = run_scenario(sc, tmp_path / "p", mode="processes", quiet=True, make_plots=False,
                          bus=bus, lockstep=True, wire=wire or "socket", topology=topology or "ring",
                          joint_io=joint_io)
    ref, ref_out = run_scenario(scenario(seconds=1.0), tmp_path / "i", quiet=True, make_plots=False)
    assert s["status"] == "ok" and s["clock"] == "synthetic" and s["missed_cycles"] == 0
    assert s.get("topology") == topology
    assert same_run(out, ref_out) == []
    assert (s["e_rms_m"], s["phi_rms_rad"], s["q_rms_rad"]) == (ref["e_rms_m"], ref["phi_rms_rad"], ref["q_rms_rad"])


@pytest.mark.slow
@needs("micropython")
@pytest.mark.parametrize("topology", ["chain", "ring"])
def test_neighbour_checks_on_a_uart_chain_or_ring_track_as_inprocess(topology, tmp_path):
    """reference-ft (depth-1 neighbours, K sent twice): on a plain chain the tip's K_N for
    the host passes link 1, whose proximal neighbour the host is not (address 0): it goes
    on up, and the run is the in-process run to the last digit. Each node's config and
    stderr stay in the run directory."""
    s, out = run_scenario(scenario("reference-ft.toml", seconds=0.25), tmp_path / "p", mode="processes",
                          quiet=True, make_plots=False, lockstep=True, topology=topology)
    ref, ref_out = run_scenario(scenario("reference-ft.toml", seconds=0.25), tmp_path / "i",
                                quiet=True, make_plots=False)
    assert s["status"] == "ok", s["reason"]
    assert same_run(out, ref_out) == [] and s["e_rms_m"] == ref["e_rms_m"]
    assert sorted(p.name for p in (out / "processes").glob("link*.log")) == ["link%02d.log" % i for i in range(1, 11)]


@pytest.mark.slow
@needs("micropython")
@pytest.mark.parametrize("bus,wire,name,checks,stall", [("uart", "pty", "reference.toml", False, 0.15),
                                                        ("can", "socket", "reference.toml", False, 0.15),
                                                        ("can", "socket", "reference-ft.toml", True, 0.05)])
def test_lockstep_result_survives_stalls(bus, wire, name, checks, stall, tmp_path, monkeypatch):
    """Lockstep: no time passes between SYNCs, so a stall must change nothing. The host
    stops before tick 31, and link 5 inside tick 60 (links 6-10 hear nothing, links 1-4
    wait for the goal), for 150 ms: longer than a link's idle wait (100 ms) and its
    silent-bus watchdog (the default watchdog_ms, 50 ms), which once braked the links
    whatever the clock (neighbour checks off: a neighbour silent for longer than the hop
    timeout is bridged, as a dead one must be). With neighbour checks (reference-ft) for 50 ms: link 6 waits for
    K_5 up to its lockstep hop timeout (100 ms) before it bridges it, where a 2 ms timeout
    once bridged a late packet on a busy machine and the run no longer repeated. The
    joint states of tick 90 reach the links 100 ms after the tick's SYNC (their own wire,
    held up), which a link once did not wait for: it sampled tick 89's. The in-process
    run to the last digit, every link running."""
    procs = []
    real_start, real_exchange = processes.Cluster.start, wallclock.Exchange
    real_send = processes.JointIO.send

    def send(self, frame):
        if m.Decoder().decode(frame)[4][0] == 90:
            threading.Timer(0.1, real_send, (self, frame)).start()
        else:
            real_send(self, frame)

    def start(self):
        real_start(self)
        procs.extend(self.procs)

    def stalling_exchange(*a, **kw):
        exchange = real_exchange(*a, **kw)

        def stalled(frames, k, deadline):
            if k == 31:
                time.sleep(stall)
            if k == 60:
                os.kill(procs[4].pid, signal.SIGSTOP)
                threading.Timer(stall, os.kill, (procs[4].pid, signal.SIGCONT)).start()
            return exchange(frames, k, deadline)
        return stalled
    monkeypatch.setattr(processes.Cluster, "start", start)
    monkeypatch.setattr(wallclock, "Exchange", stalling_exchange)
    monkeypatch.setattr(processes.JointIO, "send", send)
    s, out = run_scenario(scenario(name, watchdog_ms=None, checks=checks), tmp_path / "p", mode="processes",
                          quiet=True, make_plots=False, bus=bus, lockstep=True, wire=wire)
    ref, ref_out = run_scenario(scenario(name, watchdog_ms=None, checks=checks), tmp_path / "i", quiet=True,
                                make_plots=False)
    assert s["status"] == "ok", s["reason"]
    assert [(n["state"], n["faults"]) for n in s["nodes"]] == [("run", [])] * 10
    assert same_run(out, ref_out) == []


@pytest.mark.slow
@needs("micropython")
def test_processes_are_cleaned_up_on_error():
    """A node that dies at boot aborts with its traceback, and nothing is left behind."""
    sc = scenario(seconds=0.5)
    cl = processes.Cluster(sc, bus="uart", ready_timeout=10,
                           entry="raise ValueError('boom ' + %r)\n")
    with pytest.raises(Aborted) as e:
        with cl:
            pass
    assert "boom" in str(e.value)
    pids = [p.pid for p in cl.procs]
    assert pids and not _alive(pids)


@pytest.mark.slow
@needs("micropython")
def test_processes_are_cleaned_up_on_interrupt(tmp_path, monkeypatch):
    """Ctrl-C (KeyboardInterrupt inside the run, here from its 10th tick) ends the run as
    aborted, children reaped."""
    seen = {}
    real_start, real_run = processes.Cluster.start, ControlLoop.run

    def start(self):
        real_start(self)
        seen["pids"] = [p.pid for p in self.procs]

    def interrupt(t, total):
        if t >= 0.08:
            raise KeyboardInterrupt()

    monkeypatch.setattr(processes.Cluster, "start", start)
    monkeypatch.setattr(ControlLoop, "run", lambda self, exchange, progress=None, schedule=None:
                        real_run(self, exchange, interrupt, schedule))
    s, _ = run_scenario(scenario(seconds=30.0), tmp_path, mode="processes", quiet=True, make_plots=False, bus="can")
    assert s["status"] == "aborted" and "interrupt" in s["reason"]
    deadline = time.monotonic() + 10
    while _alive(seen["pids"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(seen["pids"])


# ---- the wall-clock schedule on a scripted clock ---------------------------------------
PERIOD = 0.010     # 100 Hz: every tick on the plant's 1 ms grid
CYCLE = 0.001      # what one bus cycle costs on the scripted clock


class ScriptedClock:
    """now() and sleep() of a clock that moves only when told: sleep(s) lands `late[n]`
    after its due time on the n-th call (default on time)."""

    def __init__(self, late=None):
        self.t = 100.0
        self.calls = 0
        self.late = late or {}

    def now(self):
        return self.t

    def sleep(self, s):
        self.calls += 1
        self.t += s + self.late.get(self.calls, 0.0)


def scripted_run(exchange_cost=CYCLE, answer_by_deadline=False, skip_tick=None, stall_at=None,
                 late=None, world_waits=True, pause_at=None):
    """hil2 at 100 Hz for 0.5 s in process on a scripted clock: every cycle costs
    `exchange_cost`; the host stalls 40 ms after the tick at `stall_at` s, its sleep
    before a tick lands late as in `late`, the bus is silent at tick `skip_tick`, a VM
    pause of 30 ms is absorbed at tick `pause_at`. -> (loop, clock)"""
    loop = ControlLoop(scenario("hil2.toml", seconds=0.5, control_rate_hz=1 / PERIOD), "inprocess")
    bus = inprocess.LoopbackBus([], loop.gp.on_frame)
    bus.agents = inprocess.make_agents(loop.sc, bus.send, loop.auth)
    clock = ScriptedClock(late)
    stalled = []

    def exchange(frames, k, deadline):
        if k != skip_tick and (not answer_by_deadline or clock.t + exchange_cost <= deadline):
            bus.run(frames)
        clock.t += exchange_cost
        if k == pause_at:   # the deadline absorbed a pause: the cycle took that much longer
            clock.t += 0.030
            return 0.030
        return 0.0

    def progress(t, total):
        if stall_at is not None and t >= stall_at and not stalled:
            stalled.append(t)
            clock.t += 0.040

    loop.stats.vm_pauses = {"count": 0, "total_ms": 0.0, "ticks_moved": 0, "moved_ms": 0.0}
    schedule = wallclock.Schedule(loop.stats, world_waits=world_waits, now=clock.now, sleep=clock.sleep)
    assert loop.run(exchange, progress, schedule).status == "ok", loop.stats.reason
    return loop, clock


def test_a_host_stall_moves_the_schedule_and_is_not_a_missed_cycle():
    """When the simulator itself opens a tick late (here a 40 ms stall after t = 0.2 s)
    the simulated world waits: the schedule moves, the bus keeps its whole period; one
    late host tick, no missed cycle."""
    loop, clock = scripted_run(stall_at=0.2, answer_by_deadline=True)
    st = loop.stats
    assert st.missed_cycles == 0 and st.late_host_ticks == 1
    assert st.host_lag_max_ms == pytest.approx((0.040 + CYCLE - PERIOD) * 1e3, abs=1e-6)
    assert st.wall_seconds == pytest.approx(0.5 + (0.040 + CYCLE - PERIOD) + CYCLE, abs=1e-9)


def test_a_silent_bus_is_a_missed_cycle():
    loop, _ = scripted_run(skip_tick=30)
    assert loop.stats.missed_cycles == 1 and loop.stats.late_host_ticks == 0
    assert loop.rec.arrays()["late"].sum() == 1


def test_a_host_that_wakes_late_moves_the_schedule():
    """The same rule when the stall falls in the host's sleep before a tick (its 24th):
    it opens 30 ms late and still gets its whole period. A wake-up late by under 1 ms
    only shortens the tick (no late host tick), and the cycle still fits."""
    loop, _ = scripted_run(late={24: 0.030, 30: 0.0009}, answer_by_deadline=True)
    st = loop.stats
    assert st.missed_cycles == 0 and st.late_host_ticks == 1
    assert st.host_lag_max_ms == pytest.approx(30.0, abs=1e-6)


def test_with_a_real_plant_the_schedule_stays_and_late_ticks_miss():
    """HIL --real-plant: the arm does not wait for a host that stalls. After the 40 ms
    stall the ticks open late (lags 31, 22, 13, 4 ms: each catches up a period less a
    cycle) until the host is back on time; those whose cycle no longer fits before the
    fixed deadline miss (lag > PERIOD - CYCLE)."""
    loop, _ = scripted_run(stall_at=0.2, answer_by_deadline=True, world_waits=False)
    lags, lag = [], 0.040 + CYCLE - PERIOD
    while lag > 0.001:
        lags.append(lag)
        lag -= PERIOD - CYCLE
    st = loop.stats
    assert st.late_host_ticks == len(lags) == 4
    assert st.missed_cycles == sum(1 for x in lags if x > PERIOD - CYCLE) == 3
    assert st.wall_seconds == pytest.approx(0.5 + CYCLE, abs=1e-9)   # the end stays where it was


def test_a_pause_the_deadline_absorbed_moves_every_later_tick():
    """A VM pause the exchange absorbed (desktop emulation) moves the schedule by itself:
    the next ticks open on time for the moved schedule, no late host tick."""
    loop, _ = scripted_run(pause_at=20)
    st = loop.stats
    assert st.late_host_ticks == 0 and st.missed_cycles == 0
    assert st.vm_pauses["ticks_moved"] == 1 and st.vm_pauses["moved_ms"] == pytest.approx(30.0)
    assert st.wall_seconds == pytest.approx(0.5 + CYCLE + 0.030, abs=1e-9)
