# Agent fuzz, runnable under MicroPython AND CPython (`make bench`):
#   micropython benchmarks/mp_fuzz_agent.py [N] [SEED]
# N frames into one link agent (link 2 of 3, neighbour checks on): well-formed cycle frames
# with random, huge, NaN and inf values, commands and CONFIG blobs, frames with flipped
# bits, and garbage. No exception may leave receive(), every frame must be counted good
# or bad by its decoder, and no torque it writes may be NaN or inf.
# Prints "AGENT-FUZZ ok N <n> good <g> bad <b> faults <latched bits seen> nan_torques 0".
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/..")

from bus_protocol import messages as m      # noqa: E402
from firmware.agent import LinkAgent         # noqa: E402
from firmware.hal.sim import SimHAL          # noqa: E402
from tests.mp.mp_fuzz_decoder import XorShift, _codes   # noqa: E402

SPECIAL = (float("nan"), float("inf"), -float("inf"), 3.0e38, -3.0e38, 0.0, 1e-30)
TYPES = (m.SYNC, m.JOINT_STATE, m.KINEMATIC, m.GOAL, m.ASSERT, m.COMMAND, m.CONFIG)


def value(rng, code, tick):
    if code == "f":
        r = rng.below(8)
        return SPECIAL[r] if r < len(SPECIAL) else (rng.below(20001) - 10000) / 997.0
    if code == "I":
        return tick if rng.below(4) else rng.next()
    return rng.next() & (0xFF if code == "B" else 0xFFFF)


def run(n=100000, seed=7):
    rng = XorShift(seed)
    torques = []
    hal = SimHAL(lambda b, k: None)

    def write(u):   # a motor on the joint (SimHAL's is the host's): every torque commanded
        torques.append(u)
        return True
    hal.write = write
    cfg = {"link": 2, "n_links": 3, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 100.0,
           "behaviours": {"proxy": {}, "centering": {"kq": 10.0, "kw": 1.0}},
           "neighbours": {"dh": [["revolute", 0.0, 0.0, 0.5, 0.0]], "period": 0.01}}
    agent = LinkAgent(cfg, hal)
    buf = bytearray(m.MAX_FRAME)
    faults = 0
    bad_u = 0
    tick = 0
    for i in range(n):
        if rng.below(16) == 0:
            tick += 1
        t = TYPES[rng.below(len(TYPES))]
        if t == m.CONFIG:
            vals = (0, rng.below(80), rng.bytes(rng.below(m.CONFIG_MAX_DATA + 1)))
        elif t == m.COMMAND:
            vals = (1 + rng.below(7), value(rng, "f", tick))
        else:
            vals = tuple(value(rng, c, tick) for c in _codes(m._FMT[t]))
        dst = (2, 2, 1, m.BROADCAST)[rng.below(4)]
        k = m.encode_into(buf, t, rng.below(4), dst, i & 0xFFFF, vals)
        mode = rng.below(8)
        frame = bytearray(buf[:k])
        if mode == 0:
            frame = bytearray(rng.bytes(rng.below(70)))
        elif mode == 1:
            frame[rng.below(k)] ^= 1 << rng.below(8)
        agent.receive(frame)
        if rng.below(64) == 0:
            agent.on_quiet()
        if rng.below(200) == 0:
            agent.receive(m.encode(m.COMMAND, 0, 2, 0, (m.CMD_RELEASE, 0.0)))
        faults |= agent.safety.faults
        for u in torques:
            if not -1e30 < u < 1e30:
                bad_u += 1
        del torques[:]
    d = agent.decoder
    if bad_u or d.bad != sum(d.errors):
        raise AssertionError("nan torques %d, bad %d vs errors %d" % (bad_u, d.bad, sum(d.errors)))
    return n, d.good, d.bad, faults, bad_u


if __name__ == "__main__":
    a = sys.argv[1:]
    r = run(int(a[0]) if a else 100000, int(a[1]) if len(a) > 1 else 7)
    print("AGENT-FUZZ ok N %d good %d bad %d faults 0x%04x nan_torques %d" % r)
