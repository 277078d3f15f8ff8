# A 3-link UART ring on memory wires (firmware/node.py ChainNode, ring=True), runnable under
# MicroPython and CPython alike: tick 5 runs whole; of tick 6 the SYNC and K_0 are lost
# and only the host's goal (from its last K_N) comes. Prints every TORQUE that comes back
# on the return wire: "T <link> <tick> <state>".
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import framing                # noqa: E402
from bus_protocol import messages as m          # noqa: E402
from firmware import auth                       # noqa: E402
from firmware.agent import LinkAgent            # noqa: E402
from firmware.hal.mem import mem_wire, settle     # noqa: E402
from firmware.hal.sim import SimHAL             # noqa: E402
from firmware.node import ChainNode             # noqa: E402

N = 3


def ring(auth_cfg=None):
    """The ring: (the host's end of wire 0, the nodes, the return wire from the tip). With
    `auth_cfg` every link checks host commands with it (firmware/auth.py guard)."""
    host, up = mem_wire()
    nodes = []
    for i in range(N):
        cfg = {"link": i + 1, "n_links": N, "dh": {"type": "revolute", "a": 0.5},
               "behaviours": {"proxy": {"weight": 1.0}}}
        agent = LinkAgent(cfg, SimHAL())
        if auth_cfg is not None:
            auth.guard(agent, {"auth": auth_cfg})
        nxt, down = mem_wire()
        nodes.append(ChainNode(agent, up, down, bufsize=2048, ring=True))
        up = nxt
    return host, nodes, nxt


def print_torques(ret):
    """Every TORQUE that came back on the return wire: "T <link> <tick> <state>"."""
    dec = m.Decoder()
    for f in framing.Deframer().feed(ret.rx):
        msg = dec.decode(f)
        if msg and msg[0] == m.TORQUE:
            print("T", msg[1], msg[4][0], msg[4][2])


def run():
    host, nodes, ret = ring()

    def send(frames):
        for f in frames:
            host.write(framing.uart_frame(f))
        settle(nodes)

    goal = (0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0)
    for tick, lost in ((5, False), (6, True)):
        frames = [m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, 0.1 * i, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
                  for i in range(N)]
        if not lost:
            frames += [m.encode(m.SYNC, m.HOST, m.BROADCAST, 7, (tick,)),
                       m.encode(m.KINEMATIC, m.HOST, 1, 8, (tick, 1.0) + (0.0,) * 12)]
        send(frames)
        send([m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick,) + goal)])
    print_torques(ret)


if __name__ == "__main__":
    run()
