# Faults injected into a link agent (config "inject", sim_host/fault_injection.py; absent
# on a real arm): each entry [kind, start_tick, end_tick (-1: none), period_ticks (0:
# steady), duty_ticks, value]. The Python acts on them around the core's calls
# (firmware/assertions.py before_k: silence, K_i's offset; arbitration.arbitrate: the
# torque's offset; agent.send: silence).
INJ_SILENT = 1    # the node sends nothing (bus and motor command)
INJ_COMPUTE = 2   # Hamilton's ALU fault: K_i's x (or the torque) off by a value


def injected(agent, tick):
    """The faults injected at this tick into the agent's _silent, _k_off, _u_off."""
    agent._silent = False
    agent._k_off = agent._u_off = 0.0
    for kind, start, end, period, duty, value in agent.inject:
        if tick < start or 0 <= end <= tick or (period and (tick - start) % period >= duty):
            continue
        if kind == INJ_SILENT:
            agent._silent = True
        elif kind == INJ_COMPUTE and value[0] == "torque":
            agent._u_off = value[1]
        elif kind == INJ_COMPUTE:
            agent._k_off = value[1]
