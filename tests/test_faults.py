"""Fault injection and fault tolerance, in-process (synthetic clock, seeded: the same on a
quiet and a busy machine): short runs of the reference arm with neighbour checks on."""
import numpy as np
import pytest

from host.run import run_scenario
from host.scenario.loader import ScenarioError, from_dict, load, read_toml
from tests.conftest import REPO, needs

T_FAULT = 2.0


def scenario(tmp_path, faults="", duration=5.0, extra=""):
    p = tmp_path / "s.toml"
    p.write_text('extends = "%s"\nname = "t"\n[simulation]\nduration = %g\n%s\n%s'
                 % (REPO / "scenarios" / "reference-ft.toml", duration, extra, faults))
    return load(p)


def run(sc, tmp_path, name):
    s, out = run_scenario(sc, tmp_path / name, quiet=True, make_plots=False)
    return s, np.load(out / "timeseries.npz")


@pytest.fixture(scope="module")
def fault_free(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ff")
    return run(scenario(tmp), tmp, "ff")[0]


@pytest.mark.slow
def test_dead_node_costs_one_braked_joint(tmp_path, fault_free):
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_crash"\nlink = 5\nstart = %g\n' % T_FAULT)
    s, d = run(sc, tmp_path, "crash")
    _degraded(s, [5])
    after = d["t"] > T_FAULT + 0.05
    assert np.ptp(d["q"][after, 4]) < 2e-3            # joint 5 held by its brake
    assert np.ptp(d["q"][after, 3]) > 0.05            # its neighbours still move
    team = s["faults"]["team"]
    assert [e["link"] for e in team] == [5] and team[0]["text"].startswith("dropped")
    assert 5 not in s["faults"]["members"]
    assert [n["link"] for n in s["nodes"]] == [1, 2, 3, 4, 6, 7, 8, 9, 10] and s["nodes_missing"] == [5]
    _dead_in_time_series(d, 5, team[0]["t"])
    rep = [r for r in s["faults"]["reports"] if r["link"] == 6]
    assert rep and "neighbour_silent" in rep[0]["text"]
    assert s["e_rms_m"] <= 2 * fault_free["e_rms_m"]


def _degraded(s, links):
    """The run went to its end with exactly `links` braked or out of the team, each named
    with why in summary.json `degraded` and in its reason."""
    assert s["status"] == "degraded", s["reason"]
    assert [x["link"] for x in s["degraded"]] == links and all(x["reasons"] for x in s["degraded"])
    assert s["reason"].startswith("link %d: " % links[0])


def _dead_in_time_series(d, link, t_drop):
    """The time series says which link is dead: no torque (state -1) from when it died,
    out of the team (member 0) from when the host dropped it; the others run."""
    after = d["t"] >= t_drop
    assert np.all(d["state"][after, link - 1] == -1) and np.all(d["member"][after, link - 1] == 0)
    assert np.all(d["member"][~after, link - 1] == 1)
    others = np.delete(d["state"][after], link - 1, axis=1)
    assert np.all(others == 1)


@pytest.mark.slow
def test_node_that_comes_back_is_readmitted(tmp_path):
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_silent"\nlink = 3\nstart = 1.0\nend = 1.5\n', duration=3.0)
    s, d = run(sc, tmp_path, "silent")
    assert s["status"] == "ok"
    texts = [(e["link"], e["text"].split(":")[0]) for e in s["faults"]["team"]]
    assert texts == [(3, "dropped"), (3, "re-admitted")]
    assert 3 in s["faults"]["members"]
    late = d["t"] > 2.0
    assert np.ptp(d["q"][late, 2]) > 1e-3            # joint 3 moves again
    assert s["faults"]["per_fault"][0]["recovered"] == "yes"


@pytest.mark.slow
def test_compute_fault_found_by_its_neighbour_within_three_cycles(tmp_path, fault_free):
    sc = scenario(tmp_path, '[[fault]]\nkind = "compute_fault"\nlink = 4\nstart = %g\noffset = 0.1\n' % T_FAULT)
    s, d = run(sc, tmp_path, "alu")
    _degraded(s, [4])
    rep = [r for r in s["faults"]["reports"] if "neighbour_disagrees" in r["text"] and r["link"] == 5]
    assert rep and "link 4" in rep[0]["text"]
    assert rep[0]["t"] - T_FAULT <= 3 / 120.0 + 1e-9
    assert s["nodes"][3]["state"] == "braked"         # by the host (its last STATUS)
    assert np.ptp(d["q"][d["t"] > T_FAULT + 0.05, 3]) < 2e-3
    assert s["e_rms_m"] <= 2 * fault_free["e_rms_m"]


TIP_FAULT = '[[fault]]\nkind = "compute_fault"\nlink = 10\nstart = %g\noffset = 0.1\n' % T_FAULT


@pytest.mark.slow
def test_compute_fault_of_the_tip_found_by_the_host_within_three_cycles(tmp_path, fault_free):
    """The tip has no distal neighbour: with check_tip the host recomputes K_N from the
    K_{N-1} link N-1 also sends it, brakes and drops the tip after two failed checks and
    bridges it; without, nothing finds the fault and the tip stays in the team."""
    sc = scenario(tmp_path, TIP_FAULT, extra="[behaviours.neighbours]\ncheck_tip = true\n")
    s, d = run(sc, tmp_path, "tip")
    _degraded(s, [10])
    team = s["faults"]["team"]
    assert team[0]["link"] == 10 and team[0]["text"].startswith("host: K_10 off by 0.1")
    assert team[0]["t"] - T_FAULT <= 3 / 120.0 + 1e-9
    assert "bridged by the host" in [e["text"] for e in team if e["link"] == 10]
    assert s["nodes"][9]["state"] == "braked" and 10 not in s["faults"]["members"]
    assert np.ptp(d["q"][d["t"] > T_FAULT + 0.05, 9]) < 2e-3
    assert s["e_rms_m"] <= 2 * fault_free["e_rms_m"]
    unchecked = run(scenario(tmp_path, TIP_FAULT), tmp_path, "tip-unchecked")[0]
    assert 10 in unchecked["faults"]["members"] and unchecked["e_rms_m"] > 2 * fault_free["e_rms_m"]


@pytest.mark.slow
def test_fault_free_run_latches_nothing(fault_free):
    # the joint response checks (frozen encoder on by default, the motor check on in
    # reference-ft) and the host's torque check stay quiet on a healthy arm
    assert [(n["link"], n["state"], n["faults"]) for n in fault_free["nodes"]] == [
        (i, "run", []) for i in range(1, 11)]


@pytest.mark.slow
def test_torque_compute_fault_found_by_the_host_in_its_tick(tmp_path, fault_free):
    sc = scenario(tmp_path, '[[fault]]\nkind = "compute_fault"\nlink = 4\nstart = %g\ntarget = "torque"\n'
                  'offset = 20.0\n' % T_FAULT)
    s, d = run(sc, tmp_path, "alu-torque")
    _degraded(s, [4])
    team = s["faults"]["team"]
    assert team[0]["link"] == 4 and "torque off by 20" in team[0]["text"]
    assert team[0]["t"] == T_FAULT                     # the first wrong torque, not one later
    assert [e["text"].split(":")[0] for e in team[1:]] == ["dropped"]
    assert s["nodes"][3]["state"] == "braked" and s["nodes"][3]["faults"] == ["neighbour_disagrees"]
    bridged = [r for r in s["faults"]["reports"] if r["link"] == 5 and "neighbour_silent" in r["text"]]
    assert bridged and bridged[0]["t"] - T_FAULT <= 1 / 120.0 + 1e-9   # NODE_OUT with the next tick
    assert np.ptp(d["q"][d["t"] > T_FAULT + 0.05, 3]) < 2e-3
    assert s["e_rms_m"] <= 2 * fault_free["e_rms_m"]


def test_host_brakes_a_link_whose_torque_disagrees_with_its_components(tmp_path):
    from bus_protocol import messages as m
    from bus_protocol.states import F_NEIGHBOUR_DISAGREES, RUN
    from host.controller import HostController
    gp = HostController(scenario(tmp_path))
    gp.begin(7, 7 / 120.0)

    def torque(link, u, comps):
        return gp.on_frame(m.encode(m.TORQUE, link, m.HOST, 0, (7, u, RUN) + comps))

    # reference-ft: proxy weight 1, assertions 1, no local PD, no joint limit: u = c0 + c1 + c4
    assert torque(2, 7.25 + 0.5, (7.25, 0.5, 99.0, 99.0, 0.0, 0.0)) == []
    assert torque(3, -1234.5678 - 0.001, (-1234.5678, -0.001, 0.0, 0.0, 0.0, 0.0)) == []   # float32 rounding
    out = torque(4, 7.25 + 0.5 + 0.01, (7.25, 0.5, 0.0, 0.0, 0.0, 0.0))
    assert [m.Decoder().decode(f)[4][:2] for f in out] == [(m.CMD_BRAKE, float(F_NEIGHBOUR_DISAGREES))]
    assert m.Decoder().decode(out[0])[2] == 4 and not gp.member[3] and gp.member[1] and gp.member[2]


@pytest.mark.slow
def test_frozen_encoder_latches_sensor_implausible(tmp_path, fault_free):
    sc = scenario(tmp_path, '[[fault]]\nkind = "encoder_dead"\nlink = 6\nstart = %g\n' % T_FAULT)
    s, d = run(sc, tmp_path, "frozen")
    _degraded(s, [6])
    rep = s["faults"]["reports"]
    assert [r["link"] for r in rep] == [6] and "sensor_implausible" in rep[0]["text"]
    # frozen_cycles = 3 frozen samples: T + 1, 2, 3 cycles (the arm's torque moves 20 N m)
    assert rep[0]["t"] - T_FAULT <= 3 / 120.0 + 1e-9
    assert s["nodes"][5]["state"] == "braked"
    assert s["e_rms_m"] <= 2 * fault_free["e_rms_m"]


@pytest.mark.slow
def test_dead_motor_flung_against_its_torque_latches_motor_not_responding(tmp_path):
    # at the reference's first knot change (10 s) the arm flings the dead joint against its
    # torque; reference-ft turns the motor check on
    sc = scenario(tmp_path, '[[fault]]\nkind = "motor_dead"\nlink = 2\nstart = 10.0\n', duration=11.0)
    s, d = run(sc, tmp_path, "dead-motor")
    _degraded(s, [2])
    rep = s["faults"]["reports"]
    assert [r["link"] for r in rep] == [2] and "motor_not_responding" in rep[0]["text"]
    assert 0.150 <= rep[0]["t"] - 10.0 <= 0.5        # respond_ms 150 ms at the least
    assert np.ptp(d["q"][d["t"] > rep[0]["t"] + 0.05, 1]) < 2e-3   # held by its brake


@pytest.mark.slow
def test_faults_are_deterministic(tmp_path):
    sc = scenario(tmp_path, '[[fault]]\nkind = "frame_loss"\nrate = 0.05\n', duration=1.5)
    a = run(sc, tmp_path, "a")[0]
    b = run(sc, tmp_path, "b")[0]
    assert a["e_rms_m"] == b["e_rms_m"] and a["faults"]["bus"] == b["faults"]["bus"]
    assert a["faults"]["bus"]["lost"] > 0


@pytest.mark.slow
def test_every_link_reports_its_status_on_a_lossy_bus(tmp_path):
    """30 % frame loss (with the 10 % of loss10) at the end of a run loses PINGs and
    STATUS frames: the host asks again, and every link's health reaches the summary
    (one PING round heard none of the ten links here); a link that never answers is
    named in nodes_missing."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "frame_loss"\nrate = 0.1\n'
                  '[[fault]]\nkind = "frame_loss"\nrate = 0.3\nstart = 0.9\nseed = 1\n', duration=1.0)
    s = run(sc, tmp_path, "lossy")[0]
    assert s["status"] == "ok" and s["faults"]["bus"]["lost"] > 0
    assert [n["link"] for n in s["nodes"]] == list(range(1, 11)) and s["nodes_missing"] == []


def test_status_is_asked_for_again_where_it_was_lost(tmp_path):
    """wallclock.collect_status (processes, HIL): a PING round whose STATUS frames were lost
    for some links is followed by another that asks again, until every link not known dead
    has answered; a dead link is not waited for, and stays in nodes_missing."""
    from bus_protocol import messages as m
    from host.controller import HostController
    from host.runners import wallclock
    gp = HostController(scenario(tmp_path))
    gp.dead = {6}   # link 7's process is gone

    class Lossy:
        """Answers each PING with the STATUS of the links that round does not lose."""
        def __init__(self):
            self.rounds, self.queue = 0, []

        def send(self, frame):
            self.rounds += 1
            lost = {1: {2, 3, 9}, 2: {3}}.get(self.rounds, set())
            self.queue = [m.encode(m.STATUS, i, m.HOST, 0, (0, 1, 0, 0, 0, 0, 0, 0, 0, 0))
                          for i in range(1, 11) if i not in lost and i != 7]

        def recv(self, timeout):
            return self.queue.pop(0) if self.queue else None
    t = Lossy()
    wallclock.collect_status(gp, t, timeout=0.3, tries=6)
    assert t.rounds == 3 and sorted(gp.status) == [1, 2, 3, 4, 5, 6, 8, 9, 10]
    assert gp.status_missing() == [] and gp.status_missing(dead=True) == [7]


@pytest.mark.parametrize("text, field, line", [
    ('[[fault]]\nkind = "node_crash"\nstart = 1.0\n', "fault[0].link", 1),
    ('[[fault]]\nkind = "motor_weak"\nlink = 2\nrate = 0.5\n', "fault[0].rate", 4),
    ('[[fault]]\nkind = "frame_loss"\nstart = 3.0\nend = 2.0\n', "fault[0].end", 4),
    ('[[fault]]\nkind = "node_silent"\nlink = 2\nperiod = 2.0\n', "fault[0].duty", 1),
    ('[[fault]]\nkind = "meteor"\nlink = 2\n', "fault[0].kind", 2),
    ('[[fault]]\nkind = "sensor_noise"\nlink = 11\n', "fault[0].link", 3),
])
def test_bad_fault_entries_name_file_line_and_field(tmp_path, text, field, line):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    base, sources = read_toml(REPO / "scenarios" / "reference.toml")
    data, extra = read_toml(p)
    data.pop("fault")
    with pytest.raises(ScenarioError) as e:
        from_dict(dict(base, fault=read_toml(p)[0]["fault"]), p, extra + sources)
    assert e.value.field == field and e.value.line == line and e.value.path == str(p)


@pytest.mark.slow
@pytest.mark.parametrize("bus", ["can", "uart"])
@needs("micropython")
def test_sigkill_of_a_node_process_costs_one_joint(bus, tmp_path):
    """Processes mode, lockstep: link 5's MicroPython process is killed (SIGKILL); the host
    goes on without it, link 6 bridges it, its joint is braked. On the UART ring the nodes
    route round the dead one: link 4 sends up what it sent down, the host puts frames for
    links 6.. into the tip's end, and they take them from down."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_crash"\nlink = 5\nstart = 1.5\n', duration=3.0)
    s, out = run_scenario(sc, tmp_path / "p", mode="processes", bus=bus, lockstep=True, quiet=True,
                          make_plots=False)
    d = np.load(out / "timeseries.npz")
    _degraded(s, [5])
    assert s["degraded"][0]["reasons"][0] == "its process exited"
    team = [(e["link"], e["text"].split(" ")[0]) for e in s["faults"]["team"]]
    assert team == [(5, "process"), (5, "dropped:")]      # no other node went down with it
    assert any(r["link"] == 6 and "neighbour_silent" in r["text"] for r in s["faults"]["reports"])
    assert np.ptp(d["q"][d["t"] > 1.6, 4]) < 2e-3
    # every live node's last STATUS reached the host (on the ring: from beyond the dead one too)
    assert [n["link"] for n in s["nodes"]] == [1, 2, 3, 4, 6, 7, 8, 9, 10] and s["nodes_missing"] == [5]
    _dead_in_time_series(d, 5, s["faults"]["team"][1]["t"])
    ref, _ = run_scenario(sc, tmp_path / "i", quiet=True, make_plots=False)
    assert s["e_rms_m"] == pytest.approx(ref["e_rms_m"], rel=0.05)   # as in-process


@pytest.mark.slow
@pytest.mark.parametrize("link, bus, extra", [(4, "uart", ""), (10, "can", "[behaviours.neighbours]\ncheck_tip = true\n"),
                                              (10, "uart", "[behaviours.neighbours]\ncheck_tip = true\n")])
@needs("micropython")
def test_compute_fault_on_a_uart_ring_as_in_process(link, bus, extra, tmp_path):
    """The check, the report to the host and its brake also work across a UART ring (the
    overheard K_3 passed on by link 4, the report going round to the host), and the host's
    check of the tip (K_9 for the host through the tip, on the ring) on CAN and the ring."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "compute_fault"\nlink = %d\nstart = 1.5\noffset = 0.1\n' % link,
                  duration=2.5, extra=extra)
    s, _ = run_scenario(sc, tmp_path / "p", mode="processes", bus=bus, lockstep=True, quiet=True, make_plots=False)
    ref, _ = run_scenario(sc, tmp_path / "i", quiet=True, make_plots=False)
    _degraded(s, [link])
    assert s["status"] == ref["status"] and s["degraded"] == ref["degraded"]
    got = sorted((r["link"], r["text"].split(":")[0], r["t"]) for r in s["faults"]["reports"])
    want = sorted((r["link"], r["text"].split(":")[0], r["t"]) for r in ref["faults"]["reports"])
    assert [g[:2] for g in got] == [w[:2] for w in want]
    # when: the host's team changes (the report's COMMAND, not its LOG line, which waits
    # for a free moment after the cycle)
    assert [(e["link"], e["t"]) for e in s["faults"]["team"]] == [(e["link"], e["t"]) for e in ref["faults"]["team"]]
    assert s["e_rms_m"] == pytest.approx(ref["e_rms_m"], rel=0.05)


@pytest.mark.slow
@needs("micropython")
def test_torque_fault_braked_by_the_host_in_processes_mode(tmp_path):
    """The torque report comes back on the joint's own wire, not the bus: the host's BRAKE
    for a wrong torque still goes out, and the link is braked one tick later (a TORQUE
    already on its way is applied once)."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "compute_fault"\nlink = 4\nstart = 1.5\ntarget = "torque"\n'
                  'offset = 20.0\n', duration=2.5)
    s, _ = run_scenario(sc, tmp_path / "p", mode="processes", bus="can", lockstep=True, quiet=True, make_plots=False)
    _degraded(s, [4])
    assert [(e["link"], e["t"], e["text"].split(":")[0]) for e in s["faults"]["team"]] == [
        (4, 1.5, "host"), (4, 1.5, "dropped")]
    assert s["nodes"][3]["state"] == "braked" and s["nodes"][3]["faults"] == ["neighbour_disagrees"]
    braked = [r for r in s["faults"]["reports"] if r["link"] == 4]
    assert braked and braked[0]["t"] - 1.5 <= 1 / 120.0 + 1e-9


@pytest.mark.slow
@needs("micropython")
def test_a_dead_node_on_a_uart_chain_ends_the_run_cleanly(tmp_path):
    """On a plain UART chain a dead middle node cuts the nodes beyond it off the host: not
    survivable, but the host ends the run in the tick it dies, saying so, instead of
    waiting out its patience or dying on a broken pipe. Up to then the chain tracks."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_crash"\nlink = 5\nstart = 0.5\n', duration=1.5)
    s, out = run_scenario(sc, tmp_path / "u", mode="processes", bus="uart", topology="chain", lockstep=True,
                          quiet=True, make_plots=False)
    assert s["status"] == "aborted"
    assert (out / "run.log").read_text().splitlines()[-1] == "status aborted " + s["reason"]
    assert (out / "processes" / "link05.log").exists()   # each node's stderr, kept
    assert s["reason"].startswith("link 5's node is gone at t=0.500 s") and "links 6..10 are cut off" in s["reason"]
    assert 0.5 - 2 / 120.0 < s["sim_seconds"] < 0.5   # every tick before the fault ran
    assert s["patience"]["expired"] == {}   # ended at once, not after waiting for torques


@pytest.mark.slow
@needs("micropython")   # the report's cost table runs benchmarks/mp_fault_cost.py under it
def test_linkteam_faults_writes_the_report(tmp_path):
    from host.studies import fault_study
    results = fault_study.main(only=("motor-weak-link2",), modes=["in-process"], out=str(tmp_path / "f"))
    assert [(p.stem, s["status"]) for (p, _, _), s in results] == [("reference-ft", "ok"), ("motor-weak-link2", "ok")]
    text = (tmp_path / "f" / "FAULTS.md").read_text()
    row = [line for line in text.splitlines() if line.startswith("| motor-weak-link2 | in-process | ok |")]
    assert len(row) == 1 and "motor_weak link 2 gain=0.5" in row[0]
    cost = [line for line in text.splitlines() if line.startswith("| check d=1 |")]
    assert cost and int(cost[0].split("|")[2]) > 0    # measured under MicroPython just now


BUS_FAULTS = ('[[fault]]\nkind = "frame_loss"\nrate = 0.05\nstart = 0.5\nend = 1.4\n'
              '[[fault]]\nkind = "corrupt"\nlink = 6\nber = 1e-3\nstart = 0.5\n'
              '[[fault]]\nkind = "latency"\nlink = 0\ndelay_ms = 2.0\njitter_ms = 1.0\nstart = 0.5\n')


@pytest.mark.slow
@needs("micropython")
def test_bus_faults_on_the_processes_media(tmp_path):
    """Processes mode, lockstep, UART ring and CAN: after the start transient 5 % of the
    frames on every wire are lost, the wire into link 6 has bit errors, the host's port
    2-3 ms of latency (faults in the media between the node processes). Nobody crashes,
    the receivers' CRC catches the bad frames (links 6 and 7, which overhears K_5, and no
    link before them), and both media lose the same of the host's frames."""
    ff, _ = run_scenario(scenario(tmp_path, duration=1.5), tmp_path / "ff", quiet=True, make_plots=False)
    sc = scenario(tmp_path, BUS_FAULTS, duration=1.5)
    runs = {bus: run_scenario(sc, tmp_path / bus, mode="processes", bus=bus, lockstep=True, quiet=True,
                              make_plots=False)[0] for bus in ("uart", "can")}
    for bus, s in runs.items():
        assert s["status"] == "ok", (bus, s["reason"])
        assert s["faults"]["team"] == []                    # no node died, none went silent
        bad = {n["link"]: n["bad_frames"] for n in s["nodes"]}
        assert bad[7] > 10 and sum(bad[i] for i in range(1, 6)) == 0, (bus, bad)
        assert s["faults"]["bus"]["lost"] > 0 and s["faults"]["bus"]["delayed"] > 0
        assert s["e_rms_m"] <= 2 * ff["e_rms_m"], bus
    assert runs["uart"]["faults"]["bus"] == runs["can"]["faults"]["bus"]


@pytest.mark.slow
@needs("micropython")
def test_a_node_that_reboots_rejoins_the_team_on_can(tmp_path):
    """node_crash with an end in processes mode: SIGKILL at 1 s, the board's process starts
    again at 1.5 s, is reset to the run's clock, re-admitted by the host and by its
    neighbour (link 6 bridged it meanwhile), at the ticks the in-process reboot is."""
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_crash"\nlink = 5\nstart = 1.0\nend = 1.5\n', duration=2.5)
    s, out = run_scenario(sc, tmp_path / "p", mode="processes", bus="can", lockstep=True, quiet=True,
                          make_plots=False)
    ref, _ = run_scenario(sc, tmp_path / "i", quiet=True, make_plots=False)
    assert s["status"] == "ok", s["reason"]
    team = [(e["t"], e["text"].split(" ")[0]) for e in s["faults"]["team"]]
    assert [t for _, t in team] == ["process", "dropped:", "process", "re-admitted"]
    assert [e for e in team if not e[1].startswith("process")] == [
        (e["t"], e["text"].split(" ")[0]) for e in ref["faults"]["team"]]
    assert s["faults"]["members"] == list(range(1, 11)) and s["faults"]["per_fault"][0]["recovered"] == "yes"
    assert [r["text"] for r in s["faults"]["reports"] if r["link"] == 6] == [
        "fault neighbour_silent: link 5 out", "neighbour 5 re-admitted"]
    d = np.load(out / "timeseries.npz")
    down = (d["t"] >= 1.0) & (d["t"] < 1.5)
    assert np.all(d["state"][down, 4] == -1) and np.all(d["state"][d["t"] >= 1.55, 4] == 1)
    assert np.ptp(d["q"][d["t"] > 2.0, 4]) > 1e-3          # joint 5 moves again
    assert s["e_rms_m"] == pytest.approx(ref["e_rms_m"], rel=0.05)
    u, _ = run_scenario(sc, tmp_path / "u", mode="processes", bus="uart", lockstep=True, quiet=True,
                        make_plots=False)
    assert u["status"] == "aborted" and "runs on CAN" in u["reason"]


def test_host_torque_check_is_not_excused_by_an_infinite_component():
    """A TORQUE whose components hold an infinity makes the check's tolerance infinite: it
    must fail (braked, dropped), not pass whatever u is."""
    from pathlib import Path

    from bus_protocol import messages as m
    from bus_protocol.states import RUN
    from host import controller
    from host.scenario.loader import load
    sc = load(Path(REPO) / "scenarios" / "reference.toml")
    gp = controller.HostController(sc)
    gp.tick = 3
    out = gp.on_frame(m.encode(m.TORQUE, 4, 0, 1, (3, 0.0, RUN, float("inf"), 0.0, 0.0, 0.0, 0.0, 0.0)))
    assert out and gp.member[3] is False and "torque off" in gp.events[0][2]


def test_linkteam_run_exits_5_and_says_so_when_the_run_is_degraded(tmp_path, capsys):
    """A finished run with a link out of the team: exit status 5 (0 is ok, 3 aborted) and a
    DEGRADED line on stderr even with --quiet; the run's summary and log say degraded."""
    from host import cli
    p = tmp_path / "s.toml"
    p.write_text('extends = "%s"\nname = "t"\n[simulation]\nduration = 2.2\n[[fault]]\nkind = "node_crash"\n'
                 'link = 5\nstart = %g\n' % (REPO / "scenarios" / "reference-ft.toml", T_FAULT))
    assert cli.main(["run", str(p), "--out", str(tmp_path / "run"), "--quiet", "--no-plots"]) == cli.EXIT_DEGRADED == 5
    err = capsys.readouterr().err
    assert err.startswith("linkteam run: DEGRADED: link 5: ") and "silent for 2 ticks" in err
    import json
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["status"] == "degraded" and err.split("DEGRADED: ")[1].startswith(s["reason"])
    assert (tmp_path / "run" / "run.log").read_text().splitlines()[-1] == "status degraded " + s["reason"]
