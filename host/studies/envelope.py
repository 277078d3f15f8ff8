"""`linkteam envelope`: how far the reference run holds beyond the thesis's exact arm.

The reference scenario (thesis 6.3.1) is run with one thing changed at a time, each at
payloads 0, 10 and 20 kg: payload alone (0, 2, 5, 10, 20, 40 kg), 5/15/20 links (the
thesis's Table 6.10 arms, scenarios/thesis/dofN.toml), control rate 30/60/240/1000 Hz, every
RMDAC integral gain x0.5 and x2, and a folded start pose. Writes ENVELOPE.md (status,
e_rms, e_max, time of divergence and, for a diverged cell, what the time series shows)
and figures/envelope.png (a heat map of e_rms).

    linkteam envelope [--jobs N] [--duration S] [--out DIR]
"""
import time
from concurrent.futures import as_completed
from pathlib import Path

from host.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
PAYLOADS = (0.0, 2.0, 5.0, 10.0, 20.0, 40.0)
VARIANT_PAYLOADS = (0.0, 10.0, 20.0)
FOLDED_Q = 1.0   # folded start: joints 2..N at +1, -1, +1, ... rad (joint 1 at 0)
MAX_JOBS = 2


class Cell:
    """One run: the reference with `links`, payload (kg), control rate (Hz), RMDAC integral
    gains times `gain`, start `pose` ("straight" | "folded"), plus an `extra` overlay
    (named by `tag`)."""

    def __init__(self, row, links=10, payload=10.0, rate=120.0, gain=1.0, pose="straight", extra=None, tag=""):
        self.row, self.links, self.payload, self.rate, self.gain, self.pose = row, links, payload, rate, gain, pose
        self.extra, self.tag = extra or {}, tag

    @property
    def name(self):
        return "L%d-p%g-r%g-g%g-%s%s" % (self.links, self.payload, self.rate, self.gain, self.pose,
                                         "-" + self.tag if self.tag else "")

    @property
    def thesis_gains_nominal(self):
        """Payload 0-20 kg, rate >= 120 Hz, the thesis's gains (nothing else changed): the
        cells that must hold."""
        return self.payload <= 20.0 and self.rate >= 120.0 and self.gain == 1.0 and not self.extra

    def base(self):
        return SCENARIOS / "reference.toml" if self.links == 10 else SCENARIOS / "thesis" / ("dof%d.toml" % self.links)

    def overlay(self, base_data, duration=None):
        """The tables an `extends`-ing scenario file would write for this cell."""
        from host.rmdac import U1_NAMES
        ov = {"name": self.name, "payload": {"mass": float(self.payload)},
              "simulation": {"control_rate_hz": float(self.rate)}}
        if duration is not None:
            ov["simulation"]["duration"] = float(duration)
        if self.gain != 1.0:
            ov["rmdac"] = {t: {k: base_data["rmdac"][t].get(k, 0.0) * self.gain for k in U1_NAMES}
                           for t in ("linear", "rotation")}
        if self.pose == "folded":
            ov["robot"] = {"override": [{"links": list(range(2, self.links + 1, 2)), "q0": FOLDED_Q},
                                        {"links": list(range(3, self.links + 1, 2)), "q0": -FOLDED_Q}]}
        for table, values in self.extra.items():
            ov[table] = dict(ov.get(table, {}), **values) if isinstance(values, dict) else values
        return ov


def cells():
    out = [Cell("payload", payload=p) for p in PAYLOADS]
    for p in VARIANT_PAYLOADS:
        out += [Cell("%d links" % n, links=n, payload=p) for n in (5, 15, 20)]
        out += [Cell("%g Hz" % r, rate=r, payload=p) for r in (30.0, 60.0, 240.0, 1000.0)]
        out += [Cell("gains x%g" % g, gain=g, payload=p) for g in (0.5, 2.0)]
        out.append(Cell("folded start", pose="folded", payload=p))
    return out


def _run_cell(cell, out_dir, duration):
    """Worker: run one cell; return its summary with the diagnosis of a divergence."""
    from host.run import run_scenario
    from host.scenario.loader import from_dict, merge, read_toml
    data, sources = read_toml(cell.base())
    sc = from_dict(merge(data, cell.overlay(data, duration)), cell.base(), sources)
    summary, run_dir = run_scenario(sc, out_dir, quiet=True, make_plots=False)
    if summary["status"] != "ok":
        summary["diagnosis"] = diagnose(run_dir)
    return summary


def diagnose(run_dir, window=24):
    """What the time series shows before the end of an aborted run: whether the goal
    force alternated sign tick to tick (an oscillation at half the control rate, the
    sampled-data limit of a held force) or grew slowly, and how fast it grew."""
    import numpy as np

    from host.report.run_dir import load_run
    _, d = load_run(run_dir)
    window = min(window, len(d.get("t", ())) - 1)
    if window < 6:
        return "too few ticks recorded to say"
    f = d["f"][-window - 1:]
    axis = int(np.argmax(np.abs(f).max(axis=0)))
    x = f[:, axis]
    flips = int(np.sum(np.sign(x[1:]) * np.sign(x[:-1]) < 0))
    t = d["t"][-window - 1:]
    grow = abs(x[-1]) / max(abs(x[0]), 1e-9)
    names = ("f_x", "f_y", "f_z", "m_x", "m_y", "m_z")
    kind = ("tick-to-tick oscillation (sign flips on %d of the last %d ticks)" % (flips, window)
            if flips >= 0.75 * window else "no tick-to-tick oscillation (%d sign flips in the last %d ticks)"
            % (flips, window))
    err = np.linalg.norm(d["p_d"] - d["p"], axis=1)
    big = np.nonzero(err > 0.01)[0]
    first = ("error first above 10 mm at t = %.3f s" % d["t"][big[0]]) if len(big) else "error below 10 mm"
    strong = np.nonzero(np.abs(d["f"]).max(axis=1) > 1e3)[0]
    if len(strong):
        k = strong[0]
        first += "; goal force first above 1 kN at t = %.3f s, error %.1f mm then" % (d["t"][k], err[k] * 1e3)
    return "%s of %s, which grew x%.3g in %.3f s to %.3g; %s" % (kind, names[axis], grow, t[-1] - t[0], x[-1], first)


def run(selection=None, jobs=2, out_dir=None, duration=None, progress=True):
    """Run the cells (default: all), write ENVELOPE.md and figures/envelope.png into out_dir
    (default experiments/). Returns ({cell name: summary}, report path)."""
    from host.studies.experiments import Bar, pool
    out = Path(out_dir or ROOT / "experiments")
    todo = list(selection or cells())
    runs = out / "envelope-runs"
    runs.mkdir(parents=True, exist_ok=True)
    bar = Bar(len(todo)) if progress else None
    results = {}
    with pool(max(1, min(jobs, MAX_JOBS))) as ex:
        futs = {ex.submit(_run_cell, c, str(runs / c.name), duration): c for c in todo}
        for fut in as_completed(futs):
            c = futs[fut]
            try:
                results[c.name] = fut.result()
            except Exception as e:  # a cell that cannot run is reported, not fatal for the table
                results[c.name] = {"status": "error", "reason": "%s: %s" % (type(e).__name__, e)}
            if bar:
                bar.update(c.name)
    figure = heatmap(todo, results, out / "figures" / "envelope.png")
    return results, write_report(out, todo, results, figure, duration)


def _t_div(s):
    """When an aborted run stopped (s)."""
    return s.get("sim_seconds") if s.get("status") == "aborted" else None


def _fmt(x, spec):
    return "" if x is None else spec % x


def table(todo, results):
    lines = ["| row | links | payload (kg) | rate (Hz) | gains | start | status | e_rms (mm) | e_max (mm) "
             "| diverged at (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in todo:
        s = results.get(c.name, {})
        e, emax = s.get("e_rms_m"), s.get("e_max_m")
        lines.append("| %s | %d | %g | %g | x%g | %s | %s | %s | %s | %s |" % (
            c.row, c.links, c.payload, c.rate, c.gain, c.pose, s.get("status", "not run"),
            _fmt(e and e * 1e3, "%.2f"), _fmt(emax and emax * 1e3, "%.1f"), _fmt(_t_div(s), "%.2f")))
    return "\n".join(lines)


def write_report(out, todo, results, figure, duration):
    bad = [c for c in todo if results.get(c.name, {}).get("status") != "ok"]
    must = [c for c in todo if c.thesis_gains_nominal]
    must_bad = [c for c in must if c in bad]
    lines = ["# Robustness envelope of the reference run", "",
             "Generated by `linkteam envelope` (host/studies/envelope.py) on %s. Each cell is the reference "
             "scenario (thesis 6.3.1: 10 links, SquareWave, 'Best Gains', 120 Hz, straight start) with "
             "the row's change, at the payload given; %s, in-process lockstep. 5/15/20 links are the "
             "thesis's Table 6.10 arms (`scenarios/thesis/dofN.toml`); 'gains' scales every RMDAC integral "
             "gain (delta, alpha, beta, nu, gamma, lambda) of both tables; the folded start puts joints "
             "2..N at +%g, -%g, ... rad. A run aborts as diverged when the end-effector error passes "
             "2 m. Runs: `%s/`." % (time.strftime("%Y-%m-%d %H:%M"),
                                    "%g s each" % duration if duration else "the whole 40 s",
                                    FOLDED_Q, FOLDED_Q, (out / "envelope-runs").name),
             "",
             "%d cells, %d ok. Cells with payload 0-20 kg, rate >= 120 Hz and the thesis's gains: %d, %s."
             % (len(todo), len(todo) - len(bad), len(must),
                "all ok" if not must_bad else "NOT ok: " + ", ".join(c.name for c in must_bad)),
             "", table(todo, results), ""]
    if bad:
        lines += ["## Why cells did not hold", "",
                  "Measured on each aborted run's time series (the goal force over its last ticks, up to 24):", ""]
        for c in bad:
            s = results.get(c.name, {})
            lines.append("* **%s, %g kg** (`%s`): %s. %s" % (c.row, c.payload, c.name, s.get("reason", ""),
                                                            s.get("diagnosis", "")))
        lines += ["", "A tick-to-tick oscillation is the sampled-data limit of a force held for a whole "
                  "control period: with velocity gain Kv on an effective mass m it grows once "
                  "T Kv / m > 2 (T the control period), so it comes with slow rates, large gains and light "
                  "end effectors. RMDAC lowers Kv again when it sees one (docs/design.md §4), but not "
                  "necessarily before the error passes the divergence bound.", ""]
    notes = out / "ENVELOPE_NOTES.md"
    if notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    if figure:
        lines += ["![e_rms of every cell](figures/%s)" % figure.name, ""]
    report = out / "ENVELOPE.md"
    report.write_text("\n".join(lines))
    return report


def heatmap(todo, results, path):
    """e_rms (mm, log colour scale) by row and payload; diverged cells black with the time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    rows = list(dict.fromkeys(c.row for c in todo))
    cols = sorted({c.payload for c in todo})
    grid = np.full((len(rows), len(cols)), np.nan)
    fig, ax = plt.subplots(figsize=(1.1 * len(cols) + 2.5, 0.45 * len(rows) + 1.4))
    for c in todo:
        s = results.get(c.name, {})
        i, j = rows.index(c.row), cols.index(c.payload)
        if s.get("status") == "ok":
            grid[i, j] = s["e_rms_m"] * 1e3
            ax.text(j, i, "%.1f" % grid[i, j], ha="center", va="center", fontsize=8)
        else:
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, color="k"))
            label = "div %.1f s" % _t_div(s) if _t_div(s) is not None else s.get("status", "?")
            ax.text(j, i, label, ha="center", va="center", fontsize=7, color="w")
    finite = grid[np.isfinite(grid)]
    vmin, vmax = (max(finite.min(), 1e-3), finite.max()) if finite.size else (1.0, 10.0)
    im = ax.imshow(grid, cmap="viridis", norm=matplotlib.colors.LogNorm(vmin=vmin, vmax=max(vmax, vmin * 1.01)),
                   aspect="auto")
    fig.colorbar(im, ax=ax, label="e_rms (mm)")
    ax.set_xticks(range(len(cols)), ["%g" % p for p in cols])
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("payload (kg)")
    ax.set_title("Reference run: e_rms by change and payload (black: aborted)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(args):
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1, not %d" % args.jobs)
    if args.duration is not None and not 0 < args.duration < float("inf"):
        raise UsageError("--duration must be a positive number of simulated seconds, not %g" % args.duration)
    results, report = run(jobs=args.jobs, out_dir=args.out, duration=args.duration, progress=not args.quiet)
    ok = sum(1 for s in results.values() if s.get("status") == "ok")
    print("%d/%d cells ok; report: %s" % (ok, len(results), report))
    must_bad = [c.name for c in cells() if c.thesis_gains_nominal and c.name in results
                and results[c.name].get("status") != "ok"]
    return 3 if must_bad else 0

