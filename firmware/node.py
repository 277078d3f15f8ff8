# A node's bus loop: frames in from its port(s), routed to the agent or passed on;
# the agent's frames out to the right port. Same code on boards, on MicroPython unix
# processes and in tests. Ports (firmware/hal/*) come in two shapes:
#   byte-stream port (UART):  write(buf, n) -> n  (buf[:n]; as a MicroPython stream's
#                             write(buf, max_len)) ;  readinto(buf) -> n or None  (non-blocking)
#   frame port (CAN, CAN-FD): send(frame) ;      recv() -> frame bytes or None (non-blocking)
from array import array

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

from bus_protocol import messages as m
from firmware.accel import forward
from firmware.accel.forward import cobs_decode_span as _decode, cobs_encode_at as _encode_at
from firmware.accel.forward import cobs_peek as _peek, cut as _cut, put as _put


# the buffer block's layout (firmware/layout.py) as const: MicroPython inlines them (a
# module global is a dictionary lookup per use). Transmit buffer per port: two longest
# frames (a fuller round is written in parts); decoded frames held per poll round (more
# are handed to the agent in batches): RAM after init is a target (make mcu-bench)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_MAX_WIRE = const(80)
_ROOM = const(81)
_POOL = const(8)
_POOL_FRAME = const(64)
_FROM_DOWN = const(0x1000000)
_MINE_UP = const(64)
_MINE_DOWN = const(128)
_BLK_TOTAL = const(0)
_BLK_QUEUED = const(4)
_BLK_K = const(6)
_BLK_TX = const(8)
_BLK_TX_DOWN = const(170)
_BLK_TAB = const(332)
_BLK_CARRY = const(588)
_BLK_NMINE = const(590)
_BLK_BAD = const(591)
_BLK_RING = const(592)
_BLK_RING_TICK = const(593)
_BLK_RING_HELD = const(594)
_BLK_BATCH = const(595)
_BLK_MINE_N = const(596)
_BLK_POOL = const(604)
_BLK = const(1116)
_HEADER = const(6)
_GOAL = const(4)
_ASSERT = const(5)
_BROADCAST = const(255)
# ---- end of layout ----


# The poll round's helpers are module functions, not methods: from native code a call of
# one costs ~300 instructions on a Cortex-M4F, a method's ~900 (make mcu-bench). `self`
# is the ChainNode.

@micropython.native   # (LinkAgent.receive says why)
def _flush(self):
    """ChainNode.flush: the queued frames out, down first (a ring's dead down wire is
    found here)."""
    _, b, up, down, tx_up, tx_down = self._io
    if b[_BLK_QUEUED + 1]:
        down.write(tx_down, b[_BLK_QUEUED + 1])
        b[_BLK_QUEUED + 1] = 0
        if self.ring and not self.down_dead and getattr(self.down, "hup", False):
            self.down_dead = True     # route around it: everything goes up from now on
            self.to_links = None
            self.to_host = self.up
            self._host_side = 0
            self._tables()
    if b[_BLK_QUEUED]:
        up.write(tx_up, b[_BLK_QUEUED])
        b[_BLK_QUEUED] = 0


@micropython.native   # (LinkAgent.receive says why)
def _deliver(self):
    """Passing traffic first (cut-through: SYNC runs ahead of K), then the agent
    works through this round's own frames (its sends queued: the poll round writes
    them). Flushed only where something is queued."""
    blk = self._blk
    if blk[_BLK_QUEUED] or blk[_BLK_QUEUED + 1]:
        _flush(self)
    blk[_BLK_BATCH] = 1   # (send reads it in the block it already holds)
    ring = self.ring
    for f in range(blk[_BLK_NMINE]):
        frame = self._pool[f]
        if ring and frame[2] == _BROADCAST and (frame[0] == _GOAL or frame[0] == _ASSERT):
            _goal_wave(self, frame, blk[_BLK_MINE_N + f])
        else:
            self.agent.receive(frame, blk[_BLK_MINE_N + f])
    blk[_BLK_NMINE] = 0
    blk[_BLK_BATCH] = 0


@micropython.native   # (LinkAgent.receive says why)
def _goal_wave(self, frame, n):
    """A ring's goal batch frame (broadcast ASSERT, GOAL: ChainNode) to the agent: left
    alone if this tick's GOAL has been had (the other wave's copy, come in the same round
    as the first), and a GOAL's tick held as had only once it has passed the node's check
    (firmware/auth.py): a forged GOAL for the coming tick, sent ahead of the host's, holds
    nothing, so the genuine one still passes (docs/security.md)."""
    blk = self._blk
    tick = frame[_HEADER]   # the tick's low byte
    if blk[_BLK_RING_HELD] and blk[_BLK_RING_TICK] == tick:
        return
    agent = self.agent
    if frame[0] == _ASSERT:
        agent.receive(frame, n)
        return
    g = agent.auth
    checked = g is not None and g.goal   # GOAL protected: held only if it passes
    before = g.accepted if checked else 0
    agent.receive(frame, n)
    if not checked or g.accepted != before:
        blk[_BLK_RING_TICK] = tick
        blk[_BLK_RING_HELD] = 1


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
    ignored. A ring routes around a dead node (experiments/FAULTS.md): a node whose down wire is
    gone (its write fails) sends everything up instead; frames for the host or for links
    beyond that come from down are passed up (the long way, through the host, which puts
    them into the tip's end), and on the far side frames for base-ward links that come from
    down are taken and passed up. With `overhear` = d a KINEMATIC frame for a link also
    reaches the d links after it (their neighbour checks and bridges: firmware/neighbours.py);
    K_N for the host (address 0) is nobody's neighbour packet and goes on up.
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
        # Everything preallocated: a poll round allocates nothing (no bytes(), slices or
        # += of per-round buffers: benchmarks/README.md, firmware design figures; the
        # viper loops of firmware/accel/cobs_native.py move the bytes).
        # the transmit buffers, the routing tables and the cut-through counters in one
        # block (forward.cut's layout: fewer buffer arguments per call)
        if bufsize > 0xFFF:
            raise ValueError("bufsize %d > 4095 (forward.cut's span)" % bufsize)
        self._rx = bytearray(bufsize)
        self._blk = bytearray(_BLK)
        mv = memoryview(self._blk)
        self._acc = (bytearray(_MAX_WIRE), bytearray(_MAX_WIRE))   # the COBS run so far, per port
        self._st = (array("i", (0, 0)), array("i", (0, 0)))      # its length, overlong flag
        self._tx_up = mv[_BLK_TX:_BLK_TX_DOWN]
        self._txv = (self._tx_up, mv[_BLK_TX_DOWN:_BLK_TAB])
        # dst -> the one port forward.cut passes a frame to untouched (1 up, 2 down),
        # per port it came from (bits 0-1 up, 2-3 down), and whether it is this node's
        # own, decoded into the pool (bit 6 from up, 7 from down); neither: _pump looks at
        # it (_tables); [BLK_CARRY - BLK_TAB + side]: a run without its delimiter carried over from the
        # last read
        self._cut_tab = mv[_BLK_TAB:]
        self._forwarded = 0   # frames passed on by _pump (forward.cut counts its own)
        # this round's own frames, decoded (by forward.cut, or _pump), for the agent
        self._pool = [mv[_BLK_POOL + f * _POOL_FRAME:_BLK_POOL + (f + 1) * _POOL_FRAME]
                      for f in range(_POOL)]
        self.dropped = 0
        # poll's and _flush's, in one attribute load (an attribute load is ~100 instructions
        # on a Cortex-M4F, a tuple's item a few)
        self._io = (self._rx, self._blk, up, down) + self._txv
        self._tables()
        agent.hal.send = self.send   # the agent talks through this node
        agent.on_wire(self._blk)     # and queues its hot frames here in C (linkcore)

    def __getattr__(self, name):
        """The counts kept in the block, read as attributes: `forwarded`, the frames passed
        on (cut through or routed by _pump); `goal_tick`, on a ring the tick (low byte)
        whose GOAL has passed this node, -1 before any. __getattr__, not properties: a
        class with a property makes every attribute store of its instances look the
        class up first (MicroPython's objtype.c; make mcu-bench: ~800 instructions a
        store on a Cortex-M4F); __getattr__ is called only for a name not held."""
        if name == "forwarded":
            b = self._blk
            return self._forwarded + (b[_BLK_TOTAL] | b[_BLK_TOTAL + 1] << 8 | b[_BLK_TOTAL + 2] << 16 | b[_BLK_TOTAL + 3] << 24)
        if name == "goal_tick":
            b = self._blk
            return b[_BLK_RING_TICK] if b[_BLK_RING_HELD] else -1
        raise AttributeError(name)

    def _tables(self):
        """forward.cut's routing table, from _route: a frame that only passes through
        (not this node's, not broadcast, not overheard, not dropped) is cut through; a
        frame for this node, and one overheard from up, is decoded into the pool by cut
        too (not on a ring that overhears), and a broadcast both (what _pump would do with them; on a ring cut also
        stands in for _ring_admits); bits 4-5 say where the agent's frames go (send)."""
        # the links that overhear: never the host (address 0), whose K_N passes link 1
        # on a plain chain
        near = max(1, self.link - self.overhear) if self.overhear else self.link + 1
        # the node's own frames are cut's too (on a ring it checks the goal waves as
        # _ring_admits does), except on a ring that overhears: _pump's (a dead node's
        # neighbours route round it)
        mine = not (self.overhear and self.ring)
        self._blk[_BLK_RING] = 1 if mine and self.ring else 0
        # an overheard packet from up (a proximal neighbour's input, passed on by it) is
        # taken, and passed on down to the links after this one that overhear it too (as
        # _pump does); from down it is _pump's
        on = self._route(self.link + 1, None, 0, self.up) if self.overhear and mine else 0
        t = self._cut_tab
        for dst in range(256):
            v = self._route(dst, None, 0, None) << 4
            passing = dst != self.link and dst != m.BROADCAST and (dst < near or dst > self.link)
            if mine and (dst == self.link or dst == m.BROADCAST):
                v |= _MINE_UP | _MINE_DOWN
            elif mine and near <= dst < self.link:
                v |= _MINE_UP
                if self.link - dst < self.overhear and (on == 1 or on == 2):
                    v |= on
            if passing or (mine and dst == m.BROADCAST):
                for side in (0, 1):
                    s = self._route(dst, None, 0, self.down if side else self.up)
                    if s == 1 or s == 2:
                        v |= s << 2 * side
            t[dst] = v

    @micropython.native   # (LinkAgent.receive says why)
    def send(self, buf, n=None):
        """The agent's frame, COBS-encoded straight into the transmit buffer of the port(s)
        it goes to, not encoded aside and copied over (benchmarks/README.md, firmware
        design figures)."""
        if n is None:
            n = len(buf)
        b = self._blk
        s = self._cut_tab[buf[2]] >> 4   # _route's answer for the agent's frames (_tables)
        if s & 2:
            if b[_BLK_QUEUED + 1] > _ROOM:
                _flush(self)
            b[_BLK_QUEUED + 1] = _encode_at(buf, n, b, _BLK_TX_DOWN + b[_BLK_QUEUED + 1]) - _BLK_TX_DOWN
        if s & 1:
            if b[_BLK_QUEUED] > _ROOM:
                _flush(self)
            b[_BLK_QUEUED] = _encode_at(buf, n, b, _BLK_TX + b[_BLK_QUEUED]) - _BLK_TX
        if not b[_BLK_BATCH]:
            _flush(self)

    flush = _flush

    def _queue(self, side, data, span):
        """COBS bytes data[span & 0xFFFF:span >> 16] + delimiter onto port `side`'s
        transmit buffer (span packs start and end: forward.put)."""
        o = self._blk[_BLK_QUEUED + side]
        if o > _ROOM:   # no room for a longest frame: the buffer goes out first
            _flush(self)
            o = 0
        self._blk[_BLK_QUEUED + side] = _put(self._txv[side], o, data, span)

    def _route(self, dst, data, span, came_from):
        """Queue a frame for dst that came from port came_from (None: the agent's) on
        the port(s) it goes to; returns them: 1 up, 2 down, 3 both, 0 none, -1 dropped
        as misrouted. With data None only says where (_tables)."""
        if self.down_dead or (self.ring and came_from is self.down and came_from is not None):
            # a ring round a dead node: the other way round
            s = 1 if came_from is not self.up or dst == m.HOST or dst > self.link else 0
        elif dst == m.HOST:
            if came_from is self.to_host:   # host-bound against the flow: a node
                if data is not None:         # configured for the other topology
                    self.dropped += 1
                return -1
            s = self._host_side + 1
        else:
            s = 0
            if dst == m.BROADCAST or dst > self.link:
                if self.to_links is not None and came_from is not self.down:
                    s = 2
            if dst == m.BROADCAST or dst < self.link:
                if came_from is not self.up:
                    s |= 1
        if data is not None:
            if s & 2:
                self._queue(1, data, span)
            if s & 1:
                self._queue(0, data, span)
        return s

    def _pump(self, r, n, side):
        """The read of n bytes in rx from port `side` (0 up, 1 down) where forward.cut
        stopped (r = its result < 0): the frame there taken apart here, then cut-through
        again. Returns the frames handled."""
        rx = self._rx
        blk = self._blk
        st = self._st[side]
        tab = self._cut_tab
        carried = (_BLK_CARRY - _BLK_TAB) + side
        port = self.down if side else self.up
        span = n | (_FROM_DOWN if side else 0)
        link = self.link
        k = blk[_BLK_K] | blk[_BLK_K + 1] << 8    # frames cut through so far
        while r < 0:
            r = -1 - r
            i = r & 0xFFF
            if tab[carried]:        # a run carried over from the last read
                i = forward.split_into(rx, i, n, self._acc[side], st)
                if i < 0:
                    return k    # still no delimiter
                tab[carried] = 0
                data = self._acc[side]
                a = 0
                j = st[0]
                st[0] = 0
                if st[1]:       # overlong run: no frame of ours, resync at its delimiter
                    st[1] = 0
                    self.dropped += 1
                    j = 0       # (skipped below as if empty)
            else:
                j = r >> 12     # its delimiter, found by cut
                if j == 0xFFF:  # none: a partial run, continued with the next read
                    forward.split_into(rx, i, n, self._acc[side], st)
                    tab[carried] = 1
                    return k
                # the frame lies whole in this read: it is routed and decoded where it
                # is, not copied first
                data = rx
                a = i
                i = j + 1
            if j > a:           # not an empty run (0x00 0x00)
                k += 1
                # one COBS frame data[a:j], written out here, not in a method of its
                # own: a call costs ~700 instructions on a Cortex-M4F
                dst = _peek(data, a, j, 2) if j - a <= _MAX_WIRE else -1
                if dst < 0:     # malformed, or longer than any frame
                    self.dropped += 1
                    self.agent.decoder.bad += 1
                elif not self.ring or self._ring_admits(data, a, j, dst, port):
                    # a neighbour's packet (firmware/neighbours.py): taken, and passed on
                    # to the links after it that overhear it too
                    near = self.overhear and 0 < dst <= link and link - dst <= self.overhear \
                        and _peek(data, a, j, 0) == m.KINEMATIC
                    if near:
                        if link - dst < self.overhear and port is self.up:
                            self._forwarded += 1
                            self._route(link + 1, data, a | (j << 16), port)
                    elif dst != link:
                        self._forwarded += 1
                        self._route(dst, data, a | (j << 16), port)
                    if dst == link or dst == m.BROADCAST or near:
                        f = blk[_BLK_NMINE]
                        if f == _POOL:
                            _deliver(self)     # pool full: hand over what is there first
                            f = 0
                        nf = _decode(data, a | j << 16, self._pool[f], _POOL_FRAME)
                        if nf < 0:
                            self.agent.decoder.bad += 1
                        else:
                            blk[_BLK_MINE_N + f] = nf
                            blk[_BLK_NMINE] = f + 1
            if i >= n:
                break
            r = _cut(rx, blk, span | i << 12)
            k += r if r >= 0 else blk[_BLK_K] | blk[_BLK_K + 1] << 8
        return k

    def _ring_admits(self, data, i, j, dst, port):
        """Ring: the goal waves. False for a frame to leave alone (neither passed on nor
        taken): the host's goal batch (broadcast ASSERT, GOAL) once this tick's GOAL has been
        here. Frames from down other than that batch come only round a dead node."""
        if dst == m.HOST or (port is self.down and dst != m.BROADCAST):
            return True   # the long way round a dead node (a healthy ring has none of these)
        mt = forward.cobs_peek(data, i, j, 0) if dst == m.BROADCAST else -1
        if mt != m.GOAL and mt != m.ASSERT:
            return True   # from down only when the host routes round a dead node
        # the batch's tick (low byte), not the agent's: a goal whose tick's SYNC and K_0
        # were lost is the first the agent hears of that tick (it syncs on it)
        tick = forward.cobs_peek(data, i, j, m.HEADER_SIZE)
        blk = self._blk   # the tick held where forward.cut holds it
        if blk[_BLK_RING_HELD] and blk[_BLK_RING_TICK] == tick:
            return False          # the other wave got here first
        return True   # (a GOAL's tick is held once it has passed the node's check: _goal_wave)

    @micropython.native   # (LinkAgent.receive says why)
    def poll(self, cut=_cut):
        """Move whatever has arrived; returns the number of frames handled. Bounded:
        at most one read per port per call. Written out per port, with forward.cut
        first: a frame only passing by costs a read, one cut and one write (a method
        call costs ~700 instructions on a Cortex-M4F). `cut` is a default argument, a
        local, and the buffers and ports come in one tuple: a global or an attribute is a
        lookup per use (make mcu-bench: forward, idle)."""
        rx, blk, up, down, tx_up, _ = self._io
        k = 0
        n = up.readinto(rx)
        if n:
            k = cut(rx, blk, n)
            if k < 0:
                k = self._pump(k, n, 0)
            if blk[_BLK_RING] and blk[_BLK_NMINE]:
                # a ring: the goal wave from up checked (a GOAL's tick held only once it
                # has passed: _goal_wave) before the other wave's copies are read from down
                _deliver(self)
        if down is not None:
            n = down.readinto(rx)
            if n:
                r = cut(rx, blk, n | _FROM_DOWN)
                k += r if r >= 0 else self._pump(r, n, 1)
        if k:
            if blk[_BLK_BAD]:   # frames for the node that cut could not decode
                self.agent.decoder.bad += blk[_BLK_BAD]
                blk[_BLK_BAD] = 0
            if blk[_BLK_NMINE]:
                _deliver(self)
            if blk[_BLK_QUEUED + 1]:
                _flush(self)
            else:   # flush written out for the usual case: the up port alone
                q = blk[_BLK_QUEUED]
                if q:
                    up.write(tx_up, q)
                    blk[_BLK_QUEUED] = 0
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
