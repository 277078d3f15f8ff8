"""The bring-up of docs/bringup.sh on two virtual boards, run as a user would run
it: each step's exit status is checked by the script; here, what the steps said. Heavy:
about 75 s on a quiet machine (three flashes and a 3 s HIL run), as the HIL tests are."""
import json
import subprocess

import pytest

from host.run import run_scenario
from host.scenario.loader import load
from host.transports.udp import free_base_port

from .conftest import REPO, needs

pytestmark = [pytest.mark.slow, needs("micropython")]


def test_bringup_on_two_virtual_boards(tmp_path):
    base = free_base_port(2)
    r = subprocess.run(["bash", str(REPO / "docs" / "bringup.sh"), str(tmp_path / "bu")], cwd=str(REPO),
                       env={"BASE": str(base), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=900)
    out = r.stdout
    assert r.returncode == 0 and out.rstrip().endswith("BRINGUP OK"), out[-4000:] + r.stderr[-2000:]
    # no traceback of ours (the board's own, quoted with "|" by flash, is expected)
    assert [x for x in (out + r.stderr).splitlines() if "Traceback" in x and not x.lstrip().startswith("|")] == []
    step = {}
    for block in out.split("$ linkteam ")[1:]:
        step.setdefault(block.split("\n", 1)[0].split(" --")[0].split(" /")[0], []).append(block)
    # the broken flash: the board's own error, then the good one boots
    assert "ValueError: invalid syntax for integer" in step["flash"][0] and "did not boot" in step["flash"][0]
    assert step["flash"][1].count("boots: linkteam ready") == 2
    assert [line.split()[-1] for line in step["boards"][0].splitlines()[2:4]] == ["yes", "yes"]
    node = "".join(step.get("node", []))
    assert "behaviours.brake.kw = 45.0" in node.split("reset")[-1]   # read back after the reboot
    assert "state braked  faults command" in node.split("jog")[0].split("brake\n")[-1]
    jog = node.split("jog --torque")[1]
    assert "jog u = 2 " in jog and "state braked  faults command" in jog   # the dead-man braked it
    assert "no encoder" in r.stderr or "no encoder" in out
    # the HIL run tracks as the same scenario in-process does (lockstep: the same figures)
    summary = json.loads((tmp_path / "bu" / "hil" / "summary.json").read_text())
    ref, _ = run_scenario(load(tmp_path / "bu" / "hil2-bringup.toml"), tmp_path / "inproc", quiet=True,
                          make_plots=False)
    assert summary["status"] == "ok" and summary["mode"] == "hil"
    assert summary["e_rms_m"] == ref["e_rms_m"] and summary["e_rms_m"] < 0.1
