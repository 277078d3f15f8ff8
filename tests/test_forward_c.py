"""The node's cut-through forwarder in C (firmware/native/linkcore_forward.h, linkcore.cut)
against its reference, the pure Python forward.cut_python: on random reads and blocks
both give the same answer and leave the whole block byte for byte the same. Under
CPython here (linkcore for CPython); tests/test_native.py runs the same cases under the
unix port with linkcore.mpy and tests/test_mcu.py on the emulated boards
(tests/mp/mp_framing_cases.py)."""
import random

import pytest

from bus_protocol import framing
from bus_protocol import messages as m
from firmware import layout
from firmware.accel import forward

linkcore = pytest.importorskip("linkcore", reason="linkcore for CPython is not built (make setup)")


def _frame(rng, dst):
    mtype = rng.choice((m.KINEMATIC, m.GOAL, m.ASSERT, m.TORQUE, m.SYNC))
    body = bytes([mtype, rng.randrange(256), dst]) + bytes(
        rng.choice((0, rng.randrange(256))) for _ in range(rng.randrange(1, 70)))
    return framing.cobs_encode(body) + b"\x00"


def _case(rng):
    """A read (whole frames, empty runs, a malformed or overlong run, a partial tail) and
    a block as a node leaves it between reads."""
    blk = bytearray(layout.BLK)
    dsts = [rng.randrange(1, 8) for _ in range(3)] + [255]
    for d in dsts:
        blk[layout.BLK_TAB + d] = (rng.randrange(3) | rng.randrange(3) << 2 | rng.randrange(4) << 4
                                   | rng.choice((0, layout.MINE_UP)) | rng.choice((0, layout.MINE_DOWN)))
    blk[layout.BLK_QUEUED] = rng.choice((0, rng.randrange(layout.TX - layout.MAX_WIRE)))
    blk[layout.BLK_QUEUED + 1] = rng.choice((0, rng.randrange(layout.TX - layout.MAX_WIRE)))
    blk[layout.BLK_TOTAL:layout.BLK_TOTAL + 4] = rng.randrange(1 << 32).to_bytes(4, "little")
    blk[layout.BLK_CARRY + rng.randrange(2)] = rng.random() < 0.05
    blk[layout.BLK_NMINE] = rng.choice((0, 0, rng.randrange(layout.POOL + 1)))
    blk[layout.BLK_BAD] = rng.randrange(256)
    blk[layout.BLK_RING] = rng.random() < 0.5
    blk[layout.BLK_RING_TICK] = rng.randrange(4)
    blk[layout.BLK_RING_HELD] = rng.random() < 0.5
    data = bytearray()
    for _ in range(rng.randrange(1, 8)):
        r = rng.random()
        if r < 0.75:
            f = bytearray(_frame(rng, rng.choice(dsts + [rng.randrange(256)])))
            if f[1] in (m.GOAL, m.ASSERT) and len(f) > 7 and rng.random() < 0.5:
                f[7] = rng.randrange(1, 4)   # a goal wave's tick, as the block may hold it
            data += f
        elif r < 0.85:
            data += b"\x00"
        elif r < 0.93:
            data += bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 90))) + b"\x00"
        else:
            data += bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 6)))
    i = rng.choice((0, 0, rng.randrange(len(data))))
    down = rng.randrange(2)
    return data, blk, len(data) | i << 12 | down * layout.FROM_DOWN


def test_the_node_runs_the_c_forwarder_where_linkcore_is_there():
    assert forward.cut is linkcore.cut and forward.cut_python is not linkcore.cut


def test_the_c_forwarder_leaves_the_block_as_the_python_reference():
    """3000 random reads and blocks: the same answer and the same block, every byte (the
    counters, transmit buffers, table, ring state, pool and its lengths)."""
    rng = random.Random(25)
    seen = set()
    for k in range(3000):
        data, blk, span = _case(rng)
        want_blk = bytearray(blk)
        want = forward.cut_python(bytes(data), want_blk, span)
        got_blk = bytearray(blk)
        got = linkcore.cut(bytes(data), got_blk, span)
        assert (got, got_blk) == (want, want_blk), (k, data.hex(), span)
        # a ring's GOAL tick is held by the node once the GOAL passed its check, never here
        held = layout.BLK_RING_TICK, layout.BLK_RING_HELD
        assert [want_blk[b] for b in held] == [blk[b] for b in held], (k, data.hex(), span)
        free_blk = bytearray(blk)
        free_blk[layout.BLK_RING_HELD] = 0
        forward.cut_python(bytes(data), free_blk, span)
        free_blk[layout.BLK_RING_HELD] = blk[layout.BLK_RING_HELD]
        seen.add((want >= 0, want_blk[layout.BLK_NMINE] > blk[layout.BLK_NMINE],
                  want_blk[layout.BLK_QUEUED] + want_blk[layout.BLK_QUEUED + 1] > blk[layout.BLK_QUEUED] + blk[layout.BLK_QUEUED + 1],
                  want_blk[layout.BLK_BAD] != blk[layout.BLK_BAD],
                  free_blk != want_blk))
    # whole reads and stops, frames taken, passed on, undecodable, the other goal wave's
    # copy of a held tick dropped (the same read without the held tick leaves another block)
    assert {s[:3] for s in seen} == {(a, b, c) for a in (False, True) for b in (False, True) for c in (False, True)}
    assert any(s[3] for s in seen) and any(s[4] for s in seen), seen


def test_a_span_beyond_the_read_or_a_short_block_is_refused():
    blk = bytearray(layout.BLK)
    with pytest.raises(ValueError, match="span beyond the read"):
        linkcore.cut(bytes(4), blk, 5)
    with pytest.raises(ValueError, match="span beyond the read"):
        linkcore.cut(bytes(4), blk, 4 | 2 << 24)
    with pytest.raises(ValueError, match="too short"):
        linkcore.cut(bytes(4), bytearray(layout.BLK - 1), 4)
