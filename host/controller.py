"""The host's part of one control cycle (docs/design.md §6), independent of the transport:
it opens the cycle (SYNC, base packet K_0), turns the end-effector packet K_N into the
global goal with RMDAC, rebroadcasts the agents' assertions ahead of the goal, and
collects the torques. Runners only move the bytes this produces and consumes."""

import numpy as np

from bus_protocol import messages as m
from bus_protocol.states import F_NEIGHBOUR_DISAGREES, RUN
from firmware import behaviours, kinematic_bus, neighbours
from host import trajectory as tr
from host.rmdac import RMDAC, coordinate_gains
from host.node_services import HostServices

# The host's check of every RUN torque against the arbitration of its own components,
# u = sat(sum k_j u_j) (5.177, 6.216): TORQUE carries u and the components as float32,
# so an honest agent's u agrees to float32 rounding (6e-8 of the terms; 1e-6 of them for
# an agent computing in float32, as a Cortex-M4F does); anything beyond this is a fault.
TORQUE_TOL_ABS = 1e-3   # N m (N)
TORQUE_TOL_REL = 1e-5   # of sum |k_j u_j|
_INF = float("inf")

SILENT = -1   # time series state of a link whose torque did not come in its tick (runners/base.py)


STATUS_REPLAY = 8   # STATUS values: auth_rejected replay (bus_protocol/SPEC.md §4)


class HostController:
    def __init__(self, sc):
        self.sc = sc
        self.n = sc.n
        self.planar = sc.task == "planar"
        self.rmdac = RMDAC(coordinate_gains(sc.rmdac, sc.task))
        self.decoder = m.Decoder()
        self.seq = 0
        self.signer = None    # host/tools/keys.Signer: protects COMMAND, CONFIG and GOAL
        self.traj = None
        base = sc.arm["base"]
        self.base_packet = tuple(base["quat"]) + tuple(base["pos"]) + (0.0,) * 6
        self.copies = getattr(sc, "kinematic_copies", 1)   # K_0 sent this many times
        self.tick = -1
        self.t = 0.0
        self.t_prev = None
        self.asserts = []
        self.torques = np.zeros(self.n)
        self.components = np.zeros((self.n, 6))
        self.states = np.zeros(self.n, dtype=int)
        self.got = [False] * self.n   # lists: numpy's per-element access costs a call (make bench)
        self.n_got = 0        # torques in this tick (complete is polled on every frame)
        self.status = {}      # link -> its last STATUS values (link health)
        self.fault_bits = np.zeros(self.n)   # each link's fault bits from its last STATUS
        self.logs = []
        self.services = HostServices()   # the nodes' log requests and completion history
        self.estimates = []   # (t, tick, theta) of the last link's ESTIMATE frames
        self.closed = False
        self.late_asserts = 0
        self.ee = None        # (quat, p, v, w) from K_N, float32 from the wire
        self.goal = None      # (p_app, f)
        self.desired = None   # trajectory sample of this tick
        self._ref = None      # (tick, sample, (x_d, xd_d, xdd_d)) from prepare()
        self.error = None     # task-space error e
        # the team (fault tolerance): a link silent for driver_timeout_ticks is dropped
        # (its joint brakes, its neighbours bridge it); one a neighbour reports computing
        # wrongly is braked and dropped; a dropped link that reports RUN torques for
        # readmit ticks in a row is re-admitted. Every agent hears NODE_OUT / NODE_IN.
        self.member = [True] * self.n
        self.n_team = self.n
        self.silent = np.zeros(self.n, dtype=int)    # ticks in a row without a torque
        self.heard = np.zeros(self.n, dtype=int)     # RUN torques in a row from a dropped link
        self.drop_after = getattr(sc, "driver_timeout_ticks", 2)
        self.readmit = 3
        self.events = []      # (t, link, what): team changes and fault reports
        self.pending = []     # frames for the next tick (NODE_OUT, NODE_IN)
        self.dead = set()     # indices of links whose process is known gone (processes mode)
        self.ee_last = None
        self.t_ee = 0.0
        # per link (k_proxy, k_assert, k_local, k_jl, u_sat) for the torque check
        self.arbitration = [behaviours.weights(c["behaviours"]) + (float(c["u_sat"]),)
                            for c in getattr(sc, "agent_configs", None) or ()]
        self.stale_ee = 0     # goals sent on the last K_N (this tick's did not come)
        # the tip has no distal neighbour to bridge it: while link N is out of the team, link
        # N-1 also sends its K to the host, which composes K_N over joint N held by its brake
        tip = sc.links[-1]
        self.tip_dh = (kinematic_bus.joint_type(tip["type"]), (tip["theta"], tip["d"], tip["a"], tip["alpha"]))
        self.q_tip = None     # joint N's lock angle while it is bridged
        # Hamilton's check of the tip, which has no distal neighbour: the host recomputes K_N
        # from K_{N-1} (link N-1 sends it the host too: [behaviours.neighbours] check_tip)
        # with the tolerance the tip's own check uses (None: no check)
        cfgs = getattr(sc, "agent_configs", None) or [{}, {}]
        tip_check = len(cfgs) > 1 and (cfgs[-2].get("neighbours") or {}).get("to_host")
        self.tip_tol = cfgs[-1]["neighbours"]["tol"] if tip_check else None
        self.tip_bad = 0      # ticks in a row K_N failed the check

    def frame(self, mtype, dst, values):
        f = m.encode(mtype, m.HOST, dst, self.seq, values)
        self.seq = (self.seq + 1) & 0xFFFF
        return f if self.signer is None else self.signer.sign(f)

    def begin(self, tick, t):
        """Open cycle `tick` at time t (s): SYNC to all, then K_0 to link 1 (`copies`
        identical frames: the kinematic bus's time redundancy)."""
        self.tick, self.t = tick, t
        self.asserts = []
        self.closed = False
        self.got = [False] * self.n
        self.n_got = 0
        self.ee = None
        self.k_pair = [None, None]   # this tick's K_{N-1} and K_N (check_tip)
        out, self.pending = self.pending, []
        return out + [self.frame(m.SYNC, m.BROADCAST, (tick,))] + [
            self.frame(m.KINEMATIC, 1, (tick,) + self.base_packet)] * self.copies

    def ping(self, fresh=True):
        """PING to every node: each answers STATUS (after the last tick: link health);
        `fresh` forgets the answers so far (False: asking again those that did not answer)."""
        if fresh:
            self.status = {}
        return self.frame(m.COMMAND, m.BROADCAST, (m.CMD_PING, 0.0))

    def status_missing(self, dead=False):
        """Links whose STATUS has not come: those whose process is not known gone (worth
        asking again), or with `dead` every one (summary.json nodes_missing)."""
        return [i for i in range(1, self.n + 1) if i not in self.status and (dead or i - 1 not in self.dead)]

    @property
    def complete(self):
        if self.n_team == 0:   # everyone dropped: the tick's torques are what re-admits them
            return False
        if self.dead:   # a link whose process is gone sends nothing: not waited for
            return self.n_got >= self.n_team - sum(1 for i in self.dead if self.member[i])
        return self.n_got >= self.n_team

    def end_tick(self):
        """After the tick: heartbeats. A member without a torque for drop_after ticks leaves
        the team (its motor driver has braked the joint by then)."""
        if self.n_team == self.n and self.n_got == self.n:
            self.silent[:] = 0
            return
        if not self.closed:
            return   # no goal went out: no torque was due
        if not any(self.got):
            return   # nobody answered: the goal was lost on the bus (the first ticks: no last goal)
        for i in range(self.n):
            self.silent[i] = 0 if self.got[i] else self.silent[i] + 1
            if self.member[i] and self.silent[i] >= self.drop_after:
                self.drop(i + 1, "silent for %d ticks" % self.silent[i])

    def drop(self, link, why):
        i = link - 1
        if self.member[i]:
            self.member[i] = False
            self.n_team -= 1
            self.heard[i] = 0
            self.events.append((self.t, link, "dropped: " + why))
            self.pending.append(self.frame(m.COMMAND, m.BROADCAST, (m.CMD_NODE_OUT, float(link))))

    def _heard(self, i, state):
        """A torque from a dropped link: re-admitted after `readmit` RUN ticks in a row."""
        self.heard[i] = self.heard[i] + 1 if state == RUN else 0
        if self.heard[i] >= self.readmit:
            self.q_tip = None
            self.member[i] = True
            self.n_team += 1
            self.events.append((self.t, i + 1, "re-admitted"))
            self.pending.append(self.frame(m.COMMAND, m.BROADCAST, (m.CMD_NODE_IN, float(i + 1))))

    def on_frame(self, frame):
        """Consume one frame addressed to the host; return the frames to send."""
        msg = self.decoder.decode(frame)
        if msg is None:
            return []
        mtype, src, dst, seq, v = msg
        if mtype == m.TORQUE:
            if 1 <= src <= self.n and v[0] == self.tick:
                i = src - 1
                self.torques[i] = v[1]
                self.states[i] = v[2]
                self.components[i] = v[3:9]
                if v[2] == RUN and self.member[i] and self.arbitration:
                    out = self.check_torque(src, v)
                    if out:
                        return out
                return self._took_torque(i, v[2])
            return []
        if mtype == m.KINEMATIC and v[0] == self.tick:
            out = []
            if self.tip_tol is not None and src >= self.n - 1 and self.member[self.n - 1]:
                out = self.check_tip(src, v)
            if self.closed:
                return out
            tip_in = self.member[self.n - 1]
            if src == self.n and tip_in:
                self.ee = self.ee_last = (v[1:5], v[5:8], v[8:11], v[11:14])   # plain floats: cheaper than numpy here
            elif not tip_in and self.ee_last is not None and (src == self.n - 1 or self.k_pair[0] is not None):
                # the tip is out: K_N from K_{N-1} (this K_N just failed check_tip: from the K_{N-1} it had)
                self.ee = self.ee_last = self.bridge_tip(v if src == self.n - 1 else self.k_pair[0])
            else:
                return out
            self.t_ee = self.t
            return out + self.close_cycle()
        if mtype == m.ASSERT and v[0] == self.tick:
            if self.closed:
                self.late_asserts += 1   # missed this cycle's rebroadcast
            else:
                self.asserts.append(v)
        elif mtype == m.STATUS:
            if self.signer is not None and src in self.status and len(v) > STATUS_REPLAY \
                    and v[STATUS_REPLAY] != self.status[src][STATUS_REPLAY]:
                # the node refused frames as replays: it restarted and takes only a block
                # it has not seen (firmware/auth.py), or someone replays; a new one either way
                self.signer.new_block()
            self.status[src] = v
            if 1 <= src <= self.n:
                self.fault_bits[src - 1] = v[2]
        elif mtype == m.COMMAND and v[0] == m.CMD_BRAKE and 1 <= v[1] <= self.n:
            # a link reports its neighbour computing wrongly (Hamilton's check): brake it
            link = int(v[1])
            self.events.append((self.t, link, "link %d reports it disagrees" % src))
            return self.brake_out(link, "braked on link %d's report" % src)
        elif mtype == m.ESTIMATE:
            self.estimates.append((self.t, v[0], v[1:]))
        elif mtype == m.LOG:
            self.logs.append((self.t, src, bytes(v[0]).decode("utf-8", "replace")))
            self.services.on_log(self.t, src, self.logs[-1][2])
        elif mtype == m.TIMING:
            self.services.on_timing(self.t, src, v)
        return []

    def _took_torque(self, i, state):
        """Link i's torque of this tick is in (re-admission counts a dropped link's)."""
        if not self.got[i]:
            self.got[i] = True
            if self.member[i]:
                self.n_got += 1
            else:
                self._heard(i, state)
                if self.member[i]:
                    self.n_got += 1
        return []

    def brake_out(self, link, why):
        """A link computes wrongly: brake it (COMMAND BRAKE, fault neighbour_disagrees) and
        drop it from the team (NODE_OUT with the next tick: its neighbours bridge it)."""
        self.drop(link, why)
        return [self.frame(m.COMMAND, link, (m.CMD_BRAKE, float(F_NEIGHBOUR_DISAGREES)))]

    def check_torque(self, link, v):
        """Hamilton's check applied to the torque, by the one party every TORQUE reaches:
        link's u against sat(sum k_j u_j) of the components it reports with it. A
        disagreement brakes and drops the link like a neighbour's report does."""
        kp, ka, kl, kj, u_sat = self.arbitration[link - 1]
        # written out (make bench: N of these a tick): the same operations in the same order
        t0, t1, t2, t3, t4 = kp * v[3], ka * v[4], kl * v[5], kj * v[6], v[7]
        u = behaviours.saturate(t0 + t1 + t2 + t3 + t4, u_sat)
        off = v[1] - u
        tol = TORQUE_TOL_ABS + TORQUE_TOL_REL * (abs(t0) + abs(t1) + abs(t2) + abs(t3) + abs(t4))
        if abs(off) <= tol < _INF:   # an infinite component would excuse any torque
            return []
        self.events.append((self.t, link, "host: link %d torque off by %.4g from its components" % (link, off)))
        return self.brake_out(link, "torque disagrees with its components")

    def check_tip(self, src, v):
        """Hamilton's round-robin check closed by the host: K_N against K_N recomputed from
        K_{N-1} with the joint value the two packets imply (firmware/neighbours.py mismatch),
        once both of the tick are in, whichever came first (copies: the first of each).
        Failed twice in a row: the tip is braked and dropped like a link its neighbour
        reports, and bridged from K_{N-1} from the next tick."""
        j = src - self.n + 1   # 0: K_{N-1}, 1: K_N
        if self.k_pair[j] is not None:
            return []
        self.k_pair[j] = v
        k0, k1 = self.k_pair
        if k0 is None or k1 is None:
            return []
        jt, dh = self.tip_dh
        e = neighbours.mismatch(jt, dh, k0, k1)[0]
        self.tip_bad = self.tip_bad + 1 if e > self.tip_tol else 0
        if self.tip_bad < 2:
            return []
        self.tip_bad = 0
        self.events.append((self.t, self.n, "host: K_%d off by %.4g from K_%d" % (self.n, e, self.n - 1)))
        return self.brake_out(self.n, "K_N disagrees with K_N-1")

    def tip_gone(self):
        """The tip's process is known gone (processes mode): nobody would bridge this tick's
        K_N, so drop it now; -> NODE_OUT, to go ahead of the tick's SYNC."""
        if self.n < 2 or self.n - 1 not in self.dead or not self.member[self.n - 1]:
            return []
        self.drop(self.n, "process exited")
        out, self.pending = self.pending, []
        return out

    def bridge_tip(self, k):
        """K_N from K_{N-1} = k with joint N locked (qd = 0) at the angle its last K_N and
        the first K_{N-1} after it left the team imply (firmware/neighbours.py)."""
        jt, dh = self.tip_dh
        if self.q_tip is None:
            self.events.append((self.t, self.n, "bridged by the host"))
            quat, p, v, w = self.ee_last
            k_n = (k[0],) + tuple(quat) + tuple(p) + tuple(v) + tuple(w)
            self.q_tip = neighbours.joint_from_packets(jt, dh, k, k_n)[0]
        return neighbours.compose_link(jt, dh, self.q_tip, 0.0, k[1:5], k[5:8], k[8:11], k[11:14])

    def close_stale(self):
        """No K_N this tick (lost on the bus): the goal from the last one, so the agents
        still get a goal. [] if there is none, or the cycle is closed."""
        if self.closed or self.ee_last is None:
            return []
        quat, p, v, w = self.ee_last   # moved on at its velocity since it came
        dt = self.t - self.t_ee
        self.ee = (quat, [p[i] + v[i] * dt for i in range(3)], v, w)
        self.stale_ee += 1
        return self.close_cycle()

    def prepare(self):
        """The part of the goal that needs no feedback: this tick's trajectory sample and
        RMDAC reference signals (x_d, xd_d, xdd_d). A runner calls it while the kinematic
        wave runs, so that K_N -> GOAL is only the feedback part; close_cycle() calls it
        if nobody did (and on the first tick, when the trajectory starts at K_N)."""
        self.services.open_tick(self.tick)   # a runner calls this as the tick's frames are out
        if self.traj is None:
            return
        d = self.traj.sample(self.t)
        if self.planar:   # plain floats, the same doubles: numpy scalars cost a call an operation
            ref = d.planar_reference()
        else:
            ref = (list(d.p) + list(tr.qlog(d.quat)), list(d.v) + list(d.w), list(d.a) + list(d.wd))
        self._ref = (self.tick, d, ref)

    def close_cycle(self):
        """K_N is in: RMDAC -> G = (p_n, f); assertions are rebroadcast first."""
        quat, p, v, w = self.ee
        if self.traj is None:
            self.traj = tr.Trajectory(self.sc.knots, p, quat, self.planar)
        if self._ref is None or self._ref[0] != self.tick:
            self.prepare()
        _, d, (x_d, xd_d, xdd_d) = self._ref
        self.desired = d
        e_rot = tr.orientation_error(d, quat, self.planar)
        if self.planar:   # task coordinates (x, y, rot z)
            e = [x_d[0] - p[0], x_d[1] - p[1], e_rot]
            xdot = (v[0], v[1], w[2])
        else:             # (x, y, z, rx, ry, rz)
            e = [x_d[0] - p[0], x_d[1] - p[1], x_d[2] - p[2]] + [float(x) for x in e_rot]
            xdot = tuple(v) + tuple(w)
        ed = [a - b for a, b in zip(xd_d, xdot)]
        dt = 0.0 if self.t_prev is None else self.t - self.t_prev
        self.t_prev = self.t
        fj = self.rmdac.update(dt, x_d, xd_d, xdd_d, e, ed)
        f = (fj[0], fj[1], 0.0, 0.0, 0.0, fj[2]) if self.planar else tuple(fj)
        self.error = np.array(e)
        self.goal = (p, np.array(f))
        self.closed = True
        out = [self.frame(m.ASSERT, m.BROADCAST, a) for a in self.asserts]
        out.append(self.frame(m.GOAL, m.BROADCAST, (self.tick, 0) + tuple(p) + f))
        return out
