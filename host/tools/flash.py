"""Board tooling on top of the real mpremote (STYLE: moteus_tool / odrivetool):
  flash   precompile firmware/ and bus_protocol/ with mpy-cross for the board's
          architecture (asked from the board), copy with mpremote, write the link's
          /config.json and a boot /main.py, verify by SHA-256, reset so main.py boots
  boards  list attached boards: port, board id, link, firmware version
  config  dump / restore a board's /config.json
A board here is anything mpremote can talk to: a USB board or `linkteam vboard PATH`."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("firmware", "bus_protocol")
# sys.implementation._mpy >> 10 -> mpy-cross -march (MicroPython's py/persistentcode.h order)
ARCHS = (None, "x86", "x64", "armv6", "armv6m", "armv7m", "armv7em", "armv7emsp", "armv7emdp",
         "xtensa", "xtensawin", "rv32imc", "rv64imc")
# the byte loops in viper and Thumb assembly: where mpy-cross cannot compile them for the
# board, the node (firmware/accel) and messages.crc16 fall back to the pure-Python loops;
# a board's own HAL in Thumb assembly (the MPS2's CMSDK UART) is needed on that board only
OPTIONAL = ("firmware/accel/thumb.py", "firmware/accel/cobs_native.py", "firmware/accel/crc_native.py",
            "firmware/hal/cmsdk_uart.py")
BOOT_MAIN = "# linkteam boot: run the link agent from /config.json\nfrom firmware import main\nmain.run('/config.json')\n"
DEFAULT_BOARD = {"linux": "unix-udp", "rp2": "rp2-uart", "pyboard": "stm32-can"}   # sys.platform -> board
# mpy-cross's optimisation level for what goes onto a board (and what make mcu-bench measures
# as .mpy): -O3 leaves out the line-number tables (MicroPython py/emitbc.c), which a module
# imported from a filesystem holds in RAM: about 1.3 KB of an M4F's RAM after init
# (make mcu-bench). A traceback then names file and function, every line as 1: `lines=True`
# (`linkteam flash --lines`) keeps them for debugging on the bench. -O1 and up also drop
# `assert`s and make __debug__ False: firmware/ and bus_protocol/ use neither.
MPY_OPT = "-O3"


def mpy_cross_opt(lines=False):
    """mpy-cross's options for the deployed firmware; `lines`: keep line numbers."""
    return [] if lines else [MPY_OPT]


class FlashError(RuntimeError):
    """A board that cannot be reached, written or booted. `status`: the exit status the CLI
    gives (None: 2, bad input such as a port with no board); `lines`: the board's own
    console lines (its boot traceback)."""

    def __init__(self, message, status=None, lines=()):
        RuntimeError.__init__(self, message)
        self.status = status
        self.lines = list(lines)


READY = "linkteam ready"   # the agent's boot line on the console (firmware/main.py, "console_ready")
BOOT_WAIT_S = 15.0         # a board's boot: import and build the agent (a vboard under load: seconds)


def check_target(sc, link, board, bus):
    """Before anything is copied: the link is one of the scenario's, the board is one the
    firmware knows and its bus settings are there. -> None; FlashError (status 2) naming
    what is wrong."""
    from firmware import boards
    if not isinstance(link, int) or not 1 <= link <= sc.n:
        raise FlashError("--link %s: scenario %s (%s) has links 1-%d" % (link, sc.name, sc.path, sc.n))
    if board is not None:
        if board not in boards.BOARDS:
            raise FlashError("--board %s: not a board of firmware/boards (%s)" % (board, ", ".join(sorted(boards.BOARDS))))
        lack = boards.missing_bus(board, bus or {})
        if lack:
            raise FlashError("board %s needs %s in --bus-json (e.g. --bus-json '%s')" % (
                board, ", ".join(lack), json.dumps({k: BUS_EXAMPLE.get(k, "...") for k in lack})))


BUS_EXAMPLE = {"base_port": 47000, "up": "/dev/ttyS1"}


def check_platform(board, info):
    from firmware import boards
    want = boards.PLATFORM.get(board)
    if want and info["platform"] != want:
        raise FlashError("--board %s runs on a %s board; the board on %s is %s (say --board %s)" % (
            board, want, info["port"], info["platform"],
            " or ".join(b for b, p in sorted(boards.PLATFORM.items()) if p == info["platform"]) or "?"))


def tool(name):
    p = Path(sys.executable).parent / name
    return str(p) if p.exists() else name


def mpremote(port, *args, timeout=60):
    cmd = [tool("mpremote"), "connect", port, *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FlashError("%s: mpremote %s: no answer in %d s (is a board there, and in its REPL?)"
                         % (port, args[0], timeout)) from None
    if r.returncode != 0:
        out = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()]
        raise FlashError("%s: mpremote %s failed: %s" % (port, args[0], out[-1].strip() if out else "exit %d" % r.returncode),
                         lines=out[-40:])
    return r.stdout


def board_info(port):
    """Ask the board: platform, mpy version/arch, unique id, and the linkteam config if any."""
    code = ("import sys, json\n"
            "m = sys.implementation._mpy\n"
            "try:\n"
            "    import machine, binascii\n"
            "    uid = binascii.hexlify(machine.unique_id()).decode()\n"
            "except Exception:\n"
            "    uid = ''\n"
            "try:\n"
            "    c = json.load(open('/config.json'))\n"
            "    link = c.get('link'); board = c.get('board')\n"
            "except Exception:\n"
            "    link = None; board = None\n"
            "try:\n"
            "    from firmware.main import VERSION as fw\n"
            "except Exception:\n"
            "    fw = None\n"
            "print('LINKTEAM', json.dumps({'platform': sys.platform, 'mpy': m, 'uid': uid,"
            " 'link': link, 'board': board, 'fw': fw, 'version': sys.version}))\n")
    out = mpremote(port, "exec", code)
    for line in out.splitlines():
        if line.startswith("LINKTEAM "):
            info = json.loads(line[9:])
            arch = info["mpy"] >> 10
            info["arch"] = ARCHS[arch] if arch < len(ARCHS) else None
            info["mpy_version"] = "%d.%d" % (info["mpy"] & 0xFF, (info["mpy"] >> 8) & 3)
            info["port"] = port
            return info
    raise FlashError("no answer from the board on %s:\n%s" % (port, out[-500:]))


def build(arch, out_dir, lines=False):
    """mpy-cross every module of firmware/ and bus_protocol/ into out_dir (`lines`: with
    line numbers, see MPY_OPT); -> {relpath: bytes}."""
    files = {}
    out_dir = Path(out_dir)
    for pkg in PACKAGES:
        for src in sorted((ROOT / pkg).rglob("*.py")):
            rel = src.relative_to(ROOT)
            dst = out_dir / rel.with_suffix(".mpy")
            dst.parent.mkdir(parents=True, exist_ok=True)
            cmd = [tool("mpy-cross"), "-o", str(dst)] + mpy_cross_opt(lines)
            if arch:
                cmd.append("-march=" + arch)
            cmd.append(str(src))
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT))
            if r.returncode != 0:
                if str(rel.as_posix()) in OPTIONAL:
                    continue   # the firmware falls back without it, or another board's driver
                raise FlashError("mpy-cross %s: %s%s" % (rel, r.stderr, "" if arch else
                                 " (the agent's hot path is @micropython.native: the board's port"
                                 " must have a native-code emitter)"))
            files[str(rel.with_suffix(".mpy"))] = dst.read_bytes()
    return files


def link_config(sc, link, board, bus=None, extra=None):
    cfg = dict(sc.agent_configs[link - 1])
    cfg["board"] = board
    cfg["bus"] = dict(bus or {})
    cfg["console_ready"] = True   # the boot line flash and boards wait for (READY)
    cfg.update(extra or {})
    return cfg


def auth_config(sc, key_file):
    """A board's `auth` config (firmware/auth.py): its key in /auth.key beside it (never in
    /config.json), its highest block in /auth.block, and the lowest block it takes: the
    one the host starts next with this key (host/tools/keys.py)."""
    if sc.auth == "unauthenticated":
        return "unauthenticated"
    from host.tools import keys
    return {"key_file": "/" + BOARD_KEY, "block_file": "/auth.block", "goal": sc.auth == "on",
            "floor": keys.BlockState(key_file + ".fv").next()}


BOARD_KEY = "auth.key"


def flash(port, link, sc, board=None, bus=None, verify=True, reset=True, log=print, lines=False, key_file=None):
    """Copy the firmware and link `link`'s config onto the board at `port`, then reset it and
    wait for the agent's boot line: FlashError (status 1, the board's own lines) if it
    does not boot."""
    check_target(sc, link, board, bus)
    info = board_info(port)
    board = board or DEFAULT_BOARD.get(info["platform"])
    if not board:
        raise FlashError("say --board for a %s board" % info["platform"])
    check_target(sc, link, board, bus)
    check_platform(board, info)
    log("%s: %s, mpy %s arch %s -> link %d as %s" % (port, info["platform"], info["mpy_version"],
                                                     info["arch"], link, board))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = build(info["arch"], tmp / "build", lines)
        cfg = link_config(sc, link, board, bus, {"auth": auth_config(sc, key_file)})
        (tmp / "build" / "config.json").write_text(json.dumps(cfg))
        if key_file is not None and cfg["auth"] != "unauthenticated":
            from host.tools import keys
            fd = os.open(tmp / "build" / BOARD_KEY, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(keys.load(key_file).hex())
            files[BOARD_KEY] = (tmp / "build" / BOARD_KEY).read_bytes()
        (tmp / "build" / "main.py").write_text(BOOT_MAIN)
        files["config.json"] = (tmp / "build" / "config.json").read_bytes()
        files["main.py"] = BOOT_MAIN.encode()
        dirs = sorted({str(Path(f).parent) for f in files if "/" in f},
                      key=lambda d: d.count("/"))
        args = []
        # remove any stale sources of these packages first (a .py would shadow nothing, but
        # old modules must not linger), then make the directories and copy
        args += ["exec", "import os\n"
                 "def rm(p):\n"
                 "    try:\n"
                 "        for e in os.ilistdir(p):\n"
                 "            q = p + '/' + e[0]\n"
                 "            rm(q) if e[1] == 0x4000 else os.remove(q)\n"
                 "        os.rmdir(p)\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "for p in %r: rm(p)\n" % (list(PACKAGES),), "+"]
        for d in dirs:
            args += ["mkdir", ":" + d, "+"]
        for f in files:
            args += ["cp", str(tmp / "build" / f), ":" + f, "+"]
        mpremote(port, *args[:-1], timeout=180)
        if verify:
            verify_hashes(port, files)
            log("%s: %d files verified (sha256)" % (port, len(files)))
    if reset:
        ok, said = reset_and_watch(port)
        if not ok:
            raise FlashError("%s: link %d copied, but the agent did not boot" % (port, link), status=1, lines=said)
        log("%s: boots: %s" % (port, said[-1] if said else READY))
    return info


def _console_lines(text):
    """The board's lines after its reset, without REPL banners and prompts."""
    out = []
    for line in text.replace("\r", "").split("\n"):
        line = line.rstrip()
        if line and not line.startswith((">>>", "MicroPython v", "Use Ctrl-D", "Type \"help()\"", "soft reboot",
                                         "raw REPL", "MPY: ", "MicroPython ")):
            out.append(line)
    return out


def reset_and_watch(port, timeout=BOOT_WAIT_S):
    """Soft-reset into main.py and read the console: -> (True, lines up to the agent's boot
    line) or (False, the board's lines: its traceback, or a note that nothing came)."""
    with _open(port, 0.1) as s:
        _soft_reset(s)
        buf = b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            buf += s.read(512)
            text = buf.decode("utf-8", "replace")
            if READY in text:
                return True, [x for x in _console_lines(text) if READY in x][-1:]
            tb = text.find("Traceback")
            if tb >= 0 and (">>>" in text[tb:] or "Type \"help()\"" in text[tb:]):   # back in the REPL: it died
                return False, _console_lines(text[tb:])
    said = _console_lines(buf.decode("utf-8", "replace"))
    return False, said or ["(nothing on the console in %.0f s: no boot line %r)" % (timeout, READY)]


def verify_hashes(port, files):
    code = ("import hashlib, binascii\n"
            "for p in %r:\n"
            "    h = hashlib.sha256()\n"
            "    with open(p, 'rb') as f:\n"
            "        h.update(f.read())\n"
            "    print('H', p, binascii.hexlify(h.digest()).decode())\n" % (sorted(files),))
    out = mpremote(port, "exec", code)
    got = {}
    for line in out.splitlines():
        if line.startswith("H "):
            _, p, h = line.split()
            got[p] = h
    bad = [p for p, data in files.items() if got.get(p) != hashlib.sha256(data).hexdigest()]
    if bad:
        raise FlashError("hash mismatch on %s: %s" % (port, ", ".join(bad[:5])))


def _open(port, timeout):
    import serial
    try:
        return serial.Serial(port, 115200, timeout=timeout)
    except (OSError, ValueError) as e:
        raise FlashError("%s: cannot open the port: %s" % (port, e)) from None


def _soft_reset(s):
    """Interrupt what runs, leave the raw REPL and soft-reset in the friendly REPL (Ctrl-C,
    Ctrl-B, Ctrl-D), so the board boots main.py; what it said before is dropped."""
    s.write(b"\r\x03\x03")
    time.sleep(0.1)
    s.write(b"\x02")
    time.sleep(0.1)
    s.reset_input_buffer()
    s.write(b"\x04")


def soft_reset_to_main(port, settle=0.3):
    """Soft-reset the board into main.py without watching it boot (reset_and_watch does)."""
    with _open(port, 0.2) as s:
        _soft_reset(s)
        time.sleep(settle)


def parse_map(text):
    """'1=/dev/ttyACM0,2=/dev/ttyACM1' -> {1: '/dev/ttyACM0', 2: '/dev/ttyACM1'}"""
    out = {}
    for part in text.split(","):
        if part.strip():
            k, eq, v = part.partition("=")
            try:
                out[int(k)] = v.strip()
            except ValueError:
                k = ""
            if not k or not eq or not v.strip():
                raise FlashError("--chain: LINK=PORT,... (1=/dev/ttyACM0,2=/dev/ttyACM1), not %r" % part)
    if not out:
        raise FlashError("--chain: LINK=PORT,... (1=/dev/ttyACM0,2=/dev/ttyACM1), not %r" % text)
    return out


def dump_config(port):
    out = mpremote(port, "exec", "print('CFG', open('/config.json').read())")
    for line in out.splitlines():
        if line.startswith("CFG "):
            return json.loads(line[4:])
    raise FlashError("no /config.json on %s" % port)


def restore_config(port, cfg):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    try:
        mpremote(port, "cp", f.name, ":config.json")
    finally:
        Path(f.name).unlink()


def list_ports():
    """Serial ports that look like boards (USB CDC/serial, pyserial's port listing)."""
    from serial.tools import list_ports as lp
    return [p.device for p in lp.comports() if p.vid is not None or "ACM" in p.device or "USB" in p.device]


def vboard_registry():
    """Where running `linkteam vboard`s note their ports (one file per board process)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / ("linkteam-vboards-%d" % os.getuid())


def register_vboard(path):
    """Note a vboard's port for discovery; -> the note (removed by the vboard on exit)."""
    d = vboard_registry()
    d.mkdir(parents=True, exist_ok=True)
    note = d / ("%d" % os.getpid())
    note.write_text(str(Path(path).absolute()))
    return note


def vboards():
    """Ports of the running vboards (notes of processes that are gone are dropped)."""
    out = []
    d = vboard_registry()
    for note in sorted(d.glob("*")) if d.is_dir() else ():
        try:
            os.kill(int(note.name), 0)
            port = note.read_text().strip()
        except (ValueError, OSError):
            note.unlink(missing_ok=True)
            continue
        if os.path.exists(port):
            out.append(port)
    return out


def discover_ports():
    """`linkteam boards` without --ports: USB serial ports and vboards. -> (ports, what was
    tried, one phrase each)."""
    usb = list_ports()
    vb = vboards()
    tried = ["USB serial ports (pyserial): %s" % (", ".join(usb) or "none"),
             "virtual boards (%s): %s" % (vboard_registry(), ", ".join(vb) or "none")]
    return usb + [p for p in vb if p not in usb], tried


def reset(port):
    """Interrupt whatever runs and soft-reset so main.py boots again."""
    soft_reset_to_main(port)
