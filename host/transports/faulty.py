"""The host's port on a faulty medium (processes mode with bus faults): the host's own
frames (SYNC, K_0, the goal batch, commands) cross their wire through
bus_protocol.wire_faults, as every node's frames do in its port (firmware/hal/unix_ports.py):
lost, corrupted or held back for their latency. Frames the host relays for links (round a
dead node of a UART ring) had theirs where they entered the medium."""
import heapq
import time

from bus_protocol.wire_faults import WireFaults


class FaultyTransport:
    """Wraps a transport; `clock()` is the tick the host is in."""

    def __init__(self, transport, specs, seed, clock):
        self.inner = transport
        self.faults = WireFaults(specs, seed)
        self.clock = clock
        self.held = []   # (due perf_counter s, order, frame, send method name, CAN: frame as sent)
        self._order = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _pass(self, frames, how):
        """Frames through the faults: the ones that go now, in order; delayed ones held."""
        now = time.perf_counter()
        out = []
        for f in frames:
            b = bytearray(f)
            delay = self.faults.apply(self.clock(), b, len(b))
            if delay < 0:
                continue
            as_sent = bytes(f) if b != f and hasattr(self.inner, "me") else None   # CAN: routed by its id
            if delay:
                self._order += 1
                heapq.heappush(self.held, (now + delay * 1e-6, self._order, bytes(b), how, as_sent))
            elif as_sent:
                self.inner.send(bytes(b), as_sent=as_sent)
            else:
                out.append(bytes(b))
        return out

    def send(self, frame):
        for f in self._pass([frame], "send_batch"):
            self.inner.send(f)

    def send_batch(self, frames):
        self.inner.send_batch(self._pass(frames, "send_batch"))

    def broadcast_batch(self, frames):
        self.inner.broadcast_batch(self._pass(frames, "broadcast_batch"))

    def due_in(self):
        """Seconds until the next held frame is due (None: none held); sends the due ones."""
        now = time.perf_counter()
        while self.held and self.held[0][0] <= now:
            _, _, f, how, as_sent = heapq.heappop(self.held)
            if as_sent:
                self.inner.send(f, as_sent=as_sent)
            else:
                getattr(self.inner, how)([f])
        return None if not self.held else self.held[0][0] - now

    def recv(self, timeout=0.0):
        end = time.perf_counter() + max(timeout, 0.0)
        while True:
            due = self.due_in()
            left = end - time.perf_counter()
            f = self.inner.recv(max(0.0, left if due is None else min(left, due)))
            if f is not None or time.perf_counter() >= end:
                return f
