"""A node dies under a running arm, killed from outside: `linkteam run SCENARIO --mode
processes` (one MicroPython process per link) on the UART ring and on CAN, and link L's
process SIGKILLed by this script (not by the run's fault schedule) AT s into the run. With
fault tolerance on (the default: neighbour checks and bridging, docs/design.md §5) the run
ends `degraded`, the dead link listed in summary.json `degraded`, and tracks on: its e_rms
against the same run without the kill (its fault-free twin, same bus and clock).

    .venv/bin/python benchmarks/kill_node.py                       # reference, wall clock, both buses
    .venv/bin/python benchmarks/kill_node.py --bus can --lockstep --duration 6 --at 3

Prints one line per bus (fault-free e_rms, with-kill e_rms, ratio, status, the links
summary.json lists) and with --json writes them; exits 1 when a run is not degraded with
the killed link listed, or its ratio is over --max-ratio (tests/test_kill_node.py runs a
short one). Every process it starts is stopped when it ends, also on failure."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSES = {"uart": ["--bus", "uart", "--topology", "ring"], "can": ["--bus", "can"]}
REACHES = re.compile(r"reaches t = ([0-9.]+) s")


def scenario_file(path, duration, workdir):
    """The scenario, or one that extends it with a shorter duration."""
    if duration is None:
        return Path(path).resolve()
    short = Path(workdir) / ("%s-%gs.toml" % (Path(path).stem, duration))
    short.write_text('extends = %s\nname = "%s"\n\n[simulation]\nduration = %r\n'
                     % (json.dumps(str(Path(path).resolve())), short.stem, float(duration)))
    return short


def run_cmd(scenario, out, bus, lockstep):
    return ([sys.executable, "-m", "host.cli", "run", str(scenario), "--out", str(out), "--force", "--quiet",
             "--no-plots", "--mode", "processes"] + BUSES[bus] + (["--lockstep"] if lockstep else []))


def sim_time(out):
    """How far the running run's time series reaches (its pending summary.json), or None."""
    try:
        reason = json.loads((Path(str(out) + ".partial") / "summary.json").read_text()).get("reason", "")
    except (OSError, ValueError):
        return None
    m = REACHES.search(reason)
    return float(m.group(1)) if m else None


def node_pid(out, link, host_pid):
    """The pid of the MicroPython process of `link` that the run into `out` started: a
    process whose command line names its config, OUT.partial/processes/linkNN.json."""
    config = "%s.partial/processes/link%02d.json" % (out, link)
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == host_pid:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if config in cmd and "micropython" in cmd:
            return int(d)
    return None


def run_and_kill(cmd, out, link, at, timeout):
    """Run cmd; SIGKILL link's node process once the run is `at` s in (simulated time,
    from the run's pending summary, extrapolated between its rewrites). -> (summary or
    None, wall time of the kill after the start or None, what the run printed)."""
    proc = subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    killed_at, seen = None, []   # seen: (wall, sim time) at each new value
    t0 = time.monotonic()
    try:
        while proc.poll() is None and time.monotonic() - t0 < timeout:
            t = sim_time(out)
            now = time.monotonic()
            if t is not None and (not seen or t != seen[-1][1]):
                seen.append((now, t))
            if killed_at is None and seen:
                w, t = seen[-1]
                # simulated s per wall s: 1 on the wall clock; lockstep, as measured
                rate = ((seen[-1][1] - seen[-2][1]) / (seen[-1][0] - seen[-2][0])) if len(seen) > 1 else 1.0
                if t + rate * (now - w) >= at:
                    pid = node_pid(out, link, proc.pid)
                    if pid is not None:
                        os.kill(pid, signal.SIGKILL)
                        killed_at = now - t0
            time.sleep(0.02)
        text = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))[0]
    finally:
        if proc.poll() is None:   # the run and its nodes (their own sessions die with the host)
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    try:
        summary = json.loads((Path(out) / "summary.json").read_text())
    except (OSError, ValueError):
        summary = None
    return summary, killed_at, text.decode("utf-8", "replace")


def run_plain(cmd, out, timeout):
    subprocess.run(cmd, cwd=str(ROOT), capture_output=True, timeout=timeout)
    return json.loads((Path(out) / "summary.json").read_text())


def died_at(summary, link):
    """The run's time when it saw `link`'s process exit (summary.json faults.team), or None."""
    for e in (summary.get("faults") or {}).get("team", ()):
        if e["link"] == link and e["text"].startswith("process exited"):
            return e["t"]
    return None


def measure(scenario, bus, link, at, lockstep, workdir, timeout):
    base, hit = Path(workdir) / ("%s-free" % bus), Path(workdir) / ("%s-kill" % bus)
    free = run_plain(run_cmd(scenario, base, bus, lockstep), base, timeout)
    kill, killed_at, text = run_and_kill(run_cmd(scenario, hit, bus, lockstep), hit, link, at, timeout)
    row = {"bus": "uart ring" if bus == "uart" else bus, "clock": "lockstep" if lockstep else "wall",
           "free_status": free["status"], "free_e_rms_m": free["e_rms_m"], "killed_wall_s": killed_at,
           "status": kill["status"] if kill else "no summary", "e_rms_m": kill["e_rms_m"] if kill else None,
           "died_at_s": died_at(kill, link) if kill else None,
           "degraded": [(x["link"], x["reasons"]) for x in (kill or {}).get("degraded", ())],
           "missed_cycles": (free.get("missed_cycles"), (kill or {}).get("missed_cycles")),
           "reason": (kill or {}).get("reason", text[-500:])}
    row["ratio"] = row["e_rms_m"] / row["free_e_rms_m"] if row["e_rms_m"] is not None else None
    return row


def verdict(row, link, max_ratio):
    """What is wrong with a row ("" when nothing is)."""
    if row["free_status"] != "ok":
        return "the fault-free run is %s" % row["free_status"]
    if row["status"] != "degraded":
        return "status %s, not degraded (%s)" % (row["status"], row["reason"])
    if link not in [x[0] for x in row["degraded"]] or row["died_at_s"] is None:
        return "link %d's death is not listed" % link
    if row["ratio"] > max_ratio:
        return "e_rms %.3g x the fault-free run's (at most %g)" % (row["ratio"], max_ratio)
    return ""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default=str(ROOT / "scenarios" / "reference.toml"))
    p.add_argument("--link", type=int, default=5)
    p.add_argument("--at", type=float, default=15.0, help="s into the run (default 15)")
    p.add_argument("--bus", choices=("uart", "can", "both"), default="both")
    p.add_argument("--lockstep", action="store_true", help="synthetic clock (default: the wall clock)")
    p.add_argument("--duration", type=float, help="run only this long (a scenario extending SCENARIO)")
    p.add_argument("--max-ratio", type=float, default=1.2)
    p.add_argument("--timeout", type=float, default=600.0, help="s for one run (default 600)")
    p.add_argument("--json", help="write the rows here")
    a = p.parse_args(argv)
    rows, bad = [], []
    with tempfile.TemporaryDirectory(prefix="linkteam-kill-") as d:
        sc = scenario_file(a.scenario, a.duration, d)
        for bus in (("uart", "can") if a.bus == "both" else (a.bus,)):
            row = measure(sc, bus, a.link, a.at, a.lockstep, d, a.timeout)
            row["problem"] = verdict(row, a.link, a.max_ratio)
            rows.append(row)
            print("%s %s, link %d SIGKILLed at t=%s s: fault-free e_rms %.6g m, with the kill %s m, ratio %s, "
                  "status %s, listed %s, missed cycles %s%s" % (
                      Path(a.scenario).name, "%s %s" % (row["bus"], row["clock"]), a.link, row["died_at_s"],
                      row["free_e_rms_m"], "%.6g" % row["e_rms_m"] if row["e_rms_m"] is not None else "-",
                      "%.3f" % row["ratio"] if row["ratio"] is not None else "-", row["status"],
                      [x[0] for x in row["degraded"]], row["missed_cycles"],
                      ("  PROBLEM: " + row["problem"]) if row["problem"] else ""), flush=True)
            if row["problem"]:
                bad.append(row)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
