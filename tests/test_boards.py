"""Board HALs (firmware/hal/rp2_uart.py, stm32_can.py) through fake machine/rp2/pyb
modules (tests/fakes), under the real MicroPython unix port and under CPython: encoder
counts -> rad (the PIO quadrature program itself runs in the fake rp2's interpreter),
velocity filter, torque -> duty, brake pin, range sensors, 2-node UART chain and ring cycles,
CAN / CAN-FD cycles with FIFO order on the wire, fragmentation, Reassembler drops."""
import json
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, run_micropython

SCRIPT = REPO / "tests" / "mp" / "mp_boards.py"
CHECKS = re.findall(r'@check\("([a-z0-9_]+)"\)', SCRIPT.read_text())


@pytest.fixture(scope="module")
def outputs():
    mp = run_micropython(SCRIPT.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120,
                       cwd=str(REPO))
    assert r.returncode == 0, r.stderr[-4000:]
    return {"micropython": mp, "cpython": r.stdout}


@pytest.mark.parametrize("interp", ["micropython", "cpython"])
@pytest.mark.parametrize("name", CHECKS)
def test_board_check(outputs, interp, name):
    out = outputs[interp]
    lines = [ln for ln in out.splitlines() if ln.split(" ", 1)[-1].startswith(name)]
    assert lines == ["PASS " + name], "\n".join(lines) or out[-3000:]


def test_every_check_ran():
    assert len(CHECKS) >= 15


def torques(out):
    return {ln.split()[1]: json.loads(ln.split(" ", 2)[2]) for ln in out.splitlines()
            if ln.startswith("TORQUES ")}


def test_same_torques_on_chain_ring_can_canfd_and_both_interpreters(outputs):
    t_mp = torques(outputs["micropython"])
    t_cp = torques(outputs["cpython"])
    assert set(t_mp) == {"chain", "ring", "ring2", "can", "canfd"}
    for mode in t_mp:
        assert t_mp[mode] == pytest.approx(t_cp[mode], rel=1e-12)
        assert t_mp[mode] == pytest.approx(t_mp["chain"], rel=1e-12)


def test_hardware_docs_name_the_board_modules():
    import csv
    readme = (REPO / "hardware" / "README.md").read_text()
    for name, mod in (("rp2-uart", "firmware.hal.rp2_uart"), ("stm32-can", "firmware.hal.stm32_can")):
        assert name in readme and mod in readme
        assert (REPO / (mod.replace(".", "/") + ".py")).exists()
    for doc in ("rp2040-uart-node.md", "stm32-can-node.md", "hil-rig.md"):
        assert (REPO / "hardware" / doc).exists()
    rows = list(csv.reader(open(REPO / "hardware" / "bom.csv")))
    assert rows[0][:5] == ["scope", "item", "part_number", "supplier_example", "qty"]
    assert all(len(r) == len(rows[0]) for r in rows)
