# A node's bus loop: frames in from its port(s), routed to the agent or passed on;
# the agent's frames out to the right port. Same code on boards, on MicroPython unix
# processes and in tests. Ports (firmware/hal/*) come in two shapes:
#   byte-stream port (UART):  write(buf) -> n ;  readinto(buf) -> n or None  (non-blocking)
#   frame port (CAN, CAN-FD): send(frame) ;      recv() -> frame bytes or None (non-blocking)
from bus_protocol import framing
from bus_protocol import messages as m


_MAX_WIRE = 80   # COBS bytes of the longest logical frame (64 -> 65), with margin


def cobs_peek(data, i, j, k):
    """Byte k of the frame COBS-encoded in data[i:j], without decoding it (None if short)."""
    out = 0
    while i < j:
        code = data[i]
        if code == 0:
            return None
        run = code - 1
        if k < out + run:
            p = i + 1 + k - out
            return data[p] if p < j else None
        out += run
        i += code
        if code < 0xFF:
            if k == out:
                return 0 if i < j else None
            out += 1
    return None


_POOL = 24   # frames for this node per poll round (JS, SYNC, K, GOAL, rebroadcast ASSERTs)


class ChainNode:
    """UART daisy chain (DESIGN 1): `up` leads toward the base and the host, `down` toward
    the tip (None on the last link of a plain chain). Routing by destination address:
      from up:   dst == link -> agent; BROADCAST -> agent and down; dst > link -> down
      from down: dst == link -> agent; else (host, base-ward links, broadcast) -> up
      agent out: dst > link -> down; else up; BROADCAST -> both.
    With `ring` the tip's down port is a return wire to the host (hardware/rp2040-uart-node.md):
    frames for the host go down on every node and leave the tip straight to the host,
    so K_N, assertions and reports cross one wire instead of N base-ward hops; the tip
    passes nothing else onto it. The host also sends its goal (the assertions it
    rebroadcasts, then GOAL) into the tip over that wire, so two goal waves run, down
    from link 1 and up from link N, and stop where they meet: a node that has had this
    tick's GOAL neither passes on nor takes the other wave's copies (N/2 hops, not N).
    Anything else arriving from down on a ring is not for this topology and is ignored.
    Frames passing by are forwarded as received (COBS bytes, destination peeked, never
    decoded) and before the agent works on its own (cut-through): a SYNC runs down the
    chain ahead of the kinematic wave, so each agent has sampled its joint and built
    A_i(q) by the time K_{i-1} reaches it."""

    def __init__(self, agent, up, down=None, bufsize=256, ring=False):
        self.agent = agent
        self.link = agent.link
        self.up = up
        self.down = down
        tip = agent.link == agent.n_links
        self.ring = ring
        self.to_links = None if ring and tip else down   # toward links > this one
        self.to_host = down if ring and down is not None else up
        self.goal_tick = -1           # ring: the tick whose GOAL has passed this node
        self.ignored = 0              # ring: frames from down that are not the goal wave
        self._rx = bytearray(bufsize)
        self._rxv = memoryview(self._rx)
        self._carry = [b"", b""]      # partial COBS run per port (up, down)
        self._tx_up = bytearray()     # bytes queued per port, written once per poll round
        self._tx_down = bytearray()
        self._mine = []               # (buffer, length) of this round's own frames
        self._pool = [bytearray(m.MAX_FRAME) for _ in range(_POOL)]
        self._wire = bytearray(_MAX_WIRE)   # the agent's frame, COBS-encoded
        self._batch = False
        self.forwarded = 0
        self.dropped = 0
        agent.hal.send = self.send   # the agent talks through this node

    def send(self, buf, n=None):
        k = framing.cobs_encode_into(buf, len(buf) if n is None else n, self._wire)
        self._route(buf[2], memoryview(self._wire)[:k], None)
        if not self._batch:
            self.flush()

    def flush(self):
        if self._tx_down:
            self.down.write(self._tx_down)
            self._tx_down = bytearray()
        if self._tx_up:
            self.up.write(self._tx_up)
            self._tx_up = bytearray()

    def _route(self, dst, wire, came_from):
        if dst == m.HOST:
            if came_from is self.to_host:   # host-bound against the flow: a node
                self.dropped += 1            # configured for the other topology
            elif self.to_host is self.up:
                self._tx_up += wire
            else:
                self._tx_down += wire
            return
        if dst == m.BROADCAST or dst > self.link:
            if self.to_links is not None and came_from is not self.down:
                self._tx_down += wire
        if dst == m.BROADCAST or dst < self.link:
            if came_from is not self.up:
                self._tx_up += wire

    def _pump(self, port, side):
        n = port.readinto(self._rx)
        if not n:
            return 0
        data = bytes(self._rxv[:n])
        carry = self._carry[side]
        if carry:
            data = carry + data
        i = 0
        k = 0
        link = self.link
        while True:
            j = data.find(b"\x00", i)
            if j < 0:
                break
            if j > i:
                k += 1
                dst = cobs_peek(data, i, j, 2) if j - i <= _MAX_WIRE else None
                if dst is None:
                    self.dropped += 1
                    self.agent.decoder.bad += 1
                elif not self.ring or self._ring_admits(data, i, j, dst, port):
                    if dst != link:
                        self.forwarded += 1
                        self._route(dst, data[i:j + 1], port)
                    if dst == link or dst == m.BROADCAST:
                        mine = self._mine
                        buf = self._pool[len(mine)] if len(mine) < _POOL else bytearray(m.MAX_FRAME)
                        nf = framing.cobs_decode_into(data, i, j, buf)
                        if nf < 0:
                            self.agent.decoder.bad += 1
                        else:
                            mine.append((buf, nf))
            i = j + 1
        if len(data) - i > _MAX_WIRE:    # no delimiter in sight: resync at the next 0x00
            self.dropped += 1
            self._carry[side] = b""
        else:
            self._carry[side] = data[i:]
        return k

    def _ring_admits(self, data, i, j, dst, port):
        """Ring: the goal waves. False for a frame to leave alone (neither passed on nor
        taken): anything from down but the host's goal batch (broadcast ASSERT, GOAL),
        and that batch once this tick's GOAL has been here."""
        if dst == m.HOST:
            return True
        mt = cobs_peek(data, i, j, 0) if dst == m.BROADCAST else None
        if mt != m.GOAL and mt != m.ASSERT:
            if port is self.down:
                self.ignored += 1
                return False
            return True
        tick = self.agent.tick
        if self.goal_tick == tick:
            return False          # the other wave got here first
        if mt == m.GOAL:
            self.goal_tick = tick
        return True

    def poll(self):
        """Move whatever has arrived; returns the number of frames handled. Bounded:
        at most one read per port per call."""
        self._batch = True
        k = self._pump(self.up, 0)
        if self.down is not None:
            k += self._pump(self.down, 1)
        if k:
            mine = self._mine
            self.flush()   # passing traffic first (cut-through): SYNC runs ahead of K
            for f in mine:
                self.agent.receive(f[0], f[1])
            del mine[:]
            self.flush()
        self._batch = False
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
