"""Hypervisor pauses of a desktop run (DESIGN 13). In processes mode every piece of the
emulated arm (plant, host, the N link processes) runs inside this VM, so when the
hypervisor stops running one of its vCPUs the emulated world stands still with it: the
nodes on that vCPU are frozen mid-cycle, which no board of a real arm ever is. Such a
pause must not be charged to the bus and the firmware as a late torque, the same way a
tick the simulator itself opens late moves the schedule (ControlLoop.run).

A sentinel per CPU measures the pauses: a tiny MicroPython process pinned to the CPU at
the top SCHED_FIFO priority that sleeps `period_us` at a time and appends the time of
every wake-up to a file in /dev/shm (one write a wake-up). Nothing on the CPU can delay
its wake-up but the hypervisor (or an interrupt storm), so a wake-up more than
`threshold_us` late is a pause from its due time to the wake-up, and a sentinel whose
next wake-up is that overdue is in a pause right now. A pause that ends before the
sentinel's due time goes unseen: what is measured never exceeds what was lost."""
import os
import subprocess
import tempfile
from array import array
from time import monotonic_ns   # the clock of time.perf_counter() on Linux

from host.runners.processes import _die_with_parent

# Runs under micropython: time.ticks_us is CLOCK_MONOTONIC in microseconds on the unix
# port (time.perf_counter's clock); one 8-byte record a wake-up, no allocation.
SENTINEL = """\
import struct, time
f = open(%r, "wb")
rec = bytearray(8)
while True:
    time.sleep_us(%d)
    struct.pack_into("<q", rec, 0, time.ticks_us())
    f.write(rec)
"""


class VmPauses:
    """One sentinel per CPU; lost(t0, t1) -> seconds within [t0, t1] (perf_counter)
    during which some vCPU was paused, a pause going on now included."""

    def __init__(self, micropython, period_us=2000, threshold_us=300, cpus=None):
        self.period_us, self.threshold_us = period_us, threshold_us
        self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
        self.procs, self.logs = [], []
        self.dir = tempfile.mkdtemp(prefix="linkteam-pause-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        try:
            for cpu in self.cpus:
                path = os.path.join(self.dir, "cpu%d" % cpu)
                open(path, "wb").close()
                self.logs.append(os.open(path, os.O_RDONLY))
                self.procs.append(subprocess.Popen(
                    [micropython, "-c", SENTINEL % (path, period_us)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                    preexec_fn=lambda cpu=cpu: _pin(cpu)))
        except BaseException:
            self.close()
            raise

    @property
    def alive(self):
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def _wakeups(self, fd, last=None):
        """The sentinel's wake-up times (us): the last `last` of them, or all."""
        size = os.fstat(fd).st_size // 8 * 8
        start = 0 if last is None else max(0, size - 8 * last)
        return array("q", os.pread(fd, size - start, start))

    def _recent(self, since_us, now_us):
        """(now_us, per CPU the wake-ups since since_us and a few before)."""
        now = monotonic_ns() // 1000 if now_us is None else now_us
        back = (now - since_us) // self.period_us + 4
        return now, [self._wakeups(fd, back) for fd in self.logs]

    def _gaps(self, w):
        """(start_us, end_us) of every pause between consecutive wake-ups w: a wake-up
        more than threshold_us late is a pause from its due time until it came."""
        late = self.period_us + self.threshold_us
        for a, b in zip(w, w[1:]):
            if b - a > late:
                yield a + self.period_us, b

    def pauses(self, since_us, now_us=None):
        """[(start_us, end_us)] of the pauses that ended after since_us, a pause going
        on now included."""
        now, recent = self._recent(since_us, now_us)
        out = []
        for w in recent:
            out += [g for g in self._gaps(w) if g[1] > since_us]
            # overdue now (a sentinel gone for over a second is just gone)
            if w and self.period_us + self.threshold_us < now - w[-1] < 1000000:
                out.append((w[-1] + self.period_us, now))
        return out

    def wakeups_since(self, t0):
        """Per CPU, the sentinel's wake-ups from two periods before t0 (perf_counter
        seconds), in ms from t0: what it saw of a late cycle (summary.json late_cycles)."""
        a = int(t0 * 1e6)
        return [[round((w - a) * 1e-3, 2) for w in ws if w >= a - 2 * self.period_us]
                for ws in self._recent(a, None)[1]]

    def lost(self, t0, t1):
        """Seconds of [t0, t1] (perf_counter) covered by some vCPU's pause (their union)."""
        a, b = int(t0 * 1e6), int(t1 * 1e6)
        total, end = 0, a
        for s, e in sorted(self.pauses(a, b)):
            s, e = max(s, end), min(e, b)
            if e > s:
                total += e - s
                end = e
        return total * 1e-6

    def totals(self):
        """(pauses, their total in ms) over every CPU since the sentinels started."""
        gaps = [g for fd in self.logs for g in self._gaps(self._wakeups(fd))]
        return len(gaps), sum(e - s for s, e in gaps) * 1e-3

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        for fd in self.logs:
            os.close(fd)
        self.logs = []
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else ():
            os.unlink(os.path.join(self.dir, name))
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def _pin(cpu):
    """In the sentinel: dies with the host; on its CPU only, above every node and the
    host. Raises where SCHED_FIFO is not allowed: below the nodes its wake-ups would
    measure them."""
    _die_with_parent()
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(os.sched_get_priority_max(os.SCHED_FIFO)))
