"""Bus faults of the emulated medium (bus_protocol/wire_faults.py: processes mode's node
ports and host transport), the same under MicroPython and CPython; rates against the
binomial law, the wires they hit as sim_host/fault_injection.py defines them."""
import math

from bus_protocol import messages as m
from tests.conftest import same_under_both


def _runs():
    lines = same_under_both("mp_wire_faults.py")
    k = lines.index("seq")
    return lines[:k], lines[k + 1:-1], lines[-1]


def test_wire_faults_hit_the_frames_on_their_wires_at_their_rates():
    first, other_seq, _ = _runs()
    assert first == other_seq        # a frame's sequence number does not change its fate
    rows = [line.split(None, 4) for line in first if not line.startswith("counts")]
    rows = [(int(t), int(ty), int(src), int(dst), out) for t, ty, src, dst, out in rows]
    # frame_loss 0.1 on every wire, ticks 100-499 only
    lost = [r for r in rows if r[4] == "lost"]
    assert all(100 <= r[0] < 500 for r in lost)
    n = sum(1 for r in rows if 100 <= r[0] < 500)
    assert abs(len(lost) - 0.1 * n) < 5 * math.sqrt(n * 0.1 * 0.9)
    assert {r[2] for r in lost} == set(range(11))       # the host's frames and every link's
    # corrupt (ber 2e-3) only on the wire into link 3: K_2; every one fails its CRC
    bad = [r for r in rows if r[4].startswith("corrupt")]
    assert {(r[1], r[3]) for r in bad} == {(m.KINEMATIC, 3)}
    assert all(r[4] == "corrupt caught" for r in bad)
    k2 = [r for r in rows if r[1] == m.KINEMATIC and r[3] == 3 and r[4] != "lost"]
    nbits = 8 * (m.HEADER_SIZE + 4 + 13 * 4 + 2)
    p = 1 - (1 - 2e-3) ** nbits
    assert abs(len(bad) - p * len(k2)) < 5 * math.sqrt(len(k2) * p * (1 - p))
    # latency 2 ms + up to 1 ms on the host's port: the frames it sends to everyone
    delayed = [r for r in rows if r[4].startswith("delay")]
    assert {(r[1], r[2]) for r in delayed} == {(m.SYNC, 0), (m.GOAL, 0)}
    us = [int(r[4].split()[1]) for r in delayed]
    assert 2000 <= min(us) < 2100 and 2900 < max(us) <= 3000
    counts = [int(x) for x in first[-1].split()[1:]]
    assert counts == [len(lost), len(bad), len(delayed)]


def test_identical_copies_of_a_frame_are_lost_independently():
    """kinematic_copies sends identical frames back to back (same seq): each is a frame on
    the wire of its own, lost with the rate on its own (2000 pairs at 10 %)."""
    both, one = (int(x) for x in _runs()[2].split()[1:])
    n = 2000
    assert abs(both - 0.01 * n) < 5 * math.sqrt(n * 0.01 * 0.99)
    assert abs(one - 0.18 * n) < 5 * math.sqrt(n * 0.18 * 0.82)


def test_a_ring_node_takes_the_goal_of_a_tick_whose_sync_and_k0_were_lost():
    """UART ring (firmware/node.py): the host's goal from its last K_N is the first the
    nodes hear of a tick whose SYNC and K_0 were lost; every link syncs on it and acts
    (before, a node that had passed the previous tick's goal took it for the other goal
    wave's copy and dropped it: on a lossy ring the whole team fell silent)."""
    lines = same_under_both("mp_ring_goal.py")
    assert sorted(lines) == sorted("T %d %d 1" % (link, tick) for tick in (5, 6) for link in (1, 2, 3))
