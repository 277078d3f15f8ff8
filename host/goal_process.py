"""The host's part of one control cycle (docs/design.md §6), independent of the transport:
it opens the cycle (SYNC, base packet K_0), turns the end-effector packet K_N into the
global goal with RMDAC, rebroadcasts the agents' assertions ahead of the goal, and
collects the torques. Runners only move the bytes this produces and consumes."""

import numpy as np

from bus_protocol import messages as m
from host import trajectory as tr
from host.rmdac import RMDAC, coordinate_gains
from host.services import HostServices


class GoalProcess:
    def __init__(self, sc):
        self.sc = sc
        self.n = sc.n
        self.planar = sc.task == "planar"
        self.rmdac = RMDAC(coordinate_gains(sc.rmdac, sc.task))
        self.decoder = m.Decoder()
        self.seq = 0
        self.traj = None
        base = sc.arm["base"]
        self.base_packet = tuple(base["quat"]) + tuple(base["pos"]) + (0.0,) * 6
        self.tick = -1
        self.t = 0.0
        self.t_prev = None
        self.asserts = []
        self.torques = np.zeros(self.n)
        self.components = np.zeros((self.n, 6))
        self.states = np.zeros(self.n, dtype=int)
        self.got = np.zeros(self.n, dtype=bool)
        self.n_got = 0        # torques in this tick (complete is polled on every frame)
        self.status = {}      # link -> its last STATUS values (link health)
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

    def frame(self, mtype, dst, values):
        f = m.encode(mtype, m.HOST, dst, self.seq, values)
        self.seq = (self.seq + 1) & 0xFFFF
        return f

    def begin(self, tick, t):
        """Open cycle `tick` at time t (s): SYNC to all, then K_0 to link 1."""
        self.tick, self.t = tick, t
        self.asserts = []
        self.closed = False
        self.got[:] = False
        self.n_got = 0
        self.ee = None
        return [self.frame(m.SYNC, m.BROADCAST, (tick,)),
                self.frame(m.KINEMATIC, 1, (tick,) + self.base_packet)]

    def ping(self):
        """PING to every node: each answers STATUS (after the last tick: link health)."""
        self.status = {}
        return self.frame(m.COMMAND, m.BROADCAST, (m.CMD_PING, 0.0))

    @property
    def complete(self):
        return self.n_got == self.n

    def on_frame(self, frame):
        """Consume one frame addressed to the host; return the frames to send."""
        msg = self.decoder.decode(frame)
        if msg is None:
            return []
        mtype, src, dst, seq, v = msg
        if mtype == m.KINEMATIC and src == self.n and v[0] == self.tick:
            self.ee = (v[1:5], v[5:8], v[8:11], v[11:14])   # plain floats: cheaper than numpy here
            return self.close_cycle()
        if mtype == m.ASSERT and v[0] == self.tick:
            if self.closed:
                self.late_asserts += 1   # missed this cycle's rebroadcast
            else:
                self.asserts.append(v)
        elif mtype == m.TORQUE and 1 <= src <= self.n and v[0] == self.tick:
            i = src - 1
            self.torques[i] = v[1]
            self.states[i] = v[2]
            self.components[i] = v[3:9]
            if not self.got[i]:
                self.got[i] = True
                self.n_got += 1
        elif mtype == m.STATUS:
            self.status[src] = v
        elif mtype == m.ESTIMATE:
            self.estimates.append((self.t, v[0], v[1:]))
        elif mtype == m.LOG:
            self.logs.append((self.t, src, bytes(v[0]).decode("utf-8", "replace")))
            self.services.on_log(self.t, src, self.logs[-1][2])
        elif mtype == m.TIMING:
            self.services.on_timing(self.t, src, v)
        return []

    def prepare(self):
        """The part of the goal that needs no feedback: this tick's trajectory sample and
        RMDAC reference signals (x_d, xd_d, xdd_d). A runner calls it while the kinematic
        wave runs, so that K_N -> GOAL is only the feedback part; close_cycle() calls it
        if nobody did (and on the first tick, when the trajectory starts at K_N)."""
        self.services.open_tick(self.tick)   # a runner calls this as the tick's frames are out
        if self.traj is None:
            return
        d = self.traj.sample(self.t)
        if self.planar:
            ref = ([d.p[0], d.p[1], d.angle], [d.v[0], d.v[1], d.w[2]], [d.a[0], d.a[1], d.wd[2]])
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
        out.append(self.frame(m.GOAL, m.BROADCAST, (self.tick, 0) + tuple(float(x) for x in p) + f))
        return out
