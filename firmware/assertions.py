# The agent's own frames around K_i that the core does not make (docs/design.md §5), in
# Python over the same state (K_i in S, S_K): the weight couplet of a link that carries a
# load (told, or its estimate: firmware/identification.py), the RMOA couplet (7.250), K_{N-1}
# to the host for the tip's check, and an injected fault's silence or K_i offset
# (config "inject", sim_host/fault_injection.py). `before_k` is the agent's `amend` where
# its config has one of them (config_parser): it runs after the core composed K_i and
# before K_i's frames leave, so that assertions reach the host ahead of K_N on every medium.
from bus_protocol import messages as m
from firmware import behaviours
from firmware.vec import qrot

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_S_K = const(41)
_I_TICK = const(0)
_I_SEQ = const(1)
_I_DOWN = const(7)
_FLAG_GRAVITY = const(2)
# ---- end of layout ----


def before_k(agent):
    """The Python's frames before K_i's (agent.amend); True if the node is silent (nothing
    of K_i goes out)."""
    if agent._silent:
        return True
    S = agent.S
    I = agent.I
    tick = I[_I_TICK]
    seq = (I[_I_SEQ] - 1) & 0xFFFF   # K_i's, as the core encoded it
    quat = tuple(S[_S_K + j] for j in range(4))
    p = (S[_S_K + 4], S[_S_K + 5], S[_S_K + 6])
    if agent.weight is not None and not agent._flags & _FLAG_GRAVITY:   # gravity by assertion
        agent.send(m.ASSERT, m.HOST, (tick, agent.link, m.KIND_GRAVITY) + weight_couplet(agent, quat, p))
    if agent.rmoa is not None and agent.hal.range_valid:
        rmoa(agent, quat, p)
    k = (tick,) + quat + p + tuple(S[_S_K + j] for j in range(7, 13))
    if agent._k_off:   # Hamilton's ALU fault: K_i's x off by a value, as sent
        k = k[:5] + (k[5] + agent._k_off,) + k[6:]
    if agent.k_to_host:   # the host checks the tip from K_{N-1}: first, so that it is in
        agent.send(m.KINEMATIC, m.HOST, k, None, agent.copies)   # before K_N on every medium
    # K_i's frame again where the core left it (the agent's send writes the same buffer),
    # with the sequence number the core gave it
    m.encode_into(agent._tx, m.KINEMATIC, agent.link, I[_I_DOWN], seq, k)
    return False


def weight_couplet(agent, quat, p):
    """(p, f) of the link's weight, with the load it carries: told (`load`) or its
    estimate (identification `use`)."""
    ident = agent.ident
    load = ident.load() if ident is not None and ident.use else agent.load
    if load is None:
        return to_world(quat, p, agent.centroid) + agent.weight
    from firmware import identification
    return identification.weight_couplet(quat, p, load[0], load[1], agent.g, agent.mass, agent.centroid)


def rmoa(agent, quat, p):
    """Step 5: range to the nearest obstacle under the clearance -> RMOA couplet."""
    hal = agent.hal
    x_r = qrot(quat, hal.x_r)
    rho = (x_r[0] * x_r[0] + x_r[1] * x_r[1] + x_r[2] * x_r[2]) ** 0.5
    eta, clearance, f_max = agent.rmoa
    f = behaviours.rmoa_force(x_r, rho, eta, clearance, f_max)
    if f is not None:
        p_psh = to_world(quat, p, hal.p_psh)
        agent.send(m.ASSERT, m.HOST, (agent.I[_I_TICK], agent.link, m.KIND_RMOA) + p_psh + f + (0.0, 0.0, 0.0))


def to_world(quat, p, x_link):
    """p + R x for a point given in link-frame coordinates."""
    r = qrot(quat, x_link)
    return (p[0] + r[0], p[1] + r[1], p[2] + r[2])
