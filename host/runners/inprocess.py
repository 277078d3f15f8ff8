"""In-process lockstep runner: firmware LinkAgent objects in this CPython process, every
frame encoded and routed through bus_protocol by a loopback bus, synthetic clock."""
from collections import deque

from bus_protocol import medium
from bus_protocol import messages as m
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL


class LoopbackBus:
    """Delivers frames in FIFO order by destination address (bus_protocol.medium.receivers)."""

    def __init__(self, agents, host):
        self.agents = agents
        self.host = host          # callable(frame) -> frames to send
        self.queue = deque()
        self.frames = 0

    def send(self, buf, n=None):
        self.queue.append(bytes(buf[:n]) if n is not None else bytes(buf))

    def run(self, frames):
        q = self.queue
        q.extend(frames)
        agents = self.agents
        while q:
            f = q.popleft()
            self.frames += 1
            dst = f[2] if len(f) > 2 else m.HOST   # too short for an address: the host counts it bad
            for addr in medium.receivers(dst, f[1] if len(f) > 1 else None, len(agents)):
                if addr == m.HOST:
                    q.extend(self.host(f))
                else:
                    agents[addr - 1].receive(f)


def make_agents(sc, send):
    return [LinkAgent(cfg, SimHAL(send)) for cfg in sc.agent_configs]


def run(loop, progress=None):
    """Run `loop` with firmware agents in this process; -> loop.stats."""
    bus = LoopbackBus([], loop.gp.on_frame)
    bus.agents = make_agents(loop.sc, bus.send)
    stats = loop.run(lambda frames, k, deadline: bus.run(frames), progress)
    bus.run([loop.gp.ping()])   # link health from STATUS, as from boards
    return stats
