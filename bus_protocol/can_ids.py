# CAN / CAN-FD addressing, FD padding and classic-CAN fragmentation (docs/design.md §1, §6;
# SPEC.md "CAN"). Runs unchanged under CPython and MicroPython; never touches a port.
#
# 29-bit extended id:  priority(3) << 26 | mtype(8) << 16 | src(8) << 8 | dst(8)
# Lower id wins arbitration, so SYNC beats the control-cycle traffic, which beats
# status/config/log (docs/design.md §6: the bus budget must fit inside one control period).
from bus_protocol import messages as m

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# Priority per type id (index = mtype); None = unknown type.
PRIORITY = (None, 0, 2, 1, 1, 2, 2, 4, 6, 3, 7, 5, 4, 5)
#         SYNC=0, JOINT_STATE=2, KINEMATIC=1, GOAL=1, ASSERT=2, TORQUE=2,
#         STATUS=4, CONFIG=6, COMMAND=3, LOG=7, IDENT=5, ESTIMATE=4, TIMING=5

ID_MASK = const(0x1FFFFFFF)


def can_id(mtype, src, dst):
    if not 0 < mtype < len(PRIORITY):
        raise ValueError("unknown message type")
    if not (0 <= src <= 255 and 0 <= dst <= 255):
        raise ValueError("bad address")
    return (PRIORITY[mtype] << 26) | (mtype << 16) | (src << 8) | dst


def parse_can_id(cid):
    """-> (priority, mtype, src, dst). Never raises on an int; ignores bits >= 29."""
    return ((cid >> 26) & 7, (cid >> 16) & 0xFF, (cid >> 8) & 0xFF, cid & 0xFF)


# --- CAN-FD: whole logical frame, zero-padded to a valid FD data length ----------
FD_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)
_PAD = bytes(64)


def fd_length(n):
    """Smallest valid CAN-FD data length >= n (ValueError if n > 64)."""
    for k in FD_LENGTHS:
        if k >= n:
            return k
    raise ValueError("frame > 64 bytes")


def fd_payload(frame):
    """CAN-FD data field for one logical frame (frame + zero padding)."""
    k = fd_length(len(frame))
    if k == len(frame):
        return bytes(frame)
    return bytes(frame) + _PAD[:k - len(frame)]


def strip_padding(data):
    """Receiver side of fd_payload: the logical frame, using its own length byte.
    Never raises; returns data unchanged if it is too short to tell (the strict
    Decoder then reports the error)."""
    if len(data) < m.OVERHEAD:
        return data
    n = m.OVERHEAD + data[5]
    if n >= len(data):
        return data
    return memoryview(data)[:n]


# --- classic CAN (8-byte data): fragmentation -------------------------------------
# Each fragment: 1 control byte (index << 4 | count - 1) + up to 7 frame bytes.
# All fragments of one frame share the frame's CAN id (so they arbitrate alike and
# the receiver keys partial frames by id). A 64-byte frame needs 10 fragments.
FRAG_DATA = const(7)
MAX_FRAGMENTS = const(10)
_MAX_BYTES = 70   # MAX_FRAGMENTS * FRAG_DATA


def fragment(frame):
    n = len(frame)
    count = (n + FRAG_DATA - 1) // FRAG_DATA
    if count == 0 or count > MAX_FRAGMENTS:
        raise ValueError("frame length must be 1..70")
    out = []
    for i in range(count):
        out.append(bytes(((i << 4) | (count - 1),)) + bytes(frame[i * FRAG_DATA:(i + 1) * FRAG_DATA]))
    return out


class Reassembler:
    """Rebuilds fragmented frames. push(can_id, data) -> frame bytes or None.

    Fragments must arrive in order, 0..count-1, with every non-final fragment full
    (8 bytes). Anything else (missing, out-of-order, duplicate, bad control byte,
    empty/oversize data) discards the affected partial frame and the stray fragment;
    self.dropped counts every fragment thrown away. At most max_partial frames are
    in progress; starting one more evicts the oldest (its fragments count as
    dropped, and self.evicted += 1). Buffers come from a preallocated pool.
    Never raises on garbage.
    """

    def __init__(self, max_partial=32):
        self.max_partial = max_partial
        self._pool = [bytearray(_MAX_BYTES) for _ in range(max_partial)]
        self._part = {}     # can_id -> [count, next_index, nbytes, stamp, buf]
        self._stamp = 0
        self.dropped = 0
        self.evicted = 0
        self.frames = 0

    def _discard(self, key):
        p = self._part.pop(key)
        self.dropped += p[1]          # fragments already accepted
        self._pool.append(p[4])

    def reset(self):
        for key in list(self._part):
            self._pool.append(self._part.pop(key)[4])

    def push(self, cid, data):
        n = len(data)
        if n < 1 or n > 8:
            self.dropped += 1
            return None
        ctl = data[0]
        idx = ctl >> 4
        count = (ctl & 0x0F) + 1
        k = n - 1
        last = idx == count - 1
        if (count > MAX_FRAGMENTS or idx >= count or k == 0
                or (not last and k != FRAG_DATA)):
            self.dropped += 1
            if cid in self._part:
                self._discard(cid)
            return None
        p = self._part.get(cid)
        if idx == 0:
            if p is not None:         # previous frame on this id never finished
                self._discard(cid)
            if count == 1:            # unfragmented frame: fast path
                self.frames += 1
                return bytes(data[1:])
            if len(self._part) >= self.max_partial:
                oldest = None
                for key in self._part:
                    if oldest is None or self._part[key][3] < self._part[oldest][3]:
                        oldest = key
                self._discard(oldest)
                self.evicted += 1
            buf = self._pool.pop()
            buf[0:k] = data[1:]
            self._stamp += 1
            self._part[cid] = [count, 1, k, self._stamp, buf]
            return None
        if p is None or p[0] != count or p[1] != idx:
            self.dropped += 1         # missing / out-of-order / duplicate
            if p is not None:
                self._discard(cid)
            return None
        buf = p[4]
        buf[p[2]:p[2] + k] = data[1:]
        p[2] += k
        p[1] += 1
        if not last:
            return None
        frame = bytes(buf[:p[2]])
        del self._part[cid]
        self._pool.append(buf)
        self.frames += 1
        return frame
