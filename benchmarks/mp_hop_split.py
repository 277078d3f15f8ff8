# Run on make mcu-bench's emulated boards after mp_node_cycle.main(): where a phase's
# instructions go, the node's share and the agent's. Prints, per phase (interquartile mean,
# us: 1 us = 1000 instructions under QEMU -icount shift=0):
#   SPLIT node  <phase> us   the same poll rounds with the agent's receive() a no-op: the
#                            node's read, cut-through, COBS decode and hand-over
#   SPLIT agent <frame> us   the agent's receive() alone, fed the decoded frames (its sends
#                            go nowhere, and what linkcore queues on the node's transmit
#                            buffers is dropped): js, sync, k, goal
#   SPLIT ring  <phase> us   the node alone, the same link on a UART ring
#   SPLIT send  k us         node.send() of one K frame: COBS encode, queue, write
import gc

import mp_node_cycle as nc


def run(cycles=40):
    stamp, tdiff, us = nc.clock()
    from firmware import layout
    from bus_protocol import messages as m
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    from firmware.node import ChainNode
    up, down = nc.Port(), nc.Port()
    agent = LinkAgent(nc.config(), SimHAL())
    node = ChainNode(agent, up, down)
    pre = nc.inputs()
    zero = []
    for _ in range(9):
        t0 = stamp()
        t1 = stamp()
        zero.append(tdiff(t1, t0))
    zero = nc._med(zero)
    res = {}

    def timed(name, fn, a, b):
        t0 = stamp()
        fn(a, b)
        t1 = stamp()
        res.setdefault(name, []).append(tdiff(t1, t0) - zero)

    def poll(_a, _b):
        node.poll()

    def nothing(buf, n=None):
        pass

    frames = []   # per tick: (name, frame, length) as the node hands them to the agent
    for k in range(nc.TICKS):
        row = []
        for name, t, src, dst, v in (
                ("js", m.JOINT_STATE, 0, 3, (k, 0.1, 0.2, 0, 0., 0., 0., 0., 0., 0.)),
                ("sync", m.SYNC, 0, 255, (k,)),
                ("k", m.KINEMATIC, 2, 3, (k, 1., 0., 0., 0., 1.5, 0., 0., 0., 0.1, 0., 0., 0., 0.2)),
                ("goal", m.GOAL, 0, 255, (k, 0, 7.5, 0., 0., 10., 20., 0., 0., 0., 3.))):
            b = bytearray(m.MAX_FRAME)
            row.append((name, b, m.encode_into(b, t, src, dst, 1, v)))
        frames.append(row)
    gc.collect()
    gc.disable()
    agent.receive = nothing     # the node alone
    for k in range(cycles):
        gc.collect()
        for name, src in zip(("sync", "k_hop", "goal_hop"), pre[k % nc.TICKS][:3]):
            up.feed(src)
            timed("node " + name, poll, None, None)
    # the same link's node on a UART ring: its broadcasts (SYNC, GOAL) go through _pump
    # (the goal waves), its own frames through cut as on a chain
    ring = ChainNode(agent, nc.Port(), nc.Port(), ring=True)

    def ring_poll(_a, _b):
        ring.poll()
    for k in range(cycles):
        gc.collect()
        for name, src in zip(("sync", "k_hop", "goal_hop"), pre[k % nc.TICKS][:3]):
            ring.up.feed(src)
            timed("ring " + name, ring_poll, None, None)
    del agent.receive           # the class's method again
    agent.hal.send = node.send  # (the ring node took them over)
    agent.on_wire(node._blk)
    send = agent.hal.send
    agent.hal.send = nothing    # the agent alone: its Python's sends go nowhere, and the
    blk = node._blk             # frames linkcore queues (as inside a poll round) are dropped
    blk[layout.BLK_BATCH] = 1
    for k in range(4 * cycles):
        gc.collect()
        for name, b, n in frames[k % nc.TICKS]:
            timed("agent " + name, agent.receive, b, n)
            blk[4] = blk[5] = 0
    blk[layout.BLK_BATCH] = 0
    agent.hal.send = send
    _, b, n = frames[0][2]
    for k in range(cycles):
        timed("send k", node.send, b, n)
        node.flush()
    gc.enable()
    for name in sorted(res):
        print("SPLIT %s %.3f" % (name, nc._iqm(res[name]) * us))
