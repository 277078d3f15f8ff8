# A node's bus loop: frames in from its port(s), routed to the agent or passed on;
# the agent's frames out to the right port. Same code on boards, on MicroPython unix
# processes and in tests. Ports (firmware/hal/*) come in two shapes:
#   byte-stream port (UART):  write(buf) -> n ;  readinto(buf) -> n or None  (non-blocking)
#   frame port (CAN, CAN-FD): send(frame) ;      recv() -> frame bytes or None (non-blocking)
from bus_protocol import framing
from bus_protocol import messages as m


class ChainNode:
    """UART daisy chain (DESIGN 1): `up` leads toward the base and the host, `down` toward
    the tip (None on the last link). Routing by destination address:
      from up:   dst == link -> agent; BROADCAST -> agent and down; dst > link -> down
      from down: dst == link -> agent; else (host, base-ward links, broadcast) -> up
      agent out: dst > link -> down; else up; BROADCAST -> both."""

    def __init__(self, agent, up, down=None, bufsize=256):
        self.agent = agent
        self.link = agent.link
        self.up = up
        self.down = down
        self._rx = bytearray(bufsize)
        self._rxv = memoryview(self._rx)
        self._dup = framing.Deframer()
        self._ddown = framing.Deframer()
        self.forwarded = 0
        agent.hal.send = self.send   # the agent talks through this node

    def send(self, buf, n=None):
        frame = bytes(buf[:n]) if n is not None else bytes(buf)
        self._route_out(frame, None)

    def _route_out(self, frame, came_from):
        dst = frame[2]
        wire = None
        if dst == m.BROADCAST or (dst != m.HOST and dst > self.link):
            if self.down is not None and came_from is not self.down:
                wire = framing.uart_frame(frame)
                self.down.write(wire)
        if dst == m.BROADCAST or dst == m.HOST or dst < self.link:
            if came_from is not self.up:
                self.up.write(wire or framing.uart_frame(frame))

    def _pump(self, port, deframer):
        n = port.readinto(self._rx)
        if not n:
            return 0
        frames = deframer.feed(self._rxv[:n])
        for f in frames:
            if len(f) < 3:
                self.agent.decoder.bad += 1
                continue
            dst = f[2]
            if dst == self.link or dst == m.BROADCAST:
                self.agent.receive(f)
            if dst != self.link:
                self.forwarded += 1
                self._route_out(f, port)
        return len(frames)

    def poll(self):
        """Move whatever has arrived; returns the number of frames handled. Bounded:
        at most one read per port per call."""
        k = self._pump(self.up, self._dup)
        if self.down is not None:
            k += self._pump(self.down, self._ddown)
        return k


class BusNode:
    """Shared medium (CAN): every node hears every frame; accept by destination."""

    def __init__(self, agent, port, burst=8):
        self.agent = agent
        self.port = port
        self.burst = burst
        agent.hal.send = self.send

    def send(self, buf, n=None):
        self.port.send(bytes(buf[:n]) if n is not None else bytes(buf))

    def poll(self):
        k = 0
        while k < self.burst:
            f = self.port.recv()
            if f is None:
                break
            k += 1
            self.agent.receive(f)   # the agent's decoder filters by destination
        return k
