# A node's check of protected frames (bus_protocol/SPEC.md §9, docs/security.md): a
# COMMAND, CONFIG or GOAL addressed to the node (or broadcast) reaches the agent only
# if its MAC checks under the arm's key and its freshness value is newer than the last
# one accepted on its stream; the rest is dropped and counted by reason, never acted on.
# The highest block accepted is kept in a file, so a node that restarts accepts nothing
# of a block it has seen before (the host opens a new one: host/tools/keys.py).
import json
from binascii import unhexlify
from array import array

from bus_protocol import messages as m
from bus_protocol import states
from bus_protocol.mac import Hmac

# rejection reasons, the order of STATUS.auth_rejected (SPEC.md §4)
R_MAC = 0      # the MAC does not check (forged, or a key other than the arm's)
R_REPLAY = 1   # the MAC checks at an older freshness value: a replay (or a block from before a restart)
R_PLAIN = 2    # a protected type without its trailer (or too short for one)
REASONS = ("mac", "replay", "plain")

UNAUTHENTICATED = "unauthenticated"


def _streams():
    # per protected type, unicast and broadcast: the last FV accepted (high, low)
    return array("i", [0] * (2 * len(m.PROTECTED))), [-1] * (2 * len(m.PROTECTED))


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


class Guard:
    """Stands in front of agent.receive (guard() installs it). `key`: the arm's key
    (bytes); `floor`: the lowest block accepted (the host's at provisioning); `store`:
    BlockFile / MemBlock / None."""

    def __init__(self, agent, key, floor=0, store=None):
        self.agent = agent
        self._take = agent.receive
        self._hm = Hmac(key)
        self.link = agent.link
        self.rejected = array("H", [0] * len(REASONS))   # by reason, mod 2^16 (STATUS)
        self.accepted = 0
        self._store = store
        seen = store.load() if store is not None else -1
        self._block = max(floor, seen + 1)
        self._saved = seen
        first = self._block << m.COUNTER_BITS      # the lowest FV accepted, minus one:
        hi, lo = first >> 32, (first & 0xFFFFFFFF) - 1
        self._hi, self._lo = _streams()
        for s in range(len(self._lo)):
            self._hi[s] = hi
            self._lo[s] = lo
        self._buf = bytearray(m.MAX_FRAME)

    def receive(self, frame, n=None):
        if n is None:
            n = len(frame)
        t = frame[0] if n else 0
        if n < m.OVERHEAD or frame[1] != m.HOST or not (t == m.GOAL or t == m.COMMAND or t == m.CONFIG):
            return self._take(frame, n)   # not a host command (the decoder judges the rest)
        dst = frame[2]
        if dst != self.link and dst != m.BROADCAST:
            return self._take(frame, n)   # another node's: the agent ignores it
        if not m.frame_ok(frame, n):
            return self._take(frame, n)   # noise: the decoder counts it bad
        plen = frame[5]
        fixed = m.payload_size(t) if t != m.CONFIG else 4
        if plen < fixed + m.AUTH_TRAILER or (t != m.CONFIG and plen != fixed + m.AUTH_TRAILER):
            self.rejected[R_PLAIN] += 1
            return None
        s = 2 * m.PROTECTED.index(t) + (dst == m.BROADCAST)
        low = m.fv_low(frame, n)
        last_hi = self._hi[s]
        last_lo = self._lo[s]
        hi = m.fv_rebuild(last_hi, last_lo, low)
        if not m.mac_ok(frame, n, self._hm, hi):
            # an old freshness value under the right key: a replay (bounded: two more MACs)
            replay = False
            for h in (last_hi, last_hi - 1):
                if h != hi and h >= 0 and m.mac_ok(frame, n, self._hm, h):
                    replay = True
                    break
            self.rejected[R_REPLAY if replay else R_MAC] += 1
            return None
        block = (hi << (32 - m.COUNTER_BITS)) | (low >> m.COUNTER_BITS)
        if block > self._block:
            self._block = block
        if self._store is not None and block > self._saved:
            self._store.save(block)   # before the frame is acted on: a restart comes back above it
            self._saved = block
        self._hi[s] = hi
        self._lo[s] = low
        self.accepted += 1
        return self._take(self._buf, m.strip_into(self._buf, frame, n))

    def counts(self):
        """STATUS.auth_rejected: (mac, replay, plain)."""
        r = self.rejected
        return (r[0], r[1], r[2])


def settings(cfg):
    """A link config's `auth` table -> (key bytes or None, floor, block file path or
    None, unauthenticated?). ValueError on a malformed table."""
    a = cfg.get("auth")
    if a == UNAUTHENTICATED:
        return None, 0, None, True
    if a is None:
        return None, 0, None, False
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
    return key, int(a.get("floor", 0)), a.get("block_file"), False


def guard(agent, cfg, store=None):
    """Put the check in front of `agent` as its config says (firmware/main.py, the
    in-process runner): a key -> a Guard; "unauthenticated" -> none; neither -> the
    node refuses to run (F_NO_KEY latched: braked, reported in STATUS). -> the Guard or None.
    `store`: where the highest block lives (default: the config's block_file, if any)."""
    key, floor, path, plain = settings(cfg)
    agent.auth = None
    if plain:
        return None
    if key is None:
        agent.safety.trip(states.F_NO_KEY, "no key: provision one (linkteam flash) or set auth = \"unauthenticated\"")
        agent.receive = _Refuse(agent).receive
        return None
    if store is None and path:
        store = BlockFile(path)
    g = Guard(agent, key, floor, store)
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
        if n > 0 and frame[0] in m.PROTECTED:
            return None
        return self._take(frame, n)


def dumps_safe(cfg):
    """A link config as JSON with its key left out (what may be logged)."""
    c = dict(cfg)
    a = c.get("auth")
    if isinstance(a, dict) and "key" in a:
        a = dict(a)
        a["key"] = "<redacted>"
        c["auth"] = a
    return json.dumps(c)
