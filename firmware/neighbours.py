# Redundant kinematics for fault tolerance (thesis 7.6.1 "redundant communication";
# Hamilton et al.'s round-robin check). An agent keeps its proximal neighbours' DH
# parameters and overhears the packets they receive, so it can
#   check:   recompute K_j from K_{j-1} and compare with the K_j link j sent; the joint
#            value q_j comes from the packets themselves (R_{j-1}^T R_j for a revolute
#            joint, the advance along z_{j-1} for a prismatic one), so a packet that no
#            joint value explains (a wrong position: an ALU fault) fails;
#   bridge:  compose K_j itself from K_{j-1} and A_j(q_lock) when link j is silent or
#            computes wrongly, with q_lock the angle its holding brake locked it at.
from math import atan2, cos, sin

from bus_protocol import messages as m
from firmware import kinematic_bus, linkstate, safety
from firmware.vec import cross, dot, qaxis_z, qmul, sub

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
S_NB_IN = const(248)
S_NB_Q = const(268)
I_TICK = const(0)
I_NB = const(16)
I_NB_TICK = const(17)
I_NB_OK = const(18)
I_NB_AT = const(19)
NB_CHECK = const(1)
NB_REV = const(2)
NB_ON = const(4)
# ---- end of layout ----

_PI = 3.141592653589793


def joint_raw(jtype, dh, k0, k1):
    """The joint that takes K_{j-1} = k0 to K_j = k1 (decoded KINEMATIC values: tick,
    quat(4), p(3), v(3), w(3)) for a link with DH (theta, d, a, alpha), before any angle is
    taken: (j0, j1, qd), with (j0, j1) Rz(theta + q)'s quaternion (w, z) up to its norm and
    sign (revolute), or (q, 0.0) (prismatic); `angle` makes q of it."""
    theta, d, a, alpha = dh
    q0 = (k0[1], -k0[2], -k0[3], -k0[4])          # conj(quat_{j-1})
    z = qaxis_z((k0[1], k0[2], k0[3], k0[4]))
    if jtype == kinematic_bus.REVOLUTE:
        # quat_j = quat_{j-1} Rz(theta + q) Rx(alpha): strip Rx(alpha) on the right
        ca = cos(0.5 * alpha)
        sa = sin(0.5 * alpha)
        rz = qmul(qmul(q0, (k1[1], k1[2], k1[3], k1[4])), (ca, -sa, 0.0, 0.0))
        qd = (z[0] * (k1[11] - k0[11]) + z[1] * (k1[12] - k0[12]) + z[2] * (k1[13] - k0[13]))
        return rz[0], rz[3], qd
    dp = (k1[5] - k0[5], k1[6] - k0[6], k1[7] - k0[7])
    w = (k0[11], k0[12], k0[13])
    dv = sub(sub((k1[8], k1[9], k1[10]), (k0[8], k0[9], k0[10])), cross(w, dp))
    return dot(z, dp) - d, 0.0, dot(z, dv)


def angle(jtype, dh, j0, j1):
    """q of joint_raw's (j0, j1): the revolute joint's angle in [-pi, pi)."""
    if jtype != kinematic_bus.REVOLUTE:
        return j0
    q = 2.0 * atan2(j1, j0) - dh[0]
    return (q + _PI) % (2.0 * _PI) - _PI


def joint_from_packets(jtype, dh, k0, k1):
    """(q_j, qd_j) that take K_{j-1} = k0 to K_j = k1 (joint_raw)."""
    j0, j1, qd = joint_raw(jtype, dh, k0, k1)
    return angle(jtype, dh, j0, j1), qd


def compose_link(jtype, dh, q, qd, quat, p, v, w):
    """K_j from K_{j-1} = (quat, p, v, w) and the joint (q, qd): the kinematic bus step."""
    theta, d, a, alpha = dh
    rot, trans = kinematic_bus.dh_local(jtype, theta, d, a, alpha, q)
    quat, p, v, w, _ = kinematic_bus.compose(jtype, rot, trans, qd, quat, p, v, w)
    return quat, p, v, w


def _local(jtype, dh, j0, j1):
    """A_j(q) = (rot, trans) of joint_raw's (j0, j1) (kinematic_bus.dh_local without the
    angle: cos and sin of (theta + q) / 2 are j0, j1 normalised)."""
    theta, d, a, alpha = dh
    if jtype != kinematic_bus.REVOLUTE:
        return kinematic_bus.dh_local(jtype, theta, d, a, alpha, j0)
    n = (j0 * j0 + j1 * j1) ** 0.5
    ct = 1.0
    st = 0.0
    if n != 0.0:   # (0: no rotation about z explains the packets; the check fails)
        ct = j0 / n
        st = j1 / n
    c = ct * ct - st * st
    s = 2.0 * (st * ct)
    ca = cos(0.5 * alpha)
    sa = sin(0.5 * alpha)
    return (ct * ca, ct * sa, st * sa, st * ca), (a * c, a * s, d)


def mismatch(jtype, dh, k0, k1):
    """Largest difference (m) between K_j's position as link j sent it (k1) and K_j
    recomputed from K_{j-1} (k0) with the joint the two packets imply; and that joint
    (j0, j1, qd: joint_raw)."""
    j0, j1, qd = joint_raw(jtype, dh, k0, k1)
    rot, trans = _local(jtype, dh, j0, j1)
    quat, p, v, w, _ = kinematic_bus.compose(jtype, rot, trans, qd, (k0[1], k0[2], k0[3], k0[4]),
                                             (k0[5], k0[6], k0[7]), (k0[8], k0[9], k0[10]),
                                             (k0[11], k0[12], k0[13]))
    e = 0.0
    for i in range(3):   # positions only: a neighbour's bridged packet (predicted joint)
        x = p[i] - k1[5 + i]   # is off most in v and w, and a check must not blame it
        if x > e:
            e = x
        elif -x > e:
            e = -x
    # a rotation that is no Rz(theta + q) Rx(alpha) at all (revolute: z of R_j must be
    # R_{j-1} Rz Rx(alpha) e_z, checked through the recomputed quaternion's sign-free match)
    c = quat[0] * k1[1] + quat[1] * k1[2] + quat[2] * k1[3] + quat[3] * k1[4]
    if 1.0 - abs(c) > e:
        e = 1.0 - abs(c)
    return e, j0, j1, qd


# ---- the agent's side: its neighbour check and the host's NODE_OUT. Neighbour i-1's
# check (depth 1) runs in the core where nothing is bridged and no neighbour is out
# (linkcore.rx, or the pure Python's on_kinematic: I_NB's NB_CHECK); its passed joint is
# held in S, I (S_NB_Q, I_NB_AT, I_NB_OK), farther neighbours' in the agent's lists
def flags(agent):
    """I[I_NB] for the agent's neighbours, bridges and the host's NODE_OUTs."""
    f = 0
    if agent.nb_depth:
        f = NB_ON | (NB_REV if agent.nb[0][0] == kinematic_bus.REVOLUTE else 0)
        out = agent._out
        if agent.nb_depth == 1 and agent.skip == 0 and not out[0] and not out[1] and agent.link > 1:
            f |= NB_CHECK
    agent.I[I_NB] = f


def reset(agent):
    """A new run: nothing bridged, no neighbour checked (LinkAgent.new_run)."""
    depth = agent.nb_depth
    agent._kin = [None] * (depth + 1)        # this tick's packets: [r] = K_{i-1-r}
    agent._nbq = [(0.0, 0.0, 0.0, 0)] * depth   # neighbour i-1-r's last checked joint (j0, j1, qd: joint_raw) and tick, r >= 1
    agent._nbq_ok = [-1] * depth             # tick of its last passed check, r >= 1
    agent.q_locks = [0.0] * depth            # lock angles of bridged neighbours
    agent.skip = 0                           # proximal neighbours bridged
    agent._readmit = 0
    agent._miss = -1                         # tick of a first failed check
    agent._out = [False] * (depth + 1)       # [r]: the host took link i-1-r out of the team
    S = agent.S
    S[S_NB_Q] = S[S_NB_Q + 1] = S[S_NB_Q + 2] = 0.0
    I = agent.I
    I[I_NB_OK] = I[I_NB_TICK] = -1
    I[I_NB_AT] = 0
    flags(agent)


def _joint(agent, j):
    """(j0, j1, qd, tick) of neighbour i-1-j's last passed check (joint_raw)."""
    if j == 0:
        S = agent.S
        return S[S_NB_Q], S[S_NB_Q + 1], S[S_NB_Q + 2], agent.I[I_NB_AT]
    return agent._nbq[j]


def _ok(agent, j):
    return agent.I[I_NB_OK] if j == 0 else agent._nbq_ok[j]


def overheard(agent, r, tick):
    """K_{i-1-r} of this tick as received (decoded values), or None: neighbour i-1's
    input K_{i-2} where the core took it (S_NB_IN), else the agent's list."""
    if r == 1 and agent.I[I_NB_TICK] == tick:
        S = agent.S
        return (tick,) + tuple(S[S_NB_IN + j] for j in range(13))
    v = agent._kin[r]
    return v if v is not None and v[0] == tick else None


def take(agent, v, r):
    """An overheard K_{i-1-r} (the Python's decode): for the check, or to bridge over."""
    if r == 1 and agent.I[I_NB] & NB_CHECK:
        linkstate.put(agent.S, S_NB_IN, v, 1, 14)
        agent.I[I_NB_TICK] = v[0]
    else:
        agent._kin[r] = v


def check(agent, r):
    """Hamilton's round-robin check of neighbour j = i-1-r: its K_j against K_j
    recomputed from K_{j-1}. A pass records its joint (q_j, qd_j) for a later lock
    angle or prediction and counts toward re-admitting bridged neighbours; two
    failures in a row of the nearest neighbour bridge it and ask the host to brake it
    (COMMAND BRAKE to the host, arg = the link)."""
    if agent._out[r + 1]:
        return   # its input is a bridged packet of a link known bad: no check
    tick = agent.I[I_TICK]
    k0 = overheard(agent, r + 1, tick)
    if k0 is None:
        return
    jt, dh = agent.nb[r]
    e, j0, j1, qd = mismatch(jt, dh, k0, agent._kin[r])
    if e > agent.nb_tol:
        failed(agent, r, e)
        return
    if r >= agent.skip:
        if r == 0:
            S = agent.S
            S[S_NB_Q] = j0
            S[S_NB_Q + 1] = j1
            S[S_NB_Q + 2] = qd
            agent.I[I_NB_AT] = tick
        else:
            agent._nbq[r] = (j0, j1, qd, tick)
    elif r == 0:   # every bridged neighbour computes right again this tick
        for j in range(1, agent.skip):
            if agent._nbq_ok[j] != tick:
                return
        agent._readmit += 1
        if agent._readmit >= agent.nb_readmit:
            agent.skip = 0
            agent._readmit = 0
            flags(agent)
            agent.log("neighbour %d re-admitted" % (agent.link - 1))
    if r == 0:
        agent.I[I_NB_OK] = tick
    else:
        agent._nbq_ok[r] = tick


def failed(agent, r, e):
    """Neighbour i-1-r's check failed by e (m): on the nearest neighbour's second failure
    in a row it is bridged and the host is asked to brake it."""
    agent._readmit = 0
    if r != 0 or agent.skip:
        return   # a farther neighbour is its own neighbour's to judge; or bridged
    tick = agent.I[I_TICK]
    if agent._miss != tick - 1:   # act on a second failure in a row: a neighbour that
        agent._miss = tick        # bridges a bad link fails once, before the host's
        return                    # NODE_OUT says which link it was
    link = agent.link - 1
    agent.q_locks[0] = predict(agent, 0, tick)   # the host brakes it in this tick
    agent.skip = 1
    flags(agent)
    agent.safety.trip(safety.F_NEIGHBOUR_DISAGREES, "link %d off by %.3g" % (link, e))
    agent.send(m.COMMAND, m.HOST, (m.CMD_BRAKE, float(link)))


def predict(agent, j, tick):
    """Neighbour j's joint at `tick`: its last checked value moved on at its speed."""
    j0, j1, qd, t = _joint(agent, j)
    jt, dh = agent.nb[j]
    return angle(jt, dh, j0, j1) + qd * (tick - t) * agent.nb_period


def node_out(agent, j, out):
    """The host took neighbour j (link i-1-j) out of the team (its torque stopped: its
    driver has braked the joint in the last tick) or back in. A neighbour out is bridged
    at the angle predicted for that tick; bridged neighbours come back by passing the
    check (check)."""
    was = agent._out[j]
    agent._out[j] = out
    flags(agent)
    if not out or was or j >= agent.nb_depth:
        return
    if j < agent.skip:
        return   # bridged already (it disagreed with this agent's check)
    agent.q_locks[j] = predict(agent, j, agent.I[I_TICK])
    while agent.skip < agent.nb_depth and agent._out[agent.skip]:
        agent.skip += 1
        agent._readmit = 0
    flags(agent)
    if j == 0:
        agent.safety.trip(safety.F_NEIGHBOUR_SILENT, "link %d out" % (agent.link - 1))


def _over(agent, j, tick):
    """(q, qd) neighbour i-1-j is composed over: its lock angle, bridged, or predicted."""
    if j < agent.skip:
        return agent.q_locks[j], 0.0
    return predict(agent, j, tick), _joint(agent, j)[2]


def compose_over(agent, v, r):
    """K_i composed from K_{i-1-r} (decoded values v) over the links between: the core's
    bridge for neighbour i-1 alone, the Python's compose_link farther (into S_IN, for the
    core's K_i)."""
    tick = agent.I[I_TICK]
    if r == 1:
        if agent.I[I_NB_TICK] != tick:
            linkstate.put(agent.S, S_NB_IN, v, 1, 14)
        q, qd = _over(agent, 0, tick)
        agent.core.bridge(agent.S, agent.I, q, qd)
        agent.send_kinematic()
        return
    quat = v[1:5]
    p = v[5:8]
    vel = v[8:11]
    w = v[11:14]
    for j in range(r - 1, -1, -1):
        jt, dh = agent.nb[j]
        q, qd = _over(agent, j, tick)
        quat, p, vel, w = compose_link(jt, dh, q, qd, quat, p, vel, w)
    agent.compose(quat, p, vel, w)


def bridge(agent):
    """LinkAgent.bridge_now for link i > 1: compose K_i from the nearest proximal
    neighbour's packet that came this tick, over the links between (bridged ones at their
    lock angles, the others predicted); False where there is none to compose from."""
    tick = agent.I[I_TICK]
    for r in range(agent.skip + 1, agent.nb_depth + 1):
        if _ok(agent, r - 1) < 0 and r - 1 >= agent.skip:
            return False   # never checked: nothing to predict it from
        v = overheard(agent, r, tick)
        if v is not None:
            agent.bridged += 1
            compose_over(agent, v, r)
            return True
    return False
