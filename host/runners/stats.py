"""The record of one run besides its time series: every figure a runner measures, under
the name it carries in summary.json (host/run.py writes summary() as it is)."""
import numpy as np


def spread(samples, keys=("p50", "p99", "max")):
    """p50/p99/max (or p50/min) of a list of samples, or None when there are none."""
    if not samples:
        return None
    a = np.sort(np.asarray(samples, dtype=float))
    pick = {"p50": lambda: np.percentile(a, 50), "p99": lambda: np.percentile(a, 99),
            "max": lambda: a[-1], "min": lambda: a[0]}
    return {k: float(pick[k]()) for k in keys}


# a run's status (summary.json "status"): "ok" (it ran to its end, every link in the team
# and running), "degraded" (it ran to its end with a link braked, held, damped or out of
# the team: summary.json "degraded" names them and why, host/run.py) or "aborted" (with
# the reason). FINISHED: the statuses of a run that went to its end.
FINISHED = ("ok", "degraded")


def finished(summary):
    """The run went to its end (its figures cover the whole scenario)."""
    return summary.get("status") in FINISHED


class RunStats:
    def __init__(self):
        self.clock = "synthetic"     # "wall" when ticks follow the wall clock
        self.status = "ok"           # or "aborted", with the reason (and a traceback for the log);
                                     # host/run.py makes a finished run "degraded" (FINISHED)
        self.reason = ""
        self.traceback = ""
        self.wall_seconds = 0.0
        self.cpu_seconds = 0.0       # this process's CPU time over the same loop (beside wall_seconds:
                                     # how far other jobs on the machine stretched the run)
        self.missed_cycles = 0       # wall clock: ticks whose torques were not all in by the deadline
        # wall clock: the schedule (runners/wallclock.Schedule)
        self.late_host_ticks = 0     # ticks the host itself opened over 1 ms late
        self.host_lag_max_ms = 0.0   # the latest it opened one
        self.vm_pauses = None        # desktop sentinels: {count, total_ms, ticks_moved, moved_ms}
        # wall clock: the exchange (runners/wallclock.Exchange), per tick in ms
        self.bus_cycle_ms = []       # frames out until the last torque is in
        self.goal_sent_ms = []       # frames out until the goal left the host (kinematic wave + RMDAC)
        self.tick_budget_ms = []     # frames out until the deadline
        self.late_cycles = []        # what each late tick was waiting for (first 50)
        # the bus and the machine (runners other than in-process)
        self.bus = None
        self.baud = None
        self.topology = None
        self.cpu_latency_qos = None
        self.cpu_us_per_tick = None
        self.figures_from = None     # HIL: which figures come from the boards, which from the host's model
        self.node_ready = []         # (link, text) of every node's `ready` line
        self.node_logs = ""          # what the node processes printed
        self.grouping = None         # processes: links per node process, Fernández's notation (p2a55)
        self.boards = None           # boards: instructions per node and phase, control rates (runners/boards.py)
        # synthetic clock: how long a tick waits for its torques, what then, and how often it
        # ran out per link: {patience_s, on_patience, expired} (NYMPH's synch_wait patience)
        self.patience = None
        self.cores = None            # in-process: the core each link's agent ran on (inprocess.core_name)

    def wait_with_patience(self, sc):
        """The exchange waits for a tick's torques at most sc.patience_s (synthetic clock)."""
        self.patience = {"patience_s": sc.patience_s, "on_patience": sc.on_patience, "expired": {}}
        return sc.patience_s

    def patience_ran_out(self, missing):
        """A tick waited its patience for the `missing` links: count it; True if the tick
        goes on with their last torques held (on_patience "hold"), False to abort."""
        if self.patience is None:
            return False
        expired = self.patience["expired"]
        for link in missing:
            expired[str(link)] = expired.get(str(link), 0) + 1
        return self.patience["on_patience"] == "hold"

    def abort(self, reason, traceback=""):
        self.status, self.reason, self.traceback = "aborted", reason, traceback

    def summary(self):
        """The summary.json fields of this record (those a mode does not have are left out)."""
        out = {"clock": self.clock, "wall_seconds": self.wall_seconds, "cpu_seconds": self.cpu_seconds,
               "missed_cycles": self.missed_cycles if self.clock == "wall" else 0,
               "status": self.status, "reason": self.reason}
        if self.clock == "wall":
            out["late_host_ticks"] = self.late_host_ticks
            out["host_lag_max_ms"] = self.host_lag_max_ms
        for name in ("bus", "baud", "topology", "cpu_latency_qos", "cpu_us_per_tick", "vm_pauses", "figures_from",
                     "grouping", "patience", "boards", "cores"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        for name in ("bus_cycle_ms", "goal_sent_ms"):
            if getattr(self, name):
                out[name] = spread(getattr(self, name))
        if self.tick_budget_ms:
            out["tick_budget_ms"] = spread(self.tick_budget_ms, ("p50", "min"))
        if self.late_cycles:
            out["late_cycles"] = self.late_cycles
        return out
