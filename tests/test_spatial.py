"""Spatial arms: the firmware's kinematic bus, proxy rows and summed weight assertions
against MuJoCo's own frames, Jacobians and bias forces (docs/design.md §2, 3, 5)."""
from pathlib import Path

import mujoco
import numpy as np
import pytest

from firmware import global_proxy
from firmware import kinematic_bus as kb
from host.scenario.loader import load
from sim_host.plant import Plant

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def spatial():
    sc = load(ROOT / "scenarios" / "spatial7-gravity.toml")
    return sc, Plant(sc.arm, timestep=sc.timestep)


def firmware_chain(sc, q, qd):
    """K_0..K_N exactly as the agents compute them (double precision, no wire)."""
    links = [(kb.joint_type(c["dh"]["type"]), c["dh"]["theta"], c["dh"]["d"], c["dh"]["a"], c["dh"]["alpha"])
             for c in sc.agent_configs]
    out, z = [kb.BASE_PACKET], []
    quat, p, v, w = kb.BASE_PACKET
    for i, L in enumerate(links):
        quat, p, v, w, zi = kb.step(*L, q[i], qd[i], quat, p, v, w)
        out.append((quat, p, v, w))
        z.append(zi)
    return links, out, z


def quat_to_R(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def random_states(sc, count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        q = rng.uniform(-2.5, 2.5, sc.n)
        for i, L in enumerate(sc.links):
            if L["type"] == "prismatic":
                q[i] = rng.uniform(L["q_low"], L["q_high"])
        yield q, rng.uniform(-1.5, 1.5, sc.n)


def set_state(plant, q, qd):
    d = plant.data
    d.qpos[:] = q
    d.qvel[:] = qd
    mujoco.mj_forward(plant.model, d)


def test_kinematic_bus_matches_mujoco_site_frames_and_velocities(spatial):
    sc, plant = spatial
    worst = 0.0
    for q, qd in random_states(sc, 50, 1):
        set_state(plant, q, qd)
        R, p = plant.frames()
        _, K, _ = firmware_chain(sc, q, qd)
        for i in range(sc.n + 1):
            worst = max(worst, np.abs(np.array(K[i][1]) - p[i]).max(), np.abs(quat_to_R(K[i][0]) - R[i]).max())
        v, w = plant.ee_velocity()
        worst = max(worst, np.abs(np.array(K[-1][2]) - v).max(), np.abs(np.array(K[-1][3]) - w).max())
    assert worst < 1e-9, worst


def test_proxy_rows_match_mj_jac(spatial):
    """u_i = [(z x (p_app - p_{i-1}))^T, z^T] f equals (J^T f)_i with J = mj_jac at p_app,
    for p_app at the end effector (mj_jacSite) and on an inner link (mj_jac)."""
    sc, plant = spatial
    m, d = plant.model, plant.data
    rng = np.random.default_rng(2)
    worst = 0.0
    ee_site = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "frame_%d" % sc.n)
    for q, qd in random_states(sc, 50, 3):
        set_state(plant, q, qd)
        links, K, z = firmware_chain(sc, q, qd)
        f = rng.normal(size=6) * 10
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mujoco.mj_jacSite(m, d, jp, jr, ee_site)
        ref = np.vstack([jp, jr]).T @ f
        u = [global_proxy.share(links[i][0], z[i], K[i][1], K[-1][1], f) for i in range(sc.n)]
        worst = max(worst, np.abs(np.array(u) - ref).max())
        # a point carried by link k (body k+1 in MuJoCo numbering: world is body 0)
        k = int(rng.integers(1, sc.n + 1))
        point = np.array(K[k][1]) + rng.normal(size=3) * 0.1
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "link%d" % k)
        mujoco.mj_jac(m, d, jp, jr, point, body)
        ref = np.vstack([jp, jr]).T @ f
        u = [global_proxy.share(links[i][0], z[i], K[i][1], point, f) if i < k else 0.0 for i in range(sc.n)]
        worst = max(worst, np.abs(np.array(u) - ref).max())
    assert worst < 1e-9, worst


def test_summed_weight_assertions_equal_mujoco_gravity_torque(spatial):
    """Each agent asserts (p_centroid, [-m g; 0]); agent j sums the proxy over assertions
    from links i >= j (7.250). The sum is MuJoCo's bias force at zero velocity."""
    sc, plant = spatial
    g = np.array(sc.gravity)
    worst = 0.0
    for q, _ in random_states(sc, 50, 4):
        links, K, z = firmware_chain(sc, q, np.zeros(sc.n))
        couplets = []
        for i, cfg in enumerate(sc.agent_configs):
            R = quat_to_R(K[i + 1][0])
            couplets.append((i, np.array(K[i + 1][1]) + R @ cfg["centroid"], -cfg["mass"] * g))
        pay = sc.arm["payload"]   # the payload rides on the last link: one more couplet of its weight
        R = quat_to_R(K[-1][0])
        couplets.append((sc.n - 1, np.array(K[-1][1]) + R @ pay["centroid"], -pay["mass"] * g))
        u = np.zeros(sc.n)
        for origin, pc, force in couplets:
            for j in range(origin + 1):
                u[j] += global_proxy.share(links[j][0], z[j], K[j][1], pc, np.concatenate([force, np.zeros(3)]))
        worst = max(worst, np.abs(u - plant.gravity_torque(q)).max())
    assert worst < 1e-9, worst


def _run(tmp_path, text, name):
    from host.run import run_scenario
    p = tmp_path / (name + ".toml")
    p.write_text(text)
    summary, _ = run_scenario(load(p), tmp_path / name, quiet=True, make_plots=False)
    return summary


@pytest.mark.slow
def test_gravity_scenario_tracks_and_sags_without_compensation(tmp_path):
    """Unopposed along the redundant directions, gravity lowers the arm (its links' mean
    height falls) even while the tool point tracks; the weight assertions hold it up."""
    from host.report.run_dir import load_run
    base = 'extends = "%s"\n' % (ROOT / "scenarios" / "spatial7-gravity.toml")
    on = _run(tmp_path, base + 'name = "on"\n', "on")
    assert on["status"] == "ok" and on["e_rms_m"] < 3e-3 and on["phi_rms_rad"] < 1e-2, on
    off = _run(tmp_path, base + 'name = "off"\n[behaviours.gravity]\nenabled = false\n', "off")
    height = {}
    for name in ("on", "off"):
        z = load_run(tmp_path / name)[1]["frames"][:, :, 2].mean(axis=1)
        height[name] = z[-1] - z[0]
    assert abs(height["on"]) < 0.01 and height["off"] < -0.1, (height, off["status"], off["reason"])


@pytest.mark.slow
def test_spatial_scenario_without_gravity_tracks(tmp_path):
    s = _run(tmp_path, 'extends = "%s"\nname = "s7"\n' % (ROOT / "scenarios" / "spatial7.toml"), "s7")
    assert s["status"] == "ok" and s["e_rms_m"] < 3e-3 and s["phi_rms_rad"] < 1e-2, s


def test_extends_errors_point_at_the_right_file(tmp_path):
    from host.scenario.loader import ScenarioError
    p = tmp_path / "child.toml"
    p.write_text('extends = "%s"\nname = "c"\n[robot]\ngravity = [0.0, 0.0]\n' % (ROOT / "scenarios" / "spatial7.toml"))
    with pytest.raises(ScenarioError) as ei:
        load(p)
    assert ei.value.path == str(p) and ei.value.line == 4 and ei.value.field == "robot.gravity"
    p.write_text('extends = "missing.toml"\nname = "c"\n')
    with pytest.raises(ScenarioError, match="extends: no such file"):
        load(p)


def test_orientation_interpolates_about_the_fixed_error_axis():
    from host import trajectory as tr
    q0 = tr.quat_from_rpy(0.3, -0.2, 1.0)
    axis = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    q1 = tr.qmul(tr.qexp(0.8 * axis), q0)
    traj = tr.Trajectory([{"interval": [1.0, 3.0], "position": [0, 0, 0], "rotation": list(q1), "type": "cubic"}],
                         [0, 0, 0], q0, planar=False)
    for t in (1.3, 2.0, 2.7):
        s = traj.sample(t)
        rel = tr.qlog(tr.qmul(s.quat, tr.qconj(q0)))
        tau = (t - 1.0) / 2.0
        assert np.allclose(rel, 0.8 * axis * (3 * tau**2 - 2 * tau**3), atol=1e-12)
        assert np.allclose(s.w, 0.8 * axis * 6 * tau * (1 - tau) / 2.0, atol=1e-12)
    assert np.allclose(traj.sample(5.0).quat, q1) or np.allclose(traj.sample(5.0).quat, -q1)


def test_gravity_compensation_defaults_on_for_thesis_format_with_gravity(tmp_path):
    import shutil
    d = tmp_path / "g.scenario"
    shutil.copytree(ROOT / "scenarios" / "thesis-format" / "reference.scenario", d)
    rbt = d / "theRobot.rbt"
    text = rbt.read_text()
    assert "gravity = <+0.000e+00 +0.000e+00 +0.000e+00>" in text
    rbt.write_text(text.replace("gravity = <+0.000e+00 +0.000e+00 +0.000e+00>", "gravity = <+0.000e+00 +0.000e+00 -9.810e+00>"))
    sc = load(d)
    assert all(c["behaviours"]["gravity"]["g"] == [0.0, 0.0, -9.81] for c in sc.agent_configs)
    assert all("gravity" not in c["behaviours"] for c in load(ROOT / "scenarios" / "reference.toml").agent_configs)
