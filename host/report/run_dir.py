"""Run directory: the per-tick time series (NPZ), summary.json and run.log, written as the
run goes so that whatever stops it leaves the log, the data so far and the reason.

A run to OUT is written into the sibling OUT.partial/ and renamed to OUT when it ends
(status ok, degraded or aborted); the previous OUT stays whole until then. Then, with
`previous="keep"` (`linkteam run`), the previous run is moved aside to OUT.YYYYmmdd-HHMMSS
(the time it ended) and the run's log says where; with "replace" (`linkteam run --force`,
and the tools that own their run directories: experiments, envelope, tune) it is
replaced whole. A directory OUT that holds files but no summary.json is not a run's: it
is refused. Inside OUT.partial/:

* summary.json from the start, with status "aborted" and a reason saying the run did not
  finish, rewritten (atomically) at every chunk with how far it got: a run killed outright
  (SIGKILL, power) leaves exactly that;
* run.log, one flushed line at a time;
* timeseries/NNNNNN.npz: the rows recorded since the previous chunk, one file per chunk
  (about one a second of wall time). `load_run` reads them when timeseries.npz is missing;
  at the end they become one timeseries.npz and the folder goes.

SIGTERM is turned into the same interruption as Ctrl-C (SIGINT) while a run is open, so
both end in an aborted summary naming the signal. The handler also marks the attached
control loop, which stops at its next tick: an exception raised by a signal handler is
swallowed when it lands inside a finaliser run by the garbage collector.
"""
import json
import os
import shutil
import signal
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from host.errors import UsageError

CHUNK_DIR = "timeseries"
CHUNK_S = 1.0   # wall seconds between chunk files
SUMMARY_EVERY_S = 1.0   # the pending summary (how far the series reaches) rewritten at most this often
# the record's `comp`: a link's torque by behaviour, as its TORQUE frame gives it (bus_protocol/SPEC.md 0x06)
COMPONENTS = ("proxy", "assertions", "local PD", "joint limit", "brake", "other")
# the record's `host_bus`: the host controller's bus counters as they stood at the end of the tick
HOST_BUS = ("host_good_frames", "host_bad_frames", "late_assertions")


class Recorder:
    """Per-tick samples, appended as rows; `arrays()` stacks them. With `on_chunk` set,
    the rows recorded since the last call are handed over about every `chunk_s` seconds
    of wall time (and by `flush()`).

    Every row holds the same keys. Each key's rows are written into float64 blocks of
    BLOCK rows allocated as they fill: a row is copied (converted to float64) by one
    assignment, and the time series is sliced out of the blocks at the end (make bench:
    a copied array and a list entry per key, stacked at every chunk, were 5 % of a run)."""

    BLOCK = 1024   # rows per block

    def __init__(self, n, chunk_s=CHUNK_S):
        self.n = n
        self.blocks = {}     # key -> [float64 array (BLOCK,) + the key's shape, ...]
        self.on_chunk = None
        # with `reload` set (reload(n, key) -> the first n rows of key, as flushed to
        # on_chunk, in parts), the blocks whose rows have all been handed to on_chunk are
        # let go: a run's memory stays flat however long it goes; arrays() reads them back
        # at the end, a key at a time (Series)
        self.reload = None
        self.chunk_s = chunk_s
        self._rows = 0       # rows recorded
        self._flushed = 0
        self._base = 0       # rows let go (a multiple of BLOCK): blocks[k][0] starts there
        # blocks let go, filled again rather than allocated anew: the heap does not fragment
        # (glibc keeps freed blocks of this size in the heap, and the process grew ~1 MB/s)
        self._spare = {}
        self._last = time.monotonic()
        self.t0_ns = None    # wall time (ns) of the first row

    def add(self, **row):
        i = self._rows % self.BLOCK
        blocks = self.blocks
        if i == 0:   # the first row, or the last blocks are full
            self._grow(row)
            if not self._rows:   # chunks count from the first row, not from a slow start-up
                self._last = time.monotonic()
                self.t0_ns = time.time_ns()
        elif len(row) != len(blocks):
            raise ValueError("row keys %s, not the %s of the rows before" % (sorted(row), sorted(blocks)))
        for k, v in row.items():
            blocks[k][-1][i] = v   # KeyError: a key the rows before did not have
        self._rows += 1
        if self.on_chunk is not None and time.monotonic() - self._last >= self.chunk_s:
            self.flush()

    def _grow(self, row):
        if self.blocks and row.keys() != self.blocks.keys():
            raise ValueError("row keys %s, not the %s of the rows before" % (sorted(row), sorted(self.blocks)))
        spare = self._spare
        for k, v in row.items():
            shape = (self.BLOCK,) + np.shape(v)
            blk = spare[k].pop() if spare.get(k) and spare[k][-1].shape == shape else np.empty(shape)
            self.blocks.setdefault(k, []).append(blk)

    def _stack(self, key, start, stop):
        """Rows start..stop-1 of `key` (start >= the rows let go) as one new array."""
        b = self.BLOCK
        start, stop = start - self._base, stop - self._base
        parts = [blk[max(start - j * b, 0):stop - j * b] for j, blk in enumerate(self.blocks[key])
                 if j * b < stop and start < (j + 1) * b]
        return np.concatenate(parts) if len(parts) != 1 else parts[0].copy()

    def __len__(self):
        return self._rows

    def arrays(self):
        """key -> every row: a dict, or where rows have been let go a Series (the same
        arrays, each read back when asked for)."""
        if not self._base:
            return {k: self._stack(k, 0, self._rows) for k in self.blocks}
        return Series(self)

    def parts(self, key):
        """Every row of `key`, in consecutive arrays (those let go read back one by one)."""
        if self._base:
            yield from self.reload(self._base, key)
        yield self._stack(key, self._base, self._rows)

    def flush(self):
        """Hand the rows since the previous flush to on_chunk (if any)."""
        n = len(self)
        if self.on_chunk is not None and n > self._flushed:
            self.on_chunk({k: self._stack(k, self._flushed, n) for k in self.blocks})
            self._flushed = n
            if self.reload is not None:   # let go of the full blocks now on disk
                drop = min(self._flushed - self._base, max(self._rows - 1 - self._base, 0)) // self.BLOCK
                if drop > 0:
                    for k, blks in self.blocks.items():
                        self._spare[k] = blks[:drop][-2:]
                        del blks[:drop]
                    self._base += drop * self.BLOCK
        self._last = time.monotonic()


class Series(Mapping):
    """A long run's time series at its end (Recorder.arrays): key -> every row, read back
    from the chunk files when asked for, the last CACHE keys kept. The end of a run (its
    metrics, timeseries.npz written key by key and part by part, the plots) holds a few
    columns, not the whole record."""

    CACHE = 2

    def __init__(self, rec):
        self.rec = rec
        self._cache = {}

    def __getitem__(self, key):
        if key not in self.rec.blocks:
            raise KeyError(key)
        a = self._cache.pop(key, None)
        if a is None:
            a = np.concatenate(list(self.rec.parts(key)))
        self._cache[key] = a   # (dicts keep insertion order: the first is the oldest)
        while len(self._cache) > self.CACHE:
            del self._cache[next(iter(self._cache))]
        return a

    def __iter__(self):
        return iter(self.rec.blocks)

    def __len__(self):
        return len(self.rec.blocks)

    def column(self, key):
        """(dtype, shape, parts) of `key` without holding it whole (save_npz)."""
        blk = self.rec.blocks[key][0]
        return blk.dtype, (len(self.rec),) + blk.shape[1:], self.rec.parts(key)


def save_npz(path, arrays, extra=None):
    """np.savez_compressed of `arrays` (a dict or a Series) and `extra` (a dict), a Series's
    keys written part by part: the same file, without the whole record in memory."""
    import zipfile
    fmt = np.lib.format
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for key, src in [(k, arrays) for k in arrays] + [(k, extra) for k in extra or {}]:
            if isinstance(src, Series):
                dtype, shape, parts = src.column(key)
            else:
                a = np.asanyarray(src[key])
                dtype, shape, parts = a.dtype, a.shape, [a]
            with zf.open(key + ".npy", "w", force_zip64=True) as f:
                fmt.write_array_header_1_0(f, {"descr": fmt.dtype_to_descr(dtype), "fortran_order": False,
                                               "shape": shape})
                for part in parts:
                    f.write(np.ascontiguousarray(part, dtype=dtype).tobytes())


def _write_atomic(path, text):
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class _Interrupted(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be: the control loop ends the run the same way."""


def partial_dir(final):
    """Where a run to `final` is written while it goes on."""
    final = Path(final)
    return final.with_name(final.name + ".partial")


class RunDir:
    """Writer of one run directory (see the module docstring). Use as a context manager
    around the run: an exception that escapes it still leaves an aborted summary."""

    def __init__(self, out_dir, header, previous="replace", live=None, telemetry=True):
        if previous not in ("keep", "replace"):
            raise ValueError("previous: keep or replace, not %r" % previous)
        self.previous = previous
        self.aside = None   # where the previous run went (previous="keep")
        self.final = Path(out_dir)
        if self.final.is_dir() and any(self.final.iterdir()) and not (self.final / "summary.json").exists():
            raise FileExistsError("%s holds files but no summary.json: not a run directory, so a run "
                                  "will not replace it; choose another --out" % self.final)
        self.path = partial_dir(self.final)
        if self.path.exists():   # the leftovers of a run killed outright
            shutil.rmtree(self.path)
        try:
            (self.path / CHUNK_DIR).mkdir(parents=True)
        except OSError as e:
            raise UsageError("--out %s: cannot make the run directory: %s" % (self.final, e.strerror or e)) from None
        self.chunks = 0
        self.t_last = None
        self.signal = None
        self.finished = False
        self.loop = None
        self._gp_logged = 0
        self.live = live          # (address, port) of the live server, or None
        self.telemetry = None     # host/telemetry.Telemetry: run.mcap (and the live server)
        self.record = telemetry or bool(live)   # False: no run.mcap (make bench's comparison)
        self._sent = (0, 0)       # the host controller's logs and events handed to it
        self._held = []           # rows handed over since the last chunk file
        self._chunk_at = time.monotonic()
        self._log = open(self.path / "run.log", "a", buffering=1)
        self.head = {}
        self._summary_pending()
        self.log(header)

    # ---------------------------------------------------------------- during the run
    def log(self, line):
        self._log.write(line + "\n")   # line-buffered: on disk (page cache) at every line

    def attach(self, loop):
        """Stream the control loop's recorder here, and its agents' LOG lines with it."""
        self.loop = loop
        self.head = {"scenario": loop.sc.name, "path": loop.sc.path, "links": loop.sc.n, "mode": loop.mode}
        self._summary_pending()
        loop.rec.on_chunk = self.chunk
        loop.rec.reload = self.reload
        if not self.record:
            return
        from host.telemetry import HANDOVER_S, LIVE_CHUNK_S, Telemetry
        meta = {"n": loop.sc.n, "t0_ns": time.time_ns(), "scenario": loop.sc.name, "path": str(loop.sc.path),
                "mode": loop.mode, "control_rate_hz": loop.sc.control_rate_hz, "obstacles": loop.sc.obstacles}
        self.telemetry = Telemetry(self.path, meta, self.live)
        loop.rec.chunk_s = min(loop.rec.chunk_s, LIVE_CHUNK_S if self.live else HANDOVER_S)

    def reload(self, n, key):
        """The first n rows of `key`, from the chunk files one by one (the rows held back
        for one written first)."""
        self._write_chunk()
        for p in sorted((self.path / CHUNK_DIR).glob("*.npz")):
            if n <= 0:
                return
            with np.load(p, allow_pickle=False) as z:
                a = z[key]
            yield a[:n]
            n -= len(a)

    def chunk(self, rows):
        """The rows since the previous call (Recorder.flush): to the telemetry at once; into
        a time-series chunk file at most every CHUNK_S of wall time (with telemetry the
        recorder hands rows over more often than that)."""
        if self.telemetry is not None:
            self._to_telemetry(rows)
        self._held.append(rows)
        if self.telemetry is None or time.monotonic() - self._chunk_at >= CHUNK_S:
            self._write_chunk()

    def _write_chunk(self):
        held, self._held = self._held, []
        if not held:
            return
        rows = held[0] if len(held) == 1 else {k: np.concatenate([h[k] for h in held]) for k in held[0]}
        self._chunk_at = time.monotonic()
        path = self.path / CHUNK_DIR / ("%06d.npz" % self.chunks)
        with open(path.with_suffix(".tmp"), "wb") as f:   # a chunk is there whole or not at all
            np.savez(f, **rows)
        os.replace(path.with_suffix(".tmp"), path)
        self.chunks += 1
        self.t_last = float(rows["t"][-1])
        self._log_agents()
        if time.monotonic() - self._summary_at >= SUMMARY_EVERY_S:
            self._summary_pending()

    def _to_telemetry(self, rows):
        gp = self.loop.gp
        n_logs, n_events = len(gp.logs), len(gp.events)
        # the first rows carry the wall time of t = 0: the first tick's, after the start-up
        # and any wait for a viewer
        t0_ns = None if self.telemetry.n_rows else self.loop.rec.t0_ns - int(round(float(rows["t"][0]) * 1e9))
        self.telemetry.rows(rows, gp.logs[self._sent[0]:n_logs], gp.events[self._sent[1]:n_events], t0_ns)
        self._sent = (n_logs, n_events)

    def close_telemetry(self, hurry=False):
        """The record's last rows to the telemetry, which finishes run.mcap -> its counts
        (`hurry`: the run was interrupted, telemetry.Telemetry.close)."""
        if self.telemetry is None:
            return {}
        if self.loop is not None:
            self.loop.rec.flush()
        tel, self.telemetry = self.telemetry, None
        return tel.close(hurry)

    def _log_agents(self):
        entries = self.loop.gp.logs if self.loop else []
        for entry in entries[self._gp_logged:]:
            self.log("%.3f link %d: %s" % entry)
        self._gp_logged = len(entries)

    def _summary_pending(self):
        self._summary_at = time.monotonic()
        got = "" if self.t_last is None else "; the time series reaches t = %.3f s" % self.t_last
        s = dict(self.head, status="aborted",
                 reason="the run did not finish: its process ended without writing a summary "
                        "(killed outright, or the machine stopped)" + got)
        _write_atomic(self.path / "summary.json", json.dumps(s, indent=2) + "\n")

    # ---------------------------------------------------------------- at the end
    def finish(self, summary, arrays, log_lines, meta=None):
        """Final summary, the whole time series in one NPZ (the chunks go), the last log lines."""
        if self.signal and summary.get("status") == "aborted":
            summary["reason"] = "interrupted (%s)" % self.signal
            log_lines = [line.replace("interrupted (Ctrl-C)", summary["reason"]) for line in log_lines]
        self._log_agents()
        if self.telemetry is not None and self.loop is not None:
            self.loop.rec.flush()   # the last rows: the telemetry finishes them while timeseries.npz is written
        if arrays:
            save_npz(self.path / "timeseries.npz", arrays, meta)
        if self.telemetry is not None:
            summary["telemetry"] = self.close_telemetry(hurry=self.signal is not None)
        shutil.rmtree(self.path / CHUNK_DIR, ignore_errors=True)
        _write_atomic(self.path / "summary.json", json.dumps(summary, indent=2, sort_keys=False) + "\n")
        for line in log_lines:
            self.log(line)
        self.finished = True

    def aside_name(self):
        """OUT.YYYYmmdd-HHMMSS of the previous run's end (its summary's time), -2, -3, ...
        where that is taken."""
        try:
            t = (self.final / "summary.json").stat().st_mtime
        except OSError:
            t = time.time()
        stem = "%s.%s" % (self.final.name, time.strftime("%Y%m%d-%H%M%S", time.localtime(t)))
        cand, k = self.final.with_name(stem), 1
        while cand.exists():
            k += 1
            cand = self.final.with_name("%s-%d" % (stem, k))
        return cand

    def commit(self):
        """OUT.partial -> OUT; the previous OUT is moved aside (previous="keep") or removed
        only once the new one is in place."""
        if self.previous == "keep" and self.final.exists():
            self.aside = self.aside_name()
            os.rename(self.final, self.aside)
            self.log("the previous run in %s was moved to %s" % (self.final, self.aside))
        self._log.close()
        old = self.final.with_name(self.final.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        if self.final.exists():
            os.rename(self.final, old)
        os.rename(self.path, self.final)
        if old.exists():
            shutil.rmtree(old)

    # ---------------------------------------------------------------- context
    def __enter__(self):
        self._installed = threading.current_thread() is threading.main_thread()
        if self._installed:
            self._prev = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def _on_signal(self, signum, frame):
        self.signal = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.loop is not None:
            self.loop.interrupted = True
        raise _Interrupted()

    def __exit__(self, etype, exc, tb):
        if self._installed:
            for sig, prev in self._prev.items():
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        if etype is not None:
            if isinstance(exc, _Interrupted) or etype is KeyboardInterrupt:
                reason = "interrupted (%s)" % (self.signal or "Ctrl-C")
            else:
                reason = "%s: %s" % (etype.__name__, exc)
            if self.finished:   # the run itself is complete (e.g. stopped while plotting)
                self.log("after the run: " + reason)
            else:
                if self.loop is not None:   # the rows since the last chunk
                    self.loop.rec.flush()
                    self._write_chunk()
                s = dict(self.head, status="aborted", reason=reason,
                         telemetry=self.close_telemetry(hurry=self.signal is not None))
                self.log("status aborted " + reason)
                self.log("".join(traceback.format_exception(etype, exc, tb)))
                self._log_agents()
                _write_atomic(self.path / "summary.json", json.dumps(s, indent=2) + "\n")
        self.close_telemetry(hurry=True)   # (closed already where the run finished)
        self.commit()
        return False


def load_run(run_dir):
    """(summary, time series) of a run directory; a run killed outright (OUT.partial/)
    has no timeseries.npz, only its chunks: they are joined."""
    d = Path(run_dir)
    summary = json.loads((d / "summary.json").read_text())
    if (d / "timeseries.npz").exists():
        data = dict(np.load(d / "timeseries.npz", allow_pickle=False))
    else:
        data = join_chunks(d)
    return summary, data


def join_chunks(d):
    """The time series of the chunks in run directory d (timeseries/NNNNNN.npz), joined."""
    parts = [dict(np.load(p, allow_pickle=False)) for p in sorted((Path(d) / CHUNK_DIR).glob("*.npz"))]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
