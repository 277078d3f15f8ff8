"""The kinematic bus's time redundancy (`[bus] kinematic_copies`, thesis 7.6.1 "redundant
communication"): every K_i goes out as identical copies and receivers take the first of a
tick; link 1 composes over the base packet when K_0 is lost. Firmware under MicroPython
and CPython (tests/mp/mp_redundancy.py); forward kinematics from tests/dh_reference.py."""
import numpy as np
import pytest

from bus_protocol import messages as m
from host.tools import budget
from bus_protocol import states as sc_states
from host.controller import HostController
from host.run import run_scenario
from sim_host.fault_injection import FaultSet
from tests.mp import mp_redundancy as mr
from tests.conftest import differing, needs, same_under_both
from tests.dh_reference import dh_matrix
from tests.test_faults import run, scenario


@pytest.fixture(scope="module")
def parts():
    out, part = {}, None
    for line in same_under_both("mp_redundancy.py"):
        if line.startswith("=="):
            part = line[3:]
            out[part] = []
        else:
            out[part].append(line.split())
    return out


def test_duplicate_packets_change_nothing_but_the_copies_sent(parts):
    """Every packet heard twice: the same K_5, the same bridging, check, brake and the same
    re-admission tick (16: three good checks after link 4 came right at 14), and each K_5
    goes out twice."""
    one, two = parts["copies 1"], parts["copies 2"]
    assert [r[:-1] for r in one] == [r[:-1] for r in two]
    assert {r[-1] for r in one} == {"k=1"} and {r[-1] for r in two} == {"k=2"}
    skip = [r[6] for r in two]
    assert skip[15] == "skip=1" and skip[16] == "skip=0"


def _quat_matrix(w, x, y, z):
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_lost_base_packet_is_bridged_by_link_1(parts):
    """K_0 lost (both copies) at ticks 2 and 3: link 1 still sends K_1, two identical
    copies, equal to the base frame times A_1(q) and w = z_0 qd_1."""
    rows = parts["base"]
    assert [r[1] for r in rows] == ["0", "1", "2", "3", "4"]
    base = np.eye(4)
    base[:3, :3] = _quat_matrix(*mr.BASE[:4])
    base[:3, 3] = mr.BASE[4:]
    for r in rows:
        tick = int(r[1])
        assert r[2] == ("lost" if tick in mr.LOST else "-")
        assert r[3:5] == ["copies=2", "same=2"]
        f = [float(x) for x in r[6:9] + r[10:14] + r[15:18]]
        want = base @ dh_matrix(*mr.DH1, mr.q1(tick))
        assert f[0:3] == pytest.approx(want[:3, 3], abs=2e-6), tick
        assert _quat_matrix(*f[3:7]) == pytest.approx(want[:3, :3], abs=2e-6), tick
        assert f[7:10] == pytest.approx(base[:3, 2] * mr.qd1(tick), abs=2e-6), tick


@pytest.mark.slow
def test_copies_without_loss_run_exactly_as_one(tmp_path):
    """Lockstep in-process, no fault: the same time series with one or two copies."""
    a = run(scenario(tmp_path, duration=1.0, extra="[bus]\nkinematic_copies = 1\n"), tmp_path, "one")[1]
    b = run(scenario(tmp_path, duration=1.0, extra="[bus]\nkinematic_copies = 2\n"), tmp_path, "two")[1]
    assert differing(a, b) == []


@pytest.mark.slow
def test_copies_bridge_a_lossy_start(tmp_path):
    """10 % of the frames lost in the start transient (the arm's fastest motion): one copy
    leaves the chain to predicted bridges and stale goals, two keep the error near the
    fault-free run's."""
    loss = '[[fault]]\nkind = "frame_loss"\nrate = 0.1\nseed = 1\n'
    free = run(scenario(tmp_path, duration=1.5), tmp_path, "free")[0]["e_rms_m"]
    one = run(scenario(tmp_path, loss, 1.5, "[bus]\nkinematic_copies = 1\n"), tmp_path, "one")[0]
    two = run(scenario(tmp_path, loss, 1.5, "[bus]\nkinematic_copies = 2\n"), tmp_path, "two")[0]
    assert one["faults"]["bus"]["lost"] > 0 and two["faults"]["bus"]["lost"] > 0
    assert two["e_rms_m"] <= 1.5 * free < one["e_rms_m"]


def test_fault_seed_picks_another_draw():
    spec = {"kind": "frame_loss", "rate": 0.5}
    draws = {}
    for seed in (None, 0, 1):
        fs = FaultSet([dict(spec, seed=seed)])
        draws[seed] = [fs.on_wire(0.0, b"x", 1) is None for _ in range(64)]
    assert draws[None] == draws[0] != draws[1]


def test_budget_counts_every_copy():
    """Two copies: (N + 1) more KINEMATIC frames per cycle, more line time, K_N no earlier."""
    n = 10
    for bus in ("uart:1000000", "canfd:1000000/5000000"):
        one = budget.simulate(n, bus, "real")
        two = budget.simulate(n, bus, "real", kinematic_copies=2)
        extra = m.frame_size(m.KINEMATIC) + (2 if bus.startswith("uart") else 0)   # + COBS, delimiter
        assert two["bytes_per_cycle"] - one["bytes_per_cycle"] == pytest.approx((n + 1) * extra)
        assert two["busiest_line_s"] > one["busiest_line_s"] and two["k_n_s"] >= one["k_n_s"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inprocess", pytest.param("can", marks=needs("micropython")),
                                  pytest.param("chain", marks=needs("micropython"))])
def test_dead_tip_is_bridged_by_the_host(mode, tmp_path):
    """Link N has no distal neighbour: when its node dies, link N-1 also sends its K to the
    host, which composes K_N over joint N held by its brake. Without that bridge the
    host's goal runs on an extrapolated K_N and the arm diverges (in-process), or the
    host waits for a K_N that never comes (processes mode, lockstep: the tip's
    MicroPython process killed with SIGKILL; on a plain UART chain link N-1 goes on with
    its down wire hung up)."""
    free = run(scenario(tmp_path, duration=3.0), tmp_path, "free")[0]["e_rms_m"]
    sc = scenario(tmp_path, '[[fault]]\nkind = "node_crash"\nlink = 10\nstart = 1.5\n', 3.0)
    opts = {} if mode == "inprocess" else {"mode": "processes", "bus": "can" if mode == "can" else "uart",
                                           "topology": "chain", "lockstep": True}
    s, out = run_scenario(sc, tmp_path / "tip", quiet=True, make_plots=False, **opts)
    assert s["status"] == "degraded" and [x["link"] for x in s["degraded"]] == [10], s.get("reason")
    assert s["e_rms_m"] <= 1.5 * free
    assert [e["link"] for e in s["faults"]["team"]] == [10] * len(s["faults"]["team"])


@pytest.mark.slow
def test_a_tick_nobody_answers_drops_nobody(tmp_path):
    """Goals lost in the first ticks (no agent has a last goal to act on): no torque from
    anyone is the bus's loss, not N silent nodes, so the team stays whole; a link that
    alone stays silent is still dropped after driver_timeout_ticks (2)."""
    sc = scenario(tmp_path, duration=1.0)
    k_n = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0) + (0.0,) * 6

    def tick(gp, k, answering):
        gp.begin(k, k / 120.0)
        assert any(f[0] == m.GOAL for f in gp.on_frame(m.encode(m.KINEMATIC, sc.n, m.HOST, 0, (k,) + k_n)))
        for link in answering:
            gp.on_frame(m.encode(m.TORQUE, link, m.HOST, 0, (k, 0.0, sc_states.RUN) + (0.0,) * 6))
        gp.end_tick()

    gp = HostController(sc)
    for k in range(3):
        tick(gp, k, [])
    assert all(gp.member) and gp.events == []
    for k in range(3, 5):
        tick(gp, k, range(1, sc.n))
    assert [e[1:] for e in gp.events] == [(sc.n, "dropped: silent for 2 ticks")]
