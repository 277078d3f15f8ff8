"""The two agent cores against each other: every scenario under scenarios/ run in-process
once with the pure-Python core (a CPython process with LINKTEAM_PURE_PYTHON=1) and once
with linkcore (the C core built for CPython by `make setup`) gives the same time series,
bit for bit; each run's summary.json `cores` says which core every link's agent ran on.

    .venv/bin/python benchmarks/core_diff.py                  # every scenario, full length
    .venv/bin/python benchmarks/core_diff.py --duration 1     # the first second of each
    .venv/bin/python benchmarks/core_diff.py scenarios/faults/link5-dies.toml

With --duration D a scenario runs D s, its faults moved to start at D/2 (so they still
act). Prints a line per scenario (same or where it differs, and the links that ran on
linkcore) and exits 1 when a time series differs or the linkcore run has a link on the
pure Python. tests/test_core_diff.py runs it on every scenario at --duration 1.
`--worker DIR` (internal) runs the scenarios in this process into DIR."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scenarios():
    """Every scenario under scenarios/: TOML files (not the gains overlays that
    `linkteam tune` writes, which only `extends` lists) and thesis NAME.scenario directories."""
    found = [p for p in (ROOT / "scenarios").rglob("*.toml") if p.name != "gains.toml"]
    found += [p for p in (ROOT / "scenarios").rglob("*.scenario") if p.is_dir()]
    return sorted(found)


def slug(path):
    return str(Path(path).resolve().relative_to(ROOT / "scenarios")).replace("/", "__")


def truncated(path, duration):
    """The scenario at `path`, `duration` s long at most, its faults moved to start at
    duration/2 at the latest (keeping their length)."""
    from host.scenario import thesis_format
    from host.scenario.loader import from_dict, read_toml
    path = Path(path)
    if path.is_dir():
        data, sources = thesis_format.to_dict(path), None
    else:
        data, sources = read_toml(path)
    if duration is not None:
        sim = data.setdefault("simulation", {})
        sim["duration"] = min(float(sim.get("duration", duration)), duration)
        for f in data.get("fault", ()):
            shift = max(0.0, float(f.get("start", 0.0)) - sim["duration"] / 2)
            f["start"] = float(f.get("start", 0.0)) - shift
            if "end" in f:
                f["end"] = float(f["end"]) - shift
    return from_dict(data, path, sources)


def worker(out, paths, duration):
    """Run every scenario in this process into out/SLUG (one line each on stdout)."""
    from host.run import run_scenario
    for p in paths:
        sc = truncated(p, duration)
        s, _ = run_scenario(sc, Path(out) / slug(p), quiet=True, make_plots=False, previous="replace",
                            telemetry=False)
        print("RAN %s %s %s" % (slug(p), s["status"], ",".join(s.get("cores") or ())), flush=True)


def run_worker(out, paths, duration, pure, timeout=3600):
    env = dict(os.environ)
    env.pop("LINKTEAM_PURE_PYTHON", None)
    if pure:
        env["LINKTEAM_PURE_PYTHON"] = "1"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(out)]
    cmd += (["--duration", repr(duration)] if duration is not None else []) + [str(p) for p in paths]
    r = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s worker failed:\n%s" % ("pure-Python" if pure else "linkcore", r.stderr[-3000:]))
    return r.stdout


def run_both(out, paths, duration):
    """The two workers side by side: -> (pure-Python run directory, linkcore run directory)."""
    dirs = (Path(out) / "python", Path(out) / "linkcore")
    with ThreadPoolExecutor(2) as ex:
        for f in [ex.submit(run_worker, d, paths, duration, pure) for d, pure in zip(dirs, (True, False))]:
            f.result()
    return dirs


def compare(pure_dir, core_dir, path):
    """-> (differences, the linkcore run's cores, the pure run's cores): differences is a
    list of what differs (empty: the same time series, bit for bit, and summary figures)."""
    import numpy as np
    a_dir, b_dir = Path(pure_dir) / slug(path), Path(core_dir) / slug(path)
    sa = json.loads((a_dir / "summary.json").read_text())
    sb = json.loads((b_dir / "summary.json").read_text())
    for s in (sa, sb):   # (a node's cycle_us is its compute time: not a result)
        s["nodes"] = [dict(x, cycle_us=None) for x in s.get("nodes") or ()]
    diff = ["%s: %r / %r" % (k, sa.get(k), sb.get(k)) for k in ("status", "reason", "e_rms_m", "phi_rms_rad",
                                                                "sim_seconds", "nodes", "degraded")
            if sa.get(k) != sb.get(k)]
    a, b = np.load(a_dir / "timeseries.npz"), np.load(b_dir / "timeseries.npz")
    if sorted(a.files) != sorted(b.files):
        diff.append("series %s / %s" % (sorted(a.files), sorted(b.files)))
    for k in sorted(set(a.files) & set(b.files)):
        if a[k].shape != b[k].shape or a[k].tobytes() != b[k].tobytes():
            diff.append("series %s" % k)
    return diff, sb.get("cores") or [], sa.get("cores") or []


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenarios", nargs="*", help="default: every scenario under scenarios/")
    p.add_argument("--duration", type=float, help="run each at most this long (s), faults from its middle")
    p.add_argument("--out", help="keep the runs here (default: a temporary directory)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    paths = [Path(x).resolve() for x in a.scenarios] or scenarios()
    if a.worker:
        worker(a.worker, paths, a.duration)
        return 0
    with tempfile.TemporaryDirectory(prefix="linkteam-cores-") as tmp:
        pure_dir, core_dir = run_both(a.out or tmp, paths, a.duration)
        bad = 0
        for path in paths:
            diff, cores, pure_cores = compare(pure_dir, core_dir, path)
            on_c = [i + 1 for i, c in enumerate(cores) if c == "linkcore"]
            problem = list(diff)
            if "linkcore" in pure_cores:
                problem.append("the pure-Python run used linkcore")
            if cores and len(on_c) < len(cores):
                problem.append("links %s ran on the pure Python in the linkcore run"
                               % [i + 1 for i, c in enumerate(cores) if c != "linkcore"])
            bad += bool(problem)
            print("%-45s %s; linkcore on links %s%s" % (slug(path), "differs" if diff else "same",
                                                       on_c if cores else "none (no agents)",
                                                       ("  PROBLEM: " + "; ".join(problem)) if problem else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
