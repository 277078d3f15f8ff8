# Fail-safe triggers (docs/design.md §5 "Fail-safe brake", 7.271-7.273); the agent states and
# fault bits they set are bus_protocol.states.
from bus_protocol.states import (BRAKED, F_COMMAND, F_CONFIG, F_ENCODER_JUMP,  # noqa: F401
                                 F_LOST_BUS, F_OVERSPEED, F_SENSOR, F_STALL, INIT, RUN)


class Safety:
    """Watchdog and plausibility checks. A fault latches BRAKED; `release()` clears it
    (a COMMAND from the host), or, with readmit_cycles > 0, a lost-bus fault clears by
    itself after that many consecutive good goals (re-admission, Hamilton et al.)."""

    def __init__(self, cfg):
        self.watchdog_cycles = cfg.get("watchdog_cycles", 3)
        self.watchdog_ms = cfg.get("watchdog_ms", 50)   # silent bus: no SYNC at all
        self.max_q_step = cfg.get("max_q_step", 0.5)
        self.qd_max = cfg.get("qd_max", 50.0)
        self.stall_u = cfg.get("stall_u", 0.0)      # 0 disables the stall trigger
        self.stall_qd = cfg.get("stall_qd", 1e-3)
        self.stall_cycles = cfg.get("stall_cycles", 60)
        self.readmit_cycles = cfg.get("readmit_cycles", 0)
        self.faults = 0
        self.state = INIT
        self.last_goal_tick = -1
        self._stalled = 0
        self._good = 0
        self._q_prev = None

    def trip(self, bit):
        self.faults |= bit
        self.state = BRAKED

    def release(self):
        self.faults = 0
        self._stalled = 0
        self._good = 0
        self.state = INIT   # the watchdog restarts at the next sample

    def on_sample(self, tick, q, qd):
        """Called once per cycle after sensing: watchdog and sensor plausibility."""
        if self.state == INIT:
            self.state = RUN
            self.last_goal_tick = tick
        if tick - self.last_goal_tick > self.watchdog_cycles:
            self.trip(F_LOST_BUS)
            self._good = 0
        if self._q_prev is not None and abs(q - self._q_prev) > self.max_q_step:
            self.trip(F_ENCODER_JUMP)
        self._q_prev = q
        if abs(qd) > self.qd_max:
            self.trip(F_OVERSPEED)

    def on_goal(self, tick):
        self.last_goal_tick = tick
        if self.faults == F_LOST_BUS and self.readmit_cycles > 0:
            self._good += 1
            if self._good >= self.readmit_cycles:
                self.release()

    def on_torque(self, u, qd):
        """Poor motor performance: torque commanded, no motion, for stall_cycles."""
        if self.stall_u <= 0.0:
            return
        if abs(u) > self.stall_u and abs(qd) < self.stall_qd:
            self._stalled += 1
            if self._stalled >= self.stall_cycles:
                self.trip(F_STALL)
        else:
            self._stalled = 0
