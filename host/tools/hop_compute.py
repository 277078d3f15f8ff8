"""Per-hop compute of a link agent for `linkteam budget`: measured under MicroPython
(benchmarks/mp_node_cycle.py on the unix port or on a flashed board), priced from the
instruction counts of `make mcu-bench` for a board profile, or given by hand."""
import json
import subprocess
from pathlib import Path

from host.tools.flash import mpremote, soft_reset_to_main
from host.runners.children import micropython_path

ROOT = Path(__file__).resolve().parents[2]

# Per-hop compute measured with benchmarks/mp_node_cycle.py on the MicroPython unix port
# (development machine, x64), plus wake_us: the OS waking the next process (desktop
# processes mode: ~30 us per hop idle, ~100-150 us during a cycle on 2 cores; a board's UART IRQ is far quicker).
DEFAULT_COMPUTE = {"k_us": 40.0, "goal_us": 30.0, "fwd_us": 5.0, "host_us": 200.0, "wake_us": 100.0}


def hop_lines(text):
    """The `HOP name us` lines of benchmarks/mp_node_cycle.py's output -> {name: us}."""
    vals = {}
    for line in text.splitlines():
        if line.startswith("HOP "):
            k, v = line.split()[1:3]
            vals[k] = float(v)
    return vals


def parse_compute(spec, board=None):
    """`--compute`: "k_us=900,goal_us=700,..." or "@FILE", a file holding the output of
    benchmarks/mp_node_cycle.py (run on the board: mpremote run benchmarks/mp_node_cycle.py),
    or "@benchmarks/results.json" (make mcu-bench) priced for `board` (default stm32f4-168mhz)."""
    if spec.startswith("@") and spec.endswith(".json"):   # make mcu-bench's benchmarks/results.json
        with open(spec[1:]) as f:
            return board_compute(json.load(f), board or "stm32f4-168mhz")
    if spec.startswith("@"):
        with open(spec[1:]) as f:
            vals = hop_lines(f.read())
        if not vals:
            raise ValueError("%s holds no 'HOP name us' lines (benchmarks/mp_node_cycle.py output)" % spec[1:])
        return vals
    vals = {}
    for item in spec.split(","):
        k, eq, v = item.strip().partition("=")
        if k not in DEFAULT_COMPUTE or not eq:
            raise ValueError("compute: NAME=US with NAME one of %s, not %r" % (", ".join(DEFAULT_COMPUTE), item))
        try:
            vals[k] = float(v)
        except ValueError:
            raise ValueError("compute: %s=%r is not a number of microseconds" % (k, v)) from None
        if vals[k] < 0:
            raise ValueError("compute: %s must be >= 0" % k)
    return vals


# Boards priced from instruction counts measured on the emulated microcontroller
# (make mcu-bench -> benchmarks/results.json "mcu"): name -> (build, clock MHz, cycles per
# instruction). QEMU counts instructions, not cycles; 1.5 cycles per instruction is the
# pessimistic end of a Cortex-M4F running from flash behind the STM32F4's ART cache and of
# a Cortex-M0+ executing from the RP2040's XIP flash cache (1.0 when every fetch hits).
BOARDS = {
    "stm32f4-168mhz": ("m4f", 168.0, 1.5),
    "rp2040-125mhz": ("m0plus", 125.0, 1.5),
}


def board_compute(results, board, auth=False):
    """Per-hop compute (us) of `board` from make mcu-bench's results: a hop's measured
    instructions x cycles per instruction / clock. wake_us is an idle poll round: the
    most a board's loop takes to notice a frame that has arrived (the UART or CAN
    interrupt ends its machine.idle())."""
    if board not in BOARDS:
        raise ValueError("board must be one of %s, not %r" % (", ".join(sorted(BOARDS)), board))
    build, mhz, cpi = BOARDS[board]
    r = results.get("mcu", {}).get(build)
    if r is None:
        raise ValueError("benchmarks/results.json has no mcu.%s figures: run make mcu-bench" % build)
    us = cpi / mhz   # microseconds per instruction
    if auth:   # the hops measured with the node checking a protected GOAL
        if "auth" not in r:
            raise ValueError("benchmarks/results.json has no mcu.%s.auth figures: run make mcu-bench" % build)
        r = r["auth"]
    return {"k_us": r["k_hop"] * us, "goal_us": r["goal_hop"] * us, "fwd_us": r["forward"] * us,
            "wake_us": r["idle_poll"] * us}


def measure_compute(micropython=None, port=None):
    """Per-hop compute (us) of a ChainNode + LinkAgent: benchmarks/mp_node_cycle.py
    under the MicroPython unix port, or on the board at `port` (flashed with `linkteam
    flash`, so its firmware/ and bus_protocol/ are the ones measured) through mpremote."""
    bench = str(ROOT / "benchmarks" / "mp_node_cycle.py")
    if port is not None:
        try:
            return hop_lines(mpremote(port, "run", bench, timeout=300))
        finally:
            soft_reset_to_main(port)   # back to its link agent (boot main.py)
    r = subprocess.run([micropython or micropython_path(), bench], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=120)
    return hop_lines(r.stdout)
