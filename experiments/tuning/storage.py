"""The study storages measured (docs/tuning.md): a worker SIGKILLed mid-trial on PostgreSQL
and on the journal file, and trials per minute with 1, 2 and 4 workers on each. Writes
experiments/tuning/STORAGE.md.

    .venv/bin/python experiments/tuning/storage.py [--trials N] [--rate-trials M] [--duration S]

Every study runs separate `linkteam tune` invocations, as on separate machines, on a
throwaway PostgreSQL cluster (host/studies/tune_pg.py) or a journal file in a temporary folder;
all of it is stopped and removed at the end. The training scenario is the reference
(scenarios/reference.toml) shortened to --duration seconds.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402

from host.studies.tune import storage  # noqa: E402
from host.studies.tune_pg import Cluster  # noqa: E402
from tests.test_tune_storage import BEAT, Workers, _tables, _worker_of, freeze_in_trial, kill_mid_trial  # noqa: E402

TrialState = optuna.trial.TrialState


def scenario(d, duration):
    p = Path(d) / "ref.toml"
    p.write_text('extends = "%s"\nname = "ref"\n[simulation]\nduration = %s\n' % (ROOT / "scenarios" / "reference.toml", duration))
    return p


def pg_running(pg, study):
    def running_of(worker):
        if not _tables(pg):
            return []
        return [r[0] for r in pg.sql(
            "SELECT t.number FROM trials t JOIN trial_user_attributes u ON u.trial_id = t.trial_id "
            "JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = '%s' AND t.state = 'RUNNING' "
            "AND u.key = 'worker' AND u.value_json = '%s'" % (study, json.dumps(worker)))]
    return running_of


def journal_running(journal, study):
    def running_of(worker):
        try:
            s = optuna.load_study(study_name=study, storage=storage(str(journal), None))
        except (KeyError, FileNotFoundError):
            return []
        return [t.number for t in s.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.user_attrs.get("worker") == worker]
    return running_of


def outcome(study, killed, lost):
    trials = study.trials
    c = Counter(t.state.name for t in trials)
    retry = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    return {"trials": len(trials), "complete": c["COMPLETE"], "pruned": c["PRUNED"], "fail": c["FAIL"],
            "running": c["RUNNING"], "waiting": c["WAITING"], "killed": killed, "killed_state": trials[killed].state.name,
            "lost_worker": lost,
            "retry": retry[0].number if retry else None, "retry_state": retry[0].state.name if retry else None,
            "retry_reason": retry[0].user_attrs.get("retry_reason") if retry else None,
            "retry_worker": retry[0].user_attrs.get("worker") if retry else None}


def crash_pg(tmp, n, ref):
    with Cluster() as pg:
        w = Workers(Path(tmp))
        try:
            args = [str(ref), "--trials", str(n), "--storage", pg.url, "--study", "crash", "--heartbeat", str(BEAT)]
            b = w.start(*args, "--out", str(Path(tmp) / "pb"), tag="pb")
            t0 = time.monotonic()
            a, killed = kill_mid_trial(b, lambda: w.start(*args, "--out", str(Path(tmp) / "pa"), tag="pa"),
                                       pg_running(pg, "crash"))
            rc = a.wait(timeout=1800)
            wall = time.monotonic() - t0
            study = optuna.load_study(study_name="crash", storage=storage(pg.url, None, BEAT))
            r = outcome(study, killed, _worker_of(b))
            r.update(rc=rc, wall=wall, log_line=[x for x in w.log(a).splitlines() if "failed" in x])
            return r
        finally:
            w.close()


def crash_journal(tmp, n, ref):
    journal = Path(tmp) / "crash.journal"
    w = Workers(Path(tmp))
    running_of = journal_running(journal, "crash")
    lock = Path(str(journal) + ".lock")
    try:
        args = ["--storage", str(journal), "--study", "crash", "--heartbeat", str(BEAT), "--out", str(Path(tmp) / "j")]
        b = w.start(str(ref), "--trials", str(n), *args, tag="jb")
        a, killed = kill_mid_trial(b, lambda: w.start(str(ref), "--trials", str(n), *args, tag="ja"), running_of, lock)
        freeze_in_trial(a, running_of, lock)   # ... and then the other one too, mid-trial:
        os.kill(a.pid, signal.SIGKILL)         # only --resume can finish the study
        a.wait()
        study = optuna.load_study(study_name="crash", storage=storage(str(journal), None))
        orphans = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
        d = w.start("--resume", *args, tag="jd")
        rc = d.wait(timeout=1800)
        study = optuna.load_study(study_name="crash", storage=storage(str(journal), None))
        r = outcome(study, killed, _worker_of(b))
        r.update(rc=rc, orphans_before_resume=orphans, log_line=[x for x in w.log(d).splitlines() if "failed" in x])
        return r
    finally:
        w.close()


def rate(tmp, kind, workers, n, ref, pg=None):
    """Trials per minute of one `linkteam tune --workers k` on a fresh study: finished
    trials over the span from the first trial's start to the last one's end."""
    name = "rate-%d" % workers
    url = pg.url if pg else str(Path(tmp) / ("%s.journal" % name))
    w = Workers(Path(tmp))
    try:
        t0 = time.monotonic()
        p = w.start(str(ref), "--trials", str(n), "--workers", str(workers), "--storage", url, "--study", name,
                    "--out", str(Path(tmp) / name), tag="%s-%s" % (kind, name))
        rc = p.wait(timeout=3600)
        wall = time.monotonic() - t0
    finally:
        w.close()
    study = optuna.load_study(study_name=name, storage=storage(url, None))
    done = [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    span = (max(t.datetime_complete for t in done) - min(t.datetime_start for t in done)).total_seconds()
    busy = sum((t.datetime_complete - t.datetime_start).total_seconds() for t in done)
    return {"storage": kind, "workers": workers, "rc": rc, "finished": len(done), "span_s": span,
            "per_min": 60.0 * len(done) / span, "trial_s": busy / len(done), "wall_s": wall,
            "load": os.getloadavg()}


def write_md(res, path):
    """STORAGE.md from the measured results (storage.json)."""
    L = ["# Study storages measured: crashes and trial rates", "",
         "Generated by experiments/tuning/storage.py (results in storage.json) on this machine (%d CPUs, "
         "shared with other jobs: load averages below). Every study is run by separate `linkteam tune` "
         "invocations on a throwaway PostgreSQL 15 cluster (host/studies/tune_pg.py, unix socket) or a journal file; "
         "the training run is `scenarios/reference.toml` shortened to a few seconds. docs/tuning.md explains "
         "the mechanisms." % res["cpus"], ""]

    def load(x):
        return ", ".join("%.1f" % v for v in x)
    if "crash" in res:
        cr = res["crash"]
        L += ["## A worker SIGKILLed mid-trial", "",
              "Study of N = %d trials. PostgreSQL: worker B frozen (SIGSTOP) inside a trial, worker A started and "
              "seen in a trial of its own, B SIGKILLed; A finishes the study. Journal: the same, then A too "
              "SIGKILLed inside a trial, and `linkteam tune --resume` (no scenarios: the study's own) finishes it. "
              "`--heartbeat 1` (a worker is gone after 4 missed beats). A frozen worker sends no heartbeat "
              "either, so the other may fail B's trial before the SIGKILL lands (reason: no heartbeat); a worker "
              "whose process is gone from the reaper's host is found at once (reason: not running). "
              "`%s`, load average %s at its start."
              % (cr["n"], cr["command"], load(cr["load_at_start"])), "",
              "| storage | finished (complete + pruned) | failed | running | waiting | killed trial | its retry | "
              "retry's state | retry's worker | reason recorded |", "|---|---|---|---|---|---|---|---|---|---|"]
        for kind in ("postgresql", "journal"):
            r = cr[kind]
            L.append("| %s | %d (%d + %d) | %d | %d | %d | #%d %s (worker %s) | #%s | %s | %s | %s |" % (
                kind, r["complete"] + r["pruned"], r["complete"], r["pruned"], r["fail"], r["running"], r["waiting"],
                r["killed"], r["killed_state"], r["lost_worker"], r["retry"], r["retry_state"], r["retry_worker"],
                r["retry_reason"]))
        L += ["", "What the surviving (PostgreSQL) and the resuming (journal) worker printed:", ""]
        for kind in ("postgresql", "journal"):
            L += ["    %s: %s" % (kind, line) for line in cr[kind]["log_line"]]
        if cr["journal"].get("orphans_before_resume"):
            L += ["", "Journal: RUNNING before `--resume` (both workers killed; a trial A had not yet found "
                  "orphaned included): %s; after it: %d. "
                  "Failed trials: B's and A's, each retried once."
                  % (", ".join("#%d" % n for n in cr["journal"]["orphans_before_resume"]), cr["journal"]["running"])]
        L.append("")
    for key, title in (("rate", "Trials per minute"), ("rate_loaded", "Trials per minute, the machine fully loaded")):
        if key not in res:
            continue
        rows, pre = res[key], key.replace("rate", "", 1)
        L += ["## " + title, "",
              "One `linkteam tune --workers k --trials %d` on a fresh study; rate = finished trials / (last trial's "
              "end - first trial's start), so start-up, baselines and the report are not counted; trial = mean "
              "seconds from a trial's start to its end. `%s`, load average (1, 5, 15 min) %s at its start and "
              "as in the last column at the end of each PostgreSQL study." %
              (rows[0]["finished"], res["rate_command" + pre], load(res["rate_load_at_start" + pre])), ""]
        L += [res["rate_note" + pre], ""] if res.get("rate_note" + pre) else []
        L += ["| workers | journal: trials/min | journal: s/trial | PostgreSQL: trials/min | PostgreSQL: s/trial | load at end |",
              "|---|---|---|---|---|---|"]
        by = {(r["storage"], r["workers"]): r for r in rows}
        for k in sorted({r["workers"] for r in rows}):
            j, p = by.get(("journal", k)), by.get(("postgresql", k))
            L.append("| %d | %.1f | %.2f | %.1f | %.2f | %s |" % (
                k, j["per_min"], j["trial_s"], p["per_min"], p["trial_s"], load(p["load"])))
        L.append("")
    Path(path).write_text("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=20, help="trials of each crash study")
    ap.add_argument("--rate-trials", type=int, default=24, help="trials of each rate study")
    ap.add_argument("--duration", type=float, default=2.0, help="seconds of the shortened reference")
    ap.add_argument("--only", choices=("crash", "rate", "report"))
    ap.add_argument("--out", default=str(Path(__file__).parent / "storage.json"))
    a = ap.parse_args()
    res = json.loads(Path(a.out).read_text()) if Path(a.out).exists() else {}
    command = " ".join([".venv/bin/python experiments/tuning/storage.py"] + sys.argv[1:])
    res["cpus"] = os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="linkteam-storage-") as tmp:
        ref = scenario(tmp, a.duration)
        if a.only in (None, "crash"):
            res["crash"] = {"n": a.trials, "command": command, "load_at_start": os.getloadavg(),
                            "postgresql": crash_pg(tmp, a.trials, ref), "journal": crash_journal(tmp, a.trials, ref)}
            print(json.dumps(res["crash"], indent=1))
        if a.only in (None, "rate"):
            res["rate"], res["rate_command"], res["rate_load_at_start"] = [], command, os.getloadavg()
            for k in (1, 2, 4):
                res["rate"].append(rate(tmp, "journal", k, a.rate_trials, ref))
                print(res["rate"][-1], flush=True)
                with Cluster() as pg:
                    res["rate"].append(rate(tmp, "postgresql", k, a.rate_trials, ref, pg))
                print(res["rate"][-1], flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    write_md(res, Path(a.out).with_name("STORAGE.md"))
    print("wrote", a.out, "and STORAGE.md")


if __name__ == "__main__":
    main()
