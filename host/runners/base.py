"""The control loop every runner shares (DESIGN 6): per tick, sense the plant, let the
bus carry one cycle, apply the torques, advance the plant to the next tick. A runner
supplies `exchange(frames, deadline)` which delivers the host's frames to the agents
and feeds every frame addressed to the host back through `GoalProcess.on_frame`."""
import time
import traceback

import numpy as np

from host.goal_process import GoalProcess
from host.logs import Recorder
from host.trajectory import Trajectory, orientation_error, quat_from_matrix
from sim_host.plant import Plant
from sim_host.virtual_hw import VirtualHardware


class Aborted(Exception):
    pass


def obstacle_paths(sc):
    """Knot-point paths of the obstacles (same blend as the end effector)."""
    paths = []
    for ob in sc.obstacles:
        paths.append(Trajectory(ob["knot"], ob["position"], [1, 0, 0, 0], True) if ob["knot"] else None)
    return paths


class ControlLoop:
    def __init__(self, sc, mode, clock="synthetic"):
        self.sc = sc
        self.mode = mode
        self.clock = clock
        obstacles = [{"name": o["name"], "radius": o["radius"], "pos": list(o["position"])} for o in sc.obstacles]
        self.plant = Plant(sc.arm, obstacles, timestep=sc.timestep)
        clearances = [b["rmoa"]["clearance"] for b in sc.behaviours if "rmoa" in b]
        self.hw = VirtualHardware(self.plant, max(clearances) if clearances else 0.0)
        self.gp = GoalProcess(sc)
        self.paths = obstacle_paths(sc)
        self.rec = Recorder(sc.n)
        self.missed_cycles = 0
        self.late = False         # this tick's torques missed their deadline
        self.deadline = None      # wall clock: perf_counter() time by which this tick's torques are due
        self.late_start = 0       # wall clock: ticks the host itself opened over host_late_s late
        self.host_late_s = 0.001
        self.host_lag_max = 0.0   # wall clock: the longest the host opened a tick late (s)
        self.tick_paused = 0.0    # wall clock: VM pause the exchange absorbed in this tick (s)
        self.paused_ticks = 0     # wall clock: ticks whose deadline moved for such a pause
        self.paused_total = 0.0   # ... and by how much in all (s)
        self.patience_expired = {}   # link -> cycles its torque was not in within the patience
        self.status = "ok"
        self.reason = ""
        self.traceback = ""

    def tick_steps(self):
        """Plant step index of every control tick: ticks fall on the plant's time grid."""
        period = 1.0 / self.sc.control_rate_hz
        total = int(round(self.sc.duration / self.sc.timestep))
        k = 0
        while True:
            s = int(round(k * period / self.sc.timestep))
            if s > total:
                return
            yield k, s
            k += 1

    def run(self, exchange, progress=None):
        sc, plant, gp = self.sc, self.plant, self.gp
        start = wall0 = time.perf_counter()
        steps = list(self.tick_steps())
        wall = self.clock == "wall"
        try:
            for j, (k, s) in enumerate(steps):
                t = s * sc.timestep
                for i, path in enumerate(self.paths):
                    if path is not None:
                        plant.set_obstacle_position(i, path.sample(t).p)
                frames = self.hw.sense_frames(k) + gp.begin(k, t)
                if wall:   # real time: tick k opens at t (frames ready), its torques are due at the next tick
                    if j == 0:
                        start = wall0 = time.perf_counter()
                    lag = wall0 + t - time.perf_counter()
                    if lag > 0:
                        time.sleep(lag)
                        lag = wall0 + t - time.perf_counter()   # below 0: it woke late
                        if lag > -self.host_late_s:
                            lag = 0.0
                    if lag < 0:   # the simulator itself opens the tick late (plant step, a stall
                        # of the host process, also one that keeps it from waking on time): the
                        # simulated world waits for it, so the schedule moves and the bus keeps
                        # its whole period; counted apart from missed cycles. (A wake-up late
                        # by under host_late_s only shortens the period by that much.)
                        wall0 -= lag
                        if -lag > self.host_late_s:
                            self.late_start += 1
                        self.host_lag_max = max(self.host_lag_max, -lag)
                    t_next = steps[j + 1][1] * sc.timestep if j + 1 < len(steps) else t + 1.0 / sc.control_rate_hz
                    self.deadline = wall0 + t_next
                exchange(frames, k)
                if self.tick_paused:   # a hypervisor pause (runners/vm_pause): the schedule moves
                    wall0 += self.tick_paused
                    self.paused_ticks += 1
                    self.paused_total += self.tick_paused
                    self.tick_paused = 0.0
                self.late = not gp.complete
                if self.late:
                    self.missed_cycles += 1   # late torque: the previous one is held
                self.record(k, t)
                self.hw.apply(gp.torques, gp.states)
                if j + 1 < len(steps):
                    plant.step(steps[j + 1][1] - s)
                if progress:
                    progress(t, sc.duration)
        except Aborted as e:
            self.status, self.reason = "aborted", str(e)
        except KeyboardInterrupt:
            self.status, self.reason = "aborted", "interrupted (Ctrl-C)"
        except Exception as e:  # a run that aborts still leaves its log and the reason
            self.status, self.reason = "aborted", "%s: %s" % (type(e).__name__, e)
            self.traceback = traceback.format_exc()
        self.wall_seconds = time.perf_counter() - start
        return self.status

    def patience_ran_out(self, missing):
        """A synthetic-clock cycle waited the scenario's patience for `missing` links:
        count it; True if the cycle goes on with their last torques held (on_patience
        = "hold"), False if the run aborts."""
        for link in missing:
            self.patience_expired[link] = self.patience_expired.get(link, 0) + 1
        return self.sc.on_patience == "hold"

    def record(self, k, t):
        gp, plant = self.gp, self.plant
        q, qd = plant.joint_state()
        R, p = plant.frames()
        if gp.desired is None:   # no K_N yet: the trajectory starts at the first one
            if t >= 1.0:
                raise Aborted("no end-effector packet reached the host in the first %.1f s" % t)
            return
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            raise Aborted("plant state is not finite at t=%.3f s" % t)
        d = gp.desired
        e_p = d.p - p[-1]
        e_phi = orientation_error(d, quat_from_matrix(R[-1]), gp.planar)
        if not gp.planar:
            e_phi = float(np.linalg.norm(e_phi))
        ranges = self.hw.last_ranges
        rho = np.array([np.nan if r is None else r[2] for r in ranges])
        self.rec.add(t=t, p_d=d.p, p=p[-1], e_phi=e_phi, q=q, qd=qd, u=gp.torques.copy(),
                     comp=gp.components.copy(), f=gp.goal[1], frames=p, state=gp.states.copy(), rho=rho,
                     contacts=len(plant.contacts()), late=float(self.late))
        if np.linalg.norm(e_p) > self.sc.divergence_m:
            raise Aborted("diverged: end-effector error %.3f m > %.3f m at t=%.3f s"
                          % (np.linalg.norm(e_p), self.sc.divergence_m, t))

