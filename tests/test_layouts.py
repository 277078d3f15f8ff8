"""The shared layouts written once (firmware/layout.py): the generated files are what the
table makes (host/tools/layouts.py, `make layouts`), the table's own rules hold, and the
Thumb assembly's offsets are the table's: the node's forwarder `cut` in assembly, run
by an interpreter of its instructions (tests/thumb_sim.py, no QEMU), leaves the buffer
block as the Python reference does."""
import random

import pytest

from bus_protocol import framing
from firmware.accel import forward
from bus_protocol import messages as m
from firmware import layout
from host.tools import layouts
from tests import thumb_sim
from tests.conftest import REPO

THUMB = REPO / "firmware" / "accel" / "thumb.py"


def test_every_generated_file_is_what_the_table_makes():
    assert layouts.stale() == [], "run `make layouts`"


def test_a_changed_number_in_a_generated_block_is_found(tmp_path):
    src = (REPO / "firmware" / "cycle.py").read_text()
    line = "S_Q = const(%d)" % layout.S_Q
    assert line in src
    bad = tmp_path / "cycle.py"
    bad.write_text(src.replace(line, "S_Q = const(%d)" % (layout.S_Q - 1)))
    assert layouts.py_file(bad) == src


def test_a_block_holds_the_names_its_module_uses_and_no_other(tmp_path):
    mod = tmp_path / "mod.py"
    mod.write_text("from x import RUN\n%s\n%s\n"
                   "def f(S, blk):\n    return S[S_Q] + blk[_BLK_NMINE] + RUN + obj.S_QD  # S_GOAL\n"
                   % (layouts.BEGIN, layouts.END))
    text = layouts.py_file(mod)
    assert "S_Q = const(%d)\n_BLK_NMINE = const(%d)\n" % (layout.S_Q, layout.BLK_NMINE) in text
    assert "RUN = " not in text and "S_QD = " not in text and "S_GOAL = " not in text


def test_the_table_is_consistent():
    names = [n for _, entries in layout.GROUPS for n, _, _ in entries]
    assert len(names) == len(set(names))
    c_names = [layout.C_PREFIX.get(n, "") + n for n in names]
    assert len(c_names) == len(set(c_names))
    # each state array's slots lie inside it
    for group, total in ((layout.S, "SLOTS"), (layout.I, "INTS"), (layout.N, "NS"), (layout.V, "VS")):
        offsets = [v for n, v, _ in group if n != total]
        assert offsets == sorted(offsets) and offsets[-1] < layout.table()[total]
    t = layout.table()
    # the buffer block: a longest frame, COBS-encoded with its delimiter, fits after ROOM
    # queued bytes; the pool holds the longest frame; the assembly's multiply is a shift
    assert t["ROOM"] + m.MAX_FRAME + m.MAX_FRAME // 254 + 2 <= t["TX"]
    assert t["MAX_WIRE"] >= m.MAX_FRAME + 1 and t["TX"] <= 255   # a fill counted in one byte
    assert t["POOL_FRAME"] == m.MAX_FRAME == 1 << t["POOL_FRAME_SHIFT"]
    assert t["BLK_CARRY"] == t["BLK_TAB"] + 256 and t["BLK"] == t["BLK_POOL"] + t["POOL"] * t["POOL_FRAME"]
    # the frame lengths are the wire format's
    assert t["K_FRAME"] == len(m.encode(m.KINEMATIC, 1, 2, 0, (0,) + (0.0,) * 13))
    assert t["ASSERT_FRAME"] == len(m.encode(m.ASSERT, 1, 0, 0, (0, 1, m.KIND_GRAVITY) + (0.0,) * 9))
    assert t["TORQUE_FRAME"] == len(m.encode(m.TORQUE, 1, 0, 0, (0, 0.0, 1) + (0.0,) * 6))


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


def _meaningful(blk):
    """What the node reads of the block after a cut (not the assembly's scratch, nor the
    bytes beyond a transmit buffer's fill or a pool frame's length)."""
    L = layout
    out = [bytes(blk[:L.BLK_DATA]), bytes(blk[L.BLK_TAB:L.BLK_MINE_N])]
    for side in range(2):
        base = L.BLK_TX + side * L.TX
        out.append(bytes(blk[base:base + blk[L.BLK_QUEUED + side]]))
    for f in range(blk[L.BLK_NMINE]):
        n = blk[L.BLK_MINE_N + f]
        out.append((n, bytes(blk[L.BLK_POOL + f * L.POOL_FRAME:][:n])))
    return out


@pytest.mark.slow
def test_the_thumb_forwarder_leaves_the_block_as_the_python_reference():
    """forward.cut's Thumb twin on 3000 random reads and blocks: the same answer and the
    same block (the offsets it reads and writes are the table's, and encodable)."""
    cut = thumb_sim.load(THUMB)["cut"]
    rng = random.Random(25)
    seen = set()
    for k in range(3000):
        data, blk, span = _case(rng)
        want_blk = bytearray(blk)
        want = forward.cut(bytes(data), want_blk, span)
        mem = thumb_sim.Memory()
        got_blk = bytearray(blk)
        got = thumb_sim.run(cut, [mem.place(bytearray(data)), mem.place(got_blk), span], mem)
        assert (got, _meaningful(got_blk)) == (want, _meaningful(want_blk)), (k, data.hex(), span)
        seen.add((want >= 0, want_blk[layout.BLK_NMINE] > blk[layout.BLK_NMINE],
                  want_blk[layout.BLK_QUEUED] + want_blk[layout.BLK_QUEUED + 1] > blk[layout.BLK_QUEUED] + blk[layout.BLK_QUEUED + 1]))
    assert len(seen) == 8, seen   # whole reads and stops, frames taken, frames passed on


def test_an_offset_out_of_an_instructions_reach_is_refused():
    fn = thumb_sim.Function(__import__("ast").parse("def f(r0):\n    ldrb(r0, [r0, X])\n").body[0], {"X": 32})
    mem = thumb_sim.Memory()
    with pytest.raises(thumb_sim.AsmError, match="not encodable"):
        thumb_sim.run(fn, [mem.place(bytearray(64))], mem)
