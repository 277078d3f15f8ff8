"""`linkteam tune` studies beyond one process: a real PostgreSQL (a throwaway cluster,
host/studies/tune_pg.py) and the journal file, each shared by separate `linkteam tune`
invocations as on separate machines; a worker SIGKILLed mid-trial costs one retried trial;
a lost database is an error that says so; tuned gains know their arm."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import needs, tool
from tests.test_experiments import ROOT

optuna = pytest.importorskip("optuna", reason="optuna is not installed (make setup)")

from host.cli import main  # noqa: E402
from host.studies.tune_pg import Cluster  # noqa: E402

pytestmark = pytest.mark.slow

LINKTEAM = tool("linkteam")
N = 6          # trials in each study
BEAT = 1       # s: --heartbeat; a worker missing 4 beats is found gone
TrialState = optuna.trial.TrialState


def _short(tmp_path, duration=1.0):
    p = tmp_path / "ref.toml"
    p.write_text('extends = "%s"\nname = "ref"\n[simulation]\nduration = %s\n'
                 % (ROOT / "scenarios" / "reference.toml", duration))
    return p


class Workers:
    """`linkteam tune` processes, every one killed and reaped at the end, also on failure."""

    def __init__(self, tmp_path):
        self.tmp, self.procs = tmp_path, []

    def start(self, *args, tag):
        out = open(self.tmp / ("%s.log" % tag), "w")
        p = subprocess.Popen([LINKTEAM, "tune", "--no-plots", *args], stdout=out, stderr=subprocess.STDOUT, cwd=self.tmp)
        p.tag, p.logfile = tag, out
        self.procs.append(p)
        return p

    def log(self, p):
        return (self.tmp / ("%s.log" % p.tag)).read_text()

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.logfile.close()


@pytest.fixture
def workers(tmp_path):
    w = Workers(tmp_path)
    try:
        yield w
    finally:
        w.close()


@pytest.fixture(scope="module")
def pg():
    with Cluster(max_connections=40) as cluster:
        yield cluster


def _worker_of(p):
    import socket
    return "%s:%d" % (socket.gethostname(), p.pid)


def freeze_in_trial(p, running_of, lock=None, tries=3000):
    """SIGSTOP worker p in a trial (RUNNING, its own), not while it holds the journal's
    lock; the trial's number."""
    for _ in range(tries):
        if running_of(_worker_of(p)):
            os.kill(p.pid, signal.SIGSTOP)
            mine = running_of(_worker_of(p))   # still, now that it cannot move on
            if mine and not (lock and lock.exists()):
                return mine[0]
            os.kill(p.pid, signal.SIGCONT)
        assert p.poll() is None, "worker %s ended before it was seen in a trial" % p.tag
        time.sleep(0.02)
    raise AssertionError("worker %s never seen in a trial" % p.tag)


def wait_in_trial(p, running_of, tries=3000):
    for _ in range(tries):
        if running_of(_worker_of(p)):
            return
        assert p.poll() is None, "worker %s ended before it was seen in a trial" % p.tag
        time.sleep(0.02)
    raise AssertionError("worker %s never seen in a trial" % p.tag)


def kill_mid_trial(b, start_other, running_of, lock=None):
    """Worker b frozen in a trial, the other worker started and seen in a trial of its own
    (both on the study at once), then b SIGKILLed: the trial b was in."""
    killed = freeze_in_trial(b, running_of, lock)
    a = start_other()
    wait_in_trial(a, running_of)
    os.kill(b.pid, signal.SIGKILL)
    b.wait()
    return a, killed


def check_crash_cost_one_retry(study, killed, worker, n=N):
    """Exactly n finished trials, none RUNNING; the killed trial FAIL and retried (same
    parameters, finished, its reason naming the lost worker)."""
    trials = study.trials
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == n, [(t.number, t.state) for t in trials]
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert trials[killed].state == TrialState.FAIL
    retries = [t for t in finished if t.system_attrs.get("failed_trial") == killed]
    assert len(retries) == 1, [(t.number, t.system_attrs) for t in trials]
    assert trials[killed].params.items() <= retries[0].params.items()   # as far as it had drawn them
    assert worker in retries[0].user_attrs["retry_reason"]
    retried = {t.system_attrs.get("failed_trial") for t in trials}
    others = [t for t in trials if t.state == TrialState.FAIL and t.number not in retried]
    assert all("surplus" in t.user_attrs for t in others), others   # two workers at the last place
    return retries[0]


@needs("postgresql")
def test_postgresql_two_workers_one_killed_mid_trial(tmp_path, pg, workers):
    ref = _short(tmp_path, 2.0)
    args = [str(ref), "--trials", str(N), "--storage", pg.url, "--study", "crash", "--heartbeat", str(BEAT)]
    b = workers.start(*args, "--out", str(tmp_path / "b"), tag="b")
    peak = [0]

    def running_of(worker):
        peak[0] = max(peak[0], pg.connections())
        rows = pg.sql("SELECT t.number FROM trials t JOIN trial_user_attributes u ON u.trial_id = t.trial_id "
                      "JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = 'crash' AND t.state = 'RUNNING' "
                      "AND u.key = 'worker' AND u.value_json = '%s'" % json.dumps(worker)) if _tables(pg) else []
        return [r[0] for r in rows]

    a, killed = kill_mid_trial(b, lambda: workers.start(*args, "--out", str(tmp_path / "a"), tag="a"), running_of)
    assert a.wait(timeout=300) == 0, workers.log(a)
    for _ in range(500):   # none left open (a backend ends just after its client)
        if pg.connections() == 0:
            break
        time.sleep(0.02)
    assert pg.connections() == 0
    study = optuna.load_study(study_name="crash", storage=pg.url.replace("postgresql://", "postgresql+psycopg://"))
    retry = check_crash_cost_one_retry(study, killed, _worker_of(b))
    assert retry.user_attrs["worker"] == _worker_of(a)                 # the survivor took it
    assert "trial #%d failed" % killed in workers.log(a)
    assert 0 < peak[0] <= 2 * 3                                         # a worker: at most 3 connections
    assert "[tuned]" in (tmp_path / "a" / "gains.toml").read_text()


def _tables(pg):
    return pg.sql("SELECT count(*) FROM pg_tables WHERE tablename = 'trial_user_attributes'")[0][0] > 0


def _journal(path):
    from host.studies.tune import storage
    return storage(str(path), None)


def _journal_running(journal, study="crash"):
    """The RUNNING trials of a worker in a journal study."""
    def running_of(worker):
        if not journal.exists():
            return []
        try:
            s = optuna.load_study(study_name=study, storage=_journal(journal))
        except KeyError:
            return []
        return [t.number for t in s.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.user_attrs.get("worker") == worker]
    return running_of


def test_journal_killed_worker_then_resume(tmp_path, workers):
    ref = _short(tmp_path, 2.0)
    journal = tmp_path / "study.journal"
    args = ["--storage", str(journal), "--study", "crash", "--heartbeat", str(BEAT), "--out", str(tmp_path / "o")]

    running_of = _journal_running(journal)

    # two workers, one killed: the other finds its trial (its process is gone) and retries it
    b = workers.start(str(ref), "--trials", str(N), *args, tag="b")
    a, killed = kill_mid_trial(b, lambda: workers.start(str(ref), "--trials", str(N), *args, tag="a"), running_of,
                               lock=tmp_path / "study.journal.lock")
    assert a.wait(timeout=300) == 0, workers.log(a)
    study = optuna.load_study(study_name="crash", storage=_journal(journal))
    check_crash_cost_one_retry(study, killed, _worker_of(b))

    # the only worker killed; --resume (no scenarios: the study's own) fails its trial with the reason, retries it
    c = workers.start("--trials", str(N + 3), "--resume", *args, tag="c")   # the study grows by 3
    killed2 = freeze_in_trial(c, running_of, lock=tmp_path / "study.journal.lock")
    os.kill(c.pid, signal.SIGKILL)
    c.wait()
    d = workers.start("--resume", *args, tag="d")
    assert d.wait(timeout=300) == 0, workers.log(d)
    assert "trial #%d failed (worker %s is not running); queued again" % (killed2, _worker_of(c)) in workers.log(d)
    study = optuna.load_study(study_name="crash", storage=_journal(journal))
    check_crash_cost_one_retry(study, killed2, _worker_of(c), N + 3)
    assert study.trials[killed].state == TrialState.FAIL                # the first crash: still one FAIL


def test_sigterm_stops_a_worker_and_queues_its_trial_again(tmp_path, workers):
    ref = _short(tmp_path, 2.0)
    journal = tmp_path / "study.journal"
    running_of = _journal_running(journal)
    w = workers.start(str(ref), "--trials", str(N), "--storage", str(journal), "--study", "crash",
                      "--out", str(tmp_path / "o"), tag="w")
    n = freeze_in_trial(w, running_of, lock=tmp_path / "study.journal.lock")
    w.send_signal(signal.SIGTERM)   # delivered when it goes on
    w.send_signal(signal.SIGCONT)
    rc = w.wait(timeout=300)
    assert rc == 130, (rc, workers.log(w))
    assert "linkteam tune: stopped (" in workers.log(w)
    study = optuna.load_study(study_name="crash", storage=_journal(journal))
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    if study.trials[n].state == TrialState.FAIL:   # else it was already telling its result: finished
        (retry,) = [t for t in study.trials if t.system_attrs.get("failed_trial") == n]
        assert retry.state == TrialState.WAITING and "stopped (" in retry.user_attrs["retry_reason"]
    else:
        assert study.trials[n].state in (TrialState.COMPLETE, TrialState.PRUNED)


@needs("postgresql")
def test_lost_database_is_an_error_that_says_so(tmp_path, workers):
    ref = _short(tmp_path, 1.0)
    with Cluster() as lost:
        w = workers.start(str(ref), "--trials", "500", "--storage", lost.url, "--study", "lost",
                          "--out", str(tmp_path / "o"), tag="w")
        for _ in range(3000):   # until it runs trials
            if lost.connections() and _tables(lost) and lost.sql("SELECT count(*) FROM trials WHERE state = 'COMPLETE'")[0][0]:
                break
            assert w.poll() is None, workers.log(w)
            time.sleep(0.05)
        lost.stop("immediate")
        rc = w.wait(timeout=120)   # a hang would fail here
    assert rc == 4, workers.log(w)
    text = workers.log(w)
    assert "linkteam tune: lost the connection to the study database postgresql://linkteam@/linkteam" in text, text



def test_unreachable_database_is_said_before_the_baselines_run(tmp_path, capsys):
    pytest.importorskip("psycopg", reason="psycopg is not installed (make setup)")
    import socket
    with socket.socket() as s:   # a port nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = "postgresql://tune:secret@127.0.0.1:%d/linkteam" % port
    assert main(["tune", str(_short(tmp_path, 1.0)), "--trials", "2", "--storage", url, "--out", str(tmp_path / "o")]) == 4
    out, err = capsys.readouterr()
    assert "linkteam tune: lost the connection to the study database postgresql://tune:***@127.0.0.1:%d/linkteam" % port in err
    assert "secret" not in out + err
    assert "thesis gains" not in out   # no training run before the study is reachable

def test_tuned_gains_know_their_arm(tmp_path, capsys):
    from host.scenario.loader import load
    from host.studies.tune_gains import arm_fingerprint
    spatial, gravity = load(ROOT / "scenarios" / "spatial7.toml"), load(ROOT / "scenarios" / "spatial7-gravity.toml")
    held = load(ROOT / "scenarios" / "spatial7-gravity-heldout.toml")
    planar = load(ROOT / "scenarios" / "reference.toml")
    # gravity, payload and path are not the arm; links, masses are
    assert arm_fingerprint(spatial.links) == arm_fingerprint(gravity.links) == arm_fingerprint(held.links)
    assert arm_fingerprint(spatial.links) != arm_fingerprint(planar.links)
    heavier = [dict(L) for L in spatial.links]
    heavier[3]["mass"] *= 1.01
    assert arm_fingerprint(heavier) != arm_fingerprint(spatial.links)

    # the shipped planar gains on spatial7: refused, and with --gains-anyway said so
    s = tmp_path / "s.toml"
    s.write_text('extends = ["%s", "%s"]\n[simulation]\nduration = 0.5\n'
                 % (ROOT / "scenarios" / "spatial7.toml", ROOT / "scenarios" / "tuned" / "gains.toml"))
    assert main(["run", str(s), "--out", str(tmp_path / "r"), "--quiet", "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "were tuned on another arm: reference %s" % arm_fingerprint(planar.links) in err and "refusing" in err
    assert not (tmp_path / "r").exists()
    main(["run", str(s), "--out", str(tmp_path / "r"), "--quiet", "--no-plots", "--gains-anyway"])
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    g = summary["gains_from"]
    assert (g["same_arm"], g["study"], g["arm"], g["tuned_arm"]) == (
        False, "main-robust", arm_fingerprint(spatial.links), arm_fingerprint(planar.links))
    assert "were tuned on another arm" in (tmp_path / "r" / "run.log").read_text()
    # on their own arm: run, and said so
    own = tmp_path / "own.toml"
    own.write_text('extends = ["%s", "%s"]\n[simulation]\nduration = 0.5\n'
                   % (ROOT / "scenarios" / "reference.toml", ROOT / "scenarios" / "tuned" / "gains.toml"))
    assert main(["run", str(own), "--out", str(tmp_path / "o"), "--quiet", "--no-plots"]) == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["gains_from"]["same_arm"] is True
    # another arm on purpose: the scenario says why in [tuned] other_arm, and runs
    meant = tmp_path / "meant.toml"
    meant.write_text('extends = ["%s"]\n[tuned]\nother_arm = "a comparison across arms"\n' % s)
    # (runs to its end: the planar arm's gains fling the spatial arm's links 5-7 past their
    # overspeed check, sensor_implausible, so it ends degraded, cli.EXIT_DEGRADED)
    assert main(["run", str(meant), "--out", str(tmp_path / "m"), "--quiet", "--no-plots"]) == 5
    g = json.loads((tmp_path / "m" / "summary.json").read_text())["gains_from"]
    assert (g["same_arm"], g["other_arm"], g["tuned_arm"]) == (False, "a comparison across arms",
                                                                arm_fingerprint(planar.links))
    assert g["file"] == str(ROOT / "scenarios" / "tuned" / "gains.toml")
    assert "on purpose: a comparison across arms" in (tmp_path / "m" / "run.log").read_text()
