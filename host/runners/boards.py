"""Boards mode: every link on an emulated Cortex-M (QEMU MPS2, the firmware that `make
mcu-bench` builds: host/tools/mcu.py), wired UART to UART, in lockstep with the plant.

One QEMU machine per link runs `firmware.main.run` on the board "mps2-uart"
(firmware/hal/cmsdk_uart.py): UART1 up and UART2 down are the daisy chain (socketpairs
handed to QEMU as socket chardevs, wire i joining node i, the host for i = 0, to node
i + 1; a ring's wire N joins the tip back to the host), UART3 its joint (JOINT_STATE in,
TORQUE out) to the host's plant, UART0 its console (the REPL the host boots it from, and
its phase trace). QEMU runs with `-icount shift=7`: the instructions of each poll round
a node reports (PH lines) are counted exactly, its waits left out (firmware/hal/cmsdk_uart.py),
and repeat from run to run. The run is lockstep (processes.run with every torque awaited):
the host waits for each tick's frames however slowly the emulated boards go."""
import json
import os
import select
import socket
import statistics
import subprocess
from pathlib import Path

from bus_protocol import framing
from firmware import auth
from host.tools import mcu
from host.runners import processes
from host.transports.stream import FdStreamTransport
from sim_host.fault_injection import wire_specs

PHASES = ("sync", "k_hop", "goal_hop", "forward")   # firmware/hal/cmsdk_uart.py TimedChainNode
# Emulated boards run 10-100x slower than real time on a loaded 2-core machine. A board's
# waits never time out until a neighbour has died (firmware/hal/cmsdk_uart.py); from then
# on its clock follows the wall clock while it sleeps (-icount sleep=on): how long a node
# waits for K_{i-1} before it bridges it (firmware/main.py quiet_ms, lockstep) and the
# host for a torque after the goal (processes.run straggler, runs with faults) are set
# for that, not for a board's 2 ms.
QUIET_MS = 1000
STRAGGLER_S = 10.0
# typed into the REPL; the last line whole, so that nothing is left for the console to
# read while the agent runs but line-break reports (firmware/hal/cmsdk_uart.py)
BOOT = ("import json, machine, mcu_mpy_files, mp_node_cycle",
        "mp_node_cycle.with_native(mcu_mpy_files.NATIVE)",   # linkcore.mpy from RAM, as from flash
        "from firmware import main",
        "main.run(json.loads(%r)); machine.reset()")   # the agent is done: QEMU exits


# 128 ns of the board's clock an instruction: its 40 ns timer then tells the instructions
# of any stretch exactly (firmware/hal/cmsdk_uart.py); sleep=on: a board in WFI waits for
# its UARTs, burning nothing (sleep=off would warp QEMU's clock to the timer's next
# expiry over and over)
ICOUNT = "shift=7,sleep=on"


def firmware(build):
    """Build (incrementally) the boards' firmware of build `build`: host/tools/mcu.py's, without
    the VM's map lookup cache, so that a phase counts the same whatever ran before it."""
    return mcu.build(build, lookup_cache=False)


def qemu_argv(build, elf, serials):
    """QEMU for build `build` (host/tools/mcu.py BUILDS), -icount ICOUNT, its UARTs on
    `serials` (each "stdio", "null" or a socket fd to hand over as a chardev)."""
    _, machine, _ = mcu.BUILDS[build]
    argv = ["qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "null",
            "-semihosting", "-icount", ICOUNT, "-kernel", elf]
    for k, s in enumerate(serials):
        if isinstance(s, int):
            argv += ["-chardev", "socket,id=u%d,fd=%d" % (k, s), "-serial", "chardev:u%d" % k]
        else:
            argv += ["-serial", s]
    return argv


class StreamJointIO:
    """The plant's wires to every board's joint UART (processes.JointIO's surface):
    COBS-framed byte streams, one socket per link; fileno() is an epoll set of them."""

    def __init__(self, socks):
        self.socks = socks
        self.deframers = [framing.Deframer() for _ in socks]
        self.ep = select.epoll()
        for s in socks:
            s.setblocking(False)
            self.ep.register(s.fileno(), select.EPOLLIN)

    def fileno(self):
        return self.ep.fileno()

    def send(self, frame):
        try:
            self.socks[frame[2] - 1].sendall(framing.uart_frame(frame))
        except OSError:
            pass   # the board is gone; Cluster.check() says so

    def recv_all(self):
        out = []
        for s, d in zip(self.socks, self.deframers):
            while True:
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break
                if not data:
                    break
                out += d.feed(data)
        self.ep.poll(0)
        return out

    def close(self):
        self.ep.close()
        for s in self.socks:
            s.close()


class BoardCluster(processes.Cluster):
    """processes.Cluster with a QEMU machine per link instead of a unix-port process."""

    def __init__(self, sc, build="m4f", elf=None, **kw):
        kw.setdefault("ready_timeout", 300.0)   # boards boot and import the firmware in turn
        super().__init__(sc, **kw)
        self.build, self.elf = build, elf
        self.phases = {}   # link -> [(tick, sync, k_hop, goal_hop, forward, n_forward)]
        self.broken = set()   # links whose boards were killed, their neighbours told

    def start(self):
        processes._LIVE.add(self)
        if self.bus != "uart" or len(self.groups) != self.n:
            raise ValueError("boards mode: one board per link on a UART chain")
        n = self.n
        ring = self.topology == "ring"
        ups, downs = [], []   # wire i: downs[i] node i's (host's) end, ups[i] node i+1's
        for _ in range(n + 1 if ring else n):
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            downs.append(a.detach())
            ups.append(b.detach())
        self.fds += downs + ups
        joints = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
        self.io = StreamJointIO([h for h, _ in joints])
        for fd in (downs[0],) + ((ups[n],) if ring else ()):
            os.set_blocking(fd, False)
            self.fds.remove(fd)
        self.transport = FdStreamTransport(downs[0], return_fd=ups[n] if ring else None)
        overhear = max([len(c.get("neighbours", {}).get("dh", ())) for c in self.sc.agent_configs] + [0])
        for i in range(n):
            cfg = self._node_config(self.groups[i])
            has_down = i + 1 < len(downs)
            cfg.update(board="mps2-uart", joint_uart=3, idle_exit_ms=self.idle_exit_ms, quiet_ms=[2, QUIET_MS],
                       bus={"up": 1, "down": 2 if has_down else None, "ring": ring, "overhear": overhear})
            if self.run_auth is not None:   # typed in (raw REPL: not echoed), never written down
                cfg["auth"] = self.run_auth.node_auth()
            (self.dir / ("link%02d.json" % (i + 1))).write_text(auth.dumps_safe(cfg))
            joint = joints[i][1].detach()
            self.fds.append(joint)
            serials = ["stdio", ups[i], downs[i + 1] if has_down else "null", joint]
            self._argv.append((qemu_argv(self.build, self.elf, serials), json.dumps(cfg),
                               [s for s in serials if isinstance(s, int)]))
            self.logs.append(open(self.dir / ("link%02d.log" % (i + 1)), "wb"))
            self.procs.append(self._spawn(i, self.logs[i]))
        self._close_fds()   # the boards hold their ends now
        self.wait_ready()

    def _spawn(self, i, log):
        argv, cfg_json, fds = self._argv[i]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=log, pass_fds=fds,
                             cwd=str(processes.ROOT), start_new_session=True)
        # typed ahead into the REPL on UART0: QEMU takes a byte when the UART has room
        # the raw REPL (Ctrl-A .. Ctrl-D): the config, key and all, is not echoed to the log
        p.stdin.write(b"\x01" + ("\n".join(BOOT) % cfg_json).encode() + b"\x04")
        p.stdin.flush()
        return p

    def kill(self, link):
        """node_crash: SIGKILL of the link's QEMU; its neighbours' UARTs see the break on
        their lines to it (UART2 of the one before, UART1 of the one after)."""
        super().kill(link)
        if link in self.broken:
            return
        self.broken.add(link)
        for other, uart in ((link - 1, b"2"), (link + 1, b"1")):
            p = self.procs[other - 1] if 1 <= other <= self.n else None
            if p is not None and p.poll() is None:
                try:
                    p.stdin.write(uart)
                    p.stdin.flush()
                except OSError:
                    pass

    def restart(self, link, on_frame, lockstep):
        raise processes.Aborted("boards mode: a board that reboots is not emulated")

    def console(self, i):
        try:
            return (self.dir / ("link%02d.log" % (i + 1))).read_text("utf-8", "replace")
        except OSError:
            return ""

    def tail(self, only=None, nbytes=1500):
        """The boards' consoles without their phase trace and the boot lines echoed."""
        out = []
        for i in range(len(self.procs)):
            if only is not None and i != only:
                continue
            lines = [ln for ln in self.console(i).replace("\r", "").split("\n")
                     if ln.strip() and not ln.startswith(("PH ", ">>> ", "... ", "MicroPython", "Type \"help"))]
            t = "\n".join(lines)[-nbytes:]
            if t.strip():
                out.append("link %d: %s" % (i + 1, t.strip()))
        return "\n".join(out)

    def close(self):
        for p in self.procs:
            if p.stdin is not None and not p.stdin.closed:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for log in self.logs:
            log.flush()
        for i in range(len(self.procs)):
            self.phases[i + 1] = parse_phases(self.console(i))
        super().close()


def parse_phases(text):
    """The PH lines of a board's console -> [(tick, sync, k_hop, goal_hop, forward, n_forward)]."""
    out = []
    for ln in text.replace("\r", "").split("\n"):
        if ln.startswith("PH "):
            try:
                out.append(tuple(int(x) for x in ln.split()[1:7]))
            except ValueError:
                continue   # a line cut short when the board was killed
    return out


def phase_summary(phases, build):
    """Per link and phase: median and maximum instructions of the ticks the link
    took part in (tick >= 1: the first is the boot's), and the whole chain's figures."""
    per_link = {}
    every = {p: [] for p in PHASES}
    for link, rows in sorted(phases.items()):
        rows = [r for r in rows if r[0] >= 1]
        if not rows:
            continue
        d = {"ticks": len(rows)}
        for k, name in enumerate(PHASES):
            vals = [r[1 + k] for r in rows]
            if name == "forward":   # per frame passed on
                vals = [r[4] // r[5] for r in rows if r[5]]
            if not vals:
                continue
            every[name] += vals
            d[name] = {"median": int(statistics.median(vals)), "max": max(vals)}
        per_link[str(link)] = d
    chain = {name: {"median": int(statistics.median(v)), "max": max(v)} for name, v in every.items() if v}
    return {"build": build, "unit": "instructions (QEMU -icount %s, counted exactly)" % ICOUNT, "links": per_link, "all": chain}


def compute_us(summary, board, stat="median"):
    """Per-hop compute (us, host/tools/budget.py's) on board profile `board` (host/tools/hop_compute.py
    BOARDS) from a run's phase summary: instructions x cycles per instruction / clock."""
    from host.tools import hop_compute
    build, mhz, cpi = hop_compute.BOARDS[board]
    if build != summary["build"]:
        raise ValueError("the run's boards are %s, board profile %s is %s" % (summary["build"], board, build))
    a = summary["all"]
    missing = [k for k in ("k_hop", "goal_hop", "forward") if k not in a]
    if missing:
        raise ValueError("the run counted no %s" % ", ".join(missing))
    us = cpi / mhz
    return {"k_us": a["k_hop"][stat] * us, "goal_us": a["goal_hop"][stat] * us, "fwd_us": a["forward"][stat] * us}


def run_compute(run_dir, board=None, stat="median"):
    """`linkteam budget --from-run`: (compute, board profile, links) of a boards-mode run."""
    from host.tools import hop_compute
    path = Path(run_dir) / "summary.json"
    with open(path) as f:
        s = json.load(f)
    if "boards" not in s:
        raise ValueError("%s: not a boards-mode run (no \"boards\" figures)" % path)
    if board is None:
        board = [b for b, v in sorted(hop_compute.BOARDS.items()) if v[0] == s["boards"]["build"]][0]
    return compute_us(s["boards"], board, stat), board, s["links"]


def control_rates(summary, n, topology="ring"):
    """The control rate this chain would close at on each board profile (host/tools/budget.py's
    chain simulation) from the run's own instruction counts (medians, then maxima) and
    the wire's bytes (the joints on wires of their own, as here): UART 2 Mbaud and CAN-FD
    1/5 Mbit/s."""
    from host.tools import budget, hop_compute
    out = {}
    for board, (build, mhz, cpi) in hop_compute.BOARDS.items():
        if build != summary["build"]:
            continue
        for stat in ("median", "max"):
            compute = compute_us(summary, board, stat)
            for bus in ("uart:2000000", "canfd:1000000/5000000"):
                r = budget.simulate(n, bus, plant="wire", compute=compute, topology=topology)
                out["%s %s %s" % (board, bus, stat)] = round(r["max_rate_hz"], 1)
    return out


def run(loop, progress=None, board="m4f", topology="ring", **_):
    """Run `loop` against one emulated board per link (lockstep); -> loop.stats."""
    stats = loop.stats
    lack = mcu.missing()
    if lack:
        stats.abort("boards mode needs %s" % "; ".join(lack))
        return stats
    if wire_specs(loop.sc.faults, loop.sc.control_rate_hz):
        stats.abort("boards mode emulates no bus faults (their wires are QEMU's): run them in processes mode")
        return stats
    try:
        elf = firmware(board)
    except mcu.McuError as e:
        stats.abort("building the %s firmware failed: %s" % (board, e))
        return stats
    made = []

    def make(sc, **kw):
        kw.pop("joint_io", None)
        c = BoardCluster(sc, build=board, elf=elf, **kw)
        made.append(c)
        return c
    stats = processes.run(loop, progress, lockstep=True, topology=topology, joint_io="none", make_cluster=make,
                          straggler=STRAGGLER_S)
    stats.bus = "uart (emulated %s boards)" % board
    if made:
        s = phase_summary(made[0].phases, board)
        try:
            s["control_rate_hz"] = control_rates(s, loop.sc.n, topology)
            from host.tools.hop_compute import DEFAULT_COMPUTE   # what the run does not count: budget's figures
            s["control_rate_assumes_us"] = {k: DEFAULT_COMPUTE[k] for k in ("host_us", "wake_us")}
        except (AttributeError, ValueError) as e:
            s["control_rate_hz"] = "not computed: %s" % e
        stats.boards = s
    return stats
