# linkcore's MAC (firmware/native/linkcore_mac.h) against the reference, bus_protocol/mac.py
# (hashlib), under whichever interpreter runs it with linkcore on its path: CPython
# (linkcore_cpython.c), the unix port (x64 .mpy), the emulated boards. Prints the RFC 4231
# digests linkcore makes (tests/test_auth.py checks them against the RFC's), then how many
# of the random cases and of a node's checks (firmware/auth.Guard, native and pure, on the
# same frames) agree.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from binascii import hexlify                   # noqa: E402

from bus_protocol import messages as m         # noqa: E402
from bus_protocol.mac import Hmac, hmac_sha256  # noqa: E402
from firmware import auth, linkstate           # noqa: E402

core = auth.native()

# RFC 4231 §4.2-4.8: (key, data)
RFC = ((b"\x0b" * 20, b"Hi There"),
       (b"Jefe", b"what do ya want for nothing?"),
       (b"\xaa" * 20, b"\xdd" * 50),
       (bytes(range(1, 26)), b"\xcd" * 50),
       (b"\x0c" * 20, b"Test With Truncation"),
       (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First"),
       (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than block-size data. "
                       b"The key needs to be hashed before being used by the HMAC algorithm."))

out = bytearray(32)
ks = bytearray(64)


def native_mac(key, data, n=None, hi=None):
    core.mac_key(key, ks)
    core.mac(ks, data, n, hi, out)
    return bytes(out)



# random keys (1 to 200 bytes, across the 64-byte block) and messages (0 to 150 bytes,
# across one and two blocks), the FV's high bits appended as a frame's are
x = 12345


def rnd(k):
    global x
    x = (x * 75 + 74) % 65537   # the ZX81's generator: small integers on every port
    return x % k


KEY_LENS = (1, 16, 32, 55, 56, 63, 64, 65, 131, 200)
CASES = 200


def random_cases():
    same = 0
    for i in range(CASES):
        key = bytes([rnd(256) for _ in range(KEY_LENS[i % len(KEY_LENS)])])
        data = bytes([rnd(256) for _ in range(rnd(151))])
        n = rnd(len(data) + 1)
        hi = rnd(65536) << 8 | rnd(256)
        b = bytearray(4)
        for j in range(4):
            b[j] = (hi >> 8 * j) & 0xFF
        if native_mac(key, data) == hmac_sha256(key, data) and native_mac(key, data, n, hi) == Hmac(key).mac(data, n, b):
            same += 1
    return same


class _Agent:
    link = 3

    def __init__(self):
        self.taken = []

    def receive(self, frame, n=None):
        self.taken.append(bytes(frame[:n]))


KEY = bytes(range(32))


def guard(native):
    keep = linkstate.linkcore
    if not native:
        linkstate.linkcore = None
    try:
        a = _Agent()
        return a, auth.Guard(a, KEY, floor=0x41)
    finally:
        linkstate.linkcore = keep


def node_frames():
    """A node's check, native and pure, over the same frames: genuine ones (blocks whose
    low 32 FV bits pass 2^30 and 2^31), replays, flipped bits, another key, no trailer."""
    hm = Hmac(KEY)
    other = Hmac(bytes(32))
    frames = []
    for i in range(60):
        block = (0x41, 0x80, 0xC3, 0x1C2)[i // 15]   # (SPEC §9: a jump of up to 255)
        fv = block << m.COUNTER_BITS | i
        plain = (m.encode(m.GOAL, m.HOST, m.BROADCAST, i, (i, 0, 0.5, 0.25, -1.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0))
                 if i % 3 else m.encode(m.COMMAND, m.HOST, 3, i, (m.CMD_BRAKE, 0.0)))
        f = m.protect(plain, hm, fv >> 32, fv & 0xFFFFFFFF)
        frames.append(f)
        if i % 4 == 1:
            frames.append(f)                                   # a replay
        if i % 5 == 2:   # a bit flipped in the payload or the trailer, the CRC made again
            bad = bytearray(f)
            bad[m.HEADER_SIZE + rnd(len(f) - m.HEADER_SIZE - 2)] ^= 1 << rnd(8)
            c = m.crc16(bad, len(bad) - 2)
            bad[-2] = c & 0xFF
            bad[-1] = c >> 8
            frames.append(bytes(bad))
        if i % 7 == 3:
            frames.append(m.protect(plain, other, fv >> 32, fv & 0xFFFFFFFF))   # another key
        if i % 11 == 4:
            frames.append(plain)                               # no trailer
    return frames


def main():
    print("native", core is not None)
    if core is None:
        return
    for case, (key, data) in enumerate(RFC):
        print("native rfc4231", case + 1, hexlify(native_mac(key, data)).decode())
    print("native random", random_cases(), "of", CASES)
    frames = node_frames()
    a_n, g_n = guard(True)
    a_p, g_p = guard(False)
    for f in frames:
        g_n.receive(f)
        g_p.receive(f)
    print("native guard", g_n._ks is not None, g_p._ks is None, len(a_n.taken), g_n.counts(),
          a_n.taken == a_p.taken and g_n.counts() == g_p.counts() and g_n.accepted == g_p.accepted)


main()
