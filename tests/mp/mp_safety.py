# The node safety state machine driven through frames, runnable under MicroPython and
# CPython: prints one line per step (case, state, fault bits, torque, frames to the host).
# tests/test_safety.py runs it under both, compares, and checks the lines.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from bus_protocol import messages as m   # noqa: E402
from firmware.agent import LinkAgent      # noqa: E402
from firmware.hal.sim import SimHAL       # noqa: E402

NAN = float("nan")
INF = float("inf")


class Rig:
    def __init__(self, **extra):
        self.out = []
        cfg = {"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0,
               "behaviours": {"proxy": {"weight": 1.0}, "brake": {"kq": 2000.0, "kw": 40.0}},
               "safety": {"watchdog_cycles": 3}}
        for k in extra:
            cfg[k] = extra[k]
        self.agent = LinkAgent(cfg, SimHAL(lambda b, n: self.out.append(bytes(b[:n]))))
        self.dec = m.Decoder()

    def frame(self, mtype, values, dst=1):
        self.agent.receive(m.encode(mtype, m.HOST, dst, 0, values))

    def cycle(self, tick, q=0.0, qd=0.0, goal=(1.0, 0.0, 0.0, 0.0, 10.0, 0.0, 0.0, 0.0, 0.0)):
        self.frame(m.JOINT_STATE, (tick, q, qd, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        self.frame(m.SYNC, (tick,), m.BROADCAST)
        self.frame(m.KINEMATIC, (tick, 1.0, 0.0, 0.0, 0.0) + (0.0,) * 9)
        if goal is not None:
            self.frame(m.GOAL, (tick, 0) + goal, m.BROADCAST)

    def show(self, case):
        kinds = []
        for f in self.out:
            msg = self.dec.decode(f)
            if msg[0] == m.STATUS:
                kinds.append("STATUS:%d:%d" % (msg[4][1], msg[4][2]))
            elif msg[0] == m.LOG:
                kinds.append("LOG:" + "_".join(bytes(msg[4][0]).decode().split(" ")[:3]))
            else:
                kinds.append(m.NAMES[msg[0]])
        del self.out[:]
        a = self.agent
        print("%s %d %d %.6e %s" % (case, a.safety.state, a.safety.faults, a.u[0], ",".join(kinds)))


def command(rig, cmd, arg=0.0):
    rig.frame(m.COMMAND, (cmd, arg))


def config(rig, text):
    data = text.encode()
    for off in range(0, len(data), 52):
        rig.frame(m.CONFIG, (off, len(data), data[off:off + 52]))
    command(rig, m.CMD_CONFIG_APPLY)


def run():
    # NaN in the goal: dropped, F_NAN, brake; the torque stays a number
    r = Rig()
    r.cycle(0, q=0.1)
    r.show("run")
    r.cycle(1, q=0.1, goal=(1.0, 0.0, 0.0, NAN, 10.0, 0.0, 0.0, 0.0, 0.0))
    r.show("nan_goal")
    r.cycle(2, q=0.12, qd=0.5)
    r.show("nan_goal_next")
    # inf in a kinematic packet, then in the joint reading
    r = Rig()
    r.cycle(0, q=0.1)
    r.frame(m.KINEMATIC, (0, 1.0, 0.0, 0.0, 0.0, INF) + (0.0,) * 8)
    r.show("inf_packet")
    r = Rig()
    r.cycle(0, q=0.1)
    r.cycle(1, q=NAN)
    r.show("nan_joint")
    # goal watchdog with the reaction set to damp, then to hold
    for reaction in ("damp", "hold"):
        r = Rig(safety={"watchdog_cycles": 2, "reactions": {"goal_stale": reaction}})
        r.cycle(0, q=0.2)
        for k in range(1, 5):
            r.cycle(k, q=0.3 + 0.01 * k, qd=0.5, goal=None)
        r.show("stale_" + reaction)
        # explicit clear: back to running on the next cycle
        command(r, m.CMD_RELEASE)
        r.show("cleared_" + reaction)
        r.cycle(5, q=0.3)
        r.show("after_clear_" + reaction)
    # commanded brake with a fault code (the host braking a node its neighbour reported)
    r = Rig()
    r.cycle(0, q=0.0)
    command(r, m.CMD_BRAKE, 32.0)
    r.show("brake_code")
    # config: refused while running; applied when braked; invalid: refused and latched
    r = Rig()
    r.cycle(0, q=0.0)
    config(r, '{"u_sat": 5.0}')
    r.show("config_running u_sat=%g" % r.agent.u_sat)
    command(r, m.CMD_BRAKE)
    config(r, '{"u_sat": 5.0}')
    r.show("config_braked u_sat=%g" % r.agent.u_sat)
    config(r, '{"dh": {"type": "spherical"}}')
    r.show("config_invalid u_sat=%g" % r.agent.u_sat)
    r = Rig()
    command(r, m.CMD_BRAKE)
    config(r, '{"safety": {"reactions": {"goal_stale": "explode"}}}')
    r.show("config_bad_reaction")
    # an exception inside the cycle: internal error, brake, the node goes on
    r = Rig()
    r.cycle(0, q=0.0)
    r.agent.hal.read = None
    r.cycle(1, q=0.0)
    r.show("internal")


if __name__ == "__main__":
    run()
