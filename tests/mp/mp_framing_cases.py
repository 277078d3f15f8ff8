# The node's byte loops (firmware/accel: COBS encode/decode, cut-through peek/find/put/cut,
# the run splitter) and the CRC-16 on pseudo-random frames, clean and corrupted. Prints one line per
# case; tests/test_mcu.py runs it on the emulated boards (Thumb assembly, viper; the
# forwarder in C with linkcore.mpy) and under CPython (the pure-Python loops, the
# reference) and compares the lines.
from array import array

from bus_protocol import messages as m
from firmware import layout
from firmware.accel import forward   # (and a board's CRC loop into messages.crc16)

_seed = [12345]


def rnd(k):
    """0..k-1 from a 31-bit LCG: the same sequence on every Python."""
    _seed[0] = (_seed[0] * 1103515245 + 12345) & 0x7FFFFFFF
    return (_seed[0] >> 8) % k


def hx(b):
    return "".join("%02x" % x for x in b)


def main(cases=150, cut=None):
    """`cut`: the forwarder to run (forward.cut: linkcore's C where it is there; the
    reference forward.cut_python for the expected lines)."""
    cut = cut or forward.cut
    _seed[0] = 12345
    for t in range(cases):
        n = rnd(300)
        data = bytearray(n)
        for i in range(n):
            data[i] = (0, 1, 255)[rnd(3)] if rnd(4) == 0 else rnd(256)
        wire = bytearray(n + n // 254 + 2)
        k = forward.cobs_encode_at(data, n, wire, 0)
        o = rnd(5)   # at an offset, the bytes around it left as they were
        at = bytearray(b"\x5a" * (o + n + n // 254 + 4))
        ea = forward.cobs_encode_at(data, n, at, o)
        run = bytearray(wire[:k - 1])
        if rnd(3) == 0 and k > 2:
            run[rnd(k - 1)] = rnd(256)           # corrupt one byte
        cap = (64, n, n + 5, 300)[rnd(4)]
        out = bytearray(cap)
        i = rnd(3) if len(run) > 2 else 0
        r = forward.cobs_decode_into(run, i, len(run), out)
        peek = forward.cobs_peek(run, 0, len(run), rnd(8))
        z = forward.find0(run, i, len(run))
        tx = bytearray(len(run) + 1)
        e = forward.put(tx, 0, run, i | (len(run) << 16))
        acc = bytearray(layout.MAX_WIRE)
        st = array("i", (0, 0))
        j = forward.split_into(wire, 0, k, acc, st)
        print("C%d %d %s %d %s %d %s %d %d %d %s %d %d %d %04x %s" % (
            t, k, hx(wire[:k]), ea, hx(at), r, hx(out[:r]) if r > 0 else "", peek, z, e, hx(tx[:e]),
            j, st[0], st[1], m.crc16(data, n), cut_case(run, cut)))
    mine_cases(cut)


def cut_case(run, cut):
    """forward.cut on a read of a few wire frames around `run` (clean or corrupted) with
    a pseudo-random routing table, carried-run flag, start and transmit fill: its result
    and what it queued."""
    frames = [bytes(run) if rnd(4) == 0 else bytes(run[:rnd(82)])]
    for _ in range(rnd(5)):
        f = bytearray(rnd(4) + rnd(80))
        for i in range(len(f)):
            f[i] = 1 + rnd(255)
        if f:
            f[0] = 1 + rnd(5)    # code bytes landing on dst's place (dst 0) or not
        frames.append(bytes(f))
    data = bytearray(b"\x00".join(frames) + (b"\x00" if rnd(3) else b""))
    n = len(data)
    if n > 0xFFF:
        return "-"
    blk = bytearray(layout.BLK)
    for d in range(256):   # passed on (either side), the node's own (either side), both, neither
        blk[layout.BLK_TAB + d] = ((1 + rnd(2) | (1 + rnd(2)) << 2 if rnd(4) else 0)
                                    | (layout.MINE_UP if rnd(4) == 0 else 0)
                                    | (layout.MINE_DOWN if rnd(4) == 0 else 0))
    down = rnd(2)
    blk[layout.BLK_CARRY + down] = 1 if rnd(16) == 0 else 0
    blk[layout.BLK_QUEUED] = (0, 0, 40, 81, 82)[rnd(5)]
    blk[layout.BLK_QUEUED + 1] = (0, 0, 40, 81, 82)[rnd(5)]
    blk[layout.BLK_NMINE] = (0, 0, 0, 6, 7, 8)[rnd(6)]   # frames already in the pool
    blk[layout.BLK_BAD] = (0, 255)[rnd(2)]         # bad ones counted (wraps)
    f0 = blk[layout.BLK_NMINE]
    i = rnd(3) if n > 2 else 0
    r = cut(data, blk, n | i << 12 | (layout.FROM_DOWN if down else 0))
    up = blk[layout.BLK_TX:layout.BLK_TX + blk[layout.BLK_QUEUED]]
    dn = blk[layout.BLK_TX + layout.TX:layout.BLK_TX + layout.TX + blk[layout.BLK_QUEUED + 1]]
    pool = "".join(" " + hx(blk[layout.BLK_POOL + f * layout.POOL_FRAME:
                                 layout.BLK_POOL + f * layout.POOL_FRAME + blk[layout.BLK_MINE_N + f]])
                   for f in range(f0, blk[layout.BLK_NMINE]))
    return "%d %s up %s down %s pool %s%s" % (r, hx(blk[0:layout.BLK_TX]), hx(up), hx(dn),
                                             hx(blk[layout.BLK_NMINE:layout.BLK_POOL]), pool)


def mine_cases(cut, cases=200):
    """forward.cut on reads of whole frames (COBS of random logical frames, some
    corrupted, some overlong) with tables that pass them on, take them as the node's own
    into the pool, both or neither, on a chain or a ring (its goal waves: GOAL and ASSERT
    broadcasts of a tick whose GOAL has passed are skipped): its result, what it queued
    and what the pool holds."""
    for t in range(cases):
        frames = []
        for _ in range(1 + rnd(5)):
            n = (4 + rnd(60), 64, 65, 70, 4 + rnd(3))[rnd(5)] if rnd(3) else 6 + rnd(8)   # short: < 8 COBS bytes
            f = bytearray(n)
            for i in range(n):
                f[i] = (0, 0, 255)[rnd(3)] if rnd(5) == 0 else rnd(256)
            f[0] = (1, 3, 4, 5, 4)[rnd(5)]   # type: SYNC, KINEMATIC, GOAL, ASSERT
            f[2] = (3, 255, 7, 255)[rnd(4)]   # dst: the node's (3), broadcast, another
            if n > 6:
                f[6] = (5, 6, 0)[rnd(3)]      # the tick's low byte (a ring's goal waves)
            w = bytearray(n + n // 254 + 2)
            k = forward.cobs_encode_at(f, n, w, 0)
            w = w[:k - 1]
            if rnd(6) == 0:
                w[rnd(len(w))] = rnd(256)   # corrupt one byte (a 0 splits the run)
            frames.append(bytes(w))
        data = bytearray(b"\x00".join(frames) + (b"\x00" if rnd(4) else b""))
        blk = bytearray(layout.BLK)
        down = rnd(2)
        for d in (3, 255, 7):
            blk[layout.BLK_TAB + d] = ((1 + rnd(2) | (1 + rnd(2)) << 2 if rnd(2) else 0)
                                        | (layout.MINE_UP | layout.MINE_DOWN if rnd(3) else 0))
        blk[layout.BLK_QUEUED + 1] = (0, 0, 40, 81, 82)[rnd(5)]
        blk[layout.BLK_NMINE] = (0, 0, 0, 6, 7, 8)[rnd(6)]
        blk[layout.BLK_RING] = rnd(2)           # a ring: the goal waves checked
        blk[layout.BLK_RING_TICK] = (5, 6, 0)[rnd(3)]
        blk[layout.BLK_RING_HELD] = rnd(2)           # a GOAL's tick held
        f0 = blk[layout.BLK_NMINE]
        r = cut(data, blk, len(data) | (layout.FROM_DOWN if down else 0))
        pool = "".join(" " + hx(blk[layout.BLK_POOL + f * layout.POOL_FRAME:
                                     layout.BLK_POOL + f * layout.POOL_FRAME + blk[layout.BLK_MINE_N + f]])
                       for f in range(f0, blk[layout.BLK_NMINE]))
        print("M%d %d %s up %s down %s pool %s%s" % (
            t, r, hx(blk[0:layout.BLK_TX]), hx(blk[layout.BLK_TX:layout.BLK_TX + blk[layout.BLK_QUEUED]]),
            hx(blk[layout.BLK_TX + layout.TX:layout.BLK_TX + layout.TX + blk[layout.BLK_QUEUED + 1]]),
            hx(blk[layout.BLK_NMINE:layout.BLK_POOL]), pool))


if __name__ == "__main__":
    main()
