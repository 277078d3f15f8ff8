"""Desktop multi-process runner (docs/design.md §13): one real `micropython` process per link
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
  can:  a CAN-FD medium on loopback UDP (firmware/hal/unix_ports.py UdpPort, host/transports/udp).

Each node's joint is wired to the plant apart from the bus (JointIO; firmware SimIO), as a
board's encoder and motor driver are wired to its own joint: JOINT_STATE in, the TORQUE
report out. The bus carries what a real arm's bus carries (SYNC, K, ASSERT, GOAL, STATUS);
joint_io="bus" puts joint states and torques on the bus instead (as HIL with boards does).

Plant and RMDAC stay in this process. Children run in process groups of their own (setsid; Ctrl-C reaches
only the host), die with the host (PR_SET_PDEATHSIG) and are always reaped (close())."""
import atexit
import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import tempfile
import termios
import time
import tty
from pathlib import Path

from bus_protocol import messages as m
from host.runners import desktop, wallclock
from host.runners.base import Aborted
from host.runners.children import micropython_path
from sim_host.fault_injection import wire_specs

ROOT = Path(__file__).resolve().parents[2]
_LIVE = set()
# A lossy bus (bus faults injected): how long a node waits for a goal before it acts on its
# last one (wall clock, lockstep; firmware/main.py) and the host for K_N before it sends the
# goal from the last one (wallclock.Exchange stale_after): the in-process bus's
# "quiet", which a machine of processes can only time (lockstep: well above a slow cycle of
# a busy machine, and both below the 0.5 s a torque is waited for). On the wall clock a node
# acts on its last goal 7 ms into the 8.3 ms period, so its torque still makes the tick: a
# goal later than that (latency 2-3 ms on top of a lossy bus) is taken for a lost one, every
# such torque a tick behind (with 5 % loss, 2-3 ms latency and bit errors together the arm
# went unstable within 0.3 s; loss10 and latency-2ms alone track); not acting at all let two
# lost goals in a row drop the whole team and the start transient diverge.
# Every run loses the same frames (bus_protocol/wire_faults.py); what is done about them is
# timed (these, and a node's 2 ms hop timeout before it bridges), so a lockstep run with bus
# faults repeats only as closely as the machine keeps those times (experiments/FAULTS.md).
GOAL_QUIET_MS = (7, 250)
STALE_AFTER_S = (0.005, 0.1)


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
                 joint_io="wire", heapsize="256K", realtime=True, topology="ring", grouping=None,
                 bus_faults=(), fault_seed=0, run_auth=None):
        self.sc, self.bus, self.baud = sc, bus, baud
        self.run_auth = run_auth        # host/tools/keys.RunAuth: what each node is given
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
        self._argv = []                 # per node process: (argv, stdin, stdout) to start it (again)
        self.fds = []
        self.transport = None
        self.ready_timeout = ready_timeout
        self.idle_exit_ms = idle_exit_ms
        self._own_dir = workdir is None
        # absolute: the node processes start in the repo root, not in the caller's directory
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="linkteam-procs-")).resolve()
        self.logs = []
        self.ready_lines = []
        self.wire = wire                # uart wires: "pty" pairs or "socket" (AF_UNIX socketpairs)
        self.entry = entry              # code run by each process, %r = its config path
        self.extra_path = extra_path    # another directory for sys.path (benchmarks)
        # bus faults (bus_protocol.wire_faults specs): every node's ports apply them to
        # what it sends, the host's transport to what the host sends (run() wraps it)
        self.bus_faults, self.fault_seed = list(bus_faults), fault_seed

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
        n = len(self.groups)   # node processes
        cfgs = [self._node_config(g) for g in self.groups]
        if self.bus == "uart":
            stdins, stdouts = self._uart_wires(cfgs)
        elif self.bus == "can":
            stdins, stdouts = [subprocess.DEVNULL] * n, [None] * n
            self._can_bus(cfgs)
        else:
            raise ValueError("bus must be uart or can, not %r" % self.bus)
        if self.joint_io == "wire":
            from host.transports.udp import free_base_port
            io_base = free_base_port(self.n)
            self.io = JointIO(self.n, io_base)
            for i in range(n):
                cfgs[i]["io"] = {"base_port": io_base}
        overhear = max([len(c.get("neighbours", {}).get("dh", ())) for c in cfgs] + [0])
        for i in range(n):
            if self.run_auth is not None:   # the key in a private file outside the run directory
                cfgs[i]["auth"] = self.run_auth.node_auth_file(self.groups[i][0])
            cfgs[i]["idle_exit_ms"] = self.idle_exit_ms
            if overhear:   # neighbours' packets: CAN filters take them, UART nodes pass them on
                cfgs[i]["bus"]["overhear"] = overhear
            if self.bus_faults:
                cfgs[i]["bus"].update(faults=self.bus_faults, fault_seed=self.fault_seed)
                cfgs[i]["goal_quiet_ms"] = list(GOAL_QUIET_MS)
            self._launch(i, cfgs[i], mp, stdins[i], stdouts[i])
        self.wait_ready()
        self._close_fds()   # the children hold their ends now; the host keeps only its own

    def _uart_wires(self, cfgs):
        """UART wires: wire i joins node i (host for i = 0) to node i+1; the node's fd 0
        is its up end, fd 1 its down end (inherited, already raw and non-blocking); a ring's
        wire n joins the tip to the host. -> (stdins, stdouts) of the node processes"""
        n = len(cfgs)
        ups, downs = [], []
        ring = self.topology == "ring"
        for i in range(n + 1 if ring else n):
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
        stdins, stdouts = [], []
        for i in range(n):
            cfgs[i]["board"] = "unix-pty"
            cfgs[i]["bus"] = {"up": "stdin", "down": "stdout" if i + 1 < len(downs) else None,
                              "baud": self.baud, "ring": ring}
            stdins.append(ups[i])
            stdouts.append(downs[i + 1] if i + 1 < len(downs) else None)
        from host.transports.stream import FdStreamTransport
        # the host writes down wire 0; with a ring it reads the tip's wire n as well
        self.transport = FdStreamTransport(downs[0], baud=self.baud,
                                           return_fd=ups[n] if ring else None)
        self.fds.remove(downs[0])
        if ring:
            self.fds.remove(ups[n])
        return stdins, stdouts

    def _can_bus(self, cfgs):
        """CAN: every node on one UDP medium (transports/udp.py)."""
        from host.transports.udp import UdpTransport, free_base_port
        base = free_base_port(self.n)
        for c in cfgs:
            c["board"] = "unix-udp"
            c["bus"] = {"base_port": base, "baud": self.baud}
        self.transport = UdpTransport(self.n, base, bitrate=self.baud)
        self.transport.overhear = max([len(c.get("neighbours", {}).get("dh", ())) for c in cfgs] + [0])

    def _launch(self, i, cfg, mp, stdin, stdout):
        """Node process i: its config file, its log, MicroPython running the entry point
        (a traceback to stderr, which is the log: stdout may be the down wire)."""
        path = self.dir / ("link%02d.json" % (i + 1))
        path.write_text(json.dumps(cfg))
        log = open(self.dir / ("link%02d.log" % (i + 1)), "wb")
        self.logs.append(log)
        code = "import sys\nsys.path.insert(0, %r)\n" % str(ROOT)
        if self.extra_path:
            code += "sys.path.insert(0, %r)\n" % str(self.extra_path)
        body = (self.entry % str(path)).rstrip("\n").replace("\n", "\n    ")
        code += ("try:\n    %s\nexcept BaseException as e:\n"
                 "    sys.print_exception(e, sys.stderr)\n    raise SystemExit(1)\n" % body)
        first, last = self.groups[i]   # a group's agents and nodes: a heap per link
        heap = self.heapsize if last == first else "%dK" % (_kib(self.heapsize) * (last - first + 1))
        self._argv.append(([mp, "-X", "heapsize=%s" % heap, "-c", code], stdin, stdout))
        self.procs.append(self._spawn(i, log))

    def _spawn(self, i, log):
        argv, stdin, stdout = self._argv[i]
        return subprocess.Popen(argv, stdin=stdin, stdout=stdout or log, stderr=log, cwd=str(ROOT),
                                start_new_session=True,
                                preexec_fn=lambda: desktop.node_preexec(
                                    self.realtime, desktop.link_priority(self.groups[i][0], self.n)))

    def restart(self, link, on_frame, lockstep):
        """A crashed node's board reboots (node_crash with an end): its MicroPython process
        starts again from its config (the board's flash) and opens its bus; once it says
        `ready` the host sends it COMMAND RESET with the run's clock, as at the start. The
        team re-admits it from its RUN torques (HostController), its neighbours from their
        checks. CAN only: a UART node's neighbours would have to re-open their wires to it.
        `on_frame`: the host's, for the frames that come for it meanwhile."""
        i = link - 1
        self.procs[i] = self._spawn(i, self.logs[i])
        limit = time.perf_counter() + self.ready_timeout
        dec = m.Decoder()
        while True:
            if self.procs[i].poll() is not None or time.perf_counter() > limit:
                raise Aborted("link %d did not come back after its crash\n%s" % (link, self.tail(i)))
            f = self.transport.recv(0.05)
            if f is None or len(f) < 3 or f[2] != m.HOST:
                continue
            on_frame(f)
            msg = dec.decode(f)
            if msg and msg[0] == m.LOG and msg[1] == link and bytes(msg[4][0]).startswith(b"ready"):
                break
        # it takes nothing of the host's block from before its restart: a new one
        # (firmware/auth.py); its configuration, like the ready exchange, is not subject
        # to injected bus faults
        signer = self.run_auth.signer if self.run_auth is not None else None
        if signer is not None:
            signer.new_block()
        getattr(self.transport, "inner", self.transport).send(
            wallclock.signed(signer, m.encode(m.COMMAND, m.HOST, link, 0, (m.CMD_RESET, 1.0 if lockstep else 0.0))))

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
        """Raise if a link process has exited (while the nodes start)."""
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                raise Aborted("link %d process exited with status %s\n%s" % (i + 1, p.returncode, self.tail(i)))

    def dead(self):
        """Indices of the links whose process has exited: a dead node is a fault of the
        arm, not of the host (the team drops it; runners/base goes on)."""
        return {i for i, p in enumerate(self.procs) if p.poll() is not None}

    def kill(self, link):
        """A node crash (fault node_crash): SIGKILL of the link's MicroPython process."""
        p = self.procs[link - 1]
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()

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
        if self.run_auth is not None:   # the nodes' key file goes with them
            self.run_auth.close()
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


def _with_dead_nodes(loop, cluster, exchange, crashes, lockstep):
    """Nodes crash on the fault schedule (SIGKILL) and, where the fault has an end, their
    boards reboot then (Cluster.restart: the host waits for the node to be up, so a
    lockstep run goes on at the same tick every time); a node whose process is gone is not
    waited for: the host goes on without it."""
    killed = set()

    def tick(frames, k, deadline):
        gp = loop.gp
        for f in crashes:
            if f.active(loop.t):
                cluster.kill(f.link)
                killed.add(f.link)
            elif f.link in killed and not any(g.link == f.link and g.active(loop.t) for g in crashes):
                killed.discard(f.link)
                cluster.restart(f.link, gp.on_frame, lockstep)
                gp.events.append((loop.t, f.link, "process restarted"))
        if dead_nodes(loop, cluster) or gp.dead:
            frames = gp.tip_gone() + frames
        return exchange(frames, k, deadline)
    return tick


def dead_nodes(loop, cluster):
    """Note the node processes that exited since the last call (HostController.dead, a team
    event each): True if there were any. A dead node ahead of others on a plain UART chain
    ends the run (Aborted)."""
    gp = loop.gp
    dead = cluster.dead()
    if dead == gp.dead:
        return False
    for i in dead - gp.dead:
        gp.events.append((loop.t, i + 1, "process exited (status %s)" % cluster.procs[i].returncode))
    cut = [i for i in sorted(dead) if i + 1 < len(cluster.procs)]   # not the tip's node
    if cluster.bus == "uart" and cluster.topology == "chain" and cut:
        first, last = cluster.groups[cut[0]]
        raise Aborted("link %d's node is gone at t=%.3f s: a plain UART chain passes nothing through "
                      "a dead node, so links %d..%d are cut off from the host (on a chain only the "
                      "tip may die; a ring or CAN survives it)" % (first, loop.t, last + 1, loop.sc.n))
    gp.dead = dead
    return True


def _kib(size):
    """A MicroPython heapsize ("256K", "1M", bytes) in KiB."""
    size = str(size).upper()
    return int(size[:-1]) * {"K": 1, "M": 1024}[size[-1]] if size[-1] in "KM" else int(size) // 1024


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
    """Fernández et al.'s notation: p and the number of processors, a and the links on each,
    base to tip (p2a51: links 1-5 on one node process, 6 on another)."""
    return "p%da%s" % (len(groups), "".join(str(b - a + 1) for a, b in groups))


def run(loop, progress=None, bus="uart", baud=0, lockstep=False, wire="socket", joint_io="wire",
        topology="ring", slowdown=1.0, grouping=None, make_cluster=None, straggler=0.5, **_):
    """Run `loop` against N MicroPython processes; -> loop.stats. Wall clock unless
    `lockstep` (every torque awaited: the synthetic clock of an in-process run);
    `slowdown`: wall seconds per simulated second (wallclock.Schedule); `grouping`: links
    per node process (node_groups); `make_cluster`: Cluster's stand-in (runners/boards.py);
    `straggler`: lockstep with faults, s a torque is awaited after the goal (wallclock.Exchange)."""
    stats = loop.stats
    stats.bus, stats.baud = bus, baud
    stats.topology = topology if bus == "uart" else None
    unsupported = [f.describe() for f in loop.faults.faults
                   if f.kind == "node_crash" and f.schedule.end < float("inf") and bus != "can"]
    if unsupported:   # say so rather than run without them
        stats.abort("a node that comes back (node_crash with an end) runs on CAN: a UART node's neighbours "
                    "do not re-open their wires to a rebooted board: %s" % "; ".join(unsupported))
        return stats
    specs = wire_specs(loop.sc.faults, loop.sc.control_rate_hz)
    if specs and grouping is not None:
        stats.abort("bus faults are emulated by single-link nodes' ports: run them without --grouping")
        return stats
    # each node's config and stderr (its traceback, the reason it stopped) stay in the run
    # directory, beside nodes/ (its log requests): an aborted run keeps them too
    run_dir = loop.gp.services.run_dir
    workdir = None
    if run_dir is not None:
        workdir = run_dir / "processes"
        workdir.mkdir(exist_ok=True)
    try:
        cluster = (make_cluster or Cluster)(loop.sc, bus=bus, baud=baud, wire=wire, joint_io=joint_io,
                          topology=topology, grouping=grouping, bus_faults=specs,
                          fault_seed=loop.faults.seed, workdir=workdir, run_auth=loop.auth).__enter__()
        stats.grouping = group_name(cluster.groups)
    except (Aborted, RuntimeError, ValueError) as e:
        stats.abort(str(e))
        return stats
    if specs:   # the host's own frames cross the faulty medium too
        from host.transports.faulty import FaultyTransport
        cluster.transport = FaultyTransport(cluster.transport, specs, loop.faults.seed, lambda: loop.gp.tick)
    pauses = None
    try:
        stats.node_ready = cluster.ready_lines
        wallclock.reset_links(cluster.transport, lockstep, loop.gp.signer)
        cpu0, host0 = cluster.cpu_seconds(), os.times()
        crashes = loop.faults.of(("node_crash",))
        if lockstep:
            exchange = wallclock.Exchange(loop.gp, stats, cluster.transport, io=cluster.io,
                                          timeout=stats.wait_with_patience(loop.sc),
                                          straggler=straggler if loop.faults else 0.0,
                                          stale_after=STALE_AFTER_S[1] if specs else 0.0,
                                          gone=lambda: dead_nodes(loop, cluster))
            loop.run(_with_dead_nodes(loop, cluster, exchange, crashes, True), progress)
        else:
            pauses = desktop.start_vm_pauses()
            if pauses is not None:
                stats.vm_pauses = {"count": 0, "total_ms": 0.0, "ticks_moved": 0, "moved_ms": 0.0}
            with wallclock.realtime_host(stats, desktop.host_priority()) as rt:
                exchange = wallclock.Exchange(loop.gp, stats, cluster.transport, io=cluster.io,
                                              sending=desktop.sending_priority(rt.fifo), pauses=pauses,
                                              stale_after=STALE_AFTER_S[0] if specs else 0.0)
                loop.run(_with_dead_nodes(loop, cluster, exchange, crashes, False), progress,
                         wallclock.Schedule(stats, slowdown=slowdown))
        cpu1, host1 = cluster.cpu_seconds(), os.times()
        ticks = max(1, len(loop.rec))
        if cpu0 is not None and cpu1 is not None:   # where the machine's time goes, per tick
            stats.cpu_us_per_tick = {"links": round((cpu1 - cpu0) / ticks * 1e6),
                                     "host": round((host1.user + host1.system - host0.user - host0.system) / ticks * 1e6)}
        if specs:   # what the host's port lost, corrupted, delayed
            wf = cluster.transport.faults
            f = loop.faults
            f.lost, f.corrupted, f.delayed, f.counted = wf.lost, wf.corrupted, wf.delayed, "the host's port"
        if stats.status == "ok":
            wallclock.collect_status(loop.gp, cluster.transport)
        stats.node_logs = cluster.tail()
    finally:
        cluster.close()
        if pauses is not None:
            count, total_ms = pauses.totals()
            stats.vm_pauses.update(count=count, total_ms=round(total_ms, 2))
            pauses.close()
    return stats
