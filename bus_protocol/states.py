# Agent states and fault codes as STATUS and TORQUE carry them (SPEC.md 0x06, 0x07), with
# their names and default reactions: the one table firmware, host and plant read
# (docs/design.md §5 "Fail-safe brake", 7.271-7.273). A new state or fault goes here, with
# its name. Runs under CPython and MicroPython.
#
# A fault latches (its bit stays set in STATUS.faults until COMMAND RELEASE or RESET) and
# puts the agent into the fault's reaction, the strongest of the latched ones winning:
#   hold   position hold: the brake PD about the angle at the fault, motor powered
#   damp   u = -kw qd: the joint coasts to rest (moteus's "damp" timeout mode)
#   brake  the brake PD and the holding brake (set_brake), the fail-safe of thesis 7.6.1
#   report nothing changes for this node; it tells the host (a neighbour fault: the node
#          keeps running and bridges its neighbour)
# The STATUS carrying a newly latched fault leaves at once (CANopen's EMCY), not on the
# agent's staggered status slot.
try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

# states (STATUS.state, TORQUE.state); HOLD, DAMP and BRAKED are the three reactions
INIT = const(0)
RUN = const(1)
BRAKED = const(2)
HOLD = const(3)
DAMP = const(4)
STATE_NAMES = {INIT: "init", RUN: "run", BRAKED: "braked", HOLD: "hold", DAMP: "damp"}

# reactions (a fault's configured reaction); REPORT keeps running
REPORT = const(0)
REACTION_STATE = {"report": RUN, "hold": HOLD, "damp": DAMP, "brake": BRAKED}
_STRENGTH = {RUN: 0, HOLD: 1, DAMP: 2, BRAKED: 3}

# fault bits (STATUS.faults, u16)
F_COMMAND = const(0x0001)          # brake commanded by the host or the scenario
F_BUS_LOST = const(0x0002)         # no SYNC for watchdog_ms (a silent bus)
F_GOAL_STALE = const(0x0004)       # no goal for watchdog_cycles control cycles
F_KIN_STALE = const(0x0008)        # no kinematic packet for kin_stale_cycles cycles
F_NEIGHBOUR_SILENT = const(0x0010)     # the proximal neighbour's K_{i-1} stopped (bridged)
F_NEIGHBOUR_DISAGREES = const(0x0020)  # a neighbour's K_i fails the recomputation check
F_SENSOR = const(0x0040)           # joint read failed, encoder jump or overspeed
F_MOTOR = const(0x0080)            # torque commanded, no motion (stall)
F_OVER_TORQUE = const(0x0100)      # |u| at u_sat for over_torque_cycles cycles
F_CONFIG = const(0x0200)           # a config blob was invalid (or arrived while running)
F_NAN = const(0x0400)              # NaN/inf in a received goal, packet or joint state
F_INTERNAL = const(0x0800)         # an exception inside the agent's cycle
F_NO_KEY = const(0x1000)           # no key provisioned and not "unauthenticated" (docs/security.md)
F_POSITION_LIMIT = const(0x2000)   # the joint beyond q_low, q_high by more than position_margin
FAULT_NAMES = {F_COMMAND: "command", F_BUS_LOST: "bus_lost", F_GOAL_STALE: "goal_stale",
               F_KIN_STALE: "kinematic_stale", F_NEIGHBOUR_SILENT: "neighbour_silent",
               F_NEIGHBOUR_DISAGREES: "neighbour_disagrees", F_SENSOR: "sensor_implausible",
               F_MOTOR: "motor_not_responding", F_OVER_TORQUE: "over_torque",
               F_CONFIG: "config_invalid", F_NAN: "nan_input", F_INTERNAL: "internal_error",
               F_NO_KEY: "no_key",
               F_POSITION_LIMIT: "position_limit"}

# default reaction per fault (safety.reactions in a link's config overrides by name)
DEFAULT_REACTIONS = {"command": "brake", "bus_lost": "brake", "goal_stale": "brake",
                     "kinematic_stale": "hold", "neighbour_silent": "report",
                     "neighbour_disagrees": "report", "sensor_implausible": "brake",
                     "motor_not_responding": "brake", "over_torque": "damp",
                     "config_invalid": "brake", "nan_input": "brake", "internal_error": "brake",
                     "no_key": "brake",
                     "position_limit": "brake"}


def state_name(state):
    return STATE_NAMES.get(state, "state %d" % state)


def fault_names(bits):
    """The names of the bits set in a STATUS.faults value, lowest bit first."""
    return [FAULT_NAMES[b] for b in sorted(FAULT_NAMES) if bits & b]


def stronger(a, b):
    """The stronger of two states' reactions (RUN < HOLD < DAMP < BRAKED)."""
    return a if _STRENGTH.get(a, 0) >= _STRENGTH.get(b, 0) else b


def is_fault_state(state):
    """BRAKED, HOLD and DAMP, the reactions, are the states from BRAKED up (the agent's
    hot path writes `state >= BRAKED`: a call is ~600 instructions on a Cortex-M4F)."""
    return state >= BRAKED
