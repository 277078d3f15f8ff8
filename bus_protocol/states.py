# Agent states and fault bits as STATUS and TORQUE carry them (SPEC.md 0x06, 0x07), with
# their names: the one table firmware, host and plant read (docs/design.md §5 "Fail-safe
# brake", 7.271-7.273). A new state or fault goes here, with its name.
try:
    from micropython import const
except ImportError:
    def const(x):
        return x

# states (STATUS.state, TORQUE.state)
INIT = const(0)
RUN = const(1)
BRAKED = const(2)
STATE_NAMES = {INIT: "init", RUN: "run", BRAKED: "braked"}

# fault bits (STATUS.faults)
F_COMMAND = const(1)        # brake commanded by the host or the scenario
F_LOST_BUS = const(2)       # no goal for more than watchdog cycles
F_ENCODER_JUMP = const(4)   # |q_k - q_{k-1}| beyond max_q_step
F_OVERSPEED = const(8)      # |qd| beyond qd_max
F_STALL = const(16)         # torque commanded, no motion
F_CONFIG = const(32)        # config rejected
F_SENSOR = const(64)        # the HAL could not read the joint (hal.read() False)
FAULT_NAMES = {F_COMMAND: "command", F_LOST_BUS: "lost_bus", F_ENCODER_JUMP: "encoder_jump",
               F_OVERSPEED: "overspeed", F_STALL: "stall", F_CONFIG: "config", F_SENSOR: "sensor"}


def state_name(state):
    return STATE_NAMES.get(state, "state %d" % state)


def fault_names(bits):
    return [FAULT_NAMES[b] for b in FAULT_NAMES if bits & b]
