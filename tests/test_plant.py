"""Plant tests against independent references (numpy DH products, closed-form 2R dynamics,
analytic solutions, hand-computed geometry) -- never the plant against itself."""

import math

import mujoco
import numpy as np
import pytest

from sim_host import DEFAULT_RADIUS, Plant, build_mjcf, reference_arm


# ----------------------------------------------------------------- helpers
def link(a=0.75, typ="revolute", theta=0.0, d=0.0, alpha=0.0, mass=10.0,
         inertia=(0.05, 0.4938, 0.4938), centroid=(-0.375, 0.0, 0.0), damping=0.0,
         u_sat=1e6, radius=0.1, limited=False, q_low=-3.14, q_high=3.14, q0=0.0):
    return {"type": typ, "theta": theta, "d": d, "a": a, "alpha": alpha, "mass": mass,
            "inertia": list(inertia), "centroid": list(centroid), "q_low": q_low,
            "q_high": q_high, "limited": limited, "u_sat": u_sat, "damping": damping,
            "radius": radius, "q0": q0}


def make_arm(links, payload=None, gravity=(0.0, 0.0, 0.0), base=None, link_collisions=False):
    return {"links": links, "payload": payload, "gravity": list(gravity),
            "base": base or {"pos": [0.0, 0.0, 0.0], "quat": [1.0, 0.0, 0.0, 0.0]},
            "link_collisions": link_collisions}


def Rz(t):
    c, s = math.cos(t), math.sin(t)
    T = np.eye(4)
    T[:2, :2] = [[c, -s], [s, c]]
    return T


def Rx(t):
    c, s = math.cos(t), math.sin(t)
    T = np.eye(4)
    T[1:3, 1:3] = [[c, -s], [s, c]]
    return T


def Tz(d):
    T = np.eye(4)
    T[2, 3] = d
    return T


def Tx(a):
    T = np.eye(4)
    T[0, 3] = a
    return T


def quat_to_T(q, p):
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    T = np.eye(4)
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                 [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                 [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]
    T[:3, 3] = p
    return T


def dh_frames(arm, q):
    """Independent forward kinematics: list of 4x4 world transforms F_0..F_N."""
    b = arm["base"]
    F = [quat_to_T(b["quat"], b["pos"])]
    for L, qi in zip(arm["links"], q):
        if L["type"] == "revolute":
            A = Rz(L["theta"] + qi) @ Tz(L["d"]) @ Tx(L["a"]) @ Rx(L["alpha"])
        else:
            A = Rz(L["theta"]) @ Tz(L["d"] + qi) @ Tx(L["a"]) @ Rx(L["alpha"])
        F.append(F[-1] @ A)
    return F


def random_spatial_arm(rng, n=6, prismatic_index=3):
    links = []
    for i in range(n):
        typ = "prismatic" if i == prismatic_index else "revolute"
        links.append(link(a=rng.uniform(0.1, 0.8), typ=typ, theta=rng.uniform(-np.pi, np.pi),
                          d=rng.uniform(-0.3, 0.3), alpha=rng.uniform(-np.pi, np.pi),
                          mass=rng.uniform(1, 5), inertia=rng.uniform(0.11, 0.2, 3),
                          centroid=rng.uniform(-0.2, 0.2, 3)))
    base_q = rng.normal(size=4)
    base = {"pos": list(rng.uniform(-1, 1, 3)), "quat": list(base_q / np.linalg.norm(base_q))}
    return make_arm(links, payload={"mass": 2.0, "inertia": [0.1, 0.2, 0.3],
                                    "centroid": [0.05, 0.0, 0.1]},
                    gravity=(0.0, 0.0, -9.81), base=base)


# ------------------------------------------------------------- kinematics
def test_dh_frames_match_independent_product():
    rng = np.random.default_rng(1)
    for trial in range(5):
        arm = random_spatial_arm(rng, n=6, prismatic_index=trial % 6)
        plant = Plant(arm)
        for _ in range(4):
            q = rng.uniform(-np.pi, np.pi, 6)
            plant.reset(q0=q)
            R, p = plant.frames()
            F = dh_frames(arm, q)
            assert R.shape == (7, 3, 3) and p.shape == (7, 3)
            for i in range(7):
                np.testing.assert_allclose(R[i], F[i][:3, :3], atol=1e-9)
                np.testing.assert_allclose(p[i], F[i][:3, 3], atol=1e-9)


def test_frames_after_stepping_are_current():
    """After step() the frames must describe the new joint state (not an RK4 stage)."""
    rng = np.random.default_rng(2)
    arm = random_spatial_arm(rng)
    plant = Plant(arm)
    plant.reset(q0=rng.uniform(-1, 1, 6), qd0=rng.uniform(-1, 1, 6))
    plant.set_torques(rng.uniform(-5, 5, 6))
    plant.step(7)
    q, _ = plant.joint_state()
    R, p = plant.frames()
    F = dh_frames(arm, q)
    for i in range(7):
        np.testing.assert_allclose(R[i], F[i][:3, :3], atol=1e-12)
        np.testing.assert_allclose(p[i], F[i][:3, 3], atol=1e-12)


def test_ee_velocity_matches_finite_difference_and_axes():
    rng = np.random.default_rng(3)
    arm = random_spatial_arm(rng)
    plant = Plant(arm)
    q = rng.uniform(-np.pi, np.pi, 6)
    qd = rng.uniform(-1, 1, 6)
    plant.reset(q0=q, qd0=qd)
    v, w = plant.ee_velocity()
    eps = 1e-6
    Fp, Fm = dh_frames(arm, q + eps * qd), dh_frames(arm, q - eps * qd)
    v_fd = (Fp[-1][:3, 3] - Fm[-1][:3, 3]) / (2 * eps)
    np.testing.assert_allclose(v, v_fd, atol=1e-7)
    # angular velocity: sum of z_{i-1} qd_i over revolute joints
    F = dh_frames(arm, q)
    w_ref = sum(F[i][:3, 2] * qd[i] for i in range(6) if arm["links"][i]["type"] == "revolute")
    np.testing.assert_allclose(w, w_ref, atol=1e-12)


# ---------------------------------------------------------------- dynamics
def closed_form_2r(a1, m1, c1, I1, a2, m2, c2, I2, g, q, qd):
    """Planar 2R arm (theta = d = alpha = 0), centroids c_i = (cx, cy) in link frame i
    (F_i, at the distal joint), Izz I_i about the centroid, gravity g = (gx, gy).
    Returns M (2x2) and bias = C(q, qd) qd + grav(q)."""
    r1 = np.array([a1 + c1[0], c1[1]])        # centroid 1 from joint 1, in rotated frame
    r2 = np.array([a2 + c2[0], c2[1]])        # centroid 2 from joint 2
    q1, q2 = q
    h = r2[0] * math.cos(q2) - r2[1] * math.sin(q2)
    hp = -r2[0] * math.sin(q2) - r2[1] * math.cos(q2)
    M11 = I1 + I2 + m1 * r1 @ r1 + m2 * (a1 * a1 + r2 @ r2 + 2 * a1 * h)
    M12 = I2 + m2 * (r2 @ r2 + a1 * h)
    M22 = I2 + m2 * r2 @ r2
    M = np.array([[M11, M12], [M12, M22]])
    qd1, qd2 = qd
    cor = np.array([m2 * a1 * hp * (2 * qd1 * qd2 + qd2 * qd2), -m2 * a1 * hp * qd1 * qd1])

    def rot(t):
        return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    g = np.asarray(g, float)
    e1 = np.array([math.cos(q1), math.sin(q1)])
    dpc1_dq1 = rot(q1) @ J @ r1
    dpc2_dq1 = a1 * (J @ e1) + rot(q1 + q2) @ J @ r2
    dpc2_dq2 = rot(q1 + q2) @ J @ r2
    grav = np.array([-m1 * g @ dpc1_dq1 - m2 * g @ dpc2_dq1, -m2 * g @ dpc2_dq2])
    return M, cor + grav


@pytest.mark.parametrize("centroids", [((-0.375, 0.0), (-0.25, 0.0)),
                                       ((-0.3, 0.07), (-0.1, -0.05))])
def test_2r_closed_form_dynamics(centroids):
    a1, m1, I1 = 0.75, 10.0, 0.4938
    a2, m2, I2 = 0.5, 4.0, 0.12
    (c1, c2) = centroids
    g = (1.5, -9.81)
    arm = make_arm([link(a=a1, mass=m1, inertia=(0.3, 0.3, I1), centroid=(c1[0], c1[1], 0.0)),
                    link(a=a2, mass=m2, inertia=(0.07, 0.08, I2), centroid=(c2[0], c2[1], 0.0))],
                   gravity=(g[0], g[1], 0.0))
    plant = Plant(arm)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = rng.uniform(-np.pi, np.pi, 2)
        qd = rng.uniform(-3, 3, 2)
        M_ref, b_ref = closed_form_2r(a1, m1, c1, I1, a2, m2, c2, I2, g, q, qd)
        np.testing.assert_allclose(plant.mass_matrix(q), M_ref, atol=1e-9, rtol=0)
        np.testing.assert_allclose(plant.bias(q, qd), b_ref, atol=1e-9, rtol=0)
        _, g_ref = closed_form_2r(a1, m1, c1, I1, a2, m2, c2, I2, g, q, (0.0, 0.0))
        np.testing.assert_allclose(plant.gravity_torque(q), g_ref, atol=1e-9, rtol=0)


def test_2r_payload_is_a_mass_at_the_end_effector():
    """A payload point mass at F_N equals moving link 2's centroid computation by hand."""
    a1, m1, I1, a2, mp = 0.75, 10.0, 0.4938, 0.75, 3.0
    arm = make_arm([link(a=a1, mass=m1, inertia=(0.3, 0.3, I1)),
                    link(a=a2, mass=1.0, inertia=(0.015, 0.015, 0.02),
                         centroid=(-0.375, 0, 0))],
                   payload={"mass": mp, "inertia": [0.0, 0.0, 0.0], "centroid": [0, 0, 0]})
    plant = Plant(arm)
    q = np.array([0.3, -1.1])
    # link 2 + payload combined: mass 4, centroid (1*(-0.375) + 3*0)/4, Izz by parallel axes
    m2 = 4.0
    cx = (1.0 * -0.375 + mp * 0.0) / m2
    I2 = 0.02 + 1.0 * (-0.375 - cx) ** 2 + mp * (0.0 - cx) ** 2
    M_ref, _ = closed_form_2r(a1, m1, (-0.375, 0), I1, a2, m2, (cx, 0.0), I2, (0, 0), q, (0, 0))
    np.testing.assert_allclose(plant.mass_matrix(q), M_ref, atol=1e-9, rtol=0)


def _reference_arm_undamped(gravity):
    arm = reference_arm(10, damping=0.0, gravity=gravity)
    return arm


@pytest.mark.parametrize("gravity", [(0.0, 0.0, 0.0), (0.0, -9.81, 0.0), (9.81, 0.0, 0.0)])
def test_energy_conservation_reference_arm(gravity):
    """Zero torque, zero damping, 2 s of the 10-link reference arm from a nonzero velocity.
    Drift is measured relative to the largest kinetic energy of the run (the energy being
    exchanged): with in-plane gravity (0,-9.81,0) the 7.5 m arm falls and whips (joint
    speeds reach ~20 rad/s); (9.81,0,0) swings about the hanging pose."""
    plant = Plant(_reference_arm_undamped(gravity))
    rng = np.random.default_rng(5)
    q0 = rng.uniform(-0.5, 0.5, 10)
    qd0 = rng.uniform(-0.5, 0.5, 10)
    plant.reset(q0=q0, qd0=qd0)
    plant.set_torques(np.zeros(10))
    E0 = plant.energy()
    KE0 = 0.5 * qd0 @ plant.mass_matrix() @ qd0
    assert KE0 > 1.0
    drift, ke_max = 0.0, KE0
    for _ in range(100):
        plant.step(20)
        drift = max(drift, abs(plant.energy() - E0))
        _, qd = plant.joint_state()
        ke_max = max(ke_max, 0.5 * qd @ plant.mass_matrix() @ qd)
    assert plant.t == pytest.approx(2.0)
    assert drift / ke_max < 1e-6, drift / ke_max
    if gravity == (0.0, 0.0, 0.0):
        assert abs(E0 - KE0) < 1e-9 * KE0
        assert drift / KE0 < 1e-9


def test_energy_matches_independent_kinetic_plus_potential():
    """Energy() = 1/2 qd'Mqd (hand-built M) - sum m g.c (hand-built centroids)."""
    a1, m1, I1, a2, m2, I2 = 0.75, 10.0, 0.4938, 0.5, 4.0, 0.12
    c1, c2 = (-0.375, 0.0), (-0.25, 0.0)
    g = (0.0, -9.81)
    arm = make_arm([link(a=a1, mass=m1, inertia=(0.3, 0.3, I1)),
                    link(a=a2, mass=m2, inertia=(0.07, 0.08, I2), centroid=(-0.25, 0, 0))],
                   gravity=(0.0, -9.81, 0.0))
    plant = Plant(arm)
    q, qd = np.array([0.4, 0.9]), np.array([0.7, -1.3])
    plant.reset(q0=q, qd0=qd)
    M, _ = closed_form_2r(a1, m1, c1, I1, a2, m2, c2, I2, g, q, qd)
    pc1 = (a1 + c1[0]) * np.array([math.cos(q[0]), math.sin(q[0])])
    pc2 = a1 * np.array([math.cos(q[0]), math.sin(q[0])]) + \
        (a2 + c2[0]) * np.array([math.cos(q.sum()), math.sin(q.sum())])
    E_ref = 0.5 * qd @ M @ qd - m1 * np.dot(g, pc1) - m2 * np.dot(g, pc2)
    assert plant.energy() == pytest.approx(E_ref, abs=1e-9)


def test_damping_decay_single_link():
    b = 1.0
    arm = make_arm([link(damping=b)])
    plant = Plant(arm)
    I_axis = 0.4938 + 10.0 * 0.375 ** 2
    qd0 = 2.0
    plant.reset(qd0=[qd0])
    plant.set_torques([0.0])
    for k in range(1, 5):
        plant.step(500)
        t = 0.5 * k
        q, qd = plant.joint_state()
        assert qd[0] == pytest.approx(qd0 * math.exp(-b * t / I_axis), rel=1e-9)
        assert q[0] == pytest.approx(qd0 * I_axis / b * (1 - math.exp(-b * t / I_axis)), rel=1e-9)


# ---------------------------------------------------------------- actuation
def test_saturation_clipping_and_hold():
    u_sat = 5.0
    arm = make_arm([link(u_sat=u_sat), link(u_sat=2.0)])
    plant = Plant(arm)
    applied = plant.set_torques([100.0, -7.0])
    np.testing.assert_allclose(applied, [u_sat, -2.0])
    np.testing.assert_allclose(plant.torques(), [u_sat, -2.0])
    np.testing.assert_allclose(plant.model.actuator_ctrlrange, [[-5, 5], [-2, 2]])
    with pytest.raises(ValueError):
        plant.set_torques([1.0])


def test_torque_held_between_steps_single_link():
    """Constant torque on an undamped single link: q = u t^2 / (2 I), qd = u t / I,
    whether stepped one step at a time or in a batch."""
    arm = make_arm([link(u_sat=5.0)])
    I_axis = 0.4938 + 10.0 * 0.375 ** 2
    for batch in (1, 250):
        plant = Plant(arm)
        plant.set_torques([50.0])            # clipped to 5
        for _ in range(1000 // batch):
            plant.step(batch)
        q, qd = plant.joint_state()
        assert plant.t == pytest.approx(1.0)
        assert qd[0] == pytest.approx(5.0 / I_axis, rel=1e-10)
        assert q[0] == pytest.approx(5.0 / (2 * I_axis), rel=1e-10)


def test_prismatic_force_held():
    """Prismatic joint moving along gravity-free z: x = F t^2/(2 m_total)."""
    arm = make_arm([link(typ="prismatic", a=0.3, mass=2.0, inertia=(0.1, 0.1, 0.1)),
                    link(a=0.5, mass=3.0, inertia=(0.1, 0.1, 0.1))])
    plant = Plant(arm)
    plant.set_torques([10.0, 0.0])
    plant.step(1000)
    q, qd = plant.joint_state()
    assert qd[0] == pytest.approx(10.0 / 5.0, rel=1e-10)
    assert q[0] == pytest.approx(10.0 / 10.0, rel=1e-10)


# ----------------------------------------------------------- range sensors
def straight_arm(n=3):
    return make_arm([link() for _ in range(n)])


def test_range_readings_straight_arm():
    plant = Plant(straight_arm(), [{"name": "ball", "radius": 0.125, "pos": [1.0, -0.75, 0.0]}])
    r = plant.range_readings()
    assert len(r) == 3
    # link 1: segment (0,0)-(0.75,0): nearest point (0.75,0), to center (0.25,-0.75)
    dc = math.hypot(0.25, 0.75)
    p, x, rho = r[0]
    np.testing.assert_allclose(p, [0.0, 0.0, 0.0], atol=1e-12)          # at F_1 origin
    np.testing.assert_allclose(x, np.array([0.25, -0.75, 0.0]) * (1 - 0.125 / dc), atol=1e-12)
    assert rho == pytest.approx(dc - 0.125, abs=1e-12)
    # link 2: segment (0.75,0)-(1.5,0): nearest point (1,0); F_2 at (1.5, 0)
    p, x, rho = r[1]
    np.testing.assert_allclose(p, [-0.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(x, [0.0, -0.625, 0.0], atol=1e-12)
    assert rho == pytest.approx(0.625, abs=1e-12)
    # link 3: (1.5,0)-(2.25,0): nearest point (1.5,0) = 0.75 behind F_3
    p, x, rho = r[2]
    dc3 = math.hypot(0.5, 0.75)
    np.testing.assert_allclose(p, [-0.75, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(x, np.array([-0.5, -0.75, 0.0]) * (1 - 0.125 / dc3), atol=1e-12)
    assert rho == pytest.approx(dc3 - 0.125, abs=1e-12)
    # max_range filters
    r = plant.range_readings(max_range=0.65)
    assert r[0] is None and r[1] is not None and r[2] is None
    assert plant.contacts() == [] and plant.collisions == 0


def test_range_readings_in_link_frame_rotated_arm():
    """Arm turned to +y (q1 = pi/2): readings are expressed in the rotated link frame."""
    plant = Plant(straight_arm(), [{"name": "ball", "radius": 0.125, "pos": [0.75, 1.0, 0.0]}])
    plant.reset(q0=[math.pi / 2, 0.0, 0.0])
    p, x, rho = plant.range_readings()[1]
    # world: p_psh = (0, 1.0), F_2 at (0, 1.5); x_r = (0.625, 0)
    # F_2 axes: x = +y_world, y = -x_world
    np.testing.assert_allclose(p, [-0.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(x, [0.0, -0.625, 0.0], atol=1e-12)
    assert rho == pytest.approx(0.625, abs=1e-12)


def test_range_reading_nearest_of_several_obstacles_and_penetration():
    obs = [{"name": "far", "radius": 0.1, "pos": [1.1, 2.0, 0.0]},
           {"name": "near", "radius": 0.2, "pos": [1.1, 0.5, 0.0]},
           {"name": "inside", "radius": 0.2, "pos": [2.0, 0.05, 0.0]}]
    plant = Plant(straight_arm(), obs)
    r = plant.range_readings()
    p, x, rho = r[1]                                     # link 2 sees "near"
    np.testing.assert_allclose(p, [1.1 - 1.5, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(x, [0.0, 0.3, 0.0], atol=1e-12)
    assert rho == pytest.approx(0.3, abs=1e-12)
    p, x, rho = r[2]                                     # link 3 axis passes inside "inside"
    assert 0 < rho <= 1e-5
    assert x[1] > 0 and abs(np.linalg.norm(x) - rho) < 1e-15   # points at the centre
    np.testing.assert_allclose(p, [2.0 - 2.25, 0.0, 0.0], atol=1e-12)
    assert plant.contacts() == [(3, "inside")]
    assert plant.collisions == 1


# ---------------------------------------------------------------- contacts
def test_contact_event_counting_moving_obstacle():
    plant = Plant(straight_arm(), [{"name": "ball", "radius": 0.125, "pos": [1.0, -0.75, 0.0]}])
    assert plant.contacts() == [] and plant.collisions == 0
    plant.set_obstacle_position(0, [1.1, 0.2, 0.0])      # 0.2 < 0.125 + 0.1 -> contact
    plant.step(10)
    assert plant.contacts() == [(2, "ball")]
    plant.step(10)
    assert plant.collisions == 1
    plant.set_obstacle_position("ball", [1.1, 0.3, 0.0])  # 0.3 > 0.225 -> clear
    plant.step(5)
    assert plant.contacts() == [] and plant.collisions == 1
    plant.set_obstacle_position(0, [1.1, 0.1, 0.0])
    plant.step(1)
    assert plant.collisions == 2
    np.testing.assert_allclose(plant.data.mocap_pos[0], [1.1, 0.1, 0.0])
    plant.reset()
    assert plant.collisions == 0 and plant.contacts() == []


@pytest.mark.slow
@pytest.mark.parametrize("torques", [[30.0, -20.0, 10.0, 5, 5, 5, 5, 5, -5, 1.0],
                                     [3.0, -2.0, 1.0, .5, .5, .5, .5, .5, -.5, .1]])
def test_adaptive_contact_check_equals_every_step(torques):
    """The arm sweeps through obstacles: the adaptive check counts the same events and
    ends in the same contact set as the exact test after every step (and that test agrees
    with a hand-written per-step reference)."""
    obs = [{"name": "ball", "radius": 0.125, "pos": [1.0, -0.75, 0.0]},
           {"name": "big", "radius": 0.3, "pos": [3.0, 1.5, 0.0]},
           {"name": "off", "radius": 0.3, "pos": [3.0, 1.5, 0.8]},
           {"name": "s1", "radius": 0.1, "pos": [5.3, 0.4, 0.0]},
           {"name": "s2", "radius": 0.1, "pos": [3.1, -0.25, 0.0]}]
    K = len(obs)
    arm = reference_arm(10)
    pa = Plant(arm, obs, contact_check="adaptive")
    pe = Plant(arm, obs, contact_check="every_step")
    for p in (pa, pe):
        p.set_torques(torques)
    # hand-written reference on pe's trajectory
    count, prev = 0, set()
    C = np.array([o["pos"] for o in obs])
    R = np.array([o["radius"] for o in obs])
    for k in range(40):
        pa.step(100)
        for _ in range(100):
            pe.step(1)
            q, _ = pe.joint_state()
            F = dh_frames(arm, q)
            P = np.array([f[:3, 3] for f in F])
            now = set()
            for i in range(10):
                A, B = P[i], P[i + 1]
                for j in range(K):
                    t = np.clip((C[j] - A) @ (B - A) / ((B - A) @ (B - A)), 0, 1)
                    if np.linalg.norm(C[j] - (A + t * (B - A))) < R[j] + 0.1:
                        now.add((i + 1, obs[j]["name"]))
            count += len(now - prev)
            prev = now
        assert pa.collisions == pe.collisions == count
        assert sorted(pa.contacts()) == sorted(pe.contacts()) == sorted(prev)
    assert count > 0
    print("contact events", count)


def test_link_link_contacts_only_when_enabled():
    q0 = [0.0, math.pi - 0.01, math.pi - 0.01]     # link 3 folds back onto link 1
    for enabled in (False, True):
        plant = Plant(make_arm([link(), link(), link()], link_collisions=enabled))
        plant.reset(q0=q0)
        plant.step(1)
        if enabled:
            assert plant.link_link_contacts >= 1
            assert (1, 3) in plant.link_link_pairs()
        else:
            assert plant.link_link_contacts == 0
            assert plant.data.ncon == 0


def test_mjcf_structure():
    arm = reference_arm(4)
    xml = build_mjcf(arm, [{"name": "ball", "radius": 0.125, "pos": [1, 0, 0]}])
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.opt.timestep == 0.001
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    assert m.nu == 4 and m.nq == 4 and m.nmocap == 1
    # drawn geoms never collide without link_collisions
    assert not m.geom_contype.any() and not m.geom_conaffinity.any()
    for i in range(5):
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "frame_%d" % i) >= 0
    # drawn geometry does not change the inertia: total mass = 4 links + payload
    assert m.body_mass.sum() == pytest.approx(4 * 25.0 + 10.0)
    assert DEFAULT_RADIUS > 0
    # limits, damping
    arm["links"][0].update(limited=True, q_low=-1.0, q_high=1.5)
    m = mujoco.MjModel.from_xml_string(build_mjcf(arm))
    assert m.jnt_limited[0] == 1 and not m.jnt_limited[1]
    np.testing.assert_allclose(m.jnt_range[0], [-1.0, 1.5])
    np.testing.assert_allclose(m.dof_damping, 1.0)


def test_joint_limit_enforced():
    arm = make_arm([link(limited=True, q_low=-0.5, q_high=0.5)])
    plant = Plant(arm)
    plant.set_torques([20.0])
    plant.step(3000)
    q, _ = plant.joint_state()
    assert q[0] < 0.52
