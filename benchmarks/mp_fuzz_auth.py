# Fuzz of a node's check of host commands (firmware/auth.py, bus_protocol/SPEC.md §9),
# runnable under MicroPython AND CPython (`make bench`):
#   micropython benchmarks/mp_fuzz_auth.py [N] [SEED]
# N frames into one node's Guard: genuine protected frames (fresh, then replayed), the
# same with bits flipped (CRC made good again, so only the MAC can tell), forgeries (a
# random trailer, or signed with another key), plain COMMAND/CONFIG/GOAL, and garbage.
# No exception may leave receive(); no protected frame may reach the agent unless it is
# a genuine one on its first delivery; every genuine fresh one must.
# Prints "AUTH-FUZZ ok N <n> genuine <g> forgeries 0 rejected mac <a> replay <b> plain <c>".
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/..")

from bus_protocol import messages as m       # noqa: E402
from bus_protocol.mac import Hmac            # noqa: E402
from firmware import auth                    # noqa: E402
from tests.mp.mp_fuzz_decoder import XorShift   # noqa: E402

KEY = bytes(range(32))
LINK = 2


class _Agent:
    link = LINK

    def __init__(self):
        self.taken = 0
        self.last = None

    def receive(self, frame, n=None):
        self.taken += 1
        self.last = bytes(frame[:n] if n is not None else frame)


def _plain(rng, t, dst, seq):
    if t == m.GOAL:
        return m.encode(t, m.HOST, dst, seq, (rng.next(), 0) + tuple((rng.below(2001) - 1000) / 7.0 for _ in range(9)))
    if t == m.COMMAND:
        return m.encode(t, m.HOST, dst, seq, (1 + rng.below(13), float(rng.below(9))))
    return m.encode(t, m.HOST, dst, seq, (0, 20, rng.bytes(rng.below(m.CONFIG_MAX_DATA_AUTH + 1))))


def _fix_crc(b):
    c = m.crc16(b, len(b) - 2)
    b[-2] = c & 0xFF
    b[-1] = c >> 8


def run(n=100000, seed=11):
    rng = XorShift(seed)
    agent = _Agent()
    g = auth.Guard(agent, KEY, 0, auth.MemBlock())
    hm = Hmac(KEY)
    other = Hmac(bytes(32))
    counters = {}
    block = 0
    sent = []          # genuine frames already delivered (for replays)
    genuine = forged = 0
    for i in range(n):
        t = m.PROTECTED[rng.below(3)]
        dst = LINK if rng.below(2) else m.BROADCAST
        kind = rng.below(8)
        if rng.below(5000) == 0:
            block += 1 + rng.below(3)    # a host restart (the counters start again)
            counters = {}
        c = counters.get((t, dst), 0)
        fv = block << m.COUNTER_BITS | c
        f = _plain(rng, t, dst, i)
        fresh = False
        if kind <= 2:          # genuine, fresh
            counters[(t, dst)] = c + 1
            f = m.protect(f, hm, fv >> 32, fv & 0xFFFFFFFF)
            fresh = True
            if len(sent) < 64:
                sent.append(f)
            else:
                sent[rng.below(64)] = f
        elif kind == 3 and sent:   # a recorded genuine frame, replayed
            f = sent[rng.below(len(sent))]
        elif kind == 4:        # genuine, then altered: bits flipped, CRC good again
            good = m.protect(f, hm, fv >> 32, fv & 0xFFFFFFFF)
            b = bytearray(good)
            while bytes(b) == good:   # (two flips of one bit undo each other)
                for _ in range(1 + rng.below(3)):
                    b[rng.below(len(b) - 2)] ^= 1 << rng.below(8)
            _fix_crc(b)
            f = bytes(b)
        elif kind == 5:        # another key, or a random trailer
            if rng.below(2):
                f = m.protect(f, other, fv >> 32, fv & 0xFFFFFFFF)
            else:
                b = bytearray(m.protect(f, hm, fv >> 32, fv & 0xFFFFFFFF))
                b[-10:-2] = rng.bytes(8)
                _fix_crc(b)
                f = bytes(b)
        elif kind == 6:        # plain
            pass
        else:                  # garbage, sometimes shaped like a host command
            f = bytearray(rng.bytes(rng.below(70)))
            if len(f) > 8 and rng.below(2):
                f[0], f[1], f[2], f[5] = t, m.HOST, dst, len(f) - 8
                _fix_crc(f)
            f = bytes(f)
        before = agent.taken
        g.receive(f)
        took = agent.taken != before
        host_cmd = len(f) >= m.OVERHEAD and f[0] in m.PROTECTED and f[1] == m.HOST and f[2] in (LINK, m.BROADCAST) \
            and m.frame_ok(f, len(f))
        if fresh:
            if not took:
                raise AssertionError("genuine fresh frame %d refused: %s" % (i, f))
            genuine += 1
        elif took and host_cmd:
            forged += 1
    if forged:
        raise AssertionError("%d forgeries accepted" % forged)
    print("AUTH-FUZZ ok N %d genuine %d forgeries %d rejected mac %d replay %d plain %d"
          % (n, genuine, forged, g.rejected[0], g.rejected[1], g.rejected[2]))


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 100000, int(sys.argv[2]) if len(sys.argv) > 2 else 11)
