"""Boards mode (host/runners/boards.py): the firmware on emulated Cortex-M boards (QEMU
MPS2, host/tools/mcu.py's builds) with the board "mps2-uart" (firmware/hal/cmsdk_uart.py).

Needs qemu-system-arm, arm-none-eabi-gcc with newlib and MICROPY_SRC (as tests/test_mcu.py);
otherwise skipped with the reason. The closed-loop runs are the heavy part (tens of
seconds of wall time per board build on a quiet 2-core machine)."""
import json
import os
import select
import socket
import subprocess
import time

import numpy as np
import pytest

from bus_protocol import framing
from bus_protocol import messages as m
from host.tools import mcu
from host.runners import boards
from host.scenario.loader import from_dict, read_toml
from tests.conftest import REPO, needs

pytestmark = [pytest.mark.slow, needs("qemu")]


@pytest.fixture(scope="module")
def firmware():
    """Build once (incremental in build/mcu/, kept between runs): the boards' builds."""
    return {name: boards.firmware(name) for name in mcu.BUILDS}


class Repl:
    """One QEMU board, its REPL on stdin/stdout and UART1 on a socket of ours."""

    def __init__(self, build, elf):
        self.host, board = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = board.fileno()
        self.p = subprocess.Popen(boards.qemu_argv(build, elf, ["stdio", fd]), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(fd,),
                                  start_new_session=True)
        board.close()
        self.out = b""
        self.until(b">>> ")

    def until(self, marker, timeout=60.0):
        t_end = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while marker not in self.out:
            left = t_end - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], "no %r from the board:\n%s" % (
                marker, self.out.decode("utf-8", "replace")[-2000:])
            c = os.read(fd, 4096)
            assert c, "QEMU exited:\n%s" % self.out.decode("utf-8", "replace")[-2000:]
            self.out += c
        i = self.out.index(marker) + len(marker)
        head, self.out = self.out[:i], self.out[i:]
        return head.decode("utf-8", "replace").replace("\r\n", "\n")

    def line(self, code):
        self.p.stdin.write(code.encode() + b"\r")
        self.p.stdin.flush()

    def close(self):
        self.p.kill()
        self.p.wait()
        self.p.stdout.close()
        self.p.stdin.close()
        self.host.close()


@pytest.mark.parametrize("build", sorted(mcu.BUILDS))
def test_cmsdk_uart_sleeps_until_a_whole_frame_and_echoes_it(build, firmware):
    """On the board: Mps2Board.wait() sleeps in WFI until UART1 holds a whole frame (a
    frame's bytes without its 0x00 do not end it), readinto hands over whole frames only,
    and write puts them back on the wire. Idle, nothing wakes the board (no SysTick: one
    that woke every 1 ms would sleep ~500 times in the half second) until a break is
    reported on the console: that wait ends (False), its port hung up; from then on a
    wait times out (200 ms, a few wakes)."""
    frame = m.encode(m.SYNC, m.HOST, m.BROADCAST, 7, (42,))
    wire = framing.uart_frame(frame)
    second = framing.uart_frame(m.encode(m.SYNC, m.HOST, m.BROADCAST, 8, (43,)))
    r = Repl(build, firmware[build])
    try:
        r.line("from firmware.hal import cmsdk_uart as cu")
        r.line("b = cu.make_board('mps2-uart', {'bus': {'up': 1, 'down': None}, 'joint_uart': 3}); n = [0]; s = b.sleep")
        r.line("exec('def counted(ms=0):\\n n[0] += 1\\n s(ms)\\n'); b.sleep = counted")
        r.until(b">>> ")
        r.until(b">>> ")
        r.until(b">>> ")
        r.line("buf = bytearray(256); n[0] = 0; print('GOT', b.wait(20000), n[0]); k = b.ports['up'].readinto(buf); "
               "print('K', k); b.ports['up'].write(buf, k); print('AFTER', b.ports['up'].readinto(buf))")
        time.sleep(0.5)
        r.host.sendall(wire[:-1])          # the frame without its delimiter: not yet whole
        time.sleep(0.5)
        r.host.sendall(wire[-1:] + second[:5])   # its 0x00, and part of the next
        got = r.until(b">>> ")
        r.host.settimeout(10)
        echoed = b""
        while len(echoed) < len(wire):
            echoed += r.host.recv(256)
        r.line("n[0] = 0; print('BREAK', b.wait(60000), n[0], b.ports['up'].hup)")
        time.sleep(0.5)
        r.p.stdin.write(b"1")   # a break on UART1
        r.p.stdin.flush()
        broke = r.until(b">>> ")
        r.line("t0 = b.ticks_ms(); n[0] = 0; print('IDLE', b.wait(200), n[0], b.ticks_ms() - t0)")
        idle = r.until(b">>> ")
    finally:
        r.close()
    said, sleeps, dt = idle.split("IDLE ")[1].split()[:3]
    assert said == "False" and int(sleeps) <= 10 and 200 <= int(dt) < 2000, idle
    said, sleeps, hup = broke.split("BREAK ")[1].split()[:3]
    assert said == "False" and int(sleeps) <= 10 and hup == "True", broke
    assert "K %d" % len(wire) in got and "AFTER None" in got, got
    assert echoed == wire


def three_links(seconds=1.0, patience_s=None, auth=None):
    """scenarios/reference.toml with three links, cut to `seconds`; `auth` its [bus] auth."""
    data, sources = read_toml(REPO / "scenarios" / "reference.toml")
    data["simulation"]["duration"] = seconds
    data["robot"]["links"] = 3
    if patience_s is not None:
        data.setdefault("host", {})["patience_s"] = patience_s
    if auth is not None:
        data.setdefault("bus", {})["auth"] = auth
    return from_dict(data, REPO / "scenarios" / "reference.toml", sources)


@pytest.fixture(scope="module")
def unix_port_run(tmp_path_factory):
    """The same arm in processes mode (the unix port, double precision), lockstep."""
    from tests.conftest import missing
    if missing("micropython"):
        pytest.skip(missing("micropython"))
    from host.run import run_scenario
    s, out = run_scenario(three_links(), tmp_path_factory.mktemp("procs"), mode="processes", lockstep=True,
                          quiet=True, make_plots=False)
    assert s["status"] == "ok", s["reason"]
    return s, np.load(out / "timeseries.npz")["u"]


# Heavy: ~20 s of wall time per build on a quiet 2-core machine (3 QEMU machines, 120 ticks).
# The boards compute in float32 (their MicroPython's float; linkcore's arrays), the unix port
# in double: every torque is a sum of a few hundred operations each rounding by at most
# 2^-24 relative, fed back for 120 ticks through a stable loop; 1e-4 of the largest torque
# is ~100x what that makes and ~100x less than a wrong term (a sign, a missed assertion).
RTOL = 1e-4


@pytest.mark.parametrize("build", sorted(mcu.BUILDS))
def test_three_boards_close_the_loop_as_the_unix_port_does(build, firmware, unix_port_run, tmp_path):
    from host.run import run_scenario
    want, u_want = unix_port_run
    s, out = run_scenario(three_links(), tmp_path / "boards", mode="boards", board=build, quiet=True,
                          make_plots=False)
    assert s["status"] == "ok", s["reason"]
    u = np.load(out / "timeseries.npz")["u"]
    assert u.shape == u_want.shape
    scale = np.abs(u_want).max()
    assert np.abs(u - u_want).max() <= RTOL * scale
    assert abs(s["e_rms_m"] - want["e_rms_m"]) <= RTOL * want["e_rms_m"]
    ph = s["boards"]
    assert ph["build"] == build and sorted(ph["links"]) == ["1", "2", "3"]
    for link, d in ph["links"].items():
        assert d["ticks"] >= 100, (link, d)   # one PH line per tick the board took part in
        for name in ("sync", "k_hop", "goal_hop"):
            assert 0 < d[name]["median"] <= d[name]["max"], (link, name, d)
    rates = s["boards"]["control_rate_hz"]
    assert rates and all(v > 0 for v in rates.values()), rates



# Heavy: ~30 s of wall time on a quiet 2-core machine (two runs of 3 QEMU machines, 30 ticks).
def test_two_runs_count_the_same_instructions_tick_by_tick(firmware, tmp_path):
    """Every node's instructions per phase (PH lines: sync, k_hop, goal_hop) of every tick
    are the same in two runs of one scenario, however the emulation's speed (a shared
    machine) made the bytes trickle in and the boards wait. A plain chain: on a ring the
    two goal waves meet where the boards' speeds put them. Frames passing by (forward) are
    not compared: a report coming up from the tip may reach a node before or after the
    next tick's SYNC comes down. GOAL unprotected ([bus] auth = "commands"): with it
    protected one tick's goal hop was seen 16 instructions apart between two runs, with the
    MAC on hashlib and also on linkcore's, which allocates nothing (link 1, tick 7: 97,065
    and 97,049)."""
    from host.run import run_scenario
    runs = []
    for k in range(2):
        s, out = run_scenario(three_links(0.25, patience_s=120.0, auth="commands"), tmp_path / ("run%d" % k), mode="boards",
                              board="m4f", topology="chain", quiet=True, make_plots=False)
        assert s["status"] == "ok", s["reason"]
        phases = {}
        for link in (1, 2, 3):
            text = (out / "processes" / ("link%02d.log" % link)).read_text("utf-8", "replace")
            phases[link] = [r[:4] for r in boards.parse_phases(text)]
        runs.append((s, phases))
    (s0, p0), (s1, p1) = runs
    for link in (1, 2, 3):
        assert len(p0[link]) >= 29, (link, len(p0[link]))   # a PH line for each tick it finished
        n = min(len(p0[link]), len(p1[link]))
        diff = [(a, b) for a, b in zip(p0[link][:n], p1[link][:n]) if a != b]
        assert not diff, (link, len(diff), diff[:5])
        assert all(r[1] > 0 and r[2] > 0 and r[3] > 0 for r in p0[link][1:n]), p0[link][:3]
    assert s0["e_rms_m"] == s1["e_rms_m"]


def test_budget_from_run_prices_the_runs_counts_for_the_board(tmp_path, capsys):
    """`linkteam budget --from-run`: a boards run's instructions per phase x the profile's
    cycles per instruction / clock (an STM32F4 at 168 MHz, 1.5 per instruction: 112,000
    instructions are 1 ms); a run of the other build is refused by name."""
    from host import cli
    per = {"median": 112000, "max": 224000}
    run = {"links": 4, "boards": {"build": "m4f", "all": {"k_hop": per, "goal_hop": per, "forward": per}}}
    (tmp_path / "summary.json").write_text(json.dumps(run))
    assert cli.main(["budget", "--from-run", str(tmp_path), "--bus", "uart:2000000", "--stat", "max"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 links on uart:2000000") and "fwd_us 2000, goal_us 2000" in out and "k_us 2000" in out
    assert cli.main(["budget", "--from-run", str(tmp_path), "--bus", "uart:2000000", "--board", "rp2040-125mhz"]) == 2
    assert "the run's boards are m4f" in capsys.readouterr().err


def crash_scenario():
    """scenarios/faults/link5-dies.toml on three links, 1 s, link 2 dying at 0.6 s (after the
    start's transient: the arm holds its square without it)."""
    p = REPO / "scenarios" / "faults" / "link5-dies.toml"
    data, sources = read_toml(p)
    data["simulation"]["duration"] = 1.0
    data["robot"]["links"] = 3
    data["fault"][0].update(link=2, start=0.6)
    return from_dict(data, p, sources)


# Heavy: ~40 s of wall time on a quiet 2-core machine (link 3 waits boards.QUIET_MS of its
# clock before it bridges K_2, every tick after the crash).
def test_a_board_crash_kills_its_qemu_and_the_ring_bridges_it(firmware, tmp_path):
    from host.run import run_scenario
    from tests.conftest import missing
    if missing("micropython"):
        pytest.skip(missing("micropython"))
    want, _ = run_scenario(crash_scenario(), tmp_path / "procs", mode="processes", lockstep=True, quiet=True,
                           make_plots=False)
    assert want["status"] == "degraded" and [x["link"] for x in want["degraded"]] == [2], want["reason"]
    s, out = run_scenario(crash_scenario(), tmp_path / "boards", mode="boards", board="m4f", quiet=True,
                          make_plots=False)
    assert s["status"] == "degraded" and s["degraded"] == want["degraded"], s["reason"]
    team = [(e["link"], e["text"]) for e in s["faults"]["team"]]
    assert (2, "process exited (status -9)") in team   # SIGKILL of its QEMU
    # link 3 reports link 2 silent and bridges it, in the same tick as the unix port's node
    assert s["faults"]["reports"] == want["faults"]["reports"] and any(
        r["link"] == 3 and "neighbour_silent" in r["text"] for r in s["faults"]["reports"])
    assert s["faults"]["members"] == [1, 3]
    assert abs(s["e_rms_m"] - want["e_rms_m"]) <= RTOL * want["e_rms_m"]
