# Three link agents on one node, their chain nodes joined by memory wires (firmware/group.py),
# on a UART ring whose host end is a memory wire too; runnable under MicroPython and
# CPython alike. The host sends one cycle's joint states, SYNC and K_0; the script prints
# K_3 as it comes back on the return wire.

from bus_protocol import framing
from bus_protocol import messages as m
from firmware.agent import LinkAgent
from firmware.hal.mem import mem_wire, settle
from firmware.hal.sim import SimHAL
from firmware.node import ChainNode

N = 3
DH = [("revolute", 0.1, 0.2, 0.5, 1.5707963), ("prismatic", 0.0, 0.1, 0.0, 0.0), ("revolute", 0.2, 0.05, 0.3, 0.7)]
Q = [0.3, 0.25, 1.1]
QD = [0.2, 0.05, 0.4]


def run():
    host, up = mem_wire()       # the host's TX wire into link 1
    ret_host, down = None, None
    nodes = []
    for i in range(N):
        t, th, d, a, al = DH[i]
        cfg = {"link": i + 1, "n_links": N, "dh": {"type": t, "theta": th, "d": d, "a": a, "alpha": al},
               "behaviours": {"proxy": {"weight": 1.0}}}
        agent = LinkAgent(cfg, SimHAL())
        if i < N - 1:
            nxt, down = mem_wire()
        else:
            ret_host, down = mem_wire()   # the ring's return wire to the host
        nodes.append(ChainNode(agent, up, down, bufsize=2048, ring=True))
        up = nxt if i < N - 1 else None
    tick = 5
    frames = [m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, Q[i], QD[i], 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
              for i in range(N)]
    frames.append(m.encode(m.SYNC, m.HOST, m.BROADCAST, 7, (tick,)))
    frames.append(m.encode(m.KINEMATIC, m.HOST, 1, 8, (tick, 1.0) + (0.0,) * 12))
    for f in frames:
        host.write(framing.uart_frame(f))
    settle(nodes)
    dec = m.Decoder()
    for f in framing.Deframer().feed(ret_host.rx):
        msg = dec.decode(f)
        if msg[0] == m.KINEMATIC:
            print("K", msg[1], " ".join("%.5f" % x for x in msg[4][1:]))


run()
