"""One node loop (firmware/main.py serve) for a one-link node and a node hosting several
links (firmware/group.py): under a missing goal and a dead upstream neighbour both act in
the same ticks (the goal timeout acts on the last goal, the hop timeout bridges K_0), and
an agent in any fault state (HOLD here, not only BRAKED) keeps the loop at its brake PD's
rate. Lockstep on a simulated millisecond clock: the same on a quiet and a busy machine."""
import pytest

from bus_protocol import messages as m
from bus_protocol.mac import Hmac
from bus_protocol.states import HOLD
from firmware import auth, main, safety
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL

N = 2
DH = [("revolute", 0.1, 0.2, 0.5, 1.5707963), ("revolute", 0.2, 0.05, 0.3, 0.7)]
QUIET = {"quiet_ms": [2, 2], "goal_quiet_ms": [5, 5]}   # hop and goal timeouts (wall clock, lockstep)
TICK_MS = 20


class Node:
    """The links a node hosts, their bus (frames between them, and from a scripted host
    [(ms, frame)] on a millisecond clock that only wait() moves) and what they send out."""

    def __init__(self, links, script, end_ms):
        self.now = 0
        self.script = sorted(script, key=lambda e: e[0])
        self.end = end_ms
        self.queue = []
        self.out = []      # (ms, frame) to the host or to a link on another node
        self.waits = []    # (ms, wait_ms) the loop asked for
        self.agents = []
        for i in links:
            t, th, d, a, al = DH[i - 1]
            cfg = {"link": i, "n_links": N, "dh": {"type": t, "theta": th, "d": d, "a": a, "alpha": al},
                   "behaviours": {"proxy": {"weight": 1.0}}}
            self.agents.append(LinkAgent(cfg, SimHAL(send=self._send)))

    @property
    def closed(self):
        return self.now >= self.end

    def ticks_ms(self):
        return self.now

    def _send(self, buf, n=None):
        self.queue.append(bytes(buf[:len(buf) if n is None else n]))

    def wait(self, ms):
        self.waits.append((self.now, ms))
        if self.script and self.script[0][0] <= self.now + ms:
            self.now = max(self.now, self.script[0][0])
            return True
        self.now += ms
        return False

    def poll(self):
        moved = 0
        while self.script and self.script[0][0] <= self.now:
            self.queue.append(self.script.pop(0)[1])
        while self.queue:
            f = self.queue.pop(0)
            moved += 1
            mine = [a for a in self.agents if f[2] in (a.link, m.BROADCAST) and f[1] != a.link]
            for a in mine:
                a.receive(f)
            if not mine or f[2] == m.BROADCAST and f[1] != m.HOST:
                self.out.append((self.now, f))
        return moved

    def acted(self, link):
        """The ticks of link's TORQUE frames, in order."""
        dec = m.Decoder()
        return [dec.decode(f)[4][0] for _, f in self.out if f[0] == m.TORQUE and f[1] == link]


def _host(links):
    """Tick 1 whole; tick 2 without its GOAL; tick 3 without K_0 (link 1's upstream
    neighbour, the host, silent) nor GOAL."""
    enc = m.encode
    script = [(0, enc(m.COMMAND, m.HOST, m.BROADCAST, 0, (m.CMD_RESET, 1.0)))]   # lockstep
    goal = (1, 0.4, 0.1, 0.3, 0.0, 0.0, 0.0, 1.0, 0.5, -0.2)   # goal_id, p_app, f
    for tick in (1, 2, 3):
        t0 = tick * TICK_MS
        for i in links:
            script.append((t0, enc(m.JOINT_STATE, m.HOST, i, 0, (tick, 0.1 * i, 0.0, 0) + (0.0,) * 6)))
        script.append((t0, enc(m.SYNC, m.HOST, m.BROADCAST, 0, (tick,))))
        if tick < 3:
            script.append((t0 + 1, enc(m.KINEMATIC, m.HOST, 1, 0, (tick, 1.0) + (0.0,) * 12)))
        if tick < 2:
            script.append((t0 + 3, enc(m.GOAL, m.HOST, m.BROADCAST, 0, (tick,) + goal)))
    return script


def _run(links, hold_at=None, end_ms=5 * TICK_MS):
    node = Node(links, _host(links), end_ms)
    poll = node.poll
    if hold_at is not None:   # the last hosted agent faults (HOLD) once the clock passes hold_at
        def poll():
            if node.now >= hold_at and node.agents[-1].safety.state == safety.RUN:
                node.agents[-1].safety.trip(safety.F_COMMAND, "test", react=HOLD)
            return node.poll()
    main.serve(node, node.agents, poll, dict(QUIET), ticks_ms=node.ticks_ms)
    return node


@pytest.mark.parametrize("links", [[1], [1, 2]], ids=["one-link", "group"])
def test_a_node_acts_on_the_last_goal_and_bridges_a_silent_neighbour(links):
    node = _run(links)
    for i in links:   # tick 2 on the goal timeout, tick 3 after bridging K_0 too
        assert node.acted(i) == [1, 2, 3], i
    k1 = [m.Decoder().decode(f)[4][0] for _, f in node.out if f[0] == m.KINEMATIC and f[1] == 1]
    if links == [1]:
        assert k1 == [1, 2, 3]   # K_1 to link 2 on another node, bridged from K_0 at tick 3
    assert node.agents[0].bridged == 1


def test_a_group_node_acts_in_the_ticks_a_one_link_node_does():
    one, group = _run([1]), _run([1, 2])
    assert one.acted(1) == group.acted(1)
    assert [t for t, f in one.out if f[0] == m.TORQUE] == [t for t, f in group.out if f[0] == m.TORQUE and f[1] == 1]


@pytest.mark.parametrize("links", [[1], [1, 2]], ids=["one-link", "group"])
def test_a_node_with_an_agent_in_any_fault_state_keeps_its_brake_pd_going(links):
    hold_at = 12 * TICK_MS   # well after the last tick: the bus is silent from its end
    node = _run(links, hold_at, end_ms=25 * TICK_MS)
    assert node.agents[-1].safety.state == HOLD
    after = [ms for t, ms in node.waits if t > hold_at]
    assert after and set(after) == {10}, node.waits
    before = [ms for t, ms in node.waits if 3 * TICK_MS + 10 < t < hold_at]
    assert before and set(before) == {100}


def test_refused_frames_do_not_hold_off_the_bridge_of_a_silent_neighbour():
    """Link 1 with the arm's key; at tick 3 its upstream neighbour (the host's K_0) is
    silent while a rogue sends a forged RELEASE every millisecond for 15 ms: every one is
    refused, and the hop timeout runs from the last frame that was not (docs/security.md),
    so K_1 is bridged 2 ms after the tick's SYNC, as without the rogue, not when the stream ends."""
    key = bytes(range(32))
    hm = Hmac(key)
    fv = [0]

    def signed(f):   # the host's protected frames, in order of freshness
        fv[0] += 1
        return m.protect(f, hm, 0, fv[0]) if f[0] in m.PROTECTED else f
    t0, stream = 3 * TICK_MS, 15
    goal = (3, 1, 0.4, 0.1, 0.3, 0.0, 0.0, 0.0, 1.0, 0.5, -0.2)
    script = [(ms, signed(f)) for ms, f in _host([1])] + [(t0 + 3, signed(m.encode(m.GOAL, m.HOST, m.BROADCAST, 0, goal)))]
    rogue = [(t0 + k, m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_RELEASE, 0.0))) for k in range(1, stream + 1)]

    def run(with_rogue):
        node = Node([1], script + (rogue if with_rogue else []), 5 * TICK_MS)
        auth.guard(node.agents[0], {"auth": {"key": key.hex()}})
        main.serve(node, node.agents, node.poll, {"quiet_ms": [2, 2]}, ticks_ms=node.ticks_ms)
        return node
    for with_rogue in (False, True):
        node = run(with_rogue)
        a = node.agents[0]
        assert sum(a.auth.rejected) == (stream if with_rogue else 0)
        assert a.bridged == 1 and node.acted(1) == [1, 3]   # (tick 2 has no GOAL: it waits for one)
        k1 = [ms for ms, f in node.out if f[0] == m.KINEMATIC and f[1] == 1 and m.Decoder().decode(f)[4][0] == 3]
        assert k1 == [t0 + 2], (with_rogue, k1)
