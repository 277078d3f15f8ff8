# What a link agent does when the bus goes quiet (docs/design.md §7, fault tolerance):
# within a tick, a K_{i-1} that did not come is bridged and a goal that did not come is
# replaced by the last one (stale goal); between ticks, with no SYNC for watchdog_ms, the
# bus is lost and the joint braked. `self` is the LinkAgent, which has these as methods.
from firmware import arbitration, safety
from firmware.commands import once as _once
from firmware.cycle import reading as _reading
from firmware.hal import ticks_diff

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_I_TICK = const(0)
_I_KIN = const(2)
_I_ACTED = const(3)
_I_GOAL = const(5)
# ---- end of layout ----


def idle(self):
    """Called by the board loop whenever the bus has been quiet for a while: with no
    SYNC for watchdog_ms the bus is lost (the per-cycle watchdog needs SYNCs to run),
    so brake, and keep the brake PD going at the loop's rate. True while braked.
    In a lockstep run no time passes between SYNCs (the plant waits for the host),
    so a quiet bus is no fault and there is nothing to hold (docs/design.md §13);
    the joint is still read, which feeds a board's hardware watchdog (wdt_ms)."""
    sf = self.safety
    if self.jog is not None and _once("params").jog_expired(self):   # the jog's dead-man
        return True
    if sf.state == safety.INIT:
        return False
    if self.lockstep:
        self.hal.read()
        return safety.is_fault_state(sf.state)
    if ticks_diff(self.hal.ticks_us(), self.t_sync) > 1000 * sf.watchdog_ms:
        sf.trip(safety.F_BUS_LOST, "no SYNC for %d ms" % sf.watchdog_ms)
        if sf.pending:
            self.report_faults()
        self.sample()
        if self.I[_I_TICK] >= 0:
            self.actuate(False)
        elif safety.is_fault_state(sf.state):   # no tick yet: the fault's torque to the
            _reading(self)                       # motor, and no TORQUE of no tick
            arbitration.reaction(self, sf.state)
            self.u[0] = arbitration.arbitrate(self)
            write = self._books[3]
            if write is not None:
                write(self.u[0])
    return safety.is_fault_state(sf.state)


def bridge_now(self):
    """No K_{i-1} in time this tick: compose K_i from the nearest earlier packet that
    came, over the links between (bridged ones locked, the others predicted). Link 1
    composes over the last K_0 (the base packet: constant for a fixed base)."""
    if self.link == 1:
        if not self._base:
            return False
        self.bridged += 1
        self.send_kinematic()   # over the last K_0, in S (S_IN)
        return True
    from firmware import neighbours   # (nb_depth > 0: imported by configure)
    return neighbours.bridge(self)

def pending(self):
    """With neighbours to bridge (or the base packet, link 1): synced to a tick whose
    K_i has not gone out yet."""
    tick = self.I[_I_TICK]
    return ((self.nb_depth or self._base) and tick >= 0 and self.I[_I_KIN] != tick
            and self.safety.state == safety.RUN)

def on_quiet(self, goal=True):
    """The bus has gone quiet in this tick (a board's hop timeout; in-process, the loopback
    bus has nothing left to deliver): a K_{i-1} that did not come is bridged; with `goal`,
    a goal that did not come is replaced by the last one (stale goal), so the joint gets
    its torque. True if the agent sent anything."""
    I = self.I
    tick = I[_I_TICK]
    if tick < 0 or I[_I_ACTED] == tick or self.safety.state != safety.RUN:
        return False
    if I[_I_KIN] != tick and (self.nb_depth or self.link == 1) and self.bridge_now():
        return True
    if goal and self._goal and I[_I_GOAL] >= tick - self.safety.watchdog_cycles:
        self.stale_goal += 1
        if I[_I_KIN] != tick:
            self.stale_kin += 1
        self.actuate(True)
        return True
    return False
