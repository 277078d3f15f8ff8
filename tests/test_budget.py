"""`linkteam budget` (docs/design.md §6: the chain must fit in one period). Its prediction
against a baud-emulated processes run is timing: `make bench`."""
import pytest

from bus_protocol import messages as m

from host.tools import budget, hop_compute

from .conftest import needs


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


def test_a_line_busier_than_the_period_does_not_fit_even_when_the_latency_does():
    # 3 links on classic CAN at 1 Mbit/s: SPEC.md's 125 + 105 N bytes a cycle, each CAN frame
    # carrying at most 8 of them in >= 47 + 64 bit times, so the line alone needs more than
    # (125 + 315) / 8 * 111 us = 6.1 ms; the simulated busiest line is longer than the 8.33 ms
    # period at 120 Hz while K_N and the torques are in sooner
    r = budget.simulate(3, "can:1000000", plant="real")
    assert r["bytes_per_cycle"] >= 125 + 105 * 3
    assert r["busiest_line_s"] > 1 / 120 > r["latency_s"]
    assert r["max_rate_hz"] < 120
    assert "at 120 Hz (period 8.333 ms): DOES NOT FIT" in budget.report(3, "can:1000000", 120, plant="real")


def test_compute_given_or_read_from_a_boards_benchmark_output(tmp_path):
    # the output of benchmarks/mp_node_cycle.py as a board prints it (mpremote run)
    out = tmp_path / "rp2.txt"
    out.write_text("RAM after init: gc.mem_alloc() 52000 bytes\nHOP k_us 900\nHOP goal_us 700\nHOP fwd_us 120\n")
    got = hop_compute.parse_compute("@%s" % out)
    assert got == {"k_us": 900.0, "goal_us": 700.0, "fwd_us": 120.0}
    assert hop_compute.parse_compute("k_us=900, wake_us=20") == {"k_us": 900.0, "wake_us": 20.0}
    slow = budget.simulate(10, "canfd:1000000/5000000", plant="real", compute=got)
    fast = budget.simulate(10, "canfd:1000000/5000000", plant="real")
    # K_N waits for ten K hops: each ~860 us slower than the desktop default
    assert slow["k_n_s"] - fast["k_n_s"] == pytest.approx(10 * (900 - 40) * 1e-6, rel=0.05)
    for bad in ("k_us", "k_us=fast", "kus=3", "k_us=-1"):
        with pytest.raises(ValueError):
            hop_compute.parse_compute(bad)
    (tmp_path / "empty.txt").write_text("nothing here\n")
    with pytest.raises(ValueError, match="HOP"):
        hop_compute.parse_compute("@%s" % (tmp_path / "empty.txt"))


@needs("micropython")
def test_budget_cli_measures_under_micropython_and_rejects_bad_compute(capsys, monkeypatch):
    from host.cli import main
    # defaults no measurement could give: what the report shows was measured or given
    monkeypatch.setattr(budget, "DEFAULT_COMPUTE", dict.fromkeys(budget.DEFAULT_COMPUTE, 99999.0))
    assert main(["budget", "--links", "10", "--bus", "uart:3000000", "--measure-on", "local",
                 "--compute", "wake_us=0"]) == 0
    text = capsys.readouterr().out
    hop = dict(kv.split() for kv in text.split("per-hop compute (us): ")[1].strip().split(", "))
    assert hop["wake_us"] == "0" and hop["host_us"] == "99999"
    assert all(0 < float(hop[k]) < 99999 for k in ("k_us", "goal_us", "fwd_us"))   # measured, not defaulted
    assert main(["budget", "--links", "10", "--bus", "uart:3000000", "--compute", "k_us=x"]) == 2
    assert "not a number" in capsys.readouterr().err
