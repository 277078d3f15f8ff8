"""Full-rate wall-clock figures of the desktop emulation (`make bench`; the test suite
checks the same paths at a relaxed rate, where the verdict does not depend on the load):

  budget     `linkteam budget` against a 1 Mbaud emulated UART chain and ring (lockstep
             cycle times, p10: cycles not still carrying the previous one's STATUS). The
             desktop's per-hop overhead (process wake-ups, wake_us) is fitted to an
             unpaced run of the same chain first: the model is linear in wake_us.
  vm pause   hil2 in processes mode with link 1 frozen for 30 ms at t = 0.5 s, with every
             pause sentinel too (a paused vCPU: the schedule should move, no late tick
             around it) or alone (a slow node: late ticks). Root only (sentinels).

    .venv/bin/python benchmarks/bench_wallclock.py"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from host.tools import budget  # noqa: E402
from host.run import run_scenario  # noqa: E402
from host.runners import desktop, processes  # noqa: E402
from host.runners.base import ControlLoop  # noqa: E402
from host.scenario.loader import load  # noqa: E402


def undisturbed_cycle_ms(sc, topology, baud):
    loop = ControlLoop(sc, "processes")
    stats = processes.run(loop, None, bus="uart", baud=baud, lockstep=True, topology=topology)
    if stats.status != "ok":
        raise RuntimeError(stats.reason)
    return float(np.percentile(stats.bus_cycle_ms, 10))


def budget_against_emulated_chain():
    sc = load(ROOT / "scenarios" / "reference.toml")
    sc.duration = 0.6
    print("budget model against a 1 Mbaud emulated UART bus (10 links, lockstep cycle p10)")
    for topology in ("ring", "chain"):
        unpaced = undisturbed_cycle_ms(sc, topology, 0)
        fast = "uart:1000000000000"      # line time ~0: only hops x (compute + wake) remain
        l0, l100 = (budget.simulate(sc.n, fast, plant="wire", topology=topology,
                                    compute={"wake_us": w})["latency_s"] * 1e3 for w in (0.0, 100.0))
        wake_us = max(0.0, (unpaced - l0) / (l100 - l0) * 100.0)
        measured = undisturbed_cycle_ms(sc, topology, 1000000)
        predicted = budget.simulate(sc.n, "uart:1000000", plant="wire", topology=topology,
                                    compute={"wake_us": wake_us})["latency_s"] * 1e3
        print("  %-5s wake_us %6.1f  measured %6.2f ms  predicted %6.2f ms  error %+5.1f %%" % (
            topology, wake_us, measured, predicted, 100 * (predicted - measured) / measured))


def frozen_run(out, freeze_sentinels):
    sc = load(ROOT / "scenarios" / "hil2.toml")
    sc.duration = 1.0
    seen = {}
    real_start, real_pauses, real_run = processes.Cluster.start, desktop.start_vm_pauses, ControlLoop.run

    def start(self):
        real_start(self)
        seen["link1"] = self.procs[0].pid

    def pauses():
        v = real_pauses()
        seen["sentinels"] = [p.pid for p in v.procs] if v else []
        return v

    def progress(t, total):
        if t >= 0.5 and "frozen" not in seen:
            pids = " ".join(map(str, [seen["link1"]] + (seen["sentinels"] if freeze_sentinels else [])))
            seen["frozen"] = subprocess.Popen(["sh", "-c", "sleep 0.002; kill -STOP %s; sleep 0.03; kill -CONT %s"
                                               % (pids, pids)])

    processes.Cluster.start, desktop.start_vm_pauses = start, pauses
    ControlLoop.run = lambda self, exchange, _progress=None, schedule=None: real_run(self, exchange, progress, schedule)
    try:
        s, _ = run_scenario(sc, out, mode="processes", quiet=True, make_plots=False)
    finally:
        processes.Cluster.start, desktop.start_vm_pauses, ControlLoop.run = real_start, real_pauses, real_run
    if "frozen" in seen:
        seen["frozen"].wait()
    return s


def vm_pause_freeze():
    print("VM pause sentinels: link 1 of hil2 frozen 30 ms at t = 0.5 s (ticks 58-66)")
    if not _sentinels_run():
        print("  skipped: the sentinels need root (SCHED_FIFO)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        for label, with_sentinels in (("vCPU pause (sentinels frozen too)", True), ("slow node (link alone)", False)):
            s = frozen_run(Path(tmp) / label[:4], with_sentinels)
            late = [c for c in s.get("late_cycles", []) if 58 <= c["tick"] <= 66]
            print("  %-34s status %s late ticks around it %d, schedule moved %s ms in %s ticks" % (
                label, s["status"], len(late), s.get("vm_pauses", {}).get("moved_ms"),
                s.get("vm_pauses", {}).get("ticks_moved")))


def _sentinels_run():
    v = desktop.start_vm_pauses()
    if v is None:
        return False
    v.close()
    return True


SECTIONS = [budget_against_emulated_chain, vm_pause_freeze]

if __name__ == "__main__":
    for section in SECTIONS:
        section()
