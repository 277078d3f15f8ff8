# Four link agents behind their ChainNodes, joined by memory wires (firmware/hal/mem.py),
# as a plain chain, as a UART ring, and as a ring whose return wire is lost at tick 10;
# runnable under MicroPython and CPython alike (the repository root on sys.path). Per tick
# the host sends every joint state, SYNC, K_0, an assertion and GOAL, and the script
# prints, in hex, every byte that comes back to it (up from link 1, and on a ring the
# return wire from the tip). The links carry gravity assertions (one not), link 3 sends
# K_i twice, the tip K_4 too on the ring that loses its wire (and answers a PING first
# then: its buffer fills past where ChainNode.send writes it out, which finds the dead
# wire), and from tick 8 the tip is out (link 3 sends K_3 to the host too). With linkcore the hot frames (K_i, the gravity ASSERT, TORQUE) are
# queued on the node's transmit buffers in C: tests/test_native.py, test_linkcore_cpython.py
# and test_mcu.py compare the bytes with the pure Python's. Prints QUEUED and how many
# K_i and TORQUE frames went that way last (0 without linkcore).
from bus_protocol import framing
from bus_protocol import messages as m
from firmware import agent as agent_mod, cycle
from firmware.agent import LinkAgent
from firmware.hal.mem import mem_wire, settle
from firmware.hal.sim import SimHAL
from firmware.node import ChainNode

N = 4
DH = [("revolute", 0.1, 0.2, 0.5, 1.5707963), ("prismatic", 0.0, 0.1, 0.0, 0.0),
      ("revolute", 0.2, 0.05, 0.3, 0.7), ("revolute", -0.3, 0.0, 0.4, 0.0)]


class Counted:
    """A linkcore whose rx answers are counted: K_QUEUED, and GOAL_ACTED | DUE_QUEUED."""

    def __init__(self, core):
        self.core = core
        self.k = self.torque = 0

    def __getattr__(self, name):   # the rest of linkcore (sample, ...) as it is
        return getattr(self.core, name)

    def rx(self, frame, n, S, I, tx, state, blk, N, V):
        t = self.core.rx(frame, n, S, I, tx, state, blk, N, V)
        if t == agent_mod.K_QUEUED:
            self.k += 1
        elif t >= agent_mod.GOAL_ACTED and (t - agent_mod.GOAL_ACTED) & cycle.DUE_QUEUED:
            self.torque += 1
        return t


def _no_time():
    return 0


def _agent(cfg):
    """A link agent on a simulated joint whose clock stands still (STATUS and TIMING report
    times: the same everywhere), its linkcore's answers counted."""
    hal = SimHAL()
    hal.ticks_us = _no_time
    agent = LinkAgent(cfg, hal)
    if agent.core.__name__ == "linkcore":
        agent._lc = (Counted(agent.core),) + agent._lc[1:]
    return agent


def print_hex(prefix, data):
    """One line: prefix and data in hex, written in pieces (a board's fragmented heap may
    hold no block for the whole line)."""
    print(prefix, end="")
    for i in range(0, len(data), 128):
        print("".join("%02x" % b for b in data[i:i + 128]), end="")
    print()


def chain(ring, lost=False):
    host, up = mem_wire()   # the host's wire into link 1
    back = None             # a ring's return wire from the tip
    nodes = []
    for i in range(N):
        t, th, d, a, al = DH[i]
        beh = {"proxy": {"weight": 1.0}, "assertions": {"weight": 0.5}}
        if i != 1:
            beh["gravity"] = {"g": [0.0, 0.0, -9.81]}
        cfg = {"link": i + 1, "n_links": N, "dh": {"type": t, "theta": th, "d": d, "a": a, "alpha": al},
               "mass": 2.0 + i, "centroid": [-0.1, 0.0, 0.02], "u_sat": 100.0, "behaviours": beh}
        if i == 2 or (lost and i == N - 1):
            cfg["kinematic_copies"] = 2
        agent = _agent(cfg)
        if i < N - 1:
            nxt, down = mem_wire()
        elif ring:
            back, down = mem_wire()
        else:
            nxt, down = None, None
        nodes.append(ChainNode(agent, up, down, bufsize=2048, ring=ring))
        up = nxt
    seq = 0
    for tick in range(5, 13):
        frames = [m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, 0.1 * i + 0.01 * tick, 0.2 - 0.03 * i, 0,
                                                              0.0, 0.0, 0.0, 0.0, 0.0, 0.0)) for i in range(N)]
        if lost and tick == 10:
            nodes[-1].down.hup = True   # the return wire's far end is gone
            frames.append(m.encode(m.COMMAND, m.HOST, N, seq, (m.CMD_PING, 0.0)))
        frames.append(m.encode(m.SYNC, m.HOST, m.BROADCAST, seq, (tick,)))
        frames.append(m.encode(m.KINEMATIC, m.HOST, 1, seq, (tick, 1.0) + (0.0,) * 12))
        if tick == 8:
            frames.append(m.encode(m.COMMAND, m.HOST, m.BROADCAST, seq, (m.CMD_NODE_OUT, float(N))))
        frames.append(m.encode(m.ASSERT, m.HOST, m.BROADCAST, seq,
                               (tick, 2, 1, 0.3, 0.1 * tick, 0.2, 1.0, -2.0, 0.5, 0.0, 0.0, 0.0)))
        frames.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, seq,
                               (tick, 0, 0.5, 0.2, 0.1, 3.0, -1.0, 2.0, 0.0, 0.0, 0.0)))
        seq += 1
        for f in frames:
            host.write(framing.uart_frame(f))
            settle(nodes)
        for name, wire in (("up", host), ("back", back)):
            if wire is not None and wire.rx:
                print_hex("WIRE %s %d " % (name, tick), wire.rx)
                wire.rx = b""
    cores = [nd.agent._lc[0] for nd in nodes if isinstance(nd.agent._lc[0], Counted)]
    return sum(c.k for c in cores), sum(c.torque for c in cores)


def lone_tip(copies):
    """The tip of a two-link ring alone, the host standing in for link 1, every frame of a
    tick in one read; at tick 7 its return wire is gone and a PING comes first: STATUS,
    K_2 (copies times) and TORQUE queue up in one poll round, past where ChainNode.send
    writes the buffer out and finds the wire dead."""
    agent = _agent({"link": 2, "n_links": 2, "dh": {"type": "revolute", "a": 0.5}, "mass": 1.0,
                    "behaviours": {"proxy": {"weight": 1.0}}, "kinematic_copies": copies})
    host, up = mem_wire()
    down, back = mem_wire()
    node = ChainNode(agent, up, down, ring=True, bufsize=1024)
    for tick in (5, 6, 7, 8):
        frames = [m.encode(m.JOINT_STATE, m.HOST, 2, 0, (tick, 0.1, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))]
        if tick == 7:
            down.hup = True
            frames.append(m.encode(m.COMMAND, m.HOST, 2, 0, (m.CMD_PING, 0.0)))
        frames += [m.encode(m.SYNC, m.HOST, m.BROADCAST, 0, (tick,)),
                   m.encode(m.KINEMATIC, 1, 2, 0, (tick, 1.0) + (0.0,) * 12),
                   m.encode(m.GOAL, m.HOST, m.BROADCAST, 0, (tick, 0, 0.5, 0.2, 0.1, 3.0, -1.0, 2.0, 0.0, 0.0, 0.0))]
        host.write(b"".join(framing.uart_frame(f) for f in frames))
        node.poll()
        for name, wire in (("tip-up", host), ("tip-back", back)):
            if wire.rx:
                print_hex("WIRE %s %d %d " % (name, copies, tick), wire.rx)
                wire.rx = b""
    c = agent._lc[0]
    return (c.k, c.torque) if isinstance(c, Counted) else (0, 0)


def run():
    k = t = 0
    for ring, lost in ((False, False), (True, False), (True, True)):
        dk, dt = chain(ring, lost)
        k += dk
        t += dt
    for copies in (1, 2, 3):
        dk, dt = lone_tip(copies)
        k += dk
        t += dt
    print("QUEUED %d %d" % (k, t))


if __name__ == "__main__":
    run()
