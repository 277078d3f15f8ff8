# MicroPython unix-port back end: a link agent as a desktop process (docs/design.md §13).
# Joint state comes from the host's plant (JOINT_STATE frames: on a wire of their own,
# SimIO, or on the bus, SimHAL) and the torque goes back to it; the bus is
#   "unix-pty": UART daisy chain on pseudo-terminals (byte-stream ports, node.ChainNode)
#   "unix-udp": CAN-like broadcast medium on loopback UDP (frame port, node.BusNode)
# Everything blocks in select.poll with a timeout: 10-20 of these share two cores.
import os
import select
import socket
import sys
import time

from bus_protocol import can_ids, medium
from firmware import node as node_mod
from firmware.hal.sim import SimHAL

try:
    import termios
except ImportError:
    termios = None

_VMIN = 6
_VTIME = 5


def _ticks():
    return time.ticks_us()


class _Paced:
    """Optional line-rate emulation: a write leaves the port when the line would have
    finished shifting it out (store and forward), so chain latency is realistic."""

    def __init__(self, baud, bits_per_byte=medium.UART_BITS_PER_BYTE):
        self.us_per_byte = (bits_per_byte * 1000000) // baud if baud else 0
        self._q = []          # [due_us, bytes]
        self._free = 0        # when the line is idle again (ticks_us)

    def _queue(self, data, nbytes):
        now = _ticks()
        start = self._free if time.ticks_diff(self._free, now) > 0 else now
        due = time.ticks_add(start, nbytes * self.us_per_byte)
        self._free = due
        self._q.append((due, data))

    def due_in_us(self):
        """Microseconds until the next queued write is due; -1 if none."""
        if not self._q:
            return -1
        d = time.ticks_diff(self._q[0][0], _ticks())
        return d if d > 0 else 0

    def flush(self):
        now = _ticks()
        q = self._q
        while q and time.ticks_diff(q[0][0], now) <= 0:
            self._raw_write(q.pop(0)[1])


class StreamPort(_Paced):
    """A UART-like byte port on a file object (pty slave opened by path, or an
    inherited pty master on stdin). write(buf[, n]) -> n ; readinto(buf) -> n or None."""

    def __init__(self, f, baud=0):
        _Paced.__init__(self, baud)
        self.f = f
        self.hup = False

    def fileno(self):
        return self.f.fileno()

    def write(self, buf, n=None):
        if n is not None and n < len(buf):
            buf = memoryview(buf)[:n]
        if self.us_per_byte:
            self._queue(bytes(buf), len(buf))
            return len(buf)
        return self._raw_write(buf)

    def _raw_write(self, buf):
        n = 0
        mv = memoryview(buf)
        while n < len(buf):
            try:
                k = self.f.write(mv[n:])
            except OSError:    # the node on the other end died (EPIPE): an unplugged cable
                self.hup = True
                return len(buf)
            if k is None:      # non-blocking and full: wait for room (rare)
                time.sleep_ms(1)
                continue
            n += k
        return n

    def readinto(self, buf):
        try:
            return self.f.readinto(buf)
        except OSError:      # the other end hung up
            self.hup = True
            return 0


def open_pty(path, baud=0):
    """A byte port by path, or an inherited descriptor: "stdin" (fd 0) / "stdout" (fd 1),
    which the parent has already made raw and non-blocking. A path is the host's (a
    vboard's `/` is its own directory, `linkteam vwire` puts the ports elsewhere), so it
    is opened on a VfsPosix at the host's root, whatever is mounted at the board's `/`."""
    if path == "stdin":
        return StreamPort(sys.stdin.buffer, baud)
    if path == "stdout":
        return StreamPort(sys.stdout.buffer, baud)
    f = os.VfsPosix().open(path, "r+b") if hasattr(os, "VfsPosix") else open(path, "r+b")
    if termios is not None:
        fd = f.fileno()
        termios.setraw(fd)
        a = termios.tcgetattr(fd)
        a[6][_VMIN] = 0       # reads return at once with what is there
        a[6][_VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, a)
    return StreamPort(f, baud)


class UdpPort(_Paced):
    """CAN-FD on loopback UDP. One datagram = 4-byte little-endian 29-bit CAN id +
    the FD data field (logical frame + padding, can_ids.fd_payload). Node k listens on
    base_port + k (host: k = 0). Acceptance filtering is done at the sender (a frame
    goes to its destination's port, or to every port for BROADCAST), which is what the
    receivers' hardware filters would let through anyway. send(frame); recv() -> frame|None."""

    def __init__(self, me, n_nodes, base_port, host="127.0.0.1", bitrate=0):
        _Paced.__init__(self, bitrate, 1)
        self.bitrate = bitrate
        self.me = me
        self.addrs = [socket.getaddrinfo(host, base_port + k)[0][-1] for k in range(n_nodes + 1)]
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind(self.addrs[me])
        self.s.setblocking(False)
        self._hdr = bytearray(4)
        self.hup = False
        self.overhear = 0   # a KINEMATIC frame for link j also to j+1..j+overhear (their filters)

    def fileno(self):
        return self.s.fileno()

    def send(self, frame):
        dst = frame[2]
        cid = can_ids.can_id(frame[0], frame[1], dst)
        h = self._hdr
        h[0] = cid & 0xFF
        h[1] = (cid >> 8) & 0xFF
        h[2] = (cid >> 16) & 0xFF
        h[3] = (cid >> 24) & 0xFF
        dgram = bytes(h) + can_ids.fd_payload(frame)
        if self.bitrate:   # one "byte" of the pacer = this frame's line time
            self.us_per_byte = int(medium.fd_frame_seconds(len(frame), self.bitrate) * 1000000)
            self._queue((dst, dgram), 1)
            return
        self._raw_write((dst, dgram))

    def _raw_write(self, item):
        dst, dgram = item
        for k in medium.receivers(dst, self.me, len(self.addrs) - 1, self.overhear if dgram[4] == 3 else 0):
            self.s.sendto(dgram, self.addrs[k])   # (dgram[4]: the frame's type; 3 = KINEMATIC)

    def recv(self):
        try:
            d = self.s.recv(80)
        except OSError:
            return None
        if len(d) < 12:
            return None
        return can_ids.strip_padding(d[4:])


class SimIO(SimHAL):
    """Joint I/O wired straight to the host's plant on loopback UDP, the way a board's
    encoder and motor driver are wired to its own joint and not to the bus: JOINT_STATE
    datagrams in (read() keeps the newest), the TORQUE report out (report()). Port
    io_base + link here, io_base at the host."""

    def __init__(self, link, io_base, host="127.0.0.1"):
        SimHAL.__init__(self)
        from bus_protocol import messages
        self._m = messages
        self._dec = messages.Decoder()
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind(socket.getaddrinfo(host, io_base + link)[0][-1])
        self.s.setblocking(False)
        self.host_addr = socket.getaddrinfo(host, io_base)[0][-1]
        self._poll = select.poll()
        self._poll.register(self.s, select.POLLIN)

    def wait_state(self, tick, ms=5000):
        """Lockstep: block until the joint state of `tick` is in (or ms pass, when the
        host gives up on the tick anyway). It comes on this wire, apart from the SYNC on
        the bus, and may trail it on a busy machine. -> True if it is in."""
        end = time.ticks_add(time.ticks_ms(), ms)
        while True:
            self.read()
            left = time.ticks_diff(end, time.ticks_ms())
            if self.state_tick >= tick or left <= 0:
                return self.state_tick >= tick
            self._poll.poll(left)

    def read(self):
        while True:
            try:
                d = self.s.recv(80)
            except OSError:   # nothing more waiting
                return True
            msg = self._dec.decode(d)
            if msg is not None and msg[0] == self._m.JOINT_STATE:
                self.on_joint_state(msg[4])

    def report(self, buf, n):
        try:
            self.s.sendto(buf[:n], self.host_addr)
        except OSError:
            pass   # the host is gone: the bus will hang up too


class UnixBoard:
    """Board object (firmware/boards contract): .hal, .node(agent), .wait(ms), .closed."""

    def __init__(self, name, cfg):
        self.name = name
        io = cfg.get("io")
        self.hal = SimHAL() if io is None else SimIO(cfg["link"], int(io["base_port"]), io.get("host", "127.0.0.1"))
        bus = cfg.get("bus", {})
        baud = int(bus.get("baud", 0))
        self.ports = []
        if name == "unix-pty":
            self.up = open_pty(bus["up"], baud)
            self.down = open_pty(bus["down"], baud) if bus.get("down") else None
            self.ring = bool(bus.get("ring"))   # the tip's down is the return wire to the host
            self.overhear = int(bus.get("overhear", 0))
            self.ports = [self.up] + ([self.down] if self.down else [])
        else:
            self.port = UdpPort(cfg["link"], cfg["n_links"], int(bus["base_port"]),
                                bus.get("host", "127.0.0.1"), baud)
            self.port.overhear = int(bus.get("overhear", 0))
            self.ports = [self.port]
        self._poll = select.poll()
        for p in self.ports:
            self._poll.register(p.fileno(), select.POLLIN)
        self._paced = baud > 0

    def node(self, agent):
        if self.name == "unix-pty":
            return node_mod.ChainNode(agent, self.up, self.down, bufsize=2048, ring=self.ring,
                                      overhear=self.overhear)
        return node_mod.BusNode(agent, self.port)

    @property
    def closed(self):
        """A chain node stops when a wire hangs up (the host is gone); a ring node when both
        have: with one neighbour dead it still reaches the host the other way round."""
        n = 0
        for p in self.ports:
            if p.hup:
                n += 1
        return n == len(self.ports) if getattr(self, "ring", False) else n > 0

    def wait(self, ms):
        """Block until a port has input, a paced write is due, or ms pass. -> True if input."""
        if not self._paced:
            ev = self._poll.poll(ms)
            self._hangup(ev)
            return bool(ev)
        due = -1
        for p in self.ports:
            d = p.due_in_us()
            if d >= 0 and (due < 0 or d < due):
                due = d
        if 0 <= due < 2000:      # poll() counts in ms: sleep the last stretch in short
            if self._poll.poll(0):  # naps, looking at the input between them
                return True
            time.sleep_us(min(due, 250))
            for p in self.ports:
                p.flush()
            return True
        if due >= 0:
            ms = min(ms, due // 1000 - 1)
        ev = self._poll.poll(ms)
        if due >= 0:
            for p in self.ports:
                p.flush()
        self._hangup(ev)
        return bool(ev)

    def _hangup(self, ev):
        for fd, e in ev:
            if e & select.POLLHUP:   # a stream's far end closed (UDP has no such thing;
                for p in self.ports:  # its POLLERR, an ICMP unreachable, clears on recv)
                    if p.fileno() == fd and isinstance(p, StreamPort):
                        p.hup = True
                        self._poll.unregister(fd)   # or every poll returns at once


def make_board(name, cfg):
    return UnixBoard(name, cfg)
