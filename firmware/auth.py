# A node's check of protected frames (bus_protocol/SPEC.md §9, docs/security.md): a
# COMMAND, CONFIG or GOAL addressed to the node (or broadcast) reaches the agent only
# if its MAC checks under the arm's key and its freshness value is newer than the last
# one accepted on its stream; the rest is dropped and counted by reason, never acted on.
# The highest block accepted is kept in a file, so a node that restarts accepts nothing
# of a block it has seen before (the host opens a new one: host/tools/keys.py).
import json
from binascii import unhexlify
from array import array

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

from bus_protocol import messages as m
from bus_protocol import states
from bus_protocol.mac import Hmac
from firmware import linkstate

# rejection reasons, the order of STATUS.auth_rejected (SPEC.md §4)
R_MAC = 0      # the MAC does not check (forged, or a key other than the arm's)
R_REPLAY = 1   # the MAC checks at an older freshness value: a replay (or a block from before a restart)
R_PLAIN = 2    # a protected type without its trailer (or too short for one)
REASONS = ("mac", "replay", "plain")

UNAUTHENTICATED = "unauthenticated"

_OVERHEAD = const(8)    # messages.OVERHEAD, HEADER_SIZE, AUTH_TRAILER, COUNTER_BITS, BROADCAST,
_HEADER = const(6)      # GOAL, COMMAND, CONFIG as const (MicroPython inlines them; a module
_TRAILER = const(8)     # attribute is a lookup per use); tests/test_auth.py checks they agree
_COUNTER_BITS = const(24)
_BROADCAST = const(0xFF)
_GOAL = const(0x04)
_COMMAND = const(0x09)
_CONFIG = const(0x08)


def _streams():
    # per protected type (GOAL, COMMAND, CONFIG), unicast and broadcast: the last FV
    # accepted, its high 32 bits and its low 32 bits in two halves of 16 (a board's small
    # int has 31 bits: a 32-bit value would be a long integer, allocated); -1: none
    return array("i", [0] * 6), array("i", [-1] * 6), array("i", [-1] * 6)


class BlockFile:
    """The highest block this node has accepted, in a file (a board's flash): read at
    boot, written when it rises (once per host start or node restart, not per frame)."""

    def __init__(self, path):
        self.path = path

    def load(self):
        try:
            with open(self.path) as f:
                return int(f.read())
        except (OSError, ValueError):
            return -1

    def save(self, block):
        with open(self.path, "w") as f:
            f.write("%d" % block)


class MemBlock:
    """The same in memory (a simulated node's flash, kept across its restarts)."""

    def __init__(self):
        self.block = -1

    def load(self):
        return self.block

    def save(self, block):
        self.block = block


def native():
    """linkcore where it carries the MAC (firmware/native/linkcore_mac.h: the key's padded
    states made once, two SHA-256 compressions a GOAL, nothing allocated), else None: the
    MAC in Python (bus_protocol/mac.py, the reference). linkstate.linkcore None (a test's
    pure-Python run) means None here too."""
    core = linkstate.linkcore
    return core if core is not None and hasattr(core, "mac_check") else None


class Guard:
    """Stands in front of agent.receive (guard() installs it). `key`: the arm's key
    (bytes); `floor`: the lowest block accepted (the host's at provisioning); `store`:
    BlockFile / MemBlock / None."""

    def __init__(self, agent, key, floor=0, store=None, goal=True):
        self.agent = agent
        self._take = agent.receive
        self._goal = goal   # False: GOAL travels plain ([bus] auth = "commands")
        self.goal = goal    # (what a ring node reads: firmware/node.py _goal_wave)
        self._hm = Hmac(key)
        core = native()
        self._ks = None     # linkcore: the key's padded states, its check and trailer cut
        self._check = self._strip = None
        if core is not None:
            self._ks = bytearray(64)   # linkcore_mac.h MAC_STATES
            core.mac_key(key, self._ks)
            self._check = core.mac_check
            self._strip = core.strip
        self.link = agent.link
        self.rejected = [0] * len(REASONS)   # by reason (STATUS carries them mod 2^16)
        self.accepted = 0
        self._store = store
        seen = store.load() if store is not None else -1
        block = max(floor, seen + 1)
        # protected payload sizes by type (CONFIG's varies)
        self._size = [m.payload_size(t) + _TRAILER if 0 < t < len(m.NAMES) + 1 and t != m.CONFIG and t != m.LOG else 0
                      for t in range(len(m.NAMES) + 1)]
        self._saved = seen
        first = block << m.COUNTER_BITS      # the lowest FV accepted, minus one:
        hi, lo = first >> 32, (first & 0xFFFFFFFF) - 1
        self._hi, self._lo_h, self._lo_l = _streams()
        for s in range(len(self._hi)):
            self._hi[s] = hi
            self._lo_h[s] = lo >> 16
            self._lo_l[s] = lo & 0xFFFF
        self._buf = bytearray(m.MAX_FRAME)

    @micropython.native   # (LinkAgent.receive says why: ~2x fewer instructions on a Cortex-M4F)
    def receive(self, frame, n=None):
        if n is None:
            n = len(frame)
        if n < _OVERHEAD:
            return self._take(frame, n)
        t = frame[0]
        if not ((t == _GOAL and self._goal) or t == _COMMAND or t == _CONFIG):
            return self._take(frame, n)   # not a command type (the decoder judges the rest)
        # whatever its src byte says: anyone can write a src, only the host holds the key
        dst = frame[2]
        if dst != self.link and dst != _BROADCAST:
            return self._take(frame, n)   # another node's: the agent ignores it
        end = n - 2
        if frame[5] + _HEADER != end or m.crc16(frame, end) != (frame[end] | (frame[end + 1] << 8)):
            return self._take(frame, n)   # noise: the decoder counts it bad
        plen = end - _HEADER
        if t == _CONFIG:
            if plen < 4 + _TRAILER:
                self.rejected[R_PLAIN] += 1
                return None
            s = 4
        elif plen != self._size[t]:
            self.rejected[R_PLAIN] += 1
            return None
        else:
            s = 0 if t == _GOAL else 2
        if dst == _BROADCAST:
            s += 1
        i = end - _TRAILER   # fv_low (SPEC.md §9), then the MAC
        low_h = frame[i + 2] | frame[i + 3] << 8
        low_l = frame[i] | frame[i + 1] << 8
        last_hi = self._hi[s]
        h = self._lo_h[s]   # messages.fv_rebuild: fv_low > the last one's?
        hi = last_hi if low_h > h or (low_h == h and low_l > self._lo_l[s]) else last_hi + 1
        check = self._check   # (written out: a method call is ~900 instructions on a Cortex-M4F)
        if not (check(self._ks, frame, n, hi) if check is not None else m.mac_ok(frame, n, self._hm, hi)):
            # an old freshness value under the right key: a replay (bounded: two more MACs)
            replay = False
            for h in (last_hi, last_hi - 1):
                if h != hi and h >= 0 and self._mac_ok(frame, n, h):
                    replay = True
                    break
            self.rejected[R_REPLAY if replay else R_MAC] += 1
            return None
        block = (hi << (32 - _COUNTER_BITS)) | (low_h >> (_COUNTER_BITS - 16))
        if self._store is not None and block > self._saved:
            self._store.save(block)   # before the frame is acted on: a restart comes back above it
            self._saved = block
        self._hi[s] = hi
        self._lo_h[s] = low_h
        self._lo_l[s] = low_l
        self.accepted += 1
        strip = self._strip
        if strip is not None:
            return self._take(self._buf, strip(frame, n, self._buf))
        return self._take(self._buf, m.strip_into(self._buf, frame, n))

    def _mac_ok(self, frame, n, hi):
        """The MAC of the protected frame[:n] checks with FV high bits hi."""
        check = self._check
        if check is not None:
            return check(self._ks, frame, n, hi)
        return m.mac_ok(frame, n, self._hm, hi)

    def rewind(self):
        """Every stream as if nothing had been accepted (benchmarks/mp_node_cycle.py
        replays its inputs; never on a node)."""
        for s in range(len(self._hi)):
            self._lo_h[s] = -1
            self._lo_l[s] = -1
            self._hi[s] = 0

    def counts(self):
        """STATUS.auth_rejected: (mac, replay, plain)."""
        r = self.rejected
        return (r[0] & 0xFFFF, r[1] & 0xFFFF, r[2] & 0xFFFF)


def settings(cfg):
    """A link config's `auth` table -> (key bytes or None, floor, block file path or
    None, unauthenticated?, GOAL protected?). ValueError on a malformed table."""
    a = cfg.get("auth")
    if a == UNAUTHENTICATED:
        return None, 0, None, True, False
    if a is None:
        return None, 0, None, False, True
    if not isinstance(a, dict):
        raise ValueError("auth: a table or %r" % UNAUTHENTICATED)
    key = a.get("key")
    if key is None and a.get("key_file"):   # a board's key beside its config (linkteam flash)
        try:
            with open(a["key_file"]) as f:
                key = f.read().strip()
        except OSError:
            key = None   # no key: the node refuses to run
    if key is not None:
        try:
            key = unhexlify(key) if isinstance(key, str) else bytes(key)
        except (ValueError, TypeError):
            raise ValueError("auth.key: hex digits")
        if len(key) < 16:
            raise ValueError("auth.key: at least 16 bytes")
    return key, int(a.get("floor", 0)), a.get("block_file"), False, bool(a.get("goal", True))


def guard(agent, cfg, store=None):
    """Put the check in front of `agent` as its config says (firmware/main.py, the
    in-process runner): a key -> a Guard; "unauthenticated" -> none; neither -> the
    node refuses to run (F_NO_KEY latched: braked, reported in STATUS). -> the Guard or None.
    `store`: where the highest block lives (default: the config's block_file, if any)."""
    key, floor, path, plain, goal = settings(cfg)
    agent.auth = None
    if plain:
        return None
    if key is None:
        agent.safety.trip(states.F_NO_KEY, "no key: provision one (linkteam flash) or set auth = \"unauthenticated\"")
        agent.receive = _Refuse(agent).receive
        return None
    if store is None and path:
        store = BlockFile(path)
    g = Guard(agent, key, floor, store, goal)
    agent.receive = g.receive   # the instance's attribute: every caller of agent.receive
    agent.auth = g
    return g


class _Refuse:
    """A node without a key acts on no host command (the rest, e.g. PING's STATUS path,
    is not a command: it is not taken either)."""

    def __init__(self, agent):
        self._take = agent.receive

    def receive(self, frame, n=None):
        if n is None:
            n = len(frame)
        if n > 0 and (frame[0] == _COMMAND or frame[0] == _CONFIG or frame[0] == _GOAL):
            return None
        return self._take(frame, n)


def redacted(cfg):
    """A link config with its key left out (what may be shown or logged)."""
    c = dict(cfg)
    a = c.get("auth")
    if isinstance(a, dict) and "key" in a:
        a = dict(a)
        a["key"] = "<redacted>"
        c["auth"] = a
    return c


def dumps_safe(cfg):
    """redacted(cfg) as JSON."""
    return json.dumps(redacted(cfg))
