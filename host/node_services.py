"""The host's side of the host services (NYMPH, docs/design.md §11): what the nodes ask
for (LOG: print/log requests) and what they report of their timing (TIMING: the finish
time of every cycle) is kept per node and, during a run, written to one log file per
node in the run directory (`nodes/linkNN.log`, line-buffered), which `linkteam console`
follows live."""
from pathlib import Path
from time import monotonic_ns

from firmware.services import NOT_FINISHED


def node_log_path(run_dir, link):
    return Path(run_dir) / "nodes" / ("link%02d.log" % link)


class HostServices:
    def __init__(self):
        self._finish = {}    # finish, from the TIMING values in _timing when it is read
        self._timing = []    # (link, values) of the TIMING frames not yet in _finish
        self.finish_common = {}   # (tick, link) -> µs from the tick's opening, where clocks are shared
        self.shared_clock = False  # the nodes' clocks are the host's CLOCK_MONOTONIC (processes mode)
        self._opened = {}    # tick -> host clock (µs) when its frames were out
        self.log_lines = {}  # link -> lines served
        self.run_dir = None
        self._files = {}
        self.keep_finish = True   # False: TIMING frames are not kept (an in-process run's
        # finish history goes nowhere, and would grow with the run)

    @property
    def finish(self):
        """(tick, link) -> µs from the node's SYNC to its TORQUE (node's clock). Worked out
        from the TIMING frames when read (make bench: a dict entry per cycle and node as
        the frames came was ~1 % of an in-process run)."""
        if self._timing:
            finish = self._finish
            for link, v in self._timing:
                n = (len(v) - 1) // 2
                for i, us in enumerate(v[1:1 + n]):
                    if us != NOT_FINISHED:
                        finish[v[0] + i, link] = us
            self._timing = []
        return self._finish

    def open(self, run_dir, shared_clock=False):
        """From now on every node's requests also go to run_dir/nodes/linkNN.log."""
        self.shared_clock = shared_clock
        self.run_dir = Path(run_dir)
        (self.run_dir / "nodes").mkdir(parents=True, exist_ok=True)

    def _write(self, link, line):
        if self.run_dir is None:
            return
        f = self._files.get(link)
        if f is None:
            f = self._files[link] = open(node_log_path(self.run_dir, link), "w", buffering=1)
        f.write(line + "\n")

    def open_tick(self, tick):
        """The frames of `tick` are out (kept for 240 ticks, the TIMING frames' lag)."""
        self._opened[tick] = monotonic_ns() // 1000
        self._opened.pop(tick - 240, None)

    def on_log(self, t, link, text):
        self.log_lines[link] = self.log_lines.get(link, 0) + 1
        self._write(link, "%9.3f  %s" % (t, text))

    def on_timing(self, t, link, v):
        """TIMING: first tick, 12 times from SYNC to TORQUE (NOT_FINISHED: the node did not
        act), 12 finish clocks (low 16 bits, unwrapped against the tick's opening)."""
        if not self.shared_clock and self.run_dir is None:   # in-process: nothing else to do
            if self.keep_finish:
                self._timing.append((link, v))   # into finish when it is read
            return
        self._timing.append((link, v))
        n = (len(v) - 1) // 2
        first = v[0]
        if self.shared_clock:
            for i, us in enumerate(v[1:1 + n]):
                t_open = self._opened.get(first + i)
                if us != NOT_FINISHED and t_open is not None:
                    self.finish_common[first + i, link] = (v[1 + n + i] - t_open) & 0xFFFF
        done = [us for us in v[1:1 + n] if us != NOT_FINISHED]
        if done and self.run_dir is not None:   # formatted only where written
            done.sort()
            self._write(link, "%9.3f  cycles %d-%d finished after %d us (median), %d us (max), %d not acted"
                        % (t, v[0], v[0] + n - 1, done[len(done) // 2], done[-1], n - len(done)))

    def close(self):
        for f in self._files.values():
            f.close()
        self._files = {}


def follow(run_dir, link, out, poll_s=0.1, wait_s=60.0):
    """`linkteam console`: print node `link`'s log of the run to run_dir. While the run
    goes on (its files are in RUN.partial, host/report/run_dir.py) lines are printed as they come,
    until the run ends (RUN.partial is renamed to RUN) or Ctrl-C; a finished run's log is
    printed whole. Waits up to wait_s for either to appear. Returns the lines printed."""
    import time
    from host.report.run_dir import partial_dir
    live_dir = partial_dir(run_dir)
    live, done = node_log_path(live_dir, link), node_log_path(run_dir, link)
    t0 = time.time()
    while not (live.exists() or done.exists()):
        if time.time() - t0 > wait_s:
            raise FileNotFoundError("no log of link %d in %s after %.0f s (is a processes or hil "
                                    "run writing there?)" % (link, run_dir, wait_s))
        time.sleep(poll_s)
    following = live.exists()
    n = 0
    with open(live if following else done) as f:
        while True:
            line = f.readline()
            if line:
                out.write(line)
                out.flush()
                n += 1
            elif following and live_dir.exists():
                time.sleep(poll_s)
            else:   # the run is over: what came in after the last read, and done
                rest = f.read()
                out.write(rest)
                return n + rest.count("\n")
