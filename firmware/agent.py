# The link agent (docs/design.md §5-6): sense -> kinematic bus step -> behaviours -> arbitrate
# -> saturate -> actuate. Frame-driven: a runner or a board main loop hands every
# received frame to `receive()`; the agent answers through `hal.send()`.
from bus_protocol import messages as m
from firmware import behaviours, global_proxy, identification, kinematic_bus, safety, services
from firmware.hal import ticks_diff
from firmware.vec import qrot

MAX_ASSERT = 16  # assertions applied per cycle (RMOA + gravity), bounded work

# indices of TORQUE components
C_PROXY = 0
C_ASSERT = 1
C_LOCAL_PD = 2
C_JOINT_LIMIT = 3
C_BRAKE = 4


class LinkAgent:
    """One joint's controller. `cfg` is the per-link dict a board reads from JSON:
    link, n_links, dh{type,theta,d,a,alpha}, q_low, q_high, u_sat, mass, centroid,
    behaviours{proxy, assertions, rmoa, gravity, centering, retraction, joint_limit, brake}, safety{}."""

    def __init__(self, cfg, hal):
        self.hal = hal
        self.link = cfg["link"]
        self.n_links = cfg["n_links"]
        dh = cfg["dh"]
        self.jtype = kinematic_bus.joint_type(dh.get("type", "revolute"))
        self.dh = (float(dh.get("theta", 0.0)), float(dh.get("d", 0.0)),
                   float(dh.get("a", 0.0)), float(dh.get("alpha", 0.0)))
        self.q_low = float(cfg.get("q_low", -1e9))
        self.q_high = float(cfg.get("q_high", 1e9))
        self.u_sat = float(cfg.get("u_sat", 1e9))
        self.mass = float(cfg.get("mass", 0.0))
        self.centroid = tuple(cfg.get("centroid", (0.0, 0.0, 0.0)))
        beh = cfg.get("behaviours", {})
        self.k_proxy = _weight(beh, "proxy")
        self.k_assert = float(beh.get("assertions", {}).get("weight", 1.0))
        rmoa = beh.get("rmoa")
        self.rmoa = None if rmoa is None else (float(rmoa.get("eta", 100.0)),
                                               float(rmoa.get("clearance", 0.75)),
                                               float(rmoa.get("f_max", 1e9)))
        grav = beh.get("gravity")
        g = (0.0, 0.0, 0.0) if grav is None else tuple(grav.get("g", (0.0, 0.0, 0.0)))
        self.g = g
        # own weight couplet force m*g (docs/design.md §5, gravity compensation by assertion);
        # asserting -m*g means "apply the force that holds the weight up".
        self.weight = None if grav is None or g == (0.0, 0.0, 0.0) else (
            -self.mass * g[0], -self.mass * g[1], -self.mass * g[2], 0.0, 0.0, 0.0)
        cen = beh.get("centering")
        self.k_local = _weight(beh, "centering")
        self.local_pd = (0.0, 0.0, 0.0) if cen is None else (
            float(cen.get("q_c", 0.5 * (self.q_low + self.q_high))),
            float(cen.get("kq", 100.0)), float(cen.get("kw", 20.0)))
        ret = beh.get("retraction")
        if ret is not None:   # the same local PD with alternating setpoints (7.311)
            self.k_local = float(ret.get("weight", 1.0))
            self.local_pd = (behaviours.retraction_setpoint(self.link, float(ret.get("amplitude", 1.570))),
                             float(ret.get("kq", 100.0)), float(ret.get("kw", 20.0)))
        jl = beh.get("joint_limit")
        self.k_jl = _weight(beh, "joint_limit")
        self.jl = (0.0, 0.0) if jl is None else (float(jl.get("eta", 5.0)), float(jl.get("rho0", 0.2)))
        br = beh.get("brake", {})
        # stable at 120 Hz down to ~0.4 kg m^2 effective inertia (reference arm, link 9)
        self.brake_gains = (float(br.get("kq", 2000.0)), float(br.get("kw", 40.0)))
        self.status_every = int(cfg.get("status_every", 12))
        self._safety_cfg = cfg.get("safety", {})
        self._brake_at_start = cfg.get("brake_at_start")
        load = cfg.get("load")   # a load the last link carries and is told of: (m, m c)
        self.load = None if load is None else (float(load["mass"]), tuple(load["h"]))
        ident = cfg.get("identify")   # the last links identify a load nobody told them of
        self.ident = None if ident is None else identification.LinkIdent(ident, self)
        self.new_run()

        self.decoder = m.Decoder()
        self.logq = services.LogQueue()            # print/log requests (NYMPH host services)
        self.finish = services.FinishLog(self.link)   # completion history -> TIMING
        self._tx = bytearray(64)
        self._seq = 0
        self.down = self.link + 1 if self.link < self.n_links else m.HOST
        # per-cycle state
        self.tick = -1
        self.q = 0.0
        self.qd = 0.0
        self.q_lock = None
        self.kin_tick = -1
        self.z = (0.0, 0.0, 1.0)
        self.a_i = ((1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0))   # A_i(q) of this tick (rot, trans)
        self.p_prev = (0.0, 0.0, 0.0)
        self.quat = (1.0, 0.0, 0.0, 0.0)
        self.p = (0.0, 0.0, 0.0)
        self.vel = (0.0, 0.0, 0.0)
        self.w = (0.0, 0.0, 0.0)
        self._ap = [None] * MAX_ASSERT   # assertion couplets (p, f) of this tick
        self._ak = [0] * MAX_ASSERT      # and their (origin << 8) | kind
        self._n_assert = 0
        self.acted_tick = -1
        self.lockstep = False  # the run's clock is synthetic (COMMAND RESET, arg 1)
        self.t_sync = 0
        self.cycle_us = 0
        self.stale_kin = 0     # goals acted on with last cycle's kinematic packet
        self.late = 0          # packets for a past tick, dropped
        self.components = [0.0] * 6
        self.u = 0.0

    # ---- bus -------------------------------------------------------------------
    def send(self, mtype, dst, values, out=None):
        """Encode into the agent's one transmit buffer and put it on the bus (or `out`)."""
        n = m.encode_into(self._tx, mtype, self.link, dst, self._seq, values)
        self._seq = (self._seq + 1) & 0xFFFF
        (out or self.hal.send)(self._tx, n)

    def log(self, text):
        """NYMPH-style host service: the host prints/logs what the node says. Inside a
        cycle (SYNC in, torque not yet out) the request waits in a bounded queue that
        drains after the torque, so it never delays the cycle."""
        if self.tick >= 0 and self.acted_tick != self.tick:
            self.logq.put(text)
        else:
            self.send(m.LOG, m.HOST, (text.encode()[:m.LOG_MAX_TEXT],))

    def receive(self, frame, n=None):
        """Decode one logical frame and act on it. Garbage is counted, never raised."""
        msg = self.decoder.decode(frame, n)
        if msg is None:
            return
        mtype, src, dst, seq, v = msg
        if dst != self.link and dst != m.BROADCAST:
            return
        if mtype == m.SYNC:
            self.on_sync(v[0])
        elif mtype == m.KINEMATIC:
            self.on_kinematic(v)
        elif mtype == m.ASSERT:
            self.on_assert(v)
        elif mtype == m.GOAL:
            self.on_goal(v)
        elif mtype == m.JOINT_STATE:
            feed = getattr(self.hal, "on_joint_state", None)
            if feed is not None:
                feed(v)
        elif mtype == m.COMMAND:
            self.on_command(v[0], v[1])
        elif mtype == m.IDENT and self.ident is not None and self.ident.est is not None:
            self.ident.est.on_ident(src, v)

    # ---- one cycle (docs/design.md §6) ------------------------------------------------------
    def on_sync(self, tick):
        """Step 2: sample the joint; check the watchdog and the sensor."""
        self.t_sync = self.hal.ticks_us()
        self.tick = tick
        self._n_assert = 0
        if self.lockstep:   # an emulated joint's state of this tick, on a wire of its own
            wait = getattr(self.hal, "wait_state", None)
            if wait is not None:
                wait(tick)
        self.sample()
        self.safety.on_sample(tick, self.q, self.qd)
        # A_i(q) now, so that K_{i-1} -> K_i is only the composition; a braked joint
        # still carries the kinematic bus (its links beyond see it where it is held)
        th, d, a, al = self.dh
        self.a_i = kinematic_bus.dh_local(self.jtype, th, d, a, al, self.q)
        if self.safety.state == safety.BRAKED:
            self.actuate(None)  # a braked joint needs no goal

    def sample(self):
        if not self.hal.read():
            self.safety.trip(safety.F_SENSOR)
        self.q = self.hal.q
        self.qd = self.hal.qd

    def idle(self):
        """Called by the board loop whenever the bus has been quiet for a while: with no
        SYNC for watchdog_ms the bus is lost (the per-cycle watchdog needs SYNCs to run),
        so brake, and keep the brake PD going at the loop's rate. True while braked.
        In a lockstep run no time passes between SYNCs (the plant waits for the host),
        so a quiet bus is no fault and there is nothing to hold (docs/design.md §13);
        the joint is still read, which feeds a board's hardware watchdog (wdt_ms)."""
        sf = self.safety
        if sf.state == safety.INIT:
            return False
        if self.lockstep:
            self.hal.read()
            return sf.state == safety.BRAKED
        if ticks_diff(self.hal.ticks_us(), self.t_sync) > 1000 * sf.watchdog_ms:
            if sf.state != safety.BRAKED:
                sf.trip(safety.F_LOST_BUS)
            self.sample()
            self.actuate(None)
        return sf.state == safety.BRAKED

    def on_kinematic(self, v):
        """Step 3: K_{i-1} -> K_i, forwarded base to tip, after the agent's own assertions."""
        if v[0] != self.tick:
            self.late += 1
            return
        rot, trans = self.a_i
        quat, p, vel, w, z = kinematic_bus.compose(self.jtype, rot, trans, self.qd,
                                                   v[1:5], v[5:8], v[8:11], v[11:14])
        self.p_prev = (v[5], v[6], v[7])
        self.z = z
        self.quat = quat
        self.p = p
        self.vel = vel
        self.w = w
        self.kin_tick = self.tick
        # Assertions leave before K_i so that, on every medium (FIFO per node), they reach
        # the host ahead of K_N, which is when the host rebroadcasts them with the goal.
        if self.weight is not None:   # gravity compensation by assertion
            self.send(m.ASSERT, m.HOST, (self.tick, self.link, m.KIND_GRAVITY) + self.weight_couplet(quat, p))
        if self.rmoa is not None and self.hal.range_valid:
            self.assert_rmoa(quat, p)
        self.send(m.KINEMATIC, self.down, (self.tick,) + quat + p + vel + w)

    def weight_couplet(self, quat, p):
        """(p, f) of the link's weight, with the load it carries: told (`load`) or its
        estimate (identification `use`)."""
        load = self.ident.load() if self.ident is not None and self.ident.use else self.load
        if load is None:
            return _to_world(quat, p, self.centroid) + self.weight
        return identification.weight_couplet(quat, p, load[0], load[1], self.g, self.mass, self.centroid)

    def assert_rmoa(self, quat, p):
        """Step 5: range to the nearest obstacle under the clearance -> RMOA couplet."""
        x_r = qrot(quat, self.hal.x_r)
        rho = (x_r[0] * x_r[0] + x_r[1] * x_r[1] + x_r[2] * x_r[2]) ** 0.5
        eta, clearance, f_max = self.rmoa
        f = behaviours.rmoa_force(x_r, rho, eta, clearance, f_max)
        if f is not None:
            p_psh = _to_world(quat, p, self.hal.p_psh)
            self.send(m.ASSERT, m.HOST, (self.tick, self.link, m.KIND_RMOA) + p_psh + f
                      + (0.0, 0.0, 0.0))

    def on_assert(self, v):
        # ASSERT: tick, origin, kind, p(3), f(6). Applied by base-ward agents j <= origin (7.250),
        # once per (origin, kind): where a ring's two goal waves meet, both copies arrive.
        if v[0] != self.tick or v[1] < self.link or self._n_assert >= MAX_ASSERT:
            return
        key = (v[1] << 8) | v[2]
        for j in range(self._n_assert):
            if self._ak[j] == key:
                return
        self._ak[self._n_assert] = key
        self._ap[self._n_assert] = (v[3:6], v[6:12])
        self._n_assert += 1

    def on_goal(self, v):
        """Step 6: the broadcast global goal G = (p_app, f) closes this cycle."""
        if v[0] != self.tick:
            self.late += 1
            return
        self.safety.on_goal(v[0])
        if self.safety.state == safety.RUN and self.acted_tick != self.tick:
            if self.kin_tick != self.tick:
                self.stale_kin += 1   # hold last frame (z, p_{i-1})
            self.actuate(v)

    def actuate(self, goal):
        c = self.components
        u_prev = self.u   # held since the last tick (the identification's interval)
        for j in range(6):
            c[j] = 0.0
        q = self.q
        qd = self.qd
        if self.safety.state == safety.BRAKED:
            if self.q_lock is None:
                self.q_lock = q
                self.hal.set_brake(True)
            c[C_BRAKE] = behaviours.pd(q, qd, self.q_lock, self.brake_gains[0], self.brake_gains[1])
        else:
            if self.q_lock is not None:
                self.q_lock = None
                self.hal.set_brake(False)
            jt = self.jtype
            z = self.z
            pp = self.p_prev
            if self.k_proxy and goal is not None:
                c[C_PROXY] = global_proxy.share(jt, z, pp, goal[2:5], goal[5:11])
            s = 0.0
            for j in range(self._n_assert):
                pa, fa = self._ap[j]
                s += global_proxy.share(jt, z, pp, pa, fa)
            c[C_ASSERT] = s
            if self.k_local:
                qc, kq, kw = self.local_pd
                c[C_LOCAL_PD] = behaviours.pd(q, qd, qc, kq, kw)
            if self.k_jl:
                c[C_JOINT_LIMIT] = behaviours.joint_limit(q, self.q_low, self.q_high, self.jl[0], self.jl[1])
        # linear arbitration u = sum k_j u_j (5.177), then saturation (6.216)
        u = (self.k_proxy * c[C_PROXY] + self.k_assert * c[C_ASSERT] + self.k_local * c[C_LOCAL_PD]
             + self.k_jl * c[C_JOINT_LIMIT] + c[C_BRAKE])
        u = behaviours.saturate(u, self.u_sat)
        self.u = u
        self.hal.write(u)
        self.safety.on_torque(u, qd)
        self.acted_tick = self.tick
        t_finish = self.hal.ticks_us()
        self.cycle_us = ticks_diff(t_finish, self.t_sync)
        # TORQUE reports the cycle to the host: on the bus, or, where the motor is the
        # host's simulated plant on a wire of its own (hal.report), through that wire
        self.send(m.TORQUE, m.HOST, (self.tick, u, self.safety.state, c[0], c[1], c[2], c[3], c[4], c[5]),
                  getattr(self.hal, "report", None))
        if self.ident is not None:
            self.ident.after_torque(self, u_prev)
        # STATUS after the torque, when the cycle's traffic is through, and staggered by
        # link so that a chain carries about one per tick, never N at once
        if self.tick % self.status_every == self.link % self.status_every:
            self.send_status()
        self.finish.record(self.tick, self.cycle_us, t_finish)
        self.logq.pump(self)
        self.finish.pump(self, self.tick)

    def send_status(self):
        self.send(m.STATUS, m.HOST, (self.tick & 0xFFFFFFFF, self.safety.state, self.safety.faults,
                                     self.decoder.bad & 0xFFFF, self.cycle_us & 0xFFFFFFFF,
                                     self.stale_kin & 0xFFFF, self.late & 0xFFFF))
        if self.ident is not None and self.ident.est is not None:
            self.send(m.ESTIMATE, m.HOST, (self.tick & 0xFFFFFFFF,) + tuple(self.ident.est.theta))

    def on_command(self, cmd, arg):
        if cmd == m.CMD_BRAKE:
            self.safety.trip(safety.F_COMMAND)
        elif cmd == m.CMD_RELEASE:
            self.safety.release()
        elif cmd == m.CMD_PING:
            self.send_status()
        elif cmd == m.CMD_RESET:
            self.new_run()
            self.lockstep = arg == 1.0

    def new_run(self):
        """Fresh safety state (watchdog, encoder history) and tick: a host starting a run
        on boards that stayed powered sends COMMAND RESET first."""
        self.safety = safety.Safety(self._safety_cfg)
        if self._brake_at_start:
            self.safety.trip(safety.F_COMMAND)
        self.tick = -1
        self.acted_tick = -1
        self.kin_tick = -1


def _weight(beh, name):
    b = beh.get(name)
    if b is None:
        return 0.0
    return float(b.get("weight", 1.0))


def _to_world(quat, p, x_link):
    """p + R x for a point given in link-frame coordinates."""
    r = qrot(quat, x_link)
    return (p[0] + r[0], p[1] + r[1], p[2] + r[2])
