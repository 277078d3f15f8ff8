"""In-process lockstep runner: firmware LinkAgent objects in this CPython process, every
frame encoded and routed through bus_protocol by a loopback bus, synthetic clock."""
import heapq
from collections import deque

from bus_protocol import medium
from bus_protocol import messages as m
from firmware import auth
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL

# PING rounds after the last tick: on a lossy bus the PING or a STATUS may be lost
# (30 % loss: 3 rounds left 4 of 10 links unheard, 8 none; tests/test_faults.py)
STATUS_TRIES = 8


class LoopbackBus:
    """Delivers frames in FIFO order by destination address (bus_protocol.medium.receivers).
    With `overhear` = d, a KINEMATIC frame for link j also reaches links j+1..j+d (their
    filters take their proximal neighbours' packets: firmware/neighbours.py). When nothing
    is left to deliver, every agent hears that the bus went quiet (LinkAgent.on_quiet: its
    hop timeout) until none has more to say."""

    def __init__(self, agents, host):
        self.agents = agents
        self.host = host          # callable(frame) -> frames to send
        self.queue = deque()
        self.overhear = 0
        self.quiet = False        # call on_quiet (agents with neighbours or faults)
        self._routes = {}         # header bytes (type, src, dst) -> route()

    def send(self, buf, n=None):
        self.queue.append(bytes(buf[:n]))   # buf[:None]: all of it

    def receivers(self, f):
        dst = f[2] if len(f) > 2 else m.HOST   # too short for an address: the host counts it bad
        return medium.receivers(dst, f[1] if len(f) > 1 else None, len(self.agents),
                                self.overhear if f[0] == m.KINEMATIC else 0)

    def route(self, f):
        """One callable that hands f to receivers(f) and returns the frames the host
        answers: the host's on_frame or an agent's receive itself where one takes it.
        Worked out once per (type, source, destination): make bench, routing every frame
        was a tenth of the run."""
        addrs = self.receivers(f)
        takes = [self.host if a == m.HOST else self.agents[a - 1].receive for a in addrs]
        if len(takes) == 1:
            return takes[0]
        host = takes.pop(0) if addrs and addrs[0] == m.HOST else None   # address 0 comes first

        def deliver(f):
            out = host(f) if host is not None else None
            for receive in takes:
                receive(f)
            return out   # queued after what the agents sent meanwhile
        return deliver

    def run(self, frames):
        q = self.queue
        q.extend(frames)
        routes = self._routes
        while True:
            while q:   # deliver the next frame (written out here: a call a frame, make bench)
                f = q.popleft()
                deliver = routes.get(f[:3])
                if deliver is None:
                    deliver = routes[f[:3]] = self.route(f)
                out = deliver(f)
                if out:
                    q.extend(out)
            if not self.quiet or not any([a.on_quiet() for a in self.agents]):
                return


class FaultyBus(LoopbackBus):
    """The loopback bus with a FaultSet: frames cross wires that lose, corrupt and delay
    them (time-ordered delivery; a frame later than the tick's period arrives in the next
    tick, where it is stale), and crashed links neither hear nor say anything. JOINT_STATE
    and TORQUE are the board's own encoder and motor wires, not the bus: never faulted."""

    def __init__(self, agents, gp, faults, period, make_agent):
        LoopbackBus.__init__(self, agents, gp.on_frame)
        self.gp = gp
        self.faults = faults
        self.period = period
        self.make_agent = make_agent
        self.t0 = 0.0
        self.now = 0.0
        self.heap = []
        self.seq = 0
        self.down = set()

    class _Port:
        def __init__(self, bus, link):
            self.bus, self.link = bus, link

        def __call__(self, buf, n=None):
            self.bus.post(bytes(buf[:n]) if n is not None else bytes(buf), self.link)

    def post(self, frame, src):
        if src in self.down:
            return
        t = self.now
        if frame[0] not in (m.JOINT_STATE, m.TORQUE):
            dst = frame[2]
            wire = src if dst == m.HOST or dst == m.BROADCAST else dst
            got = self.faults.on_wire(self.t0, frame, wire)
            if got is None:
                return
            frame, delay = got
            t += delay
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, frame))

    def tick(self, t):
        """Nodes crash and come back (a fresh agent: a reboot) at the tick's time."""
        self.t0 = t
        for i in range(len(self.agents)):
            down = self.faults.crashed(t, i + 1)
            if down and i + 1 not in self.down:
                self.down.add(i + 1)
            elif not down and i + 1 in self.down:
                self.down.discard(i + 1)
                self.agents[i] = self.make_agent(i, FaultyBus._Port(self, i + 1))
                if self.gp.signer is not None:   # its boot line heard (processes.Cluster.restart):
                    self.gp.signer.new_block()   # a block it has not seen (firmware/auth.py)

    def deliver_at(self, t, f):
        self.now = t
        for addr in self.receivers(f):
            if addr == m.HOST:
                for g in self.host(f):
                    self.post(g, m.HOST)
            elif addr not in self.down:
                self.agents[addr - 1].receive(f)

    def run(self, frames):
        self.now = 0.0
        late = self.heap
        self.heap = [(0.0, s, f) for (_, s, f) in late]   # last tick's late frames arrive first
        heapq.heapify(self.heap)
        for f in frames:
            self.post(f, m.HOST)
        live = [a for i, a in enumerate(self.agents) if i + 1 not in self.down]
        while True:
            while self.heap and self.heap[0][0] <= self.period:
                t, _, f = heapq.heappop(self.heap)
                self.deliver_at(t, f)
            # quiet: agents bridge missing packets; then the host sends a goal on its last
            # K_N if this tick's did not come; then agents act on the last goal they have
            if any([a.on_quiet(False) for a in live]):
                continue
            stale = self.gp.close_stale()
            if stale:
                for g in stale:
                    self.post(g, m.HOST)
                continue
            if not any([a.on_quiet() for a in live]):
                return


def core_name(agent):
    """The core an agent's cycle ran on: "linkcore" (the C core) or "python"
    (firmware/pycore.py, the pure Python's)."""
    name = getattr(agent.core, "__name__", type(agent.core).__name__)
    return "python" if name == "firmware.pycore" else name


def make_agent(sc, i, send, run_auth=None):
    """Link i+1's agent; with a run's RunAuth (host/tools/keys.py) behind its check of
    host commands (firmware/auth.py), its highest block kept across its restarts as a
    board's flash keeps it."""
    a = LinkAgent(sc.agent_configs[i], SimHAL(send))
    if run_auth is not None:
        auth.guard(a, {"auth": run_auth.node_auth()}, run_auth.stores.setdefault(i, auth.MemBlock()))
    return a


def make_agents(sc, send, run_auth=None):
    return [make_agent(sc, i, send, run_auth) for i in range(sc.n)]


def run(loop, progress=None):
    """Run `loop` with firmware agents in this process; -> loop.stats."""
    sc = loop.sc
    depth = max([len(c.get("neighbours", {}).get("dh", ())) for c in sc.agent_configs] + [0])
    if loop.faults:
        bus = FaultyBus([], loop.gp, loop.faults, 1.0 / sc.control_rate_hz,
                        lambda i, port: make_agent(sc, i, port, loop.auth))
        bus.agents = [make_agent(sc, i, FaultyBus._Port(bus, i + 1), loop.auth) for i in range(sc.n)]

        def exchange(frames, k, deadline):
            bus.tick(loop.t)
            bus.run(frames)
    else:
        bus = LoopbackBus([], loop.gp.on_frame)
        bus.agents = make_agents(sc, bus.send, loop.auth)

        def exchange(frames, k, deadline):
            bus.run(frames)
    bus.overhear = depth
    bus.quiet = depth > 0
    loop.bus = bus
    stats = loop.run(exchange, progress)
    stats.cores = [core_name(a) for a in bus.agents]
    bus.run([loop.gp.ping()])   # link health from STATUS, as from boards
    for _ in range(STATUS_TRIES - 1):   # asked again where a PING or STATUS was lost (a lossy bus)
        if not loop.gp.status_missing():
            break
        bus.run([loop.gp.ping(fresh=False)])
    return stats
