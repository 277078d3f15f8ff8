"""Telemetry of a run: run.mcap beside timeseries.npz, written from the same per-tick
record, and with `live` the same topics on the Foxglove WebSocket protocol with a
built-in live page (docs: README "Watch a run live").

`Telemetry` is the run's handle on its telemetry process (sidecar.py): host/report/run_dir.RunDir
hands it the record's rows as the recorder flushes them (a copy into shared memory,
ring.py, and one short line on a pipe that never blocks); the control loop itself does
no encoding for it and never waits for it. The process is forked from the run's own (no
interpreter start-up and no imports: numpy, orjson and foxglove-sdk are there already)
and runs at a low priority beside a real-time run (sidecar.NICE)."""
import gc
import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from host.telemetry.ring import Ring

MCAP_NAME = "run.mcap"
LOG_NAME = "telemetry.log"
ROWS_DIR = "telemetry"   # rows on their way to the telemetry process (gone when the run ends)
DEFAULT_PORT = 8765
LIVE_CHUNK_S = 0.1    # with a live viewer, the record is handed over this often (wall s)
HANDOVER_S = 0.25     # without: the telemetry process keeps up, and has little left at the end
START_S = 30.0        # bounded waits on the telemetry process
CLOSE_HURRY_S = 10.0
CLOSE_STALL_S = 60.0  # the end of a run waits for run.mcap while it grows, and this long once it stops


def _plain(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(type(x))


class _Forked:
    """The forked telemetry process, as far as Telemetry uses a subprocess.Popen: stdin
    (its pipe in), stdout (its pipe out), poll, wait, kill."""

    def __init__(self, log_fd, ring):
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        self.returncode = None
        self.cpu_s = None   # its user + system CPU time, once it has ended
        self.pid = os.fork()
        if self.pid == 0:   # the child: never returns into the run's code
            code = 1
            try:
                # every inherited descriptor but its pipes and log closed (a pipe end held
                # here would keep someone else's reader waiting); the parent's objects
                # frozen, so that no finaliser of theirs runs (and closes a reused number)
                gc.freeze()
                null = os.open(os.devnull, os.O_RDWR)
                for fd, to in ((null, 0), (null, 1), (log_fd, 2)):
                    os.dup2(fd, to)
                keep = {0, 1, 2, r_in, w_out}
                for fd in [int(x) for x in os.listdir("/proc/self/fd")]:
                    if fd not in keep:
                        try:
                            os.close(fd)
                        except OSError:
                            pass
                from host.telemetry import sidecar
                sidecar.main(os.fdopen(r_in, "r"), os.fdopen(w_out, "w"), ring)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(r_in)
        os.close(w_out)
        self.stdin = os.fdopen(w_in, "wb")
        self.stdout = os.fdopen(r_out, "r")

    def poll(self):
        if self.returncode is None:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_s = usage.ru_utime + usage.ru_stime
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("telemetry", timeout)
            time.sleep(0.01)
        return self.returncode

    def kill(self):
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


class Telemetry:
    """Start the telemetry process for a run written in `run_dir` (OUT.partial).
    meta: n, t0_ns, obstacles, scenario ...; live: None or (host, port)."""

    def __init__(self, run_dir, meta, live=None):
        self.lost = None   # why the telemetry process is gone, if it is
        self.port = None
        self.stats = {}
        self.waited_s = None   # how long the first tick was held for a viewer (wait_for_client)
        self._pending = b""
        from host.telemetry import sidecar
        sidecar.preload(live)
        self.log = open(Path(run_dir) / LOG_NAME, "ab")
        sys.stdout.flush()   # (what the child would otherwise inherit unwritten)
        sys.stderr.flush()
        self.ring = Ring()   # (made before the fork: the telemetry process shares it)
        self.by_file = 0     # hand-overs that found the ring full
        self.proc = _Forked(self.log.fileno(), self.ring)
        self.mcap = Path(run_dir) / MCAP_NAME
        self.dir = Path(run_dir) / ROWS_DIR
        self.dir.mkdir(exist_ok=True)
        self.n_rows = 0
        cfg = {"meta": meta, "mcap": str(self.mcap),
               "live": {"host": live[0], "port": live[1]} if live else None}
        self._send(cfg, wait=True)
        if not live:   # nothing to wait for: the run goes on while the process starts
            return
        ready = self._read(START_S)
        if ready is None or "ready" not in ready:
            self.close()
            said = (Path(run_dir) / LOG_NAME).read_text(errors="replace")[-2000:]
            raise RuntimeError("the telemetry process did not start (%s/%s): %s%s"
                               % (run_dir, LOG_NAME, self.lost or "no answer", "; it said:\n" + said if said else ""))
        self.port = ready["ready"]

    def _send(self, msg, wait=False):
        """One line to the telemetry process, never blocking unless `wait`: what the pipe
        cannot take now (the process behind) waits in `_pending` for the next call."""
        if self.lost:
            return
        self._pending += (json.dumps(msg, default=_plain) + "\n").encode()
        fd = self.proc.stdin.fileno()
        os.set_blocking(fd, wait)
        try:
            while self._pending:
                n = os.write(fd, self._pending)
                self._pending = self._pending[n:]
        except BlockingIOError:
            pass
        except OSError as e:
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

    def rows(self, rows, logs=(), events=(), t0_ns=None):
        """Rows of the record (a dict of arrays) and the host controller's news since the last
        call: into the shared ring (a copy of each array, ring.py) or, where it is full, into
        a file (pickle) that the telemetry process reads and removes. t0_ns: the wall time
        of t = 0, once known (else meta's)."""
        if self.lost:
            return
        msg = {"logs": list(logs), "events": list(events), "t0_ns": t0_ns, "wall": time.time()}
        msg["ring"] = self.ring.put(rows)
        if msg["ring"] is None:
            path = self.dir / ("%06d.pkl" % self.n_rows)
            with open(path, "wb") as f:
                pickle.dump(rows, f, protocol=5)
            msg["rows"] = str(path)
            self.by_file += 1
        self.n_rows += 1
        self._send(msg)

    def wait_for_client(self, timeout):
        """Wait (at most `timeout` s) for a live client to subscribe -> whether one did."""
        t0 = time.monotonic()
        self._send({"wait": timeout}, wait=True)
        got = self._read(timeout + START_S)
        self.waited_s = time.monotonic() - t0
        return bool(got and got.get("subscribed"))

    def close(self, hurry=False):
        """Finish run.mcap (and the live server) -> the telemetry's counts for summary.json.
        It waits while run.mcap grows (the telemetry process behind on a busy machine);
        `hurry` (the run was interrupted): at most CLOSE_HURRY_S, then run.mcap stays as
        far as it got (its chunks readable, no summary section)."""
        if self.proc.poll() is None:
            self._send({"end": True}, wait=True)
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            # it may be behind (a low priority on a busy machine): wait while run.mcap grows
            size, end = -1, 0.0
            give_up = time.monotonic() + CLOSE_HURRY_S if hurry else float("inf")
            while True:
                got = self._read(1.0)
                if got is not None and "stats" in got:
                    self.stats = got["stats"]
                    break
                if got is None and self.proc.poll() is not None:
                    self.lost = self.lost or "telemetry process ended (exit %s)" % self.proc.returncode
                    break
                now_size = self.mcap.stat().st_size if self.mcap.exists() else 0
                if now_size != size:
                    size, end = now_size, time.monotonic() + CLOSE_STALL_S
                elif time.monotonic() > end:
                    self.proc.kill()
                    self.lost = "telemetry process stalled (run.mcap unchanged for %g s): killed" % CLOSE_STALL_S
                    break
                if time.monotonic() > give_up:
                    self.proc.kill()
                    self.lost = "run interrupted: telemetry stopped after %g s, run.mcap incomplete" % CLOSE_HURRY_S
                    break
            try:
                self.proc.wait(CLOSE_STALL_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.lost = self.lost or "telemetry process did not exit: killed"
            self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.proc.cpu_s is not None:
            self.stats["process_cpu_s"] = round(self.proc.cpu_s, 3)
        self.stats["handovers_by_file"] = self.by_file
        if self.waited_s is not None:
            self.stats["viewer_wait_s"] = round(self.waited_s, 3)
        if self.lost:
            self.stats["error"] = self.lost
        return self.stats
