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
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from host.scenario import from_dict, merge, read_toml
from host.tune_report import _e, gains_toml, plots, report, ship
from host.tune_space import _applicable, default_space, load_space, overlay, thesis_values

ROOT = Path(__file__).resolve().parents[1]
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
        u = np.load(out / "timeseries.npz")["u"] if s["status"] == "ok" else np.zeros((1, sc.n))
    u_sat = np.array([L["u_sat"] for L in sc.links])
    return {"status": s["status"], "reason": s["reason"], "e_rms": s["e_rms_m"], "phi_rms": s["phi_rms_rad"],
            "lasted": s["sim_seconds"] / sc.duration,
            "sat": float(np.mean(np.any(np.abs(u) >= 0.999 * u_sat, axis=1))), "wall": s["wall_seconds"]}


def score(r, base):
    """J of one run against its nominal scenario with the thesis gains (module docstring)."""
    if r["status"] != "ok" or base["status"] != "ok":
        return DIVERGED * (2.0 - min(r["lasted"], base["lasted"]))
    return (r["e_rms"] / base["e_rms"] + W_PHI * max(0.0, r["phi_rms"] / max(base["phi_rms"], 1e-12) - 1.0)
            + W_SAT * max(0.0, r["sat"] - base["sat"]))


AGGREGATE = {"mean": lambda xs: sum(xs) / len(xs), "worst": max}


class Objective:
    def __init__(self, cases, baselines, space, aggregate, worker):
        self.cases, self.baselines, self.space = cases, baselines, space
        self.aggregate, self.worker = AGGREGATE[aggregate], worker

    def __call__(self, trial):
        import optuna
        params = {k: trial.suggest_float(k, lo, hi, log=log) for k, (lo, hi, log) in self.space.items()}
        trial.set_user_attr("worker", self.worker)
        scores = []
        for step, c in enumerate(self.cases):
            r = run_case(c, params)
            trial.set_user_attr("e_rms %s" % c["label"], r["e_rms"])
            scores.append(score(r, self.baselines[c.get("base", c["label"])]))
            value = self.aggregate(scores)
            trial.report(value, step)
            if r["status"] != "ok":
                trial.set_user_attr("diverged", "%s: %s" % (c["label"], r["reason"]))
                raise optuna.TrialPruned()
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value


# ---- the study ----------------------------------------------------------------------------
def storage(url, out):
    """Default: a journal file in the output directory (a file lock on it lets processes on
    one machine, or on machines sharing the file system, join); any other URL (e.g.
    postgresql://user:pass@host/db) is Optuna's RDB storage."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend
    if url and "://" in url:
        return url
    return JournalStorage(JournalFileBackend(str(url or Path(out) / "study.journal")))


def open_study(url, out, name):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name=name, storage=storage(url, out), direction="minimize",
                               load_if_exists=True,
                               sampler=optuna.samplers.TPESampler(multivariate=True, constant_liar=True),
                               pruner=optuna.pruners.MedianPruner(n_startup_trials=5))


def _worker(url, out, name, n_trials, timeout, cases, baselines, space, aggregate, worker):
    study = open_study(url, out, name)
    study.optimize(Objective(cases, baselines, space, aggregate, worker), n_trials=n_trials, timeout=timeout)


def optimise(url, out, name, trials, timeout, workers, cases, baselines, space, aggregate):
    """`trials` more trials on the study, split over `workers` processes (each starts no
    trial after `timeout` seconds); wall seconds."""
    import multiprocessing
    quotas = [trials // workers + (1 if i < trials % workers else 0) for i in range(workers)]
    t0 = time.perf_counter()
    if workers == 1:
        _worker(url, out, name, trials, timeout, cases, baselines, space, aggregate, "%d.0" % os.getpid())
    else:
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=_worker, args=(url, out, name, q, timeout, cases, baselines, space, aggregate,
                                                   "%d.%d" % (os.getpid(), i)))
                 for i, q in enumerate(quotas) if q]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
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


def command(a):
    """The invocation, rebuilt from its options (for the report)."""
    words = ["linkteam tune"] + a.scenarios + ["--trials %d --workers %d" % (a.trials, a.workers)]
    for opt in ("timeout", "out", "storage", "study", "space", "objective"):
        if getattr(a, opt) is not None:
            words.append("--%s %s" % (opt, getattr(a, opt)))
    words += ["--robust"] if a.robust else []
    words += ["--validate"] + a.validate if a.validate else []
    words += ["--payloads " + ",".join("%g" % kg for kg in a.payloads)] if a.payloads else []
    return " ".join(words)


def main(a):
    out = Path(a.out or "tune")
    out.mkdir(parents=True, exist_ok=True)
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
    if a.workers < 1 or a.trials < 0:
        raise ValueError("--workers must be >= 1 and --trials >= 0")
    name = a.study or "linkteam-tune"
    baselines = {}
    for c in training:
        baselines[c["label"]] = r = run_case(c, None)
        print("thesis gains: %-24s e_rms %s  phi_rms %s  %s" % (c["label"], _e(r["e_rms"]), _e(r["phi_rms"]), r["status"]))
    study = open_study(a.storage, out, name)
    if "command" not in study.user_attrs:
        study.set_user_attr("command", command(a))
    thesis = thesis_values(data0, space)
    if not study.trials and all(lo <= thesis[k] <= hi for k, (lo, hi, _log) in space.items()):
        study.enqueue_trial(thesis)   # the first trial: the gains the scenario ships with
    wall = optimise(a.storage, out, name, a.trials, a.timeout, a.workers, cases, baselines, space, a.objective)
    study = open_study(a.storage, out, name)
    import optuna
    states = [t.state for t in study.trials]
    complete = states.count(optuna.trial.TrialState.COMPLETE)
    print("%d trials with %d worker(s) in %.1f s; study %s holds %d (%d complete)"
          % (a.trials, a.workers, wall, name, len(states), complete))
    if not complete:
        sys.stderr.write("linkteam tune: no trial completed (every one diverged or was pruned)\n")
        return 3
    best = study.best_trial
    params = dict(best.params)
    gains = out / "gains.toml"
    gains.write_text(gains_toml(params, [
        "Tuned RMDAC gains: linkteam tune, study %s, trial #%d, objective %.4f (thesis gains 1.0)" % (name, best.number, best.value),
        "trained on %s%s; report.md beside this file." % (", ".join(c["label"] for c in cases), " (robust)" if a.robust else ""),
        "Use: extends = [\"the-scenario.toml\", \"gains.toml\"]"]))
    print("best trial #%d objective %.4f -> %s" % (best.number, best.value, gains))
    made, importance = plots(study, out)
    trained = {Path(c["path"]).resolve() for c in training}
    rows = list(training) + [case(p) for p in a.validate if Path(p).resolve() not in trained]
    for kg in a.payloads or []:
        rows.append(case(a.scenarios[0], "%s payload %g kg" % (training[0]["label"], kg), {"payload": {"mass": kg}}))
        mass = float(data0.get("payload", {}).get("mass", 0.0))
        rows[-1]["seen"] = kg == mass or (a.robust and kg in (0.0, 2 * mass))
    results = validate(rows, params, a.workers)
    for c, r0, r1 in results:
        print("%-28s thesis gains %s  tuned %s  %s" % (c["label"], _e(r0["e_rms"]), _e(r1["e_rms"]), r1["status"]))
    meta = {"study": name, "storage": a.storage or str(out / "study.journal"), "objective": a.objective,
            "weights": (W_PHI, W_SAT, DIVERGED),
            "training": [c["label"] for c in cases], "n_trials": len(states), "complete": complete,
            "pruned": states.count(optuna.trial.TrialState.PRUNED), "added": a.trials, "workers": a.workers,
            "wall": wall, "robust": a.robust, "space": space, "command": command(a)}
    path = report(out, study, meta, results, made, importance, thesis, best)
    print("report:", path)
    if a.ship:
        print("shipped:", ship(gains, a.ship))
    return 0
