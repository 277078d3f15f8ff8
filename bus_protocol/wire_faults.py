# Bus faults on an emulated medium (scenario [[fault]] frame_loss, corrupt, latency;
# sim_host/fault_injection.py), applied where a frame enters the medium: in processes mode by every
# node's unix-port bus port (firmware/hal/unix_ports.py) and the host's transport
# (host/transports/faulty.py). Runs unchanged under CPython and MicroPython.
#
# Semantics as in-process (sim_host/fault_injection.FaultSet.on_wire): a frame faces each fault once,
# on "its" wire: the wire into its destination link, or out of its source for frames to
# the host or to everyone (0 is the host's own port); a fault with no link hits every wire.
# Each draw is a hash of the frame's identity (tick, type, addresses, copy), the fault and
# the run's seed, not the next number of a stream: the node processes and the host draw
# in no fixed order between them, and a lockstep run still loses the same frames each time.
import math

from bus_protocol import messages as m

LOSS = 1
CORRUPT = 2
LATENCY = 3
KIND_CODES = {"frame_loss": LOSS, "corrupt": CORRUPT, "latency": LATENCY}
_M32 = 0xFFFFFFFF


def _fmix(h):
    """MurmurHash3's 32-bit finaliser: every input bit moves every output bit."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def active(spec, tick):
    """A fault's schedule in ticks: [kind, link, start, end (-1: none), period (0: steady), duty, ...]."""
    if tick < spec[2] or 0 <= spec[3] <= tick:
        return False
    return not spec[4] or (tick - spec[2]) % spec[4] < spec[5]


class WireFaults:
    """specs: [[kind, link (-1: every wire), start, end, period, duty, a, b(, seed)], ...] in
    ticks, a = rate | ber | delay_ms, b = jitter_ms. apply(tick, frame, n) -> -1 (lost) or the
    added delay in us; a corrupted frame's bits are flipped in place (frame: bytearray).
    Counts lost, corrupted and delayed frames."""

    def __init__(self, specs, seed=0):
        self.specs = [list(s) for s in specs]
        self.seed = seed & _M32
        self.lost = 0
        self.corrupted = 0
        self.delayed = 0
        self._last = None   # the last frame's identity, and how many copies of it in a row
        self._copy = 0

    def _identity(self, tick, frame, n):
        """A hash of the frame's identity: the tick, type, addresses, length (an assertion's
        origin and kind, a log's first bytes) and which of identical copies sent back to back
        it is (kinematic_copies), not its sequence number or values: a node that bridges a
        packet a little later in one run than in another still loses the same frames after it."""
        a = frame[0] | frame[1] << 8 | frame[2] << 16 | (n & 0xFF) << 24
        b = 0
        if (frame[0] == m.ASSERT or frame[0] == m.LOG) and n >= 12:
            b = frame[8] | frame[9] << 8 | frame[10] << 16 | frame[11] << 24
        ident = (tick, a, b)
        if ident == self._last:
            self._copy += 1
        else:
            self._last = ident
            self._copy = 0
        h = _fmix(self.seed ^ (tick & _M32))
        h = _fmix(h ^ a)
        return _fmix(h ^ b ^ (self._copy * 0x632BE5AB & _M32))

    def apply(self, tick, frame, n):
        if n < m.HEADER_SIZE:
            return 0
        dst = frame[2]
        wire = frame[1] if dst == m.HOST or dst == m.BROADCAST else dst
        ident = self._identity(tick, frame, n)
        delay = 0.0
        for k in range(len(self.specs)):
            s = self.specs[k]
            if (s[1] >= 0 and s[1] != wire) or not active(s, tick):
                continue
            # the fault's own seed (a [[fault]] `seed`) draws another pattern
            h = _fmix(ident ^ ((k + 1) * 0x9E3779B1 & _M32) ^ ((s[8] if len(s) > 8 else 0) & _M32))
            if s[0] == LOSS:
                if h / 4294967296.0 < s[6]:
                    self.lost += 1
                    return -1
            elif s[0] == CORRUPT:
                if self._flip(frame, n, s[6], h):
                    self.corrupted += 1
            else:
                delay += s[6] + s[7] * (_fmix(h ^ 0x5BD1E995) / 4294967296.0)
                self.delayed += 1
        return int(delay * 1000.0)

    def _flip(self, frame, n, ber, h):
        """Each of the n * 8 bits flips with probability ber (the gaps between flips are
        geometric: a draw per flip, not per bit). -> number of bits flipped."""
        if ber <= 0.0:
            return 0
        nbits = 8 * n
        scale = math.log(1.0 - ber) if ber < 1.0 else 0.0
        bit = -1
        flips = 0
        while True:
            h = _fmix(h ^ 0x27D4EB2F)
            if scale:
                u = (h + 1) / 4294967297.0   # in (0, 1)
                bit += 1 + int(math.log(u) / scale)
            else:
                bit += 1
            if bit >= nbits:
                return flips
            frame[bit >> 3] ^= 1 << (bit & 7)
            flips += 1
