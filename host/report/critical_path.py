"""The critical path of a processes or HIL run (NYMPH, docs/design.md §11), from every
node's completion history (TIMING frames, firmware/services.py): per node and cycle, µs
from its SYNC to its TORQUE, and its clock when it finished. Where the nodes share the
host's clock (processes mode: CLOCK_MONOTONIC of one machine) the finish is taken from
the tick's opening on that one clock; elsewhere (boards) from each node's own SYNC, which
reaches link i a few hops after link 1, so that measure ranks base-ward nodes late by the
SYNC's ripple. The node that finished last closed the cycle; a node's slack is how much
earlier it finished. Per-node per-cycle finish times go to critical_path.npz (the run's
timing series, apart from timeseries.npz, the plant's record that a lockstep run shares
with an in-process one), and critical_path.png shows the node last in each cycle, the slack per node and how often
each node was last."""
import numpy as np


def matrix(times, n):
    """{(tick, link): us} -> (ticks, T) with T[k, i] the time of link i+1 (NaN: none)."""
    if not times:
        return np.zeros(0, dtype=int), np.zeros((0, n))
    ticks = np.array(sorted({k for k, _ in times}))
    row = {t: j for j, t in enumerate(ticks)}
    T = np.full((len(ticks), n), np.nan)
    for (k, link), us in times.items():
        if 1 <= link <= n:
            T[row[k], link - 1] = us
    return ticks, T


def _measure(services):
    """The finish times to rank nodes by, and what they are measured from."""
    if services.finish_common:
        return services.finish_common, "tick opening (host clock)"
    return services.finish, "own SYNC (node clock)"


def _complete(times, n):
    ticks, T = matrix(times, n)
    ok = ~np.isnan(T).any(axis=1) if len(T) else np.zeros(0, dtype=bool)
    return ticks[ok], T[ok], len(T)


def summarise(services, n):
    """summary.json `critical_path`: over the cycles every node reported, the node most
    often last, how often each was, each node's finish time and slack (µs)."""
    times, since = _measure(services)
    _, full, total = _complete(times, n)
    if not len(full):
        return {"cycles": 0}
    counts = np.bincount(np.argmax(full, axis=1), minlength=n)
    top = int(np.argmax(counts))
    slack = full.max(axis=1, keepdims=True) - full
    out = {"finish_from": since, "cycles": int(len(full)), "cycles_incomplete": int(total - len(full)),
           "node_most_often": top + 1, "share": round(float(counts[top]) / len(full), 4),
           "times_critical": [int(c) for c in counts],
           "finish_us_p50": [round(float(x), 1) for x in np.percentile(full, 50, axis=0)],
           "finish_us_p99": [round(float(x), 1) for x in np.percentile(full, 99, axis=0)],
           "slack_us_p50": [round(float(x), 1) for x in np.percentile(slack, 50, axis=0)]}
    _, own, _ = _complete(services.finish, n)
    if len(own) and times is not services.finish:
        out["sync_to_torque_us_p50"] = [round(float(x), 1) for x in np.percentile(own, 50, axis=0)]
    return out


def save(services, n, out_dir):
    """critical_path.npz: finish_tick, finish_us (from the node's SYNC) and, with a shared
    clock, finish_common_tick, finish_common_us (from the tick's opening)."""
    out = dict(zip(("finish_tick", "finish_us"), matrix(services.finish, n)))
    if services.finish_common:
        out["finish_common_tick"], out["finish_common_us"] = matrix(services.finish_common, n)
    np.savez_compressed(out_dir / "critical_path.npz", **out)


def plot(services, n, out_dir, title):
    import matplotlib.pyplot as plt
    from host.report.plots import _save
    times, since = _measure(services)
    ticks, full, _ = _complete(times, n)
    last = np.argmax(full, axis=1) + 1
    fig, axes = plt.subplots(3, 1, figsize=(8, 9.5))
    ax = axes[0]
    ax.plot(ticks, last, ".", ms=2)
    ax.set_xlabel("cycle")
    ax.set_ylabel("node that finished last")
    ax.set_yticks(range(1, n + 1))
    ax.set_title("%s: critical path (finish measured from the %s)" % (title, since))
    ax = axes[1]
    slack = full.max(axis=1, keepdims=True) - full
    ax.boxplot([slack[:, i] for i in range(n)], showfliers=False)
    ax.set_xticks(range(1, n + 1), [str(i) for i in range(1, n + 1)])
    ax.set_xlabel("node (link)")
    ax.set_ylabel("slack (µs)")
    ax = axes[2]
    ax.bar(range(1, n + 1), np.bincount(last - 1, minlength=n))
    ax.set_xticks(range(1, n + 1))
    ax.set_xlabel("node (link)")
    ax.set_ylabel("cycles it finished last")
    return _save(fig, out_dir / "critical_path.png")
