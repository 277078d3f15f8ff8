// linkcore's core: a link agent's per-cycle floating-point work and its hot frames in C,
// with no interpreter in it. Two glue files include it: linkcore.c (MicroPython's native
// .mpy module, for the boards and the unix port) and linkcore_cpython.c (a CPython
// extension module, for the desktop's in-process agents). Each defines, before including
// this file, `real` (its interpreter's float: float32 on the boards, double elsewhere),
// R(x) (a constant of that type) and, after it, root() (x ** 0.5 as its Python does it),
// cos_r() and sin_r() (its math.cos and math.sin, bit for bit).
// The pure-Python firmware stays the portable fallback and the oracle: every function
// here performs the same float operations in the same order, so the results are
// bit-identical where the float width is the same (compiled with -ffp-contract=off: no
// fused multiply-add; never -ffast-math).
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static real root(real x);
static real cos_r(real x);
static real sin_r(real x);

// the layouts of S, I, N, V, the node's buffer block and the frames (firmware/layout.py)
#include "linkcore_layout.h"

// CRC-16/CCITT-FALSE (poly 0x1021, MSB first) a byte at a time with no table: the
// polynomial's three terms as shifts of the byte's 8 bits folded by their top nibble
// (a 10-instruction loop a byte on a Cortex-M4F, whose eor takes a shifted operand,
// disassembled; no table in RAM)
static unsigned crc16(const uint8_t *p, size_t n) {
    unsigned c = 0xffff;
    for (size_t i = 0; i < n; i++) {
        unsigned x = (c >> 8) ^ p[i];
        x ^= x >> 4;
        c = ((c << 8) ^ (x << 12) ^ (x << 5) ^ x) & 0xffff;
    }
    return c;
}

typedef union {
    float f;
    uint32_t u;
} f32;

static uint32_t get_u32(const uint8_t *p) {
    return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = v;
    p[1] = v >> 8;
    p[2] = v >> 16;
    p[3] = v >> 24;
}

// a usable number, as safety.finite: |x| < 1e30 and not NaN
static bool usable(real x) {
    return R(-1e30) < x && x < R(1e30);
}

// n float32 little-endian from the frame into dst (exact: float32 -> MicroPython's
// float); false if one is not usable (the agent drops such a frame and latches F_NAN)
static bool get_floats(real *dst, const uint8_t *p, int n) {
    for (int i = 0; i < n; i++) {
        f32 x;
        x.u = get_u32(p + 4 * i);
        if (!usable(x.f)) {
            return false;
        }
        dst[i] = x.f;
    }
    return true;
}

static uint8_t *put_floats(uint8_t *p, const real *src, int n) {
    for (int i = 0; i < n; i++) {
        f32 x;
        x.f = (float)src[i];   // round to nearest, as struct.pack('f')
        put_u32(p, x.u);
        p += 4;
    }
    return p;
}

// header (type, src, dst, seq, len) before and the CRC after a payload ending at `end`
static int seal(uint8_t *buf, int type, int src, int dst, int seq, uint8_t *end) {
    int len = end - buf - HEADER;
    buf[0] = type;
    buf[1] = src;
    buf[2] = dst;
    buf[3] = seq;
    buf[4] = seq >> 8;
    buf[5] = len;
    unsigned c = crc16(buf, HEADER + len);
    end[0] = c;
    end[1] = c >> 8;
    return HEADER + len + 2;
}

// ---- the agent's frames onto the wire (firmware/node.py ChainNode.send) ----

// COBS of f[:n] (n < 254) and its delimiter at out (framing.cobs_encode_at); -> the bytes written
static int cobs(const uint8_t *f, int n, uint8_t *out) {
    int code_at = 0, o = 1;
    for (int i = 0; i < n; i++) {
        if (f[i]) {
            out[o++] = f[i];
        } else {
            out[code_at] = o - code_at;
            code_at = o++;
        }
    }
    out[code_at] = o - code_at;
    out[o] = 0;
    return o + 1;
}

// The frames f[j] (n[j] bytes, times[j] times each, in order) straight onto the node's
// transmit buffers, as ChainNode.send queues them, COBS-encoded, to the ports its routing
// table names for their destination; the node writes them out after its poll round (not
// through the Python send: benchmarks/README.md, firmware design figures). False,
// and nothing queued, outside a poll round (blk[BLK_BATCH] clear) or where ChainNode.send
// would write a buffer out before one of them (more than ROOM bytes queued: it finds a
// ring's dead wire there, and routes round it from then on): the Python sends them.
static bool wire_out(uint8_t *blk, const uint8_t *const *f, const int *n, const int *times, int k) {
    if (blk == NULL || !blk[BLK_BATCH]) {
        return false;
    }
    int queued[2] = {blk[BLK_QUEUED], blk[BLK_QUEUED + 1]};
    for (int j = 0; j < k; j++) {
        if (times[j] < 0 || times[j] > TX) {   // (kinematic_copies as configured: never fits)
            return false;
        }
        int ports = blk[BLK_TAB + f[j][2]] >> 4;
        for (int t = 0; t < times[j]; t++) {
            for (int side = 0; side < 2; side++) {
                if (ports >> side & 1) {
                    if (queued[side] > ROOM) {
                        return false;
                    }
                    queued[side] += n[j] + 2;   // COBS of n < 254 bytes, and its delimiter
                }
            }
        }
    }
    for (int j = 0; j < k; j++) {
        int ports = blk[BLK_TAB + f[j][2]] >> 4;
        for (int t = 0; t < times[j]; t++) {
            for (int side = 1; side >= 0; side--) {   // down first, as ChainNode.send
                if (ports >> side & 1) {
                    uint8_t *q = blk + BLK_QUEUED + side;
                    *q += cobs(f[j], n[j], blk + BLK_TX + side * TX + *q);
                }
            }
        }
    }
    return true;
}

// ---- the kinematic bus (kinematic_bus.py, docs/design.md §2, 5.172-5.176) ----

// A(q) = Rz(theta) Tz(d) Tx(a) Rx(alpha), theta + q (revolute) or d + q (prismatic)
// (kinematic_bus.dh_local) of the DH dh = (d, a, cos(alpha/2), sin(alpha/2)): rot(4) and
// trans(3) into rt
static void dh_at(const real *dh, bool revolute, real theta, real q, real *rt) {
    real d = dh[0], a = dh[1], ca = dh[2], sa = dh[3];
    if (revolute) {
        theta = theta + q;
    } else {
        d = d + q;
    }
    real h = R(0.5) * theta;
    real ct = cos_r(h), st = sin_r(h), c = cos_r(theta), s = sin_r(theta);
    rt[0] = ct * ca;
    rt[1] = ct * sa;
    rt[2] = st * sa;
    rt[3] = st * ca;
    rt[4] = a * c;
    rt[5] = a * s;
    rt[6] = d;
}

// A_i(q) into S_ROT, S_TRANS; the sampled q, qd into S_Q, S_QD
static void dh_local(real *S, bool revolute, real theta, real q, real qd) {
    dh_at(S + S_DH, revolute, theta, q, S + S_ROT);
    S[S_Q] = q;
    S[S_QD] = qd;
}

// ---- the sample (cycle.on_sync and sample, safety.on_sample; docs/design.md §5) ----

// The sync's plain sample: this tick's reading q, qd in S_JOINT (the JOINT_STATE rx took,
// I_JOINT, or the HAL's reading the agent put there), where safety's on_sample would latch
// nothing (NaN, goal watchdog, encoder jump, overspeed, position limit) and has nothing
// else to do (a
// first sample, check_response with work): it becomes safety's previous reading (N, V)
// and S_Q, S_QD with A_i(q) (dh_local), and I_FLAGS gets FLAG_SAMPLED | FLAG_PLAIN. Else
// false, and nothing changed: the agent samples in Python. The agent calls it in RUN with
// nothing latched and no joint locked; FLAG_PLAIN also needs no Python acting on the torque
// (identification, injected faults), where safety sets N_PYTHON (config_parser).
static bool sample(real *S, int32_t *I, int32_t *N, real *V) {
    if (N[N_PYTHON] || !N[N_PREV]) {
        return false;
    }
    real q = S[S_JOINT], qd = S[S_JOINT + 1], qp = V[V_Q_PREV];
    int64_t tick = I[I_TICK];
    real dq = q - qp;   // |dq| > max_q_step, |qd| > qd_max, written out as safety writes them
    if (!usable(q) || !usable(qd) || tick - N[N_LAST_GOAL] > N[N_WATCHDOG]
            || dq > V[V_MAX_Q] || dq < V[V_MAX_Q_NEG] || qd > V[V_QD_MAX] || qd < V[V_QD_MAX_NEG]
            || q < V[V_Q_MIN] || q > V[V_Q_MAX]) {
        return false;
    }
    if (N[N_U_RUN] && tick == (int64_t)N[N_TICK_PREV] + 1
            && ((qd == R(0.0) && q == qp) || N[N_FROZEN] || V[V_RESPOND_U] > R(0.0))) {
        return false;
    }
    V[V_Q_PREV] = q;
    V[V_QD_PREV] = qd;
    N[N_TICK_PREV] = (int32_t)tick;
    dh_local(S, I[I_FLAGS] & FLAG_REV, S[S_THETA], q, qd);
    I[I_FLAGS] |= FLAG_SAMPLED | FLAG_PLAIN;
    return true;
}

// K = (quat, p, v, w) from K_{i-1} = k0 and A(q) = rt (rot(4), trans(3)) at speed qd,
// with the joint axis z: kinematic_bus.compose, expression for expression
static void compose_at(const real *k0, const real *rt, real qd, bool revolute, real *z, real *k) {
    real aw = k0[0], ax = k0[1], ay = k0[2], az = k0[3];
    real bw = rt[0], bx = rt[1], by = rt[2], bz = rt[3];
    z[0] = R(2.0) * (ax * az + aw * ay);
    z[1] = R(2.0) * (ay * az - aw * ax);
    z[2] = R(1.0) - R(2.0) * (ax * ax + ay * ay);
    real qw = aw * bw - ax * bx - ay * by - az * bz;   // quat0 * rot (A.2)
    real qx = aw * bx + ax * bw + ay * bz - az * by;
    real qy = aw * by - ax * bz + ay * bw + az * bx;
    real qz = aw * bz + ax * by - ay * bx + az * bw;
    real s = root(qw * qw + qx * qx + qy * qy + qz * qz);
    if (s == R(0.0)) {
        k[0] = R(1.0);
        k[1] = k[2] = k[3] = R(0.0);
    } else {
        k[0] = qw / s;
        k[1] = qx / s;
        k[2] = qy / s;
        k[3] = qz / s;
    }
    real vx = rt[4], vy = rt[5], vz = rt[6];   // r = R(quat0) trans
    real tx = ay * vz - az * vy;
    real ty = az * vx - ax * vz;
    real tz = ax * vy - ay * vx;
    tx = R(2.0) * tx;
    ty = R(2.0) * ty;
    tz = R(2.0) * tz;
    real rx = vx + aw * tx + (ay * tz - az * ty);
    real ry = vy + aw * ty + (az * tx - ax * tz);
    real rz = vz + aw * tz + (ax * ty - ay * tx);
    k[4] = k0[4] + rx;
    k[5] = k0[5] + ry;
    k[6] = k0[6] + rz;
    real *v = k + 7, *w = k + 10;
    const real *v0 = k0 + 7, *w0 = k0 + 10;
    if (revolute) {
        w[0] = w0[0] + z[0] * qd;
        w[1] = w0[1] + z[1] * qd;
        w[2] = w0[2] + z[2] * qd;
        v[0] = v0[0];
        v[1] = v0[1];
        v[2] = v0[2];
    } else {
        w[0] = w0[0];
        w[1] = w0[1];
        w[2] = w0[2];
        v[0] = v0[0] + z[0] * qd;
        v[1] = v0[1] + z[1] * qd;
        v[2] = v0[2] + z[2] * qd;
    }
    real wx = w[0], wy = w[1], wz = w[2];   // v += w x r
    v[0] = v[0] + (wy * rz - wz * ry);
    v[1] = v[1] + (wz * rx - wx * rz);
    v[2] = v[2] + (wx * ry - wy * rx);
}

// K_i from K_{i-1} (S_IN, kept in S_PREV) and A_i(q)
static void compose(real *S, bool revolute) {
    for (int j = 0; j < 13; j++) {
        S[S_PREV + j] = S[S_IN + j];
    }
    compose_at(S + S_PREV, S + S_ROT, S[S_QD], revolute, S + S_Z, S + S_K);
}

// ---- the neighbour check and the bridge, depth 1 (neighbours.py; Hamilton et al.) ----

// The bridge over neighbour i-1 (neighbours.bridge, compose_link): K_{i-1} composed from
// K_{i-2} (S_NB_IN) over its joint (q, qd) into S_IN, for kinematic_i
static void nb_bridge(real *S, const int32_t *I, real q, real qd) {
    bool revolute = I[I_NB] & NB_REV;
    real rt[7], z[3];
    dh_at(S + S_NB_DH, revolute, S[S_NB_DH + 4], q, rt);
    compose_at(S + S_NB_IN, rt, qd, revolute, z, S + S_IN);
}

// Neighbour i-1's check (neighbours.mismatch, joint_raw and _local, expression for
// expression): its K_{i-1} in S_IN against K_{i-1} recomputed from K_{i-2} (S_NB_IN) with
// the joint the two packets imply; true if the mismatch is within S_NB_TOL, then that
// joint (j0, j1, qd) into S_NB_Q; the mismatch into S_NB_E
static bool nb_check(real *S, bool revolute) {
    const real *k0 = S + S_NB_IN, *k1 = S + S_IN, *dh = S + S_NB_DH;
    real aw = k0[0], ax = -k0[1], ay = -k0[2], az = -k0[3];   // conj(quat_{i-2})
    real z0 = R(2.0) * (k0[1] * k0[3] + k0[0] * k0[2]);       // vec.qaxis_z
    real z1 = R(2.0) * (k0[2] * k0[3] - k0[0] * k0[1]);
    real z2 = R(1.0) - R(2.0) * (k0[1] * k0[1] + k0[2] * k0[2]);
    real j0, j1 = R(0.0), qd, rt[7];
    if (revolute) {   // quat_{i-1} = quat_{i-2} Rz(theta + q) Rx(alpha): Rx(alpha) off the right
        real bw = k1[0], bx = k1[1], by = k1[2], bz = k1[3];
        real mw = aw * bw - ax * bx - ay * by - az * bz;   // vec.qmul
        real mx = aw * bx + ax * bw + ay * bz - az * by;
        real my = aw * by - ax * bz + ay * bw + az * bx;
        real mz = aw * bz + ax * by - ay * bx + az * bw;
        real ca = dh[2], sa = dh[3], cx = -sa, cy = R(0.0), cz = R(0.0);
        j0 = mw * ca - mx * cx - my * cy - mz * cz;
        j1 = mw * cz + mx * cy - my * cx + mz * ca;
        qd = z0 * (k1[10] - k0[10]) + z1 * (k1[11] - k0[11]) + z2 * (k1[12] - k0[12]);
        real n = root(j0 * j0 + j1 * j1), ct = R(1.0), st = R(0.0);
        if (n != R(0.0)) {
            ct = j0 / n;
            st = j1 / n;
        }
        real c = ct * ct - st * st, s = R(2.0) * (st * ct);
        rt[0] = ct * ca;
        rt[1] = ct * sa;
        rt[2] = st * sa;
        rt[3] = st * ca;
        rt[4] = dh[1] * c;
        rt[5] = dh[1] * s;
        rt[6] = dh[0];
    } else {
        real dx = k1[4] - k0[4], dy = k1[5] - k0[5], dz = k1[6] - k0[6];
        j0 = z0 * dx + z1 * dy + z2 * dz - dh[0];
        real wx = k0[10], wy = k0[11], wz = k0[12];   // dv = (v1 - v0) - w x dp
        real ex = (k1[7] - k0[7]) - (wy * dz - wz * dy);
        real ey = (k1[8] - k0[8]) - (wz * dx - wx * dz);
        real ez = (k1[9] - k0[9]) - (wx * dy - wy * dx);
        qd = z0 * ex + z1 * ey + z2 * ez;
        dh_at(dh, false, dh[4], j0, rt);
    }
    real z[3], k[13];
    compose_at(k0, rt, qd, revolute, z, k);
    real e = R(0.0);
    for (int j = 4; j < 7; j++) {   // positions only (a bridged packet is off most in v, w)
        real x = k[j] - k1[j];
        if (x > e) {
            e = x;
        } else if (-x > e) {
            e = -x;
        }
    }
    real c = k[0] * k1[0] + k[1] * k1[1] + k[2] * k1[2] + k[3] * k1[3];
    c = c < R(0.0) ? -c : c;
    if (R(1.0) - c > e) {
        e = R(1.0) - c;
    }
    S[S_NB_E] = e;
    if (e <= S[S_NB_TOL]) {
        S[S_NB_Q] = j0;
        S[S_NB_Q + 1] = j1;
        S[S_NB_Q + 2] = qd;
        return true;
    }
    return false;
}

// the gravity couplet's point: p + R(quat) centroid (agent._to_world, vec.qrot)
static void couplet(real *S) {
    const real *q = S + S_K, *p = S + S_K + 4, *x = S + S_CENTROID;
    real w = q[0], ux = q[1], uy = q[2], uz = q[3];
    real tx = uy * x[2] - uz * x[1];   // t = 2 (u x v)
    real ty = uz * x[0] - ux * x[2];
    real tz = ux * x[1] - uy * x[0];
    tx = R(2.0) * tx;
    ty = R(2.0) * ty;
    tz = R(2.0) * tz;
    real cx = uy * tz - uz * ty;       // c = u x t
    real cy = uz * tx - ux * tz;
    real cz = ux * ty - uy * tx;
    real *o = S + S_COUPLET;
    o[0] = p[0] + (x[0] + w * tx + cx);
    o[1] = p[1] + (x[1] + w * ty + cy);
    o[2] = p[2] + (x[2] + w * tz + cz);
}

// ---- torque (global_proxy.py, behaviours.py, agent.actuate; docs/design.md §3, §5) ----

// u_i = [(z x (p_app - p_{i-1}))^T, z^T] f (revolute), [z^T, 0] f (prismatic)  (4.128, 4.141)
static real share(const real *S, bool revolute, const real *pf) {
    const real *z = S + S_Z, *f = pf + 3;
    if (revolute) {
        const real *pp = S + S_PREV + 4;
        real rx = pf[0] - pp[0];
        real ry = pf[1] - pp[1];
        real rz = pf[2] - pp[2];
        return (z[1] * rz - z[2] * ry) * f[0] + (z[2] * rx - z[0] * rz) * f[1]
               + (z[0] * ry - z[1] * rx) * f[2] + z[0] * f[3] + z[1] * f[4] + z[2] * f[5];
    }
    return z[0] * f[0] + z[1] * f[1] + z[2] * f[2];
}

// continuous joint-limit repulsion (7.254), behaviours.joint_limit
static real joint_limit(real q, const real *jl) {
    real q_low = jl[0], q_high = jl[1], eta = jl[2], rho0 = jl[3];
    real u = R(0.0);
    real rho = q_high - q;
    if (rho < rho0) {
        rho = rho > R(1e-3) ? rho : R(1e-3);
        u = u - eta * (R(1.0) / rho - R(1.0) / rho0) / (rho * rho);
    }
    rho = q - q_low;
    if (rho < rho0) {
        rho = rho > R(1e-3) ? rho : R(1e-3);
        u = u + eta * (R(1.0) / rho - R(1.0) / rho0) / (rho * rho);
    }
    return u;
}

// the behaviours' torques, linear arbitration u = sum k_j u_j (5.177), saturation (6.216);
// false if u is not usable (then u = 0)
static bool torque(real *S, bool revolute, bool goal, int n_assert, real q, real qd) {
    real *c = S + S_C, *k = S + S_GAIN;
    for (int j = 0; j < 6; j++) {
        c[j] = R(0.0);
    }
    if (k[0] != R(0.0) && goal) {
        c[0] = share(S, revolute, S + S_GOAL);
    }
    real s = R(0.0);
    for (int j = 0; j < n_assert; j++) {
        s = s + share(S, revolute, S + S_ASSERT + 9 * j);
    }
    c[1] = s;
    if (k[2] != R(0.0)) {   // behaviours.pd (7.274)
        c[2] = S[S_PD + 1] * (S[S_PD] - q) - S[S_PD + 2] * qd;
    }
    if (k[3] != R(0.0)) {
        c[3] = joint_limit(q, S + S_JL);
    }
    real u = k[0] * c[0] + k[1] * c[1] + k[2] * c[2] + k[3] * c[3] + c[4];
    real u_sat = S[S_USAT];
    if (u > u_sat) {
        u = u_sat;
    } else if (u < -u_sat) {
        u = -u_sat;
    }
    bool ok = usable(u);   // never a NaN torque, whatever went wrong above
    S[S_U] = ok ? u : R(0.0);
    return ok;
}

// ---- the frames in and out (the glues' rx, kinematic, torque) ----

// A received frame of n bytes checked as messages.Decoder checks it (length, CRC, type,
// layout): its type if it is one linkcore takes for this agent (I: its tick, link and
// I_NB), else 0:
//   SYNC (broadcast or to the link), JOINT_STATE to the link, KINEMATIC to the link of
//   this tick (unless the agent has neighbours and checks them in Python), GOAL
//   (broadcast) of this tick; NB_TAKEN for K_{i-2} of this tick (KINEMATIC to link i-1)
//   where linkcore checks neighbour i-1 (NB_CHECK).
static int rx_check(const uint8_t *f, size_t n, const int32_t *I) {
    if (n < 8 || f[5] + 8u != n) {
        return 0;
    }
    long tick = I[I_TICK], link = I[I_LINK];
    int t = f[0], dst = f[2], nb = I[I_NB];
    const uint8_t *pay = f + HEADER;
    bool mine;   // the right size, and this agent's to act on
    switch (t) {
        case T_SYNC:   // (a tick past 2^31 - 1 is the Python's to drop)
            mine = n == 12 && (dst == BROADCAST || dst == link) && get_u32(pay) <= INT32_MAX;
            break;
        case T_JOINT_STATE:
            mine = n == 45 && dst == link && get_u32(pay) <= INT32_MAX;
            break;
        case T_KINEMATIC:
            mine = n == K_FRAME && tick >= 0 && get_u32(pay) == (uint32_t)tick
                   && ((dst == link && (!(nb & NB_ON) || (nb & NB_CHECK)))
                       || (dst == link - 1 && (nb & NB_CHECK)));
            if (mine && dst != link) {
                t = NB_TAKEN;
            }
            break;
        case T_GOAL:
            mine = n == 49 && dst == BROADCAST && tick >= 0 && get_u32(pay) == (uint32_t)tick;
            break;
        default:
            mine = false;
    }
    if (!mine) {
        return 0;
    }
    unsigned c = crc16(f, n - 2);
    if (f[n - 2] != (c & 0xff) || f[n - 1] != (c >> 8)) {
        return 0;
    }
    return t;
}

// The payload of a frame rx_check passed as type t, into S (and ints, for SYNC and
// JOINT_STATE: the tick, then the flags); false if a float is not usable (nothing taken)
//   JOINT_STATE: q, qd, p_psh, x_r into S_JOINT;  KINEMATIC: K_{i-1} into S_IN;
//   NB_TAKEN: K_{i-2} into S_NB_IN;  GOAL: p_app and f into S_GOAL.
static bool rx_take(int t, const uint8_t *pay, real *S, int32_t *ints) {
    real tmp[13];
    switch (t) {
        case T_KINEMATIC:   // tick, quat, p, v, w
        case NB_TAKEN:
            if (!get_floats(tmp, pay + 4, 13)) {
                return false;
            }
            for (int j = 0; j < 13; j++) {
                S[(t == NB_TAKEN ? S_NB_IN : S_IN) + j] = tmp[j];
            }
            break;
        case T_GOAL:        // tick, goal_id, p_app(3), f(6)
            if (!get_floats(tmp, pay + 5, 9)) {
                return false;
            }
            for (int j = 0; j < 9; j++) {
                S[S_GOAL + j] = tmp[j];
            }
            break;
        default:            // SYNC: tick; JOINT_STATE: tick, q, qd, flags, p_psh(3), x_r(3)
            if (t == T_JOINT_STATE) {
                if (!get_floats(tmp, pay + 4, 2) || !get_floats(tmp + 2, pay + 13, 6)) {
                    return false;
                }
                for (int j = 0; j < 8; j++) {
                    S[S_JOINT + j] = tmp[j];
                }
                ints[1] = pay[12];
            }
            ints[0] = (int32_t)get_u32(pay);   // <= INT32_MAX (rx_check)
    }
    return true;
}

// K_i from S_IN into S_K, encoded as the KINEMATIC frame (K_FRAME bytes) to `dst` in tx with
// sequence number seq + 1 if ta is not NULL, which gets the link's gravity ASSERT couplet
// (ASSERT_FRAME bytes, sequence seq, to the host) that leaves before it; else K_i goes with seq.
static void kinematic_tx(real *S, bool revolute, uint32_t tick, int link, int dst, int seq,
    uint8_t *tx, uint8_t *ta) {
    compose(S, revolute);
    if (ta != NULL) {
        couplet(S);
        put_u32(ta + HEADER, tick);
        ta[HEADER + 4] = link;
        ta[HEADER + 5] = KIND_GRAVITY;
        seal(ta, T_ASSERT, link, 0, seq, put_floats(ta + HEADER + 6, S + S_COUPLET, 9));
        seq = seq + 1;
    }
    put_u32(tx + HEADER, tick);
    seal(tx, T_KINEMATIC, link, dst, seq, put_floats(tx + HEADER + 4, S + S_K, 13));
}

// The torque (components into S_C, u into S_U) and its TORQUE frame (TORQUE_FRAME bytes, to the
// host) in tx, reporting `state`; false if u was not usable (then u = 0)
static bool torque_tx(real *S, bool revolute, bool goal, int n_assert, real q, real qd,
    uint8_t *tx, uint32_t tick, int link, int seq, int state) {
    bool finite = torque(S, revolute, goal, n_assert, q, qd);
    put_u32(tx + HEADER, tick);
    uint8_t *p = put_floats(tx + HEADER + 4, S + S_U, 1);
    *p++ = state;
    seal(tx, T_TORQUE, link, 0, seq, put_floats(p, S + S_C, 6));
    return finite;
}

// K_i and its frames from I (agent.send_kinematic): the KINEMATIC frame in tx, the gravity
// couplet's ASSERT (FLAG_GRAVITY) in tx + K_FRAME, leaving first; the sequence numbers taken
static void kinematic_i(real *S, int32_t *I, uint8_t *tx) {
    bool gravity = (I[I_FLAGS] & FLAG_GRAVITY) != 0;
    int seq = (int)I[I_SEQ];
    kinematic_tx(S, I[I_FLAGS] & FLAG_REV, (uint32_t)I[I_TICK], (int)I[I_LINK], (int)I[I_DOWN], seq,
        tx, gravity ? tx + K_FRAME : NULL);
    I[I_SEQ] = (seq + 1 + gravity) & 0xFFFF;
    I[I_KIN] = I[I_TICK];
}

// The torque of this tick from I (agent.actuate): torque_tx with the goal or without,
// n_assert and the sequence number from I (the agent takes it when it sends the frame)
static bool torque_i(real *S, int32_t *I, uint8_t *tx, bool goal, real q, real qd, int state) {
    return torque_tx(S, I[I_FLAGS] & FLAG_REV, goal, (int)I[I_NA], q, qd, tx, (uint32_t)I[I_TICK],
        (int)I[I_LINK], (int)I[I_SEQ], state);
}

// What the agent does at once with a frame rx_take took as type t (agent.receive: one
// native call for a hot frame, make mcu-bench):
//   K_{i-2} overheard (NB_TAKEN): its tick into I_NB_TICK -> NB_TAKEN;
//   KINEMATIC, this tick's K_i not yet out, K_{i-2} of this tick taken (NB_CHECK):
//     neighbour i-1's check (nb_check): passed, its tick into I_NB_OK, I_NB_AT; failed -> NB_FAILED
//     (the agent's neighbours.failed says what follows);
//   KINEMATIC, this tick's K_i not yet out: K_i and its frames (kinematic_i) -> K_SENT,
//     or K_QUEUED where they went onto the node's transmit buffers `blk` (the gravity
//     couplet's ASSERT, then K_i I_COPIES times: cycle.kinematic_out's order);
//   GOAL, a plain cycle (FLAG_PLAIN, `state` RUN) whose K_i is out and torque is not:
//     take_goal and actuate's torque, u usable -> GOAL_ACTED (I_GOAL: this tick; safety's
//     N, V: the goal's tick, the torque on the motor),
//     | DUE_STATUS, DUE_TIMING where STATUS and TIMING go out after it,
//     | DUE_QUEUED where the TORQUE frame went onto `blk` (FLAG_TORQUE_BUS);
//   otherwise t (the agent's Python does the rest).
static int rx_act(int t, real *S, int32_t *I, uint8_t *tx, uint8_t *blk, int state, int32_t *N, real *V) {
    int32_t tick = I[I_TICK];
    if (t == NB_TAKEN) {
        I[I_NB_TICK] = tick;
        return t;
    }
    if (t == T_KINEMATIC && I[I_KIN] != tick) {
        if ((I[I_NB] & NB_CHECK) && I[I_NB_TICK] == tick) {
            if (!nb_check(S, I[I_NB] & NB_REV)) {
                return NB_FAILED;
            }
            I[I_NB_OK] = I[I_NB_AT] = tick;
        }
        kinematic_i(S, I, tx);
        const uint8_t *f[2] = {tx + K_FRAME, tx};
        int n[2] = {ASSERT_FRAME, K_FRAME};
        int times[2] = {(I[I_FLAGS] & FLAG_GRAVITY) != 0, I[I_COPIES]};
        return wire_out(blk, f, n, times, 2) ? K_QUEUED : K_SENT;
    }
    if (t == T_GOAL && state == STATE_RUN && (I[I_FLAGS] & FLAG_PLAIN) && I[I_KIN] == tick
            && I[I_ACTED] != tick && I[I_NA] >= 0 && I[I_NA] <= MAX_ASSERT) {
        if (!torque_i(S, I, tx, true, S[S_Q], S[S_QD], state)) {
            return t;   // the Python's actuate says why (F_INTERNAL)
        }
        I[I_GOAL] = tick;   // (I_ACTED and I_SEQ: the agent's _close, as on its Python path)
        N[N_LAST_GOAL] = tick;   // safety's on_goal, and the torque on the motor (cycle.close)
        V[V_LAST_U] = S[S_U];
        N[N_U_RUN] = 1;
        int due = tick % TIMING_SLOTS == I[I_TIMING_AT] ? DUE_TIMING : 0;
        const uint8_t *f[1] = {tx};
        int n[1] = {TORQUE_FRAME}, times[1] = {1};
        if ((I[I_FLAGS] & FLAG_TORQUE_BUS) && wire_out(blk, f, n, times, 1)) {
            due |= DUE_QUEUED;
        }
        if (I[I_EVERY] > 0 && tick % I[I_EVERY] == I[I_EVERY_AT]) {
            due |= DUE_STATUS;
        }
        return GOAL_ACTED | due;
    }
    return t;
}
