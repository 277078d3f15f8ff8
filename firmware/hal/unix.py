# MicroPython unix-port back end: a link agent as a desktop process (docs/design.md §13).
# Joint state comes from the host's plant (JOINT_STATE frames: on a wire of their own,
# SimIO, or on the bus, SimHAL) and the torque goes back to it; the bus is
#   "unix-pty": UART daisy chain on pseudo-terminals (byte-stream ports, node.ChainNode)
#   "unix-udp": CAN-like broadcast medium on loopback UDP (frame port, node.BusNode)
# Everything blocks in select.poll with a timeout: 10-20 of these share two cores.
import select
import socket
import time

from firmware import node as node_mod
from firmware.hal.sim import SimHAL
from firmware.hal.unix_ports import StreamPort, UdpPort, open_pty

class SimIO(SimHAL):
    """Joint I/O wired straight to the host's plant on loopback UDP, the way a board's
    encoder and motor driver are wired to its own joint and not to the bus: JOINT_STATE
    datagrams in (read() keeps the newest), the TORQUE report out (report()). Port
    io_base + link here, io_base at the host."""

    def __init__(self, link, io_base, host="127.0.0.1"):
        SimHAL.__init__(self)
        from bus_protocol import messages
        self._m = messages
        self._dec = messages.Decoder()
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.bind(socket.getaddrinfo(host, io_base + link)[0][-1])
        self.s.setblocking(False)
        self.host_addr = socket.getaddrinfo(host, io_base)[0][-1]
        self._poll = select.poll()
        self._poll.register(self.s, select.POLLIN)

    def wait_state(self, tick, ms=5000):
        """Lockstep: block until the joint state of `tick` is in (or ms pass, when the
        host gives up on the tick anyway). It comes on this wire, apart from the SYNC on
        the bus, and may trail it on a busy machine. -> True if it is in."""
        end = time.ticks_add(time.ticks_ms(), ms)
        while True:
            self.read()
            left = time.ticks_diff(end, time.ticks_ms())
            if self.state_tick >= tick or left <= 0:
                return self.state_tick >= tick
            self._poll.poll(left)

    def read(self):
        while True:
            try:
                d = self.s.recv(80)
            except OSError:   # nothing more waiting
                return True
            msg = self._dec.decode(d)
            if msg is not None and msg[0] == self._m.JOINT_STATE:
                self.on_joint_state(msg[4])

    def report(self, buf, n):
        try:
            self.s.sendto(buf[:n], self.host_addr)
        except OSError:
            pass   # the host is gone: the bus will hang up too


class UnixBoard:
    """Board object (firmware/boards contract): .hal, .node(agent), .wait(ms), .closed."""

    def __init__(self, name, cfg):
        self.name = name
        io = cfg.get("io")
        self.hal = SimHAL() if io is None else SimIO(cfg["link"], int(io["base_port"]), io.get("host", "127.0.0.1"))
        bus = cfg.get("bus", {})
        baud = int(bus.get("baud", 0))
        self.ports = []
        if name == "unix-pty":
            self.up = open_pty(bus["up"], baud)
            self.down = open_pty(bus["down"], baud) if bus.get("down") else None
            self.ring = bool(bus.get("ring"))   # the tip's down is the return wire to the host
            self.overhear = int(bus.get("overhear", 0))
            self.ports = [self.up] + ([self.down] if self.down else [])
        else:
            self.port = UdpPort(cfg["link"], cfg["n_links"], int(bus["base_port"]),
                                bus.get("host", "127.0.0.1"), baud)
            self.port.overhear = int(bus.get("overhear", 0))
            self.ports = [self.port]
        self._poll = select.poll()
        for p in self.ports:
            self._poll.register(p.fileno(), select.POLLIN)
        self._paced = baud > 0
        if bus.get("faults"):   # the run injects bus faults: the wires misbehave
            from bus_protocol.wire_faults import WireFaults
            faults = WireFaults(bus["faults"], int(bus.get("fault_seed", 0)))
            for p in self.ports:
                p.faults, p.me = faults, int(cfg["link"])
            self._paced = True   # delayed frames wait in the ports' queues

    def node(self, agent):
        for p in self.ports:
            p.clock = agent.I   # bus faults follow the run's ticks
        if self.name == "unix-pty":
            return node_mod.ChainNode(agent, self.up, self.down, bufsize=2048, ring=self.ring,
                                      overhear=self.overhear)
        return node_mod.BusNode(agent, self.port)

    @property
    def closed(self):
        """A chain node stops when its up wire hangs up (the host is gone); its down wire
        hanging up is the next node dying (a dead tip: the host bridges it, this node goes
        on). A ring node stops when both have: with one neighbour dead it still reaches the
        host the other way round."""
        if not getattr(self, "ring", False):
            return self.ports[0].hup
        n = 0
        for p in self.ports:
            if p.hup:
                n += 1
        return n == len(self.ports)

    def wait(self, ms):
        """Block until a port has input, a paced write is due, or ms pass. -> True if input."""
        if not self._paced:
            ev = self._poll.poll(ms)
            self._hangup(ev)
            return bool(ev)
        due = -1
        for p in self.ports:
            d = p.due_in_us()
            if d >= 0 and (due < 0 or d < due):
                due = d
        if 0 <= due < 2000:      # poll() counts in ms: sleep the last stretch in short
            if self._poll.poll(0):  # naps, looking at the input between them
                return True
            time.sleep_us(min(due, 250))
            for p in self.ports:
                p.flush()
            return True
        if due >= 0:
            ms = min(ms, due // 1000 - 1)
        ev = self._poll.poll(ms)
        if due >= 0:
            for p in self.ports:
                p.flush()
        self._hangup(ev)
        return bool(ev)

    def _hangup(self, ev):
        for fd, e in ev:
            if e & select.POLLHUP:   # a stream's far end closed (UDP has no such thing;
                for p in self.ports:  # its POLLERR, an ICMP unreachable, clears on recv)
                    if p.fileno() == fd and isinstance(p, StreamPort):
                        p.hup = True
                        self._poll.unregister(fd)   # or every poll returns at once


def make_board(name, cfg):
    return UnixBoard(name, cfg)
