"""A run directory is never silently replaced (host/report/run_dir.py RunDir previous=): `linkteam
run` moves a finished run aside to OUT.YYYYmmdd-HHMMSS, `--force` replaces it; a scenario
that extends another runs under its own file's name."""
import pytest

import json

from host.cli import main
from host.scenario.loader import load

from .conftest import REPO, needs


def short(tmp_path, name="short-hil2", top=""):
    p = tmp_path / (name + ".toml")
    p.write_text('extends = "%s"\n%s[simulation]\nduration = 0.1\n' % (REPO / "scenarios" / "hil2.toml", top))
    return p


def test_a_derived_scenario_runs_under_its_own_name(tmp_path):
    assert load(short(tmp_path)).name == "short-hil2"
    assert load(short(tmp_path, "named", 'name = "mine"\n')).name == "mine"


def test_a_second_run_moves_the_first_aside_and_force_replaces(tmp_path, capsys):
    p = short(tmp_path)
    out = tmp_path / "runs" / "r"
    assert main(["run", str(p), "--out", str(out), "--no-plots"]) == 0
    first = json.loads((out / "summary.json").read_text())
    (out / "mine.txt").write_text("a note in the first run")
    assert main(["run", str(p), "--out", str(out), "--no-plots"]) == 0
    aside = [d for d in out.parent.iterdir() if d.name.startswith("r.")]
    assert len(aside) == 1 and (aside[0] / "mine.txt").read_text() == "a note in the first run"
    assert json.loads((aside[0] / "summary.json").read_text()) == first
    assert "moved to %s" % aside[0] in capsys.readouterr().out
    assert "moved to" in (out / "run.log").read_text()
    assert main(["run", str(p), "--out", str(out), "--no-plots", "--force"]) == 0
    assert sorted(d.name for d in out.parent.iterdir()) == sorted(["r", aside[0].name])
    assert not (out / "mine.txt").exists()


@pytest.mark.slow
@needs("micropython")
def test_a_processes_run_to_a_relative_out_from_another_directory(tmp_path, monkeypatch):
    """The node processes start in the repo root: their config paths are absolute."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(short(tmp_path)), "--out", "rel", "--mode", "processes", "--no-plots", "--quiet"]) == 0
    assert json.loads((tmp_path / "rel" / "summary.json").read_text())["status"] == "ok"
