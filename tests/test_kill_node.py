"""A node killed from outside under a running arm (benchmarks/kill_node.py): the reference
arm's first 6 s in processes mode, lockstep, link 5's MicroPython process SIGKILLed by
the script about 3 s in (not by the run's fault schedule). With fault tolerance on by
default the run ends `degraded` with link 5 listed as gone, and tracks on within 1.2 x its
fault-free twin on the same bus. (Without neighbour checks the same kill stops the
kinematic wave at link 5 and the run aborts.) The 40 s wall-clock demonstration on both
buses: .venv/bin/python benchmarks/kill_node.py."""
import importlib.util
import json

import pytest

from tests.conftest import REPO, missing

_spec = importlib.util.spec_from_file_location("kill_node", REPO / "benchmarks" / "kill_node.py")
kill_node = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kill_node)


@pytest.mark.skipif(bool(missing("micropython")), reason=missing("micropython") or "")
@pytest.mark.parametrize("bus", ["uart", "can"])
def test_a_node_killed_from_outside_leaves_a_degraded_run_that_tracks(tmp_path, bus):
    out = tmp_path / "rows.json"
    code = kill_node.main(["--bus", bus, "--lockstep", "--duration", "6", "--at", "3", "--json", str(out),
                           "--timeout", "300"])
    row = json.loads(out.read_text())[0]
    assert code == 0 and row["problem"] == "", row
    assert row["free_status"] == "ok" and row["status"] == "degraded", row
    assert [link for link, _ in row["degraded"]] == [5], row
    assert "its process exited" in row["degraded"][0][1], row
    assert 2.5 <= row["died_at_s"] <= 5.5, row    # killed inside the run, not before or after it
    assert row["ratio"] <= 1.2, row
