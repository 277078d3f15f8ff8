"""Hypervisor pauses of a desktop run (DESIGN 13). In processes mode every piece of the
emulated arm (plant, host, the N link processes) runs inside this VM, so when the
hypervisor stops running one of its vCPUs the emulated world stands still with it: the
nodes on that vCPU are frozen mid-cycle, which no board of a real arm ever is. Such a
pause must not be charged to the bus and the firmware as a late torque, the same way a
tick the simulator itself opens late moves the schedule (ControlLoop.run).

A sentinel per CPU measures the pauses: a tiny MicroPython process pinned to the CPU at
the top SCHED_FIFO priority that sleeps `period_us` at a time. Nothing on the CPU can
delay its wake-up but the hypervisor (or an interrupt storm), so a wake-up more than
`threshold_us` late is a pause from the due time to the wake-up. The sentinel writes
its heartbeat and its last pauses into a small shared file; the host reads it with no
system call (mmap). A sentinel whose heartbeat is overdue is in a pause right now.

Costs ~1.7 % of a CPU per sentinel at the 2 ms default (34 us a wake-up, measured on
the 2-vCPU test VM); while the CPU wake-up latency is held at 0 (cpu_latency_qos) its
own wake-ups overshoot by under 0.2 ms all but ~1 in 1000 times there."""
import mmap
import os
import struct
import subprocess
import tempfile
from time import monotonic_ns   # the clock of time.perf_counter() on Linux

SLOTS = 16                       # pauses kept per CPU (a tick needs the last few)
_HEAD = struct.Struct("<qqq")    # heartbeat (CLOCK_MONOTONIC us), pauses so far, their total us
_PAUSE = struct.Struct("<qq")    # start, end (us)
SIZE = _HEAD.size + SLOTS * _PAUSE.size

# Runs under micropython (its time.ticks_us is CLOCK_MONOTONIC in microseconds on the
# unix port, the clock of the host's time.perf_counter()).
SENTINEL = """\
import struct, time
P, T, N = %d, %d, %d
f = open(%r, "r+b")
hb = bytearray(8)
rec = bytearray(16)
cnt = bytearray(16)
n = 0
lost = 0
last = time.ticks_us()
while True:
    time.sleep_us(P)
    t = time.ticks_us()
    late = time.ticks_diff(t, last) - P
    if late > T:
        struct.pack_into("<qq", rec, 0, t - late, t)
        f.seek(24 + 16 * (n %% N))
        f.write(rec)
        n += 1
        lost += late
        struct.pack_into("<qq", cnt, 0, n, lost)
        f.seek(8)
        f.write(cnt)
    struct.pack_into("<q", hb, 0, t)
    f.seek(0)
    f.write(hb)
    last = t
"""


class VmPauses:
    """One sentinel per CPU; lost(t0, t1) -> seconds within [t0, t1] (perf_counter)
    during which some vCPU was paused, an ongoing pause included."""

    def __init__(self, micropython, period_us=2000, threshold_us=300, cpus=None, preexec=None):
        self.period_us, self.threshold_us = period_us, threshold_us
        self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
        self.procs, self.maps, self.files = [], [], []
        self.dir = tempfile.mkdtemp(prefix="linkteam-pause-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        try:
            for cpu in self.cpus:
                path = os.path.join(self.dir, "cpu%d" % cpu)
                with open(path, "wb") as f:
                    f.write(bytes(SIZE))
                f = open(path, "r+b")
                self.files.append(f)
                self.maps.append(mmap.mmap(f.fileno(), SIZE, access=mmap.ACCESS_READ))
                code = SENTINEL % (period_us, threshold_us, SLOTS, path)
                self.procs.append(subprocess.Popen(
                    [micropython, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    start_new_session=True, preexec_fn=lambda cpu=cpu: _pin(cpu, preexec)))
        except BaseException:
            self.close()
            raise

    @property
    def alive(self):
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def pauses(self, since_us=0):
        """[(start_us, end_us)] of every pause still on record that ended after since_us,
        plus (heartbeat + period, now) for a CPU whose sentinel is overdue right now."""
        now = _now_us()
        out = []
        for mm in self.maps:
            hb, n, _ = _HEAD.unpack_from(mm, 0)
            for k in range(max(0, n - SLOTS), n):
                s, e = _PAUSE.unpack_from(mm, _HEAD.size + _PAUSE.size * (k % SLOTS))
                if e > since_us:
                    out.append((s, e))
            due = hb + self.period_us
            # overdue: paused now (a sentinel gone for over a second is just gone)
            if hb and now - due > self.threshold_us and now - due < 1000000:
                out.append((due, now))
        return out

    def lost(self, t0, t1):
        """Seconds of [t0, t1] (perf_counter) covered by some vCPU's pause (their union)."""
        a, b = int(t0 * 1e6), int(t1 * 1e6)
        spans = sorted((max(s, a), min(e, b)) for s, e in self.pauses(a) if s < b)
        total, end = 0, a
        for s, e in spans:
            s = max(s, end)
            if e > s:
                total += e - s
                end = e
        return total * 1e-6

    def totals(self):
        """(pauses, their total in ms) over every CPU since the sentinels started."""
        heads = [_HEAD.unpack_from(mm, 0) for mm in self.maps]
        return sum(h[1] for h in heads), sum(h[2] for h in heads) * 1e-3

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []
        for mm in self.maps:
            mm.close()
        for f in self.files:
            f.close()
        self.maps, self.files = [], []
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else ():
            os.unlink(os.path.join(self.dir, name))
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def _now_us():
    return monotonic_ns() // 1000


def _pin(cpu, preexec):
    """In the sentinel: on its CPU only, above every node and the host. Raises where
    SCHED_FIFO is not allowed: below the nodes its wake-ups would measure them."""
    if preexec:
        preexec()
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(os.sched_get_priority_max(os.SCHED_FIFO)))
