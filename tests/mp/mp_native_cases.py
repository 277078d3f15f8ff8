# Random agent cycles for the native core's oracle test, runnable under MicroPython and
# CPython alike (the repository root on sys.path): CASES link agents of random joint
# type, DH, gains, gravity and limits, each fed two ticks of JOINT_STATE, SYNC, a
# corrupted K_{i-1}, K_{i-1} (a random pose and twist; sent twice by every third link, lost
# by link 1 in the second tick, which bridges it; the tip out for link N-1), random
# assertions and a GOAL (now and then holding a NaN); prints every frame the agents send, in hex, and the torques'
# bits; then A_i(q)'s trigonometry (trig) and the sync's sample under readings that make
# safety's checks fire (samples). tests/test_native.py compares the unix port with the native module linkcore
# against CPython's pure Python; tests/test_mcu.py compares, on an emulated board, the
# frozen pure Python with linkcore. A generator of integers (the same numbers
# everywhere) draws the inputs.
import struct

from bus_protocol import messages as m
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL

CASES = 100
N = 8


class Draw:
    def __init__(self, seed):
        self.x = seed

    def unit(self):
        """In [0, 1): 31-bit linear congruential steps."""
        self.x = (self.x * 1103515245 + 12345) & 0x7FFFFFFF
        return self.x / 2147483648.0

    def span(self, lo, hi):
        return lo + (hi - lo) * self.unit()

    def vec(self, n, lo, hi):
        return tuple(self.span(lo, hi) for _ in range(n))


def config(r, link):
    prismatic = r.unit() < 0.25
    cfg = {"link": link, "n_links": N,
           "dh": {"type": "prismatic" if prismatic else "revolute", "theta": r.span(-3, 3),
                  "d": r.span(-0.5, 0.5), "a": r.span(-1, 1), "alpha": r.span(-3.2, 3.2)},
           "q_low": -1.5, "q_high": 1.5, "u_sat": r.span(5, 200), "mass": r.span(0.1, 20),
           "centroid": list(r.vec(3, -0.5, 0.5)),
           "behaviours": {"proxy": {"weight": r.span(0.2, 2)}, "assertions": {"weight": r.span(0.2, 2)},
                          "joint_limit": {"weight": 1.0, "eta": r.span(0.01, 1), "rho0": r.span(0.1, 1)}}}
    beh = cfg["behaviours"]
    if r.unit() < 0.7:
        beh["gravity"] = {"g": list(r.vec(3, -10, 10))}
    if r.unit() < 0.7:
        beh["centering"] = {"weight": r.span(0.1, 1), "kq": r.span(1, 50), "kw": r.span(0.1, 10)}
    if link % 3 == 0:
        cfg["kinematic_copies"] = 2   # time redundancy: K_i twice
    return cfg


def quaternion(r):
    q = r.vec(4, -1, 1)
    s = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) ** 0.5
    return (q[0] / s, q[1] / s, q[2] / s, q[3] / s)


def _no_time():
    return 0


def _bits(x):
    """The float's bits (a float32 on the boards is exact in a double)."""
    return "".join("%02x" % b for b in struct.pack("<d", x))


def run(seed=12345):
    r = Draw(seed)
    def send(buf, n):   # printed at once: a board's heap holds no list of 500 frames
        print("FRAME " + "".join("%02x" % buf[j] for j in range(n)))

    cores = 0
    for case in range(CASES):
        link = 1 + case % N
        hal = SimHAL(send)
        hal.ticks_us = _no_time   # STATUS reports cycle_us: the same everywhere
        agent = LinkAgent(config(r, link), hal)
        cores += agent.core.__name__ == "linkcore"
        q = r.span(-1.7, 1.7)   # beyond the joint limits now and then: the repulsion's clamp
        for tick in (5, 6):
            q = q + r.span(-0.05, 0.05)   # no encoder jump (that brakes: Python's fault path)
            frames = [m.encode(m.JOINT_STATE, m.HOST, link, 1, (tick, q, r.span(-3, 3), 0, 0., 0., 0., 0., 0., 0.)),
                      m.encode(m.SYNC, m.HOST, m.BROADCAST, 2, (tick,)),
                      m.encode(m.KINEMATIC, link - 1, link, 3,
                               (tick,) + quaternion(r) + r.vec(3, -2, 2) + r.vec(3, -3, 3) + r.vec(3, -5, 5))]
            for k in range(int(r.unit() * 4)):
                frames.append(m.encode(m.ASSERT, m.HOST, m.BROADCAST, 4 + k,
                                       (tick, link + k, 1 + k % 2) + r.vec(3, -2, 2) + r.vec(6, -50, 50)))
            goal = (tick, 0) + r.vec(3, -2, 2) + r.vec(6, -80, 80)
            if case % 17 == 16 and tick == 6:   # a NaN in the goal: dropped, F_NAN latched, braked
                goal = goal[:5] + (float("nan"),) + goal[6:]
            frames.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, goal))
            bad = bytearray(frames[2])   # K_{i-1} with a bit flipped first: counted, dropped
            bad[7 + case % 50] ^= 4
            frames.insert(2, bad)
            if tick == 6 and link == N - 1:   # the tip is out: K_{N-1} goes to the host too
                frames.insert(2, m.encode(m.COMMAND, m.HOST, m.BROADCAST, 3, (m.CMD_NODE_OUT, float(N))))
            lost = tick == 6 and link == 1   # K_0 lost: link 1 bridges over the last one
            for f in frames:
                if not (lost and f[0] == m.KINEMATIC):
                    agent.receive(f)
                if lost and f[0] == m.ASSERT:
                    agent.on_quiet(False)
            print("U %d %s %s %s bad %d" % (case, _bits(agent.u[0]), _bits(agent.components[0]),
                                            _bits(agent.components[1]), agent.decoder.bad))
    trig(r)
    samples(r)
    print("CORES %d of %d" % (cores, CASES))


def samples(r):
    """The sync's sample (linkcore.sample where safety's checks latch nothing, the Python
    otherwise) over 40 ticks of four links whose readings make each check fire: an
    encoder jump, overspeed, a reading frozen while the torque moves, NaN, the goal
    watchdog; the dead-motor check on for one, torque checks for another; RELEASE now and
    then. Prints SAMPLE with every frame's bits' count, the faults, safety's N and the
    bits of V and of the torque, each tick."""
    for case in range(4):
        link = 2 + case
        cfg = {"link": link, "n_links": N, "dh": {"type": "revolute", "a": 0.4}, "u_sat": 6.0, "mass": 1.5,
               "centroid": [0.1, 0.0, 0.0], "behaviours": {"proxy": {"weight": 1.0}, "centering": {"weight": 0.5}},
               "safety": {"watchdog_cycles": 4, "max_q_step": 0.3, "qd_max": 20.0, "frozen_cycles": 2,
                          "frozen_du": 0.5, "respond_u": 2.0 if case == 1 else 0.0, "respond_a": 5.0,
                          "respond_ms": 20.0, "stall_u": 0.5 if case == 3 else 0.0, "stall_cycles": 3}}
        sent = []
        hal = SimHAL(lambda buf, n: sent.append(bytes(buf[:n])))
        hal.ticks_us = _no_time
        agent = LinkAgent(cfg, hal)
        q = 0.1
        for tick in range(40):
            qd = r.span(-2, 2)
            if 12 <= tick < 17 and case != 1:
                qd = 0.0                       # frozen while the torque moves
            else:
                q = q + r.span(-0.05, 0.05)
            if tick == 6 + case:
                q = q + 0.5                    # an encoder jump
            elif tick == 9:
                qd = 25.0                      # overspeed
            reading = float("nan") if tick == 20 else q
            frames = [m.encode(m.JOINT_STATE, m.HOST, link, 1, (tick, reading, qd, 0, 0., 0., 0., 0., 0., 0.)),
                      m.encode(m.SYNC, m.HOST, m.BROADCAST, 2, (tick,)),
                      m.encode(m.KINEMATIC, link - 1, link, 3, (tick,) + quaternion(r) + r.vec(9, -1, 1))]
            if not 30 <= tick < 36:   # goals stop: the watchdog
                frames.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (tick, 0) + r.vec(9, -5, 5)))
            if tick % 5 == 4 and not 28 <= tick < 38:
                frames.append(m.encode(m.COMMAND, m.HOST, link, 5, (m.CMD_RELEASE, 0.0)))
            for f in frames:
                agent.receive(f)
            sf = agent.safety
            print("SAMPLE %d %d %s %d %d %s %s %s" % (
                case, tick, "".join("%02x" % b for f in sent for b in f), sf.faults, sf.state,
                list(sf.N), " ".join(_bits(x) for x in sf.V), _bits(agent.u[0])))
            del sent[:]


def trig(r):
    """A_i(q) of a joint whose A_i holds cos and sin of q/2 and q themselves (theta 0,
    a 1, alpha 0), over angles from 0 to beyond where the argument reduction changes
    method (2^7 pi/2) to 1e30: linkcore computes its trigonometry in C (MicroPython's
    lib/libm on the boards, the C library's on CPython), the pure Python with math.cos
    and math.sin. Prints TRIG and the bits of rot(A_i) and trans(A_i)."""
    from firmware import kinematic_bus
    agent = LinkAgent({"link": 1, "n_links": 2, "dh": {"type": "revolute", "a": 1.0}}, SimHAL())
    xs = [0.0, -0.0, 1e-30, 1e-8, -1e-5, 0.5, 0.7853981, 0.7853982, 1.5707963, 2.3561945,
          3.1415927, -3.1415927, 4.712389, 6.2831855, 100.0, 200.0, 201.06, 201.07, 250.0,
          -1000.0, 12345.678, 1e5, 1e7, 1.7e9, 1e20, -1e30]
    xs += [r.span(-4, 4) for _ in range(100)] + [r.span(-300, 300) for _ in range(100)]
    xs += [(1 if r.unit() < 0.5 else -1) * 10 ** r.span(0, 30) for _ in range(100)]
    for x in xs:
        if agent.core.__name__ == "linkcore":
            agent.core.a_i(agent.S, agent.I, x, 0.0)
            v = [agent.S[j] for j in range(7)]   # linkstate.S_ROT, S_TRANS
        else:
            rot, trans = kinematic_bus.dh_local(kinematic_bus.REVOLUTE, agent.dh[0], 0.0, 1.0, 0.0, x)
            v = list(rot) + list(trans)
        print("TRIG " + " ".join(_bits(y) for y in v))


if __name__ == "__main__":
    run()
