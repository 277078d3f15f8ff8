"""An arm's key and the host's freshness values (bus_protocol/SPEC.md §9, docs/security.md).

The key: 32 random bytes, hex, in a file of mode 0600 (`linkteam keys create|rotate`);
a run without --key makes an ephemeral one, never written where the run is kept. The
freshness value (FV) of every protected frame the host sends is block << 24 | counter,
a counter per (type, destination) stream (SecOC's freshness per data id); the block is
kept beside the key file (KEY.fv) and moves on at every host start, so nothing the host
sent before a restart is fresh after it, and whenever a node says it refused genuine
frames as replays (it restarted: firmware/auth.py).
"""
import os
import tempfile

from bus_protocol import messages as m
from bus_protocol.mac import Hmac

KEY_BYTES = 32
MAC_NAME = "HMAC-SHA256/%d" % (8 * m.MAC_BYTES)


class KeyError_(Exception):
    """A key file that cannot be used (missing, malformed, readable by others)."""


def _write_private(path, text):
    """text into path, mode 0600 from the start (written aside, then renamed over)."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".key-", dir=d)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def create(path, rotate=False):
    """A new random key in path (mode 0600); an existing one is replaced only when
    rotating. -> path."""
    if os.path.exists(path) and not rotate:
        raise KeyError_("%s exists (linkteam keys rotate replaces it)" % path)
    if rotate and not os.path.exists(path):
        raise KeyError_("%s: no key to rotate (linkteam keys create)" % path)
    _write_private(path, os.urandom(KEY_BYTES).hex() + "\n")
    return path


def load(path):
    """The key in path (bytes). KeyError_ if the file is missing, not hex, too short, or
    readable or writable by group or others."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise KeyError_("key file %s: %s" % (path, e.strerror))
    if st.st_mode & 0o077:
        raise KeyError_("key file %s is mode %o: other users can read it (chmod 600)" % (path, st.st_mode & 0o777))
    with open(path) as f:
        text = f.read().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise KeyError_("key file %s: not hex digits" % path)
    if len(key) < 16:
        raise KeyError_("key file %s: %d bytes, at least 16" % (path, len(key)))
    return key


def fingerprint(key):
    """A name for a key that reveals nothing of it: the first 4 bytes of HMAC(key, "id")."""
    return Hmac(key).mac(b"linkteam key id")[:4].hex()


class BlockState:
    """The host's block, kept in a file (None: in memory, a run's ephemeral key)."""

    def __init__(self, path=None):
        self.path = path

    def start(self):
        """The block this host start sends in: one above the last one used, saved first."""
        block = self.next()
        self.save(block)
        return block

    def next(self):
        """The block the next host start sends in (nothing saved)."""
        if self.path and os.path.exists(self.path):
            with open(self.path) as f:
                try:
                    return int(f.read().strip() or -1) + 1
                except ValueError:
                    raise KeyError_("freshness state %s is not a number" % self.path)
        return 0

    def save(self, block):
        if self.path:
            _write_private(self.path, "%d\n" % block)


class Signer:
    """Protects the host's COMMAND, CONFIG and GOAL frames (messages.protect_into).
    `types`: the protected types; `state`: BlockState."""

    def __init__(self, key, state=None, types=m.PROTECTED):
        self._hm = Hmac(key)
        self.state = state or BlockState()
        self.types = frozenset(types)
        self.block = self.state.start()
        self.counters = {}
        self.signed = 0
        self._buf = bytearray(m.MAX_FRAME + m.AUTH_TRAILER)

    def new_block(self):
        """Every stream starts again in the next block (saved before it is used)."""
        self.block += 1
        self.state.save(self.block)
        self.counters = {}

    def sign(self, frame):
        """The frame as sent: protected if it is one of the host's protected types."""
        if frame[0] not in self.types or frame[1] != m.HOST:
            return frame
        stream = (frame[0], frame[2])
        c = self.counters.get(stream, 0)
        if c >> m.COUNTER_BITS:
            self.new_block()
            c = 0
        self.counters[stream] = c + 1
        fv = self.block << m.COUNTER_BITS | c
        n = len(frame)
        buf = self._buf
        buf[:n] = frame
        self.signed += 1
        return bytes(buf[:m.protect_into(buf, n, self._hm, fv >> 32, fv & 0xFFFFFFFF)])


class RunAuth:
    """A run's authentication: the key (the file's, or ephemeral), the host's signer and
    what each node is given. `mode` (scenario [bus] auth): "on", "commands" (GOAL plain:
    COMMAND and CONFIG only) or "unauthenticated"."""

    def __init__(self, mode="on", key_file=None):
        self.mode = mode
        self.key_file = key_file
        self._tmp = None
        self.stores = {}   # in-process nodes' highest blocks (firmware/auth.MemBlock), by index
        if mode == "unauthenticated":
            self.key = None
            self.signer = None
            return
        if key_file:
            self.key = load(key_file)
            state = BlockState(key_file + ".fv")
        else:
            self.key = os.urandom(KEY_BYTES)
            state = BlockState()
        types = m.PROTECTED if mode == "on" else (m.COMMAND, m.CONFIG)
        self.signer = Signer(self.key, state, types)
        self.floor = self.signer.block
        self.goal = mode == "on"

    def node_auth(self):
        """A node's `auth` config (firmware/auth.py settings) for in-process agents: the
        key itself (it never leaves this process)."""
        if self.key is None:
            return "unauthenticated"
        return {"key": self.key.hex(), "floor": self.floor, "goal": self.goal}

    def node_auth_file(self, link):
        """The same for node process `link`: the key in a private file outside the run
        directory (removed by close()), named by the config, and its highest block in a
        file beside it (its flash, kept across its restarts)."""
        if self.key is None:
            return "unauthenticated"
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="linkteam-key-")
            _write_private(os.path.join(self._tmp, "key"), self.key.hex())
        return {"key_file": os.path.join(self._tmp, "key"), "floor": self.floor, "goal": self.goal,
                "block_file": os.path.join(self._tmp, "block%02d" % link)}

    def close(self):
        if self._tmp is not None:
            for f in os.listdir(self._tmp):
                os.unlink(os.path.join(self._tmp, f))
            os.rmdir(self._tmp)
            self._tmp = None

    def summary(self, status):
        """summary.json `auth`: the mode, the MAC, whose key, and every node's rejections
        by reason (from their last STATUS)."""
        if self.key is None:
            return {"mode": "unauthenticated"}
        from firmware.auth import REASONS
        total = dict((r, 0) for r in REASONS)
        for v in status.values():
            for k, r in enumerate(REASONS):
                total[r] += v[7 + k] if len(v) > 7 + k else 0
        return {"mode": "authenticated", "mac": MAC_NAME, "key": "file" if self.key_file else "ephemeral",
                "key_id": fingerprint(self.key), "protected": sorted(m.NAMES[t] for t in self.signer.types),
                "frames_signed": self.signer.signed, "auth_rejected": total}
