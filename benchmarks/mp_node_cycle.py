# Run under MicroPython: the unix port (make bench), or a board through mpremote
# (`linkteam budget --measure-on PORT` runs it on a flashed board). One link agent
# behind a ChainNode with in-memory ports. Prints its RAM after init (gc.mem_alloc),
# bytes allocated per control cycle (median), and per-hop compute (us) for host/budget.py:
#   HOP k_us     poll round that takes K_{i-1} in and sends K_i
#   HOP goal_us  poll round that takes the GOAL in and sends TORQUE
#   HOP fwd_us   poll round that forwards one passing frame
import gc
import sys
import time

try:
    _root = (__file__.rsplit("/", 1)[0] if "/" in __file__ else ".") + "/.."
except NameError:
    _root = "."
sys.path.insert(0, _root)

from bus_protocol import framing            # noqa: E402
from bus_protocol import messages as m      # noqa: E402

N = 10


def config():
    return {"link": 3, "n_links": N, "dh": {"type": "revolute", "a": 0.75},
            "q_low": -3.1416, "q_high": 3.1416, "u_sat": 1e6, "mass": 10.0,
            "centroid": [-0.375, 0.0, 0.0], "behaviours": {"proxy": {"weight": 1.0}}}


class Port:
    def __init__(self):
        self.inq = []
        self.out = 0

    def write(self, b):
        self.out += len(b)
        return len(b)

    def readinto(self, buf):
        if not self.inq:
            return 0
        d = self.inq.pop(0)
        buf[:len(d)] = d
        return len(d)


def wire(mtype, src, dst, values):
    return framing.uart_frame(m.encode(mtype, src, dst, 1, values))


def main(cycles=300 if sys.platform in ("linux", "darwin") else 60):   # a board's heap: fewer
    gc.collect()
    a0 = gc.mem_alloc()
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    from firmware.node import ChainNode
    gc.collect()
    a1 = gc.mem_alloc()
    up, down = Port(), Port()
    agent = LinkAgent(config(), SimHAL())
    node = ChainNode(agent, up, down, bufsize=2048)
    gc.collect()
    a2 = gc.mem_alloc()
    print("RAM after init: gc.mem_alloc() %d bytes (imported modules %d, agent + node %d)" % (a2, a1 - a0, a2 - a1))
    # pre-built input so the measurement sees only the node's own allocation
    pre = []
    for k in range(cycles):
        js = wire(m.JOINT_STATE, 0, 3, (k, 0.1, 0.2, 0, 0., 0., 0., 0., 0., 0.))
        sy = wire(m.SYNC, 0, 255, (k,))
        kk = wire(m.KINEMATIC, 2, 3, (k, 1., 0., 0., 0., 1.5, 0., 0., 0., 0.1, 0., 0., 0., 0.2))
        gg = wire(m.GOAL, 0, 255, (k, 0, 7.5, 0., 0., 10., 20., 0., 0., 0., 3.))
        fw = wire(m.TORQUE, 7, 0, (k, 1.0, 1, 0., 0., 0., 0., 0., 0.))
        pre.append((js + sy, kk, gg, fw))
    t_k, t_g, t_f, alloc = [], [], [], []
    gc.collect()
    gc.disable()
    for k in range(cycles):
        if gc.mem_free() < 32768:   # room for a cycle's garbage, collected outside the timing
            gc.collect()
        js_sy, kk, gg, fw = pre[k]
        b0 = gc.mem_alloc()
        up.inq.append(js_sy)
        node.poll()
        up.inq.append(kk)
        t0 = time.ticks_us()
        node.poll()
        t1 = time.ticks_us()
        up.inq.append(gg)
        node.poll()
        t2 = time.ticks_us()
        b1 = gc.mem_alloc()
        down.inq.append(fw)
        t3 = time.ticks_us()
        node.poll()
        t4 = time.ticks_us()
        t_k.append(time.ticks_diff(t1, t0))
        t_g.append(time.ticks_diff(t2, t1))
        t_f.append(time.ticks_diff(t4, t3))
        if b1 >= b0:
            alloc.append(b1 - b0)
    gc.enable()

    def med(v):
        v = sorted(v)
        return v[len(v) // 2]
    print("ALLOC per control cycle (median of %d): %d bytes" % (len(alloc), med(alloc)))
    print("HOP k_us %d" % med(t_k))
    print("HOP goal_us %d" % med(t_g))
    print("HOP fwd_us %d" % med(t_f))
    print("torque", agent.u, "bad", agent.decoder.bad)


if __name__ == '__main__':
    main()
