# One control cycle of a 4-link chain of LinkAgents with a hand-rolled host, runnable
# under MicroPython and CPython alike: prints every frame the agents send, in hex, and
# the torques. tests/test_firmware.py runs it under both and compares.
import sys

try:
    _root = __file__.rsplit("/", 1)[0] + "/../.."
except NameError:
    _root = "."
if _root not in sys.path:
    sys.path.insert(0, _root)

from bus_protocol import medium  # noqa: E402
from bus_protocol import messages as m   # noqa: E402
from firmware.agent import LinkAgent      # noqa: E402
from firmware.hal.sim import SimHAL       # noqa: E402

N = 4
DH = [("revolute", 0.1, 0.2, 0.5, 1.5707963), ("revolute", -0.3, 0.0, 0.4, -1.5707963),
      ("prismatic", 0.0, 0.1, 0.0, 0.0), ("revolute", 0.2, 0.05, 0.3, 0.7)]
Q = [0.3, -0.7, 0.25, 1.1]
QD = [0.2, -0.1, 0.05, 0.4]
GOAL = (0.0, 0.0, 0.0, 3.0, -2.0, 1.5, 0.2, -0.4, 0.6)   # p_app placeholder, f


def configs():
    out = []
    for i in range(N):
        t, th, d, a, al = DH[i]
        out.append({"link": i + 1, "n_links": N,
                    "dh": {"type": t, "theta": th, "d": d, "a": a, "alpha": al},
                    "q_low": -2.0, "q_high": 2.0, "u_sat": 50.0, "mass": 1.0 + i,
                    "centroid": [-0.1, 0.02, 0.01],
                    "behaviours": {"proxy": {"weight": 1.0}, "assertions": {"weight": 1.0},
                                   "centering": {"weight": 0.5, "kq": 10.0, "kw": 2.0},
                                   "joint_limit": {"weight": 1.0, "eta": 0.1, "rho0": 1.0},
                                   "gravity": {"g": [0.0, 0.0, -9.81]}}})
    return out


def run():
    sent = []
    queue = []

    def send(buf, n):
        queue.append(bytes(buf[:n]))

    agents = [LinkAgent(c, SimHAL(send)) for c in configs()]
    tick = 7
    host = []
    for i in range(N):
        queue.append(m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, Q[i], QD[i], 0, 0., 0., 0., 0., 0., 0.)))
    queue.append(m.encode(m.SYNC, m.HOST, m.BROADCAST, 10, (tick,)))
    queue.append(m.encode(m.KINEMATIC, m.HOST, 1, 11, (tick, 1., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.)))
    seq = 12
    while queue:
        f = queue.pop(0)
        dst = f[2]
        src = f[1]
        if src != m.HOST:
            sent.append(f)
        if dst == m.HOST:
            msg = m.Decoder().decode(f)
            host.append(msg)
            if msg[0] == m.KINEMATIC and msg[1] == N:
                for a in host:
                    if a[0] == m.ASSERT:
                        queue.append(m.encode(m.ASSERT, m.HOST, m.BROADCAST, seq, a[4]))
                        seq += 1
                p = msg[4][5:8]
                queue.append(m.encode(m.GOAL, m.HOST, m.BROADCAST, seq, (tick, 0) + tuple(p) + GOAL[3:]))
        else:
            for k in medium.receivers(dst, src, N):
                agents[k - 1].receive(f)
    for f in sent:
        print("FRAME " + "".join("%02x" % b for b in f))
    for a in agents:
        print("U %d %.9e %.9e %.9e %.9e %.9e" % (a.link, a.u[0], a.components[0], a.components[1],
                                                 a.components[2], a.components[3]))


if __name__ == "__main__":
    run()
