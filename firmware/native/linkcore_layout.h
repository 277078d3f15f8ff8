// linkcore's layouts (the float state S, the integers I, safety's N and V, the
// node's buffer block, frame lengths): written by `make layouts` from
// firmware/layout.py, where each is defined and explained. Do not edit.
#ifndef LINKCORE_LAYOUT_H
#define LINKCORE_LAYOUT_H

// ---- the float state S ----
#define S_ROT 0           // rot(A_i(q)), quaternion w x y z, in frame i-1
#define S_TRANS 4         // trans(A_i(q))
#define S_QD 7            // the joint speed of this tick
#define S_DH 8            // d, a, cos(alpha/2), sin(alpha/2)
#define S_IN 12           // K_{i-1} as received: quat(4) p(3) v(3) w(3)
#define S_PREV 25         // K_{i-1} composed from: quat(4) p(3) = p_{i-1} v(3) w(3)
#define S_Z 38            // the joint axis z_i (world), composed with K_i
#define S_K 41            // K_i: quat(4) p(3) v(3) w(3)
#define S_COUPLET 54      // the gravity couplet: p(3), then the weight's wrench (6)
#define S_GOAL 63         // the goal of this tick: p_app(3), f(6)
#define S_GAIN 72         // k_proxy, k_assert, k_local, k_joint_limit
#define S_PD 76           // q_c, kq, kw
#define S_JL 79           // q_low, q_high, eta, rho0
#define S_USAT 83         // the torque limit
#define S_CENTROID 84     // the link's centroid in its own frame
#define S_C 87            // torque components: proxy, assertions, local_pd, joint_limit, brake, other
#define S_U 93            // the torque after arbitration and saturation
#define S_ASSERT 94       // MAX_ASSERT couplets of this tick: p(3), f(6)
#define S_JOINT 238       // JOINT_STATE as received: q, qd, p_psh(3), x_r(3)
#define S_Q 246           // the joint angle of this tick (with S_QD: what the torque is of)
#define S_THETA 247       // the DH theta (its offset, revolute; the angle, prismatic)
#define S_NB_IN 248       // the neighbour check (depth 1): K_{i-2} overheard, quat(4) p(3) v(3) w(3)
#define S_NB_DH 261       // neighbour i-1's DH: d, a, cos(alpha/2), sin(alpha/2), theta
#define S_NB_TOL 266      // the check's tolerance (m)
#define S_NB_E 267        // the last check's mismatch (m)
#define S_NB_Q 268        // neighbour i-1's joint at its last passed check (I_NB_AT): j0, j1, qd (neighbours.joint_raw)
#define SLOTS 271

// ---- the agent's integers I ----
#define I_TICK 0          // the tick synced to (-1: none yet)
#define I_SEQ 1           // the sequence number of the agent's next frame
#define I_KIN 2           // the tick whose K_i went out
#define I_ACTED 3         // the tick whose torque went out
#define I_NA 4            // assertion couplets of this tick in S_ASSERT
#define I_GOAL 5          // the tick of the last goal taken
#define I_LINK 6          // the link's index
#define I_DOWN 7          // K_i's destination
#define I_FLAGS 8         // FLAG_*
#define I_RX 9            // linkcore.rx: a SYNC's or JOINT_STATE's tick, then its flags
#define I_EVERY 11        // STATUS every this many ticks, at tick % I_EVERY == I_EVERY_AT
#define I_EVERY_AT 12
#define I_TIMING_AT 13    // TIMING at tick % TIMING_SLOTS == I_TIMING_AT
#define I_COPIES 14       // K_i goes out this many times (kinematic_copies)
#define I_JOINT 15        // 1: the HAL's reading is the JOINT_STATE linkcore.rx took into S_JOINT
#define I_NB 16           // NB_*: the neighbour check in linkcore.rx
#define I_NB_TICK 17      // the tick of the K_{i-2} in S_NB_IN
#define I_NB_OK 18        // the tick of neighbour i-1's last passed check (-1: none)
#define I_NB_AT 19        // the tick of its joint in S_NB_Q
#define INTS 20

// ---- I[I_FLAGS] ----
#define FLAG_REV 1        // a revolute joint
#define FLAG_GRAVITY 2    // K_i goes with the gravity couplet's ASSERT (its frame at tx + K_FRAME)
#define FLAG_PLAIN 4      // this tick's goal closes the cycle in linkcore.rx (cycle.on_sync says when)
#define FLAG_TORQUE_BUS 8 // the TORQUE report goes on the bus (the HAL has no report())
#define FLAG_SAMPLED 16   // linkcore.sample took this tick's reading: it is in S_Q, S_QD

// ---- linkcore.rx's answers beyond a frame type ----
#define K_QUEUED 18       // K_i composed, its frames queued on the node's transmit buffers
#define K_SENT 19         // K_i composed: its frames in tx
#define GOAL_ACTED 20     // the cycle closed: u in S_U, the TORQUE frame in tx, and
#define DUE_STATUS 1      // | these where STATUS, TIMING go out after it this tick
#define DUE_TIMING 2
#define DUE_QUEUED 8      // | this where the TORQUE frame is queued on the node's buffers
#define NB_TAKEN 16       // K_{i-2} overheard, into S_NB_IN
#define NB_FAILED 17      // K_{i-1} taken into S_IN, its check failed (S_NB_E): K_i not composed

// ---- I[I_NB] ----
#define NB_CHECK 1        // rx takes K_{i-2} and checks K_{i-1} against it (depth 1, nothing bridged)
#define NB_REV 2          // neighbour i-1's joint is revolute
#define NB_ON 4           // the agent checks neighbours: its K_{i-1} is linkcore.rx's only with NB_CHECK

// ---- safety's integers N ----
#define N_TICK_PREV 0     // the tick of the last sample (-2: none)
#define N_LAST_GOAL 1     // the tick of the last goal (the goal watchdog's)
#define N_WATCHDOG 2      // watchdog_cycles
#define N_FROZEN 3        // samples the reading has stood still (check_response)
#define N_U_RUN 4         // the last torque was a RUN torque that reached the motor
#define N_PREV 5          // V_Q_PREV, V_QD_PREV hold a reading
#define N_PYTHON 6        // every sample is the Python's (safety checks the torque, or the agent's Python acts on it)
#define NS 7

// ---- safety's floats V ----
#define V_Q_PREV 0        // the previous reading
#define V_QD_PREV 1
#define V_LAST_U 2        // the torque the joint had on it since
#define V_MAX_Q 3         // max_q_step and its negative
#define V_MAX_Q_NEG 4
#define V_QD_MAX 5        // qd_max and its negative
#define V_QD_MAX_NEG 6
#define V_RESPOND_U 7     // respond_u (0: the dead-motor check is off)
#define V_Q_MIN 8         // q_low - position_margin: below it, position_limit (off: -1e30)
#define V_Q_MAX 9         // q_high + position_margin: above it, position_limit (off: 1e30)
#define VS 10

// ---- the node's buffer block ----
#define MAX_WIRE 80       // COBS bytes of the longest logical frame, with margin
#define TX 162            // the bytes a transmit buffer holds
#define ROOM 81           // queued beyond this, a longest frame does not fit: written out first
#define POOL 8            // frames held per poll round
#define POOL_FRAME 64     // a pool frame's length (messages.MAX_FRAME)
#define FROM_DOWN 0x1000000 // the forwarder's span: the read came from the down port
#define MINE_UP 64        // routing table bits: the node's own, from up / from down
#define MINE_DOWN 128
#define BLK_TOTAL 0       // frames passed on by the forwarder (uint32 LE)
#define BLK_QUEUED 4      // the bytes queued for the up port, then the down port
#define BLK_K 6           // frames handled by the forwarder's last call (uint16 LE)
#define BLK_TX 8          // the up port's transmit buffer
#define BLK_TX_DOWN 170   // the down port's
#define BLK_TAB 332       // the routing table: dst -> bits 0-1 from up, 2-3 from down (1 pass up, 2 pass down), 4-5 the agent's frames' ports, MINE_*
#define BLK_CARRY 588     // set: a run without its delimiter carried over from up, from down
#define BLK_NMINE 590     // frames in the pool
#define BLK_BAD 591       // frames for the node that were not valid COBS, not yet counted
#define BLK_RING 592      // set: a ring's goal waves are checked by the forwarder
#define BLK_RING_TICK 593 // the low byte of the tick whose GOAL has passed
#define BLK_RING_HELD 594 // set: a GOAL has passed (BLK_RING_TICK holds its tick)
#define BLK_BATCH 595     // set while the node hands the agent its frames (written out once after)
#define BLK_MINE_N 596    // each pool frame's length
#define BLK_POOL 604      // the pool: the node's own frames of this round, decoded
#define BLK 1116

// ---- frames ----
#define HEADER 6          // type, src, dst, seq(2), len
#define K_FRAME 64        // KINEMATIC
#define ASSERT_FRAME 50   // ASSERT (one couplet)
#define TORQUE_FRAME 41   // TORQUE
#define TORQUE_PAYLOAD 33
#define TX_FRAMES 114     // the agent's frame buffer: K_i, then the gravity ASSERT at K_FRAME
#define MAX_ASSERT 16     // assertion couplets applied per cycle
#define TIMING_SLOTS 12   // cycles a TIMING frame reports

// ---- the wire format's numbers (bus_protocol) ----
#define T_SYNC 1          // messages.SYNC
#define T_JOINT_STATE 2   // messages.JOINT_STATE
#define T_KINEMATIC 3     // messages.KINEMATIC
#define T_GOAL 4          // messages.GOAL
#define T_ASSERT 5        // messages.ASSERT
#define T_TORQUE 6        // messages.TORQUE
#define BROADCAST 255     // messages.BROADCAST
#define KIND_GRAVITY 2    // messages.KIND_GRAVITY
#define MAC_BYTES 4       // messages.MAC_BYTES
#define AUTH_TRAILER 8    // messages.AUTH_TRAILER
#define STATE_RUN 1       // states.RUN
#define STATE_BRAKED 2    // states.BRAKED
#define F_SENSOR 64       // states.F_SENSOR

// ---- the layout's identity ----
#define LAYOUT_ID 0x147510F // SLOTS | INTS << 10 | NS << 16 | VS << 21

#endif
