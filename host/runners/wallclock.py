"""The wall-clock half of a run, shared by every runner whose agents are elsewhere
(processes, HIL; docs/design.md §6, §13):

  Schedule       when tick k opens and when its torques are due; the only owner of that
                 schedule. ControlLoop.run opens each tick through it and hands the
                 exchange the tick's deadline; the exchange gives back the VM pause it
                 absorbed (desktop emulation only), which moves the schedule.
  Exchange       one cycle on a transport: send the host's frames, take in frames for
                 the host until every torque is in or the deadline passes.
  realtime_host  the host process as a real-time loop while a run lasts.

What only the desktop emulation needs (node priorities, VM-pause sentinels) is in
runners/desktop.py and comes in through Exchange's `sending` and `pauses`."""
import contextlib
import gc
import os
import select
import sys
import time

from bus_protocol import messages as m
from host.runners.base import Aborted

HOST_LATE_S = 0.001   # a tick the host opens later than this is a late host tick
LATE_CYCLES_KEPT = 50


class Schedule:
    """Tick k opens at wall0 + t_k; its torques are due when tick k+1 opens.

    world_waits (a simulated plant): when the host opens a tick late (its plant step, a
    stall of the host process, also one that keeps it from waking on time) the simulated
    world waits for it: the schedule moves and the bus keeps its whole period. Counted
    in late_host_ticks / host_lag_max_ms, apart from missed cycles; a wake-up late by
    under HOST_LATE_S only shortens that tick's period. Without it (a real plant, HIL
    --real-plant) the arm does not wait: the schedule stays and a late tick is only
    counted. `slowdown`: wall seconds per simulated second (above 1: a relaxed control
    rate for a machine too busy for the scenario's own; the agents' watchdog_ms must
    allow for it). `now` and `sleep` are the clock (time.perf_counter and time.sleep;
    tests give a scripted one)."""

    def __init__(self, stats, world_waits=True, slowdown=1.0, now=time.perf_counter, sleep=time.sleep):
        self.stats = stats
        self.world_waits = world_waits
        self.slowdown = slowdown
        self.now = now
        self.sleep = sleep
        self.wall0 = None
        stats.clock = "wall"

    def open(self, t, t_next):
        """Wait until tick time t (s of the run); return the wall time its torques are due."""
        t, t_next = t * self.slowdown, t_next * self.slowdown
        now = self.now()
        if self.wall0 is None:
            self.wall0 = now - t
        lag = self.wall0 + t - now
        if lag > 0:
            self.sleep(lag)
            lag = self.wall0 + t - self.now()   # below 0: it woke late
            if lag > -HOST_LATE_S:
                lag = 0.0
        if lag < 0:
            if -lag > HOST_LATE_S:
                self.stats.late_host_ticks += 1
            self.stats.host_lag_max_ms = max(self.stats.host_lag_max_ms, -lag * 1e3)
            if self.world_waits:
                self.wall0 -= lag
        return self.wall0 + t_next

    def move(self, paused):
        """A VM pause of `paused` s that the tick's deadline absorbed moves every later tick."""
        if paused > 0:
            self.wall0 += paused
            self.stats.vm_pauses["ticks_moved"] += 1
            self.stats.vm_pauses["moved_ms"] = round(self.stats.vm_pauses["moved_ms"] + paused * 1e3, 2)


GONE_POLL_S = 0.05   # lockstep: how often a tick that waits for torques looks for dead nodes
# ... and once one died in it, the tick is treated as one of a lossy bus (the node may have
# taken a packet of the kinematic wave with it): the goal from the last K_N if this one
# has not come after STALE_AFTER_GONE_S, a torque missing STRAGGLER_GONE_S after the tick
# opened not waited for (processes.py STALE_AFTER_S, straggler)
STALE_AFTER_GONE_S = 0.1
STRAGGLER_GONE_S = 0.5


class Exchange:
    """exchange(frames, k, deadline) -> VM pause absorbed (s): send the host's frames, feed
    what comes back to the controller until every torque of tick k is in or `deadline`
    (perf_counter s) passes; deadline None (lockstep) waits for every torque, up to
    `timeout` (the scenario's patience: stats.wait_with_patience), then aborts or, with
    on_patience "hold", leaves the missing torques held (stats.patience_ran_out).
    `health()` raises if a node is gone. With `io` (processes.JointIO) joint states go out
    and torque reports come back on the joint wires, the bus carries the rest.

    Desktop emulation only: `sending` is held while the host sends, `pauses`
    (desktop.VmPauses) tells how long the emulated world stood still. Lockstep with
    `straggler` (s, runs with faults): a torque still missing that long after the goal went
    out is a silent node's, not a slow one's; the tick goes on without it. On a UART ring
    round a dead node (gp.dead) the tick's frames go into both ends and frames for links
    that come round to the host are put into the tip's end (firmware/node.py). With
    `stale_after` (s, a bus with injected faults) a cycle whose K_N has not come that long
    after it opened gets the goal from the last K_N (HostController.close_stale), as the
    in-process bus does once it has gone quiet (with no K_N yet, lockstep: the tick ends
    without a goal after `straggler`); a transport that holds frames back
    (transports/faulty.py `due_in`) is woken for them. Lockstep with `gone` (processes.py):
    gone() notes node processes that died since its last call (gp.dead) and says whether
    there were any; a tick that waits for torques asks it every GONE_POLL_S, and a dead
    node's torque is then not waited for (a node killed inside a tick: the rest of that
    tick is one of a lossy bus's).

    The tick's steps: send, then until it ends: ended? -> wait_wall_clock or
    wait_lockstep (how long to wait, or the tick ends) -> close_stale (a lost K_N) ->
    recv -> take."""

    END = None        # a step's answer: the tick ends here
    AGAIN = -1.0      # a step's answer: look again at once (the deadline moved, a goal went out)

    def __init__(self, gp, stats, transport, health=None, io=None, sending=contextlib.nullcontext,
                 pauses=None, timeout=5.0, straggler=0.0, stale_after=0.0, gone=None):
        self.gp, self.stats, self.transport, self.health, self.io = gp, stats, transport, health, io
        self.sending, self.pauses, self.timeout = sending, pauses, timeout
        self.straggler, self.stale_after, self.gone = straggler, stale_after, gone
        self.held = getattr(transport, "due_in", None)
        self.sched = HostSchedstat()
        self.relay = (getattr(transport, "send_return", None)
                      if getattr(transport, "return_fd", None) is not None else None)
        if io is not None:
            self.poller = select.poll()
            for fd in transport.read_fds():
                self.poller.register(fd, select.POLLIN)
            self.poller.register(io.fileno(), select.POLLIN)
        else:
            self.recv = transport.recv

    def __call__(self, frames, k, deadline):
        self.k, self.deadline = k, deadline
        self.t0 = t0 = time.perf_counter()
        self.stale, self.strag = self.stale_after, self.straggler   # this tick's (a death makes it lossy)
        self.t_stale, self.t_goal, self.paused = t0 + self.stale, None, 0.0
        self.t_gone = t0 + GONE_POLL_S
        self.sched0 = self.sched.read()
        self.send(frames)
        self.gp.prepare()   # off the critical path: the kinematic wave is running now
        self.limit = t0 + self.timeout
        if deadline is not None:
            self.stats.tick_budget_ms.append((deadline - t0) * 1e3)
        while not self.ended():
            now = time.perf_counter()
            wait = self.wait_wall_clock(now) if self.deadline is not None else self.wait_lockstep(now)
            if wait is not self.END and wait != self.AGAIN and self.stale and not self.gp.closed:
                wait = self.close_stale(now, wait)
            if wait is self.END:
                return self.paused
            if wait != self.AGAIN:
                self.take(self.recv(wait))
        return self.paused

    def send(self, frames):
        """The tick's frames: joint states on the joint wires (processes), the rest on the
        bus; on a ring round a dead node into both ends."""
        with self.sending():
            if self.io is not None:
                for f in frames:
                    if f[0] == m.JOINT_STATE:
                        self.io.send(f)
                frames = [f for f in frames if f[0] != m.JOINT_STATE]
            if self.gp.dead and self.relay:
                self.transport.broadcast_batch(frames)
            else:
                self.transport.send_batch(frames)

    def ended(self):
        """Every torque is in (lockstep on a lossy bus: and the goal is out, or the K_N that
        would close the cycle is given up on; braked nodes report their torques before it
        comes): the cycle's times go to the stats."""
        gp = self.gp
        if not (gp.complete and (gp.closed or self.deadline is not None or not self.stale)):
            return False
        self.stats.bus_cycle_ms.append((time.perf_counter() - self.t0) * 1e3)
        if self.t_goal is not None:
            self.stats.goal_sent_ms.append((self.t_goal - self.t0) * 1e3)
        return True

    def wait_wall_clock(self, now):
        """How long to wait for the next frame before the deadline; at the deadline a VM
        pause the emulated world stood still for (desktop.py) moves it by that much (AGAIN),
        or the tick ends late (END, with what it was waiting for)."""
        if now >= self.deadline and self.pauses is not None:
            lost = self.pauses.lost(self.t0, now)
            if lost > self.paused:
                self.deadline += lost - self.paused
                self.paused = lost
                return self.AGAIN
        if now < self.deadline:
            return self.deadline - now
        if self.health:
            self.health()
        self.record_late()
        return self.END

    def record_late(self):
        """What a late cycle was waiting for (the first LATE_CYCLES_KEPT of a run)."""
        stats, gp, t0 = self.stats, self.gp, self.t0
        if len(stats.late_cycles) >= LATE_CYCLES_KEPT:
            return
        run_ms, runq_ms = self.sched.since(self.sched0)
        stats.late_cycles.append({
            "tick": self.k, "goal_sent_ms": None if self.t_goal is None else round((self.t_goal - t0) * 1e3, 2),
            "missing_links": [i + 1 for i in range(gp.n) if not gp.got[i]],
            "vm_paused_ms": round(self.paused * 1e3, 2),
            "host_oncpu_ms": run_ms, "host_runq_ms": runq_ms,
            "host_woke_late_ms": round((time.perf_counter() - self.deadline) * 1e3, 2),
            "deadline_ms": round((self.deadline - t0) * 1e3, 2)})
        if self.pauses is not None:
            stats.late_cycles[-1]["sentinel_wakeups_ms"] = self.pauses.wakeups_since(t0)

    def wait_lockstep(self, now):
        """How long to wait for the next frame with no deadline: END when the goal went out
        and torques came, not this one's, for `straggler` s (a silent node; a lossy bus:
        or none came, as when the tick's SYNC and K_0 were both lost); at the end of the
        patience hold the missing torques (END) or abort."""
        gp, straggler, t0 = self.gp, self.strag, self.t0
        waits_out = straggler and (gp.n_got or self.stale)
        if waits_out and gp.closed and now >= t0 + straggler:
            return self.END
        if now >= self.limit:
            if self.health:
                self.health()
            missing = [i + 1 for i in range(gp.n) if not gp.got[i]]
            if self.stats.patience_ran_out(missing):
                return self.END   # hold: the missing links' last torques stay on
            raise Aborted("cycle %d: no torque from links %s within the patience of %g s"
                          % (self.k, missing, self.timeout))
        wait = max(0.0, (min(self.limit, t0 + straggler) if waits_out else self.limit) - now)
        if self.gone is None:
            return wait
        if now >= self.t_gone:
            self.t_gone = now + GONE_POLL_S
            if self.gone():   # from now on this tick is one of a lossy bus's
                self.stale = self.stale or STALE_AFTER_GONE_S
                self.strag = self.strag or STRAGGLER_GONE_S
                self.t_stale = now + self.stale
                return self.AGAIN
        return min(wait, self.t_gone - now)

    def close_stale(self, now, wait):
        """K_N lost (a bus with injected faults): `stale_after` s on, the goal from the last
        one goes out (AGAIN); none yet (the first ticks): no goal, no torque due (lockstep:
        END after `straggler`). Before that, the wait shortened to that time."""
        if now < self.t_stale:
            return min(wait, self.t_stale - now)
        self.t_stale = now + self.stale
        out = self.gp.close_stale()
        if not out:
            return self.END if self.deadline is None and now >= self.t0 + self.strag else self.AGAIN
        with self.sending():
            self.transport.broadcast_batch(out)
        self.t_goal = time.perf_counter()
        return self.AGAIN

    def recv(self, wait):
        """One bus frame or None within `wait` s; torque reports on the joint wires taken
        in on the way (processes mode; otherwise the transport's own recv)."""
        f = self.transport.recv(0)
        if f is None:
            self.reports()
            if self.gp.complete:
                return None
            due = self.held() if self.held else None
            self.poller.poll(max(0, min(int(wait * 1000 + 0.999), 50,
                                        50 if due is None else int(due * 1000 + 0.999))))
            f = self.transport.recv(0)
        self.reports()
        return f

    def reports(self):
        """Torque reports from the joint wires; a torque the host's check rejects brakes its link."""
        for r in self.io.recv_all():
            out = self.gp.on_frame(r)
            if out:
                with self.sending():
                    self.transport.broadcast_batch(out)

    def take(self, f):
        """A frame for the host to the controller; the goal batch it answers (rebroadcast
        assertions, GOAL) out at once. A frame for a link that came round a ring past a dead
        node goes on the long way (not one whose address a bit error made up: it would circle)."""
        if f is None or len(f) < 3 or f[2] != m.HOST:
            if f is not None and len(f) > 2 and self.relay and 1 <= f[2] <= self.gp.n:
                self.relay([f])
            return
        out = self.gp.on_frame(f)
        if out:
            with self.sending():
                self.transport.broadcast_batch(out)
            self.t_goal = time.perf_counter()


def signed(signer, frame):
    """frame as the host sends it: protected where the run authenticates (host/tools/keys.py)."""
    return frame if signer is None else signer.sign(frame)


def reset_links(transport, lockstep, signer=None):
    """COMMAND RESET to every link before the first tick: a fresh run, and its clock
    (arg 1: synthetic, no time passes between SYNCs, so the links' silent-bus watchdog
    is off and a host or link held up between or within ticks changes nothing)."""
    transport.send(signed(signer, m.encode(m.COMMAND, m.HOST, m.BROADCAST, 0, (m.CMD_RESET, 1.0 if lockstep else 0.0))))


def collect_status(gp, transport, timeout=3.0, tries=6):
    """After the last tick: PING every node and take in frames for the host until every
    node's STATUS is in (link health for the summary) or `timeout` s pass, asking again
    (`tries` in all) where a PING or a STATUS was lost (a lossy bus). On a UART ring
    round a dead node the PING goes into both ends, as the cycle's frames do."""
    for k in range(tries):
        ping = gp.ping(fresh=k == 0)
        if gp.dead and getattr(transport, "return_fd", None) is not None:
            transport.broadcast_batch([ping])
        else:
            transport.send(ping)
        end = time.perf_counter() + timeout / tries
        while gp.status_missing() and time.perf_counter() < end:
            f = transport.recv(max(0.0, end - time.perf_counter()))
            if f is not None and len(f) > 2 and f[2] == m.HOST:
                gp.on_frame(f)
        if not gp.status_missing():
            return


class HostSchedstat:
    """The host thread's own scheduling (/proc/thread-self/schedstat: ns on the CPU, ns
    runnable but waiting for it): tells a late cycle in which the host itself could not
    run from one in which it slept waiting for the links. (0, 0) where there is no such file."""

    def __init__(self):
        try:
            self.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None

    def read(self):
        if self.fd is None:
            return (0, 0)
        f = os.pread(self.fd, 64, 0).split()
        return (int(f[0]), int(f[1]))

    def since(self, before):
        now = self.read()
        return round((now[0] - before[0]) * 1e-6, 2), round((now[1] - before[1]) * 1e-6, 2)

    def __del__(self):
        if self.fd is not None:
            os.close(self.fd)


class cpu_latency_qos:
    """Hold the kernel's CPU wake-up latency request (PM QoS, /dev/cpu_dma_latency) at
    0 us for the run, as cyclictest and real-time Linux setups do: idle CPUs then poll
    instead of halting. On a VM a halted vCPU is woken by the hypervisor, which took
    ~1 ms per wake-up on the 2-vCPU test VM (a 1 ms SCHED_FIFO sleeper overshot by
    over 0.3 ms 460-490 times in 10 s per CPU halting, 2-12 times polling). The request
    ends when the file is closed. `held` says whether the kernel took it (root, Linux)."""

    def __init__(self, path="/dev/cpu_dma_latency"):
        self.path = path
        self.fd = None

    @property
    def held(self):
        return self.fd is not None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_WRONLY)
            os.write(self.fd, (0).to_bytes(4, sys.byteorder))
        except OSError:
            self.__exit__()
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class realtime_host:
    """The host as a real-time loop while a wall-clock run lasts: the cyclic garbage
    collector off (its pauses grow with the recorded time series and would land inside
    control periods; reference counting still frees everything the loop allocates), CPU
    wake-up latency held at 0 (cpu_latency_qos) and, where allowed, SCHED_FIFO at
    `priority` so its tick sleeps end on time. stats.cpu_latency_qos says whether the
    latency request was taken; `fifo` whether the host runs SCHED_FIFO."""

    def __init__(self, stats, priority):
        self.stats = stats
        self.priority = priority
        self.qos = cpu_latency_qos()
        self.fifo = False

    def __enter__(self):
        self.was = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.disable()
        self.stats.cpu_latency_qos = self.qos.__enter__().held
        self.policy = None
        try:
            self.policy = (os.sched_getscheduler(0), os.sched_getparam(0))
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.priority))
            self.fifo = True
        except (OSError, AttributeError):
            self.policy = None
        return self

    def __exit__(self, *exc):
        self.qos.__exit__()
        if self.policy is not None:
            try:
                os.sched_setscheduler(0, self.policy[0], self.policy[1])
            except OSError:
                pass
        self.fifo = False
        gc.unfreeze()
        if self.was:
            gc.enable()
