"""make bench: what telemetry costs (host/telemetry).

cost(): the in-process reference run without run.mcap, with it (the default), and with
--live and one client that takes every topic (its own process), interleaved repeats; the
run's own loop (realtime_factor), the whole run_scenario call (its wall time: run.mcap
finished, the telemetry process's last chunk included; the wait for the live client to
subscribe left out), the loop's thread on a CPU and waiting for one (its own work apart
from a busy machine's queue) and the CPU time of every process the run kept busy.

session(): --live + one client with the telemetry process in a session of its own (as
runs have it) and in the run's session, in the same repeats.

memory(): a long in-process run with --live and a client that subscribes and then never
reads: the resident memory of the host process and of the telemetry process, sampled as
the run goes, and the messages the server dropped."""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

READER = """
import asyncio, json, struct, sys, time
from websockets.asyncio.client import connect
from host.telemetry.server import OP_MESSAGE_DATA, SUBPROTOCOL
header = struct.Struct("<BIQ")
port = int(sys.argv[1])
cpu0 = time.process_time()
print("ready", flush=True)   # imports done: the run starts now, and waits only for the connection

async def main():
    end = time.monotonic() + 60
    while True:
        try:
            ws = await connect("ws://127.0.0.1:%d" % port, subprotocols=[SUBPROTOCOL], max_size=1 << 22)
            break
        except OSError:
            if time.monotonic() > end:
                raise
            await asyncio.sleep(0.01)
    n = 0
    async for raw in ws:   # until the server closes: every message decoded (a viewer's least work)
        if isinstance(raw, str):
            msg = json.loads(raw)
            if msg["op"] == "advertise":
                await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                    {"id": c["id"], "channelId": c["id"]} for c in msg["channels"]]}))
            continue
        op, sid, ns = header.unpack_from(raw)
        if op == OP_MESSAGE_DATA:
            json.loads(raw[header.size:])
            n += 1
    return n

n = asyncio.run(main())
print(n, time.process_time() - cpu0)   # what it received, its CPU time from the run's start
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _run(sc, out, **kw):
    """One run_scenario -> (summary, its wall s, this process's CPU s over it, the loop's
    thread's _Watch.split)."""
    from host.run import run_scenario
    with _Watch() as watch:
        t0, c0 = time.perf_counter(), os.times()
        s, _ = run_scenario(sc, out, quiet=True, make_plots=False, **kw)
        c1 = os.times()
    return s, time.perf_counter() - t0, (c1.user - c0.user) + (c1.system - c0.system), watch.split()


def _live(sc, out):
    """A --live run with one client (READER, its own process) -> (summary, wall s, CPU s,
    the loop's split (_run), the client's CPU s from the run's start, messages it received)."""
    port = free_port()
    # a session of its own, as a viewer started from a desktop or another terminal has (the
    # kernel's autogroup scheduling shares the CPU between sessions first)
    client = subprocess.Popen([sys.executable, "-c", READER, str(port)], cwd=str(ROOT),
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert client.stdout.readline().strip() == "ready"
        s, wall, cpu, split = _run(sc, out, live=("127.0.0.1", port), live_wait=30.0)
        n, client_cpu = client.communicate(timeout=60)[0].split()
        return s, wall, cpu, split, float(client_cpu), int(n)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


KINDS = ("off", "mcap", "live")


def _shared_session():
    """The telemetry process left in the run's session (sidecar.own_share's setsid and
    autogroup skipped, its nice kept): for `session`, what its own session is worth."""
    from host.telemetry import sidecar
    own = sidecar.own_share
    sidecar.own_share = os.nice
    return lambda: setattr(sidecar, "own_share", own)


def _repeats(repeats, kinds):
    """Each repeat runs `kinds` back to back, in an order that turns by one every repeat
    (a load that drifts over the repeats falls on each kind alike) -> ({kind: a row a
    repeat}, messages the live client received a run, loadavg before, after)."""
    from host.scenario.loader import load
    sc = load(ROOT / "scenarios" / "reference.toml")
    rows = {k: [] for k in kinds}
    received, load0 = [], os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for k in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
                if k.startswith("live"):
                    undo = _shared_session() if k == "live_shared" else (lambda: None)
                    try:
                        s, wall, cpu, split, client_cpu, n = _live(sc, Path(tmp) / k)
                    finally:
                        undo()
                    received.append(n)
                else:
                    s, wall, cpu, split = _run(sc, Path(tmp) / k, telemetry=k == "mcap")
                    client_cpu = 0.0
                tel = s.get("telemetry", {})
                waited = tel.get("viewer_wait_s", 0.0)
                rows[k].append({
                    "loop_s": s["sim_seconds"] / s["realtime_factor"],    # the control loop, its wall time
                    "loop_cpu_s": split[0], "loop_runq_s": split[1],   # its thread on a CPU, waiting for one
                    "run_s": wall - waited,   # the whole run_scenario call, less the wait for the viewer
                    "viewer_wait_s": waited,
                    # CPU of everything the run made busy: this process (the loop and the end of the
                    # run), the telemetry process, the client
                    "cpu_s": cpu + tel.get("process_cpu_s", 0.0) + client_cpu,
                    "telemetry_cpu_s": tel.get("process_cpu_s", 0.0), "client_cpu_s": client_cpu,
                    "encode_cpu_s": tel.get("encode_cpu_s", 0.0), "live": tel.get("live")})
    return rows, received, load0, os.getloadavg()


def _pct(rows, k, field):
    """median over the repeats of k's field against the same repeat's run without telemetry"""
    return round(100 * (statistics.median(r[field] / o[field] for r, o in zip(rows[k], rows["off"])) - 1), 1)


def cost(repeats=7):
    """The three KINDS (_repeats); a kind's cost is the median over the repeats of its time
    against the same repeat's run without telemetry."""
    rows, received, load0, load1 = _repeats(repeats, KINDS)

    med = {k: {f: statistics.median(r[f] for r in v) for f in ("loop_s", "loop_cpu_s", "loop_runq_s", "run_s", "cpu_s",
                                                                 "telemetry_cpu_s", "client_cpu_s", "encode_cpu_s",
                                                                 "viewer_wait_s")}
           for k, v in rows.items()}
    inc = {f: {k: _pct(rows, k, f) for k in ("mcap", "live")} for f in ("loop_s", "loop_cpu_s", "run_s", "cpu_s")}
    print("telemetry cost: in-process reference run, %d repeats of the three back to back (loadavg %.1f %.1f %.1f "
          "before, %.1f %.1f %.1f after)" % ((repeats,) + load0 + load1))
    for k, label in (("off", "no run.mcap"), ("mcap", "run.mcap (default)"), ("live", "--live + 1 client")):
        m = med[k]
        more = "" if k == "off" else " (%+5.1f %%)"
        print(("  %-19s loop %5.2f s" + more + "   whole run %5.2f s" + more + "   CPU of all its processes %5.2f s"
               + more) % ((label, m["loop_s"]) + ((inc["loop_s"][k],) if more else ()) + (m["run_s"],)
                          + ((inc["run_s"][k],) if more else ()) + (m["cpu_s"],) + ((inc["cpu_s"][k],) if more else ())))
    print("  (medians; each +% the median of the repeats' ratios to the run without telemetry beside them)")
    print("  the loop's thread on a CPU: no run.mcap %.2f s, run.mcap %.2f s (%+.1f %%), --live %.2f s (%+.1f %%); "
          "runnable but waiting for a CPU: %.2f s, %.2f s, %.2f s"
          % (med["off"]["loop_cpu_s"], med["mcap"]["loop_cpu_s"], inc["loop_cpu_s"]["mcap"], med["live"]["loop_cpu_s"],
             inc["loop_cpu_s"]["live"], med["off"]["loop_runq_s"], med["mcap"]["loop_runq_s"],
             med["live"]["loop_runq_s"]))
    print("  telemetry process CPU: run.mcap %.3f s (encoding and writing %.3f s), --live %.3f s (%.3f s); "
          "the client's CPU %.3f s; the wait for the client to subscribe %.3f s (not in the whole run)"
          % (med["mcap"]["telemetry_cpu_s"], med["mcap"]["encode_cpu_s"], med["live"]["telemetry_cpu_s"],
             med["live"]["encode_cpu_s"], med["live"]["client_cpu_s"], med["live"]["viewer_wait_s"]))
    live_s = rows["live"][-1]["live"]
    print("  live client received %s messages a run; the last run's server: published %d, decimated %d, dropped %d"
          % (received, live_s["published"], live_s.get("decimated", 0), live_s["dropped"]))
    return {"telemetry_cost": {
        "repeats": repeats, "loadavg_before": load0, "loadavg_after": load1,
        "loop_time_increase_pct": inc["loop_s"], "loop_cpu_increase_pct": inc["loop_cpu_s"],
        "wall_increase_pct": inc["run_s"], "cpu_increase_pct": inc["cpu_s"],
        "medians_s": med, "runs": {k: [{f: v for f, v in r.items() if f != "live"} for r in rows[k]] for k in KINDS},
        "live_client_received": received}}


def session(repeats=7):
    """Why the telemetry process has a session of its own: --live + one client with it in
    its own session (as runs do) and left in the run's session, against no telemetry, in
    the same repeats: the loop's wall time and its thread's time on a CPU."""
    kinds = ("off", "live", "live_shared")
    rows, _, load0, load1 = _repeats(repeats, kinds)
    inc = {k: {f: _pct(rows, k, f) for f in ("loop_s", "loop_cpu_s", "loop_runq_s")} for k in kinds[1:]}
    print("telemetry process's session: in-process reference run, --live + 1 client, %d repeats (loadavg %.1f %.1f "
          "%.1f before, %.1f %.1f %.1f after); against no telemetry, the medians of the repeats' ratios:"
          % ((repeats,) + load0 + load1))
    for k, label in (("live", "its own session"), ("live_shared", "the run's session")):
        print("  %-18s loop %+5.1f %%   the loop's thread on a CPU %+5.1f %%, waiting for a CPU %+5.1f %%"
              % (label, inc[k]["loop_s"], inc[k]["loop_cpu_s"], inc[k]["loop_runq_s"]))
    return {"telemetry_session": {"repeats": repeats, "loadavg_before": load0, "loadavg_after": load1,
                                  "increase_pct": inc,
                                  "runs": {k: [{f: v for f, v in r.items() if f != "live"} for r in rows[k]]
                                           for k in kinds}}}


def rss_mb(pid, field="VmRSS"):
    """/proc/PID/status `field` (VmRSS, VmHWM: its peak) in MB, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None


def pss_mb(pid):
    """Proportional set size (MB): a forked process's own pages, and its share of those
    it still shares with its parent (VmRSS counts those whole in both)."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None


def stalled_client(port, stop):
    """Subscribe to every topic and never read (client.stalled) until `stop`."""
    from host.telemetry.client import stalled
    from host.telemetry.topics import TOPICS
    end = time.monotonic() + 60
    while True:
        try:
            s = stalled(port, range(1, len(TOPICS) + 1))
            break
        except OSError:
            if time.monotonic() > end:
                return
            time.sleep(0.05)
    stop.wait()
    s.close()


class _Watch:
    """The run's control loop (RunDir.attach) and whether its end has begun (RunDir.finish),
    for the sampler: memory while the loop runs apart from the end's (metrics, timeseries.npz);
    and the loop's thread over the loop by its schedstat (wallclock.HostSchedstat)."""

    def __init__(self):
        from host.report import run_dir
        from host.runners.wallclock import HostSchedstat
        self.rd, self.loop, self.ending = run_dir.RunDir, None, False
        self.attach, self.finish = self.rd.attach, self.rd.finish
        self.sched, self.at = HostSchedstat(), {}

    def __enter__(self):
        watch = self

        def attach(rd, loop):
            watch.loop = loop
            watch.at["attach"] = watch.sched.read()
            return watch.attach(rd, loop)

        def finish(rd, *a, **kw):
            watch.ending = True
            watch.at["finish"] = watch.sched.read()
            return watch.finish(rd, *a, **kw)
        self.rd.attach, self.rd.finish = attach, finish
        return self

    def __exit__(self, *exc):
        self.rd.attach, self.rd.finish = self.attach, self.finish

    def split(self):
        """The loop's thread over the loop: (s on a CPU: its own work, s runnable but
        waiting for a CPU: what a busy machine adds)."""
        a, f = self.at["attach"], self.at["finish"]
        return (f[0] - a[0]) * 1e-9, (f[1] - a[1]) * 1e-9

    def ticks(self):
        return len(self.loop.rec) if self.loop is not None else 0


def _growth(samples, key):
    """kB a tick of `key` over the loop, from its sample at 10 % of the ticks to its last
    (the start-up's allocations left out)."""
    if len(samples) < 2:
        return None
    last = samples[-1]
    first = next(x for x in samples if x["ticks"] >= 0.1 * last["ticks"])
    if last["ticks"] <= first["ticks"]:
        return None
    return (last[key] - first[key]) * 1024 / (last["ticks"] - first["ticks"])


def memory(seconds=3600.0, every_s=10.0):
    from host.scenario.loader import load
    sc = load(ROOT / "scenarios" / "reference.toml")
    sc.duration = seconds
    port = free_port()
    stop = threading.Event()
    samples, ending = [], []
    me = os.getpid()

    def sample():
        while not stop.wait(every_s):
            kids = subprocess.run(["pgrep", "-P", str(me)], capture_output=True, text=True).stdout.split()
            x = {"ticks": watch.ticks(), "host_rss_mb": rss_mb(me),
                 "telemetry_pss_mb": max([pss_mb(int(k)) or 0 for k in kids] or [0])}
            (ending if watch.ending else samples).append(x)

    with open("/proc/self/clear_refs", "w") as f:   # VmHWM from here (proc(5): "5")
        f.write("5")

    threading.Thread(target=stalled_client, args=(port, stop), daemon=True).start()
    sampler = threading.Thread(target=sample, daemon=True)
    try:
        with _Watch() as watch, tempfile.TemporaryDirectory() as tmp:
            sampler.start()
            s, wall, _, _ = _run(sc, Path(tmp) / "long", live=("127.0.0.1", port), live_wait=30.0)
    finally:
        stop.set()
        if sampler.is_alive():
            sampler.join()
    tel = s.get("telemetry", {})
    side = [x["telemetry_pss_mb"] for x in samples + ending if x["telemetry_pss_mb"]]
    host = [x["host_rss_mb"] for x in samples]
    print("telemetry memory: %.0f s simulated in-process (%.0f s wall), --live, one client that never reads"
          % (s["sim_seconds"], wall))
    at = [side[min(len(side) - 1, len(side) * k // 4)] for k in range(5)] if side else []
    peak = rss_mb(me, "VmHWM")
    growth = {k: _growth(samples, k) for k in ("host_rss_mb", "telemetry_pss_mb")}
    print("  telemetry process PSS: at 0/25/50/75/100 %% of the run %s MB, max %.0f MB (%d samples, every %g s); "
          "over the loop %.4f kB a tick" % ("/".join("%.0f" % x for x in at), max(side), len(side), every_s,
                                            growth["telemetry_pss_mb"] or 0) if side else "  no telemetry samples")
    print("  host process RSS while the loop ran: at its first sample %.0f MB, max %.0f MB, at its end %.0f MB "
          "(%.4f kB a tick from 10 %% of the ticks on); the end of the run (metrics, timeseries.npz read back "
          "a column at a time) to %.0f MB (peak)" % (host[0], max(host), host[-1], growth["host_rss_mb"] or 0, peak))
    print("  live: published %d, dropped %d; run.mcap messages %d; status %s"
          % (tel.get("live", {}).get("published", 0), tel.get("live", {}).get("dropped", 0),
             tel.get("mcap_messages", 0), s["status"]))
    return {"telemetry_memory": {"sim_seconds": s["sim_seconds"], "wall_s": wall, "host_peak_rss_mb": peak,
                                 "growth_kb_per_tick": growth, "samples": samples, "samples_at_the_end": ending,
                                 "live": tel.get("live"), "mcap_messages": tel.get("mcap_messages"),
                                 "loadavg_after": os.getloadavg()}}


if __name__ == "__main__":   # one part alone: `cost|session [REPEATS]`, `memory [SECONDS]` (make bench: cost, memory)
    sys.path.insert(0, str(ROOT))
    from run_all import save
    if len(sys.argv) > 1 and sys.argv[1] == "memory":
        save(memory(float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0))
    elif len(sys.argv) > 1 and sys.argv[1] == "session":
        save(session(int(sys.argv[2]) if len(sys.argv) > 2 else 7))
    else:
        save(cost(int(sys.argv[2]) if len(sys.argv) > 2 else 7))
