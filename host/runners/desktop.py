"""What only the desktop emulation of an arm needs (docs/design.md §13), opt-in for the
processes runner; HIL with boards needs none of it.

Priorities: every emulated node is a process on the same two or so CPUs, where a board
owns its MCU. Nodes run SCHED_FIFO where allowed (node_preexec), base-ward links first
(link_priority), the host below them except while it sends (sending_priority).

Hypervisor pauses: every piece of the emulated arm (plant, host, the N link processes)
runs inside this VM, so when the hypervisor stops running one of its vCPUs the emulated
world stands still with it: the nodes on that vCPU are frozen mid-cycle, which no board
of a real arm ever is. Such a pause must not be charged to the bus and the firmware as a
late torque, the same way a tick the simulator itself opens late moves the schedule
(wallclock.Schedule).

A sentinel per CPU measures the pauses (VmPauses): a tiny MicroPython process pinned to
the CPU at the top SCHED_FIFO priority that sleeps `period_us` at a time and appends the
time of every wake-up to a file in /dev/shm (one write a wake-up). Nothing on the CPU can
delay its wake-up but the hypervisor (or an interrupt storm), so a wake-up more than
`threshold_us` late is a pause from its due time to the wake-up, and a sentinel whose
next wake-up is that overdue is in a pause right now. A pause that ends before the
sentinel's due time goes unseen: what is measured never exceeds what was lost."""
import os
import subprocess
import tempfile
from array import array
from time import monotonic_ns   # the clock of time.perf_counter() on Linux

from host.runners.children import die_with_parent, micropython_path

RT_PRIORITY = 10   # SCHED_FIFO priorities where allowed: the host 10, link i 11 + N - i
MAX_LINKS_RT = 40  # priorities stay within 10..51 (Linux allows 1..99)


def link_priority(link, n):
    """Base-ward links run first: a cycle's work flows base to tip (SYNC handling, then
    K_{i-1} -> K_i), so on two shared cores link i is never queued behind link j > i.
    (A ring's second goal wave, up from the tip, then mostly waits for the first: on two
    cores the goal phase is bound by CPU, not by hops: ranking links by distance from the
    nearer end, or all equal, let both waves run but did not shorten the 20-link cycle.)"""
    return RT_PRIORITY + max(1, min(n, MAX_LINKS_RT) - link + 1)


def host_priority(sending=False):
    """Below every link: on a shared core a link's work (forwarding the goal, its torque)
    comes before the host taking in torque reports one by one; the host still preempts
    every ordinary process, and at a tick's opening the links are idle. Above every link
    while it sends (sending_priority)."""
    return RT_PRIORITY + MAX_LINKS_RT + 1 if sending else RT_PRIORITY


def node_preexec(realtime, priority):
    """In the child: die with the host; with `realtime`, run SCHED_FIFO like a node's
    firmware owns its MCU (the nodes block in poll(), so they never starve the host;
    the kernel's RT throttling bounds them anyway). Silently normal where not allowed."""
    die_with_parent()
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, AttributeError):
            pass


class sending_priority:
    """While the host sends, it runs above the links (host_priority(sending=True)): an
    emulated broadcast is N datagrams, and a link woken by the first must not run before
    the host has sent the rest. `enabled`: the host runs SCHED_FIFO (else a no-op)."""

    def __init__(self, enabled):
        self.enabled = enabled

    def __call__(self):
        return self

    def __enter__(self):
        if self.enabled:
            os.sched_setparam(0, os.sched_param(host_priority(sending=True)))

    def __exit__(self, *exc):
        if self.enabled:
            os.sched_setparam(0, os.sched_param(host_priority()))


def start_vm_pauses():
    """The pause sentinels, or None where they cannot run at the top SCHED_FIFO priority
    (not root): below the nodes they would measure the nodes."""
    try:
        return VmPauses(micropython_path())
    except (OSError, subprocess.SubprocessError):
        return None


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


class PauseLog:
    """The sentinels' wake-up logs (one file of 8-byte little-endian microsecond times
    per CPU); lost(t0, t1) -> seconds within [t0, t1] (perf_counter) during which some
    vCPU was paused, a pause going on now included."""

    def __init__(self, paths, period_us=2000, threshold_us=300):
        self.period_us, self.threshold_us = period_us, threshold_us
        self.logs = [os.open(p, os.O_RDONLY) for p in paths]

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
        for fd in self.logs:
            os.close(fd)
        self.logs = []


class VmPauses(PauseLog):
    """One sentinel per CPU (SENTINEL, pinned, top SCHED_FIFO priority) and its log."""

    def __init__(self, micropython, period_us=2000, threshold_us=300, cpus=None):
        self.procs, self.logs = [], []
        self.dir = tempfile.mkdtemp(prefix="linkteam-pause-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        try:
            cpus = sorted(cpus or os.sched_getaffinity(0))
            paths = [os.path.join(self.dir, "cpu%d" % cpu) for cpu in cpus]
            for path in paths:
                open(path, "wb").close()
            super().__init__(paths, period_us, threshold_us)
            for cpu, path in zip(cpus, paths):
                self.procs.append(subprocess.Popen(
                    [micropython, "-c", SENTINEL % (path, period_us)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                    preexec_fn=lambda cpu=cpu: _pin(cpu)))
        except BaseException:
            self.close()
            raise

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        super().close()
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else ():
            os.unlink(os.path.join(self.dir, name))
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def _pin(cpu):
    """In the sentinel: dies with the host; on its CPU only, above every node and the
    host. Raises where SCHED_FIFO is not allowed: below the nodes its wake-ups would
    measure them."""
    die_with_parent()
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(os.sched_get_priority_max(os.SCHED_FIFO)))
