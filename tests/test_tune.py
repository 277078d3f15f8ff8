"""`linkteam tune`: two worker processes on one journal study, the overlay it writes,
the search-space file and `extends` lists."""
import pytest

from host.scenario.loader import ScenarioError, load

optuna = pytest.importorskip("optuna", reason="optuna is not installed (pip install optuna)")

from host.studies import tune, tune_space  # noqa: E402  (needs optuna at run time)
from host.cli import main  # noqa: E402
from tests.test_experiments import ROOT, THESIS  # noqa: E402

pytestmark = pytest.mark.slow


def _short(tmp_path, name, base, duration):
    p = tmp_path / (name + ".toml")
    p.write_text('extends = "%s"\nname = "%s"\n[simulation]\nduration = %s\n' % (base, name, duration))
    return p


def test_two_workers_share_one_journal_study(tmp_path):
    ref = _short(tmp_path, "ref", ROOT / "scenarios" / "reference.toml", 1.0)
    step = _short(tmp_path, "stp", THESIS / "step.toml", 1.5)
    held = _short(tmp_path, "spiral", THESIS / "spiral.toml", 1.0)
    out = tmp_path / "out"
    rc = main(["tune", str(ref), str(step), "--trials", "6", "--workers", "2", "--out", str(out),
               "--study", "shared", "--validate", str(held), "--payloads", "0", "--ship", str(tmp_path / "tuned")])
    assert rc == 0
    study = optuna.load_study(study_name="shared", storage=tune.storage(None, out))
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    trials = [t for t in study.trials if t.state in finished]
    assert len(trials) == 6                                            # none lost, none extra
    assert len({t.number for t in trials}) == 6                        # numbers unique
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 6  # no point drawn twice
    # the rest: a trial begun when the study was full (two workers at its last place), failed so
    others = [t for t in study.trials if t.state not in finished]
    assert all(t.state == optuna.trial.TrialState.FAIL and "surplus" in t.user_attrs for t in others), others
    assert len({t.user_attrs["worker"] for t in study.trials}) <= 2   # the two worker processes
    # nothing held out reaches the objective: trials record the training runs only
    seen = {k for t in trials for k in t.user_attrs if k.startswith("e_rms ")}
    assert "e_rms ref" in seen and seen <= {"e_rms ref", "e_rms stp"}, seen
    # the first trial is the scenario's own gains: the thesis wp
    assert trials[0].params["rmdac.linear.wp"] == 1800.0

    # the overlay reproduces the best trial when a scenario extends it
    best = study.best_trial
    again = tmp_path / "again.toml"
    again.write_text('extends = ["%s", "%s"]\n' % (ref, out / "gains.toml"))
    sc = load(again)
    assert sc.rmdac["linear"]["wp"] == best.params["rmdac.linear.wp"]
    from host.run import run_scenario
    s, _ = run_scenario(sc, tmp_path / "again", quiet=True, make_plots=False)
    assert s["e_rms_m"] == best.user_attrs["e_rms ref"]

    text = (out / "report.md").read_text()
    assert "| ref | yes |" in text and "| spiral | no |" in text and "| ref payload 0 kg | no |" in text
    assert (out / "history.png").stat().st_size > 1000
    shipped = load(tmp_path / "tuned" / "retraction.toml")
    assert shipped.rmdac["linear"]["wp"] == best.params["rmdac.linear.wp"]
    assert "retraction" in shipped.behaviours[0]                       # the thesis row is kept


def test_space_file_changes_and_errors(tmp_path):
    data = {"rmdac": {"linear": {"wp": 100.0, "wv": 10.0, "alpha": 2.0},
                      "rotation": {"wp": 50.0, "wv": 5.0}}}
    space = tune_space.default_space(data)
    assert space["rmdac.linear.wp"] == (25.0, 400.0, True)
    assert "rmdac.linear.beta" not in space                            # a zero gain is not searched
    f = tmp_path / "space.toml"
    f.write_text('exclude = ["rmdac.rotation.u2"]\n\n[behaviours.centering.kq]\nlow = 10.0\nhigh = 300.0\nlog = true\n')
    changed = tune_space.load_space(f, space)
    assert changed["behaviours.centering.kq"] == (10.0, 300.0, True) and "rmdac.rotation.u2" not in changed
    f.write_text('[rmdac.linear.wq]\nlow = 1.0\nhigh = 2.0\n')
    with pytest.raises(ScenarioError, match=r"space.toml:1: rmdac.linear.wq: not a number field"):
        tune_space.load_space(f, space)
    f.write_text('\n[rmdac.linear.wp]\nlow = 0.0\nhigh = 2.0\nlog = true\n')
    with pytest.raises(ScenarioError, match=r"space.toml:2: rmdac.linear.wp: need low < high"):
        tune_space.load_space(f, space)


def test_behaviour_gains_apply_only_where_the_behaviour_is_on():
    data = {"rmdac": {"linear": {"wp": 1.0}}, "behaviours": {"proxy": {}}}
    kept = tune_space._applicable(data, {"rmdac.linear.wp": 2.0, "behaviours.centering.kq": 50.0})
    assert kept == {"rmdac.linear.wp": 2.0}


def test_extends_list_later_bases_win(tmp_path):
    (tmp_path / "g1.toml").write_text("[rmdac.linear]\nwp = 1.0\nwv = 2.0\n")
    (tmp_path / "g2.toml").write_text("[rmdac.linear]\nwv = 3.0\n")
    (tmp_path / "s.toml").write_text('extends = ["%s", "g1.toml", "g2.toml"]\n[rmdac.rotation]\nwp = 7.0\n'
                                     % (ROOT / "scenarios" / "reference.toml"))
    sc = load(tmp_path / "s.toml")
    assert (sc.rmdac["linear"]["wp"], sc.rmdac["linear"]["wv"], sc.rmdac["rotation"]["wp"]) == (1.0, 3.0, 7.0)
    assert sc.rmdac["linear"]["delta"] == 6.0                          # the rest from the reference
    (tmp_path / "bad.toml").write_text('extends = ["g1.toml", 3]\n')
    with pytest.raises(ScenarioError, match=r"bad.toml:1: extends: expected a file name or a list"):
        load(tmp_path / "bad.toml")


def test_experiments_report_the_tuned_rows_beside_the_thesis_gains(tmp_path):
    from host.studies import experiments
    (tmp_path / "thesis").mkdir()
    (tmp_path / "tuned").mkdir()
    _short(tmp_path / "thesis", "reference", ROOT / "scenarios" / "reference.toml", 1.0)
    (tmp_path / "tuned" / "gains.toml").write_text("[rmdac.linear]\nwp = 3600.0\n")
    (tmp_path / "tuned" / "reference.toml").write_text('extends = ["../thesis/reference.toml", "gains.toml"]\n')
    results, report = experiments.run(["reference"], jobs=1, out_dir=tmp_path / "exp", progress=False,
                                      scenario_dir=tmp_path / "thesis")
    assert results["tuned-reference"]["status"] == "ok"
    assert results["tuned-reference"]["e_rms_m"] != results["reference"]["e_rms_m"]   # other gains
    text = report.read_text()
    assert "| [reference](runs/tuned-reference/) | 2.779e-03 |" in text
