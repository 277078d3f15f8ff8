# The kinematic bus's time redundancy (thesis 7.6.1 "redundant communication"), runnable
# under MicroPython and CPython. Part 1: link 5 of tests/mp/mp_neighbours.py with every packet
# delivered once, then twice (and sending two copies itself), 20 ticks (link 4 is wrong at
# 10-13, bridged, then re-admitted after 3 good checks). Part 2: link 1 on a tilted,
# offset base; K_0 (both copies) lost at ticks 2 and 3: it composes K_1 over the last K_0
# (the base packet). Prints what the agent sent; tests/test_redundancy.py checks it.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import messages as m   # noqa: E402
from firmware.agent import LinkAgent      # noqa: E402
from firmware.hal.sim import SimHAL       # noqa: E402
from tests.mp import mp_neighbours as nb     # noqa: E402

DH1 = ("revolute", 0.3, 0.1, 0.6, 0.5)
BASE = (0.9238795, 0.0, 0.3826834, 0.0, 0.1, -0.2, 0.3)   # quat (45 deg about y), position
LOST = (2, 3)


def qd1(tick):
    return 0.5 - 0.1 * tick


def q1(tick):
    return 0.2 + 0.3 * tick


def base_link():
    out = []
    cfg = {"link": 1, "n_links": 3, "dh": {"type": DH1[0], "theta": DH1[1], "d": DH1[2], "a": DH1[3],
                                           "alpha": DH1[4]},
           "behaviours": {"proxy": {}}, "safety": {"watchdog_cycles": 100}, "kinematic_copies": 2}
    agent = LinkAgent(cfg, SimHAL(lambda b, n: out.append(bytes(b[:n]))))
    dec = m.Decoder()
    for tick in range(5):
        agent.receive(m.encode(m.JOINT_STATE, 0, 1, 0, (tick, q1(tick), qd1(tick), 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)))
        agent.receive(m.encode(m.SYNC, 0, 255, 0, (tick,)))
        if tick not in LOST:
            f = m.encode(m.KINEMATIC, 0, 1, tick, (tick,) + BASE + (0.0,) * 6)
            agent.receive(f)
            agent.receive(f)
        agent.on_quiet(False)
        k = [bytes(f) for f in out if f[0] == m.KINEMATIC]
        del out[:]
        for f in k[:1]:
            v = dec.decode(f)[4]
            print("B %d %s copies=%d same=%d p %.7f %.7f %.7f quat %.7f %.7f %.7f %.7f w %.7f %.7f %.7f" % (
                (tick, "lost" if tick in LOST else "-", len(k), k.count(k[0])) + tuple(v[5:8]) + tuple(v[1:5])
                + tuple(v[11:14])))
        if not k:
            print("B %d %s copies=0" % (tick, "lost" if tick in LOST else "-"))


print("== copies 1")
nb.run(1, 20)
print("== copies 2")
nb.run(2, 20)
print("== base")
base_link()
