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
import tomllib
import warnings
from pathlib import Path

import numpy as np

from host.rmdac import U1_NAMES
from host.scenario import SCHEMA, ScenarioError, _line_of, from_dict, merge, read_toml

ROOT = Path(__file__).resolve().parents[1]
DIVERGED = 100.0   # score of an aborted run: far above any run that tracks (thesis gains: 1.0)
                   # and up to twice that for an early abort, so the sampler learns which way is stable
W_PHI = 0.5        # per unit of orientation-error ratio above the thesis gains'
W_SAT = 1.0        # per unit of the fraction of ticks at the torque limit above the thesis gains'
GAIN_TABLES = ("linear", "rotation")


# ---- search space -------------------------------------------------------------------------
def default_space(data):
    """Dotted scenario field -> (low, high, log). Around the scenario's own gains (thesis
    Table 6.8 for the thesis rows): wp, wv and the six integral gains log-uniform over x1/4..x4;
    u2 (thesis 0) in [0, 0.01] (u2 multiplies r x_d, so with x_d ~ 7 m a u2 of 0.5 diverges
    in 20 ms); the initial feedback gains Kp(0), Kv(0) (thesis 0) in [0, 2 wp] and [0, 2 wv].
    The feed-forward initial values d0, c0, b0, a0 depend on the trajectory and stay 0 unless
    a --space file adds them."""
    space = {}
    for table in GAIN_TABLES:
        g = data["rmdac"][table]
        for name in ("wp", "wv") + U1_NAMES:
            v = float(g.get(name, 0.0))
            if v > 0:
                space["rmdac.%s.%s" % (table, name)] = (v / 4, v * 4, True)
        space["rmdac.%s.u2" % table] = (0.0, 0.01, False)
        space["rmdac.%s.kp0" % table] = (0.0, 2.0 * float(g["wp"]), False)
        space["rmdac.%s.kv0" % table] = (0.0, 2.0 * float(g["wv"]), False)
    return space


def _schema_field(key):
    """The schema entry of a dotted scenario field (None when there is none)."""
    node = SCHEMA
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, tuple) and node[0] == "float" else None


def load_space(path, space):
    """Merge a space file into `space`: a table per field with low, high and optional log,
    e.g. [rmdac.linear.wp] low = 900.0 high = 7200.0 log = true, or
    [behaviours.centering.kq] ...; `exclude = ["rmdac.linear.u2", ...]` drops defaults."""
    path = Path(path)
    try:
        text = path.read_text()
        raw = tomllib.loads(text)
    except OSError as e:
        raise ScenarioError(path, None, "file", e.strerror or str(e))
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(path, None, "syntax", str(e))
    space = dict(space)
    exclude = raw.pop("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        raise ScenarioError(path, _line_of(text, "exclude"), "exclude", "expected a list of field names")
    for key in exclude:
        if key not in space:
            raise ScenarioError(path, _line_of(text, "exclude"), "exclude", "%s is not in the search space" % key)
        del space[key]

    def walk(node, prefix):
        if "low" in node or "high" in node:
            field = ".".join(prefix)
            if _schema_field(field) is None:
                raise ScenarioError(path, _line_of(text, field), field, "not a number field of a scenario")
            try:
                low, high, log = float(node["low"]), float(node["high"]), bool(node.get("log", False))
            except (KeyError, TypeError, ValueError):
                raise ScenarioError(path, _line_of(text, field), field, "expected low, high (numbers) and optional log")
            extra = set(node) - {"low", "high", "log"}
            if extra:
                raise ScenarioError(path, _line_of(text, field), field, "unknown key(s) %s" % ", ".join(sorted(extra)))
            if not low < high or (log and low <= 0):
                raise ScenarioError(path, _line_of(text, field), field,
                                    "need low < high (and low > 0 with log): %g, %g" % (low, high))
            space[field] = (low, high, log)
            return
        for k, v in node.items():
            if not isinstance(v, dict):
                field = ".".join(prefix + [k])
                raise ScenarioError(path, _line_of(text, field), field, "expected a table with low and high")
            walk(v, prefix + [k])

    walk(raw, [])
    if not space:
        raise ScenarioError(path, None, "exclude", "the search space is empty")
    return space


def overlay(params):
    """{'rmdac.linear.wp': 900.0, ...} -> nested tables {'rmdac': {'linear': {'wp': 900.0}}}."""
    out = {}
    for key, v in params.items():
        *tables, leaf = key.split(".")
        node = out
        for t in tables:
            node = node.setdefault(t, {})
        node[leaf] = v
    return out


def _applicable(data, params):
    """Only the fields whose table the scenario writes: a behaviour table written by the
    overlay would switch that behaviour on in a scenario that does not use it."""
    keep = {}
    for key, v in params.items():
        node = data
        for t in key.split(".")[:-1]:
            node = node.get(t) if isinstance(node, dict) else None
        if isinstance(node, dict):
            keep[key] = v
    return keep


def thesis_values(data, space):
    """The scenario's own value of every search-space field (schema default if unwritten)."""
    out = {}
    for key in space:
        node = data
        for t in key.split("."):
            node = node.get(t) if isinstance(node, dict) else None
        out[key] = float(node) if node is not None else float(_schema_field(key)[1] or 0.0)
    return out


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


# ---- output -------------------------------------------------------------------------------
def _fmt_value(v):
    return repr(float(v))


def gains_toml(params, header):
    """The best gains as an overlay a scenario can `extends` (after its own base)."""
    tree = overlay(params)
    lines = ["# " + h for h in header] + [""]

    def emit(node, prefix):
        leaves = [(k, v) for k, v in node.items() if not isinstance(v, dict)]
        if leaves:
            lines.append("[%s]" % ".".join(prefix))
            lines.extend("%s = %s" % (k, _fmt_value(v)) for k, v in sorted(leaves))
            lines.append("")
        for k, v in node.items():
            if isinstance(v, dict):
                emit(v, prefix + [k])

    emit(tree, [])
    return "\n".join(lines)


def plots(study, out):
    """Optuna's optimisation history, parameter importances and the contour of the two most
    important parameters, as PNGs. Returns (file, caption) pairs and the importances."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    import optuna.visualization.matplotlib as vis
    made, importance = [], {}
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    try:
        importance = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError) as e:   # too few complete trials
        made.append(("", "parameter importances: %s" % e))
    jobs = [("history.png", "optimisation history", lambda: vis.plot_optimization_history(study))]
    if importance:
        jobs.append(("importances.png", "parameter importances (fANOVA)", lambda: vis.plot_param_importances(study)))
        top = list(importance)[:2]
        if len(top) == 2:
            jobs.append(("contour.png", "objective over %s and %s" % tuple(top),
                         lambda: vis.plot_contour(study, params=top)))
    for fname, caption, draw in jobs:
        try:
            ax = draw()
            fig = (ax.flat[0] if hasattr(ax, "flat") else ax).figure
            fig.set_size_inches(8, 5)
            fig.savefig(Path(out) / fname, dpi=80, bbox_inches="tight")
            plt.close(fig)
            made.append((fname, caption))
        except Exception as e:  # a plot must never lose the gains or the report
            made.append(("", "%s failed: %r" % (caption, e)))
    return made, importance


def thesis_figure(path):
    """(e_rms, phi_rms, where) of the thesis row a scenario file is, or None."""
    from host import experiments
    p = Path(path).resolve()
    for name, fname, e_t, p_t, _q, where in experiments.ROWS:
        for d in (experiments.SCEN, ROOT / "scenarios" / "tuned"):
            if p == (d / fname).resolve():
                return e_t, p_t, where
    if p == (ROOT / "scenarios" / "reference.toml").resolve():
        return experiments.ROWS[0][2], experiments.ROWS[0][3], experiments.ROWS[0][5]
    return None


def _both(c, params):
    return c, run_case(c, None), run_case(c, params)


def validate(rows, params, jobs):
    """Each row with its own (thesis) gains and with the tuned gains, in parallel processes."""
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        return list(ex.map(_both, rows, [params] * len(rows)))


def _e(x, spec="%.3e"):
    return "" if x is None else spec % x


def study_span(study):
    """(worker processes that ran trials, minutes from the first start to the last end)."""
    done = [t for t in study.trials if t.datetime_complete]
    if not done:
        return 0, 0.0
    t0 = min(t.datetime_start for t in done)
    t1 = max(t.datetime_complete for t in done)
    return len({t.user_attrs.get("worker") for t in done}), (t1 - t0).total_seconds() / 60


def report(out, study, meta, results, made, importance, thesis, best):
    span = study_span(study)
    lines = ["# Gain tuning: thesis gains vs tuned gains", "",
             "Generated by `linkteam tune` (host/tune.py) on %s. Study `%s` (%s), TPE sampler, median pruner; "
             "objective: %s over the training runs of J = e_rms/e_rms(thesis gains) + %.1f max(0, phi ratio - 1) "
             "+ %.1f (saturated-tick fraction above the thesis gains'); a diverged run scores %g."
             % (time.strftime("%Y-%m-%d %H:%M"), meta["study"], meta["storage"], meta["objective"], W_PHI, W_SAT, DIVERGED),
             "", "Study started by `%s`; this report by `%s`." % (study.user_attrs.get("command", "?"), meta["command"]),
             "", "Training runs: %s. Trials in the study: %d (%d complete, %d pruned), run by %d worker process(es) "
             "over %.0f min (first start to last end); this invocation added %d with %d worker(s) in %.0f s. "
             "Best trial #%d, objective %.4f (the thesis gains score 1 on each nominal training run)."
             % (", ".join(meta["training"]), meta["n_trials"], meta["complete"], meta["pruned"], span[0], span[1],
                meta["added"], meta["workers"], meta["wall"], best.number, best.value), "",
             "## Rows: thesis gains vs tuned gains", "",
             "'seen' = run in training (the robustness variants of a training scenario count as seen with --robust). "
             "Ratios below 1: the tuned gains are better.", "",
             "| row | seen in training | thesis figure e_rms (m) | e_rms thesis gains (m) | e_rms tuned (m) "
             "| tuned / thesis gains | tuned / thesis figure | phi_rms thesis gains (rad) | phi_rms tuned (rad) | status tuned |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c, r0, r1 in results:
        fig = thesis_figure(c["path"]) if not c["change"] else None
        ratio = r1["e_rms"] / r0["e_rms"] if r0["status"] == r1["status"] == "ok" else None
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["label"], "yes" if c.get("seen") else "no", _e(fig[0]) if fig else "",
            _e(r0["e_rms"]) + ("" if r0["status"] == "ok" else " (aborted)"),
            _e(r1["e_rms"]) + ("" if r1["status"] == "ok" else " (aborted)"),
            _e(ratio, "%.2f"), _e(r1["e_rms"] / fig[0], "%.2f") if fig and r1["status"] == "ok" else "",
            _e(r0["phi_rms"]), _e(r1["phi_rms"]),
            r1["status"] + (": " + r1["reason"] if r1["reason"] else "")))
    lines += ["", "## Gains", "", "| field | thesis gains | tuned | range searched | importance |", "|---|---|---|---|---|"]
    for key, (lo, hi, log) in meta["space"].items():
        lines.append("| %s | %.4g | %.4g | %.4g .. %.4g%s | %s |" % (
            key, thesis[key], best.params[key], lo, hi, " (log)" if log else "",
            "%.3f" % importance[key] if key in importance else ""))
    lines += ["", "The tuned gains are `gains.toml` beside this report: a scenario takes them with "
              "`extends = [\"its-base.toml\", \"gains.toml\"]`.", "", "## Study plots", ""]
    for fname, caption in made:
        lines += ["**%s**" % caption, "", "![%s](%s)" % (caption, fname) if fname else "", ""]
    path = Path(out) / "report.md"
    path.write_text("\n".join(lines))
    return path


def ship(gains, dest):
    """scenarios/tuned/: the overlay, and one scenario per thesis row that RMDAC drives (not
    the centralised baselines) that extends the row and then the overlay."""
    from host import experiments
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "gains.toml").write_text(Path(gains).read_text())
    rel = os.path.relpath(experiments.SCEN, dest)
    for name, fname, _e_t, _p_t, _q_t, where in experiments.ROWS:
        if read_toml(experiments.SCEN / fname)[0].get("controller", {}).get("kind", "multiagent") != "multiagent":
            continue
        (dest / fname).write_text(
            "# %s (%s) with the tuned gains of gains.toml (linkteam tune; docs in host/tune.py).\n"
            'extends = ["%s/%s", "gains.toml"]\nname = "tuned-%s"\n' % (name, where, rel, fname, name))
    return dest


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
            "training": [c["label"] for c in cases], "n_trials": len(states), "complete": complete,
            "pruned": states.count(optuna.trial.TrialState.PRUNED), "added": a.trials, "workers": a.workers,
            "wall": wall, "robust": a.robust, "space": space, "command": command(a)}
    path = report(out, study, meta, results, made, importance, thesis, best)
    print("report:", path)
    if a.ship:
        print("shipped:", ship(gains, a.ship))
    return 0
