"""bus_protocol: codec, CRC, COBS, CAN ids/FD/fragmentation, fuzz under CPython and
MicroPython, and mpy-cross compilation (docs/design.md §1, §2, §6; bus_protocol/SPEC.md)."""
import importlib.util
import math
import random
import struct
import subprocess
from pathlib import Path

import pytest

from bus_protocol import can_ids, framing
from bus_protocol import messages as m
from tests.conftest import MICROPYTHON, MPY_CROSS, needs, run_micropython, same_under_both

ROOT = Path(__file__).resolve().parent.parent
FUZZ_SCRIPT = ROOT / "tests" / "mp" / "mp_fuzz_decoder.py"



# One sample per type; floats are float32-exact so decoded values compare with ==.
SAMPLES = {
    m.SYNC: (123456,),
    m.JOINT_STATE: (7, 0.5, -1.25, 1, 0.125, 0.0, -0.25, 1.5, 2.0, -3.0),
    m.KINEMATIC: (8, 1.0, 0.0, 0.0, 0.0, 0.25, -0.5, 0.75, 0.0, 0.0, 0.125, 0.0, 0.0, 3.5),
    m.GOAL: (9, 3, 0.5, 0.25, 0.125, 10.0, -20.0, 0.0, 0.0, 0.0, 1.5),
    m.ASSERT: (10, 4, m.KIND_RMOA, 0.1875, 0.0, 0.3125, -1.0, 2.0, 0.0, 0.0, 0.0, 0.0),
    m.TORQUE: (11, 2.5, 1, 1.0, 0.5, 0.25, 0.0, 0.0, 0.75),
    m.STATUS: (12, 2, 0x8001, 17, 4321, 3, 65535, 1, 2, 65535),
    m.CONFIG: (0, 200, b'{"dh": [0, 0, 0.3, 0]}\x00\xff'),
    m.COMMAND: (m.CMD_PING, 0.5),
    m.LOG: (b"hello from link 3",),
    m.IDENT: (13, -2.5, 0.0, 0.0, 1.0, 0.5, 0.25, 0.0, 1.0, -2.0, 0.0, 0.0, 0.0, 0.75),
    m.ESTIMATE: (14, 7.5, 0.75, -0.375, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0),
    m.TIMING: (15, 800, 812, 65535, 0, 1, 2, 3, 4, 5, 6, 7, 8) + tuple(range(40000, 40012)),
}


def _load_fuzz():
    spec = importlib.util.spec_from_file_location("mp_fuzz_decoder", FUZZ_SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- messages ---------------------------------------------------------------------

def test_constants_and_names():
    assert (m.HOST, m.BROADCAST) == (0, 0xFF)
    assert sorted(m.NAMES) == list(range(1, 14))
    assert set(SAMPLES) == set(m.NAMES)
    assert (m.CMD_BRAKE, m.CMD_RELEASE, m.CMD_RESET, m.CMD_PING, m.CMD_CONFIG_APPLY) == (1, 2, 3, 4, 5)
    assert (m.KIND_RMOA, m.KIND_GRAVITY) == (1, 2)
    errs = (m.ERR_SHORT, m.ERR_LENGTH, m.ERR_CRC, m.ERR_TYPE, m.ERR_LAYOUT)
    assert len(set(errs)) == 5 and all(e in m.ERR_NAMES for e in errs)


def test_frame_sizes():
    expect = {m.SYNC: 4, m.JOINT_STATE: 37, m.KINEMATIC: 56, m.GOAL: 41, m.ASSERT: 42,
              m.TORQUE: 33, m.STATUS: 23, m.CONFIG: 56, m.COMMAND: 5, m.LOG: 56,
              m.IDENT: 56, m.ESTIMATE: 44, m.TIMING: 52}
    for t, size in expect.items():
        assert m.payload_size(t) == size
        assert m.frame_size(t) == size + 8 <= 64
    with pytest.raises(ValueError):
        m.payload_size(0x42)


@pytest.mark.parametrize("mtype", sorted(SAMPLES))
def test_round_trip_every_type(mtype):
    vals = SAMPLES[mtype]
    frame = m.encode(mtype, m.HOST, 3, 0x1234, vals)
    assert len(frame) == 8 + (m.payload_size(mtype) if mtype not in (m.CONFIG, m.LOG)
                              else len(frame) - 8)
    assert struct.unpack_from("<BBBHB", frame) == (mtype, 0, 3, 0x1234, len(frame) - 8)
    dec = m.Decoder()
    got = dec.decode(frame)
    assert got[:4] == (mtype, 0, 3, 0x1234)
    assert got[4] == vals
    assert (dec.good, dec.bad, dec.last_error) == (1, 0, m.ERR_NONE)
    # bytearray / memoryview inputs and an explicit n inside a bigger buffer
    buf = bytearray(80)
    n = m.encode_into(buf, mtype, 5, m.BROADCAST, 70000, vals)   # seq wraps mod 2**16
    assert dec.decode(memoryview(buf), n)[:4] == (mtype, 5, 0xFF, 70000 & 0xFFFF)
    assert dec.decode(bytearray(buf[:n]))[4] == vals


def test_round_trip_float32_tolerance():
    rnd = random.Random(1)
    vals = (99,) + tuple(rnd.uniform(-10, 10) for _ in range(13))
    got = m.Decoder().decode(m.encode(m.KINEMATIC, 1, 2, 0, vals))[4]
    assert got[0] == 99
    for a, b in zip(got[1:], vals[1:]):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def test_encode_rejects_sender_bugs():
    buf = bytearray(64)
    with pytest.raises(ValueError):
        m.encode_into(buf, 0x42, 0, 1, 0, ())
    with pytest.raises(ValueError):
        m.encode_into(buf, m.SYNC, 0, 1, 0, (1, 2))
    with pytest.raises(ValueError):
        m.encode_into(buf, m.CONFIG, 0, 1, 0, (0, 60, bytes(53)))
    with pytest.raises(ValueError):
        m.encode_into(buf, m.LOG, 0, 1, 0, (bytes(57),))
    with pytest.raises(ValueError):
        m.encode_into(buf, m.SYNC, 0, 1, 0, (-1,))
    with pytest.raises(ValueError):
        m.encode_into(buf, m.SYNC, 256, 1, 0, (1,))
    assert m.encode_into(buf, m.CONFIG, 0, 1, 0, (0, 52, bytes(52))) == 64
    assert m.encode_into(buf, m.LOG, 0, 1, 0, (b"",)) == 8


def test_crc_check_value_and_both_paths():
    assert m.crc16(b"123456789") == 0x29B1
    assert m.crc16_table(b"123456789") == 0x29B1
    assert m.crc16(b"") == m.crc16_table(b"") == 0xFFFF
    rnd = random.Random(2)
    for _ in range(500):
        d = bytes(rnd.randrange(256) for _ in range(rnd.randrange(70)))
        n = rnd.randrange(len(d) + 1)
        assert m.crc16(d) == m.crc16_table(d)
        assert m.crc16(d, n) == m.crc16_table(d, n) == m.crc16(d[:n])
        assert m.crc16(bytearray(d), n) == m.crc16_table(memoryview(d), n)


def test_cpython_fast_codec_matches_the_portable_one():
    """The CPython fast paths messages.py selects at import against the portable
    encoder and decoder MicroPython runs (test_micropython_encodes_cpython_decodes ties
    those to MicroPython): the same bytes, the same results, the same errors, on every
    type, on random values and on mutated frames."""
    assert m.encode_into is not m._encode_into_portable, "CPython should select the fast path"
    rnd = random.Random(6)
    b1, b2 = bytearray(64), bytearray(64)
    for t, vals in SAMPLES.items():
        for seq in (0, 1, 0xFFFF, 70000):
            n1 = m.encode_into(b1, t, 2, 255, seq, vals)
            n2 = m._encode_into_portable(b2, t, 2, 255, seq, vals)
            assert (n1, b1[:n1]) == (n2, b2[:n2]), t
            assert m.encode(t, 2, 255, seq, vals) == bytes(b2[:n2]), t
        vals = tuple(rnd.uniform(-1e3, 1e3) if isinstance(v, float) else v for v in vals)   # random floats
        assert m.encode(t, 1, 2, 3, vals) == bytes(b2[:m._encode_into_portable(b2, t, 1, 2, 3, vals)])
    bad = [(0x42, 0, 1, 0, ()), (0, 0, 1, 0, ()), (-1, 0, 1, 0, (1,)), (m.SYNC, 0, 1, 0, (1, 2)),
           (m.SYNC, 0, 1, 0, (-1,)), (m.SYNC, 256, 1, 0, (1,)), (m.SYNC, 0, -1, 0, (1,)),
           (m.KINEMATIC, 0, 1, 0, (1, None) + (0.0,) * 12), (m.LOG, 0, 1, 0, (bytes(57),))]
    # a float beyond float32's range goes out as inf of its sign, as C and MicroPython round it
    for big in (1e39, -1e300):
        f = m.encode(m.TORQUE, 0, 1, 0, (1, big, 1) + (0.0,) * 6)
        assert f == bytes(b1[:m._encode_into_portable(b1, m.TORQUE, 0, 1, 0, (1, big, 1) + (0.0,) * 6)])
        assert m.Decoder().decode(f)[4][1] == (float("inf") if big > 0 else -float("inf"))
    for args in bad:
        errors = []
        for enc in (m.encode_into, m._encode_into_portable, lambda buf, *a: m.encode(*a)):
            with pytest.raises(ValueError) as e:
                enc(bytearray(64), *args)
            errors.append(str(e.value))
        assert errors[0] == errors[1] == errors[2], args
    frames = [m.encode(t, 0, 3, 5, v) for t, v in SAMPLES.items()]
    fast, slow = m.Decoder(), m.Decoder()
    for i in range(20000):
        f = bytearray(rnd.choice(frames))
        r = rnd.randrange(6)
        if r == 1:
            f[rnd.randrange(len(f))] ^= 1 << rnd.randrange(8)
        elif r == 2:
            del f[rnd.randrange(len(f)):]
        elif r == 3:
            f += bytes(rnd.randrange(1, 4))
        elif r == 4:   # another type or length, with a right CRC
            f[rnd.choice((0, 5))] = rnd.randrange(256)
            f = _fix_crc(f) if len(f) >= 2 else f
        f = bytes(f)
        m._last[0] = None
        got = fast.decode(f)
        m._last[0] = None
        assert got == m._decode_portable(slow, f), (i, f.hex())
        counters = [(d.good, d.bad, d.errors, d.last_error) for d in (fast, slow)]
        assert counters[0] == counters[1], i
    assert fast.good > 5000 and fast.bad > 5000
    again = fast.decode(frames[0]), fast.decode(frames[0])   # the one-frame cache: counted each time
    assert again[0] == again[1] == (m.SYNC, 0, 3, 5, SAMPLES[m.SYNC]) and fast.good == slow.good + 2


def _fix_crc(fr):
    c = m.crc16(fr, len(fr) - 2)
    fr[-2:] = bytes((c & 0xFF, c >> 8))
    return fr


def test_decoder_error_kinds():
    dec = m.Decoder()
    good = bytearray(m.encode(m.SYNC, 0, 1, 1, (5,)))
    cases = [
        (b"", m.ERR_SHORT),
        (good[:7], m.ERR_SHORT),
        (good + b"\x00", m.ERR_LENGTH),       # trailing padding is refused (see strip_padding)
        (good[:-1], m.ERR_LENGTH),
        (bytes(good[:-1]) + bytes([good[-1] ^ 1]), m.ERR_CRC),
        (_fix_crc(bytearray([0x42]) + good[1:]), m.ERR_TYPE),
        (_fix_crc(bytearray([0]) + good[1:]), m.ERR_TYPE),
        (_fix_crc(bytearray([m.GOAL]) + good[1:]), m.ERR_LAYOUT),
        (_fix_crc(bytearray([m.CONFIG]) + m.encode(m.LOG, 0, 1, 1, (b"abc",))[1:]), m.ERR_LAYOUT),
    ]
    for i, (frame, kind) in enumerate(cases):
        assert dec.decode(frame) is None, i
        assert dec.last_error == kind, (i, m.ERR_NAMES[dec.last_error])
    assert dec.bad == len(cases) and dec.good == 0
    assert dec.errors[m.ERR_LAYOUT] == 2 and dec.errors[m.ERR_TYPE] == 2
    assert dec.decode(memoryview(good), 20) is None and dec.last_error == m.ERR_SHORT
    assert dec.decode(good) is not None and dec.last_error == m.ERR_NONE


# --- framing ----------------------------------------------------------------------

def test_cobs_round_trip_random():
    rnd = random.Random(3)
    specials = [b"", b"\x00", b"\x00\x00", bytes(range(1, 255)), bytes(range(1, 256)),
                bytes(range(256)) * 2, b"\x01" * 253 + b"\x00"]
    for d in specials + [bytes(rnd.choice((0, 0, rnd.randrange(256))) for _ in range(rnd.randrange(300)))
                         for _ in range(500)]:
        e = framing.cobs_encode(d)
        assert 0 not in e
        assert len(e) <= len(d) + len(d) // 254 + 1
        assert framing.cobs_decode(e) == d
        assert framing.cobs_decode(memoryview(e)) == d
    assert framing.cobs_decode(b"") is None
    assert framing.cobs_decode(b"\x05ab") is None          # runs past the end
    assert framing.cobs_decode(b"\x02a\x00") is None       # zero inside


def test_deframer_random_splits():
    rnd = random.Random(4)
    frames = [m.encode(t, 0, 1, i, SAMPLES[t]) for i, t in enumerate(sorted(SAMPLES))] * 5
    rnd.shuffle(frames)
    stream = b"\x00" + b"".join(framing.uart_frame(f) for f in frames)
    for _ in range(50):
        d = framing.Deframer()
        out = []
        i = 0
        while i < len(stream):
            j = i + rnd.randrange(1, 40)
            out += d.feed(stream[i:j] if rnd.random() < 0.5 else memoryview(stream)[i:j])
            i = j
        assert out == frames and d.dropped == 0


def test_deframer_drops_and_resyncs():
    d = framing.Deframer(maxlen=80)
    f = m.encode(m.SYNC, 0, 1, 1, (1,))
    assert d.feed(b"\x07" * 200) == []            # overlong, no delimiter: bounded, dropped
    assert d.feed(b"\x00" + framing.uart_frame(f)) == [f]
    assert d.feed(b"\x05ab\x00") == []            # malformed COBS
    assert d.dropped == 2
    assert len(d._buf) == 80


# --- CAN --------------------------------------------------------------------------

def test_can_id_round_trip_and_priorities():
    prio = {m.SYNC: 0, m.KINEMATIC: 1, m.GOAL: 1, m.ASSERT: 2, m.TORQUE: 2, m.JOINT_STATE: 2,
            m.COMMAND: 3, m.STATUS: 4, m.CONFIG: 6, m.LOG: 7, m.IDENT: 5, m.ESTIMATE: 4, m.TIMING: 5}
    for t, p in prio.items():
        for src, dst in ((0, 1), (7, 0xFF), (255, 0)):
            cid = can_ids.can_id(t, src, dst)
            assert cid < 1 << 29
            assert can_ids.parse_can_id(cid) == (p, t, src, dst)
    assert can_ids.can_id(m.SYNC, 0, 0xFF) < can_ids.can_id(m.KINEMATIC, 0, 0)
    with pytest.raises(ValueError):
        can_ids.can_id(0x42, 0, 0)


def test_fd_padding():
    dec = m.Decoder()
    for t, vals in SAMPLES.items():
        f = m.encode(t, 1, 2, 3, vals)
        p = can_ids.fd_payload(f)
        assert len(p) in can_ids.FD_LENGTHS and len(p) >= len(f)
        assert p[:len(f)] == f and set(p[len(f):]) <= {0}
        assert bytes(can_ids.strip_padding(p)) == f
        assert dec.decode(can_ids.strip_padding(p))[4] == vals
    assert [can_ids.fd_length(n) for n in (8, 9, 13, 45, 49, 64)] == [8, 12, 16, 48, 64, 64]
    assert can_ids.strip_padding(b"\x01") == b"\x01"
    with pytest.raises(ValueError):
        can_ids.fd_payload(bytes(65))


def test_fragment_reassemble():
    ra = can_ids.Reassembler()
    dec = m.Decoder()
    for t, vals in SAMPLES.items():
        f = m.encode(t, 1, 2, 3, vals)
        frags = can_ids.fragment(f)
        assert len(frags) == (len(f) + 6) // 7 <= 10
        assert all(len(x) <= 8 for x in frags)
        cid = can_ids.can_id(t, 1, 2)
        got = [ra.push(cid, x) for x in frags]
        assert got[:-1] == [None] * (len(frags) - 1) and got[-1] == f
        assert dec.decode(got[-1])[4] == vals
    assert ra.dropped == 0
    # lost fragment: the partial frame and the stray fragment are counted and dropped
    f = m.encode(m.KINEMATIC, 1, 2, 3, SAMPLES[m.KINEMATIC])
    frags = can_ids.fragment(f)
    cid = can_ids.can_id(m.KINEMATIC, 1, 2)
    assert ra.push(cid, frags[0]) is None
    assert ra.push(cid, frags[2]) is None
    assert ra.dropped == 2 and not ra._part
    # duplicate fragment
    ra.push(cid, frags[0])
    ra.push(cid, frags[1])
    assert ra.push(cid, frags[1]) is None and ra.dropped == 5
    # a restart on the same id recovers; interleaved ids are independent
    f2 = m.encode(m.GOAL, 0, 0xFF, 4, SAMPLES[m.GOAL])
    cid2 = can_ids.can_id(m.GOAL, 0, 0xFF)
    fr2 = can_ids.fragment(f2)
    out = []
    for a, b in zip(frags, fr2 + [None] * 10):
        out.append(ra.push(cid, a))
        if b is not None:
            out.append(ra.push(cid2, b))
    assert f in out and f2 in out
    # bounded memory: oldest partial evicted
    ra2 = can_ids.Reassembler(max_partial=4)
    for k in range(6):
        ra2.push(k, frags[0])
    assert len(ra2._part) == 4 and ra2.evicted == 2 and 0 not in ra2._part
    # garbage
    for junk in (b"", bytes(9), b"\xff", b"\x00", b"\x10abc"):
        assert ra2.push(99, junk) is None


# --- fuzz (CPython in-process and MicroPython subprocess, same PRNG) -----------------

def test_fuzz_cpython_in_process():
    fz = _load_fuzz()
    n, good, bad = fz.run(10000, 12345)[:3]
    assert n == 10000 and good > 0 and bad > 0


def test_fuzz_cpython_random_module():
    """Independent of the shared PRNG: Python's random, bigger mutations."""
    rnd = random.Random(5)
    dec, dfr, ras = m.Decoder(), framing.Deframer(), can_ids.Reassembler()
    valid = [m.encode(t, 0, 1, 2, v) for t, v in SAMPLES.items()]
    decoded = 0
    for _ in range(10000):
        if rnd.random() < 0.5:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(81)))
        else:
            fr = bytearray(rnd.choice(valid))
            for _ in range(rnd.randrange(1, 6)):
                fr[rnd.randrange(len(fr))] ^= 1 << rnd.randrange(8)
            data = bytes(fr)
        dec.decode(data)
        decoded += 1
        for f in dfr.feed(data):
            dec.decode(f)
            decoded += 1
        r = ras.push(rnd.randrange(1 << 29), data[:8])
        if r is not None:
            dec.decode(r)
            decoded += 1
    assert dec.good + dec.bad == decoded and sum(dec.errors) == dec.bad


@needs("micropython")
def test_fuzz_micropython_matches_cpython():
    proc = subprocess.run([MICROPYTHON, str(FUZZ_SCRIPT), "10000", "12345"],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("FUZZ ok N 10000 good ")
    fz = _load_fuzz()
    assert line == fz.result_line(fz.run(10000, 12345))


@needs("micropython")
def test_micropython_encodes_cpython_decodes():
    code = "\n".join([
        "import sys",
        "sys.path.insert(0, %r)" % str(ROOT),
        "from bus_protocol import messages as m",
        "import binascii",
        "S = %r" % (SAMPLES,),
        "buf = bytearray(64)",
        "for t in sorted(S):",
        "    n = m.encode_into(buf, t, 2, 3, 40000 + t, S[t])",
        "    print(t, binascii.hexlify(buf[:n]).decode())",
        "d = m.Decoder()",
        "print('rt', all(d.decode(m.encode(t, 2, 3, 1, S[t]))[4] == S[t] for t in S), d.good)",
        "print('crc', hex(m.crc16(b'123456789')), m._crc_hqx is None)",
    ])
    proc = subprocess.run([MICROPYTHON, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    lines = proc.stdout.strip().splitlines()
    dec = m.Decoder()
    seen = set()
    for line in lines[:-2]:
        t, hexframe = line.split()
        t = int(t)
        frame = bytes.fromhex(hexframe)
        assert frame == m.encode(t, 2, 3, 40000 + t, SAMPLES[t])     # byte-identical
        assert dec.decode(frame) == (t, 2, 3, 40000 + t, SAMPLES[t])
        seen.add(t)
    assert seen == set(SAMPLES)
    assert lines[-2] == "rt True %d" % len(SAMPLES)
    assert lines[-1] == "crc 0x29b1 True"        # MicroPython uses the table path


@needs("mpy-cross")
def test_mpy_cross_armv6m(tmp_path):
    files = sorted((ROOT / "bus_protocol").glob("*.py"))
    assert {f.name for f in files} >= {"messages.py", "framing.py", "can_ids.py"}
    for f in files:
        out = tmp_path / (f.stem + ".mpy")
        proc = subprocess.run([MPY_CROSS, "-march=armv6m", "-o", str(out), str(f)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f.name + ": " + proc.stderr
        assert out.stat().st_size > 0


def test_cobs_viper_loops_match_the_python_loops_under_micropython():
    """The node's cobs_encode_at / cobs_decode_into are the viper loops under MicroPython
    (firmware/accel/cobs_native.py): byte-identical to the wire format's pure-Python
    loops (bus_protocol/framing.py), malformed input included (the same -1), for every
    length up to past one 254-byte block."""
    code = '''
import random
from bus_protocol import framing as g
from firmware.accel import cobs_native, forward
assert forward.cobs_encode_at is cobs_native.cobs_encode_at and g.cobs_encode_at is not cobs_native.cobs_encode_at
random.seed(7)
diff = 0
cases = 0
for n in list(range(0, 300)) * 3:
    d = bytes([random.getrandbits(8) if random.getrandbits(2) else 0 for _ in range(n)])
    a = bytearray(n + n // 254 + 2)
    b = bytearray(n + n // 254 + 2)
    ka = forward.cobs_encode_at(d, n, a, 0)
    kb = g.cobs_encode_into(d, n, b)
    diff += ka != kb or bytes(a[:ka]) != bytes(b[:kb]) or bytes(a[:ka - 1]).find(b"\\x00") >= 0
    for src in (bytes(a[:ka - 1]), bytes([random.getrandbits(8) for _ in range(n % 70)])):
        for cap in (len(src), 8):
            oa = bytearray(cap)
            ob = bytearray(cap)
            ra = forward.cobs_decode_into(src, 0, len(src), oa)
            rb = g.cobs_decode_into(src, 0, len(src), ob)
            diff += ra != rb or (ra >= 0 and bytes(oa[:ra]) != bytes(ob[:rb]))
            cases += 1
print(cases, diff)
'''
    cases, diff = run_micropython(code).split()
    assert int(cases) == 3600 and int(diff) == 0


def test_byte_loops_under_the_unix_port_match_the_python_reference():
    """tests/mp/mp_framing_cases.py (COBS, peek/find/put, forward.cut, the run splitter, the
    CRC on clean and corrupted frames): the unix port's viper loops, and forward.cut over
    them, print what CPython's pure-Python loops print (the boards' Thumb assembly:
    tests/test_mcu.py)."""
    lines = same_under_both("mp_framing_cases.py")
    assert len(lines) == 350 and all(ln[0] in "CM" for ln in lines)
    # forward.cut's pool: frames taken as the node's own, and bad ones counted
    assert sum(len(ln.split(" pool ")[1].split()) > 1 for ln in lines if ln[0] == "M") >= 20
