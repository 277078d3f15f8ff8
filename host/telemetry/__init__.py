"""Telemetry of a run: run.mcap beside timeseries.npz, written from the same per-tick
record, and with `live` the same topics on the Foxglove WebSocket protocol with a
built-in live page (docs: README "Watch a run live").

`Telemetry` is the run's handle on its telemetry process (sidecar.py): host/logs.RunDir
hands it every chunk of the record as it writes it; the control loop itself does no
encoding, no I/O for it and never waits for it (a chunk is one short line on a pipe)."""
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MCAP_NAME = "run.mcap"
LOG_NAME = "telemetry.log"
DEFAULT_PORT = 8765
LIVE_CHUNK_S = 0.1    # with a live viewer, the record is handed over this often (wall s)
START_S = 30.0        # bounded waits on the telemetry process
CLOSE_S = 120.0
REPO = Path(__file__).resolve().parents[2]


def _plain(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(type(x))


class Telemetry:
    """Start the telemetry process for a run written in `run_dir` (OUT.partial).
    meta: n, t0_ns, obstacles, scenario ...; live: None or (host, port)."""

    def __init__(self, run_dir, meta, live=None):
        self.lost = None   # why the telemetry process is gone, if it is
        self.port = None
        self.stats = {}
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + sys.path[1:]))
        self.log = open(Path(run_dir) / LOG_NAME, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "host.telemetry.sidecar"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=env, cwd=str(REPO))
        cfg = {"meta": meta, "mcap": str(Path(run_dir) / MCAP_NAME),
               "live": {"host": live[0], "port": live[1]} if live else None}
        self._send(cfg)
        if not live:   # nothing to wait for: the run goes on while the process starts
            return
        ready = self._read(START_S)
        if ready is None or "ready" not in ready:
            self.close()
            raise RuntimeError("the telemetry process did not start (%s/%s): %s"
                               % (run_dir, LOG_NAME, self.lost or "no answer"))
        self.port = ready["ready"]

    def _send(self, msg):
        if self.lost:
            return
        try:
            self.proc.stdin.write((json.dumps(msg, default=_plain) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.lost = "telemetry process gone: %r" % (e,)

    def _read(self, timeout):
        """One JSON line from the telemetry process within `timeout` s, or None."""
        end = time.monotonic() + timeout
        out = self.proc.stdout
        while time.monotonic() < end:
            r, _, _ = select.select([out], [], [], max(0.0, min(0.5, end - time.monotonic())))
            if r:
                line = out.readline()
                if not line:
                    self.lost = self.lost or "telemetry process ended (exit %s)" % self.proc.poll()
                    return None
                return json.loads(line)
        return None

    def chunk(self, path, logs=(), events=(), bus=None):
        """A chunk of the record is on disk at `path` (and stays until close())."""
        self._send({"chunk": str(path), "logs": list(logs), "events": list(events), "bus": bus or {}})

    def wait_for_client(self, timeout):
        """Wait (at most `timeout` s) for a live client to subscribe -> whether one did."""
        self._send({"wait": timeout})
        got = self._read(timeout + START_S)
        return bool(got and got.get("subscribed"))

    def close(self):
        """Finish run.mcap (and the live server) -> the telemetry's counts for summary.json."""
        if self.proc.poll() is None:
            self._send({"end": True})
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            end = time.monotonic() + CLOSE_S
            while time.monotonic() < end:
                got = self._read(end - time.monotonic())
                if got is None or "stats" in got:
                    self.stats = (got or {}).get("stats", {})
                    break
            try:
                self.proc.wait(max(1.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.lost = "telemetry process did not finish within %g s: killed" % CLOSE_S
        self.proc.stdout.close()
        self.log.close()
        if self.lost:
            self.stats["error"] = self.lost
        return self.stats
