"""The agent's two cores implement one interface (docs/architecture.md, One core interface):
linkcore (C) and firmware/pycore.py (pure Python) called the same way on the same arrays
leave the same S and I and write the same frames, call by call, for random states of
every kind of link (revolute or prismatic, gravity or not, goal or not, assertions,
a neighbour's bridge). rx and sample of the pure Python take nothing (the agent's Python
does: tests/test_linkcore_cpython.py compares whole agents)."""
import math
from array import array

import numpy as np
import pytest

from firmware import layout as L
from firmware import linkstate, pycore
from tests.conftest import needs

pytestmark = needs("linkcore")
CALLS = ("a_i", "kinematic", "torque", "bridge")


def _state(rng, revolute, gravity, n_assert):
    S = array(linkstate.FLOAT, rng.uniform(-2.0, 2.0, L.SLOTS).tolist())
    q = rng.normal(size=4)
    for at in (L.S_IN, L.S_NB_IN):   # unit quaternions in the packets
        for j in range(4):
            S[at + j] = q[j] / np.linalg.norm(q)
    alpha = rng.uniform(-math.pi, math.pi)
    S[L.S_DH + 2], S[L.S_DH + 3] = math.cos(0.5 * alpha), math.sin(0.5 * alpha)
    S[L.S_NB_DH + 2], S[L.S_NB_DH + 3] = math.cos(0.5 * alpha), math.sin(0.5 * alpha)
    S[L.S_GAIN + 2] = 0.0 if rng.uniform() < 0.3 else S[L.S_GAIN + 2]   # behaviours off now and then
    S[L.S_USAT] = abs(S[L.S_USAT]) + 0.5
    S[L.S_JL], S[L.S_JL + 1] = -1.5, 1.5
    I = array("i", [0] * L.INTS)
    I[L.I_TICK], I[L.I_SEQ], I[L.I_LINK], I[L.I_DOWN] = int(rng.integers(0, 2 ** 31)), 65535, 3, 4
    I[L.I_NA] = n_assert
    I[L.I_FLAGS] = (L.FLAG_REV if revolute else 0) | (L.FLAG_GRAVITY if gravity else 0)
    I[L.I_NB] = L.NB_ON | (L.NB_REV if revolute else 0)
    return S, I


def _call(core, name, S, I, tx, rng_args):
    q, qd, goal = rng_args
    if name == "a_i":
        return core.a_i(S, I, q, qd)
    if name == "kinematic":
        return core.kinematic(S, I, tx)
    if name == "torque":
        return core.torque(S, I, tx, goal, q, qd, 1)
    return core.bridge(S, I, q, qd)


@pytest.mark.parametrize("name", CALLS)
def test_each_call_of_the_pure_python_core_is_linkcores(name):
    rng = np.random.default_rng(CALLS.index(name))
    c = linkstate.linkcore
    for case in range(200):
        revolute, gravity = case % 2 == 0, case % 3 == 0
        S, I = _state(rng, revolute, gravity, int(rng.integers(0, L.MAX_ASSERT + 1)))
        args = (float(rng.uniform(-4.0, 4.0)), float(rng.uniform(-3.0, 3.0)), case % 4 != 1)
        Sp, Ip, txp, txc = array(S.typecode, S), array("i", I), bytearray(L.TX_FRAMES), bytearray(L.TX_FRAMES)
        got = _call(c, name, S, I, txc, args)
        want = _call(pycore, name, Sp, Ip, txp, args)
        assert got == want and list(I) == list(Ip) and txc == txp, (name, case)
        diff = [j for j in range(L.SLOTS) if not (S[j] == Sp[j] or (math.isnan(S[j]) and math.isnan(Sp[j])))]
        assert not diff, (name, case, diff[:5])


def test_rx_and_sample_of_the_pure_python_leave_it_to_the_agent():
    S = array(linkstate.FLOAT, [0.0] * L.SLOTS)
    I = array("i", [0] * L.INTS)
    assert pycore.rx(b"\x01" * 12, None, S, I, bytearray(L.TX_FRAMES), 1, None, None, None) == 0
    assert pycore.sample(S, I, array("i", [0] * L.NS), array(linkstate.FLOAT, [0.0] * L.VS)) is False
    assert set(S) == {0.0} and set(I) == {0}
