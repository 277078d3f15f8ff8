# Board entry: a board's boot main.py does `from firmware import main; main.run()`.
# Reads the link's config JSON (host/scenario.py agent_configs[i] plus "board" and
# "bus" settings), builds board, agent and node, then loops: move frames, else block.
import gc
import json
import sys
import time

from firmware import boards, safety
from firmware.agent import LinkAgent
from firmware.linkstate import I_ACTED, I_TICK

VERSION = "0.1.0"


def load_config(path):
    with open(path) as f:
        return json.load(f)


def build(cfg):
    board = boards.make_board(cfg)
    agent = LinkAgent(cfg, board.hal)
    node = board.node(agent)
    return board, agent, node


def run(path="/config.json", idle_exit_ms=0):
    """Run the link agent until the bus goes away (or idle_exit_ms without a frame);
    `path`: its config JSON's, or the config itself (a dict)."""
    cfg = load_config(path) if isinstance(path, str) else path
    idle_exit_ms = int(cfg.get("idle_exit_ms", idle_exit_ms))
    if "group" in cfg:   # a node hosting several links (firmware/group.py)
        from firmware import group
        return group.run(cfg, VERSION, idle_exit_ms)
    board, agent, node = build(cfg)
    agent.log("ready link %d fw %s board %s" % (agent.link, VERSION, board.name))
    # collect every gc_every cycles, right after the cycle's TORQUE went out, so a
    # collection never lands between K_{i-1} and K_i or the goal and the torque; a
    # collection costs about the same however much garbage there is (mark ~ live data),
    # and 8 cycles x ~11 KB fit a board's heap (bench: make bench)
    gc_every = int(cfg.get("gc_every", 8))
    gc_slot = agent.link % gc_every   # staggered: links sharing a CPU never collect together
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
    goal_tick = -1   # the tick this node has been in since goal_t0 (ms)
    goal_t0 = 0
    gave_up = -1     # the tick it acted on the last goal in
    gc.collect()
    idle = 0
    gc_tick = -1
    ints = agent.I
    while not board.closed:
        if node.poll():
            idle = 0   # no second read now: wait() below returns at once if more is there
        t = ints[I_TICK]   # the agent's integers (LinkAgent.I)
        acted = ints[I_ACTED]
        if acted == t != gc_tick and t % gc_every == gc_slot:
            gc_tick = t
            gc.collect()
            continue
        wait_ms = 10 if safety.is_fault_state(agent.safety.state) else 100   # keep the brake PD going
        pending = agent.pending()
        if pending:   # this tick's K_{i-1} not in yet: wait a hop timeout at most
            wait_ms = quiet[1 if agent.lockstep else 0]
        goal_ms = goal_quiet[1 if agent.lockstep else 0]
        if goal_ms and 0 <= t != acted and t != gave_up:
            if goal_tick != t:
                goal_tick = t
                goal_t0 = time.ticks_ms()
            left = goal_ms - time.ticks_diff(time.ticks_ms(), goal_t0)
            if left <= 0:   # no goal (or no K_{i-1} to bridge from): act on the last goal,
                agent.on_quiet()   # as in-process once the bus has gone quiet
                gave_up = t
                continue
            wait_ms = min(wait_ms, left)
        if board.wait(wait_ms):
            continue
        if pending:
            agent.on_quiet(False)   # bridge a K_{i-1} that did not come (firmware/neighbours.py)
        agent.idle()
        idle += wait_ms
        if idle_exit_ms and idle >= idle_exit_ms:
            break
    return agent


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "/config.json")
