"""The host's node on the loopback-UDP CAN-FD medium (firmware/hal/unix_ports.py UdpPort):
datagram = 4-byte little-endian CAN id + FD data field; node k listens on base_port + k,
the host on base_port. Optional bit-time emulation (`bitrate`)."""
import select
import socket
import struct
import time
from collections import deque

from bus_protocol import can_ids, medium
from bus_protocol import messages as m
from host.transports.base import Transport


def ephemeral_ports():
    """The kernel's range for ports it hands out by itself (Linux; elsewhere IANA's)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 49152, 65535


def free_base_port(n_nodes, host="127.0.0.1", tries=50):
    """A base port with base..base+n all free on host, below the ephemeral range (a port
    the kernel gives any other socket in the meantime would take a node's address). Best
    effort: the nodes bind later, so two runs started at the same moment can still meet."""
    import random
    top = min(ephemeral_ports()[0], 65536) - n_nodes - 1
    for _ in range(tries):
        base = random.randint(10000, top)
        socks = []
        try:
            for k in range(n_nodes + 1):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((host, base + k))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free UDP port range")


class UdpTransport(Transport):
    name = "udp"

    def __init__(self, n_nodes, base_port, host="127.0.0.1", bitrate=0, me=0):
        super().__init__()
        self.addrs = [(host, base_port + k) for k in range(n_nodes + 1)]
        self.me = me
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind(self.addrs[me])
        self.sock.setblocking(False)
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        self.bitrate = bitrate
        self._line_free = 0.0
        self.pending = deque()
        self.overhear = 0   # a KINEMATIC frame for link j also to j+1..j+overhear (firmware/neighbours.py)

    def fileno(self):
        return self.sock.fileno()

    def send(self, frame, as_sent=None):
        """`as_sent`: the frame as addressed, where bus faults corrupted `frame` on the
        way (the arbitration id and the receivers are the sender's; transports/faulty.py)."""
        a = as_sent or frame
        dst = a[2]
        data = can_ids.fd_payload(frame)
        dgram = struct.pack("<I", can_ids.can_id(a[0], a[1], dst)) + data
        if self.bitrate:
            now = time.perf_counter()
            due = max(now, self._line_free) + medium.fd_frame_seconds(len(frame), self.bitrate)
            self._line_free = due
            while time.perf_counter() < due:
                time.sleep(max(0.0, min(due - time.perf_counter(), 0.0005)))
        for k in medium.receivers(dst, self.me, len(self.addrs) - 1, self.overhear if a[0] == m.KINEMATIC else 0):
            try:
                self.sock.sendto(dgram, self.addrs[k])
            except OSError:
                pass   # nobody listening there (yet): a frame lost on the medium
        self.sent += 1

    def _recv(self, timeout):
        if not self.poller.poll(int(timeout * 1000 + 0.999) if timeout > 0 else 0):
            return None
        try:
            d = self.sock.recv(128)
        except (BlockingIOError, ConnectionRefusedError):
            return None
        if len(d) < 12:
            return None
        return bytes(can_ids.strip_padding(d[4:]))

    def close(self):
        self.sock.close()
