"""Virtual boards + the real mpremote: flash two boards with `linkteam flash`, then run a
short hardware-in-the-loop scenario against them (docs/design.md §13 `hil`), on the CAN-like UDP
medium and on a UART ring of ptys wired by `linkteam vwire`."""
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from host.run import run_scenario
from host.scenario.loader import load
from host.transports.udp import free_base_port

from .conftest import MICROPYTHON, REPO, differing, needs

pytestmark = [pytest.mark.slow, needs("micropython")]
# MicroPython's native architectures by sys.implementation._mpy >> 10 (py/persistentcode.h)
MPY_ARCHS = ["None", "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp",
             "xtensa", "xtensawin", "rv32imc", "rv64imc"]


def cli(*args, timeout=180):
    r = subprocess.run([sys.executable, "-m", "host.cli", *args], cwd=str(REPO), capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, "linkteam %s failed:\n%s\n%s" % (args[0], r.stdout[-3000:], r.stderr[-3000:])
    return r.stdout


@contextlib.contextmanager
def daemons(*argvs, **popen):
    """`linkteam ARGS` processes, each in a process group of its own (setsid); SIGTERM at the end."""
    procs = []
    try:
        for args in argvs:
            procs.append(subprocess.Popen([sys.executable, "-m", "host.cli", *args], cwd=str(REPO),
                                          start_new_session=True, **popen))
        yield procs
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module", autouse=True)
def arm_key(tmp_path_factory):
    """The arm's key (linkteam keys create), in $LINKTEAM_KEY for every command here: the
    boards are flashed with it and check the host's commands (docs/security.md)."""
    from host.tools import keys
    path = str(tmp_path_factory.mktemp("key") / "arm.key")
    keys.create(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LINKTEAM_KEY", path)
        yield path


@pytest.fixture
def two_vboards(tmp_path):
    paths = [tmp_path / ("board%d" % i) for i in (1, 2)]
    with daemons(*[("vboard", str(p), "--fs", str(tmp_path / ("fs%d" % i))) for i, p in enumerate(paths, 1)],
                 stderr=subprocess.DEVNULL):
        for p in paths:
            until_prompt(p)
        yield paths


def until_prompt(path, wait_s=60.0):
    """Poll a vboard until its port exists and its REPL answers a return with the prompt
    (a wait, not a bound: a busy machine may start it slowly); fails after wait_s."""
    import serial
    end = time.time() + wait_s
    while not path.exists():
        assert time.time() < end, "%s did not appear in %.0f s" % (path, wait_s)
        time.sleep(0.05)
    with serial.Serial(str(path), 115200, timeout=0.1) as s:
        buf = b""
        while b">>> " not in buf:
            assert time.time() < end, "%s gave no prompt in %.0f s: %r" % (path, wait_s, buf[-200:])
            s.write(b"\r")
            buf += s.read(256)


@pytest.fixture(scope="module")
def hil2(tmp_path_factory):
    """The HIL scenario (hil2, 0.5 s, the agents' silent-bus watchdog relaxed) and its
    in-process run, the reference for the HIL runs."""
    path = tmp_path_factory.mktemp("scenario") / "hil2-slow.toml"
    path.write_text('extends = "%s"\n[simulation]\nduration = 0.5\n[behaviours.safety]\nwatchdog_ms = 2000\n'
                    % (REPO / "scenarios" / "hil2.toml"))
    sc = load(path)
    ref = run_scenario(sc, tmp_path_factory.mktemp("inproc"), quiet=True, make_plots=False)
    return path, sc, ref


def run_hil(path, sc, ref, out, ports):
    """A lockstep HIL run (the host waits for every torque): the figures are the in-process
    run's to the last digit on any machine load. A wall-clock run's deadlines depend on
    the load (a 100 ms tick missed here once while another job ran SCHED_FIFO processes);
    the wall-clock schedule is tested on a scripted clock and by test_processes.py."""
    sc.key_file = os.environ["LINKTEAM_KEY"]
    s, out = run_scenario(sc, out, mode="hil", quiet=True, make_plots=False, ports=ports, lockstep=True)
    assert s["status"] == "ok", s["reason"]
    assert s["mode"] == "hil" and s["clock"] == "synthetic"
    assert s["missed_cycles"] == 0, s.get("late_cycles")
    a, b = np.load(out / "timeseries.npz"), np.load(ref[1] / "timeseries.npz")
    assert differing(a, b) == []
    assert [n["link"] for n in s["nodes"]] == [1, 2]
    # run.mcap too, one /joints message a recorded tick (host/telemetry; tests/test_telemetry.py)
    assert s["telemetry"]["mcap_messages"] > len(a["t"]) and "error" not in s["telemetry"]
    return s


def test_flash_two_virtual_boards_and_run_hil(two_vboards, tmp_path, hil2):
    b1, b2 = two_vboards
    base = free_base_port(2)
    out = cli("flash", "--chain", "1=%s,2=%s" % (b1, b2), "--scenario", str(hil2[0]),
              "--bus-json", json.dumps({"base_port": base}))
    arch = subprocess.run([MICROPYTHON, "-c", "import sys; print(sys.implementation._mpy >> 10)"],
                          capture_output=True, text=True, check=True).stdout
    assert out.count("verified (sha256)") == 2 and "arch %s " % MPY_ARCHS[int(arch)] in out
    fs1 = tmp_path / "fs1"
    assert (fs1 / "main.py").exists() and (fs1 / "firmware" / "agent.mpy").exists()
    assert json.loads((fs1 / "config.json").read_text())["link"] == 1

    listing = cli("boards", "--ports", "%s,%s" % (b1, b2))
    assert "unix-udp" in listing and "0.1.0" in listing
    dumped = json.loads(cli("config", "dump", "--port", str(b2)))
    assert dumped["link"] == 2 and dumped["bus"]["base_port"] == base
    found = cli("scan", "--ports", "udp:%d" % base, "--max-links", "4")
    assert "link  1" in found and "link  2" in found
    # per-hop compute measured on the flashed board itself (its .mpy firmware) for the budget
    text = cli("budget", "--links", "20", "--bus", "canfd:1000000/5000000", "--measure-on", str(b1))
    hop = dict(kv.split() for kv in text.split("per-hop compute (us): ")[1].strip().split(", "))
    assert all(float(hop[k]) > 0 for k in ("k_us", "goal_us", "fwd_us")), text

    run_hil(*hil2, tmp_path / "hil", "udp:%d" % base)


def test_uart_ring_of_virtual_boards(two_vboards, tmp_path, hil2):
    """`linkteam vwire` wires two unix-pty vboards and the host's serial port as a ring:
    host TX -> link 1 up, link 1 down <-> link 2 up, link 2 down -> host RX."""
    with daemons(("vwire", str(tmp_path / "wires"), "--links", "2"), stdout=subprocess.PIPE, text=True) as (vw,):
        printed = []
        for line in vw.stdout:   # the ports, then a hint line
            printed.append(line.split(": ", 1))
            if line.startswith("(flash"):
                break
        host = printed[0][1].split()[0]
        for link, board in enumerate(two_vboards, 1):
            bus = json.loads(printed[link][1])
            assert bus["ring"] and bus["up"].endswith("up%d" % link) and bus["down"].endswith("down%d" % link)
            cli("flash", "--port", str(board), "--link", str(link), "--scenario", str(hil2[0]),
                "--board", "unix-pty", "--bus-json", json.dumps(bus))
        # `boards` stops main.py (mpremote) and soft-resets: the ports close and open again
        assert cli("boards", "--ports", "%s,%s" % tuple(two_vboards)).count("unix-pty") == 2
        port = "serial:%s@1000000" % host
        found = cli("scan", "--ports", port, "--max-links", "4")   # the host's port, opened and closed
        assert "link  1" in found and "link  2" in found
        run_hil(*hil2, tmp_path / "ring", port)
    wires = {}
    for line in vw.stdout.read().splitlines():   # bytes per wire, printed on SIGTERM
        if line.startswith("wire "):
            _, src, _, dst, n = line.split()
            wires[src, dst] = int(n)
    # everything for the host came back over the return wire (K_N alone: a 64-byte frame,
    # 66 bytes on the line, every tick); link 1's up TX is not connected
    ticks = int(hil2[1].duration * hil2[1].control_rate_hz) + 1
    assert wires["down2", "host"] >= 66 * ticks and wires["host", "up1"] >= 66 * ticks, wires
    assert ("up1", "host") not in wires or wires["up1", "host"] == 0, wires


def test_vboard_soft_reset_and_ctrl_c(two_vboards):
    """Ctrl-D in the friendly REPL restarts the interpreter (a soft reset) and boots
    main.py; Ctrl-C interrupts a running main.py."""
    import serial
    b1 = two_vboards[0]
    cli_mp = [str(REPO / ".venv" / "bin" / "mpremote")] if (REPO / ".venv/bin/mpremote").exists() else ["mpremote"]
    src = b1.parent / "loop.py"
    src.write_text("print('booted')\nwhile True:\n    pass\n")
    subprocess.run(cli_mp + ["connect", str(b1), "cp", str(src), ":main.py"], check=True, timeout=30,
                   capture_output=True)
    with serial.Serial(str(b1), 115200, timeout=0.2) as s:
        s.write(b"\r\x03\x02")                 # interrupt, friendly REPL: until its prompt
        buf = b""
        end = time.time() + 60
        while not buf.endswith(b">>> ") and time.time() < end:
            buf += s.read(256)
        assert buf.endswith(b">>> "), buf[-200:]
        s.reset_input_buffer()
        s.write(b"\x04")                       # soft reset -> main.py runs (busy loop)
        buf = b""
        end = time.time() + 60
        while b"booted" not in buf and time.time() < end:
            buf += s.read(256)
        assert b"soft reboot" in buf and b"booted" in buf
        s.write(b"\x03")                       # Ctrl-C interrupts it
        buf = b""
        end = time.time() + 60
        while b">>> " not in buf and time.time() < end:
            buf += s.read(256)
        assert b"KeyboardInterrupt" in buf
