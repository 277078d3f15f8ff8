"""The link agent: kinematic bus, proxy, behaviours and safety, under CPython and the
real MicroPython unix port, checked against independent numpy references."""
import contextlib
import json
import math
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from bus_protocol import messages as m
from firmware import kinematic_bus as kb
from firmware import layout
from firmware import safety
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL
from tests.mp import mp_agent_cycle as cyc
from tests.conftest import MICROPYTHON, REPO, missing, on_linkcore, pure_python, run_micropython
from tests.dh_reference import fk, jacobian_fd, rotvec_jacobian_fd


def random_chain(rng, n, prismatic=True):
    links = []
    for i in range(n):
        t = "prismatic" if prismatic and i == n // 2 else "revolute"
        links.append((t, rng.uniform(-1, 1), rng.uniform(-0.3, 0.3), rng.uniform(0.1, 0.8),
                      rng.choice([0.0, math.pi / 2, -math.pi / 2, rng.uniform(-1, 1)])))
    return links


def test_kinematic_bus_10_links_micropython_matches_numpy_fk():
    rng = random.Random(3)
    cases = []
    for trial in range(5):
        links = random_chain(rng, 10, prismatic=trial % 2 == 1)
        q = [rng.uniform(-2, 2) for _ in links]
        qd = [rng.uniform(-1, 1) for _ in links]
        cases.append({"links": links, "q": q, "qd": qd})
    code = """
import json
from firmware import kinematic_bus as kb
cases = json.loads(sys.stdin.read())
out = []
for c in cases:
    links = [(kb.joint_type(L[0]), L[1], L[2], L[3], L[4]) for L in c["links"]]
    out.append([[list(K[0]), list(K[1]), list(K[2]), list(K[3])] for K in kb.chain(links, c["q"], c["qd"])])
print(json.dumps(out))
"""
    got = json.loads(run_micropython(code, stdin=json.dumps(cases)))
    for c, packets in zip(cases, got):
        frames = fk(c["links"], c["q"])
        for K, T in zip(packets, frames):
            assert np.allclose(K[1], T[:3, 3], atol=1e-9), "position"      # docs/design.md §2: well under 1e-4 m
            w, x, y, z = K[0]
            R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                          [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                          [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
            assert np.allclose(R, T[:3, :3], atol=1e-9), "orientation"
        # tip velocities against finite-difference Jacobians of the numpy FK
        Jv = jacobian_fd(lambda q: fk(c["links"], q)[-1][:3, 3], c["q"])
        Jw = rotvec_jacobian_fd(c["links"], c["q"])
        assert np.allclose(packets[-1][2], Jv @ c["qd"], atol=1e-6)
        assert np.allclose(packets[-1][3], Jw @ c["qd"], atol=1e-6)


def test_agent_cycle_identical_under_micropython_and_cpython():
    out_mp = run_micropython(open(REPO / "tests" / "mp" / "mp_agent_cycle.py").read().replace(
        "__file__", repr(str(REPO / "tests" / "mp" / "mp_agent_cycle.py"))))
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pure_python():
        cyc.run()
    assert out_mp.splitlines() == buf.getvalue().splitlines()
    assert sum(1 for line in out_mp.splitlines() if line.startswith("FRAME")) >= 3 * cyc.N


def _agent_torques():
    import io
    import contextlib
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cyc.run()
    rows = [line.split() for line in buf.getvalue().splitlines() if line.startswith("U ")]
    return np.array([[float(x) for x in r[2:]] for r in rows])


def test_agent_torques_match_jacobian_transpose_and_gravity_reference():
    """Proxy rows = J^T f of the whole arm; summed weight assertions = dV/dq (docs/design.md §3, 5)."""
    U = _agent_torques()
    links = [L for L in cyc.DH]
    q = np.array(cyc.Q)
    f = np.array(cyc.GOAL[3:])
    J = np.vstack([jacobian_fd(lambda x: fk(links, x)[-1][:3, 3], q), rotvec_jacobian_fd(links, q)])
    assert np.allclose(U[:, 1], J.T @ f, rtol=1e-4, atol=1e-4)
    g = np.array([0.0, 0.0, -9.81])

    def V(x):   # potential energy of the link masses, centroids in link frames
        Ts = fk(links, x)
        return -sum((1.0 + i) * g @ (Ts[i + 1][:3, :3] @ np.array([-0.1, 0.02, 0.01]) + Ts[i + 1][:3, 3])
                    for i in range(cyc.N))
    dV = jacobian_fd(lambda x: [V(x)], q)[0]
    assert np.allclose(U[:, 2], dV, rtol=1e-4, atol=1e-4)
    # centering PD (raw component) and the arbitrated, saturated sum
    assert np.allclose(U[:, 3], 10.0 * (0.0 - q) - 2.0 * np.array(cyc.QD), atol=1e-5)
    u_sum = U[:, 1] + U[:, 2] + 0.5 * U[:, 3] + U[:, 4]
    assert np.allclose(U[:, 0], np.clip(u_sum, -50, 50), atol=1e-5)


class Rig:
    """One agent with a loopback to the test."""

    def __init__(self, **cfg_extra):
        self.out = []
        cfg = {"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0,
               "behaviours": {"proxy": {"weight": 1.0}}, "safety": {"watchdog_cycles": 3}}
        cfg.update(cfg_extra)
        self.agent = LinkAgent(cfg, SimHAL(lambda b, n: self.out.append(bytes(b[:n]))))
        self.dec = m.Decoder()

    def cycle(self, tick, q=0.0, qd=0.0, goal=True):
        a = self.agent
        a.receive(m.encode(m.JOINT_STATE, 0, 1, 0, (tick, q, qd, 0, 0, 0, 0, 0, 0, 0)))
        a.receive(m.encode(m.SYNC, 0, 255, 0, (tick,)))
        a.receive(m.encode(m.KINEMATIC, 0, 1, 0, (tick, 1, 0, 0, 0) + (0.0,) * 9))
        if goal:
            a.receive(m.encode(m.GOAL, 0, 255, 0, (tick, 0, 1, 0, 0, 0, 10.0, 0, 0, 0, 0)))
        msgs = [self.dec.decode(f) for f in self.out]
        self.out.clear()
        return [x for x in msgs if x and x[0] == m.TORQUE]


def test_watchdog_brakes_when_goals_stop_and_release_readmits():
    rig = Rig()
    for k in range(5):
        tq = rig.cycle(k, q=0.1)
        assert tq and tq[0][4][2] == safety.RUN and abs(tq[0][4][1] - 10.0) < 1e-4  # share = (z x r).f
    states = []
    for k in range(5, 12):
        tq = rig.cycle(k, q=0.1, qd=0.5, goal=False)
        states.append(tq[0][4][2] if tq else None)
    assert states[:3] == [None, None, None]          # within the watchdog: hold, no torque frame
    assert states[-1] == safety.BRAKED
    assert rig.agent.safety.faults == safety.F_GOAL_STALE
    tq = rig.cycle(12, q=0.2, qd=0.5, goal=False)
    assert tq[0][4][1] < 0                           # stiff PD pulls back to the lock and damps
    rig.agent.receive(m.encode(m.COMMAND, 0, 1, 0, (m.CMD_RELEASE, 0.0)))
    tq = rig.cycle(13, q=0.2)
    assert tq[0][4][2] == safety.RUN


def test_encoder_jump_and_overspeed_trip_the_brake():
    rig = Rig()
    rig.cycle(0, q=0.0)
    rig.cycle(1, q=1.0)   # 1 rad in one cycle > max_q_step 0.5
    assert rig.agent.safety.faults == safety.F_SENSOR
    rig2 = Rig(safety={"qd_max": 5.0})
    rig2.cycle(0, qd=6.0)
    assert rig2.agent.safety.faults == safety.F_SENSOR


def test_brake_at_start_drops_the_proxy():
    rig = Rig(brake_at_start=True)
    tq = rig.cycle(0, q=0.3)
    assert tq[0][4][2] == safety.BRAKED and tq[0][4][3] == 0.0   # no proxy component
    tq = rig.cycle(1, q=0.35, qd=0.0)
    assert tq[0][4][7] == pytest.approx(2000.0 * (0.3 - 0.35), rel=1e-5)   # brake PD about q_lock
    # a braked joint still carries the kinematic bus: K_1 is where the held joint is
    rig.cycle(2, q=0.35, qd=0.0)
    a = rig.agent
    a.receive(m.encode(m.SYNC, 0, 255, 0, (3,)))
    a.receive(m.encode(m.KINEMATIC, 0, 1, 0, (3, 1, 0, 0, 0) + (0.0,) * 9))
    k = [x for x in (rig.dec.decode(f) for f in rig.out) if x and x[0] == m.KINEMATIC]
    assert k and k[-1][4][5:8] == pytest.approx((math.cos(0.35), math.sin(0.35), 0.0), abs=1e-6)


def test_garbage_frames_are_counted_never_raised():
    rig = Rig()
    rng = random.Random(1)
    for _ in range(2000):
        rig.agent.receive(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 70))))
    assert rig.agent.decoder.bad >= 1900
    assert rig.cycle(0)  # still works


@pytest.mark.parametrize("pure", [False, True])
def test_a_tick_past_int32_is_a_bad_frame(pure):
    """The agent holds its ticks in int32 (linkstate.I): a SYNC, JOINT_STATE, K, GOAL or
    ASSERT of tick 2^31 or later is dropped and counted as late, on linkcore and in Python;
    the decoder took it (it is a well-formed frame)."""
    with pure_python() if pure else contextlib.nullcontext():
        rig, last = Rig(), Rig()
    assert (not on_linkcore(rig.agent)) == (not on_linkcore(last.agent)) == pure
    rig.cycle(5)
    a = rig.agent
    bad, late = a.decoder.bad, a.late
    big = 2 ** 31
    for f in (m.encode(m.SYNC, 0, 255, 0, (big,)), m.encode(m.JOINT_STATE, 0, 1, 0, (big + 7, 0.5, 0, 0, 0, 0, 0, 0, 0, 0)),
              m.encode(m.KINEMATIC, 0, 1, 0, (big, 1, 0, 0, 0) + (0.0,) * 9),
              m.encode(m.GOAL, 0, 255, 0, (2 ** 32 - 1, 0, 1, 0, 0, 0, 10.0, 0, 0, 0, 0)),
              m.encode(m.ASSERT, 0, 255, 0, (big, 2, m.KIND_GRAVITY) + (0.0,) * 9)):
        a.receive(f)
    assert (a.decoder.bad, a.late) == (bad, late + 5) and a.I[layout.I_TICK] == 5 and a.safety.faults == 0
    assert not [x for x in (rig.dec.decode(f) for f in rig.out) if x]   # nothing answered
    tq = last.cycle(2 ** 31 - 1, q=0.1)   # the last tick an agent takes
    assert last.agent.I[layout.I_TICK] == 2 ** 31 - 1 and tq and tq[0][4][0] == 2 ** 31 - 1
    assert tq[0][4][2] == safety.RUN and abs(tq[0][4][1] - 10.0) < 1e-4


def test_joint_type_rejects_unknown():
    with pytest.raises(ValueError):
        kb.joint_type("spherical")


def test_silent_bus_brakes_through_idle_and_sensor_error_trips():
    rig = Rig()
    clock = [0]
    rig.agent.hal.ticks_us = lambda: clock[0]
    rig.cycle(0, q=0.2)
    clock[0] = 40_000
    assert rig.agent.idle() is False                    # within watchdog_ms (50 ms): nothing
    clock[0] = 60_000
    assert rig.agent.idle() is True                     # no SYNC for 60 ms: lost bus, brake PD
    assert rig.agent.safety.faults == safety.F_BUS_LOST and rig.agent.hal.braked
    tq = [x for x in (rig.dec.decode(f) for f in rig.out) if x and x[0] == m.TORQUE]
    assert tq and tq[-1][4][2] == safety.BRAKED
    rig2 = Rig()
    rig2.agent.hal.read = lambda: False
    rig2.cycle(0)
    assert rig2.agent.safety.faults & safety.F_SENSOR and rig2.agent.safety.state == safety.BRAKED


@pytest.mark.parametrize("pure", [False, True])
def test_a_failed_joint_read_keeps_the_last_good_reading(pure):
    """hal.read() False: F_SENSOR latches and the agent keeps its last good q, whatever
    the HAL's q holds after the failed read."""
    with pure_python() if pure else contextlib.nullcontext():
        rig = Rig()
    assert (not on_linkcore(rig.agent)) == pure
    rig.cycle(0, q=0.2, qd=0.1)
    a = rig.agent
    q0 = a.q
    a.hal.read = lambda: False
    rig.cycle(1, q=0.25, qd=0.7)   # what the HAL holds after a read that failed
    assert a.q == q0 == pytest.approx(0.2) and a.safety.faults == safety.F_SENSOR
    assert a.qd == 0.0   # the brake holds the joint at its last good angle (a sensor fault)


def test_a_lockstep_run_has_no_silent_bus_watchdog():
    """COMMAND RESET with arg 1 starts a lockstep run: no time passes between SYNCs, so
    10 s of quiet bus is no fault, though the joint is still read (a board's hardware
    watchdog is fed by reads); RESET with arg 0 (a wall-clock run) brings it back."""
    rig = Rig()
    clock = [0]
    rig.agent.hal.ticks_us = lambda: clock[0]
    reads = []
    rig.agent.hal.read = lambda: reads.append(clock[0]) or True
    for arg, braked in ((1.0, False), (0.0, True)):
        rig.agent.receive(m.encode(m.COMMAND, 0, m.BROADCAST, 0, (m.CMD_RESET, arg)))
        clock[0] += 1000
        assert rig.cycle(0, q=0.2)
        clock[0] += 10_000_000
        assert rig.agent.idle() is braked and reads[-1] == clock[0]
        assert (rig.agent.safety.faults == safety.F_BUS_LOST) is braked


@pytest.mark.slow
@pytest.mark.parametrize("interp", ["cpython", "micropython"])
def test_agent_fuzz_counts_every_frame_and_writes_no_nan_torque(interp):
    """benchmarks/mp_fuzz_agent.py (make bench runs 10^6 frames): 20,000 random, mutated and
    out-of-range frames into one agent, under CPython and the MicroPython unix port. The
    script raises if an exception leaves receive(), if the decoder's bad count is not the
    sum of its error kinds (a frame the agent drops after a good decode is not bad), or if
    a torque it writes is not finite."""
    if interp == "micropython" and missing("micropython"):
        pytest.skip(missing("micropython"))
    exe = sys.executable if interp == "cpython" else MICROPYTHON
    r = subprocess.run([exe, str(REPO / "benchmarks" / "mp_fuzz_agent.py"), "20000", "11"],
                       capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1].startswith("AGENT-FUZZ ok N 20000 "), r.stdout[-500:]


@pytest.mark.parametrize("old", [{"SLOTS": 246}, {"SLOTS": layout.SLOTS, "INTS": layout.INTS - 3},
                                 {"LAYOUT_ID": layout.LAYOUT_ID ^ 1 << 10, "FLOAT_BYTES": 8}])
def test_a_linkcore_built_from_another_firmware_is_refused_with_a_clear_error(old):
    """A board's linkcore.mpy left from an older firmware (its state layout, or no
    integers' layout at all, or another layout's LAYOUT_ID: one integer count off):
    importing the firmware says to rebuild it."""
    code = ("import sys, types\nfake = types.ModuleType('linkcore')\n"
            "for k, v in %r.items():\n    setattr(fake, k, v)\n"
            "sys.modules['linkcore'] = fake\n"
            "try:\n    import firmware.linkstate\nexcept ImportError as e:\n    print('REFUSED', e)\n" % (old,))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert r.returncode == 0, r.stderr[-1000:]
    assert r.stdout.startswith("REFUSED linkcore.mpy does not match firmware/linkstate.py") and "rebuild" in r.stdout
