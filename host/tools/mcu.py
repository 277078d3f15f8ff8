# The firmware on an emulated microcontroller: build MicroPython's QEMU port with
# firmware/ and bus_protocol/ frozen in, boot it in QEMU with `-icount shift=0` and
# type into its REPL. Used by `make mcu-bench` (benchmarks/mcu/mcu_bench.py) and
# tests/test_mcu.py.
#
# Two builds (out-of-tree board directories under benchmarks/mcu/boards/):
#   m4f     Cortex-M4F, single-precision FPU (STM32F4 class), QEMU mps2-an386
#   m0plus  Cortex-M0+ code (ARMv6-M, RP2040's instruction set), QEMU mps2-an385
# With -icount shift=0 QEMU advances virtual time by 1 ns per guest instruction and
# the guest's SysTick (time.ticks_us) follows virtual time: 1 us = 1000 instructions,
# identical on every machine and every run.
#
# The MicroPython source is a tarball named by MICROPY_SRC (no registry ships a tree
# with ports/qemu); it is unpacked once into build/mcu/ and rebuilt incrementally.
import hashlib
import os
import select
import shutil
import subprocess
import sys
import time

from host.tools.flash import mpy_cross_opt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_ROOT = os.path.join(ROOT, "build", "mcu")
NATIVE_SRC = os.path.join(ROOT, "firmware", "native")   # linkcore.c, its core and Makefile
BOARDS_DIR = os.path.join(ROOT, "benchmarks", "mcu", "boards")

# build name -> (board directory, QEMU machine, mpy-cross architecture)
BUILDS = {
    "m4f": ("M4F", "mps2-an386", "armv7emsp"),
    "m0plus": ("M0PLUS", "mps2-an385", "armv6m"),
}
# 140 KB, the QEMU port's default heap; an RP2040's MicroPython heap is about 160 KB
HEAP_BYTES = 143360
# Debian packages that provide the tools (make mcu-bench installs them with apt-get)
PACKAGES = ("qemu-system-arm", "gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "make")
# packages frozen into the firmware and compiled to .mpy for the RAM measurement
PACKAGES_FROZEN = ("firmware", "bus_protocol")
# scripts frozen beside them: the cycle benchmark and the frame oracles of tests/test_mcu.py
SCRIPTS = (("benchmarks", "mp_node_cycle.py"), ("benchmarks", "mp_hop_split.py"),
           ("benchmarks", "mp_fault_cost.py"), ("benchmarks", "mp_auth_cost.py"), ("tests/mp", "mp_auth.py"),
           ("tests/mp", "mp_mac_native.py"),
           ("tests/mp", "mp_agent_cycle.py"), ("tests/mp", "mp_node_stream.py"),
           ("tests/mp", "mp_framing_cases.py"), ("tests/mp", "mp_native_cases.py"), ("tests/mp", "mp_wire_chain.py"))


class McuError(Exception):
    pass


def missing():
    """What is missing to build and run the emulated boards: [] when nothing.
    Each entry names the tool and the Debian package that provides it."""
    out = []
    for tool, pkg in (("arm-none-eabi-gcc", "gcc-arm-none-eabi"),
                      ("qemu-system-arm", "qemu-system-arm"), ("make", "make")):
        if shutil.which(tool) is None:
            out.append("%s (Debian package %s)" % (tool, pkg))
    if shutil.which("arm-none-eabi-gcc") is not None:
        libc = subprocess.run(["arm-none-eabi-gcc", "-print-file-name=libc.a"],
                              capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(libc):
            out.append("newlib for arm-none-eabi (Debian package libnewlib-arm-none-eabi)")
    out += _linker_missing()   # each build carries the native module linkcore
    src = os.environ.get("MICROPY_SRC", "")
    if not src:
        out.append("MICROPY_SRC (a MicroPython v1.28 source tarball with ports/qemu)")
    elif not os.path.isfile(src):
        out.append("MICROPY_SRC=%s (no such file)" % src)
    return out


def install():
    """apt-get the Debian packages where this machine allows it (root with apt-get);
    returns what is still missing afterwards."""
    lack = missing()
    tools = [x for x in lack if not x.startswith(("MICROPY_SRC", "the Python package"))]
    if tools and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q"] + list(PACKAGES)):
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)
        lack = missing()
    return lack


def _run(cmd, cwd=None, log=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log is not None:
        with open(log, "a") as f:
            f.write("$ %s\n%s\n" % (" ".join(cmd), r.stdout))
    if r.returncode != 0:
        raise McuError("%s failed (exit %d):\n%s" % (" ".join(cmd[:3]), r.returncode, r.stdout[-3000:]))
    return r.stdout


def source_tree():
    """The MicroPython tree unpacked from MICROPY_SRC (once per tarball name)."""
    src = os.environ.get("MICROPY_SRC", "")
    if not os.path.isfile(src):
        raise McuError("MICROPY_SRC must name a MicroPython source tarball, not %r" % src)
    name = os.path.basename(src).split(".tar")[0]
    dest = os.path.join(BUILD_ROOT, name)
    stamp = os.path.join(dest, ".unpacked")
    if not os.path.exists(stamp):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        _run(["tar", "xzf", src, "-C", dest, "--strip-components=1"])
        open(stamp, "w").close()
    _align_frozen_armv6m(dest)
    return dest


def _align_frozen_armv6m(tree):
    """MicroPython v1.28's tools/mpy-tool.py freezes native code for ARMv6-M aligned to 2
    bytes, but that code loads its 32-bit constants PC-relative from a word it placed
    assuming a 4-byte aligned start (py/asmthumb.c, asm_thumb_mov_reg_i32): frozen at
    2 mod 4 it reads the wrong word (found by tests/test_mcu.py: the agent's native
    actuate() on the M0+ build computed (1 + 1) & 0xFFFF as 0). Frozen ARMv6-M native
    code is aligned to 4 here, as mpy-tool already does for ARMv6 (an RP2040 firmware
    that freezes the firmware needs the same line; .mpy files are loaded into the heap,
    which is aligned)."""
    path = os.path.join(tree, "tools", "mpy-tool.py")
    with open(path) as f:
        text = f.read()
    old = "            MP_NATIVE_ARCH_ARMV6,\n            MP_NATIVE_ARCH_XTENSA,"
    if old in text:
        _write_if_changed(path, text.replace(old, "            MP_NATIVE_ARCH_ARMV6,\n"
                                             "            MP_NATIVE_ARCH_ARMV6M,\n            MP_NATIVE_ARCH_XTENSA,"))
        for name in BUILDS:   # frozen before the patch: made again
            for suffix in ("", "-nocache"):
                stale = os.path.join(BUILD_ROOT, "build-" + name + suffix, "port", "frozen_content.c")
                if os.path.exists(stale):
                    os.remove(stale)
    elif "MP_NATIVE_ARCH_ARMV6M,\n            MP_NATIVE_ARCH_XTENSA," not in text:
        raise McuError("%s: not the mpy-tool.py this build knows (ARMv6-M alignment)" % path)


def _sources(root):
    """(package-relative path, absolute path) of every .py of the frozen packages."""
    out = []
    for pkg in PACKAGES_FROZEN:
        for d, _, files in os.walk(os.path.join(root, pkg)):
            if "__pycache__" in d:
                continue
            for f in sorted(files):
                if f.endswith(".py"):
                    p = os.path.join(d, f)
                    out.append((os.path.relpath(p, root), p))
    return sorted(out)


def _write_if_changed(path, text):
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if old != text:
        with open(path, "w") as f:
            f.write(text)
    return old != text


def _mpy_files_module(tree, march, out_dir, log, linkcore, keep_lines=False):
    """mcu_mpy_files.py: every module of the frozen packages as .mpy bytes (compiled
    for this build), so the board can import them from RAM like files from a
    filesystem (benchmarks/mp_node_cycle.py ram_mpy); and NATIVE, the native module
    linkcore.mpy, loaded into RAM as on any board (mpy-tool.py cannot freeze it: "unable
    to freeze code with relocations"). Compiled as `linkteam flash` deploys them
    (host/tools/flash.py MPY_OPT; `keep_lines`: with line numbers)."""
    mpy_cross = os.path.join(tree, "mpy-cross", "build", "mpy-cross")
    lines = ["# generated by host/tools/mcu.py: .mpy images of %s for -march=%s"
             % (", ".join(PACKAGES_FROZEN), march), "FILES = {"]
    for rel, path in _sources(ROOT):
        mpy = os.path.join(out_dir, "mpy", rel[:-3] + ".mpy")
        os.makedirs(os.path.dirname(mpy), exist_ok=True)
        _run([mpy_cross, "-march=" + march] + mpy_cross_opt(keep_lines) + ["-s", rel, "-o", mpy, path], log=log)
        with open(mpy, "rb") as f:
            lines.append("    %r: %r," % ("/" + rel[:-3] + ".mpy", f.read()))
    lines.append("}")
    with open(linkcore, "rb") as f:
        lines.append("NATIVE = {'/linkcore.mpy': %r}" % f.read())
    _write_if_changed(os.path.join(out_dir, "mcu_mpy_files.py"), "\n".join(lines) + "\n")
    _write_if_changed(os.path.join(out_dir, "mcu_romfs.py"),
                      "# generated by host/tools/mcu.py: a ROMFS image of the same .mpy files\nIMAGE = %r\n"
                      % _romfs_image(tree, os.path.join(out_dir, "mpy")))


def _romfs_image(tree, mpy_dir):
    """A ROMFS image (MicroPython's read-only, memory-mapped filesystem: vfs.VfsRom; a
    board's `mpremote romfs deploy`) of the .mpy files under mpy_dir: imported from it, a
    module's bytecode stays where the image is (flash) instead of being copied to RAM."""
    sys.path.insert(0, os.path.join(tree, "tools", "mpremote"))
    try:
        from mpremote.romfs import VfsRomWriter
    finally:
        sys.path.pop(0)
    w = VfsRomWriter()

    def add(d):
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if os.path.isdir(p):
                w.opendir(name)
                add(p)
                w.closedir()
            elif name.endswith(".mpy"):
                with open(p, "rb") as f:
                    w.mkfile(name, f.read())
    add(mpy_dir)
    return w.finalise()


def _linker_missing():
    """The Python packages MicroPython's tools/mpy_ld.py links a native module with."""
    out = []
    for mod, pkg in (("elftools", "pyelftools"), ("ar", "ar")):
        try:
            __import__(mod)
        except ImportError:
            out.append("the Python package %s (make setup installs it)" % pkg)
    return out


def native_missing(arch):
    """What is missing to build the native module linkcore for `arch`: [] when nothing."""
    out = []
    cc = "gcc" if arch == "x64" else "arm-none-eabi-gcc"
    if shutil.which(cc) is None:
        out.append("%s (Debian package %s)" % (cc, "gcc" if arch == "x64" else "gcc-arm-none-eabi"))
    out += _linker_missing()
    src = os.environ.get("MICROPY_SRC", "")
    if not os.path.isfile(src):
        out.append("MICROPY_SRC (a MicroPython v1.28 source tarball)")
    return out


def native_module(arch):
    """Build (incrementally) firmware/native/linkcore.c as a native .mpy for `arch` (x64,
    armv7emsp, armv6m) with MicroPython's py/dynruntime.mk; returns the .mpy's path."""
    tree = source_tree()
    out = os.path.join(ROOT, "build", "native", arch)
    os.makedirs(out, exist_ok=True)
    for f in ["linkcore.c", "Makefile"] + sorted(h for h in os.listdir(NATIVE_SRC) if h.endswith(".h")):
        with open(os.path.join(NATIVE_SRC, f)) as fh:
            _write_if_changed(os.path.join(out, f), fh.read())
    log = os.path.join(out, "build.log")
    open(log, "w").close()
    _run(["make", "-C", out, "MPY_DIR=" + tree, "ARCH=" + arch, "PYTHON=" + sys.executable], log=log)
    return os.path.join(out, "linkcore.mpy")


# linkcore compiled into the firmware image as a user C module (py/py.mk USER_C_MODULES):
# its code in flash, as a production firmware carries its C; the float operations as
# written (firmware/native/Makefile says why)
USERMOD_MK = """LINKCORE_DIR := $(USERMOD_DIR)
SRC_USERMOD_C += $(LINKCORE_DIR)/linkcore.c
$(BUILD)/linkcore/linkcore.o: CFLAGS += -ffp-contract=off -fno-math-errno -Wno-double-promotion -Wno-float-conversion
"""


def usermod(port_build):
    """The directory of user C modules holding linkcore (its sources copied beside a
    micropython.mk); the firmware's `import linkcore` finds it built in. A port build
    made without this micropython.mk is made again from scratch (make does not track
    flags), and one whose linkcore sources changed gets its frozen modules made again:
    they are compiled against the firmware's table of interned names, which the module's
    names may change."""
    out = os.path.join(BUILD_ROOT, "usermod", "linkcore")
    os.makedirs(out, exist_ok=True)
    _write_if_changed(os.path.join(out, "micropython.mk"), USERMOD_MK)
    texts = []
    for f in ["linkcore.c"] + sorted(h for h in os.listdir(NATIVE_SRC) if h.endswith(".h")):
        with open(os.path.join(NATIVE_SRC, f)) as fh:
            texts.append(fh.read())
        _write_if_changed(os.path.join(out, f), texts[-1])
    seen = os.path.join(port_build, "usermod.seen")   # what this port build was made with
    old = ""
    if os.path.exists(seen):
        with open(seen) as f:
            old = f.read()
    if old.split("\n", 1)[0] != repr(USERMOD_MK):
        shutil.rmtree(port_build, ignore_errors=True)
    elif old != repr(USERMOD_MK) + "\n" + hashlib.sha256("".join(texts).encode()).hexdigest():
        stale = os.path.join(port_build, "frozen_content.c")
        if os.path.exists(stale):
            os.remove(stale)
    os.makedirs(port_build, exist_ok=True)
    with open(seen, "w") as f:
        f.write(repr(USERMOD_MK) + "\n" + hashlib.sha256("".join(texts).encode()).hexdigest())
    return os.path.dirname(out)


def build(name, jobs=2, keep_lines=False, lookup_cache=True):
    """Build (incrementally) the firmware of build `name`; returns the firmware.elf path.
    `keep_lines`: its .mpy images with line numbers (host/tools/flash.py MPY_OPT).
    `lookup_cache` False: without the VM's map lookup cache (MICROPY_OPT_MAP_LOOKUP_CACHE,
    on in the stm32 and rp2 ports), whose hits and misses make what a piece of code costs
    depend on what ran before it (boards mode: counts that repeat however the frames of
    a tick interleave; a few hundred instructions a phase more)."""
    board, _, march = BUILDS[name]
    tree = source_tree()
    out = os.path.join(BUILD_ROOT, "build-" + name + ("" if lookup_cache else "-nocache"))
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "build.log")
    open(log, "w").close()
    _run(["make", "-C", os.path.join(tree, "mpy-cross"), "-j%d" % jobs], log=log)
    _mpy_files_module(tree, march, out, log, native_module(march), keep_lines)
    manifest = ["# generated by host/tools/mcu.py"]
    for pkg in PACKAGES_FROZEN:
        manifest.append("package(%r, base_path=%r)" % (pkg, ROOT))
    for d, f in SCRIPTS:
        manifest.append("module(%r, base_path=%r)" % (f, os.path.join(ROOT, d)))
    manifest.append("module('mcu_mpy_files.py', base_path=%r)" % out)
    manifest.append("module('mcu_romfs.py', base_path=%r)" % out)
    _write_if_changed(os.path.join(out, "manifest.py"), "\n".join(manifest) + "\n")
    libdir = os.path.join(out, "no-micropython-lib")   # the port wants one with a README.md
    os.makedirs(libdir, exist_ok=True)
    _write_if_changed(os.path.join(libdir, "README.md"), "micropython-lib is not used\n")
    _run(["make", "-C", os.path.join(tree, "ports", "qemu"), "-j%d" % jobs, "BOARD=" + board,
          "BOARD_DIR=" + os.path.join(BOARDS_DIR, board), "BUILD=" + os.path.join(out, "port"),
          "FROZEN_MANIFEST=" + os.path.join(out, "manifest.py"), "MPY_LIB_DIR=" + libdir,
          "MICROPY_HEAP_SIZE=%d" % HEAP_BYTES, "USER_C_MODULES=" + usermod(os.path.join(out, "port")),
          # computed goto in the VM, as the stm32 and rp2 ports build it
          "CFLAGS_EXTRA=-DMICROPY_OPT_COMPUTED_GOTO=1" + ("" if lookup_cache else " -DMICROPY_OPT_MAP_LOOKUP_CACHE=0")],
         log=log)
    return os.path.join(out, "port", "firmware.elf")


def run(name, elf, code, timeout=600):
    """Boot firmware `elf` of build `name` in QEMU (-icount shift=0), type `code` (lines
    of Python) into its REPL, reset the board; returns what it printed after the banner.
    Raises McuError on a timeout or a traceback."""
    _, machine, _ = BUILDS[name]
    lines = [ln for ln in code.strip().splitlines()] + ["import machine", "machine.reset()"]
    cmd = ["qemu-system-arm", "-machine", machine, "-nographic", "-monitor", "null",
           "-semihosting", "-icount", "shift=0", "-serial", "stdio", "-kernel", elf]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = b""
    try:
        # the REPL reads its UART a byte at a time; one line per write, each echoed back
        # before the next, so nothing overruns the emulated UART's receive FIFO
        out += _read_until(p, b">>> ", t0, timeout)
        for ln in lines:
            p.stdin.write(ln.encode() + b"\r")
            p.stdin.flush()
            if ln == "machine.reset()":
                break
            out += _read_until(p, b">>> ", t0, timeout)
        out += p.communicate(timeout=max(1.0, timeout - (time.monotonic() - t0)))[0]
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise McuError("QEMU (%s) did not finish within %d s; the board printed:\n%s"
                       % (name, timeout, out.decode("utf-8", "replace")[-2000:]))
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    text = out.decode("utf-8", "replace").replace("\r\n", "\n")
    if "Traceback" in text:
        at = text.find("Traceback")   # the first one, and what the board printed last
        raise McuError("the board (%s) raised:\n%s\n...\n%s" % (name, text[max(0, at - 500):at + 1500], text[-1500:]))
    return text


def _read_until(p, marker, t0, timeout):
    buf = b""
    fd = p.stdout.fileno()
    while not buf.endswith(marker):
        left = timeout - (time.monotonic() - t0)
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise McuError("QEMU did not finish within %d s; the board printed:\n%s"
                           % (timeout, buf.decode("utf-8", "replace")[-2000:]))
        c = os.read(fd, 4096)
        if not c:
            raise McuError("QEMU exited early:\n%s" % buf.decode("utf-8", "replace")[-3000:])
        buf += c
    return buf


if __name__ == "__main__":   # python -m host.tools.mcu m4f: build, then a REPL line from argv
    b = sys.argv[1] if len(sys.argv) > 1 else "m4f"
    print(run(b, build(b), " ".join(sys.argv[2:]) or "print('hello')"))
