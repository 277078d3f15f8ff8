# Simulated back end: the plant lives on the host, which sends JOINT_STATE frames
# (the sensors) and applies the torque carried by the agent's TORQUE frames (the motor).
from firmware.hal import micropython, ticks_us

try:
    from micropython import const
except ImportError:  # CPython
    const = micropython.const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_I_JOINT = const(15)
# ---- end of layout ----


class SimHAL:
    """A joint simulated by the host. Its reading comes in JOINT_STATE frames: decoded in
    Python (on_joint_state: q, qd), or taken by linkcore into the agent's float array S
    (take_joint_state: the reading stays there, and the agent's I[I_JOINT] says so). No
    write(): the motor is the host's plant, which takes the torque from the agent's TORQUE
    report (on the bus, or report() where the joint has a wire of its own: SimIO)."""

    def __init__(self, send=None):
        self.send = send   # send(buf, n): the bus (a node sets its own); no wrapper call per frame
        self.q = 0.0
        self.qd = 0.0
        self.state_tick = -1   # the tick of the joint state held
        self.range_valid = False
        self.p_psh = (0.0, 0.0, 0.0)
        self.x_r = (0.0, 0.0, 0.0)
        self.braked = False
        self.ticks_us = ticks_us
        self._I = None   # the agent's I, once linkcore has taken a JOINT_STATE

    def on_joint_state(self, values):
        # JOINT_STATE: tick, q, qd, flags, p_psh(3), x_r(3)
        self.state_tick = values[0]
        self.q = values[1]
        self.qd = values[2]
        self.range_valid = bool(values[3] & 1)
        self.p_psh = values[4:7]
        self.x_r = values[7:10]
        if self._I is not None:
            self._I[_I_JOINT] = 0   # the reading is q, qd again

    @micropython.native   # (LinkAgent.receive says why)
    def take_joint_state(self, S, at, ints, i):
        """on_joint_state for a JOINT_STATE that linkcore.rx took into the float array S:
        S[at:at + 8] = q, qd, p_psh, x_r; ints[i:i + 2] = tick, flags. Makes no tuple
        (benchmarks/README.md, firmware design figures) and no float: the reading q, qd stays in S, where the agent reads it
        (cycle.sample, the core's sample); p_psh and x_r are taken when the range is valid,
        the only time the agent looks at them (RMOA)."""
        self.state_tick = ints[i]
        ints[_I_JOINT] = 1
        if self._I is None:
            self._I = ints
        valid = self.range_valid = (ints[i + 1] & 1) != 0
        if valid:
            self.p_psh = (S[at + 2], S[at + 3], S[at + 4])
            self.x_r = (S[at + 5], S[at + 6], S[at + 7])

    def read(self):
        return True

    def set_brake(self, on):
        self.braked = on
