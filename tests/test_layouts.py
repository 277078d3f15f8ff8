"""The shared layouts written once (firmware/layout.py): the generated files are what the
table makes (host/tools/layouts.py, `make layouts`), the table's own rules hold, and the
Thumb assembly's operands are the table's: the run splitter in assembly, run by an
interpreter of its instructions (tests/thumb_sim.py, no QEMU), keeps what the Python
reference keeps."""
import random
from array import array

import pytest

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
    # queued bytes; the pool holds the longest frame
    assert t["ROOM"] + m.MAX_FRAME + m.MAX_FRAME // 254 + 2 <= t["TX"]
    assert t["MAX_WIRE"] >= m.MAX_FRAME + 1 and t["TX"] <= 255   # a fill counted in one byte
    assert t["POOL_FRAME"] == m.MAX_FRAME
    assert t["BLK_CARRY"] == t["BLK_TAB"] + 256 and t["BLK"] == t["BLK_POOL"] + t["POOL"] * t["POOL_FRAME"]
    # the frame lengths are the wire format's
    assert t["K_FRAME"] == len(m.encode(m.KINEMATIC, 1, 2, 0, (0,) + (0.0,) * 13))
    assert t["ASSERT_FRAME"] == len(m.encode(m.ASSERT, 1, 0, 0, (0, 1, m.KIND_GRAVITY) + (0.0,) * 9))
    assert t["TORQUE_FRAME"] == len(m.encode(m.TORQUE, 1, 0, 0, (0, 0.0, 1) + (0.0,) * 6))


def test_the_thumb_run_splitter_keeps_what_the_python_reference_keeps():
    """forward.split_into's Thumb twin (its buffer's length, MAX_WIRE, an operand from
    the table) on random runs around MAX_WIRE: the same answer, run and overflow flag."""
    split = thumb_sim.load(THUMB)["_split"]
    rng = random.Random(25)
    for k in range(300):
        n = rng.randrange(1, 2 * layout.MAX_WIRE)
        data = bytes(rng.choice((0, rng.randrange(1, 256))) if rng.random() < 0.02 else rng.randrange(1, 256)
                     for _ in range(n))
        i = rng.randrange(n)
        o = rng.choice((0, rng.randrange(layout.MAX_WIRE + 1)))
        want_acc, want_st = bytearray(layout.MAX_WIRE), array("i", (o, 0))
        want = forward.split_into(data, i, n, want_acc, want_st)
        mem = thumb_sim.Memory()
        got_acc, got_st = bytearray(layout.MAX_WIRE), bytearray(array("i", (o, 0)).tobytes())
        got = thumb_sim.run(split, [mem.place(bytearray(data)), i | n << 16, mem.place(got_acc),
                                    mem.place(got_st)], mem)
        assert (got, got_acc, list(array("i", bytes(got_st)))) == (want, want_acc, list(want_st)), (k, data.hex(), i)


def test_an_offset_out_of_an_instructions_reach_is_refused():
    fn = thumb_sim.Function(__import__("ast").parse("def f(r0):\n    ldrb(r0, [r0, X])\n").body[0], {"X": 32})
    mem = thumb_sim.Memory()
    with pytest.raises(thumb_sim.AsmError, match="not encodable"):
        thumb_sim.run(fn, [mem.place(bytearray(64))], mem)
