# What authentication costs a node (bus_protocol/SPEC.md §9): instructions per MAC (the
# Python's, bus_protocol/mac.py; linkcore's check alone, less the loop's own cost), per
# check of a genuine protected GOAL (firmware/auth.Guard: CRC, FV rebuilt, MAC, trailer
# cut, CRC again), per forged one (three MACs) and per frame the host signs. Under
# `make mcu-bench` the board runs with -icount shift=0, so 1 us = 1000 instructions; under
# the unix port the figures are microseconds. Prints "AUTH name value" lines.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/..")

import gc    # noqa: E402
import time  # noqa: E402

from bus_protocol import messages as m  # noqa: E402
from bus_protocol.mac import Hmac       # noqa: E402
from firmware import accel, auth        # noqa: E402,F401  (accel: the board's CRC loop, as a node has it)

KEY = bytes(range(32))


class _Agent:
    link = 1
    taken = 0

    def receive(self, frame, n=None):
        self.taken += 1


def _goal(i):
    return m.encode(m.GOAL, m.HOST, m.BROADCAST, i, (i, 0, 0.5, 0.25, -1.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0))


def _time(fn, items):
    gc.collect()   # no collection inside the timed loop
    t0 = time.ticks_us()
    for x in items:
        fn(x)
    return time.ticks_diff(time.ticks_us(), t0) / len(items)


def main(reps=20):
    hm = Hmac(KEY)
    plain = [_goal(i) for i in range(reps)]
    body = plain[0]
    print("AUTH mac %.3f" % _time(lambda i: hm.mac(body, len(body) - 2, b"\0\0\0\0"), range(reps)))
    core = auth.native()
    if core is not None:   # linkcore's: the MAC check of a protected GOAL alone (linkcore_mac.h)
        ks = bytearray(64)
        core.mac_key(KEY, ks)
        f = m.protect(body, hm, 0, 1)
        n = len(f)
        check = core.mac_check
        print("AUTH mac_check_native %.3f" % (_time(lambda i: check(ks, f, n, 0), range(reps))
                                              - _time(lambda i: None, range(reps))))
    buf = bytearray(m.MAX_FRAME)

    def sign(f):
        buf[:len(f)] = f
        m.protect_into(buf, len(f), hm, 0, 0)
    print("AUTH sign_goal %.3f" % _time(sign, plain))
    good = [m.protect(plain[i], hm, 0, i) for i in range(reps)]
    forged = [m.protect(plain[i], Hmac(bytes(32)), 0, i) for i in range(reps)]
    a = _Agent()
    g = auth.Guard(a, KEY)
    print("AUTH check_goal %.3f" % _time(g.receive, good))
    print("AUTH reject_forged %.3f" % _time(g.receive, forged))
    print("AUTH pass_plain_sync %.3f" % _time(g.receive, [m.encode(m.SYNC, m.HOST, m.BROADCAST, 0, (i,))
                                                         for i in range(reps)]))
    print("AUTH taken %d of %d, rejected %s" % (a.taken, 3 * reps, g.counts()))


if __name__ == "__main__":
    main()
