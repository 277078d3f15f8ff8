# The torque where the core's is not the cycle's (docs/design.md §5): a fault's reaction
# (brake, hold or damp), the brake released after one, and the arbitration of the
# components in S (S_C) in Python where something amends u after the core (an injected
# torque offset) or the core's u was not usable.
from firmware import behaviours, safety

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_BRAKED = const(2)
_F_SENSOR = const(64)
# ---- end of layout ----

# indices of the torque components (S_C)
C_PROXY = 0
C_ASSERT = 1
C_LOCAL_PD = 2
C_JOINT_LIMIT = 3
C_BRAKE = 4


def reaction(self, state):
    """The components of a fault's reaction (state >= BRAKED), or the brake released
    after one (the core's torque follows). `self` is the LinkAgent."""
    c = self.components
    q = self.q
    hal = self.hal
    if state >= _BRAKED:   # safety.is_fault_state, written out
        for j in range(6):
            c[j] = 0.0
        if self.q_lock is None:
            self.q_lock = q
        braked = state == _BRAKED
        if braked != hal.braked:
            hal.set_brake(braked)
        if self.safety.faults & _F_SENSOR:
            c[C_BRAKE] = 0.0   # no servo on a reading it distrusts: the holding brake holds
        elif state == safety.DAMP:
            c[C_BRAKE] = -self.brake_gains[1] * self.qd
        else:   # hold or brake: the brake PD about the angle at the fault (7.274)
            c[C_BRAKE] = behaviours.pd(q, self.qd, self.q_lock, self.brake_gains[0], self.brake_gains[1])
        return
    if self.q_lock is not None:
        self.q_lock = None
        hal.set_brake(False)


def arbitrate(self):
    """u from the components: linear arbitration u = sum k_j u_j (5.177), then
    saturation (6.216), an injected offset; never a NaN torque, whatever went wrong before."""
    c = self.components
    u = (self.k_proxy * c[C_PROXY] + self.k_assert * c[C_ASSERT] + self.k_local * c[C_LOCAL_PD]
         + self.k_jl * c[C_JOINT_LIMIT] + c[C_BRAKE])
    u = behaviours.saturate(u, self.u_sat)
    if self._u_off:
        u += self._u_off
    if not safety.finite(u):
        u = 0.0
        self.safety.trip(safety.F_INTERNAL, "non-finite torque")
    return u
