"""make bench: what telemetry costs (host/telemetry).

cost(): the in-process reference run without run.mcap, with it (the default), and with
--live and one client that takes every topic, interleaved repeats; the run's own loop
(realtime_factor) and the whole run_scenario call (its wall time: run.mcap finished,
the telemetry process's last chunk included).

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
import sys, time
from host.telemetry.client import Client
from host.telemetry.topics import TOPICS
port = int(sys.argv[1])
print("ready", flush=True)   # imports done: the run starts now, and waits only for the connection
end = time.monotonic() + 60
while True:
    try:
        c = Client("ws://127.0.0.1:%d" % port, timeout=2.0)
        break
    except OSError:
        if time.monotonic() > end:
            raise
        time.sleep(0.05)
c.subscribe(*TOPICS)
n = 0
while c.recv(3.0) is not None:
    n += 1
print(n)
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _run(sc, out, **kw):
    from host.run import run_scenario
    t0 = time.perf_counter()
    s, _ = run_scenario(sc, out, quiet=True, make_plots=False, **kw)
    return s, time.perf_counter() - t0


def cost(repeats=5):
    from host.scenario.loader import load
    sc = load(ROOT / "scenarios" / "reference.toml")
    runs = {"off": [], "mcap": [], "live": []}
    received = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            runs["off"].append(_run(sc, Path(tmp) / "off", telemetry=False))
            runs["mcap"].append(_run(sc, Path(tmp) / "mcap"))
            port = free_port()
            client = subprocess.Popen([sys.executable, "-c", READER, str(port)], cwd=str(ROOT),
                                      stdout=subprocess.PIPE, text=True)
            try:
                assert client.stdout.readline().strip() == "ready"
                runs["live"].append(_run(sc, Path(tmp) / "live", live=("127.0.0.1", port), live_wait=30.0))
                received.append(int(client.communicate(timeout=60)[0] or 0))
            finally:
                if client.poll() is None:
                    client.kill()
                    client.wait()
    med = {k: (statistics.median(s["realtime_factor"] for s, _ in v), statistics.median(w for _, w in v),
               statistics.median(s["cpu_seconds"] for s, _ in v)) for k, v in runs.items()}
    tel_cpu = {k: statistics.median(s["telemetry"].get("process_cpu_s", 0) for s, _ in v) for k in ("mcap", "live")
               for v in [runs[k]]}
    enc_cpu = {k: statistics.median(s["telemetry"].get("encode_cpu_s", 0) for s, _ in v) for k in ("mcap", "live")
               for v in [runs[k]]}
    live_s = runs["live"][-1][0]["telemetry"]["live"]
    print("telemetry cost: in-process reference run, %d repeats (medians; loadavg %.1f)"
          % (repeats, os.getloadavg()[0]))
    for k, label in (("off", "no run.mcap"), ("mcap", "run.mcap (default)"), ("live", "--live + 1 client")):
        print("  %-20s loop realtime_factor %6.1f (%+5.1f %% time), its CPU %.2f s (%+5.1f %%)   whole run %.2f s (%+5.1f %%)"
              % (label, med[k][0], 100 * (med["off"][0] / med[k][0] - 1), med[k][2],
                 100 * (med[k][2] / med["off"][2] - 1), med[k][1], 100 * (med[k][1] / med["off"][1] - 1)))
    print("  telemetry process CPU (median): run.mcap %.2f s (encoding and writing %.2f s), --live %.2f s (%.2f s)"
          % (tel_cpu["mcap"], enc_cpu["mcap"], tel_cpu["live"], enc_cpu["live"]))
    print("  live client received %s messages a run; the last run's server: published %d, decimated %d, dropped %d"
          % (received, live_s["published"], live_s.get("decimated", 0), live_s["dropped"]))
    return {"telemetry_cost": {
        "realtime_factor": {k: [s["realtime_factor"] for s, _ in v] for k, v in runs.items()},
        "wall_s": {k: [w for _, w in v] for k, v in runs.items()},
        "loop_time_increase_pct": {k: round(100 * (med["off"][0] / med[k][0] - 1), 1) for k in ("mcap", "live")},
        "loop_cpu_increase_pct": {k: round(100 * (med[k][2] / med["off"][2] - 1), 1) for k in ("mcap", "live")},
        "wall_increase_pct": {k: round(100 * (med[k][1] / med["off"][1] - 1), 1) for k in ("mcap", "live")},
        "telemetry_process_cpu_s": tel_cpu, "telemetry_encode_cpu_s": enc_cpu,
        "live_client_received": received, "loadavg_1min": os.getloadavg()[0]}}


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


def memory(seconds=3600.0, every_s=10.0):
    from host.scenario.loader import load
    sc = load(ROOT / "scenarios" / "reference.toml")
    sc.duration = seconds
    port = free_port()
    stop = threading.Event()
    samples = []
    me = os.getpid()

    def sample():
        while not stop.wait(every_s):
            kids = subprocess.run(["pgrep", "-P", str(me)], capture_output=True, text=True).stdout.split()
            samples.append((time.monotonic(), rss_mb(me), max([pss_mb(int(k)) or 0 for k in kids] or [0])))

    with open("/proc/self/clear_refs", "w") as f:   # VmHWM from here (proc(5): "5")
        f.write("5")

    threading.Thread(target=stalled_client, args=(port, stop), daemon=True).start()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            s, wall = _run(sc, Path(tmp) / "long", live=("127.0.0.1", port), live_wait=30.0)
    finally:
        stop.set()
        sampler.join()
    tel = s.get("telemetry", {})
    side = [x[2] for x in samples if x[2]]
    host = [x[1] for x in samples]
    rows = s["sim_seconds"] * sc.control_rate_hz
    print("telemetry memory: %.0f s simulated in-process (%.0f s wall), --live, one client that never reads"
          % (s["sim_seconds"], wall))
    at = [side[min(len(side) - 1, len(side) * k // 4)] for k in range(5)] if side else []
    peak = rss_mb(me, "VmHWM")
    print("  telemetry process PSS: at 0/25/50/75/100 %% of the run %s MB, max %.0f MB (%d samples, every %g s)"
          % ("/".join("%.0f" % x for x in at), max(side), len(side), every_s) if side else "  no telemetry samples")
    print("  host process RSS while it ran: first %.0f MB, last %.0f MB (%.3f kB a tick); peak with the "
          "end (metrics, timeseries.npz) %.0f MB" % (host[0], host[-1], (host[-1] - host[0]) * 1024 / max(rows, 1), peak))
    print("  live: published %d, dropped %d; run.mcap messages %d; status %s"
          % (tel.get("live", {}).get("published", 0), tel.get("live", {}).get("dropped", 0),
             tel.get("mcap_messages", 0), s["status"]))
    return {"telemetry_memory": {"sim_seconds": s["sim_seconds"], "wall_s": wall, "host_peak_rss_mb": peak,
                                 "telemetry_pss_mb": side, "host_rss_mb": host, "live": tel.get("live"),
                                 "mcap_messages": tel.get("mcap_messages")}}


if __name__ == "__main__":   # one part alone: `cost [REPEATS]` or `memory [SECONDS]` (make bench runs both)
    sys.path.insert(0, str(ROOT))
    from run_all import save
    if len(sys.argv) > 1 and sys.argv[1] == "memory":
        save(memory(float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0))
    else:
        save(cost(int(sys.argv[2]) if len(sys.argv) > 2 else 5))
