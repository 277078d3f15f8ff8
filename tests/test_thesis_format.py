"""The thesis's scenario directory format (Appendix C): parsing, errors naming file,
line and offending text, and the convert round trip."""
import shutil
from pathlib import Path

import pytest

from host.cli import main
from host.scenario.loader import ScenarioError, convert_thesis, load

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "scenarios" / "thesis-format" / "reference.scenario"


def test_sample_directory_equals_the_reference_toml():
    a, b = load(SAMPLE), load(ROOT / "scenarios" / "reference.toml")
    assert a.name == "reference" and a.n == 10
    assert a.agent_configs == b.agent_configs
    assert a.arm == b.arm and a.rmdac == b.rmdac and a.duration == b.duration
    assert [k["position"] for k in a.knots] == [k["position"] for k in b.knots]
    assert all(abs(k["angle"] - 1.57) < 1e-12 for k in a.knots)


def test_convert_round_trip(tmp_path):
    out = tmp_path / "ref.toml"
    assert main(["convert", str(SAMPLE), "-o", str(out), "--quiet"]) == 0
    assert load(out).raw == load(SAMPLE).raw


def test_convert_round_trip_with_obstacles_overrides_and_step(tmp_path):
    d = tmp_path / "mixed.scenario"
    shutil.copytree(SAMPLE, d)
    robot = (d / "theRobot.rbt").read_text()
    # link 9: a fail-safe brake from the start; links 1-9: RMOA
    parts = robot.split("define{link}")
    for i in range(1, 10):
        parts[i] = parts[i].replace("    define{controller}", """    define{controller}
        name = resolved_motion_obstacle_avoidance
        @ eta = 1.000e+02
        @ clearance = 7.500e-01
    end{controller}
    define{controller}""", 1)
    parts[9] = parts[9].replace("    @ damping", "    @ brake_at_start = 1\n    @ damping", 1)
    (d / "theRobot.rbt").write_text("define{link}".join(parts))
    (d / "theGoals.dat").write_text((d / "theGoals.dat").read_text() + """
define{globalgoal}
    name = resolved_motion_obstacle_avoidance
    @ ControlRate = 1.200e+02
end{globalgoal}
""")
    (d / "theObstacle.obs").write_text("""define{obstacle}
    name = ball
    @ radius = 0.1250e+00
    position = [<1.00e+00 0.00e+00 0.00e+00 1.00e+00> <0.00e+00 1.00e+00 0.00e+00 -0.75e+00>
                <0.00e+00 0.00e+00 1.00e+00 0.00e+00> <0.00e+00 0.00e+00 0.00e+00 1.00e+00>]
    velocity = <0.00e+00 0.00e+00 0.00e+00 0.00e+00 0.00e+00 0.00e+00>
    define{knotpoint}
        interval = 0.00e+00 40.00e+00
        @ type = step_trajectory
        position = [<1.00e+00 0.00e+00 0.00e+00 1.00e+00> <0.00e+00 1.00e+00 0.00e+00 -0.50e+00>
                    <0.00e+00 0.00e+00 1.00e+00 0.00e+00> <0.00e+00 0.00e+00 0.00e+00 1.00e+00>]
        velocity = <0.00e+00 0.00e+00 0.00e+00 0.00e+00 0.00e+00 0.00e+00>
    end{knotpoint}
end{obstacle}
""")
    sc = load(d)
    assert sc.obstacles[0]["position"] == [1.0, -0.75, 0.0] and sc.obstacles[0]["knot"][0]["type"] == "step"
    assert sc.links[8]["brake_at_start"] and not sc.links[7]["brake_at_start"]
    assert "rmoa" in sc.behaviours[0] and "rmoa" not in sc.behaviours[9]
    assert "assertions" in sc.behaviours[9]
    out = tmp_path / "mixed.toml"
    convert_thesis(d, out)
    assert load(out).raw == sc.raw


def _broken(tmp_path, fname, old, new):
    d = tmp_path / "broken.scenario"
    shutil.copytree(SAMPLE, d)
    text = (d / fname).read_text()
    assert old in text
    (d / fname).write_text(text.replace(old, new, 1))
    with pytest.raises(ScenarioError) as e:
        load(d)
    return str(e.value), d / fname, (d / fname).read_text()


def _line_no(text, needle):
    return [i for i, line in enumerate(text.splitlines(), 1) if needle in line][0]


@pytest.mark.parametrize("fname, old, new, needle, words", [
    ("theRobot.rbt", "mass = +1.000e+01", "mass = heavy", "mass = heavy", ["mass", "number", "heavy"]),
    ("theRobot.rbt", "    velocity = +0.000e+00", "    velocity = +0.000e+00\n    colour = blue",
     "colour = blue", ["unsupported", "colour"]),
    ("theRobot.rbt", "@ damping = +1.000e+00", "@ dampening = +1.000e+00", "dampening",
     ["unsupported informal", "dampening"]),
    ("theRobot.rbt", "inertia = <+5.000e-02 +4.938e-01 +4.938e-01>", "inertia = <+5.000e-02 +4.938e-01 x>",
     "inertia = <+5.000e-02 +4.938e-01 x>", ["'x'", "number"]),
    ("theRobot.rbt", "name = resolved_motion_force_control", "name = psychic_control", "psychic_control",
     ["unknown local controller"]),
    ("theRobot.rbt", "end{controller}", "end{controler}", "end{controler}", ["does not close"]),
    ("theGoals.dat", "@ Wp = <+1.800e+03 +1.800e+03 +1.800e+03", "@ Wp = <+1.800e+03 +1.700e+03 +1.800e+03",
     "@ Wp", ["Wp", "equal"]),
    ("theGoals.dat", "@ f_coeff = <+0.000e+00", "@ f_coeff = <+1.000e+00", "@ f_coeff", ["f_coeff"]),
    ("theGoals.dat", "@ ControlRate = 1.200e+02", "@ ControlRate = 1.000e+03", "ControlRate = 1.000e+03",
     ["ControlRate"]),
    ("theTrajectory.spt", "interval = 10.00e+00 16.00e+00", "interval = 10.00e+00", "interval = 10.00e+00",
     ["interval", "two times"]),
    ("theTrajectory.spt", "<+0.00e+00 +0.00e+00 +0.00e+00 +1.00e+00>]", "<+0.00e+00 +0.00e+00 +0.00e+00 +2.00e+00>]",
     "position = [", ["last row"]),
    ("theTrajectory.spt", "velocity = <0.00e+00 0.00e+00", "velocity = <1.00e+00 0.00e+00", "velocity = <1.00e+00",
     ["zero final velocities"]),
    ("theTrajectory.spt", "define{knotpoint}\n    interval = 10.00e+00", "define{knotpoint}\n    @ type = wobble\n    interval = 10.00e+00",
     "@ type = wobble", ["type", "wobble"]),
])
def test_malformed_files_name_file_line_and_text(tmp_path, fname, old, new, needle, words):
    msg, path, text = _broken(tmp_path, fname, old, new)
    assert str(path) in msg, msg
    assert ":%d:" % _line_no(text, needle) in msg, msg
    for w in words:
        assert w in msg, msg


def test_unclosed_define_and_missing_files(tmp_path):
    d = tmp_path / "u.scenario"
    shutil.copytree(SAMPLE, d)
    text = (d / "theTrajectory.spt").read_text()
    (d / "theTrajectory.spt").write_text(text[:text.rfind("end{knotpoint}")])
    with pytest.raises(ScenarioError, match=r"theTrajectory.spt:\d+: .*never closed"):
        load(d)
    (d / "theTrajectory.spt").unlink()
    with pytest.raises(ScenarioError, match="theTrajectory.spt.*missing"):
        load(d)
    (d / "notes.txt").write_text("x")
    with pytest.raises(ScenarioError, match="notes.txt"):
        load(d)


def test_schema_errors_after_parsing_still_name_the_directory(tmp_path):
    msg, _, _ = _broken(tmp_path, "theRobot.rbt", "mass = +1.000e+01", "mass = -1.000e+01")
    assert "broken.scenario" in msg and "mass" in msg and ">= 0" in msg


def test_cli_run_accepts_a_directory_and_reports_errors(tmp_path, capsys):
    d = tmp_path / "bad.scenario"
    shutil.copytree(SAMPLE, d)
    (d / "theGoals.dat").write_text("define{globalgoal}\n  name = resolved_motion_adaptive_control\n  @ Wp = 3\nend{globalgoal}\n")
    assert main(["run", str(d), "--out", str(tmp_path / "o"), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "theGoals.dat:3" in err and "Wp" in err
