"""A rogue device on the loopback-UDP CAN-FD medium (firmware/hal/unix_ports.py UdpPort): a
process of its own, with a socket the arm never gave an address, that sends every frame
it reads from stdin (one per line: the frame in hex) to the nodes it is for, as a CAN
controller on the bus would (a node's acceptance filter takes its own address and
BROADCAST). A line "sync" is answered "ok" once everything before it is sent.

    python tests/mp/rogue_can.py BASE_PORT N_LINKS
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bus_protocol import can_ids            # noqa: E402
from bus_protocol import messages as m      # noqa: E402


def main(base, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    for line in sys.stdin:
        line = line.strip()
        if line == "sync":
            sys.stdout.write("ok\n")
            sys.stdout.flush()
            continue
        if not line:
            continue
        f = bytes.fromhex(line)
        dgram = struct.pack("<I", can_ids.can_id(f[0], f[1], f[2])) + can_ids.fd_payload(f)
        for k in (range(1, n + 1) if f[2] == m.BROADCAST else (f[2],)):
            s.sendto(dgram, ("127.0.0.1", base + k))
    s.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
