# Redundant kinematics of one agent (firmware/neighbours.py through LinkAgent), runnable
# under MicroPython and CPython: link 5 of a random 5-link chain with depth-2 neighbours
# gets K_2, K_3, K_4 as overheard / own packets; some ticks lose K_4, or K_4 and K_3, or
# K_4 is 0.1 m off. Prints, per tick, the K_5 position it sent and its state, skip, faults,
# what it told the host and how many K_5 frames went out. tests/test_neighbours.py checks
# the lines against numpy FK; run(copies=2) delivers every packet twice and has the agent
# send two copies (the kinematic bus's time redundancy: tests/test_redundancy.py).
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import messages as m   # noqa: E402
from firmware import kinematic_bus as kb  # noqa: E402
from firmware.agent import LinkAgent      # noqa: E402
from firmware.hal.sim import SimHAL       # noqa: E402

N = 5
DH = [("revolute", 0.3, 0.1, 0.6, 0.0), ("revolute", -0.5, 0.0, 0.4, 1.2),
      ("prismatic", 0.2, 0.1, 0.3, -0.7), ("revolute", 0.7, -0.1, 0.5, 0.4),
      ("revolute", -0.2, 0.05, 0.45, 0.0)]
PERIOD = 0.01
QD = [0.3, -0.2, 0.1, 0.4, -0.1]


def q_at(tick):
    return [0.1 + 0.2 * i + QD[i] * tick * PERIOD for i in range(N)]


# tick -> what happens to the packets link 5 should hear
EVENTS = {4: "lose4", 7: "lose43", 10: "bad4", 11: "bad4", 12: "bad4", 13: "bad4"}


def config(copies=1):
    """Link 5's: depth-2 neighbours (links 4 and 3)."""
    return {"link": 5, "n_links": N, "dh": {"type": DH[4][0], "theta": DH[4][1], "d": DH[4][2],
                                            "a": DH[4][3], "alpha": DH[4][4]},
            "behaviours": {"proxy": {}}, "safety": {"watchdog_cycles": 100},
            "neighbours": {"dh": [list(DH[3]), list(DH[2])], "period": PERIOD, "tol": 0.01},
            "kinematic_copies": copies}


def run(copies=1, ticks=16):
    out = []
    agent = LinkAgent(config(copies), SimHAL(lambda b, n: out.append(bytes(b[:n]))))
    dec = m.Decoder()
    links = [(kb.joint_type(d[0]),) + tuple(d[1:]) for d in DH]
    for tick in range(ticks):
        q = q_at(tick)
        Ks = kb.chain(links, q, QD)
        ev = EVENTS.get(tick, "")
        agent.receive(m.encode(m.JOINT_STATE, 0, 5, 0, (tick, q[4], QD[4], 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)))
        agent.receive(m.encode(m.SYNC, 0, 255, 0, (tick,)))
        for src in (2, 3, 4):   # K_src goes to link src + 1
            if (src == 4 and ev.startswith("lose")) or (src == 3 and ev == "lose43"):
                continue
            quat, p, v, w = Ks[src]
            if src == 4 and ev == "bad4":
                p = (p[0] + 0.1, p[1], p[2])
            f = m.encode(m.KINEMATIC, src, src + 1, 0, (tick,) + tuple(quat) + tuple(p) + tuple(v) + tuple(w))
            for _ in range(copies):
                agent.receive(f)
        agent.on_quiet(False)
        sent = [dec.decode(f) for f in out]
        del out[:]
        k5 = [x[4] for x in sent if x[0] == m.KINEMATIC]
        cmd = [x[4] for x in sent if x[0] == m.COMMAND]
        p5 = k5[0][5:8] if k5 else (0.0, 0.0, 0.0)
        print("T %d %s %.7f %.7f %.7f skip=%d faults=%d brake=%s k=%d" % (
            tick, ev or "-", p5[0], p5[1], p5[2], agent.skip, agent.safety.faults,
            int(cmd[0][1]) if cmd else "-", len(k5)))
        if tick == 13:   # the host took link 4 out, then the braked link 4 holds still
            agent.receive(m.encode(m.COMMAND, 0, 255, 0, (m.CMD_NODE_OUT, 4.0)))


if __name__ == "__main__":
    run()
