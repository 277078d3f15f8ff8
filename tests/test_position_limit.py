"""position_limit (firmware/safety.py on_sample, linkcore_core.h sample): a joint reading
beyond q_low, q_high by more than safety.position_margin latches the fault, brakes the
joint, is named in STATUS and cleared by COMMAND RELEASE, on the pure-Python core and on
linkcore alike; and the shipped scenario that drives link 3 past its limit."""
import numpy as np
import pytest

from bus_protocol import messages as m
from bus_protocol import states as sc
from firmware import linkstate
from tests.conftest import REPO, on_linkcore, pure_python

Q_HIGH, MARGIN = 1.0, 0.05


def _agent(sent):
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    cfg = {"link": 2, "n_links": 3, "dh": {"type": "revolute", "a": 0.75}, "q_low": -1.0, "q_high": Q_HIGH,
           "u_sat": 1e6, "behaviours": {"proxy": {"weight": 1.0}},
           "safety": {"position_margin": MARGIN, "max_q_step": 10.0}}
    return LinkAgent(cfg, SimHAL(lambda b, n: sent.append(bytes(b[:n]))))


def _cycle(agent, tick, q):
    for f in (m.encode(m.JOINT_STATE, 0, 2, 0, (tick, q, 0.0, 0, 0., 0., 0., 0., 0., 0.)),
              m.encode(m.SYNC, 0, 255, 0, (tick,)),
              m.encode(m.KINEMATIC, 1, 2, 0, (tick, 1., 0., 0., 0., 0.75, 0., 0., 0., 0., 0., 0., 0., 0.)),
              m.encode(m.GOAL, 0, 255, 0, (tick, 0, 1.0, 0.5, 0., 1., 2., 0., 0., 0., 0.))):
        agent.receive(f)


def _statuses(sent):
    out = []
    for f in sent:
        msg = m.Decoder().decode(f)
        if msg is not None and msg[0] == m.STATUS:
            out.append(msg[4][1:3])   # (state, faults)
    return out


def _run(core):
    """(tick the fault latched at, STATUS frames, state after RELEASE and a good cycle)."""
    sent = []
    agent = _agent(sent)
    assert on_linkcore(agent) == core
    latched = -1
    for tick, q in enumerate((0.5, 0.9, Q_HIGH + MARGIN, Q_HIGH + 0.06, Q_HIGH + 0.07)):
        _cycle(agent, tick, q)
        if latched < 0 and agent.safety.faults:
            latched = tick
    status = _statuses(sent)
    agent.receive(m.encode(m.COMMAND, 0, 255, 0, (m.CMD_RELEASE, 0.0)))
    _cycle(agent, 5, 0.5)
    return latched, status, agent.safety.state, agent.safety.faults


@pytest.mark.skipif(linkstate.linkcore is None, reason="linkcore for CPython not built")
def test_a_reading_beyond_the_margin_latches_position_limit_on_both_cores():
    with pure_python():
        pure = _run(core=False)
    native = _run(core=True)
    assert pure == native
    latched, status, state, faults = native
    # at the margin itself no fault; past it the first sample latches, the STATUS at once
    assert latched == 3
    faulted = [x for x in status if x[1]]
    assert faulted[0] == (sc.BRAKED, sc.F_POSITION_LIMIT)
    assert sc.fault_names(faulted[0][1]) == ["position_limit"]
    assert (state, faults) == (sc.RUN, 0)   # RELEASE cleared it; the next sample runs


def test_position_limit_is_off_without_a_margin_and_takes_its_reaction():
    from firmware import safety
    sf = safety.Safety({"q_low": -1.0, "q_high": 1.0})
    for tick in range(3):
        sf.on_sample(tick, 50.0 * tick * 0.01, 0.0)
    assert sf.faults == 0
    sf = safety.Safety({"q_low": -1.0, "q_high": 1.0, "position_margin": 0.1,
                        "reactions": {"position_limit": "hold"}})
    sf.on_sample(0, -1.2, 0.0)
    assert (sf.state, sf.faults) == (sc.HOLD, sc.F_POSITION_LIMIT)


def test_link3_driven_past_its_limit_ends_braked_with_position_limit(tmp_path):
    """scenarios/faults/position-limit-link3.toml: an encoder offset of 0.45 rad at 27 s
    (30 s of simulated time, in-process)."""
    from host.run import run_scenario
    from host.scenario.loader import load
    s, out = run_scenario(load(REPO / "scenarios" / "faults" / "position-limit-link3.toml"), tmp_path / "r",
                          quiet=True, make_plots=False)
    assert s["nodes"][2]["state"] == "braked" and s["nodes"][2]["faults"] == ["position_limit"]
    assert s["status"] == "degraded" and [x["link"] for x in s["degraded"]] == [3], s["reason"]
    assert s["degraded"][0]["faults"] == ["position_limit"]
    rep = [r for r in s["faults"]["reports"] if r["link"] == 3]
    assert rep and "position_limit" in rep[0]["text"] and rep[0]["t"] == pytest.approx(27.0, abs=1 / 120.0)
    assert all(n["state"] == "run" for k, n in enumerate(s["nodes"]) if k != 2)
    d = np.load(out / "timeseries.npz")
    assert d["q"].shape[1] == 10
