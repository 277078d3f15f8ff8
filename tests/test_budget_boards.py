"""`linkteam budget --board`: per-hop compute of a real board priced from make mcu-bench's
instruction counts (benchmarks/results.json), checked by hand arithmetic."""
import json

import pytest

from host.tools import budget, hop_compute
from host.cli import main

# a made-up results file: the M4F build's counts (instructions) per phase
RESULTS = {"mcu": {"m4f": {"k_hop": 168000, "goal_hop": 336000, "forward": 16800, "idle_poll": 1680}}}


def test_board_compute_is_instructions_times_cpi_over_clock():
    c = hop_compute.board_compute(RESULTS, "stm32f4-168mhz")   # 1.5 cycles per instruction, 168 MHz
    assert c == pytest.approx({"k_us": 1500.0, "goal_us": 3000.0, "fwd_us": 150.0, "wake_us": 15.0})


def test_board_verdict_bounded_by_the_sequential_kinematic_wave():
    # ten sequential 1.5 ms hops alone take 15 ms: under 1 / 15 ms = 66.7 Hz whatever the bus
    rows = [r for r in budget.board_verdicts(RESULTS, links=(10,)) if r[0] == "stm32f4-168mhz"]
    assert rows and all(r[4] < 1 / 0.015 and not r[5][120.0] for r in rows)


def test_budget_cli_board_and_results_file(tmp_path, capsys):
    f = tmp_path / "results.json"
    f.write_text(json.dumps(RESULTS))
    assert main(["budget", "--links", "10", "--bus", "uart:2000000", "--board", "stm32f4-168mhz",
                 "--results", str(f), "--auth", "off"]) == 0
    assert "k_us 1500" in capsys.readouterr().out
    # authenticated (the default) needs the hops measured with the check: a clear error, exit 2
    assert main(["budget", "--links", "10", "--bus", "uart:2000000", "--board", "stm32f4-168mhz",
                 "--results", str(f)]) == 2
    assert "mcu.m4f.auth" in capsys.readouterr().err
    assert main(["budget", "--links", "10", "--bus", "uart:2000000", "--compute", "@" + str(f)]) == 0
    assert "goal_us 3000" in capsys.readouterr().out
    # a board whose build was not measured: a clear error, exit 2
    assert main(["budget", "--links", "10", "--bus", "uart:2000000", "--board", "rp2040-125mhz",
                 "--results", str(f)]) == 2
    assert "make mcu-bench" in capsys.readouterr().err
