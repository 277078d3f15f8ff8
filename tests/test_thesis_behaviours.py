"""Thesis behaviours (docs/design.md §5): RMOA geometry and assertion summing against an
independent numpy reference, retraction / variable-compliance setpoints, the physical
brake, spiral and step trajectory shapes."""
import math
from pathlib import Path

import numpy as np
import pytest

from firmware import behaviours
from host.scenario.loader import ScenarioError, from_dict, load
from host.trajectory import Trajectory
from tests.dh_reference import fk, jacobian_fd

ROOT = Path(__file__).resolve().parents[1]
THESIS = ROOT / "scenarios" / "thesis"


def _arm_dict(q0, obstacles, eta=100.0, clearance=0.75):
    return {"name": "rmoa-geometry", "simulation": {"duration": 1.0},
            "robot": {"links": len(q0), "link": {"a": 0.75, "mass": 10.0, "inertia": [0.05, 0.49, 0.49],
                                                 "centroid": [-0.375, 0.0, 0.0]},
                      "override": [{"links": [i + 1], "q0": q} for i, q in enumerate(q0)]},
            "behaviours": {"proxy": {}, "assertions": {}, "rmoa": {"eta": eta, "clearance": clearance,
                                                                        "f_max": 1e9}},   # law uncapped here
            "rmdac": {"linear": {"wp": 1.0, "wv": 1.0}, "rotation": {"wp": 1.0, "wv": 1.0}},
            "trajectory": {"knot": [{"interval": [0.0, 1.0], "position": [1.0, 1.0, 0.0]}]},
            "obstacle": obstacles}


def _one_cycle(sc):
    from host.runners.base import ControlLoop
    from host.runners.inprocess import LoopbackBus, make_agents
    loop = ControlLoop(sc, "inprocess")
    bus = LoopbackBus([], loop.gp.on_frame)
    bus.agents = make_agents(sc, bus.send, loop.auth)
    bus.run(loop.hw.sense_frames(0) + loop.gp.begin(0, 0.0))
    return loop


def _reference_avoidance(q, obstacles, eta, c, a=0.75):
    """Independent: nearest point of each link axis to each sphere surface, the RMOA force
    there, and sum_k J_k(q)^T f_k with J_k the finite-difference Jacobian of that point
    held fixed in link k (only joints <= k move it)."""
    links = [("revolute", 0.0, 0.0, a, 0.0)] * len(q)
    T = fk(links, q)
    tau = np.zeros(len(q))
    n_assert = 0
    for k in range(1, len(q) + 1):
        A, B = T[k - 1][:3, 3], T[k][:3, 3]
        best = None
        for ob in obstacles:
            C = np.array(ob["position"])
            s = np.clip(np.dot(C - A, B - A) / np.dot(B - A, B - A), 0, 1)
            P = A + s * (B - A)
            rho = np.linalg.norm(C - P) - ob["radius"]
            if best is None or rho < best[0]:
                best = (rho, P, (C - P) / np.linalg.norm(C - P) * rho)
        rho, P, x_r = best
        if rho >= c:
            continue
        n_assert += 1
        f = eta * (1 / rho - 1 / c) / rho**2 * (-x_r / rho)
        local = np.linalg.inv(T[k]) @ np.append(P, 1.0)

        def point(qq, k=k, local=local):
            return (fk(links, qq)[k] @ local)[:3]
        J = jacobian_fd(point, list(q))
        tau += J.T @ f
    return tau, n_assert


def test_rmoa_force_formula():
    x_r = (0.3, -0.4, 0.0)
    f = behaviours.rmoa_force(x_r, 0.5, 100.0, 0.75)
    g = 100.0 * (1 / 0.5 - 1 / 0.75) / 0.25
    assert np.allclose(f, -g * np.array(x_r) / 0.5)
    assert behaviours.rmoa_force(x_r, 0.75, 100.0, 0.75) is None
    # near contact the 1/rho^3 law is capped at f_max, direction unchanged
    capped = behaviours.rmoa_force(x_r, 0.5, 100.0, 0.75, f_max=50.0)
    assert np.isclose(np.linalg.norm(capped), 50.0) and np.allclose(np.cross(capped, f), 0.0)


@pytest.mark.parametrize("q0, obstacles", [
    ([0.4, -0.6, 0.9, -0.3], [{"name": "a", "radius": 0.125, "position": [1.6, 0.7, 0.0]}]),
    ([0.2, 0.5, -1.2, 0.8], [{"name": "a", "radius": 0.125, "position": [1.2, 0.9, 0.0]},
                             {"name": "b", "radius": 0.2, "position": [0.5, -0.5, 0.0]}]),
])
def test_rmoa_assertions_summed_match_jacobian_transpose(q0, obstacles):
    sc = from_dict(_arm_dict(q0, obstacles))
    loop = _one_cycle(sc)
    tau, n_assert = _reference_avoidance(q0, obstacles, 100.0, 0.75)
    assert n_assert >= 2, "the case must exercise several simultaneous assertions"
    got = loop.gp.components[:, 1]
    assert np.allclose(got, tau, rtol=2e-4, atol=1e-3 * max(1.0, np.abs(tau).max())), (got, tau)
    assert len(loop.gp.asserts) == n_assert


def test_retraction_setpoints_alternate_and_centering_defaults_to_mid_range():
    sc = load(THESIS / "retraction.toml")
    for cfg in sc.agent_configs:
        assert cfg["behaviours"]["retraction"]["kq"] == 100.0
    from firmware.agent import LinkAgent
    from firmware.hal.sim import SimHAL
    qc = [LinkAgent(cfg, SimHAL(lambda b, n: None)).local_pd[0] for cfg in sc.agent_configs]
    assert qc == [1.570, -1.570] * 5
    sc = load(THESIS / "centering-100.toml")
    agents = [LinkAgent(cfg, SimHAL(lambda b, n: None)) for cfg in sc.agent_configs]
    assert all(a.local_pd == (0.0, 100.0, 20.0) for a in agents)
    assert sc.links[0]["q_low"] == -1.57 and sc.links[0]["q_high"] == 1.57


def test_variable_compliance_profiles_follow_table_7_16():
    inc = load(THESIS / "compliance-increasing.toml")
    dec = load(THESIS / "compliance-decreasing.toml")
    kq_inc = [c["behaviours"]["centering"]["kq"] for c in inc.agent_configs]
    kq_dec = [c["behaviours"]["centering"]["kq"] for c in dec.agent_configs]
    assert kq_inc == [100.0 - 10 * i for i in range(10)] and kq_dec == kq_inc[::-1]
    for c in inc.agent_configs:
        cen = c["behaviours"]["centering"]
        assert cen["kw"] == pytest.approx(2 * math.sqrt(cen["kq"]), rel=1e-3)


def test_centering_and_retraction_together_is_an_error(tmp_path):
    text = (THESIS / "retraction.toml").read_text() + "\n[behaviours.centering]\nkq = 10.0\n"
    p = tmp_path / "both.toml"
    p.write_text(text)
    with pytest.raises(ScenarioError, match="retraction"):
        load(p)


def test_equal_cylinder_inertias_for_5_15_20_links():
    for n in (5, 15, 20):
        sc = load(THESIS / ("dof%d.toml" % n))
        L = sc.links[0]
        a, m = 7.5 / n, 100.0 / n
        assert sc.n == n and L["a"] == pytest.approx(a) and L["mass"] == pytest.approx(m)
        assert L["inertia"][0] == pytest.approx(m * 0.01 / 2, rel=1e-5)
        assert L["inertia"][1] == pytest.approx(m * (0.03 + a * a) / 12, rel=1e-5)
        assert sum(x["a"] for x in sc.links) == pytest.approx(7.5)


def test_spiral_shape_radius_and_angle_on_parabolic_profiles():
    sc = load(THESIS / "spiral.toml")
    tr = Trajectory(sc.knots, [7.5, 0.0, 0.0], [1, 0, 0, 0], True)
    c = np.array([4.5, 0.0, 0.0])
    assert np.allclose(tr.sample(5.0).p, [4.5, 2.0, 0.0])
    assert np.allclose(tr.sample(40.0).p, [4.5, -0.5, 0.0], atol=1e-9)
    ts = np.linspace(5.0, 40.0, 701)
    P = np.array([tr.sample(t).p for t in ts])
    r = np.linalg.norm(P - c, axis=1)
    ang = np.unwrap(np.arctan2(P[:, 1], P[:, 0] - 4.5))
    tau = (ts - 5.0) / 35.0
    s = 3 * tau**2 - 2 * tau**3
    assert np.allclose(r, 2.0 - 1.5 * s, atol=1e-9)
    assert np.allclose(ang - ang[0], 3 * math.pi * s, atol=1e-9)
    # velocities and accelerations agree with finite differences of the path
    for t in (8.0, 22.5, 37.0):
        h = 1e-5
        v_fd = (tr.sample(t + h).p - tr.sample(t - h).p) / (2 * h)
        a_fd = (tr.sample(t + h).p - 2 * tr.sample(t).p + tr.sample(t - h).p) / h**2
        assert np.allclose(tr.sample(t).v, v_fd, atol=1e-6)
        assert np.allclose(tr.sample(t).a, a_fd, atol=1e-3)
    # peak angular rate at the middle of the spiral segment (22.5 s)
    w = np.gradient(ang, ts)
    assert abs(ts[np.argmax(w)] - 22.5) < 0.1


def test_spiral_sweep_must_end_at_the_knot(tmp_path):
    text = (THESIS / "spiral.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("sweep = 9.42477796076938", "sweep = 2.0"))
    with pytest.raises(ScenarioError) as e:
        load(bad)
    assert "sweep" in str(e.value) and str(bad) in str(e.value)


def test_step_trajectory_jumps_at_one_second():
    sc = load(THESIS / "step.toml")
    tr = Trajectory(sc.knots, [7.5, 0.0, 0.0], [1, 0, 0, 0], True)
    assert np.allclose(tr.sample(0.99).p, [7.5, 0, 0]) and tr.sample(0.99).angle == 0.0
    assert np.allclose(tr.sample(1.0).p, [6.5, 1.0, 0]) and tr.sample(1.0).angle == 1.57
    assert np.allclose(tr.sample(30.0).p, [6.5, 1.0, 0]) and not np.any(tr.sample(1.0).v)
    assert sc.duration == 40.0


def test_obstacle_moves_on_its_knot_points():
    from host.runners.base import obstacle_paths
    d = _arm_dict([0.0, 0.0], [{"name": "m", "radius": 0.1, "position": [3.0, 1.0, 0.0],
                                "knot": [{"interval": [0.0, 2.0], "position": [3.0, -1.0, 0.0]}]}])
    sc = from_dict(d)
    path = obstacle_paths(sc)[0]
    assert np.allclose(path.sample(0.0).p, [3, 1, 0]) and np.allclose(path.sample(1.0).p, [3, 0, 0])
    assert np.allclose(path.sample(2.0).p, [3, -1, 0])


def test_physical_brake_holds_a_joint_against_torque():
    from sim_host.plant import Plant
    sc = load(THESIS / "failsafe-link9.toml")
    plant = Plant(sc.arm, [])
    plant.set_brake(8, True)
    plant.set_torques([0.0] * 8 + [100.0, 20.0])
    plant.step(500)
    q, _ = plant.joint_state()
    assert abs(q[8]) < 1e-3 and abs(q[9]) > 1e-2
    plant.set_brake(8, False)
    plant.step(200)
    assert abs(plant.joint_state()[0][8] - q[8]) > 1e-4
