# The unix port's bus ports for a link agent run as a desktop process (docs/design.md §13):
# UART wires on pseudo-terminals or socketpairs (StreamPort, open_pty) and the CAN-like
# broadcast medium on loopback UDP (UdpPort), paced like the line they emulate
# (bus_protocol.medium). firmware/hal/unix.py builds a board from them.
import os
import socket
import sys
import time

from bus_protocol import can_ids, medium

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
