"""`make bench`: speed of the in-process reference run against a bare MuJoCo loop of the
same model, in one process, so the ratio is the overhead of agents + bus + RMDAC.
Medians of several repeats (the machine is small and noisy)."""
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench_wallclock  # noqa: E402
from host.run import run_scenario  # noqa: E402
from host.scenario.loader import load  # noqa: E402
from sim_host.plant import Plant  # noqa: E402


def bare_mujoco(sc):
    """Same model, same 1 ms RK4 steps, torques held constant: no agents, no bus.
    -> (realtime factor, realtime factor in this process's CPU time)"""
    plant = Plant(sc.arm, timestep=sc.timestep)
    plant.set_torques(np.full(sc.n, 1.0))
    steps = int(round(sc.duration / sc.timestep))
    t0, c0 = time.perf_counter(), time.process_time()
    plant.step(steps)
    return sc.duration / (time.perf_counter() - t0), sc.duration / (time.process_time() - c0)


def inprocess(sc, tmp, core):
    """The in-process reference run, its agents on linkcore for CPython (`core`, the module)
    or pure Python (None) -> (realtime factor, the same in CPU time, e_rms_m)"""
    from firmware import linkstate
    saved, linkstate.linkcore = linkstate.linkcore, core   # agents take it when configured
    try:
        summary, _ = run_scenario(sc, tmp, quiet=True, make_plots=False)
    finally:
        linkstate.linkcore = saved
    return summary["realtime_factor"], summary["sim_seconds"] / summary["cpu_seconds"], summary["e_rms_m"]


def main(repeats=5):
    import tempfile
    from firmware import linkstate
    from host.tools.linkcore_ext import note
    sc = load(ROOT / "scenarios" / "reference.toml")
    core = linkstate.linkcore
    bare, full, bare_cpu, full_cpu, pure, err = [], [], [], [], [], None
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            rf, rf_cpu = bare_mujoco(sc)
            bare.append(rf)
            bare_cpu.append(rf_cpu)
            rf, rf_cpu, err = inprocess(sc, Path(tmp) / "ref", core)
            full.append(rf)
            full_cpu.append(rf_cpu)
            if core is not None:   # the pure-Python agents beside it, for the comparison
                pure.append(inprocess(sc, Path(tmp) / "pure", None)[0])
    b, f = statistics.median(bare), statistics.median(full)
    ratios = sorted(x / y for x, y in zip(bare, full))   # each repeat's pair ran back to back
    cpu_ratio = statistics.median(bare_cpu) / statistics.median(full_cpu)
    print("reference run, %d links, %.0f s simulated, %d repeats (medians; loadavg %.1f)"
          % (sc.n, sc.duration, repeats, os.getloadavg()[0]))
    print("  " + note())
    print("  bare MuJoCo loop          realtime_factor %8.1f" % b)
    print("  in-process agents+bus     realtime_factor %8.1f   (e_rms_m %.17g)" % (f, err))
    print("  overhead ratio bare/inprocess             %8.2f   (per repeat %s)"
          % (b / f, ", ".join("%.2f" % r for r in ratios)))
    print("  the same in CPU time (process_time)       %8.2f   (what other jobs on the machine move least)"
          % cpu_ratio)
    if pure:
        print("  pure-Python agents: overhead ratio        %8.2f" % (b / statistics.median(pure)))
    save({"overhead_agents": "python" if core is None else "linkcore",
          "overhead_vs_bare_mujoco_pure_python": round(b / statistics.median(pure), 3) if pure else None,
          "overhead_vs_bare_mujoco": round(b / f, 3), "overhead_vs_bare_mujoco_cpu": round(cpu_ratio, 3),
          "overhead_runs": {"bare_realtime_factor": bare, "inprocess_realtime_factor": full,
                            "bare_cpu_realtime_factor": bare_cpu, "inprocess_cpu_realtime_factor": full_cpu,
                            "inprocess_pure_python_realtime_factor": pure, "loadavg_1min": os.getloadavg()[0]}})
    for extra in EXTRA:
        extra()


RESULTS = ROOT / "benchmarks" / "results.json"


def save(fields):
    """Merge fields into benchmarks/results.json (make mcu-bench writes its own keys there)."""
    import json
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data.update(fields)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


EXTRA = []   # further sections (MicroPython memory, bus budget) append themselves here


def micropython_agent():
    """One agent under the real MicroPython unix port: RAM after init, bytes allocated
    per control cycle, per-hop compute; then short processes-mode runs (wall clock)."""
    import subprocess
    from host.runners.children import micropython_path
    r = subprocess.run([micropython_path(), str(ROOT / "benchmarks" / "mp_node_cycle.py")],
                       capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    print("MicroPython agent (unix port, benchmarks/mp_node_cycle.py)")
    for line in r.stdout.splitlines():
        if line.startswith(("RAM", "ALLOC", "HOP")):
            print("  " + line)
    import tempfile
    sc = load(ROOT / "scenarios" / "reference.toml")
    sc.duration = 5.0
    with tempfile.TemporaryDirectory() as tmp:
        for bus in ("uart", "can"):
            s, _ = run_scenario(sc, Path(tmp) / bus, mode="processes", quiet=True, make_plots=False, bus=bus)
            c = s.get("bus_cycle_ms", {})
            print("  processes %-4s 10 links %.0f s: %s realtime_factor %.3f missed_cycles %d "
                  "bus cycle p50 %.2f ms p99 %.2f ms (period %.2f ms)" % (
                      bus, sc.duration, s["status"], s["realtime_factor"], s["missed_cycles"], c.get("p50", float("nan")),
                      c.get("p99", float("nan")), 1e3 / sc.control_rate_hz))


EXTRA.append(micropython_agent)


def telemetry():
    """run.mcap and --live against no telemetry; memory of a 1-hour run with a stalled client."""
    import bench_telemetry
    save(bench_telemetry.cost())
    save(bench_telemetry.memory(3600.0))


EXTRA.append(telemetry)
EXTRA += bench_wallclock.SECTIONS

KNEE_RATES = (60.0, 120.0, 250.0, 500.0, 1000.0)


def processes_knee(seconds=20.0):
    """Processes mode (one MicroPython process per link, UART ring on socketpairs, wall
    clock): the highest rate of KNEE_RATES at which 10 and 20 links hold 0 missed
    cycles over `seconds` (the ladder stops at the first rate that misses)."""
    import tempfile
    from host.scenario.loader import from_dict, read_toml
    print("processes mode knee: highest rate with 0 missed cycles over %.0f s (loadavg %.1f)"
          % (seconds, os.getloadavg()[0]))
    knee = {}
    for name in ("reference", "reference20"):
        data, sources = read_toml(ROOT / "scenarios" / (name + ".toml"))
        best = None
        for rate in KNEE_RATES:
            data["simulation"]["control_rate_hz"] = rate
            data["simulation"]["duration"] = seconds
            sc = from_dict(data, ROOT / "scenarios" / (name + ".toml"), sources)
            with tempfile.TemporaryDirectory() as tmp:
                s, _ = run_scenario(sc, Path(tmp) / "knee", mode="processes", quiet=True, make_plots=False)
            c = s.get("bus_cycle_ms") or {}
            print("  %2d links %6.0f Hz: %s missed_cycles %d  bus cycle p50 %.2f p99 %.2f max %.2f ms (period %.2f ms)"
                  % (sc.n, rate, s["status"], s["missed_cycles"], c.get("p50", float("nan")),
                     c.get("p99", float("nan")), c.get("max", float("nan")), 1e3 / rate))
            if s["status"] != "ok" or s["missed_cycles"]:
                for late in s.get("late_cycles", [])[:3]:   # what the late ticks were waiting for
                    print("      late tick %d: goal out at %s ms, links %s missing at the %.2f ms deadline, "
                          "host on CPU %s ms, runnable but waiting %s ms" % (
                              late["tick"], late["goal_sent_ms"], late["missing_links"], late["deadline_ms"],
                              late["host_oncpu_ms"], late["host_runq_ms"]))
                break
            best = rate
        knee[str(sc.n)] = best
    save({"processes_max_rate_hz": knee})


EXTRA.append(processes_knee)


def fuzz():
    """Random and mutated frames: the decoder, deframer and CAN reassembler (tests/
    mp_fuzz_decoder.py), one link agent (benchmarks/mp_fuzz_agent.py) and a node's check of
    host commands (benchmarks/mp_fuzz_auth.py: no forgery accepted), 10^6 frames under
    CPython and 10^5 under MicroPython: no exception escapes, every bad frame is counted
    (the scripts check good + bad and the error kinds), the agent writes no NaN torque."""
    import subprocess
    from host.runners.children import micropython_path
    print("Fuzz (random + mutated frames; a failure raises inside the script)")
    for interp, n in ((sys.executable, 1000000), (micropython_path(), 100000)):
        for script in ("tests/mp/mp_fuzz_decoder.py", "benchmarks/mp_fuzz_agent.py", "benchmarks/mp_fuzz_auth.py"):
            t0 = time.perf_counter()
            r = subprocess.run([interp, str(ROOT / script), str(n)], capture_output=True, text=True, cwd=str(ROOT))
            line = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else \
                "FAILED (exit %d): %s" % (r.returncode, r.stderr.strip()[-300:])
            print("  %-11s %-28s %7d frames %6.1f s  %s" % (Path(interp).name, script, n, time.perf_counter() - t0, line))


EXTRA.append(fuzz)


def fault_cost():
    from host.studies.fault_study import cost_table
    print(cost_table())


EXTRA.append(fault_cost)

if __name__ == "__main__":
    main()
