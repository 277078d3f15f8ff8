"""The control loop every runner shares (docs/design.md §6): per tick, sense the plant, let the
bus carry one cycle, apply the torques, advance the plant to the next tick. A runner
supplies `exchange(frames, k, deadline)` which delivers the host's frames to the agents
and feeds every frame addressed to the host back through `HostController.on_frame`."""
import math
import time
import traceback

import numpy as np

from host.controller import SILENT, HostController
from host.report.run_dir import Recorder
from host.tools.keys import RunAuth
from host.runners.stats import RunStats
from host.trajectory import Trajectory, orientation_error, quat_from_matrix
from sim_host.fault_injection import FaultSet
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
    """One run of scenario `sc`: plant, virtual hardware, host controller and recorder;
    run() drives it tick by tick and fills `stats` (runners/stats.RunStats)."""

    def __init__(self, sc, mode):
        self.sc = sc
        self.mode = mode
        obstacles = [{"name": o["name"], "radius": o["radius"], "pos": list(o["position"])} for o in sc.obstacles]
        self.plant = Plant(sc.arm, obstacles, timestep=sc.timestep)
        clearances = [b["rmoa"]["clearance"] for b in sc.behaviours if "rmoa" in b]
        self.hw = VirtualHardware(self.plant, max(clearances) if clearances else 0.0)
        self.gp = HostController(sc)
        self.auth = RunAuth(getattr(sc, "auth", "on"), getattr(sc, "key_file", None))
        self.gp.signer = self.auth.signer
        self.faults = FaultSet(sc.faults)
        self.paths = obstacle_paths(sc)
        self.rec = Recorder(sc.n)
        self.stats = RunStats()
        self.late = False         # this tick's torques missed their deadline
        self.interrupted = False  # set by a signal handler (host/report/run_dir.RunDir): stop at the next tick

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

    def run(self, exchange, progress=None, schedule=None):
        """Every tick: obstacles to their places, the tick's frames out, exchange(frames, k,
        deadline) carries the bus cycle, the torques go to the plant, which steps to the
        next tick. Without a `schedule` (runners/wallclock.Schedule) the clock is
        synthetic: no deadline, the exchange waits for every torque. -> self.stats"""
        sc, plant, gp, stats = self.sc, self.plant, self.gp, self.stats
        now = schedule.now if schedule else time.perf_counter
        # the ticks as the run goes, each with the next one's plant step (None after the
        # last): memory does not grow with the scenario's duration
        steps = self.tick_steps()
        ahead = next(steps, None)
        start, cpu = now(), time.process_time()
        try:
            j = -1
            while ahead is not None:
                (k, s), ahead = ahead, next(steps, None)
                j += 1
                if self.interrupted:
                    raise KeyboardInterrupt
                t = s * sc.timestep
                for i, path in enumerate(self.paths):
                    if path is not None:
                        plant.set_obstacle_position(i, path.sample(t).p)
                self.t = t
                sensed = self.hw.sense_frames(k)
                if self.faults:
                    sensed = self.faults.sense(t, sensed)
                frames = sensed + gp.begin(k, t)
                deadline = None
                if schedule:   # real time: tick k opens at t, its torques are due at the next tick
                    t_next = ahead[1] * sc.timestep if ahead is not None else t + 1.0 / sc.control_rate_hz
                    deadline = schedule.open(t, t_next)
                    if j == 0:
                        start, cpu = now(), time.process_time()
                paused = exchange(frames, k, deadline)
                if paused:   # a hypervisor pause the deadline absorbed (runners/desktop)
                    schedule.move(paused)
                self.late = not gp.complete
                if self.late:
                    stats.missed_cycles += 1   # late torque: the previous one is held
                gp.end_tick()
                self.record(k, t)
                torques = self.faults.motor(t, gp.torques) if self.faults else gp.torques
                self.hw.apply(torques, gp.states, gp.silent, gp.drop_after,
                              self.faults.locked(t) if self.faults else ())
                if ahead is not None:
                    plant.step(ahead[1] - s)
                if progress:
                    progress(t, sc.duration)
        except Aborted as e:
            stats.abort(str(e))
        except KeyboardInterrupt:
            stats.abort("interrupted (Ctrl-C)")
        except Exception as e:  # a run that aborts still leaves its log and the reason
            stats.abort("%s: %s" % (type(e).__name__, e), traceback.format_exc())
        stats.wall_seconds = now() - start
        stats.cpu_seconds = time.process_time() - cpu
        return stats

    def record(self, k, t):
        gp, plant = self.gp, self.plant
        if gp.desired is None:   # no K_N yet: the trajectory starts at the first one
            if t >= 1.0:
                raise Aborted("no end-effector packet reached the host in the first %.1f s" % t)
            return
        # the plant's own arrays, not copies: the recorder copies every row (make bench:
        # copies and numpy's per-call cost were most of the recording, itself 1/8 of a run)
        q, qd = plant.data.qpos, plant.data.qvel
        R, p = plant.frames(copy=False)
        # a finite sum has finite terms (numpy's isfinite: 2 calls of several us a vector)
        if not math.isfinite(sum(q.tolist()) + sum(qd.tolist())) and not (
                np.isfinite(q).all() and np.isfinite(qd).all()):   # not an overflow of the sum
            raise Aborted("plant state is not finite at t=%.3f s" % t)
        d = gp.desired
        p_ee = p[-1]
        e_phi = orientation_error(d, quat_from_matrix(R[-1]).tolist(), gp.planar)   # floats: the same doubles
        if not gp.planar:
            e_phi = float(np.linalg.norm(e_phi))
        rho = [math.nan if r is None else r[2] for r in self.hw.last_ranges]
        # a link's state as its torque reported it; SILENT (-1) in a tick whose goal went
        # out and no torque of its came (dead, silent, its goal lost): its driver brakes
        # it after driver_timeout_ticks. member: in the host's team (1) or dropped (0).
        # The recorder copies every row: the host controller's arrays go in as they are.
        state = gp.states
        if gp.closed and not all(gp.got):
            state = np.where(gp.got, gp.states, SILENT)
        # faults: each link's latched fault bits as its last STATUS gave them; gains:
        # RMDAC's adaptive gains k (6.206), one row per task coordinate; host_bus: the host
        # controller's counters (run_dir.HOST_BUS) as they stand after this tick
        self.rec.add(t=t, p_d=d.p, p=p_ee, e_phi=e_phi, q=q, qd=qd, u=gp.torques,
                     comp=gp.components, f=gp.goal[1], frames=p, state=state, member=gp.member, rho=rho,
                     contacts=len(plant.contacts()), late=float(self.late), faults=gp.fault_bits,
                     gains=gp.rmdac.k, host_bus=(gp.decoder.good, gp.decoder.bad, gp.late_asserts))
        e = math.dist(d.p.tolist(), p_ee.tolist())   # np.linalg.norm(d.p - p_ee), without numpy's calls
        if e > self.sc.divergence_m:
            raise Aborted("diverged: end-effector error %.3f m > %.3f m at t=%.3f s"
                          % (e, self.sc.divergence_m, t))
