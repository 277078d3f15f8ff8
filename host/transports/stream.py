"""UART byte-stream transports: COBS frames (bus_protocol.framing) on a pty master fd
or on a pyserial port. Optional line-rate emulation (`baud`): a write goes out when the
line would have finished shifting the previous ones (bus_protocol.medium)."""
import os
import select
import time
from collections import deque

from bus_protocol import framing, medium
from host.transports.base import Transport


class _Stream(Transport):
    def __init__(self, baud=0):
        super().__init__()
        self.deframer = framing.Deframer()
        self.pending = deque()
        self.s_per_byte = medium.uart_seconds(1, baud) if baud else 0.0
        self._line_free = 0.0

    def send(self, frame, writes=None):
        """`writes`: the lines to put it on, all shifting at once (default: this port)."""
        wire = framing.uart_frame(frame)
        if self.s_per_byte:
            now = time.perf_counter()
            due = max(now, self._line_free) + len(wire) * self.s_per_byte
            self._line_free = due
            while time.perf_counter() < due:   # host side: sleep then write (store and forward)
                time.sleep(max(0.0, min(due - time.perf_counter(), 0.0005)))
        for w in writes or (self._write,):
            w(wire)
        self.sent += 1

    def send_batch(self, frames, writes=None):
        if self.s_per_byte:
            for f in frames:
                self.send(f, writes)
            return
        if frames:
            data = b"".join(framing.uart_frame(f) for f in frames)
            for w in writes or (self._write,):
                w(data)
            self.sent += len(frames)

    def _recv(self, timeout):
        if self.pending:
            return self.pending.popleft()
        data = self._read(timeout)
        if data:
            self.pending.extend(self.deframer.feed(data))
        return self.pending.popleft() if self.pending else None


def _write_all(fd, data):
    mv = memoryview(data)
    while mv:
        try:
            n = os.write(fd, mv)
        except BlockingIOError:
            select.select([], [fd], [], 0.01)
            continue
        mv = mv[n:]


class FdStreamTransport(_Stream):
    """The host's end of the chain in desktop mode: the file descriptor of link 1's up
    wire, and with a ring also the tip's return wire (`return_fd`, read only)."""
    name = "pty"

    def __init__(self, fd, baud=0, return_fd=None):
        super().__init__(baud)
        self.fd = fd
        self.return_fd = return_fd
        self.deframers = {fd: self.deframer}
        if return_fd is not None:
            self.deframers[return_fd] = framing.Deframer()   # a byte stream of its own
        self.poller = select.poll()
        for f in self.deframers:
            self.poller.register(f, select.POLLIN)

    def fileno(self):
        return self.fd

    def broadcast_batch(self, frames):
        """Into both ends of a ring: link 1's up wire and the tip's return wire."""
        if self.return_fd is None:
            return self.send_batch(frames)
        self.send_batch(frames, (self._write, lambda data: _write_all(self.return_fd, data)))

    def read_fds(self):
        return list(self.deframers)

    def _write(self, data):
        _write_all(self.fd, data)

    def _recv(self, timeout):
        if self.pending:
            return self.pending.popleft()
        for f, _ in self.poller.poll(int(timeout * 1000 + 0.999) if timeout > 0 else 0):
            try:
                data = os.read(f, 4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:          # the chain's far end is gone
                time.sleep(timeout)
                continue
            self.pending.extend(self.deframers[f].feed(data))
        return self.pending.popleft() if self.pending else None

    def close(self):
        for f in (self.fd, self.return_fd):
            if f is not None:
                try:
                    os.close(f)
                except OSError:
                    pass
        self.fd = self.return_fd = None


class SerialTransport(_Stream):
    """A board's UART (USB-serial adapter, or a virtual board's pty) via pyserial."""
    name = "serial"

    def __init__(self, port, baud=1000000, emulate_baud=0):
        super().__init__(emulate_baud)
        import serial
        self.ser = serial.Serial(port, baudrate=baud, timeout=0)

    def _write(self, data):
        self.ser.write(data)

    def _read(self, timeout):
        fd = self.ser.fileno() if hasattr(self.ser, "fileno") else None
        if fd is not None:
            r, _, _ = select.select([fd], [], [], timeout)
            if not r:
                return b""
        else:
            self.ser.timeout = timeout
        return self.ser.read(max(1, self.ser.in_waiting))

    def close(self):
        self.ser.close()
