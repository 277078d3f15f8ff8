# Bus faults on the emulated medium (bus_protocol/wire_faults.py), runnable under
# MicroPython and CPython: one line per frame of 600 ticks of traffic (the host's SYNC,
# K_0 and GOAL, every link's K_i), its outcome: ok | lost | corrupt | delay <us>.
# tests/test_wire_faults.py runs it under both, compares, and checks the lines.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import messages as m            # noqa: E402
from bus_protocol import wire_faults as wf        # noqa: E402

N = 10
SPECS = [
    [wf.LOSS, -1, 100, 500, 0, 0, 0.1, 0.0],        # 10 % on every wire, ticks 100-499
    [wf.CORRUPT, 3, 0, -1, 0, 0, 2e-3, 0.0],        # bit errors on the wire into link 3
    [wf.LATENCY, 0, 0, -1, 0, 0, 2.0, 1.0],         # the host's port: 2 ms + 0-1 ms
]


def traffic(tick, seq):
    yield m.encode(m.SYNC, m.HOST, m.BROADCAST, seq, (tick,))
    for i in range(N + 1):
        dst = i + 1 if i < N else m.HOST
        yield m.encode(m.KINEMATIC, i, dst, seq, (tick,) + (0.25 * i,) * 13)
    yield m.encode(m.GOAL, m.HOST, m.BROADCAST, seq, (tick, 0) + (0.5,) * 9)


def run(seq0):
    faults = wf.WireFaults(SPECS, seed=7)
    dec = m.Decoder()
    for tick in range(600):
        for f in traffic(tick, seq0 + tick):
            b = bytearray(f)
            d = faults.apply(tick, b, len(b))
            if d < 0:
                out = "lost"
            elif bytes(b) != f:
                out = "corrupt %s" % ("caught" if dec.decode(b) is None else "MISSED")
            elif d:
                out = "delay %d" % d
            else:
                out = "ok"
            print("%d %d %d %d %s" % (tick, f[0], f[1], f[2], out))
    print("counts %d %d %d" % (faults.lost, faults.corrupted, faults.delayed))


def copies():
    """Every K_3 sent twice back to back (kinematic_copies = 2): 10 % loss draws each copy."""
    faults = wf.WireFaults([[wf.LOSS, -1, 0, -1, 0, 0, 0.1, 0.0]], seed=7)
    both = one = 0
    for tick in range(2000):
        f = m.encode(m.KINEMATIC, 3, 4, tick, (tick,) + (0.5,) * 13)
        lost = [faults.apply(tick, bytearray(f), len(f)) < 0 for _ in range(2)]
        both += lost[0] and lost[1]
        one += lost[0] != lost[1]
    print("copies %d %d" % (both, one))


run(0)
print("seq")
run(12345)   # other sequence numbers: the same frames are hit
copies()
