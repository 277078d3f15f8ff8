# A link's configuration: taken from its dict (`configure`: LinkAgent.configure, at start
# and when a blob is applied) and sent over the bus (CONFIG frames carry chunks of a JSON
# blob of link fields, COMMAND CONFIG_APPLY merges them into the link's config). The agent
# imports it for each of these calls and forgets it again (agent._once): a nominal cycle
# never runs it, and as a .mpy file on a board's filesystem its code would hold RAM.
from firmware import behaviours, linkstate, safety

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_C = const(87)
S_U = const(93)
I_LINK = const(6)
I_FLAGS = const(8)
I_EVERY = const(11)
I_EVERY_AT = const(12)
I_COPIES = const(14)
I_JOINT = const(15)
FLAG_REV = const(1)
FLAG_GRAVITY = const(2)
FLAG_TORQUE_BUS = const(8)
# ---- end of layout ----

REVOLUTE = 0    # kinematic_bus.REVOLUTE, PRISMATIC
PRISMATIC = 1

CONFIG_MAX = 2048   # bytes of a CONFIG blob


def take(agent, v):
    """One CONFIG chunk (offset, total, data) of the blob."""
    off, total, data = v
    if total > CONFIG_MAX or off + len(data) > total:
        agent._cfg_blob = None
        agent.safety.trip(safety.F_CONFIG, "config blob over %d bytes" % CONFIG_MAX)
        return
    if off == 0 or agent._cfg_blob is None or len(agent._cfg_blob) != total:
        agent._cfg_blob = bytearray(total)
    agent._cfg_blob[off:off + len(data)] = data


def apply(agent):
    """COMMAND CONFIG_APPLY: merge the blob's fields into the link's config. Refused
    while running (brake or RESET the node first); an invalid blob leaves the old
    config in place and latches F_CONFIG."""
    if agent.safety.state == safety.RUN:
        agent.log("config refused: running")
        return
    blob, agent._cfg_blob = agent._cfg_blob, None
    old = agent.cfg
    try:
        import json
        new = dict(old)
        new.update(json.loads(bytes(blob or b"")))
        configure(agent, new)
        agent.safety.configure(agent._safety_cfg)
    except Exception as e:
        configure(agent, old)
        agent.safety.trip(safety.F_CONFIG, "%s %s" % (type(e).__name__, e))
        return
    agent.log("config applied")


def _joint_type(name):
    """kinematic_bus.joint_type without importing kinematic_bus (its error for a name
    that is neither)."""
    if name == "revolute":
        return REVOLUTE
    if name == "prismatic":
        return PRISMATIC
    from firmware import kinematic_bus
    return kinematic_bus.joint_type(name)


def configure(agent, cfg):
    """LinkAgent.configure: the link's fields from its config dict; ValueError, KeyError
    or TypeError if it is not usable."""
    from firmware import agent as lazy   # its imports on first need
    lazy._reading(agent)   # the last reading out of the S this replaces
    _link(agent, cfg)
    _behaviours(agent, cfg.get("behaviours", {}))
    # safety's, with the joint's travel (position_limit)
    agent._safety_cfg = dict(cfg.get("safety", {}), q_low=agent.q_low, q_high=agent.q_high)
    agent._brake_at_start = cfg.get("brake_at_start")
    for x in agent.dh + (agent.q_low, agent.q_high, agent.u_sat, agent.mass) + agent.brake_gains:
        if not safety.finite(x):
            raise ValueError("config: %r is not a finite number" % (x,))
    _neighbours(agent, cfg, lazy)
    agent.copies = agent.I[I_COPIES] = int(cfg.get("kinematic_copies", 1))   # K_i sent this many times (time redundancy)
    # [kind, start_tick, end_tick (-1: none), period_ticks (0: steady), duty_ticks, value]
    agent.inject = [tuple(x) for x in cfg.get("inject", ())]
    _load(agent, cfg)
    agent.cfg = cfg
    _core(agent, cfg)
    agent.reset_neighbours()


def _link(agent, cfg):
    """The link's place, DH and limits."""
    agent.link = agent.I[I_LINK] = cfg["link"]
    agent.n_links = cfg["n_links"]
    agent.status_every = int(cfg.get("status_every", 12))
    if agent.status_every < 1:
        raise ValueError("config: status_every %d is not a number of ticks" % agent.status_every)
    # the ticks it sends STATUS at: tick % I_EVERY == I_EVERY_AT
    agent.I[I_EVERY] = agent.status_every
    agent.I[I_EVERY_AT] = agent.link % agent.status_every
    dh = cfg["dh"]
    agent.jtype = _joint_type(dh.get("type", "revolute"))
    agent.dh = (float(dh.get("theta", 0.0)), float(dh.get("d", 0.0)),
                float(dh.get("a", 0.0)), float(dh.get("alpha", 0.0)))
    agent.q_low = float(cfg.get("q_low", -1e9))
    agent.q_high = float(cfg.get("q_high", 1e9))
    agent.u_sat = float(cfg.get("u_sat", 1e9))
    agent.mass = float(cfg.get("mass", 0.0))
    agent.centroid = tuple(cfg.get("centroid", (0.0, 0.0, 0.0)))


def _behaviours(agent, beh):
    """The behaviours' weights and parameters (docs/design.md §5)."""
    agent.k_proxy, agent.k_assert, agent.k_local, agent.k_jl = behaviours.weights(beh)
    rmoa = beh.get("rmoa")
    agent.rmoa = None if rmoa is None else (float(rmoa.get("eta", 100.0)),
                                            float(rmoa.get("clearance", 0.75)),
                                            float(rmoa.get("f_max", 1e9)))
    grav = beh.get("gravity")
    g = (0.0, 0.0, 0.0) if grav is None else tuple(grav.get("g", (0.0, 0.0, 0.0)))
    agent.g = g
    # own weight couplet force m*g (docs/design.md §5, gravity compensation by assertion);
    # asserting -m*g means "apply the force that holds the weight up".
    agent.weight = None if grav is None or g == (0.0, 0.0, 0.0) else (
        -agent.mass * g[0], -agent.mass * g[1], -agent.mass * g[2], 0.0, 0.0, 0.0)
    cen = beh.get("centering")
    agent.local_pd = (0.0, 0.0, 0.0) if cen is None else (
        float(cen.get("q_c", 0.5 * (agent.q_low + agent.q_high))),
        float(cen.get("kq", 100.0)), float(cen.get("kw", 20.0)))
    ret = beh.get("retraction")
    if ret is not None:   # the same local PD with alternating setpoints (7.311)
        agent.local_pd = (behaviours.retraction_setpoint(agent.link, float(ret.get("amplitude", 1.570))),
                          float(ret.get("kq", 100.0)), float(ret.get("kw", 20.0)))
    jl = beh.get("joint_limit")
    agent.jl = (0.0, 0.0) if jl is None else (float(jl.get("eta", 5.0)), float(jl.get("rho0", 0.2)))
    br = beh.get("brake", {})
    # stable at 120 Hz down to ~0.4 kg m^2 effective inertia (reference arm, link 9)
    agent.brake_gains = (float(br.get("kq", 2000.0)), float(br.get("kw", 40.0)))


def _neighbours(agent, cfg, lazy):
    """Redundant kinematics: the neighbour check and the bridge."""
    # proximal neighbours' DH, nearest first (redundant kinematics: firmware/neighbours.py)
    nb = cfg.get("neighbours") or {}
    agent.nb = [(_joint_type(x[0]), (float(x[1]), float(x[2]), float(x[3]), float(x[4])))
                for x in nb.get("dh", ())]
    agent.nb_depth = len(agent.nb)
    if agent.nb_depth:
        lazy._neighbour_support()
    agent.nb_period = float(nb.get("period", 0.0))        # control period (s)
    agent.nb_tol = float(nb.get("tol", 1e-2))             # check tolerance (m, m/s, rad/s)
    agent.nb_readmit = int(nb.get("readmit_cycles", 3))
    # link N-1: its K also goes to the host, the tip's distal neighbour for the check
    # (host/controller.py check_tip); and while the tip is out, to bridge it
    agent.k_to_host = bool(nb.get("to_host", False))


def _load(agent, cfg):
    """A load the last link carries and is told of (m, m c); the identification of one
    nobody told the last links of (firmware/identification.py: kept across a CONFIG that
    leaves its table as it was)."""
    load = cfg.get("load")
    agent.load = None if load is None else (float(load["mass"]), tuple(load["h"]))
    ident = cfg.get("identify")
    old = getattr(agent, "cfg", None)
    if old is None or old.get("identify") != ident:
        if ident is None:
            agent.ident = None
        else:
            from firmware.identification import LinkIdent
            agent.ident = LinkIdent(ident, agent)
    # the core's sample leaves the cycle to its rx (FLAG_PLAIN) only where no Python acts
    # on the torque after it (firmware/cycle.py on_sync)
    agent._safety_cfg["python_sample"] = agent.ident is not None or bool(agent.inject)


def _core(agent, cfg):
    """The core (firmware/linkstate.py: one for the process) and its state: A_i, K_i, the
    torque and their frames live in the float array S. A CONFIG keeps the tick's state in
    it (A_i of the sync, K, the reading) and the torque of the last cycle (agent.u[0])."""
    old = getattr(agent, "S", None)
    agent.core = linkstate.core()
    agent.S = linkstate.state(agent, old)
    agent.components = memoryview(agent.S)[S_C:S_C + 6]   # (views of S)
    u = agent.u[0] if old is not None else 0.0
    agent.u = memoryview(agent.S)[S_U:S_U + 1]
    agent.u[0] = u
    if old is None:
        agent.I[I_JOINT] = 0   # (a new S holds no JOINT_STATE)
    # the Python's frames around K_i (firmware/assertions.py, imported only then), where the
    # config has them: then K_i's frames go through the agent's send, not onto a node's
    # buffers by the core
    agent.amend = None
    if (agent.load is not None or agent.ident is not None or agent.rmoa is not None or agent.inject
            or agent.k_to_host):
        from firmware.assertions import before_k
        agent.amend = before_k
    # receive's, in one attribute load (an attribute load is ~100 instructions on a
    # Cortex-M4F, a tuple's item a few)
    agent._lc = (agent.core, agent.S, agent.I, agent._tx, None if agent.amend else agent._wire) + agent._safety_nv
    # a CONFIG forgets the last goal and K_0 (new_run sets them at start)
    agent._goal = False
    agent._base = False
    # the core's: the joint type, the gravity ASSERT with K_i (the Python's with a load),
    # TORQUE on the bus (FLAG_PLAIN: cycle.on_sync)
    gravity = agent.weight is not None and agent.load is None and agent.ident is None
    agent._flags = (FLAG_REV if agent.jtype == REVOLUTE else 0) | (FLAG_GRAVITY if gravity else 0) | (
        FLAG_TORQUE_BUS if agent._report is None else 0)
    agent.I[I_FLAGS] = agent._flags
