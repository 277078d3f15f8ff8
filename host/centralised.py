"""Centralised baselines (thesis 8.1; Hamilton et al. eq. 2): controllers that hold the
whole arm's model on the host, for comparison with the multiagent controller.

`[controller] kind` in the scenario picks one:

* ``rmac-nullspace`` — resolved motion acceleration control with the joint-centering
  task assigned to the Jacobian null space (8.342-8.345):
      qdd_d = J# (xdd_d - Jdot qd + kv xd_e + kp x_e)                     (8.342)
      u_track = D(q) qdd_d + C(q, qd) + g(q)                               (8.343)
      u = u_track + (I - J# J) u_centering                                (8.345)
* ``rmac`` — the same tracker with the local goals simply added, as a link agent's
  arbitration would (8.350-8.353): u = u_track + u_centering.
* ``computed-torque`` — joint-space computed torque with a PD compensator (Hamilton et
  al. eq. 2), u = D(q) (qdd_d + KD (qd_d - qd) + KP (q_d - q)) + N(q, qd), fed by
  resolved-rate inverse kinematics on a kinematic copy of the arm:
      qd_d = J#(q_d) (xd_d + k_ik x_e(q_d)) + (I - J# J) k_ik (q_set - q_d)
  (the null-space term pulls q_d to the centering/retraction setpoints when the scenario
  has them). The law uses q_d, qd_d and qdd_d of the same tick: qdd_d = (qd_ik - qd_d) / T
  is held over the period T, and q_d, qd_d advance under it as a double integrator.

The model is the plant's own MuJoCo model (mj_fullM, qfrc_bias, mj_jacSite, mj_jacDot),
so D, C, g and the joint damping (qfrc_passive) are exact: this is the "accurate model"
case the thesis grants RMAC (`model_payload = false` leaves the payload out of it). J# is the damped least-squares inverse
J^T (J J^T + lambda^2 I)^-1: the arm starts straight, where the x row of J vanishes.
Task coordinates are those of RMDAC (planar: x, y, rotation about z; spatial: x, y, z
and 2 dq). The local goals (centering, retraction, joint limits) are the link agents'
own behaviour code, read from firmware.agent.LinkAgent objects built from the scenario.

They run in-process only and bypass the agents and the bus: `begin()` reads the plant
at the tick and sets the torques that the shared ControlLoop then holds over the tick,
so runner, plant, metrics, logs and plots are those of every other run. In the recorded
components, column 0 ("proxy") holds the tracking torque and column 2 ("local PD") the
local goals as applied (after the null-space projection for rmac-nullspace); the recorded
goal `f` holds the commanded task acceleration.
"""
import mujoco
import numpy as np

from firmware import behaviours
from host import trajectory as tr
from host.controller import HostController
from host.runners.inprocess import make_agents
from sim_host.model import build_mjcf

KINDS = ("multiagent", "rmac", "rmac-nullspace", "computed-torque")


class Centralised(HostController):
    """A HostController whose cycle is one model-based control law on the plant's state."""

    def __init__(self, sc, plant):
        super().__init__(sc)
        c = sc.controller
        self.kind = c["kind"]
        self.kp, self.kv, self.k_ik, self.lam = c["kp"], c["kv"], c["k_ik"], c["dls_lambda"]
        self.plant = plant
        if c["model_payload"]:
            self.model = plant.model
        else:   # an imperfect model: the arm without its payload
            self.model = mujoco.MjModel.from_xml_string(build_mjcf(dict(sc.arm, payload=None), (), sc.timestep))
        self.data = mujoco.MjData(self.model)    # the controller's own state of its model
        self.site = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, "frame_%d" % sc.n)
        self.body = int(self.model.site_bodyid[self.site])
        # local goals exactly as the link agents would run them
        agents = make_agents(sc, lambda *a: None)
        self.local = [(a.local_pd, a.k_local, a.jl, a.k_jl, a.q_low, a.q_high) for a in agents]
        self.q_d = self.qd_d = self.qdd_d = None   # computed torque: the inverse-kinematics reference

    # ---- the model: everything from the plant's MuJoCo model at (q, qd)
    def _at(self, q, qd):
        d = self.data
        d.qpos[:] = q
        d.qvel[:] = qd
        d.ctrl[:] = 0.0
        mujoco.mj_forward(self.model, d)
        return d

    def _task(self, d):
        """End-effector pose (p, quat) and task Jacobian J, Jdot (m x n) at the state in d."""
        nv = self.model.nv
        jp, jr = np.zeros((3, nv)), np.zeros((3, nv))
        mujoco.mj_jacSite(self.model, d, jp, jr, self.site)
        jpd, jrd = np.zeros((3, nv)), np.zeros((3, nv))
        p = d.site_xpos[self.site].copy()
        mujoco.mj_jacDot(self.model, d, jpd, jrd, p, self.body)
        quat = tr.quat_from_matrix(d.site_xmat[self.site].reshape(3, 3))
        if self.planar:
            return p, quat, np.vstack([jp[:2], jr[2:]]), np.vstack([jpd[:2], jrd[2:]])
        return p, quat, np.vstack([jp, jr]), np.vstack([jpd, jrd])

    def _pinv(self, J):
        """Damped least-squares inverse J^T (J J^T + lambda^2 I)^-1."""
        return J.T @ np.linalg.inv(J @ J.T + self.lam ** 2 * np.eye(J.shape[0]))

    def _rates(self, d):
        """Desired task velocity and acceleration (RMDAC's coordinates)."""
        if self.planar:
            return np.array([d.v[0], d.v[1], d.w[2]]), np.array([d.a[0], d.a[1], d.wd[2]])
        return np.r_[d.v, d.w], np.r_[d.a, d.wd]

    def _error(self, d, p, quat):
        e_rot = tr.orientation_error(d, quat, self.planar)
        if self.planar:
            return np.array([d.p[0] - p[0], d.p[1] - p[1], e_rot])
        return np.r_[d.p - p, e_rot]

    def _local_goals(self, q, qd):
        """Each link's local behaviours (centering / retraction PD 7.274, joint limits 7.254)."""
        u = np.zeros(len(q))
        for i, ((q_set, kq, kw), k, (eta, rho0), k_jl, lo, hi) in enumerate(self.local):
            u[i] = k * behaviours.pd(q[i], qd[i], q_set, kq, kw)
            if eta:
                u[i] += k_jl * behaviours.joint_limit(q[i], lo, hi, eta, rho0)
        return u

    # ---- one control cycle
    def begin(self, tick, t):
        self.tick, self.t = tick, t
        q, qd = self.plant.joint_state()
        d = self._at(q, qd)
        p, quat, J, Jd = self._task(d)
        if self.traj is None:   # the trajectory starts where the arm is, as RMDAC's does
            self.traj = tr.Trajectory(self.sc.knots, p, quat, self.planar)
        des = self.traj.sample(t)
        xd_d, xdd_d = self._rates(des)
        M = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, d, M)
        nle = d.qfrc_bias - d.qfrc_passive      # C qd + g, and the joints' damping
        e = self._error(des, p, quat)
        ed = xd_d - J @ qd
        Jp = self._pinv(J)
        u_local = self._local_goals(q, qd)
        if self.kind == "computed-torque":
            cmd, qdd_d = self._inverse_kinematics(q, des, xd_d)
            u_track = M @ (qdd_d + self.kv * (self.qd_d - qd) + self.kp * (self.q_d - q)) + nle   # Hamilton (2)
            u_local = np.zeros_like(u_local)     # the local goals are in q_d already
        else:
            cmd = xdd_d + self.kv * ed + self.kp * e
            qdd = Jp @ (cmd - Jd @ qd)                                       # (8.342)
            u_track = M @ qdd + nle                                          # (8.343)
            if self.kind == "rmac-nullspace":
                u_local = (np.eye(len(q)) - Jp @ J) @ u_local                # (8.345)
        self.torques = u_track + u_local                                     # (8.345) / (8.353)
        self.components[:] = 0.0
        self.components[:, 0] = u_track
        self.components[:, 2] = u_local
        self.desired = des
        self.error = e
        f = np.zeros(6)
        f[[0, 1, 5] if self.planar else slice(0, 6)] = cmd
        self.goal = (p, f)
        self.n_got = self.n
        return []

    def _inverse_kinematics(self, q, des, xd_d):
        """Resolved-rate IK on a kinematic copy of the arm. q_d, qd_d are the reference at
        this tick and qdd_d is held over the period, as the plant's torque is; q_d, qd_d then
        advance exactly as a double integrator under that held acceleration, so the three are
        one consistent reference (qd_d reaches the IK's joint rate one period later).
        Returns the task command and qdd_d."""
        dt = 1.0 / self.sc.control_rate_hz
        if self.q_d is None:
            self.q_d, self.qd_d = q.copy(), np.zeros_like(q)
        else:   # advance the reference from the previous tick to this one
            self.q_d = self.q_d + dt * self.qd_d + 0.5 * dt * dt * self.qdd_d
            self.qd_d = self.qd_d + dt * self.qdd_d
        d = self._at(self.q_d, np.zeros_like(q))
        p, quat, J, _ = self._task(d)
        Jp = self._pinv(J)
        cmd = xd_d + self.k_ik * self._error(des, p, quat)
        null = np.zeros_like(q)
        for i, ((q_set, kq, _), k, _, _, _, _) in enumerate(self.local):
            if kq:
                null[i] = k * (q_set - self.q_d[i])
        qd_ik = Jp @ cmd + (np.eye(len(q)) - Jp @ J) @ (self.k_ik * null)
        self.qdd_d = (qd_ik - self.qd_d) / dt
        return cmd, self.qdd_d


def run(loop, progress=None):
    """Run a centralised controller through the shared control loop (in-process only); -> loop.stats."""
    loop.gp = Centralised(loop.sc, loop.plant)
    return loop.run(lambda frames, k, deadline: None, progress)
