"""The plant: an N-link DH arm simulated by MuJoCo (fixed-step RK4, 1 ms by default).

Torques written with :meth:`Plant.set_torques` go to ``data.ctrl`` and are held constant
over every following step until the next call (a zero-order hold, as a motor driver
does; MuJoCo's RK4 sees the same ctrl at all four stages).

Link-obstacle contact is geometric (link axis segment vs obstacle sphere, contact when
the distance is below r_obstacle + r_link) and is checked after every integration step,
vectorised over links x obstacles; obstacles never exert forces on the arm.
"""

import math

import mujoco
import numpy as np

from .model import DEFAULT_RADIUS, DEFAULT_TIMESTEP, build_mjcf
from .sensors import nearest_surface, segment_center_distances


# MuJoCo's "the simulation is unstable" warnings (NaN, Inf or huge values); on any of them
# mj_step resets the state to the model's home pose and carries on
UNSTABLE = (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
            mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADCTRL)
_UNSTABLE_IDX = [int(w) for w in UNSTABLE]


class PlantUnstable(ArithmeticError):
    pass


class Plant:
    MAX_SKIP = 20   # adaptive contact check: exact test at least every MAX_SKIP steps

    def __init__(self, arm, obstacles=(), timestep=DEFAULT_TIMESTEP, contact_check="adaptive"):
        if contact_check not in ("adaptive", "every_step"):
            raise ValueError("contact_check must be 'adaptive' or 'every_step'")
        self._adaptive = contact_check == "adaptive"
        self.arm = arm
        self.links = list(arm["links"])
        self.n = n = len(self.links)
        self.obstacles = [dict(o) for o in obstacles]
        for k, o in enumerate(self.obstacles):
            o.setdefault("name", "obs%d" % k)
        self.xml = build_mjcf(arm, self.obstacles, timestep=timestep)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        self._scratch = mujoco.MjData(self.model)
        self._warnings = self.data.warning.number   # a view: every warning's count

        m = self.model
        self._site_ids = np.array(
            [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "frame_%d" % i) for i in range(n + 1)])
        if np.any(self._site_ids < 0):
            raise RuntimeError("frame sites missing from the model")
        # sites are created in order frame_0..frame_N and nothing else: use a slice view
        self._sites_contiguous = bool(np.all(self._site_ids == np.arange(n + 1) + self._site_ids[0]))
        self._site_s = int(self._site_ids[0])
        self._ee_site = int(self._site_ids[-1])

        self.u_sat = np.array([self._usat(L) for L in self.links])
        self._u_low = -self.u_sat
        self.link_radius = np.array([float(L.get("radius", DEFAULT_RADIUS) or DEFAULT_RADIUS)
                                     for L in self.links])
        self._q0 = np.array([float(L.get("q0", 0.0)) for L in self.links])
        self._prismatic = np.array([L.get("type", "revolute") == "prismatic" for L in self.links])
        self._n_prism_beyond = np.cumsum(self._prismatic[::-1])[::-1].astype(float)
        self._any_prismatic = bool(self._prismatic.any())
        self._reach = None     # adaptive contact check: chain length beyond each joint
        self._slack = 0.0

        self.obstacle_names = [o["name"] for o in self.obstacles]
        self._K = len(self.obstacles)
        self._obs_r = np.array([float(o["radius"]) for o in self.obstacles]).reshape(-1)
        self._obs_init = np.array([o.get("pos", (0.0, 0.0, 0.0)) for o in self.obstacles],
                                  dtype=float).reshape(-1, 3)
        self._obs_c = self._obs_init.copy()
        self._mocap_ids = [int(m.body_mocapid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY,
                                                                   "obs_%s" % nm)])
                           for nm in self.obstacle_names]
        # contact threshold per (link, obstacle)
        self._thresh = self.link_radius[:, None] + self._obs_r[None, :]

        # link-link contacts (MuJoCo) bookkeeping
        self._link_coll = bool(arm.get("link_collisions", False))
        self._geom_link = {}
        for i in range(1, n + 1):
            gid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "link%d_geom" % i)
            self._geom_link[gid] = i

        self._brake_ids = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_EQUALITY, "brake%d" % i)
                                    for i in range(1, n + 1)])
        self.reset()

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _usat(L):
        u = L.get("u_sat", None)
        if u is None:
            return math.inf
        u = float(u)
        return u if (math.isfinite(u) and u > 0) else math.inf

    @property
    def t(self):
        return float(self.data.time)

    @property
    def timestep(self):
        return float(self.model.opt.timestep)

    def reset(self, q0=None, qd0=None):
        """Zero time, torques, counters; joints to q0 (default: each link's "q0"), qd0 (0)."""
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        q = self._q0 if q0 is None else np.asarray(q0, dtype=float).reshape(self.n)
        qd = np.zeros(self.n) if qd0 is None else np.asarray(qd0, dtype=float).reshape(self.n)
        d.qpos[:] = q
        d.qvel[:] = qd
        d.ctrl[:] = 0.0
        self.braked = np.zeros(self.n, dtype=bool)
        d.eq_active[self._brake_ids] = 0
        self._obs_c = self._obs_init.copy()
        for k, mid in enumerate(self._mocap_ids):
            d.mocap_pos[mid] = self._obs_c[k]
        self.collisions = 0
        self.link_link_contacts = 0
        self._in_contact = np.zeros((self.n, self._K), dtype=bool)
        self._ll_pairs = set()
        mujoco.mj_forward(m, d)
        self._synced = self._com_synced = True
        self._update_contacts()

    # ------------------------------------------------------------ actuation
    def set_torques(self, u):
        """Joint torques (forces for prismatic joints), clipped to +-u_sat, held until changed."""
        u = np.asarray(u, dtype=float).reshape(-1)
        if u.shape[0] != self.n:
            raise ValueError("expected %d torques, got %d" % (self.n, u.shape[0]))
        # a finite sum has finite terms (numpy's isfinite().all(): several us a tick, make bench)
        if not math.isfinite(sum(u.tolist())) and not np.isfinite(u).all():   # not an overflow of the sum
            raise ValueError("non-finite torque command %r" % (u,))
        u = np.minimum(np.maximum(u, self._u_low), self.u_sat)   # np.clip, without its wrapper
        self.data.ctrl[:] = u
        return u

    def set_brake(self, i, on):
        """Engage (lock at the current angle) or release the holding brake of joint i
        (0-based): a stiff MuJoCo joint equality, so the reaction on the rest of the chain
        is physical (a clamp of qpos would not conserve momentum)."""
        on = bool(on)
        if on == self.braked[i]:
            return
        eid = self._brake_ids[i]
        if on:
            self.model.eq_data[eid, :5] = 0.0
            self.model.eq_data[eid, 0] = self.data.qpos[i]
        self.data.eq_active[eid] = 1 if on else 0
        self.braked[i] = on

    def torques(self):
        """The torques currently held (after clipping)."""
        return self.data.ctrl.copy()

    def step(self, nsteps=1):
        """Advance nsteps fixed RK4 steps; contact bookkeeping after every step.

        With contact_check="adaptive" (default) the exact segment-sphere test runs only
        when the arm may have moved far enough to change some pair's contact state: after
        each exact test the smallest |distance - threshold| (the slack) is kept, and every
        step adds a conservative bound on how far any point of any link axis moved,
        dt * (V_prev + V_now) with V = sum_i |qd_i| * reach_i (reach_i = length of the
        chain beyond joint i; 1 for prismatic joints).  Once the accumulated bound reaches
        the slack, or after MAX_SKIP steps, the exact test runs again.  "every_step"
        runs the exact test after every step.
        """
        m, d = self.model, self.data
        nsteps = int(nsteps)
        if nsteps <= 0:
            return
        K, llc = self._K, self._link_coll
        if K == 0 and not llc:
            mujoco.mj_step(m, d, nsteps)
            self._synced = False
            self._check_stable()
            return
        step, kin = mujoco.mj_step, mujoco.mj_kinematics
        adaptive = self._adaptive
        dt = float(m.opt.timestep)
        absolute = np.abs
        for _ in range(nsteps):
            step(m, d)
            if llc and (d.ncon or self._ll_pairs):
                # d.contact holds the collisions of the state at the start of this step
                self._update_link_link()
            if K:
                if adaptive:
                    v = float(absolute(d.qvel) @ self._reach)
                    self._moved += dt * (v + self._vprev)
                    self._vprev = v
                    self._nskip += 1
                    if self._moved < self._slack and self._nskip < self.MAX_SKIP:
                        continue
                kin(m, d)
                self._update_contacts()
        self._synced = False
        self._check_stable()

    def _check_stable(self):
        """Raise PlantUnstable once MuJoCo has found the state unstable (and reset it)."""
        n = self._warnings.tolist()   # one read, not four struct lookups (make bench)
        if not any([n[w] for w in _UNSTABLE_IDX]):
            return
        for w in UNSTABLE:
            st = self.data.warning[w]
            if st.number:
                raise PlantUnstable("MuJoCo reset the state by t = %.3f s: %s"
                                    % (self.data.time, mujoco.mju_warningText(w, st.lastinfo)))

    # ------------------------------------------------------------- state
    def _sync(self, com=True):
        """Position-dependent quantities for the current qpos: frames, and with `com` the
        centre-of-mass quantities Jacobians need."""
        if not self._synced:
            mujoco.mj_kinematics(self.model, self.data)
            self._synced = True
            self._com_synced = False
        if com and not self._com_synced:
            mujoco.mj_comPos(self.model, self.data)
            self._com_synced = True

    def joint_state(self):
        return self.data.qpos.copy(), self.data.qvel.copy()

    def _site_pos(self):
        if self._sites_contiguous:
            s = self._site_ids[0]
            return self.data.site_xpos[s:s + self.n + 1]
        return self.data.site_xpos[self._site_ids]

    def frames(self, copy=True):
        """World frames F_0..F_N: R (n+1, 3, 3), p (n+1, 3). With copy=False, views of
        MuJoCo's data where the sites allow (make bench: the copies were a tenth of the
        per-tick recording), valid until the plant steps or an obstacle moves."""
        self._sync(com=False)
        d = self.data
        if self._sites_contiguous:   # slices: a fancy index costs twice as much (make bench)
            s = self._site_s
            R, p = d.site_xmat[s:s + self.n + 1].reshape(self.n + 1, 3, 3), d.site_xpos[s:s + self.n + 1]
            return (R.copy(), p.copy()) if copy else (R, p)
        R = d.site_xmat[self._site_ids].reshape(self.n + 1, 3, 3)
        p = d.site_xpos[self._site_ids]
        return R, p   # a fancy index is a copy already

    def ee_velocity(self):
        """(v, w): world linear velocity of the F_N origin and world angular velocity."""
        self._sync()
        jp = np.zeros((3, self.model.nv))
        jr = np.zeros((3, self.model.nv))
        mujoco.mj_jacSite(self.model, self.data, jp, jr, self._ee_site)
        qd = self.data.qvel
        return jp @ qd, jr @ qd

    # ------------------------------------------------------------ obstacles
    def _obstacle_index(self, k):
        if isinstance(k, str):
            return self.obstacle_names.index(k)
        return int(k)

    def set_obstacle_position(self, k, xyz):
        k = self._obstacle_index(k)
        self._obs_c[k] = np.asarray(xyz, dtype=float).reshape(3)
        self.data.mocap_pos[self._mocap_ids[k]] = self._obs_c[k]
        self._sync()
        self._update_contacts()

    def _update_contacts(self):
        """Exact link-axis / sphere test at the current (synced) positions."""
        if self._K == 0:
            return
        P = self._site_pos()
        A = P[:-1]
        dist = segment_center_distances(A, P[1:], self._obs_c)
        now = dist < self._thresh
        new = now & ~self._in_contact
        if new.any():
            self.collisions += int(new.sum())
        self._in_contact = now
        # state for the adaptive check
        if self._adaptive:
            self._slack = float(np.abs(dist - self._thresh).min())
            if self._any_prismatic or self._reach is None:
                seg = np.sqrt(((P[1:] - A) ** 2).sum(axis=1))
                reach = np.cumsum(seg[::-1])[::-1] + self._n_prism_beyond * self._slack
                self._reach = np.where(self._prismatic, 1.0, reach)
            self._vprev = float(np.abs(self.data.qvel) @ self._reach)
            self._moved = 0.0
            self._nskip = 0

    def _update_link_link(self):
        d = self.data
        pairs = set()
        gl = self._geom_link
        for j in range(d.ncon):
            c = d.contact[j]
            a, b = gl.get(int(c.geom1)), gl.get(int(c.geom2))
            if a is not None and b is not None:
                pairs.add((min(a, b), max(a, b)))
        self.link_link_contacts += len(pairs - self._ll_pairs)
        self._ll_pairs = pairs

    def contacts(self):
        """Current (link index 1..n, obstacle name) pairs in contact."""
        if self._K == 0:
            return []
        self._sync()
        self._update_contacts()
        ii, kk = np.nonzero(self._in_contact)
        return [(int(i) + 1, self.obstacle_names[k]) for i, k in zip(ii, kk)]

    def link_link_pairs(self):
        """Link pairs (i, j) in MuJoCo contact at the last step (link_collisions only)."""
        return sorted(self._ll_pairs)

    def range_readings(self, max_range=math.inf):
        """Per link: None or (p_psh, x_r, rho), p_psh and x_r in link frame i (p_psh relative
        to the F_i origin).  See sim_host.sensors.nearest_surface for the geometry."""
        if self._K == 0:
            return [None] * self.n
        R, p = self.frames()
        kb, pw, xw, rho, pen = nearest_surface(p[:-1], p[1:], self._obs_c, self._obs_r)
        out = []
        for i in range(self.n):
            if rho[i] > max_range:
                out.append(None)
                continue
            Ri = R[i + 1]
            out.append((Ri.T @ (pw[i] - p[i + 1]), Ri.T @ xw[i], float(rho[i])))
        return out

    # ------------------------------------------------------- dynamics queries
    def _scratch_state(self, q, qd):
        s = self._scratch
        s.qpos[:] = self.data.qpos if q is None else np.asarray(q, dtype=float).reshape(self.n)
        s.qvel[:] = (self.data.qvel if q is None else 0.0) if qd is None \
            else np.asarray(qd, dtype=float).reshape(self.n)
        s.ctrl[:] = 0.0
        s.mocap_pos[:] = self.data.mocap_pos
        mujoco.mj_forward(self.model, s)
        return s

    def mass_matrix(self, q=None):
        """Joint-space inertia matrix M(q) (n x n), default at the current q."""
        s = self._scratch_state(q, None if q is None else np.zeros(self.n))
        M = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, s, M)
        return M

    def bias(self, q=None, qd=None):
        """Coriolis + centrifugal + gravity torques C(q,qd) qd + g(q) (MuJoCo qfrc_bias)."""
        s = self._scratch_state(q, qd)
        return s.qfrc_bias.copy()

    def gravity_torque(self, q=None):
        """g(q): bias at zero velocity."""
        q = self.data.qpos.copy() if q is None else q
        return self.bias(q, np.zeros(self.n))

    def energy(self):
        """Kinetic + potential energy of the current state (potential = -sum m g.com)."""
        m, d = self.model, self.data
        self._sync()
        mujoco.mj_energyPos(m, d)
        mujoco.mj_crb(m, d)
        mujoco.mj_energyVel(m, d)
        return float(d.energy[0] + d.energy[1])
