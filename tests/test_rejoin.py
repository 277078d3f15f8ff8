"""A rebooted board's first tick (node_crash with an end, tests/test_faults.py): its
neighbours' K can reach it ahead of the host's SYNC; it syncs on them, composes K_5 and
acts on the goal, as in every later tick. Same lines under MicroPython and CPython;
positions against numpy DH forward kinematics."""
import numpy as np
import pytest

from bus_protocol import states
from tests.mp import mp_neighbours as nb
from tests.conftest import same_under_both
from tests.dh_reference import fk


def test_a_rebooted_node_composes_its_first_tick_from_packets_ahead_of_the_sync():
    lines = same_under_both("mp_rejoin.py")
    assert [int(line.split()[1]) for line in lines] == [180, 181, 182]
    for line in lines:
        f = line.split()
        want = fk(nb.DH, nb.q_at(int(f[1])))[5][:3, 3]
        assert np.array([float(x) for x in f[2:5]]) == pytest.approx(want, abs=2e-6), line
        assert f[5:] == ["k=1", "faults=0", "state=%d" % states.RUN], line
