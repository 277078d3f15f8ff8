# Board entry: a board's boot main.py does `from firmware import main; main.run()`.
# Reads the link's config JSON (host/scenario/loader.py agent_configs[i] plus "board" and
# "bus" settings), builds board, agent and node, then loops: move frames, else block.
import gc
import json
import sys
import time

from firmware import auth, boards, safety
from firmware.agent import LinkAgent
from firmware.hal import const, ticks_diff


# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
I_TICK = const(0)
I_ACTED = const(3)
# ---- end of layout ----

VERSION = "0.1.0"


def load_config(path):
    with open(path) as f:
        return json.load(f)


def build(cfg):
    board = boards.make_board(cfg)
    agent = LinkAgent(cfg, board.hal)
    auth.guard(agent, cfg)   # host commands checked before the agent sees them
    node = board.node(agent)
    return board, agent, node


def run(path="/config.json", idle_exit_ms=0):
    """Run the link agent (a group's: several) until the bus goes away (or idle_exit_ms
    without a frame); -> the agent (a group's agents). `path`: its config JSON's, or the
    config itself (a dict)."""
    cfg = load_config(path) if isinstance(path, str) else path
    idle_exit_ms = int(cfg.get("idle_exit_ms", idle_exit_ms))
    if "group" in cfg:   # a node hosting several links (firmware/group.py)
        from firmware import group
        board = group.GroupBoard(cfg)
        agents = board.agents
        poll = board.poll
        where = " (node of links %d-%d)" % (agents[0].link, agents[-1].link)
    else:
        board, agent, node = build(cfg)
        agents = [agent]
        poll = node.poll
        where = ""
    for a in agents:
        a.log("ready link %d fw %s board %s%s" % (a.link, VERSION, board.name, where))
        if cfg.get("console_ready"):   # a flashed board: the boot line `linkteam flash` waits for
            print("linkteam ready link %d fw %s board %s" % (a.link, VERSION, board.name))
    serve(board, agents, poll, cfg, idle_exit_ms, getattr(board, "ticks_ms", None))
    return agents if "group" in cfg else agents[0]


def _acted(agents, t):
    """Every agent's torque of tick t went out."""
    for a in agents:
        if a.I[I_ACTED] != t:
            return False
    return True


def _refused(agents):
    """The frames the agents' auth checks have refused so far."""
    r = 0
    for a in agents:
        g = a.auth
        if g is not None:
            for c in g.rejected:
                r += c
    return r


def _timeouts(cfg):
    """(gc_every, quiet, goal_quiet) of the node's config."""
    # collect every gc_every cycles, right after the cycle's TORQUE went out, so a
    # collection never lands between K_{i-1} and K_i or the goal and the torque; a
    # collection costs about the same however much garbage there is (mark ~ live data),
    # and 8 cycles x ~11 KB fit a board's heap (bench: make bench)
    gc_every = int(cfg.get("gc_every", 8))
    # how long a node waits for its K_{i-1} before it bridges it (firmware/neighbours.py),
    # on the wall clock and in lockstep. In lockstep no time passes for the plant, and only
    # a packet lost or never sent (a dead neighbour, before the host says so) is to be
    # bridged: the wait is long enough that no scheduling delay of a busy machine passes
    # for one, so the run repeats to the last digit (2 ms made it bridge spuriously)
    quiet = cfg.get("quiet_ms") or (2, 100)
    if isinstance(quiet, int):
        quiet = (quiet, quiet)
    # a lossy bus (bus faults injected): how long into a tick a node waits for its goal
    # before it acts on the last one (wall clock, lockstep); 0: wait for it
    goal_quiet = cfg.get("goal_quiet_ms") or (0, 0)
    return gc_every, quiet, goal_quiet


def _stale_goals(agents, goal_quiet, goals, wait_ms, ticks_ms):
    """Each agent whose tick's goal has not come within goal_quiet acts on the last one
    -> (any did, the wait left until the next one is due)."""
    goal_tick, goal_t0, gave_up = goals
    gave = False
    for k in range(len(agents)):
        a = agents[k]
        goal_ms = goal_quiet[1 if a.lockstep else 0]
        t = a.I[I_TICK]
        if goal_ms and 0 <= t != a.I[I_ACTED] and t != gave_up[k]:
            if goal_tick[k] != t:
                goal_tick[k] = t
                goal_t0[k] = ticks_ms()
            left = goal_ms - ticks_diff(ticks_ms(), goal_t0[k])
            if left <= 0:   # no goal (or no K_{i-1} to bridge from): act on the last goal,
                a.on_quiet()   # as in-process once the bus has gone quiet
                gave_up[k] = t
                gave = True
            else:
                wait_ms = min(wait_ms, left)
    return gave, wait_ms


def serve(board, agents, poll, cfg, idle_exit_ms=0, ticks_ms=None):
    """The node's loop, for its one link or a group's: move frames (poll() -> how many),
    collect garbage once a tick after the last torque, bridge a K_{i-1} that did not come
    within the hop timeout, act on the last goal where a tick's did not come in time,
    keep a faulted agent's brake PD going, else block on the board (board.wait(ms) ->
    True if frames are there). `ticks_ms`: the millisecond clock (time.ticks_ms)."""
    ticks_ms = ticks_ms or time.ticks_ms
    gc_every, quiet, goal_quiet = _timeouts(cfg)
    gc_slot = agents[0].link % gc_every   # staggered: links sharing a CPU never collect together
    n = len(agents)
    # per agent: the tick it has been in since [1] (ms), the tick it acted on the last goal in
    goals = ([-1] * n, [0] * n, [-1] * n) if goal_quiet[0] or goal_quiet[1] else None
    bridge = [False] * n   # pending before the wait: bridged if the bus stays quiet
    last = agents[-1]
    gc.collect()
    idle = 0
    gc_tick = -1
    # the hop timeout runs from the last frame that was not refused (firmware/auth.py): a
    # stream of forged or replayed frames does not hold off the bridge (docs/security.md)
    live = ticks_ms()
    refused = _refused(agents)
    pend_tick = -1
    while not board.closed:
        got = poll()
        if got:
            idle = 0   # no second read now: wait() below returns at once if more is there
            r = _refused(agents)
            if got > r - refused:
                live = ticks_ms()
            refused = r
        t = last.I[I_TICK]   # the agents' integers (LinkAgent.I)
        if t != gc_tick and t % gc_every == gc_slot and _acted(agents, t):
            gc_tick = t
            gc.collect()
            continue
        wait_ms = 100
        pending = False
        for k in range(n):
            a = agents[k]
            if safety.is_fault_state(a.safety.state):
                wait_ms = 10   # keep the brake PD going
            bridge[k] = a.pending()   # this tick's K_{i-1} not in yet: wait a hop timeout at most
            pending = pending or bridge[k]
        overdue = False
        if pending:
            if pend_tick != t:   # a tick's wait starts when it does
                pend_tick = t
                live = ticks_ms()
            wait_ms = quiet[1 if last.lockstep else 0] - ticks_diff(ticks_ms(), live)
            if wait_ms <= 0:
                wait_ms = 0
                overdue = True
        gave = False
        if goals is not None:
            gave, wait_ms = _stale_goals(agents, goal_quiet, goals, wait_ms, ticks_ms)
        if gave or (not overdue and board.wait(wait_ms)):
            continue
        for k in range(n):
            if bridge[k]:
                agents[k].on_quiet(False)   # bridge a K_{i-1} that did not come (firmware/neighbours.py)
        if pending:
            live = ticks_ms()   # still pending: the next try a hop timeout on
        for a in agents:
            a.idle()
        idle += wait_ms
        if idle_exit_ms and idle >= idle_exit_ms:
            break
    return agents


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "/config.json")
