"""linkcore for CPython (firmware/native/linkcore_cpython.c: the boards' C core,
linkcore_core.h, as a CPython extension module that `make setup` builds) against the
pure-Python firmware, its oracle: CPython agents with and without it send byte-identical
frames (100 agents of random joint type, DH, gains, gravity, poses, assertions, corrupted
and NaN frames: tests/mp/mp_native_cases.py; the reference chain's cycle:
tests/mp/mp_agent_cycle.py; four chain nodes on memory wires, plain and as a ring, whose
hot frames linkcore queues on the nodes' transmit buffers: tests/mp/mp_wire_chain.py), and
the in-process reference run records the same time series to the last bit. Skipped with the reason where the module is not built."""
import subprocess
import sys

import numpy as np
import pytest

from firmware import layout
from tests.conftest import PURE_PYTHON_ENV, REPO, assert_wire_chain, needs, on_linkcore, pure_python


pytestmark = needs("linkcore")


def _cpython(script, env=None):
    r = subprocess.run([sys.executable, str(REPO / "tests" / "mp" / script)], capture_output=True, text=True,
                       cwd=str(REPO), timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.splitlines()


@pytest.mark.parametrize("script", ["mp_native_cases.py", "mp_agent_cycle.py"])
def test_cpython_agents_with_linkcore_send_the_pure_python_frames(script):
    got = _cpython(script)
    want = _cpython(script, PURE_PYTHON_ENV)
    assert len(got) == len(want) and len([x for x in got if x.startswith("FRAME")]) >= 12
    if script == "mp_native_cases.py":   # the agents' own count of those that ran on linkcore
        assert got[-1] == "CORES 100 of 100" and want[-1] == "CORES 0 of 100"
        got, want = got[:-1], want[:-1]
    for g, w in zip(got, want):
        assert g == w


def test_hot_frames_queued_by_linkcore_are_the_pure_pythons_bytes_on_every_wire():
    got = _cpython("mp_wire_chain.py")
    want = _cpython("mp_wire_chain.py", PURE_PYTHON_ENV)
    assert_wire_chain(got, want)


def test_pure_python_switch():
    """LINKTEAM_PURE_PYTHON=1 turns the module off for a whole process."""
    code = "import firmware.linkstate as s; print(s.linkcore is None)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), env=PURE_PYTHON_ENV)
    assert r.stdout.split() == ["True"], r.stderr


@pytest.mark.slow
def test_reference_run_with_linkcore_is_bit_identical(tmp_path):
    from host.run import run_scenario
    from host.scenario.loader import load
    from firmware import linkstate
    assert linkstate.linkcore is not None
    sc = load(REPO / "scenarios" / "reference.toml")
    with_core, _ = run_scenario(sc, tmp_path / "core", quiet=True, make_plots=False)
    with pure_python():
        pure, _ = run_scenario(sc, tmp_path / "pure", quiet=True, make_plots=False)
    assert with_core["e_rms_m"] == pure["e_rms_m"] and with_core["phi_rms_rad"] == pure["phi_rms_rad"]
    a = np.load(tmp_path / "core" / "timeseries.npz")
    b = np.load(tmp_path / "pure" / "timeseries.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert a[k].tobytes() == b[k].tobytes(), k


class Encoder:
    """A board's joint I/O: its reading is in q, qd after read() (no JOINT_STATE frames),
    read() fails where `ok` is False, and write(u) is a motor."""

    def __init__(self, send):
        self.send = send
        self.q = self.qd = 0.0
        self.ok = True
        self.written = []
        self.braked = False
        self.range_valid = False
        self.p_psh = self.x_r = (0.0, 0.0, 0.0)

    def read(self):
        return self.ok

    def write(self, u):
        self.written.append(u)
        return True

    def set_brake(self, on):
        self.braked = on


def _twin_agents(cfg, hal_class=None, core_expected=True):
    """Two agents of one config, on linkcore and in pure Python, each sending into a list;
    their clocks stand still (STATUS and TIMING report the cycle time). Their HAL: a
    simulated joint (SimHAL), or `hal_class`."""
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    agents = []
    for pure in (False, True):
        out = []
        hal = (hal_class or SimHAL)(lambda b, n, out=out: out.append(bytes(b[:n])))
        hal.ticks_us = lambda: 0
        if pure:
            with pure_python():
                agents.append((LinkAgent(cfg, hal), out))
        else:
            agents.append((LinkAgent(cfg, hal), out))
    assert on_linkcore(agents[0][0]) == core_expected and not on_linkcore(agents[1][0])
    return agents


def test_linkcore_closing_the_cycle_at_its_goal_sends_the_pure_python_frames(monkeypatch):
    """linkcore.rx closes a plain cycle at its goal (GOAL_ACTED: the torque, its frame, and
    which of STATUS and TIMING are due); the agent falls back to its Python where the cycle
    is not plain (a latched fault, torque checks, a missing K, a fault between the sync and
    the goal). Every frame out, byte for byte, against the pure Python, over 40 ticks of
    configs that make each of those happen, with TIMING and STATUS at their slots."""
    from bus_protocol import messages as m
    from firmware import agent as agent_mod, layout
    rng = np.random.default_rng(7)
    closed = {"linkcore": 0, "python": 0, "status": 0, "timing": 0}
    close = agent_mod._close

    def counted(a, u, encoded, state, due=-1):   # who closed the cycle, and what was due
        if on_linkcore(a):
            closed["linkcore" if due >= 0 else "python"] += 1
            closed["status"] += due >= 0 and due & layout.DUE_STATUS
            closed["timing"] += due >= 0 and due & layout.DUE_TIMING
        close(a, u, encoded, state, due)
    monkeypatch.setattr(agent_mod, "_close", counted)
    faulted = set()
    for case in range(24):
        link = 1 + case % 9
        safety_cfg = {"watchdog_cycles": 3, "readmit_cycles": 2 if case % 4 == 1 else 0,
                      "reactions": {"nan_input": "report", "over_torque": "report"} if case % 3 == 0 else {}}
        if case % 6 == 2:
            safety_cfg.update(stall_u=0.5, stall_cycles=3, stall_qd=10.0)
        if case % 6 == 4:
            safety_cfg.update(over_torque_cycles=2)
        cfg = {"link": link, "n_links": 10, "dh": {"type": "revolute", "a": 0.5 + 0.1 * case},
               "q_low": -2.0, "q_high": 2.0, "u_sat": 5.0 + case, "mass": 2.0,
               "centroid": [0.2, 0.0, 0.0], "status_every": (1, 3, 12, 5)[case % 4],
               "behaviours": {"proxy": {"weight": 1.0}, "centering": {"weight": 0.5},
                              "gravity": {"g": [0.0, 0.0, -9.81]} if case % 2 else None},
               "safety": safety_cfg}
        if cfg["behaviours"]["gravity"] is None:
            del cfg["behaviours"]["gravity"]
        (fast, fast_out), (pure, pure_out) = _twin_agents(cfg)
        q = 0.1
        for tick in range(40):
            q += float(rng.uniform(-0.05, 0.05))
            frames = [m.encode(m.JOINT_STATE, m.HOST, link, 1, (tick, q, float(rng.uniform(-1, 1)), 0) + (0.0,) * 6),
                      m.encode(m.SYNC, m.HOST, m.BROADCAST, 2, (tick,))]
            if not (case % 5 == 3 and tick % 7 == 3):   # now and then no K: the goal acts on a stale one
                frames.append(m.encode(m.KINEMATIC, link - 1, link, 3, (tick,) + (1.0, 0.0, 0.0, 0.0)
                                       + tuple(float(x) for x in rng.uniform(-1, 1, 9))))
            if case % 3 == 0 and tick == 20:   # a NaN after the sync: F_NAN, reported, still RUN
                frames.append(m.encode(m.ASSERT, m.HOST, m.BROADCAST, 4, (tick, link, 1, float("nan")) + (0.0,) * 8))
            if not (case % 8 == 5 and 10 <= tick < 15):   # goals stop: the watchdog, then re-admission
                frames.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick, 0)
                                       + tuple(float(x) for x in rng.uniform(-20, 20, 9))))
            if case % 8 == 5 and tick == 16:
                frames.append(m.encode(m.COMMAND, m.HOST, link, 5, (m.CMD_RELEASE, 0.0)))
            for f in frames:
                fast.receive(f)
                pure.receive(f)
            assert fast_out == pure_out, (case, tick)
            # the integers both keep (linkcore's flags, its last SYNC and where the reading
            # is, I_JOINT, are its own), and safety's per-sample state
            assert fast.I[:8] == pure.I[:8] and fast.I[11:15] == pure.I[11:15]
            assert (fast.safety.faults, fast.safety.state) == (pure.safety.faults, pure.safety.state)
            assert (fast.safety.N, fast.safety.V) == (pure.safety.N, pure.safety.V)
            if fast.safety.faults:
                faulted.add(case)
            fast_out.clear()
            pure_out.clear()
    # both ways of closing a cycle ran, STATUS and TIMING were due on linkcore's, and
    # faults were latched (stall, over-torque, NaN, stale goals) in a third of the cases
    assert closed["linkcore"] > 300 and closed["python"] > 300, closed
    assert closed["status"] > 20 and closed["timing"] > 20, closed
    assert len(faulted) >= 8, faulted


@pytest.mark.parametrize("reading", ["joint_state", "encoder"])
def test_linkcore_sample_is_the_pure_pythons_sample(reading):
    """linkcore.sample takes the sync's reading where safety's checks latch nothing; the
    agent samples in Python otherwise. Readings that make each check fire (an encoder jump,
    overspeed, a reading frozen while the torque moves, NaN, a failed read, the goal
    watchdog), released again, with the dead-motor check on in some configs and torque
    checks in others; the reading as JOINT_STATE frames (a simulated joint) or in the HAL's
    q, qd (a board's encoder). Every frame, safety's state and per-sample arrays, the
    torque and what reached the motor are the pure Python's, tick by tick."""
    from bus_protocol import messages as m
    from firmware import linkstate
    rng = np.random.default_rng(11)
    taken = {True: 0, False: 0}
    written = 0

    class Counted:   # linkcore, its sample's answers counted
        def __init__(self, core):
            self.core = core

        def __getattr__(self, name):
            return getattr(self.core, name)

        def sample(self, *args):
            done = self.core.sample(*args)
            taken[done] += 1
            return done
    faults = set()
    for case in range(12):
        link = 1 + case % 7
        safety_cfg = {"watchdog_cycles": 4, "max_q_step": 0.3, "qd_max": 20.0, "frozen_cycles": 2 + case % 3,
                      "frozen_du": 0.5, "respond_u": 2.0 if case % 4 == 1 else 0.0, "respond_a": 5.0,
                      "respond_ms": 20.0, "reactions": {"sensor_implausible": "report"} if case % 3 == 2 else {}}
        if case % 4 == 3:
            safety_cfg.update(stall_u=0.5, stall_cycles=3)
        cfg = {"link": link, "n_links": 8, "dh": {"type": ("revolute", "prismatic")[case % 2], "a": 0.4},
               "u_sat": 4.0 + case, "mass": 1.5, "centroid": [0.1, 0.0, 0.0],
               "behaviours": {"proxy": {"weight": 1.0}, "centering": {"weight": 0.5}}, "safety": safety_cfg}
        (fast, fast_out), (pure, pure_out) = _twin_agents(cfg, Encoder if reading == "encoder" else None)
        fast._lc = (Counted(fast._lc[0]),) + fast._lc[1:]
        q, ok = 0.1, True
        for tick in range(60):
            qd = float(rng.uniform(-2, 2))
            if 22 <= tick < 28 and case % 2 == 0:
                qd = 0.0                       # frozen while the torque moves
            else:
                q += float(rng.uniform(-0.05, 0.05))
            if tick == 9 + case % 3:
                q += 0.5                       # an encoder jump
            elif tick == 16:
                qd = 25.0 + case               # overspeed
            elif tick == 33:
                q = float("nan")               # NaN
            ok = tick != 38                    # a failed read
            frames = []
            if reading == "encoder":
                for h in (fast.hal, pure.hal):
                    h.q, h.qd, h.ok = q, qd, ok
            elif ok:
                frames.append(m.encode(m.JOINT_STATE, m.HOST, link, 1, (tick, q, qd, 0) + (0.0,) * 6))
            if q != q:
                q = 0.2
            frames.append(m.encode(m.SYNC, m.HOST, m.BROADCAST, 2, (tick,)))
            frames.append(m.encode(m.KINEMATIC, link - 1, link, 3, (tick,) + (1.0, 0.0, 0.0, 0.0)
                                   + tuple(float(x) for x in rng.uniform(-1, 1, 9))))
            if not 46 <= tick < 52:   # goals stop: the watchdog
                frames.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick, 0)
                                       + tuple(float(x) for x in rng.uniform(-5, 5, 9))))
            if tick % 6 == 5 and not 44 <= tick < 54:   # released now and then, back to RUN
                frames.append(m.encode(m.COMMAND, m.HOST, link, 5, (m.CMD_RELEASE, 0.0)))
            for f in frames:
                fast.receive(f)
                pure.receive(f)
            assert fast_out == pure_out, (case, tick)
            assert (fast.safety.faults, fast.safety.state) == (pure.safety.faults, pure.safety.state), (case, tick)
            assert (fast.safety.N, fast.safety.V) == (pure.safety.N, pure.safety.V), (case, tick)
            # the torque, and the reading (in S where linkcore's sample took it)
            sampled = fast.I[layout.I_FLAGS] & layout.FLAG_SAMPLED
            got = (fast.S[layout.S_Q], fast.S[layout.S_QD]) if sampled else (fast.q, fast.qd)
            assert fast.u[0] == pure.u[0] and got == (pure.q, pure.qd), (case, tick)
            if reading == "encoder":
                assert fast.hal.written == pure.hal.written
            faults.add(fast.safety.faults)
            fast_out.clear()
            pure_out.clear()
        written += len(getattr(fast.hal, "written", ()))
    # the plain sample ran, and so did every check: jump, overspeed, frozen (F_SENSOR),
    # NaN, the watchdog, the dead motor, the stall
    from firmware import safety
    seen = 0
    for f in faults:
        seen |= f
    assert taken[True] > 100 and taken[False] > 100, taken
    assert written > 400 if reading == "encoder" else written == 0, written   # the motor's torques
    want = safety.F_SENSOR | safety.F_NAN | safety.F_GOAL_STALE | safety.F_MOTOR
    assert seen & want == want, hex(seen)


def _config_mid_tick(data):
    """Six ticks of link 2 (JOINT_STATE, SYNC, K_1, GOAL); in tick 2, between its SYNC and
    K_1, the link braked and the CONFIG blob `data` applied; released in tick 3."""
    from bus_protocol import messages as m

    def tick(t, *extra):
        frames = [m.encode(m.JOINT_STATE, 0, 2, 1, (t, 0.3 + 0.01 * t, 0.2, 0) + (0.0,) * 6),
                  m.encode(m.SYNC, 0, 255, 1, (t,))] + list(extra)
        return frames + [m.encode(m.KINEMATIC, 1, 2, 3, (t, 1.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3) + (0.1,) * 6),
                         m.encode(m.GOAL, 0, 255, 2, (t, 0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 5.0))]
    frames = tick(0) + tick(1) + tick(2, m.encode(m.COMMAND, 0, 2, 5, (m.CMD_BRAKE, 0.0)),
                                     m.encode(m.CONFIG, 0, 2, 6, (0, len(data), data)),
                                     m.encode(m.COMMAND, 0, 2, 7, (m.CMD_CONFIG_APPLY, 0.0)))
    return frames + tick(3, m.encode(m.COMMAND, 0, 2, 8, (m.CMD_RELEASE, 0.0))) + tick(4) + tick(5)


@pytest.mark.parametrize("blob", [{"u_sat": 50.0}, {"dh": {"type": "revolute", "a": 0.7, "theta": 0.3}},
                                  {"behaviours": {"proxy": {}, "gravity": {"g": [0, 0, -9]}}}])
def test_a_config_between_a_sync_and_its_k_keeps_the_syncs_a_i(blob):
    """A braked node takes a CONFIG between a tick's SYNC and its K_{i-1}:
    linkcore's new S keeps the tick's state (A_i of the sync, the reading, the
    torque), as the pure Python keeps its own, so K_i and the cycles after are the same."""
    import json
    from bus_protocol import messages as m
    cfg = {"link": 2, "n_links": 4, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 20.0, "mass": 1.0,
           "behaviours": {"proxy": {"weight": 1.0}, "centering": {"weight": 0.5}}}
    (fast, fo), (pure, po) = _twin_agents(cfg)
    data = json.dumps(blob, separators=(",", ":")).encode()

    for f in _config_mid_tick(data):
        fast.receive(f)
        with pure_python():   # (the CONFIG configures it anew: in pure Python still)
            pure.receive(f)
        assert fo == po and fast.u[0] == pure.u[0], f
    assert fast.cfg != cfg and fast.safety.faults == 0 and on_linkcore(fast) and not on_linkcore(pure)
    assert sum(1 for x in _sent(fo) if x and x[0] == m.KINEMATIC) == 6


def _sent(out):
    from bus_protocol import messages as m
    dec = m.Decoder()
    return [dec.decode(f) for f in out]


def test_linkcore_and_python_agree_before_the_first_k_after_a_config_and_with_the_tip_check():
    """Three cases where the two used to differ: a goal before
    any K_{i-1} was composed (linkcore's joint axis started at 0, the Python's at z =
    (0, 0, 1)); a stale goal or a bridged K_0 after a CONFIG applied between runs (linkcore's
    new S had zeroed them); a link that sends its K to the host too for the tip check,
    without neighbours (linkcore sent it down only)."""
    import json
    from bus_protocol import messages as m
    goal = m.encode(m.GOAL, 0, 255, 2, (0, 0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 5.0))
    cfg = {"link": 3, "n_links": 5, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 100.0,
           "behaviours": {"proxy": {"weight": 1.0}}}
    (fast, fo), (pure, po) = _twin_agents(cfg)
    for f in (m.encode(m.SYNC, 0, 255, 1, (0,)), goal):   # the goal before any K
        fast.receive(f)
        pure.receive(f)
    assert fo == po and _sent(fo)[-1][4][1] == pytest.approx(3.0)   # (z x r) . f = 3
    for link in (1, 3):   # link 1 bridges K_0; link 3 acts on a stale goal
        cfg = dict(cfg, link=link)
        (fast, fo), (pure, po) = _twin_agents(cfg)
        blob = json.dumps({"u_sat": 50.0}).encode()
        k = m.encode(m.KINEMATIC, link - 1, link, 3, (0, 1.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3) + (0.0,) * 6)
        for f in (m.encode(m.SYNC, 0, 255, 1, (0,)), k, goal, m.encode(m.COMMAND, 0, link, 5, (m.CMD_BRAKE, 0.0)),
                  m.encode(m.CONFIG, 0, link, 6, (0, len(blob), blob)),
                  m.encode(m.COMMAND, 0, link, 7, (m.CMD_CONFIG_APPLY, 0.0)),
                  m.encode(m.COMMAND, 0, link, 8, (m.CMD_RELEASE, 0.0)), m.encode(m.SYNC, 0, 255, 1, (1,))):
            fast.receive(f)
            pure.receive(f)
        assert fast.safety.faults == 0 and fast.u_sat == 50.0
        fo.clear()
        po.clear()
        assert fast.on_quiet() == pure.on_quiet() is False   # nothing from before the CONFIG
        assert fo == po == []
    cfg = {"link": 4, "n_links": 5, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 100.0,
           "behaviours": {"proxy": {"weight": 1.0}}, "neighbours": {"to_host": True}}
    from firmware import agent as agent_mod
    fast = agent_mod.LinkAgent(cfg, SimHAL_capture(fo := []))
    assert on_linkcore(fast)   # (K_{N-1} to the host: the Python's, on the core's K_{N-1})
    k = m.encode(m.KINEMATIC, 3, 4, 3, (0, 1.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.1) + (0.1,) * 6)
    for f in (m.encode(m.SYNC, 0, 255, 1, (0,)), k):
        fast.receive(f)
    assert [(x[0], x[2]) for x in _sent(fo)] == [(m.KINEMATIC, m.HOST), (m.KINEMATIC, 5)]
    # the host took the tip out: K_{N-1} still goes to the host once a tick, before K_N
    fo.clear()
    fast.receive(m.encode(m.COMMAND, 0, 4, 2, (m.CMD_NODE_OUT, 5.0)))
    k1 = m.encode(m.KINEMATIC, 3, 4, 4, (1, 1.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.1) + (0.1,) * 6)
    for f in (m.encode(m.SYNC, 0, 255, 3, (1,)), k1):
        fast.receive(f)
    assert fast.tip_out and [(x[0], x[2]) for x in _sent(fo)] == [(m.KINEMATIC, m.HOST), (m.KINEMATIC, 5)]


def SimHAL_capture(out):
    from firmware.hal.sim import SimHAL
    hal = SimHAL(lambda b, n: out.append(bytes(b[:n])))
    hal.ticks_us = lambda: 0
    return hal


# The differences docs/architecture.md listed between linkcore and the pure Python, each
# pinned: the same frames, faults and torques on both.

def test_idle_with_a_fault_before_the_first_sync_sends_no_torque_of_no_tick():
    """A fault latched before any SYNC, then the bus lost: the brake's torque reaches the
    motor and no TORQUE goes out (there is no tick to report; CPython could not encode
    tick -1, MicroPython sent it as 0xFFFFFFFF)."""
    from bus_protocol import messages as m
    cfg = {"link": 2, "n_links": 4, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 20.0, "mass": 1.0}
    for agent, out in _twin_agents(cfg, Encoder):
        agent.hal.q, agent.hal.qd = 0.2, 0.1
        agent.receive(m.encode(m.COMMAND, 0, 2, 1, (m.CMD_BRAKE, 0.0)))
        agent.hal.ticks_us = lambda: 10 ** 6   # a second without a SYNC: the bus is lost
        assert agent.idle()
        sent = [x[0] for x in _sent(out)]
        assert m.STATUS in sent and m.TORQUE not in sent, sent   # the faults reported, no TORQUE
        assert len(agent.hal.written) == 1 and agent.hal.written[0] == agent.u[0]


def test_a_k_beyond_float32_goes_out_as_inf_from_both():
    """Usable inputs (|x| < 1e30) whose K_i overflows float32 (a prismatic joint's 9e29
    crossed with K_{i-1}'s w of 9e29: v_i past 3.4e38): both send K_i with inf, as C's and
    MicroPython's float32 rounding gives it (CPython's struct refused it: F_INTERNAL)."""
    import math
    from bus_protocol import messages as m
    cfg = {"link": 2, "n_links": 4, "dh": {"type": "prismatic", "a": 0.5}, "u_sat": 20.0, "mass": 1.0,
           "behaviours": {"proxy": {"weight": 1.0}}}
    (fast, fo), (pure, po) = _twin_agents(cfg)
    frames = [m.encode(m.JOINT_STATE, 0, 2, 1, (1, 9e29, 0.2, 0) + (0.0,) * 6), m.encode(m.SYNC, 0, 255, 1, (1,)),
              m.encode(m.KINEMATIC, 1, 2, 3, (1, 1.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3, 0.1, 0.1, 0.1, 9e29, 0.0, 0.0)),
              m.encode(m.GOAL, 0, 255, 2, (1, 0, 1.0, 2.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 5.0))]
    for f in frames:
        fast.receive(f)
        pure.receive(f)
        assert fo == po, f
    assert (fast.safety.faults, fast.safety.state) == (pure.safety.faults, pure.safety.state)
    k = [x[4] for x in _sent(fo) if x and x[0] == m.KINEMATIC]
    assert len(k) == 1 and any(math.isinf(x) for x in k[0][1:])


def test_idle_reading_the_joint_between_a_sync_and_its_k():
    """The bus lost between a SYNC and its K_{i-1} (wall clock): idle() brakes and reads
    the joint again; the K_i composed after is the same on both."""
    from bus_protocol import messages as m
    cfg = {"link": 2, "n_links": 4, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 20.0, "mass": 1.0,
           "behaviours": {"proxy": {"weight": 1.0}}}
    twins = _twin_agents(cfg, Encoder)
    for agent, out in twins:
        agent.hal.q, agent.hal.qd = 0.3, 0.2
        agent.receive(m.encode(m.SYNC, 0, 255, 1, (1,)))
        agent.hal.q, agent.hal.qd = 0.31, 0.9   # the joint moved on
        agent.hal.ticks_us = lambda: 10 ** 6
        agent.idle()
        agent.receive(m.encode(m.KINEMATIC, 1, 2, 3, (1, 1.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3) + (0.1,) * 6))
    (fast, fo), (pure, po) = twins
    assert [x[0] for x in _sent(fo)] == [x[0] for x in _sent(po)] and m.KINEMATIC in [x[0] for x in _sent(fo)]
    assert fo == po


@pytest.mark.parametrize("load", ["added", "dropped"])
def test_a_config_that_adds_or_drops_a_load_keeps_the_tick(load):
    """The tip, compensating gravity by assertion, takes a CONFIG adding a load or dropping
    it between a tick's SYNC and its K_{N-1}, braked, and is released the tick after: both
    cores send the same frames, every K_N is the kinematic bus step of that tick's reading
    (kinematic_bus.step), and every weight assertion from the CONFIG on holds the load's
    weight (-(m + m_load) g: a load is Python's work on the core's K_N, never a switch of
    the link's cycle to another core)."""
    import json
    from bus_protocol import messages as m
    from firmware import kinematic_bus as kb
    payload = {"mass": 0.5, "h": [0.0, 0.0, 0.05]}
    cfg = {"link": 2, "n_links": 2, "dh": {"type": "revolute", "a": 0.5}, "u_sat": 20.0, "mass": 1.0,
           "behaviours": {"proxy": {"weight": 1.0}, "centering": {"weight": 0.5},
                          "gravity": {"g": [0.0, 0.0, -9.81]}}}
    if load == "dropped":
        cfg["load"] = payload
    (fast, fo), (pure, po) = _twin_agents(cfg)
    data = json.dumps({"load": payload if load == "added" else None}, separators=(",", ":")).encode()

    for f in _config_mid_tick(data):
        fast.receive(f)
        with pure_python():
            pure.receive(f)
        assert fo == po and fast.u[0] == pure.u[0], f
    assert on_linkcore(fast) and not on_linkcore(pure) and fast.safety.faults == 0
    sent = [x for x in _sent(fo) if x]
    ks = [x[4] for x in sent if x[0] == m.KINEMATIC]
    assert [k[0] for k in ks] == list(range(6))
    for k in ks:   # K_1 as _config_mid_tick sends it, the reading 0.3 + 0.01 t at 0.2 rad/s
        want = kb.step(kb.REVOLUTE, 0.0, 0.0, 0.5, 0.0, 0.3 + 0.01 * k[0], 0.2, (1.0, 0.0, 0.0, 0.0),
                       (0.1, 0.2, 0.3), (0.1,) * 3, (0.1,) * 3)
        assert np.allclose(k[1:], np.concatenate(want[:4]), rtol=1e-6, atol=1e-7), k
    weights = [x[4] for x in sent if x[0] == m.ASSERT]
    assert [w[0] for w in weights] == list(range(6))
    loaded = [w[0] >= 2 if load == "added" else w[0] < 2 for w in weights]
    assert [round(w[8], 4) for w in weights] == [round((1.5 if x else 1.0) * 9.81, 4) for x in loaded]
