"""Several links per node (Fernández et al.'s distribution of links over processors; firmware/group.py)."""
import numpy as np
import pytest

from host.run import run_scenario
from host.runners.processes import group_name, node_groups
from host.scenario.loader import load
from tests.conftest import REPO, needs, same_under_both
from tests.dh_reference import fk



def test_node_groups_and_their_names():
    assert node_groups(6, [5, 1]) == [(1, 5), (6, 6)]
    assert node_groups(3) == [(1, 1), (2, 2), (3, 3)]
    assert group_name(node_groups(6, [3, 2, 1])) == "p3a321"
    for bad in ([5, 2], [6, 0], [7, -1]):
        with pytest.raises(ValueError, match="adding up to the 6 links"):
            node_groups(6, bad)


def test_hosted_links_pass_k_inside_the_node_under_micropython():
    """K_3 out of a node hosting links 1-3 (memory wires between them) is the forward
    kinematics of the three joints, under MicroPython and CPython."""
    line = "\n".join(same_under_both("mp_group.py")).strip().splitlines()
    assert len(line) == 1 and line[0].startswith("K 3 ")
    p = [float(x) for x in line[0].split()[2:]][4:7]
    dh = [("revolute", 0.1, 0.2, 0.5, 1.5707963), ("prismatic", 0.0, 0.1, 0.0, 0.0),
          ("revolute", 0.2, 0.05, 0.3, 0.7)]
    T = fk(dh, [0.3, 0.25, 1.1])[-1]
    assert np.allclose(p, T[:3, 3], atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("bus,grouping", [("uart", [3, 7]), ("can", [5, 5])])
@needs("micropython")
def test_grouped_nodes_track_like_inprocess(bus, grouping, tmp_path):
    sc = load(REPO / "scenarios" / "reference.toml")
    sc.duration = 1.0
    ref, _ = run_scenario(sc, tmp_path / "inproc", quiet=True, make_plots=False)
    s, _ = run_scenario(sc, tmp_path / "grouped", mode="processes", quiet=True, make_plots=False,
                        bus=bus, lockstep=True, grouping=grouping)
    assert s["status"] == "ok" and s["grouping"] == group_name(node_groups(10, grouping))
    assert s["e_rms_m"] == pytest.approx(ref["e_rms_m"], rel=1e-6)
    # every link says which node process hosts it (group.py's ready line; LOG frames cut it
    # at 56 characters): the grouping asked for, not one process per link
    log = (tmp_path / "grouped" / "run.log").read_text()
    ready = dict((int(line.split()[2].rstrip(":")), line) for line in log.splitlines()
                 if line.startswith("ready: link "))
    first = 1
    for size in grouping:
        assert "(node of links %d-%d" % (first, first + size - 1) in ready[first]
        assert all("(node of links %d-" % first in ready[i] for i in range(first, first + size))
        first += size


@pytest.mark.slow
def test_cli_checks_the_grouping_before_any_node_starts(capsys):
    from host import cli
    ref = str(REPO / "scenarios" / "reference.toml")
    for args, why in ((["--grouping", "5,4"], "adding up to the 10 links"),
                      (["--grouping", "5,x"], "invalid literal"),
                      (["--links-per-node", "2", "--baud", "1000000"], "does not pace its wires")):
        assert cli.main(["run", ref, "--mode", "processes", "--quiet"] + args) == 2
        assert why in capsys.readouterr().err

    class A:
        grouping, links_per_node, baud = None, 3, 0
    assert cli._grouping(A, 10) == [3, 3, 3, 1]
