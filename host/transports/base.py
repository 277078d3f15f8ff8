"""Transport base: a back end overrides `send(frame)` and `_recv(timeout)`; the base
class owns the deadline arithmetic, counting and the context-manager protocol."""
import time
from collections import deque


class Transport:
    name = "base"

    def __init__(self):
        self.sent = 0
        self.received = 0

    def send(self, frame):
        """Put one logical frame (bus_protocol bytes) on the bus."""
        raise NotImplementedError

    def send_batch(self, frames):
        """Several frames at once (a back end may coalesce them into one write)."""
        for f in frames:
            self.send(f)

    def broadcast_batch(self, frames):
        """Frames every node takes (the goal batch). A bus with more than one way in (a
        UART ring: link 1, and link N over the return wire) sends them every way."""
        self.send_batch(frames)

    def _recv(self, timeout):
        """One logical frame or None after `timeout` seconds (0 = do not wait)."""
        raise NotImplementedError

    def recv(self, timeout=0.0):
        deadline = time.perf_counter() + max(timeout, 0.0)
        while True:
            f = self._recv(max(deadline - time.perf_counter(), 0.0))
            if f is not None:
                self.received += 1
                return f
            if time.perf_counter() >= deadline:
                return None

    def read_fds(self):
        """File descriptors to poll for this transport's input (where it has any)."""
        return [self.fileno()]

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class LoopbackTransport(Transport):
    """Frames sent are received back (tests); `peer` gets what the host sends."""
    name = "loopback"

    def __init__(self):
        super().__init__()
        self.inbox = deque()
        self.outbox = deque()

    def send(self, frame):
        self.sent += 1
        self.outbox.append(bytes(frame))

    def inject(self, frame):
        self.inbox.append(bytes(frame))

    def _recv(self, timeout):
        if self.inbox:
            return self.inbox.popleft()
        if timeout:
            time.sleep(min(timeout, 0.001))
        return None
