# A rebooted board rejoins (node_crash with an end), runnable under MicroPython and
# CPython: link 5 of tests/mp/mp_neighbours.py starts afresh at tick 180 of a lockstep run
# (COMMAND RESET, arg 1). On a shared medium a neighbour's K can overtake the host's
# SYNC (the host's broadcast is a loop of sends, preempted on a busy machine), so its
# first tick's K_3 and K_4 come before the SYNC. Prints, per tick, the K_5 position it
# sent, how many, its faults and its TORQUE's state; tests/test_rejoin.py checks them
# against numpy FK.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import messages as m   # noqa: E402
from firmware import kinematic_bus as kb  # noqa: E402
from firmware.agent import LinkAgent      # noqa: E402
from firmware.hal.sim import SimHAL       # noqa: E402
from tests.mp import mp_neighbours as nb     # noqa: E402

FIRST = 180   # the first tick after the reboot


def run(ticks=3):
    out = []
    agent = LinkAgent(nb.config(), SimHAL(lambda b, n: out.append(bytes(b[:n]))))
    agent.receive(m.encode(m.COMMAND, 0, 255, 0, (m.CMD_RESET, 1.0)))
    dec = m.Decoder()
    links = [(kb.joint_type(d[0]),) + tuple(d[1:]) for d in nb.DH]
    for tick in range(FIRST, FIRST + ticks):
        q = nb.q_at(tick)
        Ks = kb.chain(links, q, nb.QD)
        agent.receive(m.encode(m.JOINT_STATE, 0, 5, 0, (tick, q[4], nb.QD[4], 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)))
        frames = []
        for src in (3, 4):   # K_src goes to link src + 1 (K_3 overheard)
            quat, p, v, w = Ks[src]
            frames.append(m.encode(m.KINEMATIC, src, src + 1, 0, (tick,) + tuple(quat) + tuple(p) + tuple(v) + tuple(w)))
        sync = m.encode(m.SYNC, 0, 255, 0, (tick,))
        # the first tick: the packets overtook the SYNC; later ticks: the SYNC first
        frames = frames + [sync] if tick == FIRST else [sync] + frames
        for f in frames + [m.encode(m.GOAL, 0, 255, 0, (tick, 0, 1.0, 0.0, 0.0, 0.0, 10.0, 0.0, 0.0, 0.0, 0.0))]:
            agent.receive(f)
        sent = [dec.decode(f) for f in out]
        del out[:]
        k5 = [x[4] for x in sent if x[0] == m.KINEMATIC and x[4][0] == tick]
        tq = [x[4] for x in sent if x[0] == m.TORQUE and x[4][0] == tick]
        p5 = k5[0][5:8] if k5 else (0.0, 0.0, 0.0)
        print("T %d %.7f %.7f %.7f k=%d faults=%d state=%s" % (
            tick, p5[0], p5[1], p5[2], len(k5), agent.safety.faults, tq[0][2] if tq else "-"))


if __name__ == "__main__":
    run()
