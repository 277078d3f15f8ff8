"""UART byte-stream transports: COBS frames (bus_protocol.framing) on a pty master fd
or on a pyserial port. Optional line-rate emulation (`baud`): a write goes out when the
line would have finished shifting the previous ones (10 bits per byte)."""
import os
import select
import time
from collections import deque

from bus_protocol import framing
from host.transports.base import Transport


class _Stream(Transport):
    def __init__(self, baud=0):
        super().__init__()
        self.deframer = framing.Deframer()
        self.pending = deque()
        self.s_per_byte = 10.0 / baud if baud else 0.0
        self._line_free = 0.0

    def send(self, frame):
        wire = framing.uart_frame(frame)
        if self.s_per_byte:
            now = time.perf_counter()
            due = max(now, self._line_free) + len(wire) * self.s_per_byte
            self._line_free = due
            while time.perf_counter() < due:   # host side: sleep then write (store and forward)
                time.sleep(max(0.0, min(due - time.perf_counter(), 0.0005)))
        self._write(wire)
        self.sent += 1

    def send_batch(self, frames):
        if self.s_per_byte:
            for f in frames:
                self.send(f)
            return
        if frames:
            self._write(b"".join(framing.uart_frame(f) for f in frames))
            self.sent += len(frames)

    def _recv(self, timeout):
        if self.pending:
            return self.pending.popleft()
        data = self._read(timeout)
        if data:
            self.pending.extend(self.deframer.feed(data))
        return self.pending.popleft() if self.pending else None


class FdStreamTransport(_Stream):
    """The host's end of the chain in desktop mode: a pty master file descriptor."""
    name = "pty"

    def __init__(self, fd, baud=0):
        super().__init__(baud)
        self.fd = fd
        self.poller = select.poll()
        self.poller.register(fd, select.POLLIN)

    def fileno(self):
        return self.fd

    def _write(self, data):
        mv = memoryview(data)
        while mv:
            try:
                n = os.write(self.fd, mv)
            except BlockingIOError:
                select.select([], [self.fd], [], 0.01)
                continue
            mv = mv[n:]

    def _read(self, timeout):
        if not self.poller.poll(int(timeout * 1000 + 0.999) if timeout > 0 else 0):
            return b""
        try:
            return os.read(self.fd, 4096)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError:          # the chain's far end is gone
            time.sleep(timeout)
            return b""

    def close(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


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
