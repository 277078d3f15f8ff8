# A node's bus loop: frames in from its port(s), routed to the agent or passed on;
# the agent's frames out to the right port. Same code on boards, on MicroPython unix
# processes and in tests. Ports (firmware/hal/*) come in two shapes:
#   byte-stream port (UART):  write(buf, n) -> n  (buf[:n]; as a MicroPython stream's
#                             write(buf, max_len)) ;  readinto(buf) -> n or None  (non-blocking)
#   frame port (CAN, CAN-FD): send(frame) ;      recv() -> frame bytes or None (non-blocking)
from array import array

from bus_protocol import framing
from bus_protocol import messages as m


_MAX_WIRE = 80   # COBS bytes of the longest logical frame (64 -> 65), with margin
# Transmit buffer per port (two longest frames; a fuller round is written in parts) and
# decoded frames held per poll round (more are handed to the agent in batches): RAM after
# init is a target (make mcu-bench), 24 pool frames cost 1 KB more than 8.
_TX = 2 * (_MAX_WIRE + 1)
_POOL = 8


class ChainNode:
    """UART daisy chain (docs/design.md §1): `up` leads toward the base and the host, `down` toward
    the tip (None on the last link of a plain chain). Routing by destination address:
      from up:   dst == link -> agent; BROADCAST -> agent and down; dst > link -> down
      from down: dst == link -> agent; else (host, base-ward links, broadcast) -> up
      agent out: dst > link -> down; else up; BROADCAST -> both.
    With `ring` the tip's down port is a return wire to the host (hardware/wiring.md):
    frames for the host go down on every node and leave the tip straight to the host,
    so K_N, assertions and reports cross one wire instead of N base-ward hops; the tip
    passes nothing else onto it. The host also sends its goal (the assertions it
    rebroadcasts, then GOAL) into the tip over that wire, so two goal waves run, down
    from link 1 and up from link N, and stop where they meet: a node that has had this
    tick's GOAL neither passes on nor takes the other wave's copies (N/2 hops, not N).
    Anything else arriving from down on a healthy ring is not for this topology and is
    ignored. A ring routes around a dead node (faults/REPORT.md): a node whose down wire is
    gone (its write fails) sends everything up instead; frames for the host or for links
    beyond that come from down are passed up (the long way, through the host, which puts
    them into the tip's end), and on the far side frames for base-ward links that come from
    down are taken and passed up. With `overhear` = d a KINEMATIC frame also reaches the d
    links after its destination (their neighbour checks and bridges: firmware/neighbours.py).
    Frames passing by are forwarded as received (COBS bytes, destination peeked, never
    decoded) and before the agent works on its own (cut-through): a SYNC runs down the
    chain ahead of the kinematic wave, so each agent has sampled its joint and built
    A_i(q) by the time K_{i-1} reaches it."""

    def __init__(self, agent, up, down=None, bufsize=256, ring=False, overhear=0):
        self.agent = agent
        self.link = agent.link
        self.up = up
        self.down = down
        tip = agent.link == agent.n_links
        self.ring = ring
        self.to_links = None if ring and tip else down   # toward links > this one
        self.to_host = down if ring and down is not None else up
        self._host_side = 0 if self.to_host is up else 1
        self.overhear = overhear
        self.down_dead = False        # ring: the down wire's far end is gone
        self.goal_tick = -1           # ring: the tick whose GOAL has passed this node
        # Everything preallocated: a poll round allocates nothing (make mcu-bench: the
        # bytes(), slices and += of per-round buffers cost ~1.5 KB and ~60k instructions
        # per forwarded frame on a Cortex-M4F; the viper loops of bus_protocol/cobs_native.py
        # move the bytes).
        self._rx = bytearray(bufsize)
        self._acc = (bytearray(_MAX_WIRE), bytearray(_MAX_WIRE))   # the COBS run so far, per port
        self._st = (array("i", (0, 0)), array("i", (0, 0)))      # its length, overlong flag
        self._tx = (bytearray(_TX), bytearray(_TX))   # up, down
        self._txn = [0, 0]            # bytes queued per port, written once per poll round
        self._pool = [bytearray(m.MAX_FRAME) for _ in range(_POOL)]
        self._mine_n = array("H", bytes(2 * _POOL))   # lengths of this round's own frames
        self._nmine = 0
        self._wire = bytearray(_MAX_WIRE)   # the agent's frame, COBS-encoded
        self._batch = False
        self.forwarded = 0
        self.dropped = 0
        agent.hal.send = self.send   # the agent talks through this node

    def send(self, buf, n=None):
        k = framing.cobs_encode_into(buf, len(buf) if n is None else n, self._wire)
        self._route(buf[2], self._wire, (k - 1) << 16, None)
        if not self._batch:
            self.flush()

    def flush(self):
        n = self._txn
        if n[1]:
            self.down.write(self._tx[1], n[1])
            n[1] = 0
            if self.ring and not self.down_dead and getattr(self.down, "hup", False):
                self.down_dead = True     # route around it: everything goes up from now on
                self.to_links = None
                self.to_host = self.up
                self._host_side = 0
        if n[0]:
            self.up.write(self._tx[0], n[0])
            n[0] = 0

    def _queue(self, side, data, span):
        """COBS bytes data[span & 0xFFFF:span >> 16] + delimiter onto port `side`'s
        transmit buffer (span packs start and end: framing.put)."""
        o = self._txn[side]
        if o > _TX - _MAX_WIRE - 1:   # no room for a longest frame: the buffer goes out first
            self.flush()
            o = 0
        self._txn[side] = framing.put(self._tx[side], o, data, span)

    def _route(self, dst, data, span, came_from):
        if self.down_dead or (self.ring and came_from is self.down and came_from is not None):
            if came_from is not self.up or dst == m.HOST or dst > self.link:
                self._queue(0, data, span)   # a ring round a dead node: the other way round
            return
        if dst == m.HOST:
            if came_from is self.to_host:   # host-bound against the flow: a node
                self.dropped += 1            # configured for the other topology
            else:
                self._queue(self._host_side, data, span)
            return
        if dst == m.BROADCAST or dst > self.link:
            if self.to_links is not None and came_from is not self.down:
                self._queue(1, data, span)
        if dst == m.BROADCAST or dst < self.link:
            if came_from is not self.up:
                self._queue(0, data, span)

    def _pump(self, port, side):
        n = port.readinto(self._rx)
        if not n:
            return 0
        rx = self._rx
        acc = self._acc[side]
        st = self._st[side]
        link = self.link
        i = 0
        k = 0
        while i < n:
            j = framing.find0(rx, i, n) if st[0] == 0 and st[1] == 0 else -1
            if j >= 0:
                # no run carried over and the frame lies whole in this read: it is
                # routed and decoded where it is (not copied first: -4k instructions a
                # frame on a Cortex-M4F)
                data = rx
                a = i
                i = j + 1
            else:
                i = framing.split_into(rx, i, n, acc, st)
                if i < 0:
                    break           # a partial run: continues with the next read
                data = acc
                a = 0
                j = st[0]
                st[0] = 0
                if st[1]:           # overlong run: no frame of ours, resync at its delimiter
                    st[1] = 0
                    self.dropped += 1
                    continue
            if j == a:
                continue            # empty run (0x00 0x00)
            k += 1
            # one COBS frame data[a:j], written out here, not in a method of its own:
            # a call costs ~700 instructions on a Cortex-M4F
            dst = framing.cobs_peek(data, a, j, 2) if j - a <= _MAX_WIRE else -1
            if dst < 0:             # malformed, or longer than any frame
                self.dropped += 1
                self.agent.decoder.bad += 1
                continue
            if self.ring and not self._ring_admits(data, a, j, dst, port):
                continue
            # a neighbour's packet (firmware/neighbours.py): taken, and passed on to the
            # links after it that overhear it too
            near = self.overhear and dst <= link and link - dst <= self.overhear \
                and framing.cobs_peek(data, a, j, 0) == m.KINEMATIC
            if near:
                if link - dst < self.overhear and port is self.up:
                    self.forwarded += 1
                    self._route(link + 1, data, a | (j << 16), port)
            elif dst != link:
                self.forwarded += 1
                self._route(dst, data, a | (j << 16), port)
            if dst == link or dst == m.BROADCAST or near:
                if self._nmine == _POOL:
                    self._deliver()     # pool full: hand over what is there first
                nf = framing.cobs_decode_into(data, a, j, self._pool[self._nmine])
                if nf < 0:
                    self.agent.decoder.bad += 1
                else:
                    self._mine_n[self._nmine] = nf
                    self._nmine += 1
        return k

    def _deliver(self):
        """Passing traffic first (cut-through: SYNC runs ahead of K), then the agent
        works through this round's own frames."""
        self.flush()
        for f in range(self._nmine):
            self.agent.receive(self._pool[f], self._mine_n[f])
        self._nmine = 0
        self.flush()

    def _ring_admits(self, data, i, j, dst, port):
        """Ring: the goal waves. False for a frame to leave alone (neither passed on nor
        taken): the host's goal batch (broadcast ASSERT, GOAL) once this tick's GOAL has been
        here. Frames from down other than that batch come only round a dead node."""
        if dst == m.HOST or (port is self.down and dst != m.BROADCAST):
            return True   # the long way round a dead node (a healthy ring has none of these)
        mt = framing.cobs_peek(data, i, j, 0) if dst == m.BROADCAST else -1
        if mt != m.GOAL and mt != m.ASSERT:
            return True   # from down only when the host routes round a dead node
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
        if self._nmine:
            self._deliver()
        elif k:
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
