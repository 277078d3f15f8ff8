# Protected frames under MicroPython and CPython (bus_protocol/SPEC.md §9): the MAC's
# published vectors, the SPEC's frame vectors, and a node's check of host commands
# (firmware/auth.py) through a restart. One line per step; tests/test_auth.py runs it
# under both, compares, and checks the lines against RFC 4231, the SPEC and hmac.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/..")

from binascii import hexlify                   # noqa: E402

from bus_protocol import messages as m         # noqa: E402
from bus_protocol.mac import Hmac, hmac_sha256  # noqa: E402
from firmware import auth                      # noqa: E402
from firmware.agent import LinkAgent           # noqa: E402
from firmware.hal.sim import SimHAL            # noqa: E402

KEY = bytes(range(32))           # the SPEC's vector key
WRONG = bytes(range(1, 33))


def hx(b):
    return hexlify(bytes(b)).decode()


# RFC 4231 test cases 1, 2 and 6 (a key longer than the block)
print("rfc4231 1", hx(hmac_sha256(b"\x0b" * 20, b"Hi There")))
print("rfc4231 2", hx(hmac_sha256(b"Jefe", b"what do ya want for nothing?")))
print("rfc4231 6", hx(hmac_sha256(b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First")))

HM = Hmac(KEY)


def fv(block, counter):
    f = block << m.COUNTER_BITS | counter
    return f >> 32, f & 0xFFFFFFFF


def protect(frame, block, counter, hm=HM):
    hi, lo = fv(block, counter)
    return m.protect(frame, hm, hi, lo)


# the SPEC's vectors: RELEASE to link 5 (seq 7) at FV block 1 counter 2; a GOAL to all
# (seq 300) at block 0x1234 counter 0xABCDE
v1 = protect(m.encode(m.COMMAND, m.HOST, 5, 7, (m.CMD_RELEASE, 0.0)), 1, 2)
print("vector release", hx(v1))
v2 = protect(m.encode(m.GOAL, m.HOST, m.BROADCAST, 300, (42, 0, 0.5, 0.25, -1.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0)),
             0x1234, 0xABCDE)
print("vector goal", hx(v2))


class Node:
    """A one-link node behind its check, its highest block in `store`."""

    def __init__(self, store):
        self.out = []
        cfg = {"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0,
               "behaviours": {"proxy": {"weight": 1.0}, "brake": {"kq": 2000.0, "kw": 40.0}},
               "safety": {"watchdog_cycles": 3},
               "auth": {"key": hx(KEY), "floor": 1}}
        self.agent = LinkAgent(cfg, SimHAL(lambda b, n: self.out.append(bytes(b[:n]))))
        self.guard = auth.guard(self.agent, cfg, store)

    def show(self, step):
        a = self.agent
        print("node", step, a.safety.state, a.safety.faults, ",".join([str(c) for c in a.auth.counts()]),
              a.auth.accepted, a.decoder.bad)


def cmd(c, arg=0.0, seq=0):
    return m.encode(m.COMMAND, m.HOST, 1, seq, (c, arg))


store = auth.MemBlock()
n = Node(store)
n.show("boot")
brake = protect(cmd(m.CMD_BRAKE), 1, 0)
n.agent.receive(brake)
n.show("brake")
n.agent.receive(protect(cmd(m.CMD_RELEASE), 1, 1, Hmac(WRONG)))
n.show("forged_release")
n.agent.receive(cmd(m.CMD_RELEASE))
n.show("plain_release")
bad = bytearray(protect(cmd(m.CMD_RELEASE), 1, 1))
bad[7] ^= 1            # the arg changed, CRC made good again: only the MAC tells
c = m.crc16(bad, len(bad) - 2)
bad[-2] = c & 0xFF
bad[-1] = c >> 8
n.agent.receive(bytes(bad))
n.show("altered_release")
release = protect(cmd(m.CMD_RELEASE), 1, 1)
n.agent.receive(release)
n.show("release")
n.agent.receive(brake)
n.show("replayed_brake")
n.agent.receive(protect(cmd(m.CMD_BRAKE), 1, 2))
n.agent.receive(release)
n.show("replayed_release")
# a broadcast stream has its own counter: its first frame is fresh at counter 0
n.agent.receive(protect(m.encode(m.COMMAND, m.HOST, m.BROADCAST, 0, (m.CMD_RELEASE, 0.0)), 1, 0))
n.show("broadcast_release")
print("store", store.load())

# the node restarts (the same flash): nothing of block 1 is taken, block 2 is
n = Node(store)
n.agent.receive(protect(cmd(m.CMD_BRAKE), 1, 3))
n.show("restart_old_block")
n.agent.receive(protect(cmd(m.CMD_BRAKE), 2, 0))
n.show("restart_new_block")
n.agent.receive(release)
n.show("restart_replayed_release")
n.agent.receive(protect(cmd(m.CMD_RELEASE), 2, 1))
n.show("restart_release")
# the host restarted twice (block 4): rebuilt from the FV's low bits
n.agent.receive(protect(cmd(m.CMD_BRAKE), 4, 0))
n.show("host_restarts")
print("store", store.load())
# noise: counted by the decoder, not as an authentication failure
n.agent.receive(release[:-1] + bytes([release[-1] ^ 0xFF]))
n.show("noise")

# no key and not "unauthenticated": the node refuses to run
a = LinkAgent({"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0}, SimHAL(lambda b, n: None))
auth.guard(a, {})
a.receive(release)
print("nokey", a.safety.state, a.safety.faults)
a = LinkAgent({"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0}, SimHAL(lambda b, n: None))
print("unauthenticated", auth.guard(a, {"auth": "unauthenticated"}), a.safety.faults)
