# Memory wires: UART wires between chain nodes inside one process (firmware/group.py's
# hosted links; tests), and settle(), which runs such nodes until no frame moves. No
# import beyond the firmware's: the same on boards, unix processes and CPython.


class MemWire:
    """One end of a UART wire inside a node (the byte-port surface of firmware/hal):
    write(buf[, n]) queues bytes at the far end, readinto() takes what the far end wrote
    (None when there is nothing)."""

    def __init__(self):
        self.rx = b""
        self.peer = None
        self.hup = False

    def write(self, buf, n=None):
        if n is None:
            n = len(buf)
        self.peer.rx += buf[:n]   # a copy: the node reuses its transmit buffer
        return n

    def readinto(self, buf):
        n = min(len(buf), len(self.rx))
        if not n:
            return None
        buf[:n] = self.rx[:n]
        self.rx = self.rx[n:]
        return n


def mem_wire():
    a, b = MemWire(), MemWire()
    a.peer, b.peer = b, a
    return a, b


def settle(nodes):
    """Poll every node until none moves a frame (the memory wires between them included);
    -> the frames moved."""
    moved = 0
    k = 1
    while k:
        k = 0
        for nd in nodes:
            k += nd.poll()
        moved += k
    return moved
