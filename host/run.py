"""`linkteam run`: scenario -> runner -> run directory (summary.json, timeseries.npz,
run.log, PNG plots). Whatever happens, the directory gets the log and the reason."""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bus_protocol import states
from firmware.auth import REASONS
from host.report import critical_path, metrics, plots, run_dir
from host.runners.base import ControlLoop
from host.scenario.loader import ScenarioError


def vm_steal_ms():
    """Steal time of all CPUs so far (Linux /proc/stat, 10 ms resolution), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_scenario(sc, out_dir=None, mode="inprocess", quiet=False, make_plots=True, previous="replace", live=None,
                 live_wait=0.0, telemetry=True, **opts):
    """Run sc into out_dir (default runs/NAME), written as it goes (host/report/run_dir.py: RunDir;
    `previous`: keep, moved aside, or replace a run already there), run.mcap with it
    (host/telemetry); live = (address, port): the same topics served live, the first tick
    held until a client subscribes or `live_wait` s pass; returns (summary, run directory)."""
    if sc.controller["kind"] != "multiagent" and mode != "inprocess":
        raise ScenarioError(sc.path, None, "controller.kind", "%r runs in-process only (it bypasses "
                            "the agents), not in %s mode" % (sc.controller["kind"], mode))
    header = "scenario %s (%s), %d links, mode %s" % (sc.name, sc.path, sc.n, mode)
    with run_dir.RunDir(out_dir or Path("runs") / sc.name, header, previous, live, telemetry) as rd:
        if sc.gains_from:   # tuned gains and the arm they were tuned on
            from host.studies.tune_gains import describe
            rd.log(describe(sc.gains_from))
        summary = _run(sc, rd, mode, quiet, make_plots, dict(opts, live_wait=live_wait))
    if rd.aside is not None:
        summary["previous_run"] = str(rd.aside)
    return summary, rd.final


def _run(sc, rd, mode, quiet, make_plots, opts):
    out_dir = rd.path
    log_lines = []
    loop = ControlLoop(sc, mode)
    rd.attach(loop)
    _say_live(rd, opts.pop("live_wait"))
    if mode != "inprocess":   # the nodes' log requests and timing, live (linkteam console)
        loop.gp.services.open(out_dir, shared_clock=mode == "processes")   # one host: one clock
    else:   # no critical path in-process: memory flat however long the run
        loop.gp.services.keep_finish = False
    progress = None if quiet or not sys.stderr.isatty() else ProgressBar(sc.name)
    steal0 = vm_steal_ms()
    stats = _run_loop(sc, loop, mode, progress, opts)
    if progress:
        progress.close()
    arr = loop.rec.arrays() if len(loop.rec) else {}
    summary = _summary(sc, loop, stats, arr, mode, steal0)
    if loop.faults or loop.gp.events:
        log_lines += ["%.3f host: link %d %s" % entry for entry in loop.gp.events]
    log_lines += ["ready: link %d: %s" % entry for entry in stats.node_ready]
    if stats.node_logs:
        log_lines.append("node output:\n" + stats.node_logs)
    log_lines.append("status %s %s" % (stats.status, stats.reason))
    if stats.traceback:
        log_lines.append(stats.traceback)
    meta = {"knot_times": np.array([k["interval"][1] for k in sc.knots])}
    if mode != "inprocess":   # beside timeseries.npz, which keeps the plant's record
        critical_path.save(loop.gp.services, sc.n, out_dir)
    loop.gp.services.close()
    if loop.gp.estimates:   # the last link's load estimate (Fernández et al.'s identification)
        from host.report import payload_estimate
        summary["payload_estimate"] = payload_estimate.summarise(sc, loop.gp.estimates)
        meta.update(payload_estimate.arrays(loop.gp.estimates))
    rd.finish(summary, arr, log_lines, meta)
    if make_plots and arr and len(arr["t"]) > 1:
        _plots(sc, loop, arr, mode, out_dir, rd)
    return summary


def _say_live(rd, live_wait):
    """Where a live run is served (also when quiet: where to look is the point of --live);
    with live_wait, the first tick held until a client subscribes."""
    if rd.live:
        sys.stderr.write("live: http://%s:%d/ (Foxglove: ws://%s:%d)\n" % (rd.live[0], rd.telemetry.port,
                                                                          rd.live[0], rd.telemetry.port))
        sys.stderr.flush()
        if live_wait > 0:
            rd.telemetry.wait_for_client(live_wait)


def _run_loop(sc, loop, mode, progress, opts):
    """The loop run by a centralised baseline (on the host, in-process) or by the mode's
    runner. -> its stats"""
    if sc.controller["kind"] != "multiagent":
        from host import centralised
        return centralised.run(loop, progress)
    if mode == "inprocess":
        from host.runners import inprocess
        return inprocess.run(loop, progress)
    if mode == "hil":
        from host.runners import hil
        return hil.run(loop, progress, **opts)
    if mode == "boards":
        from host.runners import boards
        return boards.run(loop, progress, **opts)
    from host.runners import processes
    return processes.run(loop, progress, **opts)


def _summary(sc, loop, stats, arr, mode, steal0):
    """summary.json: the scenario, the runner's figures, the metrics, the nodes' health,
    faults and the critical path (processes, HIL, boards)."""
    q_c = np.array([0.5 * (L["q_low"] + L["q_high"]) for L in sc.links])
    summary = {"scenario": sc.name, "path": sc.path, "links": sc.n, "mode": mode,
               "controller": sc.controller["kind"], "control_rate_hz": sc.control_rate_hz, "sim_seconds": float(arr["t"][-1]) if arr else 0.0}
    summary.update(stats.summary())
    if sc.gains_from:
        summary["gains_from"] = sc.gains_from
    summary["realtime_factor"] = summary["sim_seconds"] / max(stats.wall_seconds, 1e-9)
    summary.update(metrics.summarise(arr, q_c))
    summary["collisions"] = int(loop.plant.collisions)
    summary["bus_errors"] = {"host_bad_frames": loop.gp.decoder.bad}
    summary["nodes"] = node_health(loop.gp.status)
    summary["auth"] = loop.auth.summary(loop.gp.status)   # "unauthenticated" said in every summary
    loop.auth.close()
    summary["nodes_missing"] = loop.gp.status_missing(dead=True)   # no STATUS came (a dead node's never does)
    if sc.controller["kind"] == "multiagent":   # (centralised baselines: no agents)
        _degraded(summary, stats, loop.gp)
    if loop.faults or loop.gp.events:   # injected faults, the team's changes (host/studies/fault_study.py)
        from host.studies.fault_study import fault_summary
        summary["faults"] = fault_summary(loop)
    if mode != "inprocess":   # every node's completion history (NYMPH)
        summary["critical_path"] = critical_path.summarise(loop.gp.services, sc.n)
    if mode != "inprocess" and steal0 is not None:   # time the hypervisor ran something else on our vCPUs
        summary["vm_steal_ms"] = vm_steal_ms() - steal0
    return summary


def _plots(sc, loop, arr, mode, out_dir, rd):
    """The run's PNG plots; a plot that fails is logged and loses nothing."""
    try:
        plots.all_plots(arr, out_dir, sc.name, [0.0] + [k["interval"][1] for k in sc.knots],
                        spatial=sc.task == "spatial")
        if mode != "inprocess" and loop.gp.services.finish:
            critical_path.plot(loop.gp.services, sc.n, out_dir, sc.name)
        if loop.gp.estimates:
            from host.report import payload_estimate
            payload_estimate.plot(sc, loop.gp.estimates, out_dir)
    except Exception as e:  # plots must never lose the run
        rd.log("plotting failed: %r" % (e,))


def degraded_links(gp, nodes):
    """summary.json `degraded`: every link that did not end the run in the team and
    running, with why: its process gone, out of the team (the host's reason for dropping
    it), or the state its last torque reported other than run, with the faults its last
    STATUS names. (The state is the last tick's, not the STATUS's: after the last tick a
    wall-clock node brakes on the silent bus, bus_lost, which says nothing of the run.)"""
    dropped = {}
    for t, link, text in gp.events:   # the last drop of each link
        if text.startswith("dropped: "):
            dropped[link] = "out of the team since t=%.3f s (%s)" % (t, text[len("dropped: "):])
    health = {x["link"]: x for x in nodes}
    out = []
    for link in range(1, gp.n + 1):
        i, reasons = link - 1, []
        if i in gp.dead:
            reasons.append("its process exited")
        if not gp.member[i]:
            reasons.append(dropped.get(link, "out of the team"))
        state = int(gp.states[i])
        faults = health[link]["faults"] if link in health else []
        if gp.member[i] and state != states.RUN:
            reasons.append("%s (%s)" % (states.state_name(state), ", ".join(faults) or "no fault named"))
        if reasons:
            out.append({"link": link, "state": states.state_name(state) if gp.member[i] else None, "in_team": gp.member[i],
                        "faults": faults, "reasons": reasons})
    return out


def _degraded(summary, stats, gp):
    """A run that went to its end with a link braked or out of the team is `degraded`
    (host/runners/stats.py FINISHED), its reason naming the links; the links are listed
    whatever the status."""
    bad = degraded_links(gp, summary["nodes"])
    if not bad:
        return
    summary["degraded"] = bad
    if stats.status == "ok":
        stats.status = "degraded"
        stats.reason = "; ".join("link %d: %s" % (x["link"], ", ".join(x["reasons"])) for x in bad)
        summary["status"], summary["reason"] = stats.status, stats.reason


def node_health(status):
    """summary.json `nodes`: every link's last STATUS, states and faults by name."""
    return [{"link": link, "state": states.state_name(v[1]), "faults": states.fault_names(v[2]),
             "bad_frames": v[3], "cycle_us": v[4], "stale_kinematic": v[5], "late": v[6],
             "auth_rejected": dict(zip(REASONS, v[7:10]))}
            for link, v in sorted(status.items())]


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


def print_summary(summary, out_dir, stream=None):
    stream = stream or sys.stdout   # the one of the moment (not the one at import)
    keys = ("status", "e_rms_m", "phi_rms_rad", "q_rms_rad", "realtime_factor", "missed_cycles", "collisions")
    stream.write("%s -> %s\n" % (summary["scenario"], out_dir))
    for k in keys:
        v = summary.get(k)
        stream.write("  %-16s %s\n" % (k, ("%.6g" % v) if isinstance(v, float) else v))
    if summary.get("reason"):
        stream.write("  reason           %s\n" % summary["reason"])
    if summary.get("previous_run"):
        stream.write("  (the previous run there was moved to %s)\n" % summary["previous_run"])


def dumps(summary):
    return json.dumps(summary, indent=2)
