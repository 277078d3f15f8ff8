"""`linkteam run`: scenario -> runner -> run directory (summary.json, timeseries.npz,
run.log, PNG plots). Whatever happens, the directory gets the log and the reason."""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from host import logs, metrics, plots
from host.runners.base import ControlLoop


def vm_steal_ms():
    """Steal time of all CPUs so far (Linux /proc/stat, 10 ms resolution), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_scenario(sc, out_dir=None, mode="inprocess", quiet=False, make_plots=True, **opts):
    """Run sc into out_dir (default runs/NAME), written as it goes (host/logs.py: RunDir);
    returns (summary, run directory)."""
    header = "scenario %s (%s), %d links, mode %s" % (sc.name, sc.path, sc.n, mode)
    with logs.RunDir(out_dir or Path("runs") / sc.name, header) as rd:
        summary = _run(sc, rd, mode, quiet, make_plots, opts)
    return summary, rd.final


def _run(sc, rd, mode, quiet, make_plots, opts):
    out_dir = rd.path
    log_lines = []
    loop = ControlLoop(sc, mode)
    rd.attach(loop)
    progress = None if quiet or not sys.stderr.isatty() else ProgressBar(sc.name)
    steal0 = vm_steal_ms()
    if mode == "inprocess":
        from host.runners import inprocess
        inprocess.run(loop, progress)
    elif mode == "hil":
        from host.runners import hil
        hil.run(loop, progress, **opts)
    else:
        from host.runners import processes
        processes.run(loop, progress, **opts)
    if progress:
        progress.close()
    arr = loop.rec.arrays() if len(loop.rec) else {}
    q_c = np.array([0.5 * (L["q_low"] + L["q_high"]) for L in sc.links])
    summary = {
        "scenario": sc.name, "path": sc.path, "links": sc.n, "mode": mode,
        "clock": loop.clock, "control_rate_hz": sc.control_rate_hz,
        "sim_seconds": float(arr["t"][-1]) if arr else 0.0,
        "wall_seconds": loop.wall_seconds,
    }
    summary["realtime_factor"] = summary["sim_seconds"] / max(loop.wall_seconds, 1e-9)
    summary.update(metrics.summarise(arr, q_c))
    summary.update({"missed_cycles": loop.missed_cycles if loop.clock == "wall" else 0,
                    "collisions": int(loop.plant.collisions),
                    "status": loop.status, "reason": loop.reason})
    summary["bus_errors"] = {"host_bad_frames": loop.gp.decoder.bad}
    agents = getattr(loop, "agents", None)
    if agents:
        summary["bus_errors"]["agent_bad_frames"] = [a.decoder.bad for a in agents]
        summary["agents"] = [{"link": a.link, "state": a.safety.state, "faults": a.safety.faults,
                              "stale_kinematic": a.stale_kin, "late": a.late} for a in agents]
    if mode != "inprocess":
        summary["bus"] = getattr(loop, "bus_kind", opts.get("bus"))
        summary["baud"] = opts.get("baud", 0)
        if getattr(loop, "topology", None):
            summary["topology"] = loop.topology
        summary["late_host_ticks"] = loop.late_start
        summary["host_lag_max_ms"] = loop.host_lag_max * 1e3
        summary["cpu_latency_qos"] = getattr(loop, "cpu_latency_qos", False)
        if getattr(loop, "cpu_us_per_tick", None):
            summary["cpu_us_per_tick"] = loop.cpu_us_per_tick
        totals = getattr(loop, "vm_pause_totals", None)
        if totals is not None:   # hypervisor pauses the sentinels saw, and what the schedule absorbed
            summary["vm_pauses"] = {"count": totals[0], "total_ms": round(totals[1], 2),
                                    "ticks_moved": loop.paused_ticks,
                                    "moved_ms": round(loop.paused_total * 1e3, 2)}
        if steal0 is not None:   # time the hypervisor ran something else on our vCPUs
            summary["vm_steal_ms"] = vm_steal_ms() - steal0
        if getattr(loop, "late_detail", None):
            summary["late_cycles"] = loop.late_detail
        for key, name in (("cycle_times", "bus_cycle_ms"), ("goal_times", "goal_sent_ms")):
            ct = getattr(loop, key, None)   # goal_sent_ms: the kinematic wave and RMDAC's part of it
            if ct:
                a = np.sort(np.array(ct)) * 1e3
                summary[name] = {"p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
                                 "max": float(a[-1])}
        sl = getattr(loop, "slack", None)
        if sl:
            summary["tick_budget_ms"] = {"p50": float(np.percentile(sl, 50)) * 1e3, "min": float(min(sl)) * 1e3}
        summary["nodes"] = [{"link": src, "state": v[1], "faults": v[2], "bad_frames": v[3], "cycle_us": v[4]}
                            for src, v in sorted(loop.gp.status.items())]
    log_lines += ["ready: link %d: %s" % entry for entry in getattr(loop, "node_ready", [])]
    if getattr(loop, "node_logs", ""):
        log_lines.append("node output:\n" + loop.node_logs)
    log_lines.append("status %s %s" % (loop.status, loop.reason))
    if loop.traceback:
        log_lines.append(loop.traceback)
    meta = {"knot_times": np.array([k["interval"][1] for k in sc.knots])}
    rd.finish(summary, arr, log_lines, meta)
    if make_plots and arr and len(arr["t"]) > 1:
        try:
            plots.all_plots(arr, out_dir, sc.name, [0.0] + [k["interval"][1] for k in sc.knots],
                            spatial=sc.task == "spatial")
        except Exception as e:  # plots must never lose the run
            rd.log("plotting failed: %r" % (e,))
    return summary


class ProgressBar:
    """A one-line progress bar on stderr (only on a terminal)."""

    def __init__(self, label, width=30):
        self.label, self.width, self.t0, self.last = label, width, time.perf_counter(), 0.0

    def __call__(self, t, total):
        now = time.perf_counter()
        if now - self.last < 0.2 and t < total:
            return
        self.last = now
        frac = min(1.0, t / total) if total else 1.0
        fill = int(frac * self.width)
        rate = t / max(now - self.t0, 1e-9)
        sys.stderr.write("\r%s [%s%s] %5.1f/%.1f s sim  x%.1f realtime " % (
            self.label, "#" * fill, "." * (self.width - fill), t, total, rate))
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


def print_summary(summary, out_dir, stream=sys.stdout):
    keys = ("status", "e_rms_m", "phi_rms_rad", "q_rms_rad", "realtime_factor", "missed_cycles", "collisions")
    stream.write("%s -> %s\n" % (summary["scenario"], out_dir))
    for k in keys:
        v = summary.get(k)
        stream.write("  %-16s %s\n" % (k, ("%.6g" % v) if isinstance(v, float) else v))
    if summary.get("reason"):
        stream.write("  reason           %s\n" % summary["reason"])


def dumps(summary):
    return json.dumps(summary, indent=2)
