"""`linkteam vwire DIR --links N`: the serial cables between virtual boards and the host,
in Python (what `socat pty,link=A pty,link=B` does for one cable). Every port is a pty:
its slave behind a symlink in DIR (the path a board's config.json or the host's pyserial
opens), its master here; a poll loop copies bytes between the masters, raw, with no byte
dropped while both ends are open. An end nobody has open is an unplugged cable (a vboard
soft-resets: its main.py exits and opens its ports again): bytes for it are dropped and
counted until it is opened again, and nothing queued before is left for the next opener.

Emulates the UART wiring of hardware/wiring.md, with the host on one
USB-serial adapter:
  ring (default)  host TX -> up1;  down_i <-> up_i+1;  downN TX -> host RX (return wire);
                  up1 TX is not connected; --goal-pair: host TX also reaches downN RX
  chain           host <-> up1;  down_i <-> up_i+1;  the tip has no down port"""
import json
import os
import pty
import select
import signal
import sys
import termios
import tty
from pathlib import Path

BEHIND = 1 << 16   # bytes an open end may fall behind before more for it are dropped
RT_PRIORITY = 60   # SCHED_FIFO, above the host and the links of processes mode


def link_pty(path, slave):
    """Make `path` a symlink to the pty whose slave fd is `slave` (replacing what was there)."""
    path = Path(path)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(os.ttyname(slave))


def unlink_pty(path):
    try:
        if Path(path).is_symlink():
            Path(path).unlink()
    except OSError:
        pass


def _hung_up(fd):
    p = select.poll()
    p.register(fd, select.POLLIN)
    return any(ev & select.POLLHUP for _, ev in p.poll(0))


class End:
    """One serial port: a pty, its slave at `path` for a board or the host to open."""

    def __init__(self, name, path):
        self.name, self.path = name, Path(path)
        self.fd, slave = pty.openpty()
        tty.setraw(slave)        # kept by the pty: no echo, no line editing for the opener
        os.set_blocking(self.fd, False)
        link_pty(self.path, slave)
        os.close(slave)          # unplugged until someone opens the path
        self.open = False
        self.out = bytearray()   # for this end, not yet taken by the kernel
        self.dropped = 0

    def plugged(self):
        if not self.open and not _hung_up(self.fd):
            self.open = True     # someone opened the path (again)
        return self.open

    def put(self, data):
        if not self.plugged() or len(self.out) > BEHIND:
            self.dropped += len(data)
            return False
        self.out += data
        self.flush()
        return True

    def flush(self):
        try:
            del self.out[:os.write(self.fd, self.out)]
        except BlockingIOError:
            pass
        except OSError:
            self.unplug()

    def unplug(self):
        self.open = False
        self.dropped += len(self.out)
        self.out.clear()
        termios.tcflush(self.fd, termios.TCOFLUSH)   # what the last opener left unread

    def close(self):
        os.close(self.fd)
        unlink_pty(self.path)


class Wiring:
    """Ends and the wires between them: routes {TX end: [RX ends]}; an end named in no
    route has its TX pin unconnected (what it sends is read and counted, as "-")."""

    def __init__(self, ends, routes):
        self.ends = {e.fd: e for e in ends}
        by_name = {e.name: e for e in ends}
        self.routes = {e: [by_name[d] for d in routes.get(e.name, ())] for e in ends}
        self.bytes = {(e.name, d.name): 0 for e, dsts in self.routes.items() for d in dsts}
        self.bytes.update({(e.name, "-"): 0 for e, dsts in self.routes.items() if not dsts})
        self.running = True

    def step(self, timeout=0.2):
        ends = self.ends.values()
        p = select.poll()
        for e in ends:
            if e.plugged():
                p.register(e.fd, select.POLLIN | (select.POLLOUT if e.out else 0))
        if not all(e.open for e in ends):
            timeout = min(timeout, 0.02)   # look for unplugged ends coming back
        for fd, ev in p.poll(timeout * 1000):
            e = self.ends[fd]
            if ev & select.POLLOUT:
                e.flush()
            if ev & select.POLLIN:
                self._carry(e)
            elif ev & (select.POLLHUP | select.POLLERR):
                e.unplug()

    def _carry(self, src):
        try:
            data = os.read(src.fd, 65536)
        except BlockingIOError:
            return
        except OSError:          # EIO: the slave side closed
            return src.unplug()
        for d in self.routes[src]:
            if d.put(data):
                self.bytes[src.name, d.name] += len(data)
        if not self.routes[src]:
            self.bytes[src.name, "-"] += len(data)

    def serve(self):
        while self.running:
            self.step()

    def close(self):
        for e in self.ends.values():
            e.close()

    def report(self):
        lines = ["wire %s -> %s %d" % (s, d, n) for (s, d), n in self.bytes.items()]
        return lines + ["dropped %s %d" % (e.name, e.dropped) for e in self.ends.values() if e.dropped]


def uart(directory, n, topology="ring", goal_pair=False):
    """The ports of an N-link UART ring or chain in `directory` -> (Wiring, {link: bus})."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ring = topology == "ring"
    ups = ["up%d" % i for i in range(1, n + 1)]
    downs = ["down%d" % i for i in range(1, n + 1 if ring else n)]
    routes = {downs[i]: [ups[i + 1]] for i in range(n - 1)}
    routes.update({ups[i + 1]: [downs[i]] for i in range(n - 1)})
    if ring:
        routes["host"] = [ups[0]] + ([downs[-1]] if goal_pair else [])
        routes[downs[-1]] = ["host"]   # the return wire; up1's TX is not connected
    else:
        routes["host"], routes[ups[0]] = [ups[0]], ["host"]
    wiring = Wiring([End(name, d / name) for name in ["host"] + ups + downs], routes)
    buses = {}
    for i in range(1, n + 1):
        buses[i] = {"up": str(d / ups[i - 1])}
        if i <= len(downs):
            buses[i]["down"] = str(d / downs[i - 1])
        buses[i]["ring"] = ring
    return wiring, buses


def main(directory, n, topology="ring", goal_pair=False, out=None):
    out = out or sys.stdout
    wiring, buses = uart(directory, n, topology, goal_pair)
    signal.signal(signal.SIGTERM, lambda *a: setattr(wiring, "running", False))
    try:   # a cable has no scheduling delay: relay at real-time priority where allowed
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except (OSError, AttributeError):
        pass
    host = Path(directory) / "host"
    print("host port: %s   (linkteam run S --mode hil --ports serial:%s@1000000)" % (host, host), file=out)
    for i, bus in buses.items():
        print("link %d bus: %s" % (i, json.dumps(bus)), file=out)
    print("(flash link I with --board unix-pty --bus-json 'its bus')", file=out)
    out.flush()
    try:
        wiring.serve()
    except KeyboardInterrupt:
        pass
    finally:
        wiring.close()
        print("\n".join(wiring.report()), file=out)
    return 0
