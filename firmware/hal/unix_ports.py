# The unix port's bus ports for a link agent run as a desktop process (docs/design.md §13):
# UART wires on pseudo-terminals or socketpairs (StreamPort, open_pty) and the CAN-like
# broadcast medium on loopback UDP (UdpPort), paced like the line they emulate
# (bus_protocol.medium). firmware/hal/unix.py builds a board from them.
import os
import socket
import sys
import time

from bus_protocol import can_ids, framing, medium
from bus_protocol import messages as m
from firmware.accel import forward

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
I_TICK = const(0)
# ---- end of layout ----

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

    def _queue(self, data, nbytes, delay_us=0):
        """Out when the line has shifted it (after what is queued), plus `delay_us` of
        wire latency (a frame with less may overtake it: jitter)."""
        now = _ticks()
        start = self._free if time.ticks_diff(self._free, now) > 0 else now
        due = time.ticks_add(start, nbytes * self.us_per_byte)
        self._free = due
        due = time.ticks_add(due, delay_us)
        q = self._q
        k = len(q)
        while k and time.ticks_diff(q[k - 1][0], due) > 0:
            k -= 1
        q.insert(k, (due, data))

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


class _Faulty:
    """Bus faults of the emulated wire (bus_protocol.wire_faults; set by
    firmware/hal/unix.py when the run injects them): the frames this node sends (src
    `me`) are lost, corrupted or delayed as they enter the medium; frames it passes on
    have had theirs where they entered. `clock` gives the tick: the agent's integers
    (LinkAgent.I, its tick at I_TICK)."""
    faults = None
    me = -1
    clock = None

    def _fault(self, frame):
        """-> -1 (lost) or the delay in us; corrupts `frame` (a bytearray) in place."""
        return self.faults.apply(self.clock[I_TICK], frame, len(frame))


class StreamPort(_Paced, _Faulty):
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
        if self.faults is not None:
            return self._write_faulty(buf)
        if self.us_per_byte:
            self._queue(bytes(buf), len(buf))
            return len(buf)
        return self._raw_write(buf)

    def _write_faulty(self, buf):
        """COBS frames buf[i:j] + 0x00 one by one: the node's own through _fault."""
        n = len(buf)
        i = 0
        while i < n:
            j = forward.find0(buf, i, n)
            if j < 0:
                j = n
            wire = buf[i:j + 1]
            src = forward.cobs_peek(buf, i, j, 1)
            if src == self.me:
                frame = bytearray(m.MAX_FRAME)
                k = framing.cobs_decode_into(buf, i, j, frame)
                if k >= 0:
                    frame = frame[:k]
                    delay = self._fault(frame)
                    if delay < 0:
                        i = j + 1
                        continue
                    wire = framing.uart_frame(frame)
                    if delay or self.us_per_byte:
                        self._queue(wire, len(wire), delay)
                        wire = None
            if wire is not None:
                if self.us_per_byte:
                    self._queue(bytes(wire), len(wire))
                else:
                    self._raw_write(wire)
            i = j + 1
        return n

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


class UdpPort(_Paced, _Faulty):
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
        cid = can_ids.can_id(frame[0], frame[1], dst)   # arbitration: as sent
        near = self.overhear if frame[0] == m.KINEMATIC else 0
        delay = 0
        if self.faults is not None:   # the data field's bits: the receivers' CRC catches them
            frame = bytearray(frame)
            delay = self._fault(frame)
            if delay < 0:
                return
        h = self._hdr
        h[0] = cid & 0xFF
        h[1] = (cid >> 8) & 0xFF
        h[2] = (cid >> 16) & 0xFF
        h[3] = (cid >> 24) & 0xFF
        item = (dst, near, bytes(h) + can_ids.fd_payload(frame))
        if self.bitrate:   # one "byte" of the pacer = this frame's line time
            self.us_per_byte = int(medium.fd_frame_seconds(len(frame), self.bitrate) * 1000000)
            self._queue(item, 1, delay)
        elif delay:
            self._queue(item, 0, delay)
        else:
            self._raw_write(item)

    def _raw_write(self, item):
        dst, near, dgram = item
        for k in medium.receivers(dst, self.me, len(self.addrs) - 1, near):
            self.s.sendto(dgram, self.addrs[k])

    def recv(self):
        try:
            d = self.s.recv(80)
        except OSError:
            return None
        if len(d) < 12:
            return None
        return can_ids.strip_padding(d[4:])
