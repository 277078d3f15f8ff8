"""On-line identification of an unknown payload (Fernández et al., firmware/identification.py):
the estimate against the plant's payload, the same firmware under MicroPython, the
scenario fields and the run's summary."""
import json
import math
from pathlib import Path

import pytest

from bus_protocol import messages as m
from host.scenario import loader as scenario
from host.run import run_scenario
from host.runners import inprocess
from host.runners.base import ControlLoop
from tests.conftest import REPO, needs, run_both

UNKNOWN = REPO / "scenarios" / "identification" / "unknown-payload.toml"


def _scenario(path, duration=None, **payload):
    data, sources = scenario.read_toml(Path(path))
    if duration:
        data["simulation"]["duration"] = duration
    data["payload"].update(payload)
    return scenario.from_dict(data, path, sources)


def _record(sc, links):
    """Run in process; every frame agents `links` received, in order (plain host frames:
    mp_replay.py feeds them to agents that check no host commands)."""
    sc.auth = "unauthenticated"
    loop = ControlLoop(sc, "inprocess")
    bus = inprocess.LoopbackBus([], loop.gp.on_frame)
    bus.agents = inprocess.make_agents(sc, bus.send, loop.auth)
    frames = {i: [] for i in links}
    for i in links:
        a = bus.agents[i - 1]
        rx = a.receive

        def tap(f, n=None, rx=rx, out=frames[i]):
            out.append(bytes(f[:n] if n is not None else f))
            rx(f, n)
        a.receive = tap
    loop.agents = bus.agents
    stats = loop.run(lambda fr, k, deadline: bus.run(fr))
    assert stats.status == "ok", stats.reason
    return loop, frames


@pytest.mark.slow
def test_planar_payload_identified_within_tolerance():
    # the plant's payload is the truth: 7.5 kg at c = (0.2, 0.1) in frame N
    sc = _scenario(UNKNOWN, duration=3.0)
    loop, _ = _record(sc, [])
    th = loop.agents[-1].ident.est.theta
    assert abs(th[0] - 7.5) / 7.5 < 0.05
    c = (th[1] / th[0], th[2] / th[0])
    assert math.hypot(c[0] - 0.2, c[1] - 0.1) < 0.02
    # I_zz about the frame-N origin: 0.3 + 7.5 (0.2^2 + 0.1^2) by parallel axes
    assert abs(th[6] - (0.3 + 7.5 * 0.05)) / 0.675 < 0.1
    # the planar motion leaves h_z and the other inertias where they started
    assert th[3] == th[4] == th[5] == th[7] == th[8] == th[9] == 0.0
    assert loop.gp.estimates, "ESTIMATE frames reached the host"


@needs("micropython")
def test_identifying_agents_same_under_micropython():
    """Links 9 and 10 replayed under MicroPython from the frames they got in a CPython
    run send the same frames (IDENT, TORQUE, ESTIMATE, ...) and reach the same estimate."""
    sc = _scenario(UNKNOWN, duration=1.0)
    loop, frames = _record(sc, [9, 10])
    outs = {}
    for link in (9, 10):
        stdin = json.dumps(sc.agent_configs[link - 1]) + "\n" + "\n".join(f.hex() for f in frames[link])
        mp, cp = run_both("mp_replay.py", stdin=stdin)
        outs[link, True], outs[link, False] = mp.splitlines(), cp.splitlines()
    dec = m.Decoder()
    for link in (9, 10):
        mp, cp = outs[link, True], outs[link, False]
        assert len(mp) == len(cp)
        types = set()
        for a, b in zip(mp, cp):
            if a.startswith("theta") or a.startswith("updates"):
                continue
            fa, fb = dec.decode(bytes.fromhex(a)), dec.decode(bytes.fromhex(b))
            assert fa[:4] == fb[:4]
            types.add(fa[0])
            # STATUS ends in the wall-clock cycle_us, TIMING holds wall-clock times
            vals = fa[4][:4] if fa[0] == m.STATUS else fa[4][:1] if fa[0] == m.TIMING else fa[4]
            for x, y in zip(vals, fb[4]):
                assert x == pytest.approx(y, rel=1e-4, abs=1e-4)
        assert (m.IDENT in types) == (link == 9) and (m.ESTIMATE in types) == (link == 10)
    theta_mp = [float(x) for x in outs[10, True][-2].split()[1:]]
    assert abs(theta_mp[0] - 7.5) / 7.5 < 0.1
    assert outs[10, True][-1] == "updates %d incomplete %d" % (
        loop.agents[-1].ident.est.updates, loop.agents[-1].ident.est.incomplete)


@pytest.mark.slow
def test_spatial_payload_identified_with_all_ten_parameters():
    sc = scenario.load(REPO / "scenarios" / "identification" / "unknown-payload-spatial.toml")
    sc.duration = 2.0
    loop, _ = _record(sc, [])
    th = loop.agents[-1].ident.est.theta
    assert abs(th[0] - 3.0) / 3.0 < 0.05                       # m
    assert math.dist([x / th[0] for x in th[1:4]], [0.0, 0.03, 0.06]) < 0.01   # centroid


def _last_link_weights(sc):
    """Run sc in process; (loop, the force_z of every ASSERT the last link sent)."""
    loop = ControlLoop(sc, "inprocess")
    forces = []
    rx = loop.gp.on_frame

    def tap(f):
        d = m.Decoder().decode(f)
        if d and d[0] == m.ASSERT and d[4][1] == sc.n:
            forces.append(d[4][8])
        return rx(f)
    loop.gp.on_frame = tap
    assert inprocess.run(loop).status == "ok"
    return loop, forces


def test_identified_payload_goes_into_the_weight_assertion():
    """Not told of the load, the last link's weight assertion carries the estimated mass
    once the estimate is in use: at the end of a 2 s run -(m_link + m_hat) g, m_hat near
    the plant's 3 kg (the link alone would assert 0.5 kg)."""
    sc = scenario.load(REPO / "scenarios" / "identification" / "unknown-payload-spatial.toml")
    assert "load" not in sc.agent_configs[-1]
    sc.duration = 2.0
    loop, forces = _last_link_weights(sc)
    m_hat = loop.bus.agents[-1].ident.est.theta[0]
    assert forces[0] == pytest.approx(0.5 * 9.81, rel=1e-6)          # before the estimate is used
    assert forces[-1] == pytest.approx((0.5 + m_hat) * 9.81, rel=1e-3)
    assert abs(m_hat - 3.0) < 0.15


def test_known_payload_goes_into_the_weight_assertion():
    """Told of the load, the last link asserts the weight of itself and the load at p_N:
    the force is -(m_link + m_load) g."""
    data, sources = scenario.read_toml(REPO / "scenarios" / "identification" / "unknown-payload-spatial.toml")
    data.pop("identification")
    data["payload"]["known"] = True
    sc = scenario.from_dict(data, "x", sources)
    last = sc.agent_configs[-1]
    assert last["load"] == {"mass": 3.0, "h": [0.0, pytest.approx(0.09), pytest.approx(0.18)]}
    assert "identify" not in last
    sc.duration = 0.05
    _, forces = _last_link_weights(sc)
    assert forces and forces[0] == pytest.approx((0.5 + 3.0) * 9.81, rel=1e-6)


def test_identification_fields_checked():
    base = "name = 'x'\n[simulation]\nduration = 1.0\n[robot]\nlinks = 2\n[[trajectory.knot]]\n" \
           "interval = [0.0, 1.0]\nposition = [1.0, 0.0, 0.0]\n[rmdac.linear]\nwp = 1.0\nwv = 1.0\n" \
           "[rmdac.rotation]\nwp = 1.0\nwv = 1.0\n"
    for extra, field in (("[identification]\nwindow = 3\n", "identification.window"),
                         ("[identification]\nwindow = 2\nforgetting = 0.5\n", "identification.forgetting"),
                         ("[identification]\n", "identification.window")):
        with pytest.raises(scenario.ScenarioError, match=field):
            scenario.from_dict(__import__("tomllib").loads(base + extra))
    sc = scenario.from_dict(__import__("tomllib").loads(base + "[identification]\nwindow = 2\n"))
    assert sc.agent_configs[0]["identify"]["period"] == pytest.approx(1 / 120.0)
    assert sc.agent_configs[1]["identify"]["params"] == [0, 1, 2, 6]


@pytest.mark.slow
def test_run_reports_payload_estimate(tmp_path):
    sc = _scenario(UNKNOWN, duration=2.0)
    summary, out = run_scenario(sc, tmp_path / "run", quiet=True)
    pe = summary["payload_estimate"]
    assert pe["identified"] == ["m", "h_x", "h_y", "I_zz"]
    assert pe["mass_error"] < 0.1 and pe["centroid_error_m"] < 0.05
    assert 0 < pe["converged_mass_10pct_s"] < 2.0
    assert (out / "payload_estimate.png").exists()
    assert json.loads((out / "summary.json").read_text())["payload_estimate"]["truth"]["mass"] == 7.5
