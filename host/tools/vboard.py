"""`linkteam vboard PATH`: a MicroPython unix-port process behind a pty at PATH that
behaves like a board for the real mpremote: raw REPL, Ctrl-D soft reset restarts the
interpreter (the unix port exits instead), Ctrl-C interrupts (the child's pty is its
controlling terminal, so the kernel turns ^C into SIGINT while code runs), boots
`main.py` after a reset in the friendly REPL, and keeps a per-board filesystem directory
mounted at `/` (VfsPosix), so `/config.json` and `/main.py` live in that directory.

Byte path:  mpremote <-> PATH (pty slave) | wrapper (pty master) <-> child pty <-> micropython"""
import fcntl
import os
import pty
import select
import signal
import subprocess
import sys
import termios
import time
import tty
from pathlib import Path

from host.runners.children import micropython_path
from host.tools.vwire import link_pty, unlink_pty

BOOT = ("import os, sys\n"
        "os.umount('/')\n"
        "os.mount(os.VfsPosix(%r), '/')\n"
        "os.chdir('/')\n"
        "sys.path[:] = ['', '/lib', '.frozen']\n")
# main.py ending in SystemExit (machine.soft_reset(), sys.exit(): firmware/params.py reboot)
# is a board's soft reset: the unix port under -i would fall into its REPL instead, so the
# wrapper says SOFT_RESET and serve() restarts the interpreter
SOFT_RESET = b"[vboard: soft reset]"
RUN_MAIN = ("try:\n"
            "    open('main.py').close()\n"
            "except OSError:\n"
            "    pass\n"
            "else:\n"
            "    try:\n"
            "        exec(open('main.py').read(), {'__name__': '__main__'})\n"
            "    except SystemExit:\n"
            "        print(%r)\n" % SOFT_RESET.decode())


def _ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class VirtualBoard:
    def __init__(self, path, fsdir=None, micropython=None, heapsize="4M"):
        self.path = Path(path)
        self.fsdir = Path(fsdir or str(self.path) + ".fs").resolve()
        self.fsdir.mkdir(parents=True, exist_ok=True)
        self.mp = micropython or micropython_path()
        self.heapsize = heapsize
        self.child = None
        self.raw = False
        self.running = True
        self.resets = 0
        self._tail = b""   # the child's last output (SOFT_RESET may span two reads)

    def open(self):
        self.user_m, self.user_s = pty.openpty()
        tty.setraw(self.user_s)
        tty.setraw(self.user_m)
        os.set_blocking(self.user_m, False)   # output nobody reads is dropped (_to_user)
        link_pty(self.path, self.user_s)
        return self

    def start_child(self, boot_main):
        self.cm, cs = pty.openpty()
        # raw (no \n -> \r\n), but ISIG on: while code runs (the REPL restores these
        # attributes) the kernel turns ^C into SIGINT for the child, as a board's UART IRQ would
        tty.setraw(cs)
        attrs = termios.tcgetattr(cs)
        attrs[3] |= termios.ISIG
        termios.tcsetattr(cs, termios.TCSANOW, attrs)
        code = BOOT % str(self.fsdir) + (RUN_MAIN if boot_main else "")
        self.child = subprocess.Popen([self.mp, "-X", "heapsize=" + self.heapsize, "-i", "-c", code],
                                      stdin=cs, stdout=cs, stderr=cs, cwd=str(self.fsdir),
                                      preexec_fn=_ctty, close_fds=True)
        os.close(cs)
        if not boot_main:   # a soft reset in the raw REPL comes back in the raw REPL
            self._drain_banner()
            os.write(self.cm, b"\x01")

    def _drain_banner(self, timeout=2.0):
        end = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < end and not buf.endswith(b">>> "):
            r, _, _ = select.select([self.cm], [], [], 0.05)
            if r:
                try:
                    buf += os.read(self.cm, 4096)
                except OSError:
                    break

    def stop_child(self):
        if self.child is not None:
            if self.child.poll() is None:
                self.child.kill()
            self.child.wait()
            self.child = None
            try:
                os.close(self.cm)
            except OSError:
                pass

    def _to_user(self, data):
        """Console output to the port; with nobody reading it and the pty's buffer full it
        is lost, as a UART's output with nothing on the other end (never blocks the board)."""
        try:
            os.write(self.user_m, data)
        except (BlockingIOError, InterruptedError):
            pass

    def serve(self):
        self.start_child(boot_main=True)
        while self.running:
            try:
                r, _, _ = select.select([self.user_m, self.cm], [], [], 0.2)
            except InterruptedError:
                continue
            if self.user_m in r:
                data = os.read(self.user_m, 4096)
                for b in data:
                    if b == 1:
                        self.raw = True
                    elif b == 2:
                        self.raw = False
                os.write(self.cm, data)
            if self.cm in r:
                try:
                    out = os.read(self.cm, 4096)
                except OSError:
                    out = b""
                if out:
                    self._to_user(out)
                    seen = self._tail + out
                    self._tail = seen[-len(SOFT_RESET):]
                    if SOFT_RESET in seen:   # main.py asked for a reset
                        self._tail = b""
                        self.child.kill()
                        self.child.wait()
            if self.child.poll() is not None:   # Ctrl-D / sys.exit: a soft reset
                self.stop_child()
                self._to_user(b"soft reboot\r\n")
                self.resets += 1
                self.start_child(boot_main=not self.raw)

    def close(self):
        self.running = False
        self.stop_child()
        for fd in (self.user_m, self.user_s):
            try:
                os.close(fd)
            except OSError:
                pass
        unlink_pty(self.path)


def main(path, fsdir=None):
    from host.tools.flash import register_vboard
    vb = VirtualBoard(path, fsdir).open()
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(SystemExit(0)))
    note = register_vboard(vb.path)   # `linkteam boards` finds it without --ports
    sys.stderr.write("virtual board at %s (filesystem %s)\n" % (vb.path, vb.fsdir))
    try:
        vb.serve()
    except KeyboardInterrupt:
        pass
    finally:
        vb.close()
        note.unlink(missing_ok=True)
    return 0
