# Deterministic protocol fuzz, runnable under MicroPython AND CPython.
#
#   micropython tests/mp/mp_fuzz_decoder.py [N] [SEED]    (repo root is put on sys.path)
#
# Prints "FUZZ ok N <n> good <g> bad <b> deframed <d> dropped <x> reasm <r> rdrop <y>".
# tests/test_bus_protocol.py imports run() in-process and also runs this file under
# the MicroPython unix port; both must print the same line (same PRNG, same counts).
# Uses its own xorshift32 PRNG because MicroPython's `random` differs from CPython's.
import sys

try:
    _here = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
except NameError:
    _here = "."
_root = _here + "/../.."
if _root not in sys.path:
    sys.path.insert(0, _root)

from bus_protocol import messages as m          # noqa: E402
from bus_protocol import framing, can_ids        # noqa: E402


class XorShift:
    def __init__(self, seed):
        self.s = (seed & 0xFFFFFFFF) or 0x9E3779B9

    def next(self):
        x = self.s
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.s = x
        return x

    def below(self, n):
        return self.next() % n

    def bytes(self, n):
        return bytes(self.next() & 0xFF for _ in range(n))


def _codes(fmt):
    """'<IffB3f3f' -> ['I','f','f','B','f','f','f','f','f','f']"""
    out = []
    rep = ""
    for ch in fmt[1:]:
        if "0" <= ch <= "9":
            rep += ch
        else:
            out.extend([ch] * int(rep or "1"))
            rep = ""
    return out


_LIMITS = {"B": 0xFF, "H": 0xFFFF, "I": 0xFFFFFFFF}


def random_values(rng, t):
    if t == m.CONFIG:
        return (rng.below(1000), rng.below(1000), rng.bytes(rng.below(m.CONFIG_MAX_DATA + 1)))
    if t == m.LOG:
        return (rng.bytes(rng.below(m.LOG_MAX_TEXT + 1)),)
    vals = []
    for c in _codes(m._FMT[t]):
        if c == "f":
            vals.append((rng.below(200001) - 100000) / 1024.0)
        else:
            vals.append(rng.next() & _LIMITS[c])
    return tuple(vals)


def run(n=10000, seed=12345):
    rng = XorShift(seed)
    dec = m.Decoder()
    dfr = framing.Deframer()
    ras = can_ids.Reassembler()
    buf = bytearray(m.MAX_FRAME)
    types = sorted(m.NAMES)
    cids = [can_ids.can_id(t, 1, 2) for t in types[:4]]
    decoded = 0
    for i in range(n):
        mode = rng.below(4)
        if mode == 0:                       # pure garbage, length 0..80
            data = rng.bytes(rng.below(81))
        else:                               # a valid frame ...
            t = types[rng.below(len(types))]
            k = m.encode_into(buf, t, rng.below(256), rng.below(256), rng.below(65536),
                              random_values(rng, t))
            fr = bytearray(buf[:k])
            if mode >= 2:                   # ... with 1..3 flipped bits
                for _ in range(1 + rng.below(3)):
                    fr[rng.below(k)] ^= 1 << rng.below(8)
            if mode == 3 and rng.below(2):  # ... and a recomputed CRC (reach type/layout)
                c = m.crc16(fr, k - 2)
                fr[k - 2] = c & 0xFF
                fr[k - 1] = c >> 8
            data = bytes(fr)
        # Decoder: every call is either good or bad
        dec.decode(data)
        decoded += 1
        dec.decode(memoryview(data)[:len(data)], rng.below(len(data) + 1) if data else None)
        decoded += 1
        # Deframer: garbage directly, or a COBS-wrapped (maybe corrupted) stream, split
        if rng.below(2):
            stream = framing.uart_frame(data)
            if rng.below(2):
                stream = bytearray(stream)
                stream[rng.below(len(stream))] ^= 1 << rng.below(8)
        else:
            stream = data
        cut = rng.below(len(stream) + 1)
        for chunk in (stream[:cut], stream[cut:]):
            for f in dfr.feed(chunk):
                dec.decode(f)
                decoded += 1
        # Reassembler: random chunks, or real fragments with drops / duplicates
        cid = cids[rng.below(len(cids))]
        if rng.below(2) and 0 < len(data) <= 70:
            frags = can_ids.fragment(data)
            for j in range(len(frags)):
                r = rng.below(10)
                if r == 0:
                    continue                # lost
                got = ras.push(cid, frags[j])
                if r == 1:
                    got = ras.push(cid, frags[j]) or got   # duplicate
                if got is not None:
                    dec.decode(got)
                    decoded += 1
        else:
            got = ras.push(cid, data[:rng.below(10)])
            if got is not None:
                dec.decode(got)
                decoded += 1
        if dec.good + dec.bad != decoded or dec.bad != sum(dec.errors):
            raise AssertionError("counter mismatch at %d" % i)
    return (n, dec.good, dec.bad, dfr.frames, dfr.dropped, ras.frames, ras.dropped,
            tuple(dec.errors))


def result_line(r):
    return "FUZZ ok N %d good %d bad %d deframed %d dropped %d reasm %d rdrop %d errors %s" % (
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], " ".join(str(e) for e in r[7]))


if __name__ == "__main__":
    a = sys.argv[1:]
    print(result_line(run(int(a[0]) if a else 10000, int(a[1]) if len(a) > 1 else 12345)))
