"""`linkteam experiments`: every thesis experiment (docs/design.md §10, with the centralised
baselines of Table 8.19) as a scenario under scenarios/thesis/, run in parallel processes,
reported in experiments/REPORT.md beside the thesis's figures with plots.

    linkteam experiments [--only NAME ...] [--jobs N] [--out DIR]
"""
import json
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCEN = ROOT / "scenarios" / "thesis"

# name, scenario file, thesis e_rms (m), phi_rms (rad), q_rms, where in the thesis
ROWS = [
    ("reference", "reference.toml", 2.779e-3, 2.850e-2, 7.848, "Table 6.9"),
    ("step", "step.toml", 1.132e-1, 9.179e-2, None, "Table 6.9"),
    ("spiral", "spiral.toml", 4.348e-3, 7.372e-3, None, "Table 6.9"),
    ("dof5", "dof5.toml", 5.331e-3, 1.737e-2, None, "Table 6.10"),
    ("dof10", "dof10.toml", 3.059e-3, 6.014e-3, None, "Table 6.10"),
    ("dof15", "dof15.toml", 2.404e-3, 5.376e-3, None, "Table 6.10"),
    ("dof20", "dof20.toml", 1.965e-3, 5.196e-3, None, "Table 6.10"),
    ("saturation", "saturation.toml", 2.779e-3, None, None, "6.3.3 ('virtually identical' to reference)"),
    ("obstacle", "obstacle.toml", 3.481e-3, 5.989e-3, None, "Table 7.11"),
    ("failsafe-link9", "failsafe-link9.toml", 3.285e-3, 5.528e-3, None, "Table 7.12"),
    ("centering-30", "centering-30.toml", 4.573e-3, 8.034e-3, 2.813, "Table 7.13"),
    ("centering-50", "centering-50.toml", 5.023e-3, 9.346e-3, 2.738, "Table 7.13"),
    ("centering-100", "centering-100.toml", 5.963e-3, 1.424e-2, 2.700, "Table 7.13"),
    ("centering-225", "centering-225.toml", 8.183e-3, 2.988e-2, 2.675, "Table 7.13"),
    ("retraction", "retraction.toml", 2.244e-3, 5.782e-3, None, "Table 7.15"),
    ("compliance-increasing", "compliance-increasing.toml", 4.972e-3, 1.082e-2, None, "Table 7.17"),
    ("compliance-decreasing", "compliance-decreasing.toml", 6.045e-3, 1.238e-2, None, "Table 7.17"),
    ("avoidance", "avoidance.toml", 2.537e-3, 5.475e-3, 9.904, "Table 7.18"),
    ("combined", "combined.toml", 4.679e-3, 7.626e-3, 2.239, "Table 7.18"),
    ("combined-half", "combined-half.toml", 3.999e-3, 8.046e-3, 2.292, "Table 7.18"),
    ("joint-limits", "joint-limits.toml", None, None, None, "7.4.2 (figs 7.47-7.48, no figure)"),
    ("weight-2", "weight-2.toml", None, None, None, "7.7 (thesis: unstable)"),
    ("rmac-nullspace", "rmac-nullspace.toml", 1.257e-2, 1.109e-2, 1.908, "Table 8.19 (RMAC, null space)"),
    ("rmac", "rmac.toml", 5.612e-2, 7.756e-2, 1.942, "Table 8.19 (RMAC, no task assignment)"),
    ("computed-torque", "computed-torque.toml", None, None, None, "Hamilton et al. eq. 2 (no thesis figure)"),
]
# Table 8.19: strategy, our row, thesis e_rms, phi_rms, q_rms
TABLE_8_19 = [("RMAC with task assignment (null space)", "rmac-nullspace", 1.257e-2, 1.109e-2, 1.908),
              ("RMAC without task assignment", "rmac", 5.612e-2, 7.756e-2, 1.942),
              ("Multiagent control", "centering-100", 5.963e-3, 1.424e-2, 2.700),
              ("Computed torque (Hamilton eq. 2, IK null space)", "computed-torque", None, None, None)]
NAMES = [r[0] for r in ROWS]

# (figure file, run, kind, caption) for the report
FIGURES = [
    ("tracking.png", None, "tracking", "Tracking error |p_d - p_n| of every run (thesis figs 6.30-6.37, 7.41, 7.49, 7.65)"),
    ("reference-configurations.png", "reference", "snapshots", "Reference arm at the knot points (thesis fig. 6.31)"),
    ("failsafe-configurations.png", "failsafe-link9", "snapshots", "Link 9 braked: arm at the knot points (thesis fig. 7.50)"),
    ("retraction-configurations.png", "retraction", "snapshots", "Retraction: arm at the knot points (thesis fig. 7.59)"),
    ("combined-configurations.png", "combined", "snapshots", "Tracking + avoidance + centering at the knot points (thesis fig. 7.66)"),
    ("obstacle-behaviours.png", "obstacle", "behaviours", "Obstacle run: torque by behaviour per link, range to surface (thesis figs 7.42-7.46)"),
    ("centering-behaviours.png", "centering-100", "behaviours", "Centering kq=100: torque by behaviour per link (thesis figs 7.54-7.58)"),
    ("combined-behaviours.png", "combined", "behaviours", "Combined: range, avoidance, centering and tracking torques (thesis figs 7.67-7.71)"),
    ("obstacle-range.png", "obstacle", "range", "Obstacle run: range from each link to the sphere's surface, clearance 0.75 m"),
    ("spiral-path.png", "spiral", "path", "Spiral: desired and actual end-effector path (thesis fig. 6.32)"),
]



PR_SET_PDEATHSIG = 1   # prctl(2)


def _die_with_parent(parent):
    """Pool worker start: the kernel kills this worker when the process that made the pool
    ends (prctl(2) PR_SET_PDEATHSIG), so a SIGTERM or SIGKILL to the command leaves no
    worker running cells on its own."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):   # not Linux
        return
    if os.getppid() != parent:   # the parent ended before prctl took effect
        os._exit(1)


def pool(jobs):
    """A process pool whose workers end with this process (_die_with_parent)."""
    return ProcessPoolExecutor(max_workers=jobs, initializer=_die_with_parent, initargs=(os.getpid(),))


def _run_one(name, path, out_dir):
    """Worker: run one scenario; return its summary (plots written in the run dir)."""
    from host.run import run_scenario
    from host.scenario.loader import load
    sc = load(path)
    summary, _ = run_scenario(sc, out_dir, quiet=True, make_plots=True)
    return name, summary


class Bar:
    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.stream, self.t0 = total, 0, stream, time.perf_counter()

    def update(self, label):
        self.done += 1
        w = 30
        fill = int(w * self.done / max(self.total, 1))
        self.stream.write("\rexperiments [%s%s] %d/%d  %.0f s  %-24s" % (
            "#" * fill, "." * (w - fill), self.done, self.total, time.perf_counter() - self.t0, label[:24]))
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def run(only=None, jobs=2, out_dir=None, progress=True, scenario_dir=None):
    out = Path(out_dir or ROOT / "experiments")
    scen = Path(scenario_dir or SCEN)
    rows = [r for r in ROWS if not only or r[0] in only]
    tuned_dir = scen.parent / "tuned"   # scenarios/tuned/: the rows with the gains of `linkteam tune`
    tuned = [("tuned-" + r[0], tuned_dir / r[1]) for r in rows if (tuned_dir / r[1]).exists()]
    unknown = sorted(set(only or ()) - set(NAMES))
    if unknown:
        raise ValueError("unknown experiment(s) %s; known: %s" % (", ".join(unknown), ", ".join(NAMES)))
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    bar = Bar(len(rows) + len(tuned)) if progress else None
    results = {}
    with pool(max(1, jobs)) as ex:
        futs = [ex.submit(_run_one, r[0], str(scen / r[1]), str(runs / r[0])) for r in rows]
        futs += [ex.submit(_run_one, name, str(path), str(runs / name)) for name, path in tuned]
        for f in as_completed(futs):
            try:
                name, summary = f.result()
            except Exception as e:  # a scenario error is reported, not fatal for the table
                name, summary = "?", {"status": "error", "reason": repr(e)}
            results[name] = summary
            if bar:
                bar.update(name)
    # rows whose runs were not repeated keep their last results (REPORT covers all)
    for name in [r[0] for r in ROWS] + ["tuned-" + r[0] for r in ROWS]:
        if name not in results and (runs / name / "summary.json").exists():
            results[name] = json.loads((runs / name / "summary.json").read_text())
    for name, s in results.items():
        s.setdefault("e_rms_after_2s_m", _late_rms(runs / name))
    report = write_report(out, results)
    return results, report


def _late_rms(run_dir, t_from=2.0):
    """e_rms without the start transient (the straight, near-singular start pose)."""
    import numpy as np
    p = Path(run_dir) / "timeseries.npz"
    if not p.exists():
        return None
    d = np.load(p)
    keep = d["t"] >= t_from
    if not keep.any():
        return None
    return float(np.sqrt(np.mean(np.sum((d["p_d"][keep] - d["p"][keep]) ** 2, axis=1))))


def write_with_notes(out, name, lines):
    """Write out/NAME.md from `lines`, with the hand-written out/NAME-NOTES.md appended."""
    notes = Path(out) / ("%s-NOTES.md" % name)
    if notes.exists():
        lines = lines + [notes.read_text().rstrip(), ""]
    report = Path(out) / ("%s.md" % name)
    report.write_text("\n".join(lines))
    return report


def _fmt(x, spec="%.3e"):
    return "" if x is None else spec % x


def _ratio(ours, thesis):
    if ours is None or thesis is None or thesis == 0:
        return ""
    return "%.2f" % (ours / thesis)


def table(results):
    lines = ["| experiment | thesis | e_rms ours (m) | e_rms thesis (m) | ratio | ours after 2 s (m) "
             "| phi_rms ours (rad) | phi_rms thesis (rad) | ratio | q_rms ours | q_rms thesis | collisions | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, fname, e_t, p_t, q_t, where in ROWS:
        s = results.get(name)
        if s is None:
            lines.append("| %s | %s | not run | %s | | | | %s | | | %s | | |" % (name, where, _fmt(e_t), _fmt(p_t), _fmt(q_t, "%.3f")))
            continue
        e, p, q = s.get("e_rms_m"), s.get("phi_rms_rad"), s.get("q_rms_rad")
        lines.append("| [%s](runs/%s/) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, name, where, _fmt(e), _fmt(e_t), _ratio(e, e_t), _fmt(s.get("e_rms_after_2s_m")),
            _fmt(p), _fmt(p_t), _ratio(p, p_t),
            _fmt(q, "%.3f"), _fmt(q_t, "%.3f"), s.get("collisions", ""),
            s.get("status", "") + ((": " + s["reason"]) if s.get("reason") else "")))
    return "\n".join(lines)


def tuned_table(results):
    """The rows again with the gains of `linkteam tune` (scenarios/tuned/) beside the thesis gains."""
    lines = ["## Thesis gains vs tuned gains (`scenarios/tuned/`, `linkteam tune`)", "",
             "| experiment | e_rms thesis (m) | e_rms thesis gains (m) | ratio | e_rms tuned (m) | ratio "
             "| phi_rms thesis gains (rad) | phi_rms tuned (rad) | status tuned |", "|---|---|---|---|---|---|---|---|---|"]
    for name, _f, e_t, _p, _q, _w in ROWS:
        s, t = results.get(name, {}), results.get("tuned-" + name)
        if t is None:
            continue
        lines.append("| [%s](runs/tuned-%s/) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, name, _fmt(e_t), _fmt(s.get("e_rms_m")), _ratio(s.get("e_rms_m"), e_t), _fmt(t.get("e_rms_m")),
            _ratio(t.get("e_rms_m"), e_t), _fmt(s.get("phi_rms_rad")), _fmt(t.get("phi_rms_rad")),
            t.get("status", "") + ((": " + t["reason"]) if t.get("reason") else "")))
    return "\n".join(lines) + "\n" if len(lines) > 4 else ""


def table_8_19(results):
    """Table 8.19 beside ours, and e_rms relative to the multiagent row (thesis and ours)."""
    ma = results.get("centering-100", {}).get("e_rms_m")
    lines = ["## Table 8.19: multiagent against centralised control (the centering-100 task)", "",
             "| strategy | e_rms ours (m) | e_rms thesis (m) | phi_rms ours | phi_rms thesis | q_rms ours "
             "| q_rms thesis | e_rms / multiagent, ours | e_rms / multiagent, thesis |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, name, e_t, p_t, q_t in TABLE_8_19:
        s = results.get(name, {})
        e = s.get("e_rms_m")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, _fmt(e), _fmt(e_t), _fmt(s.get("phi_rms_rad")), _fmt(p_t), _fmt(s.get("q_rms_rad"), "%.3f"),
            _fmt(q_t, "%.3f"), _ratio(e, ma), _ratio(e_t, 5.963e-3)))
    return "\n".join(lines)


def write_report(out, results):
    out = Path(out)
    figs = out / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    made = []
    try:
        made = make_figures(out / "runs", figs, results)
    except Exception as e:  # the table must survive a plotting failure
        made = [("", "plotting failed: %r" % (e,))]
    notes_path = out / "NOTES.md"
    lines = ["# Thesis experiments: our figures beside the thesis's", "",
             "Generated by `linkteam experiments` (host/studies/experiments.py) on %s from the scenarios in "
             "`scenarios/thesis/`. Thesis figures: "
             "docs/design.md §10 (Monckton 1997, Tables 6.9-8.19). Ratio = ours / thesis (below 1: we are better). "
             "Run directories (summary.json, timeseries.npz, plots) are under `experiments/runs/`; "
             "`linkteam animate experiments/runs/NAME` draws any of them as a GIF." % time.strftime("%Y-%m-%d %H:%M"),
             "", table(results), "", tuned_table(results), table_8_19(results), ""]
    if notes_path.exists():
        lines += [notes_path.read_text().rstrip(), ""]
    lines += ["## Figures", ""]
    for fname, caption in made:
        lines += ["**%s**" % caption, "", "![%s](figures/%s)" % (caption, fname) if fname else "", ""]
    report = out / "REPORT.md"
    report.write_text("\n".join(lines))
    return report


def make_figures(runs, figs, results):
    import numpy as np

    from host.report import plots
    made = []
    data = {}

    def load(name):
        if name not in data:
            p = Path(runs) / name / "timeseries.npz"
            data[name] = dict(np.load(p)) if p.exists() else None
        return data[name]

    for fname, name, kind, caption in FIGURES:
        if kind == "tracking":
            names = [r[0] for r in ROWS if load(r[0]) is not None]
            if not names:
                continue
            plots.tracking_grid({n: load(n) for n in names}, figs / fname)
        else:
            d = load(name)
            if d is None:
                continue
            knots = [0.0] + list(d.get("knot_times", []))
            if kind == "snapshots":
                plots.snapshots_plot(d, figs / fname, name, knots, dpi=70)
            elif kind == "behaviours":
                plots.behaviour_plot(d, figs / fname, name, with_range=True, dpi=70)
            elif kind == "range":
                plots.range_plot(d, figs / fname, name, dpi=80)
            elif kind == "path":
                plots.path_plot(d, figs / fname, name, knots, dpi=80)
        made.append((fname, caption))
    return made


def main(args):
    only = args.only or None
    try:
        results, report = run(only, args.jobs, args.out, progress=not args.quiet)
    except ValueError as e:
        sys.stderr.write("linkteam: %s\n" % e)
        return 2
    print(table(results))
    print("report:", report)
    from host.runners.stats import finished
    bad = [n for n, s in results.items() if not finished(s)]   # (failsafe-link9 ends degraded: braked on purpose)
    return 0 if not bad else 3
