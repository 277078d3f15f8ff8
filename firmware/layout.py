# Every layout the firmware's hot path shares between Python, C and Thumb assembly,
# written once: the float state S and the integers I of a link agent (with I's flags and
# linkcore.rx's answers), safety's per-sample state N and V, the node's buffer block, and
# the lengths of the frames the hot path writes. `make layouts` (host/tools/layouts.py) writes
# them out as the const blocks of the firmware modules that use them (between
# "# ---- layout" marker lines: MicroPython folds only a module's own const names), as
# firmware/native/linkcore_layout.h for the C core, and the Thumb assembly's operands
# (firmware/accel/thumb.py); tests/test_layouts.py fails when a generated file is stale.
# Python, not a data file: offsets follow from sizes, and frame lengths from the wire
# format (bus_protocol/messages.py), so each number is derived where it is defined.
# Read by the generator and the tests only (CPython); not imported by the firmware.
from bus_protocol import messages as m
from bus_protocol import states


def _fields(fields, end=None, start=0):
    """(name, size, comment) one after another from `start` -> [(name, offset, comment)],
    then (end, total, '') where `end` names the total."""
    out = []
    at = start
    for name, size, comment in fields:
        out.append((name, at, comment))
        at += size
    if end:
        out.append((end, at, ""))
    return out


MAX_ASSERT = 16   # assertion couplets applied per cycle (RMOA + gravity): bounded work
TIMING_SLOTS = 12   # cycles a TIMING frame reports (firmware/services.py FinishLog)

# ---- the float state S of a link agent (LinkAgent.S, linkcore's `real`) ----
S = _fields((
    ("S_ROT", 4, "rot(A_i(q)), quaternion w x y z, in frame i-1"),
    ("S_TRANS", 3, "trans(A_i(q))"),
    ("S_QD", 1, "the joint speed of this tick"),
    ("S_DH", 4, "d, a, cos(alpha/2), sin(alpha/2)"),
    ("S_IN", 13, "K_{i-1} as received: quat(4) p(3) v(3) w(3)"),
    ("S_PREV", 13, "K_{i-1} composed from: quat(4) p(3) = p_{i-1} v(3) w(3)"),
    ("S_Z", 3, "the joint axis z_i (world), composed with K_i"),
    ("S_K", 13, "K_i: quat(4) p(3) v(3) w(3)"),
    ("S_COUPLET", 9, "the gravity couplet: p(3), then the weight's wrench (6)"),
    ("S_GOAL", 9, "the goal of this tick: p_app(3), f(6)"),
    ("S_GAIN", 4, "k_proxy, k_assert, k_local, k_joint_limit"),
    ("S_PD", 3, "q_c, kq, kw"),
    ("S_JL", 4, "q_low, q_high, eta, rho0"),
    ("S_USAT", 1, "the torque limit"),
    ("S_CENTROID", 3, "the link's centroid in its own frame"),
    ("S_C", 6, "torque components: proxy, assertions, local_pd, joint_limit, brake, other"),
    ("S_U", 1, "the torque after arbitration and saturation"),
    ("S_ASSERT", 9 * MAX_ASSERT, "MAX_ASSERT couplets of this tick: p(3), f(6)"),
    ("S_JOINT", 8, "JOINT_STATE as received: q, qd, p_psh(3), x_r(3)"),
    ("S_Q", 1, "the joint angle of this tick (with S_QD: what the torque is of)"),
    ("S_THETA", 1, "the DH theta (its offset, revolute; the angle, prismatic)"),
    ("S_NB_IN", 13, "the neighbour check (depth 1): K_{i-2} overheard, quat(4) p(3) v(3) w(3)"),
    ("S_NB_DH", 5, "neighbour i-1's DH: d, a, cos(alpha/2), sin(alpha/2), theta"),
    ("S_NB_TOL", 1, "the check's tolerance (m)"),
    ("S_NB_E", 1, "the last check's mismatch (m)"),
    ("S_NB_Q", 3, "neighbour i-1's joint at its last passed check (I_NB_AT): j0, j1, qd (neighbours.joint_raw)"),
), end="SLOTS")

# ---- the agent's integers I, an array('i'): ticks run to 2^31 - 1 (int32; 'q' items
# would be long-int objects on MicroPython) ----
I = _fields((
    ("I_TICK", 1, "the tick synced to (-1: none yet)"),
    ("I_SEQ", 1, "the sequence number of the agent's next frame"),
    ("I_KIN", 1, "the tick whose K_i went out"),
    ("I_ACTED", 1, "the tick whose torque went out"),
    ("I_NA", 1, "assertion couplets of this tick in S_ASSERT"),
    ("I_GOAL", 1, "the tick of the last goal taken"),
    ("I_LINK", 1, "the link's index"),
    ("I_DOWN", 1, "K_i's destination"),
    ("I_FLAGS", 1, "FLAG_*"),
    ("I_RX", 2, "linkcore.rx: a SYNC's or JOINT_STATE's tick, then its flags"),
    ("I_EVERY", 1, "STATUS every this many ticks, at tick % I_EVERY == I_EVERY_AT"),
    ("I_EVERY_AT", 1, ""),
    ("I_TIMING_AT", 1, "TIMING at tick % TIMING_SLOTS == I_TIMING_AT"),
    ("I_COPIES", 1, "K_i goes out this many times (kinematic_copies)"),
    ("I_JOINT", 1, "1: the HAL's reading is the JOINT_STATE linkcore.rx took into S_JOINT"),
    ("I_NB", 1, "NB_*: the neighbour check in linkcore.rx"),
    ("I_NB_TICK", 1, "the tick of the K_{i-2} in S_NB_IN"),
    ("I_NB_OK", 1, "the tick of neighbour i-1's last passed check (-1: none)"),
    ("I_NB_AT", 1, "the tick of its joint in S_NB_Q"),
), end="INTS")
FLAGS = [
    ("FLAG_REV", 1, "a revolute joint"),
    ("FLAG_GRAVITY", 2, "K_i goes with the gravity couplet's ASSERT (its frame at tx + K_FRAME)"),
    ("FLAG_PLAIN", 4, "this tick's goal closes the cycle in linkcore.rx (cycle.on_sync says when)"),
    ("FLAG_TORQUE_BUS", 8, "the TORQUE report goes on the bus (the HAL has no report())"),
    ("FLAG_SAMPLED", 16, "linkcore.sample took this tick's reading: it is in S_Q, S_QD"),
]
# linkcore.rx's answers beyond a frame type: what it did with the frame at once
ANSWERS = [
    ("K_QUEUED", 0x12, "K_i composed, its frames queued on the node's transmit buffers"),
    ("K_SENT", 0x13, "K_i composed: its frames in tx"),
    ("GOAL_ACTED", 0x14, "the cycle closed: u in S_U, the TORQUE frame in tx, and"),
    ("DUE_STATUS", 1, "| these where STATUS, TIMING go out after it this tick"),
    ("DUE_TIMING", 2, ""),
    ("DUE_QUEUED", 8, "| this where the TORQUE frame is queued on the node's buffers"),
    ("NB_TAKEN", 0x10, "K_{i-2} overheard, into S_NB_IN"),
    ("NB_FAILED", 0x11, "K_{i-1} taken into S_IN, its check failed (S_NB_E): K_i not composed"),
]
# I[I_NB]
NB_FLAGS = [
    ("NB_CHECK", 1, "rx takes K_{i-2} and checks K_{i-1} against it (depth 1, nothing bridged)"),
    ("NB_REV", 2, "neighbour i-1's joint is revolute"),
    ("NB_ON", 4, "the agent checks neighbours: its K_{i-1} is linkcore.rx's only with NB_CHECK"),
]

# ---- safety's per-sample state (firmware/safety.py): its integers N, an array('i') ...
N = _fields((
    ("N_TICK_PREV", 1, "the tick of the last sample (-2: none)"),
    ("N_LAST_GOAL", 1, "the tick of the last goal (the goal watchdog's)"),
    ("N_WATCHDOG", 1, "watchdog_cycles"),
    ("N_FROZEN", 1, "samples the reading has stood still (check_response)"),
    ("N_U_RUN", 1, "the last torque was a RUN torque that reached the motor"),
    ("N_PREV", 1, "V_Q_PREV, V_QD_PREV hold a reading"),
    ("N_PYTHON", 1, "every sample is the Python's (safety checks the torque, or the agent's Python acts on it)"),
), end="NS")
# ... and its floats V, an array of the float S holds
V = _fields((
    ("V_Q_PREV", 1, "the previous reading"),
    ("V_QD_PREV", 1, ""),
    ("V_LAST_U", 1, "the torque the joint had on it since"),
    ("V_MAX_Q", 1, "max_q_step and its negative"),
    ("V_MAX_Q_NEG", 1, ""),
    ("V_QD_MAX", 1, "qd_max and its negative"),
    ("V_QD_MAX_NEG", 1, ""),
    ("V_RESPOND_U", 1, "respond_u (0: the dead-motor check is off)"),
    ("V_Q_MIN", 1, "q_low - position_margin: below it, position_limit (off: -1e30)"),
    ("V_Q_MAX", 1, "q_high + position_margin: above it, position_limit (off: 1e30)"),
), end="VS")

# ---- the node's buffer block (firmware/accel/forward.py: one bytearray holding what the
# cut-through forwarder, its C twin (linkcore_forward.h) and linkcore's wire_out work on
# besides the read: one buffer argument per call) ----
MAX_WIRE = 80   # COBS bytes of the longest logical frame (MAX_FRAME -> MAX_FRAME + 1), with margin
TX = 2 * (MAX_WIRE + 1)   # a transmit buffer: two longest frames (one byte counts it)
POOL = 8        # frames decoded per poll round for the agent (more: handed over in batches)
POOL_FRAME = m.MAX_FRAME
BUFFER = [
    ("MAX_WIRE", MAX_WIRE, "COBS bytes of the longest logical frame, with margin"),
    ("TX", TX, "the bytes a transmit buffer holds"),
    ("ROOM", TX - MAX_WIRE - 1, "queued beyond this, a longest frame does not fit: written out first"),
    ("POOL", POOL, "frames held per poll round"),
    ("POOL_FRAME", POOL_FRAME, "a pool frame's length (messages.MAX_FRAME)"),
    ("FROM_DOWN", 1 << 24, "the forwarder's span: the read came from the down port"),
    ("MINE_UP", 0x40, "routing table bits: the node's own, from up / from down"),
    ("MINE_DOWN", 0x80, ""),
] + _fields((
    ("BLK_TOTAL", 4, "frames passed on by the forwarder (uint32 LE)"),
    ("BLK_QUEUED", 2, "the bytes queued for the up port, then the down port"),
    ("BLK_K", 2, "frames handled by the forwarder's last call (uint16 LE)"),
    ("BLK_TX", TX, "the up port's transmit buffer"),
    ("BLK_TX_DOWN", TX, "the down port's"),
    ("BLK_TAB", 256, "the routing table: dst -> bits 0-1 from up, 2-3 from down "
                     "(1 pass up, 2 pass down), 4-5 the agent's frames' ports, MINE_*"),
    ("BLK_CARRY", 2, "set: a run without its delimiter carried over from up, from down"),
    ("BLK_NMINE", 1, "frames in the pool"),
    ("BLK_BAD", 1, "frames for the node that were not valid COBS, not yet counted"),
    ("BLK_RING", 1, "set: a ring's goal waves are checked by the forwarder"),
    ("BLK_RING_TICK", 1, "the low byte of the tick whose GOAL has passed"),
    ("BLK_RING_HELD", 1, "set: a GOAL has passed (BLK_RING_TICK holds its tick)"),
    ("BLK_BATCH", 1, "set while the node hands the agent its frames (written out once after)"),
    ("BLK_MINE_N", POOL, "each pool frame's length"),
    ("BLK_POOL", POOL * POOL_FRAME, "the pool: the node's own frames of this round, decoded"),
), end="BLK")

# ---- the frames the hot path writes: lengths (header, payload, CRC: bus_protocol/SPEC.md) ----
K_FRAME = m.frame_size(m.KINEMATIC)
ASSERT_FRAME = m.frame_size(m.ASSERT)
FRAMES = [
    ("HEADER", m.HEADER_SIZE, "type, src, dst, seq(2), len"),
    ("K_FRAME", K_FRAME, "KINEMATIC"),
    ("ASSERT_FRAME", ASSERT_FRAME, "ASSERT (one couplet)"),
    ("TORQUE_FRAME", m.frame_size(m.TORQUE), "TORQUE"),
    ("TORQUE_PAYLOAD", m.payload_size(m.TORQUE), ""),
    ("TX_FRAMES", K_FRAME + ASSERT_FRAME, "the agent's frame buffer: K_i, then the gravity ASSERT at K_FRAME"),
    ("MAX_ASSERT", MAX_ASSERT, "assertion couplets applied per cycle"),
    ("TIMING_SLOTS", TIMING_SLOTS, "cycles a TIMING frame reports"),
]

# the wire format's numbers the hot path uses (bus_protocol/messages.py, states.py: defined
# there; here only so that they reach the const blocks and C); C names them with a prefix
WIRE = [(name, getattr(m, name), "messages." + name) for name in (
    "SYNC", "JOINT_STATE", "KINEMATIC", "GOAL", "ASSERT", "TORQUE", "BROADCAST", "KIND_GRAVITY",
    "MAC_BYTES", "AUTH_TRAILER")] + [
    (name, getattr(states, name), "states." + name) for name in ("RUN", "BRAKED", "F_SENSOR")]
C_PREFIX = {"SYNC": "T_", "JOINT_STATE": "T_", "KINEMATIC": "T_", "GOAL": "T_", "ASSERT": "T_",
            "TORQUE": "T_", "RUN": "STATE_", "BRAKED": "STATE_", "F_SENSOR": ""}

# the sizes of S, I, N and V in one number: linkcore's, checked when it is imported
# (firmware/linkstate.py); one module global, not four (the module's dict is RAM on a board)
_SIZE = {name: value for entries in (S, I, N, V) for name, value, _ in entries}
assert _SIZE["SLOTS"] < 1 << 10 and _SIZE["INTS"] < 1 << 6 and _SIZE["NS"] < 1 << 5 and _SIZE["VS"] < 1 << 5
IDENTITY = [("LAYOUT_ID", _SIZE["SLOTS"] | _SIZE["INTS"] << 10 | _SIZE["NS"] << 16 | _SIZE["VS"] << 21,
             "SLOTS | INTS << 10 | NS << 16 | VS << 21")]

# every group, in order: (title, entries)
GROUPS = (
    ("the float state S", S),
    ("the agent's integers I", I),
    ("I[I_FLAGS]", FLAGS),
    ("linkcore.rx's answers beyond a frame type", ANSWERS),
    ("I[I_NB]", NB_FLAGS),
    ("safety's integers N", N),
    ("safety's floats V", V),
    ("the node's buffer block", BUFFER),
    ("frames", FRAMES),
    ("the wire format's numbers (bus_protocol)", WIRE),
    ("the layout's identity", IDENTITY),
)


def table():
    """{name: value} of every entry (names are unique: tests/test_layouts.py)."""
    return {name: value for _, entries in GROUPS for name, value, _ in entries}


globals().update(table())   # layout.S_Q and so on, for the tests and the generator
