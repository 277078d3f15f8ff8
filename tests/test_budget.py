"""`linkteam budget` against a baud-emulated processes run (DESIGN 6: the chain must fit
in one period)."""
import pytest

from bus_protocol import messages as m
from host import budget
from host.run import run_scenario
from host.scenario import load

from .conftest import REPO


def test_frame_times_use_real_frame_sizes():
    # KINEMATIC: 64-byte frame -> 66 UART bytes -> 660 us at 1 Mbaud; one CAN-FD frame;
    # ten classic-CAN fragments
    assert budget.frame_seconds("uart", 1e6, None, m.KINEMATIC) == pytest.approx(660e-6)
    assert budget.frame_seconds("can", 1e6, None, m.KINEMATIC) > 9 * 131e-6
    assert budget.frame_seconds("canfd", 1e6, 5e6, m.KINEMATIC) < 200e-6


def test_budget_scales_and_reports():
    a = budget.simulate(10, "uart:1000000")
    b = budget.simulate(20, "uart:1000000")
    assert b["latency_s"] > 1.8 * a["latency_s"]
    fd = budget.simulate(10, "canfd:1000000/5000000")
    assert fd["latency_s"] < a["latency_s"]
    text = budget.report(10, "uart:1000000", 120)
    assert "DOES NOT FIT" in text and "bytes per cycle" in text
    # joint states and torque reports off the bus shorten the cycle and the bytes
    bus, wire = budget.simulate(10, "uart:1000000", plant="bus"), budget.simulate(10, "uart:1000000", plant="wire")
    # the return wire takes K_N (and everything else for the host) past N-1 up-hops
    ring, chain = (budget.simulate(10, "uart:1000000", plant="wire", topology=t) for t in ("ring", "chain"))
    assert ring["k_n_s"] < 0.6 * chain["k_n_s"] and ring["bytes_per_cycle"] == chain["bytes_per_cycle"]
    assert wire["latency_s"] < 0.8 * bus["latency_s"] and wire["bytes_per_cycle"] < bus["bytes_per_cycle"]


@pytest.mark.parametrize("topology", ["ring", "chain"])
def test_budget_predicts_a_baud_emulated_run(topology, tmp_path):
    sc = load(REPO / "scenarios" / "reference.toml")
    sc.duration = 0.6
    s, _ = run_scenario(sc, tmp_path, mode="processes", quiet=True, make_plots=False,
                        bus="uart", baud=1000000, lockstep=True, topology=topology)
    assert s["status"] == "ok", s["reason"]
    measured = s["bus_cycle_ms"]["p50"] * 1e-3
    predicted = budget.simulate(sc.n, "uart:1000000", plant="wire", topology=topology)["latency_s"]
    assert abs(measured - predicted) <= 0.25 * measured, (measured, predicted)
