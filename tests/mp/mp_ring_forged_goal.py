# A 3-link UART ring on memory wires (firmware/node.py ChainNode, ring=True) whose nodes
# check host commands (firmware/auth.py, the GOAL protected): tick 5 runs whole; at tick 6
# a device on wire 0 sends a forged GOAL for tick 6, plain and under another key, in the
# same write just ahead of the host's. A node holds a tick's GOAL as had only once one has
# passed its check, so each takes the genuine one. Runnable under MicroPython and CPython
# alike. Prints every TORQUE that comes back on the return wire, "T <link> <tick> <state>",
# then each link's refusals, "A <link> <mac> <replay> <plain>".
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from binascii import hexlify                    # noqa: E402

from bus_protocol import framing                # noqa: E402
from bus_protocol import messages as m          # noqa: E402
from bus_protocol.mac import Hmac               # noqa: E402
from firmware.hal.mem import settle             # noqa: E402
from tests.mp.mp_ring_goal import N, print_torques, ring   # noqa: E402

KEY = bytes(range(32))
BLOCK = 1


def run():
    host, nodes, ret = ring({"key": hexlify(KEY).decode(), "floor": BLOCK})

    def send(frames):
        host.write(b"".join([framing.uart_frame(f) for f in frames]))
        settle(nodes)

    hm = Hmac(KEY)
    other = Hmac(bytes(32))
    fv = BLOCK << m.COUNTER_BITS
    goal = (0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0)
    for tick in (5, 6):
        send([m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, 0.1 * i, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
              for i in range(N)] + [m.encode(m.SYNC, m.HOST, m.BROADCAST, 7, (tick,)),
                                    m.encode(m.KINEMATIC, m.HOST, 1, 8, (tick, 1.0) + (0.0,) * 12)])
        plain = m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick,) + goal)
        forged = m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick, 0, 1.0, 0.0, 0.0, 500.0) + (0.0,) * 5)
        fv += 1
        batch = [forged, m.protect(forged, other, 0, fv + 1000)] if tick == 6 else []
        send(batch + [m.protect(plain, hm, 0, fv)])
    print_torques(ret)
    for nd in nodes:
        print("A", nd.link, *nd.agent.auth.counts())


run()
