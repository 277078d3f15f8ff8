"""`linkteam tune`: RMDAC gains (and, if asked, behaviour gains) tuned by an Optuna study
that any number of worker processes, on one machine or on several sharing a file system
or a database, join.

    linkteam tune SCENARIO [SCENARIO ...] --trials N --workers W [--out DIR] [--storage URL]
                  [--study NAME] [--space FILE] [--validate SCENARIO ...] [--payloads KG,...]
                  [--objective mean|worst] [--robust] [--ship DIR]

Every trial runs the training scenarios in-process through `host.run.run_scenario`, the
path `linkteam run` takes, with the trial's gains merged over the scenario's tables (the
same merge as `extends`), so its figures are those `linkteam run` would print.

Sampler: TPE (multivariate, constant liar). It takes the log-uniform ranges as they are,
learns from pruned trials (their last intermediate value), and with the constant liar two
workers do not draw the same point while both run; CMA-ES would drop the pruned trials and
start from one Gaussian instead of the thesis gains' neighbourhood.

Score of one run, relative to the same scenario with its own (thesis) gains, so scenarios
of different scale weigh alike (1.0 = as good as the thesis gains):

    J = e_rms / e_rms0 + W_PHI max(0, phi_rms / phi_rms0 - 1) + W_SAT max(0, sat - sat0)

(sat: fraction of control ticks with a joint at its torque limit u_sat). A run that aborts
(diverges) scores DIVERGED (2 - the fraction of the run it lasted) and prunes the trial. The trial's objective is the mean (or the
worst) J over the training scenarios and, with --robust, their variants with payload 0,
payload x2 and half the control rate of the first training scenario (each normalised by
that scenario's run with the thesis gains).
After each run the running objective is reported as an intermediate value; the median
pruner stops trials already worse than the median at that step.
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from host.runners.stats import finished
from host.scenario.loader import from_dict, merge, read_toml
from host.studies.tune_report import _e, gains_toml, plots, report, ship
from host.studies.tune_space import _applicable, default_space, load_space, overlay, thesis_values

ROOT = Path(__file__).resolve().parents[2]
DIVERGED = 100.0   # score of an aborted run: far above any run that tracks (thesis gains: 1.0)
                   # and up to twice that for an early abort, so the sampler learns which way is stable
W_PHI = 0.5        # per unit of orientation-error ratio above the thesis gains'
W_SAT = 1.0        # per unit of the fraction of ticks at the torque limit above the thesis gains'


# ---- runs and scores ----------------------------------------------------------------------
def case(path, label=None, change=None):
    """One run to make: a scenario file plus an in-memory change (a robustness variant)."""
    return {"path": str(path), "label": label or Path(path).stem, "change": change or {}}


def robust_cases(c):
    """Payload 0 and x2, control rate x0.5 of a training scenario (--robust)."""
    data, _ = read_toml(Path(c["path"]))
    mass = float(data.get("payload", {}).get("mass", 0.0))
    rate = float(data["simulation"].get("control_rate_hz", 120.0))
    out = [case(c["path"], c["label"] + " payload 0 kg", {"payload": {"mass": 0.0}})]
    if mass > 0:
        out.append(case(c["path"], c["label"] + " payload x2", {"payload": {"mass": 2 * mass}}))
    out.append(case(c["path"], c["label"] + " rate x0.5", {"simulation": {"control_rate_hz": 0.5 * rate}}))
    for r in out:
        r["base"], r["seen"] = c["label"], True
    return out


def run_case(c, params):
    """Run one case with the gains `params` merged in (None: its own gains); the figures
    the score needs, from the same summary and time series `linkteam run` writes."""
    from host.run import run_scenario
    path = Path(c["path"])
    data, sources = read_toml(path)
    data = merge(data, c["change"])
    if params:
        data = merge(data, overlay(_applicable(data, params)))
    sc = from_dict(data, path, sources)
    with tempfile.TemporaryDirectory(prefix="linkteam-tune-") as d:
        s, out = run_scenario(sc, Path(d) / "run", quiet=True, make_plots=False)
        u = np.load(out / "timeseries.npz")["u"] if finished(s) else np.zeros((1, sc.n))
    u_sat = np.array([L["u_sat"] for L in sc.links])
    return {"status": s["status"], "reason": s["reason"], "e_rms": s["e_rms_m"], "phi_rms": s["phi_rms_rad"],
            "lasted": s["sim_seconds"] / sc.duration,
            "sat": float(np.mean(np.any(np.abs(u) >= 0.999 * u_sat, axis=1))), "wall": s["wall_seconds"]}


def score(r, base):
    """J of one run against its nominal scenario with the thesis gains (module docstring)."""
    if not (finished(r) and finished(base)):
        return DIVERGED * (2.0 - min(r["lasted"], base["lasted"]))
    return (r["e_rms"] / base["e_rms"] + W_PHI * max(0.0, r["phi_rms"] / max(base["phi_rms"], 1e-12) - 1.0)
            + W_SAT * max(0.0, r["sat"] - base["sat"]))


AGGREGATE = {"mean": lambda xs: sum(xs) / len(xs), "worst": max}


class Surplus(Exception):
    """Two workers took the study's last free place at once: the later trial (by number) is failed."""


class Objective:
    def __init__(self, cases, baselines, space, aggregate, worker, target=None):
        self.cases, self.baselines, self.space = cases, baselines, space
        self.aggregate, self.worker, self.target = AGGREGATE[aggregate], worker, target

    def __call__(self, trial):
        import optuna
        trial.set_user_attr("worker", self.worker)   # first: a reaper tells a live worker's trial by it
        if self.target is not None:
            fail = optuna.trial.TrialState.FAIL
            trials = trial.study.get_trials(deepcopy=False)
            retry = "failed_trial" in trials[trial.number].system_attrs
            before = sum(1 for t in trials if t.number < trial.number and t.state != fail)
            if before >= self.target and not retry:   # the storage numbers trials atomically: the first `target` stand
                trial.set_user_attr("surplus", "the study held %d trials when this one began" % before)
                raise Surplus()
        try:
            params = {k: trial.suggest_float(k, lo, hi, log=log) for k, (lo, hi, log) in self.space.items()}
            return self._runs(trial, params)
        except KeyboardInterrupt as e:   # Ctrl-C or SIGTERM: this worker stops, its trial runs again elsewhere
            Retry()(trial.study, trial.study._storage.get_trial(trial._trial_id),
                    "worker %s stopped (%s)" % (self.worker, str(e) or "interrupted"))
            raise

    def _runs(self, trial, params):
        import optuna
        scores = []
        for step, c in enumerate(self.cases):
            check_stop()
            r = run_case(c, params)
            if r["reason"].startswith("interrupted ("):   # host/report/run_dir.py RunDir: "interrupted (SIGTERM)"
                raise KeyboardInterrupt(r["reason"][len("interrupted ("):-1])
            trial.set_user_attr("e_rms %s" % c["label"], r["e_rms"])
            scores.append(score(r, self.baselines[c.get("base", c["label"])]))
            value = self.aggregate(scores)
            trial.report(value, step)
            if not finished(r):
                trial.set_user_attr("diverged", "%s: %s" % (c["label"], r["reason"]))
                raise optuna.TrialPruned()
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value


# ---- the study ----------------------------------------------------------------------------
HEARTBEAT_S = 5    # a worker beats this often (RDB: Optuna's heartbeat; journal: a file beside it) ...
GRACE_BEATS = 4    # ... and a RUNNING trial whose worker missed this many beats is failed and retried
MAX_RETRY = 3      # a trial whose workers keep dying is retried at most this often
# per worker process on PostgreSQL: the main thread's and the heartbeat thread's connection,
# one spare; a dropped network errors within ~30 s (TCP keepalive, unacknowledged data) instead of hanging
PG_ENGINE = {"pool_size": 2, "max_overflow": 1, "pool_timeout": 30, "pool_pre_ping": True,
             "connect_args": {"connect_timeout": 10, "keepalives": 1, "keepalives_idle": 10,
                              "keepalives_interval": 5, "keepalives_count": 3, "tcp_user_timeout": 30000}}


class StorageLost(RuntimeError):
    """The study's database went away under a worker."""


def _is_rdb(url):
    return bool(url) and "://" in url


def _rdb_url(url):
    """postgresql://... is psycopg (3), the driver pyproject installs; SQLAlchemy's bare
    scheme would look for psycopg2."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain):]
    return url


def redact(url):
    """The URL without its password (for messages and reports)."""
    import re
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url or "")


def journal_path(url, out):
    return Path(url or Path(out) / "study.journal")


class Retry:
    """A trial whose worker is gone: FAIL (the storage's doing), then the same parameters
    again as a WAITING trial that the next free worker takes first (Optuna's
    RetryHeartbeatStaleTrialCallback), with the reason in its user attribute retry_reason."""

    def __init__(self, reason=None):
        self.reason = reason

    def __call__(self, study, trial, reason=None):
        from optuna.storages import RetryHeartbeatStaleTrialCallback
        trial.user_attrs = {"retry_reason": "trial #%d failed: %s" % (trial.number, reason or self.reason(trial)),
                            "lost_worker": trial.user_attrs.get("worker", "?")}   # not the lost trial's figures
        RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY)(study, trial)


def _stale_reason(heartbeat):
    return lambda t: "worker %s sent no heartbeat for %d s" % (t.user_attrs.get("worker", "?"), GRACE_BEATS * heartbeat)


_RDB = {}


def _check_storage_url(url):
    """An RDB URL that SQLAlchemy can parse and has a dialect for (ValueError naming it),
    before any scenario runs."""
    if not _is_rdb(url):
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    try:
        make_url(_rdb_url(url)).get_dialect()
    except (ArgumentError, ValueError) as e:
        raise ValueError("--storage %s: not a database URL SQLAlchemy knows (%s)" % (redact(url), e)) from None


def storage(url, out, heartbeat=HEARTBEAT_S):
    """Default: a journal file in the output directory (a file lock on it lets processes on
    one machine, or on machines sharing the file system, join). Any URL (e.g.
    postgresql://user:pass@host/db) is Optuna's RDB storage with its heartbeat: a trial whose
    worker stops beating for GRACE_BEATS beats is failed and retried."""
    if _is_rdb(url):   # one per process: each holds a connection pool
        if (url, heartbeat) not in _RDB:
            from optuna.storages import RDBStorage
            rdb = _rdb_url(url)
            _RDB[url, heartbeat] = RDBStorage(rdb, engine_kwargs=PG_ENGINE if rdb.startswith("postgresql") else None,
                                              heartbeat_interval=heartbeat, grace_period=GRACE_BEATS * heartbeat,
                                              heartbeat_stale_trial_callback=Retry(_stale_reason(heartbeat)))
        return _RDB[url, heartbeat]
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    return JournalStorage(JournalFileBackend(str(journal_path(url, out))))


def close_storages():
    """Give this process's database connections back (a worker's end)."""
    while _RDB:
        _RDB.popitem()[1].engine.dispose()


def _db_errors():
    """The exceptions that mean the study's database connection is gone."""
    import optuna
    errs = [optuna.exceptions.StorageInternalError]
    try:
        import sqlalchemy.exc
        errs += [sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError, sqlalchemy.exc.TimeoutError]
    except ImportError:
        pass
    return tuple(errs)


def _lost(url, e):
    for _ in range(5):   # to the driver's own words (Optuna and SQLAlchemy wrap them)
        inner = getattr(e, "orig", None) or e.__cause__ or e.__context__
        if inner is None:
            break
        e = inner
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return StorageLost("lost the connection to the study database %s: %s" % (redact(url), first))


def open_study(url, out, name, heartbeat=HEARTBEAT_S, create=True):
    import warnings

    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)   # heartbeat: stable in use since 2.9
    try:
        st = storage(url, out, heartbeat)
        sampler = optuna.samplers.TPESampler(multivariate=True, constant_liar=True)
        pruner = optuna.pruners.MedianPruner(n_startup_trials=5)
        if not create:
            return optuna.load_study(study_name=name, storage=st, sampler=sampler, pruner=pruner)
        return optuna.create_study(study_name=name, storage=st, direction="minimize", load_if_exists=True,
                                   sampler=sampler, pruner=pruner)
    except _db_errors() as e:
        raise _lost(url, e) from e


# ---- workers: beats, crashed workers' trials, the study's size ----------------------------
def worker_id():
    """host:pid of this worker process (a journal's reaper checks the pid on its own host)."""
    import socket
    return "%s:%d" % (socket.gethostname(), os.getpid())


class Beat:
    """A journal study's heartbeat: the worker touches <journal>.workers/<worker id> every
    `heartbeat` seconds while it lives, and removes it when it ends (RDB studies beat in the
    database instead)."""

    def __init__(self, journal, wid, heartbeat):
        import threading
        self.path = Path(str(journal) + ".workers") / wid
        self.heartbeat, self.stop = heartbeat, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.wait(self.heartbeat):
            self.path.touch()

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.path.unlink(missing_ok=True)


def gone(worker, journal, heartbeat, now=None):
    """Why a journal worker counts as gone (None: it may be alive): not running on this
    host, or no heartbeat file touched within GRACE_BEATS beats."""
    import socket
    host, _, rest = (worker or "").partition(":")
    if host == socket.gethostname() and rest:
        try:
            os.kill(int(rest.split(".")[0]), 0)
        except ProcessLookupError:
            return "worker %s is not running" % worker
        except (PermissionError, ValueError):
            pass
    beat = Path(str(journal) + ".workers") / (worker or "?")
    try:
        age = (now or time.time()) - beat.stat().st_mtime
    except FileNotFoundError:
        return "worker %s left no heartbeat" % (worker or "(unknown)")
    if age > GRACE_BEATS * heartbeat:
        return "worker %s sent no heartbeat for %.0f s" % (worker, age)
    return None


def reap(study, url, out, heartbeat):
    """Fail the RUNNING trials whose worker is gone and queue each again (Retry); RDB:
    Optuna's heartbeat check, journal: `gone`. The failed trials: (number, reason)."""
    import optuna
    from optuna.trial import TrialState
    if _is_rdb(url):
        before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
        optuna.storages.fail_stale_trials(study)
        return [(t.number, _stale_reason(heartbeat)(t))
                for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)) if t.number in before]
    failed = []
    journal = journal_path(url, out)
    now = time.time()
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if "worker" not in t.user_attrs and now - t.datetime_start.timestamp() <= GRACE_BEATS * heartbeat:
            continue   # just taken: its worker is about to name itself
        why = gone(t.user_attrs.get("worker"), journal, heartbeat, now)
        if why is None:
            continue
        try:
            study._storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue   # another worker reaped it first
        Retry()(study, study._storage.get_trial(t._trial_id), why)
        failed.append((t.number, why))
    return failed


def counts(study):
    from optuna.trial import TrialState
    states = [t.state for t in study.get_trials(deepcopy=False)]
    return {s: states.count(s) for s in TrialState}


def run_worker(spec, wid):
    """One worker: trials until the study holds `target` finished (complete or pruned)
    trials, counting the RUNNING ones of live workers as finishing; a queued retry is always
    taken. At the end it waits, at most GRACE_BEATS + 2 beats, for RUNNING trials to finish
    or be found orphaned (then retries them), so a crash costs one retried trial."""
    from optuna.trial import TrialState
    url, out, hb = spec["storage"], spec["out"], spec["heartbeat"]
    stop_on_sigterm()
    try:
        study = open_study(url, out, spec["study"], hb, create=False)
        objective = Objective(spec["cases"], spec["baselines"], spec["space"], spec["objective"], wid, spec["target"])
        t_end = None if spec["timeout"] is None else time.monotonic() + spec["timeout"]
        waited = 0.0
        beat = Beat(journal_path(url, out), wid, hb) if not _is_rdb(url) else None
        with beat or _Nothing():
            while True:
                check_stop()
                for n, why in reap(study, url, out, hb):
                    print("trial #%d failed (%s); queued again" % (n, why), flush=True)
                c = counts(study)
                done = c[TrialState.COMPLETE] + c[TrialState.PRUNED]
                if t_end is not None and time.monotonic() > t_end:
                    break
                if c[TrialState.WAITING] or done + c[TrialState.RUNNING] < spec["target"]:
                    study.optimize(objective, n_trials=1, catch=(Surplus,))
                    waited = 0.0
                elif c[TrialState.RUNNING] and waited < (GRACE_BEATS + 2) * hb:
                    time.sleep(hb)
                    waited += hb
                else:
                    break
    except Exception as e:
        db = _db_cause(e)
        if db is None:
            raise
        raise _lost(url, db) from e


def _db_cause(e):
    """The database error in an exception's chain (Optuna can turn a lost connection met
    while it finishes a trial into another error), else None."""
    for _ in range(10):
        if e is None or isinstance(e, _db_errors()):
            return e
        e = e.__cause__ or e.__context__
    return None


_STOP = []   # the signal that asked this worker to stop


def _sigterm(signum, frame):
    _STOP.append("SIGTERM")   # acted on between storage operations (check_stop), never inside one


def _raise_sigterm(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def check_stop():
    if _STOP:
        raise KeyboardInterrupt(_STOP[0])


def stop_on_sigterm():
    """SIGTERM stops a worker: a run in progress ends through host/report/run_dir.py's own handler,
    otherwise at the next run or trial (not inside a storage write, whose file lock an
    exception could leave behind); the trial it was in is queued again."""
    import signal
    signal.signal(signal.SIGTERM, _sigterm)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _spawned(spec):
    """A worker process of `--workers k`: a lost database ends it with the reason (exit 4)."""
    wid = worker_id()
    try:
        run_worker(spec, wid)
    except StorageLost as e:
        sys.stderr.write("linkteam tune: worker %s: %s\n" % (wid, e))
        sys.exit(4)
    except KeyboardInterrupt:
        sys.exit(130)
    finally:
        close_storages()


def optimise(spec, workers):
    """Run `workers` worker processes on the study until it holds spec['target'] finished
    trials; wall seconds."""
    import multiprocessing
    t0 = time.perf_counter()
    if workers == 1:
        run_worker(spec, worker_id())
        return time.perf_counter() - t0
    close_storages()   # the workers hold the connections, not this process while it waits for them
    import signal
    signal.signal(signal.SIGTERM, _raise_sigterm)   # only joins below: stop at once, end the workers
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spawned, args=(spec,)) for _ in range(workers)]
    try:
        for p in procs:
            p.start()
        for p in procs:
            p.join()
    finally:   # SIGTERM/KeyboardInterrupt of this process: no worker outlives it
        for p in procs:
            if p.is_alive():
                p.terminate()   # SIGTERM: it queues its trial again and ends ...
        for p in procs:
            p.join(30)
            if p.is_alive():    # ... or is killed
                p.kill()
                p.join()
    lost = [p.exitcode for p in procs if p.exitcode == 4]
    if lost:
        raise StorageLost("%d worker(s) lost the study database %s (their messages above)" % (len(lost), redact(spec["storage"])))
    failed = [p.exitcode for p in procs if p.exitcode]
    if failed:
        raise RuntimeError("tune worker(s) failed with exit status %s" % failed)
    return time.perf_counter() - t0


def _both(c, params):
    return c, run_case(c, None), run_case(c, params)


def validate(rows, params, jobs):
    """Each row with its own (thesis) gains and with the tuned gains, in parallel processes."""
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(_both, rows, [params] * len(rows)))


RECORDED = ("scenarios", "robust", "objective", "space", "validate", "payloads")   # what --resume takes from the study


def command(a):
    """The invocation, rebuilt from its options (for the report)."""
    words = ["linkteam tune"] + a.scenarios + ["--trials %d --workers %d" % (a.trials, a.workers)]
    for opt in ("timeout", "out", "study", "space", "objective"):
        if getattr(a, opt) is not None:
            words.append("--%s %s" % (opt, getattr(a, opt)))
    words += ["--storage %s" % redact(a.storage)] if a.storage else []
    words += ["--robust"] if a.robust else []
    words += ["--validate"] + a.validate if a.validate else []
    words += ["--payloads " + ",".join("%g" % kg for kg in a.payloads)] if a.payloads else []
    return " ".join(words)


def _resumed(a, out, name, hb):
    """--resume: the study must exist; its recorded options fill what this invocation leaves
    out (scenarios, --robust, --objective, --space, --validate, --payloads, --trials)."""
    try:
        study = open_study(a.storage, out, name, hb, create=False)
    except KeyError:
        raise ValueError("--resume: no study %s in %s" % (name, redact(a.storage) or journal_path(None, out)))
    rec = study.user_attrs.get("args")
    if rec is None:
        raise ValueError("--resume: study %s records no linkteam tune options; give its scenarios and --trials" % name)
    rec = json.loads(rec)
    if not a.scenarios:
        for key in RECORDED:
            setattr(a, key, rec[key])
    if a.trials is None:
        a.trials = study.user_attrs["trials"]


def main(a):
    try:
        return _main(a)
    finally:
        close_storages()


def _main(a):
    out = Path(a.out or "tune")
    out.mkdir(parents=True, exist_ok=True)
    name = a.study or "linkteam-tune"
    hb = a.heartbeat
    _check_args(a, out, name, hb)
    training = [case(p) for p in a.scenarios]
    for c in training:
        c["seen"] = True
    data0, _ = read_toml(Path(a.scenarios[0]))
    space = default_space(data0)
    if a.space:
        space = load_space(a.space, space)
    cases = list(training)
    if a.robust:   # the variants of the first (nominal) training scenario, first: a trial
        cases = robust_cases(training[0]) + cases   # that diverges there is pruned early
    study = open_study(a.storage, out, name, hb)   # an unreachable database: said before the baselines run
    baselines = {}
    for c in training:
        baselines[c["label"]] = r = run_case(c, None)
        print("thesis gains: %-24s e_rms %s  phi_rms %s  %s" % (c["label"], _e(r["e_rms"]), _e(r["phi_rms"]), r["status"]))
    thesis = _size_and_seed(a, study, out, hb, thesis_values(data0, space), space)
    spec = {"storage": a.storage, "out": str(out), "study": name, "heartbeat": hb, "target": a.trials,
            "timeout": a.timeout, "cases": cases, "baselines": baselines, "space": space, "objective": a.objective}
    wall = optimise(spec, a.workers)
    study = open_study(a.storage, out, name, hb)
    import optuna
    states = [t.state for t in study.trials]
    complete = states.count(optuna.trial.TrialState.COMPLETE)
    print("study %s holds %d trials (%d complete, %d pruned, %d failed, %d running); %d worker(s), %.1f s"
          % (name, len(states), complete, states.count(optuna.trial.TrialState.PRUNED),
             states.count(optuna.trial.TrialState.FAIL), states.count(optuna.trial.TrialState.RUNNING), a.workers, wall))
    if not complete:
        sys.stderr.write("linkteam tune: no trial completed (every one diverged or was pruned)\n")
        return 3
    best = study.best_trial
    gains, tuned = _write_gains(a, out, name, best, data0, cases)
    made, importance = plots(study, out) if a.plots else ([], {})
    results = validate(_report_rows(a, training, data0), dict(best.params), a.workers)
    for c, r0, r1 in results:
        print("%-28s thesis gains %s  tuned %s  %s" % (c["label"], _e(r0["e_rms"]), _e(r1["e_rms"]), r1["status"]))
    meta = {"study": name, "storage": redact(a.storage) or str(journal_path(None, out)), "objective": a.objective,
            "weights": (W_PHI, W_SAT, DIVERGED),
            "training": [c["label"] for c in cases], "n_trials": len(states), "complete": complete,
            "pruned": states.count(optuna.trial.TrialState.PRUNED), "failed": states.count(optuna.trial.TrialState.FAIL),
            "added": a.trials, "workers": a.workers,
            "wall": wall, "robust": a.robust, "space": space, "command": command(a), "tuned": tuned}
    path = report(out, study, meta, results, made, importance, thesis, best)
    print("report:", path)
    if a.ship:
        print("shipped:", ship(gains, a.ship, tuned["arm"], training + [case(p) for p in a.validate]))
    return 0


def _check_args(a, out, name, hb):
    """The command's arguments (--resume: the study's recorded ones) checked; ValueError
    names what is wrong."""
    if hb < 1:
        raise ValueError("--heartbeat must be at least 1 s")
    if a.resume:
        _resumed(a, out, name, hb)
    if not a.scenarios or a.trials is None:
        raise ValueError("give the training scenarios and --trials (or --resume an existing study)")
    if a.workers < 1 or a.trials < 1:
        raise ValueError("--workers and --trials must be at least 1")
    _check_storage_url(a.storage)
    if (a.storage or "").startswith("sqlite") and a.workers > 1:
        raise ValueError("SQLite takes one worker at a time (Optuna: not for parallel studies); "
                         "use the journal file (default) or PostgreSQL")


def _size_and_seed(a, study, out, hb, thesis, space):
    """The study's record (command, arguments, its size: the largest --trials), the
    thesis gains as its first trial, trials of workers that are gone failed and queued
    again. -> the thesis gains"""
    try:
        if "args" not in study.user_attrs:
            study.set_user_attr("command", command(a))
            study.set_user_attr("args", json.dumps({k: getattr(a, k) for k in RECORDED}))
        if a.trials > study.user_attrs.get("trials", -1):   # the study's size (for --resume): the largest --trials
            study.set_user_attr("trials", a.trials)
        if not study.trials and all(lo <= thesis[k] <= hi for k, (lo, hi, _log) in space.items()):
            study.enqueue_trial(thesis)   # the first trial: the gains the scenario ships with
        for n, why in reap(study, a.storage, out, hb):
            print("trial #%d failed (%s); queued again" % (n, why))
    except _db_errors() as e:
        raise _lost(a.storage, e) from e
    return thesis


def _write_gains(a, out, name, best, data0, cases):
    """The best trial's gains as OUT/gains.toml, with the arm they were tuned on. -> (path, [tuned] table)"""
    gains = out / "gains.toml"
    from host.scenario.loader import from_dict as _from_dict
    from host.studies.tune_gains import tuned_table
    tuned = tuned_table(_from_dict(data0, a.scenarios[0]), name, best.number)
    gains.write_text(gains_toml(dict(best.params), [
        "Tuned RMDAC gains: linkteam tune, study %s, trial #%d, objective %.4f (thesis gains 1.0)" % (name, best.number, best.value),
        "trained on %s%s; report.md beside this file." % (", ".join(c["label"] for c in cases), " (robust)" if a.robust else ""),
        "Use: extends = [\"the-scenario.toml\", \"gains.toml\"]; [tuned] names the arm they were tuned on",
        "(linkteam run refuses them on another arm unless --gains-anyway)."], tuned))
    print("best trial #%d objective %.4f -> %s" % (best.number, best.value, gains))
    return gains, tuned


def _report_rows(a, training, data0):
    """The report's rows: the training scenarios, the held-out ones (--validate) and the
    first training scenario with other payloads (--payloads)."""
    trained = {Path(c["path"]).resolve() for c in training}
    rows = list(training) + [case(p) for p in a.validate if Path(p).resolve() not in trained]
    for kg in a.payloads or []:
        rows.append(case(a.scenarios[0], "%s payload %g kg" % (training[0]["label"], kg), {"payload": {"mass": kg}}))
        mass = float(data0.get("payload", {}).get("mass", 0.0))
        rows[-1]["seen"] = kg == mass or (a.robust and kg in (0.0, 2 * mass))
    return rows
