"""linkcore for CPython (firmware/native/linkcore_cpython.c: the boards' C core,
linkcore_core.h, as a CPython extension module that `make setup` builds) against the
pure-Python firmware, its oracle: CPython agents with and without it send byte-identical
frames (100 agents of random joint type, DH, gains, gravity, poses, assertions, corrupted
and NaN frames: tests/mp_native_cases.py; the reference chain's cycle:
tests/mp_agent_cycle.py), and the in-process reference run records the same time series
to the last bit. Skipped with the reason where the module is not built."""
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import PURE_PYTHON_ENV, REPO, pure_python


def _built():
    try:
        import linkcore  # noqa: F401
    except ImportError as e:
        return "linkcore for CPython is not built (make setup; needs gcc and Python.h): %s" % e
    return ""


pytestmark = pytest.mark.skipif(bool(_built()), reason=_built())


def _cpython(script, env=None):
    r = subprocess.run([sys.executable, str(REPO / "tests" / script)], capture_output=True, text=True,
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


def test_pure_python_switch():
    """LINKTEAM_PURE_PYTHON=1 turns the module off for a whole process."""
    code = "import firmware.linkstate as s; print(s.linkcore is None)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), env=PURE_PYTHON_ENV)
    assert r.stdout.split() == ["True"], r.stderr


def test_reference_run_with_linkcore_is_bit_identical(tmp_path):
    from host.run import run_scenario
    from host.scenario import load
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


def test_host_takes_torque_frames_in_c_as_in_python():
    """GoalProcess.on_frame with linkcore's torque_in against the same goal process in
    Python (its oracle), frame by frame over 4,000 TORQUE frames: honest ones, ones off by
    a little (within the check's tolerance, and just beyond it), NaN components, other
    ticks and sources, non-RUN states, a corrupted CRC, truncated frames and other types.
    The arrays, the team, the events, the frames it answers with and the decoder's counts
    must be equal after every frame."""
    import random
    from pathlib import Path

    from bus_protocol import messages as m
    from bus_protocol.states import RUN
    from host import goal_process as gpm
    from host.scenario import load
    import linkcore
    assert linkcore.STATE_RUN == RUN
    assert linkcore.TORQUE_TOL == (gpm.TORQUE_TOL_ABS, gpm.TORQUE_TOL_REL)
    sc = load(Path(REPO) / "scenarios" / "reference.toml")
    fast, slow = gpm.GoalProcess(sc), gpm.GoalProcess(sc)
    rnd = random.Random(11)
    k = [w + (u,) for w, u in ((a[:4], a[4]) for a in fast.arbitration)]
    codes = set()
    for n in range(4000):
        tick = 7 + n // 40
        for g in (fast, slow):
            if g.tick != tick:
                g.tick = tick
                g.got = [False] * g.n
        src = rnd.choice([1, 2, 5, 10, 0, 11]) if rnd.random() < 0.1 else rnd.randint(1, 10)
        kp, ka, kl, kj, us = k[(src - 1) % 10]
        c = [rnd.uniform(-50, 50) for _ in range(4)] + [rnd.choice([0.0, rnd.uniform(-5, 5)]), 0.0]
        if rnd.random() < 0.03:
            c[rnd.randrange(6)] = rnd.choice([float("nan"), float("inf"), -float("inf")])
        t = [kp * c[0], ka * c[1], kl * c[2], kj * c[3], c[4]]
        u = min(max(sum(t), -us), us)
        tol = gpm.TORQUE_TOL_ABS + gpm.TORQUE_TOL_REL * sum(abs(x) for x in t)
        u += rnd.choice([0.0, 0.0, 0.5 * tol, 0.999 * tol, 1.001 * tol, 2 * tol, 10.0, -10.0])
        state = RUN if rnd.random() < 0.85 else rnd.choice([0, 2, 3, 4, 5])
        ft = tick if rnd.random() < 0.9 else tick + rnd.choice([-1, 1, 1000])
        f = bytearray(m.encode(m.TORQUE, src % 256, 0, n, (ft, u, state) + tuple(c)))
        r = rnd.random()
        if r < 0.03:
            f[rnd.randrange(len(f))] ^= 1 << rnd.randrange(8)   # corrupted
        elif r < 0.04:
            f = f[:rnd.randrange(len(f))]                        # truncated
        elif r < 0.06:
            f = bytearray(m.encode(m.STATUS, src % 256, 0, n, (tick, RUN, 0, 0, 100, 0, 0)))
        f = bytes(f)
        codes.add(linkcore.torque_in(f, fast.tick, fast.n, fast.torques.copy(), fast.states.copy(),
                                     fast.components.copy(), fast._arb) >> 8)
        out_fast = fast.on_frame(f)
        saved, gpm._torque_in = gpm._torque_in, None
        try:
            out_slow = slow.on_frame(f)
        finally:
            gpm._torque_in = saved
        assert out_fast == out_slow, n
        for a in ("torques", "states", "components"):
            assert np.array_equal(getattr(fast, a), getattr(slow, a), equal_nan=True), (n, a)
        for a in ("got", "n_got", "member", "n_team", "events", "pending"):
            assert getattr(fast, a) == getattr(slow, a), (n, a)
        assert np.array_equal(fast.heard, slow.heard), n
        assert (fast.decoder.good, fast.decoder.bad) == (slow.decoder.good, slow.decoder.bad), n
    # every kind of outcome came up: not a TORQUE, another tick, taken (RUN, off, not RUN)
    assert {-1, 0, 1, 3, 7} <= codes, codes
    assert len(fast.events) >= 5


def test_host_torque_check_is_not_excused_by_an_infinite_component():
    """A TORQUE whose components hold an infinity makes the check's tolerance infinite: it
    must fail (braked, dropped), not pass whatever u is, in Python and in C alike."""
    from pathlib import Path

    from bus_protocol import messages as m
    from bus_protocol.states import RUN
    from host import goal_process as gpm
    from host.scenario import load
    sc = load(Path(REPO) / "scenarios" / "reference.toml")
    for c_path in (True, False):
        gp = gpm.GoalProcess(sc)
        gp.tick = 3
        saved = gpm._torque_in
        if not c_path:
            gpm._torque_in = None
        try:
            out = gp.on_frame(m.encode(m.TORQUE, 4, 0, 1, (3, 0.0, RUN, float("inf"), 0.0, 0.0, 0.0, 0.0, 0.0)))
        finally:
            gpm._torque_in = saved
        assert out and gp.member[3] is False and "torque off" in gp.events[0][2], c_path
