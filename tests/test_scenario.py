"""Scenario files: every error names the file, the line and the field."""
import re
from pathlib import Path

import pytest

from host.scenario.loader import ScenarioError, load

REF = Path(__file__).resolve().parents[1] / "scenarios" / "reference.toml"


def mutate(tmp_path, old, new, count=1):
    text = REF.read_text()
    assert old in text
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, count))
    return p, p.read_text()


def line_no(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_reference_loads():
    sc = load(REF)
    assert sc.n == 10 and len(sc.agent_configs) == 10 and len(sc.knots) == 6
    assert sc.arm["payload"]["mass"] == 10.0
    assert sc.agent_configs[0]["behaviours"]["proxy"]["weight"] == 1.0
    assert "centering" not in sc.agent_configs[0]["behaviours"]   # only written behaviours are on


@pytest.mark.parametrize("old,new,field,needle,msg", [
    ("mass = 10.0\ninertia = [0.05", "mas = 10.0\ninertia = [0.05", "robot.link.mas", "mas = 10.0", "unknown field"),
    ("wp = 500.0", "wp = -500.0", "rmdac.rotation.wp", "wp = -500.0", "must be >= 0"),
    ("control_rate_hz = 120.0", "control_rate_hz = \"fast\"", "simulation.control_rate_hz", "control_rate_hz", "expected a number"),
    ("links = 10", "links = 0", "robot.links", "links = 0", "must be >= 1"),
    ("angle = 1.57\n\n[[trajectory.knot]]\ninterval = [10.0, 16.0]", "angle = 1.57\n\n[[trajectory.knot]]\ninterval = [10.0, 9.0]",
     "trajectory.knot[1].interval", "interval = [10.0, 9.0]", "t1 > t0"),
    ("centroid = [-0.375, 0.0, 0.0]", "centroid = [-0.375, 0.0]", "robot.link.centroid", "centroid = [-0.375, 0.0]", "expected 3 numbers"),
    ("type = \"revolute\"", "type = \"ball\"", "robot.link.type", "type = \"ball\"", "must be one of"),
])
def test_errors_name_file_line_and_field(tmp_path, old, new, field, needle, msg):
    p, text = mutate(tmp_path, old, new)
    with pytest.raises(ScenarioError) as ei:
        load(p)
    e = ei.value
    assert e.path == str(p) and e.field == field and msg in str(e)
    assert int(e.line) == line_no(text, needle), str(e)
    assert str(p) in str(e) and field in str(e)


def test_missing_required_field(tmp_path):
    p, text = mutate(tmp_path, "duration = 40.0\n", "")
    with pytest.raises(ScenarioError, match=r"simulation.duration: missing required field"):
        load(p)


def test_syntax_error_has_line(tmp_path):
    p, text = mutate(tmp_path, "wv = 800.0", "wv = = 800.0")
    with pytest.raises(ScenarioError) as ei:
        load(p)
    assert int(ei.value.line) == line_no(text, "wv = = 800.0")


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="nope.toml"):
        load(tmp_path / "nope.toml")


def test_cli_reports_scenario_error(tmp_path, capsys):
    from host.cli import main
    p, _ = mutate(tmp_path, "wp = 500.0", "wp = -1.0")
    assert main(["run", str(p), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"bad.toml:\d+: rmdac.rotation.wp: must be >= 0", err), err


def test_link_override_changes_only_named_fields(tmp_path):
    text = REF.read_text() + """
[behaviours.centering]
kq = 50.0

[[robot.override]]
links = [9]
brake_at_start = true
behaviours = { centering = { kw = 3.0 } }
"""
    p = tmp_path / "ov.toml"
    p.write_text(text)
    sc = load(p)
    assert sc.links[8]["brake_at_start"] and not sc.links[7]["brake_at_start"]
    c9 = sc.agent_configs[8]["behaviours"]["centering"]
    c8 = sc.agent_configs[7]["behaviours"]["centering"]
    assert (c9["kq"], c9["kw"]) == (50.0, 3.0) and (c8["kq"], c8["kw"]) == (50.0, 20.0)


def test_safety_watchdog_ms_reaches_the_agent(tmp_path):
    """[behaviours.safety] watchdog_ms: an agent built from the scenario's link config
    brakes on a bus silent for longer than that, not before."""
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    p, _ = mutate(tmp_path, "[behaviours.proxy]\n", "[behaviours.safety]\nwatchdog_ms = 20\n\n[behaviours.proxy]\n")
    agent = LinkAgent(load(p).agent_configs[0], SimHAL(lambda buf, n: None))
    clock = [0]
    agent.hal.ticks_us = lambda: clock[0]
    agent.on_sync(0)
    clock[0] = 15_000
    assert agent.idle() is False          # 15 ms without SYNC: under the scenario's 20 ms
    clock[0] = 25_000
    assert agent.idle() is True           # 25 ms: lost bus, braked (the default is 50 ms)
    p, text = mutate(tmp_path, "[behaviours.proxy]\n", "[behaviours.safety]\nwatchdog_ms = 0\n\n[behaviours.proxy]\n")
    with pytest.raises(ScenarioError) as ei:
        load(p)
    assert ei.value.field == "behaviours.safety.watchdog_ms" and int(ei.value.line) == line_no(text, "watchdog_ms = 0")


def test_neighbour_checks_are_on_unless_a_scenario_turns_them_off(tmp_path):
    """Fault tolerance by default: a scenario that writes no [behaviours.neighbours] gets
    depth-1 checks and bridging (every link but the first keeps its proximal neighbour's
    DH); depth = 0 turns them off, for the arm or for chosen links."""
    sc = load(REF)
    assert "neighbours" not in REF.read_text()
    assert "neighbours" not in sc.agent_configs[0]
    for i in range(1, 10):
        nb = sc.agent_configs[i]["neighbours"]
        assert nb["dh"] == [["revolute", 0.0, 0.0, 0.75, 0.0]] and nb["tol"] == 1e-2 and "to_host" not in nb
    off = tmp_path / "off.toml"
    off.write_text('extends = "%s"\n[behaviours.neighbours]\ndepth = 0\n' % REF)
    assert not any("neighbours" in c for c in load(off).agent_configs)
    some = tmp_path / "some.toml"
    some.write_text('extends = "%s"\n[[robot.override]]\nlinks = [4, 7]\nbehaviours.neighbours.depth = 0\n' % REF)
    assert [i + 1 for i, c in enumerate(load(some).agent_configs) if "neighbours" in c] == [2, 3, 5, 6, 8, 9, 10]
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "%s"\n[behaviours.neighbours]\ndepth = -1\n' % REF)
    with pytest.raises(ScenarioError, match="must be >= 0"):
        load(bad)
