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
from firmware import kinematic_bus, safety
from firmware.vec import cross, dot, qaxis_z, qmul, sub

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
I_TICK = const(0)
# ---- end of layout ----

_PI = 3.141592653589793


def joint_from_packets(jtype, dh, k0, k1):
    """(q_j, qd_j) that take K_{j-1} = k0 to K_j = k1 (decoded KINEMATIC values:
    tick, quat(4), p(3), v(3), w(3)) for a link with DH (theta, d, a, alpha)."""
    theta, d, a, alpha = dh
    q0 = (k0[1], -k0[2], -k0[3], -k0[4])          # conj(quat_{j-1})
    z = qaxis_z((k0[1], k0[2], k0[3], k0[4]))
    if jtype == kinematic_bus.REVOLUTE:
        # quat_j = quat_{j-1} Rz(theta + q) Rx(alpha): strip Rx(alpha) on the right
        ca = cos(0.5 * alpha)
        sa = sin(0.5 * alpha)
        rz = qmul(qmul(q0, (k1[1], k1[2], k1[3], k1[4])), (ca, -sa, 0.0, 0.0))
        q = 2.0 * atan2(rz[3], rz[0]) - theta
        q = (q + _PI) % (2.0 * _PI) - _PI
        qd = (z[0] * (k1[11] - k0[11]) + z[1] * (k1[12] - k0[12]) + z[2] * (k1[13] - k0[13]))
    else:
        dp = (k1[5] - k0[5], k1[6] - k0[6], k1[7] - k0[7])
        q = dot(z, dp) - d
        w = (k0[11], k0[12], k0[13])
        dv = sub(sub((k1[8], k1[9], k1[10]), (k0[8], k0[9], k0[10])), cross(w, dp))
        qd = dot(z, dv)
    return q, qd


def compose_link(jtype, dh, q, qd, quat, p, v, w):
    """K_j from K_{j-1} = (quat, p, v, w) and the joint (q, qd): the kinematic bus step."""
    theta, d, a, alpha = dh
    rot, trans = kinematic_bus.dh_local(jtype, theta, d, a, alpha, q)
    quat, p, v, w, _ = kinematic_bus.compose(jtype, rot, trans, qd, quat, p, v, w)
    return quat, p, v, w


def mismatch(jtype, dh, k0, k1):
    """Largest difference (m) between K_j's position as link j sent it (k1) and K_j
    recomputed from K_{j-1} (k0) with the joint value the two packets imply; and that
    (q, qd)."""
    q, qd = joint_from_packets(jtype, dh, k0, k1)
    quat, p, v, w = compose_link(jtype, dh, q, qd, (k0[1], k0[2], k0[3], k0[4]),
                                 (k0[5], k0[6], k0[7]), (k0[8], k0[9], k0[10]), (k0[11], k0[12], k0[13]))
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
    return e, q, qd


# ---- the agent's side: its neighbour check and the host's NODE_OUT (firmware/agent.py
# imports this module for a link with neighbours, or on a NODE_OUT)
def check(agent, r):
    """Hamilton's round-robin check of neighbour j = i-1-r: its K_j against K_j
    recomputed from K_{j-1}. A pass records its joint (q_j, qd_j) for a later lock
    angle or prediction and counts toward re-admitting bridged neighbours; two
    failures in a row of the nearest neighbour bridge it and ask the host to brake it
    (COMMAND BRAKE to the host, arg = the link)."""
    if agent._out[r + 1]:
        return   # its input is a bridged packet of a link known bad: no check
    jt, dh = agent.nb[r]
    e, q, qd = mismatch(jt, dh, agent._kin[r + 1], agent._kin[r])
    tick = agent.I[I_TICK]
    if e <= agent.nb_tol:
        if r >= agent.skip:
            agent._nbq[r] = (q, qd, tick)
        elif r == 0:   # every bridged neighbour computes right again this tick
            for j in range(1, agent.skip):
                if agent._nbq_ok[j] != tick:
                    return
            agent._readmit += 1
            if agent._readmit >= agent.nb_readmit:
                agent.skip = 0
                agent._readmit = 0
                agent.log("neighbour %d re-admitted" % (agent.link - 1))
        agent._nbq_ok[r] = tick
        return
    agent._readmit = 0
    if r != 0 or agent.skip:
        return   # a farther neighbour is its own neighbour's to judge; or bridged
    if agent._miss != tick - 1:   # act on a second failure in a row: a neighbour that
        agent._miss = tick        # bridges a bad link fails once, before the host's
        return                    # NODE_OUT says which link it was
    link = agent.link - 1
    agent.q_locks[0] = predict(agent, 0, tick)   # the host brakes it in this tick
    agent.skip = 1
    agent.safety.trip(safety.F_NEIGHBOUR_DISAGREES, "link %d off by %.3g" % (link, e))
    agent.send(m.COMMAND, m.HOST, (m.CMD_BRAKE, float(link)))


def predict(agent, j, tick):
    """Neighbour j's joint at `tick`: its last checked value moved on at its speed."""
    q, qd, t = agent._nbq[j]
    return q + qd * (tick - t) * agent.nb_period


def node_out(agent, j, out):
    """The host took neighbour j (link i-1-j) out of the team (its torque stopped: its
    driver has braked the joint in the last tick) or back in. A neighbour out is bridged
    at the angle predicted for that tick; bridged neighbours come back by passing the
    check (check)."""
    was = agent._out[j]
    agent._out[j] = out
    if not out or was or j >= agent.nb_depth:
        return
    if j < agent.skip:
        return   # bridged already (it disagreed with this agent's check)
    agent.q_locks[j] = predict(agent, j, agent.I[I_TICK])
    while agent.skip < agent.nb_depth and agent._out[agent.skip]:
        agent.skip += 1
        agent._readmit = 0
    if j == 0:
        agent.safety.trip(safety.F_NEIGHBOUR_SILENT, "link %d out" % (agent.link - 1))


def bridge(agent):
    """LinkAgent.bridge_now for link i > 1: compose K_i from the nearest proximal
    neighbour's packet that came this tick, over the links between (bridged ones at their
    lock angles, the others predicted); False where there is none to compose from."""
    kin = agent._kin
    tick = agent.I[I_TICK]
    for r in range(agent.skip + 1, agent.nb_depth + 1):
        if agent._nbq_ok[r - 1] < 0 and r - 1 >= agent.skip:
            return False   # never checked: nothing to predict it from
        v = kin[r]
        if v is not None and v[0] == tick:
            quat = v[1:5]
            p = v[5:8]
            vel = v[8:11]
            w = v[11:14]
            for j in range(r - 1, -1, -1):
                jt, dh = agent.nb[j]
                if j < agent.skip:
                    q, qd = agent.q_locks[j], 0.0
                else:
                    q, qd = predict(agent, j, tick), agent._nbq[j][1]
                quat, p, vel, w = compose_link(jt, dh, q, qd, quat, p, vel, w)
            agent.bridged += 1
            agent.compose(quat, p, vel, w)
            return True
    return False
