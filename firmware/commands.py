# The host's commands to a link agent (COMMAND frames, bus_protocol/SPEC.md): brake,
# release, ping, reset, apply a CONFIG blob, the bring-up's parameters, and the host's
# NODE_OUT / NODE_IN of a neighbour; and the agent's STATUS to the host (periodic, the
# answer to a ping, a newly latched fault). `self` is the LinkAgent, which has these as methods.
from bus_protocol import messages as m
from firmware import safety

from firmware.hal import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_I_TICK = const(0)
# ---- end of layout ----

_NO_AUTH = (0, 0, 0)   # STATUS.auth_rejected of a node that checks no host commands


def once(name):
    """firmware.<name> for one call, then forgotten: its code is garbage once the call
    returns (the names it interned stay). For what runs only at start and between runs:
    a link's configuration (configure's ~1.1 KB of bytecode is not held in RAM as .mpy:
    make mcu-bench)."""
    import sys
    pkg = __import__("firmware." + name)
    mod = getattr(pkg, name)
    del sys.modules["firmware." + name]
    delattr(pkg, name)
    return mod


def on_command(self, cmd, arg):
    """BRAKE latches F_COMMAND, or the fault bit given in arg (the host braking a node a
    neighbour reported); RELEASE is the explicit clear of every latched fault."""
    if cmd == m.CMD_BRAKE:
        bit = int(arg)
        self.safety.trip(bit if bit in safety.FAULT_NAMES else safety.F_COMMAND, "commanded", safety.BRAKED)
        if self.I[_I_TICK] >= 0:   # brake now: this tick's TORQUE reports BRAKED
            self.actuate(False)
    elif cmd == m.CMD_RELEASE:
        self.safety.clear()
    elif cmd == m.CMD_PING:
        self.send_status()
    elif cmd == m.CMD_RESET:
        self.new_run()
        self.lockstep = arg == 1.0
    elif cmd == m.CMD_CONFIG_APPLY:
        once("config_parser").apply(self)
    elif m.CMD_PARAM <= cmd <= m.CMD_REBOOT:   # bring-up: parameters, save, zero, jog, reboot
        once("params").command(self, cmd, arg)
    elif cmd == m.CMD_NODE_OUT or cmd == m.CMD_NODE_IN:
        if int(arg) == self.link + 1 == self.n_links:   # the tip, distal neighbour of N-1
            self.tip_out = cmd == m.CMD_NODE_OUT
        j = self.link - 1 - int(arg)   # a proximal neighbour's place in the tables
        if 0 <= j <= self.nb_depth:
            from firmware import agent
            agent._neighbour_support()
            agent.neighbours.node_out(self, j, cmd == m.CMD_NODE_OUT)


def send_status(self):
    self.send(m.STATUS, m.HOST, (self.I[_I_TICK] & 0xFFFFFFFF, self.safety.state, self.safety.faults,
                                 self.decoder.bad & 0xFFFF, self.cycle_us & 0xFFFFFFFF,
                                 self.stale_kin & 0xFFFF, self.late & 0xFFFF)
              + (self.auth.counts() if self.auth is not None else _NO_AUTH))
    if self.ident is not None and self.ident.est is not None:
        self.send(m.ESTIMATE, m.HOST, (self.I[_I_TICK] & 0xFFFFFFFF,) + tuple(self.ident.est.theta))


def report_faults(self):
    """EMCY-like: the STATUS with the new fault bits, then the reason as a LOG line."""
    sf = self.safety
    bits = sf.pending
    sf.pending = 0
    self.send_status()
    self.log("fault %s: %s" % (" ".join(safety.fault_names(bits)), sf.reason))
