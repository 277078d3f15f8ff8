# A ChainNode (link 3 of 5) fed one UART byte stream from up, cut into reads of every
# size from 1 byte to the whole stream: what it passes on, what its agent gets and what
# it drops must not depend on where the reads split. Runs under MicroPython (viper and,
# on ARM, Thumb loops) and CPython (pure Python) alike; tests/test_node_stream.py runs
# it under both (the repository root on sys.path) and checks the output against frames
# built independently.
from bus_protocol import framing
from bus_protocol import messages as m
from firmware.node import ChainNode


class Agent:
    """Stands in for a LinkAgent: records the frames the node hands it."""

    def __init__(self):
        self.link = 3
        self.n_links = 5
        self.tick = 0
        self.decoder = m.Decoder()
        self.got = []

        class Hal:
            pass
        self.hal = Hal()

    def receive(self, buf, n):
        self.got.append(bytes(buf[:n]))

    def on_wire(self, blk):   # (a LinkAgent's linkcore queues its hot frames there)
        pass


class Port:
    def __init__(self, chunks=()):
        self.chunks = list(chunks)
        self.out = bytearray()

    def readinto(self, buf):
        if not self.chunks:
            return None
        c = self.chunks.pop(0)
        if len(c) > len(buf):   # a port reads at most len(buf): the rest comes next time
            self.chunks.insert(0, c[len(buf):])
            c = c[:len(buf)]
        buf[0:len(c)] = c
        return len(c)

    def write(self, buf, n):
        self.out.extend(bytes(buf[:n]))
        return n


def frames():
    """The logical frames on the stream, in order."""
    return [m.encode(m.JOINT_STATE, 0, 3, 1, (5, 0.1, 0.2, 0, 0., 0., 0., 0., 0., 0.)),
            m.encode(m.SYNC, 0, 255, 2, (5,)),
            m.encode(m.KINEMATIC, 2, 3, 3, (5, 1., 0., 0., 0., 1.5, 0., 0., 0., 0.1, 0., 0., 0., 0.2)),
            m.encode(m.COMMAND, 0, 4, 4, (4, 0.0)),
            m.encode(m.GOAL, 0, 255, 5, (5, 0, 7.5, 0., 0., 10., 20., 0., 0., 0., 3.))] + [
            m.encode(m.COMMAND, 0, 3, 6 + i, (m.CMD_PING, 0.0)) for i in range(8)]   # more than a pool


def stream():
    f = frames()
    return (framing.uart_frame(f[0]) + b"\x00" + framing.uart_frame(f[1])    # an empty run
            + b"\x07" * 100 + b"\x00"                                         # overlong run
            + framing.uart_frame(f[2]) + b"\x05\x01\x00"                       # malformed COBS
            + framing.uart_frame(f[3]) + framing.uart_frame(f[4]) + b"".join(framing.uart_frame(p) for p in f[5:]))


def run(size):
    data = stream()
    up = Port([data[i:i + size] for i in range(0, len(data), size)])
    down = Port()
    agent = Agent()
    node = ChainNode(agent, up, down)
    while up.chunks:
        node.poll()
    return down.out, up.out, agent.got, node.dropped, node.forwarded


def main():
    whole = run(len(stream()))
    for size in range(1, len(stream()) + 1):
        if run(size) != whole:
            print("DIFFERS at reads of %d bytes" % size)
    down, up, got, dropped, forwarded = whole
    print("DOWN " + "".join("%02x" % b for b in down))
    print("UP " + "".join("%02x" % b for b in up))
    for f in got:
        print("GOT " + "".join("%02x" % b for b in f))
    print("DROPPED %d FORWARDED %d" % (dropped, forwarded))


if __name__ == "__main__":
    main()
