# The node's byte loops (firmware/node.py): its cut-through forwarder `cut` on the
# buffer block, and the COBS loops it routes and queues frames with (peek, decode into a
# pool frame, encode at an offset, find0, put, split_into). Plain Python here (the
# reference, CPython and ports without native code). Where the native core linkcore is
# there, `cut` is its C (firmware/native/linkcore_forward.h); where MicroPython compiles
# them, the COBS loops in Thumb assembly (thumb.py: ARM boards, 5-10x viper) or viper
# (cobs_native.py) take their names at import. The COBS codec itself is the wire
# format's (bus_protocol/framing.py, SPEC.md "UART").
from bus_protocol.framing import cobs_decode_at, cobs_decode_into, cobs_encode_at  # noqa: F401

from firmware.hal import const, micropython


def cobs_decode_span(data, span, out, at):
    """cobs_decode_at(data, i, j, out, o, cap) with span = i | j << 16 and at = cap | o << 16
    (data[i:j] into out[o:o + cap]): the node's form, one assembly call on ARM boards
    (thumb.py: four arguments at most; the wrapper's len() and span cost ~2k instructions
    a frame on a Cortex-M4F, make mcu-bench)."""
    return cobs_decode_at(data, span & 0xFFFF, span >> 16, out, at >> 16, at & 0xFFFF)


def cobs_peek(data, i, j, k):
    """Byte k of the frame COBS-encoded in data[i:j], without decoding it; -1 if the
    frame is shorter or malformed. A node routes by it (cut-through forwarding)."""
    out = 0
    while i < j:
        code = data[i]
        if code == 0:
            return -1
        run = code - 1
        if k < out + run:
            p = i + 1 + k - out
            return data[p] if p < j else -1
        out += run
        i += code
        if code < 0xFF:
            if k == out:
                return 0 if i < j else -1
            out += 1
    return -1


def split_into(data, i, n, acc, st):
    """Move data[i:n] up to its next 0x00 delimiter onto the run being collected in
    acc[:st[0]] (acc: a bytearray of MAX_WIRE; st = array('i', [length, overflow])).
    Bytes beyond MAX_WIRE are not kept and set st[1] (an overlong run: the frame is
    dropped at its delimiter). Returns the index after the delimiter, or -1 if
    data[i:n] holds none (the run continues in the next read). Allocates nothing."""
    o = st[0]
    cap = MAX_WIRE
    while i < n:
        b = data[i]
        i += 1
        if b == 0:
            st[0] = o
            return i
        if o < cap:
            acc[o] = b
            o += 1
        else:
            st[1] = 1
    st[0] = o
    return -1


def find0(data, i, n):
    """Index of the first 0x00 in data[i:n], or -1."""
    while i < n:
        if data[i] == 0:
            return i
        i += 1
    return -1


def put(out, o, data, span):
    """data[i:n] and a 0x00 delimiter into out at o, with span = i | n << 16 (four
    arguments: the most an asm_thumb function takes, thumb.py); the caller has checked
    that len(out) >= o + n - i + 1. Returns the new end. Allocates nothing."""
    i = span & 0xFFFF
    n = span >> 16
    while i < n:
        out[o] = data[i]
        o += 1
        i += 1
    out[o] = 0
    return o + 1


# The node's cut-through block (firmware/node.py): one bytearray holding what cut and
# its C twin work on besides the read itself (one buffer argument per call), laid out in
# firmware/layout.py (BLK_*). Its routing table: dst -> where a frame for it from up
# goes (bits 0-1) and from down (bits 2-3): 1 pass up, 2 pass down, 0 not passed on;
# MINE_UP, MINE_DOWN: the node's own, decoded into the pool; a frame with neither is left
# to the node (_pump: broadcast on a ring, overheard); bits 4-5: the node's own use.
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
MAX_WIRE = const(80)
TX = const(162)
ROOM = const(81)
POOL = const(8)
POOL_FRAME = const(64)
BLK_TOTAL = const(0)
BLK_QUEUED = const(4)
BLK_K = const(6)
BLK_TX = const(8)
BLK_TAB = const(332)
BLK_CARRY = const(588)
BLK_NMINE = const(590)
BLK_BAD = const(591)
BLK_RING = const(592)
BLK_RING_TICK = const(593)
BLK_RING_HELD = const(594)
BLK_MINE_N = const(596)
BLK_POOL = const(604)
# ---- end of layout ----


@micropython.native   # where linkcore is missing: ~2x the bytecode's speed (benchmarks/README.md)
def cut(data, blk, span):
    """Cut-through forwarding of the read data[i:n], span = n | i << 12 (| FROM_DOWN):
    its whole frames are passed on without decoding, as long as the block's table names
    one port for their dst (peeked in the COBS header) and the port they came from, and
    the node's own (its table bit) are COBS-decoded into the pool (a frame that is both,
    a broadcast, is passed on and decoded). Stops at the first frame that needs more
    (neither in the table: overheard, a ring's broadcast), at a malformed, short (< 4 COBS
    bytes) or overlong (> MAX_WIRE) run, at a transmit buffer without room for a longest
    frame, at a full pool, or at a run without its delimiter; does nothing while a run is
    carried over. Empty runs are skipped; a frame for the node that does not decode is
    counted in blk[BLK_BAD]. With blk[BLK_RING] set, a broadcast GOAL or
    ASSERT (a ring's goal waves, firmware/node.py _ring_admits) of the tick whose GOAL has
    passed is skipped (handled: neither passed on nor taken); one shorter than 8 COBS bytes
    stops it. A GOAL's tick is held by the node once the GOAL has passed its check
    (node.py _goal_wave), never here. Returns the number k of frames handled when the whole
    read is done, else -1 - (i | j << 12): the index it stopped at and that run's
    delimiter (0xFFF: none in the read), k in blk[BLK_K:BLK_K + 2]. Allocates nothing."""
    n = span & 0xFFF
    i = span >> 12 & 0xFFF
    down = span >> 24
    k = 0       # frames handled
    passed = 0  # of which passed on
    while i < n and not blk[BLK_CARRY + down]:
        j = find0(data, i, n)
        if j == i:
            i += 1
            continue
        if j < 0 or j - i > MAX_WIRE or j - i < 4:
            break
        dst = cobs_peek(data, i, j, 2)
        if dst == 255 and blk[BLK_RING]:   # a ring's goal waves
            mt = cobs_peek(data, i, j, 0)
            if mt == 4 or mt == 5:   # GOAL, ASSERT (messages.py)
                if j - i < 8:
                    break
                tick = cobs_peek(data, i, j, 6)   # the tick's low byte
                if blk[BLK_RING_HELD] and blk[BLK_RING_TICK] == tick:
                    k += 1   # the other wave got here first
                    i = j + 1
                    continue
        v = blk[BLK_TAB + dst]
        side = v >> 2 * down & 3
        mine = v >> 6 + down & 1
        if not side and not mine:
            break
        if side and blk[BLK_QUEUED - 1 + side] > ROOM:
            break
        f = blk[BLK_NMINE]
        if mine and f == POOL:
            break
        if side:
            base = BLK_TX + (side - 1) * TX
            q = BLK_QUEUED - 1 + side
            blk[q] = put(blk, base + blk[q], data, i | j << 16) - base
            passed += 1
        if mine:
            r = cobs_decode_span(data, i | j << 16, blk, POOL_FRAME | (BLK_POOL + f * POOL_FRAME) << 16)
            if r < 0:
                blk[BLK_BAD] = (blk[BLK_BAD] + 1) & 0xFF
            else:
                blk[BLK_MINE_N + f] = r
                blk[BLK_NMINE] = f + 1
        k += 1
        i = j + 1
    c = passed
    for b in range(BLK_TOTAL, BLK_TOTAL + 4):   # the total += passed, byte by byte (no int beyond 30 bits: no allocation)
        c += blk[b]
        blk[b] = c & 0xFF
        c >>= 8
    blk[BLK_K] = k & 0xFF
    blk[BLK_K + 1] = k >> 8 & 0xFF
    if i == n and not blk[BLK_CARRY + down]:
        return k
    j = find0(data, i, n)
    return -1 - (i | (0xFFF if j < 0 else j) << 12)


try:  # ARM boards: the byte loops in Thumb assembly (thumb.py), 5-10x viper
    from firmware.accel.thumb import (cobs_decode_into, cobs_decode_span, cobs_encode_at,  # noqa: F811
                                      cobs_peek, find0, put, split_into)
except Exception:   # no inline assembler (CPython, the unix port on x64, RISC-V)
    try:  # MicroPython with native code: the same loops in viper (cobs_native.py)
        from firmware.accel.cobs_native import (cobs_decode_at, cobs_decode_into,  # noqa: F811
                                                cobs_encode_at, cobs_peek, find0, put, split_into)
    except Exception:   # ImportError, SyntaxError; a test fake of `micropython`
        pass

# cut in C where the native core is there (linkcore: a board's linkcore.mpy, CPython's
# extension; firmware/native/linkcore_forward.h), the Python above where it is not
cut_python = cut   # the reference, held equal to the C by tests/test_forward_c.py
from firmware.linkstate import linkcore as _core   # noqa: E402  (its layout checked there)
if _core is not None and hasattr(_core, "cut"):
    cut = _core.cut   # noqa: F811
del _core
