"""Redundant kinematics (firmware/neighbours.py in LinkAgent): a lost K_{i-1} (or K_{i-1}
and K_{i-2}) is bridged over the predicted joints, a neighbour whose K is wrong is found
by the check within two cycles, bridged at its predicted angle and reported to the host.
Same lines under MicroPython and CPython; positions against numpy DH forward kinematics."""
import numpy as np
import pytest

from bus_protocol import states as sc
from tests.mp import mp_neighbours as nb
from tests.conftest import same_under_both
from tests.dh_reference import fk


@pytest.fixture(scope="module")
def rows():
    cpy = same_under_both("mp_neighbours.py")
    out = {}
    for line in cpy:
        f = line.split()
        out[int(f[1])] = {"event": f[2], "p": np.array([float(x) for x in f[3:6]]),
                          "skip": int(f[6][5:]), "faults": int(f[7][7:]), "brake": f[8][6:]}
    return out


def test_bridged_packets_match_forward_kinematics(rows):
    """K_5's origin = frame 5 of the chain; after link 4 is bridged (tick 11), with joint 4
    held at the angle it had then (speeds constant here: the prediction is exact)."""
    q_lock = nb.q_at(11)[3]
    for tick, r in rows.items():
        q = nb.q_at(tick)
        if tick >= 11:
            q[3] = q_lock
        want = fk(nb.DH, q)[5][:3, 3]
        if r["event"] == "bad4" and tick == 10:
            want = want + np.array([0.1, 0.0, 0.0])   # one wrong K_4 is passed on (not yet judged)
        assert r["p"] == pytest.approx(want, abs=2e-6), tick


def test_lost_packets_are_bridged_without_a_fault(rows):
    for tick in (4, 7):
        assert rows[tick]["skip"] == 0 and rows[tick]["faults"] == 0


def test_wrong_neighbour_found_on_the_second_cycle_braked_and_bridged(rows):
    assert rows[10]["skip"] == 0 and rows[10]["brake"] == "-"
    assert rows[11]["skip"] == 1 and rows[11]["faults"] == sc.F_NEIGHBOUR_DISAGREES
    assert rows[11]["brake"] == "4"             # asks the host to brake link 4
    assert [rows[t]["brake"] for t in (12, 13, 14, 15)] == ["-"] * 4   # once
