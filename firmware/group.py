# Several links on one node (Fernández et al.'s distribution of links over processors,
# e.g. p2a51: links 1-5 on one processor, link 6 on another; docs/design.md §11). The
# node runs one agent per link it hosts, each behind its own ChainNode (UART) or BusNode
# (CAN) as on a one-link node, and joins its chain nodes inside the process by memory
# wires: K_i passes from one hosted agent to the next without leaving the node, and only
# the group's first up port and last down port are real wires. Desktop processes only
# (firmware/hal/unix_ports.py ports); config: the group's bus, io and board, and "group": the
# hosted links' configs, base-most first. Its loop is a one-link node's (firmware/main.py
# serve: the same hop and goal timeouts, the same fault test).
import select

from firmware import auth
from firmware import node as node_mod
from firmware.agent import LinkAgent
from firmware.hal import unix, unix_ports
from firmware.hal.mem import mem_wire, settle


class GroupBoard(unix.UnixBoard):
    """The node's real ports and one agent with its joint I/O per hosted link (waits and
    hang-ups as a one-link unix board's, unpaced)."""

    def __init__(self, cfg):
        self.name = cfg.get("board", "unix-pty")
        bus = cfg.get("bus", {})
        if int(bus.get("baud", 0)):
            raise ValueError("a node hosting several links does not pace its wires (baud 0)")
        io = cfg.get("io")
        self.agents = []
        for c in cfg["group"]:
            hal = unix.SimHAL() if io is None else unix.SimIO(c["link"], int(io["base_port"]),
                                                              io.get("host", "127.0.0.1"))
            self.agents.append(LinkAgent(c, hal))
            auth.guard(self.agents[-1], dict(c, auth=cfg.get("auth", c.get("auth"))))
        self.ports = []
        self.nodes = []
        if self.name == "unix-pty":
            up = unix_ports.open_pty(bus["up"])
            down = unix_ports.open_pty(bus["down"]) if bus.get("down") else None
            self.ports = [up] + ([down] if down else [])
            ring = bool(bus.get("ring"))
            last = len(self.agents) - 1
            for k, a in enumerate(self.agents):
                if k < last:
                    nxt_up, my_down = mem_wire()
                else:
                    nxt_up, my_down = None, down
                self.nodes.append(node_mod.ChainNode(a, up, my_down, bufsize=2048, ring=ring))
                up = nxt_up
        else:   # CAN: each hosted link has its own address on the medium
            for a in self.agents:
                p = unix_ports.UdpPort(a.link, a.n_links, int(bus["base_port"]), bus.get("host", "127.0.0.1"))
                self.ports.append(p)
                self.nodes.append(node_mod.BusNode(a, p))
        self._poll = select.poll()
        for p in self.ports:
            self._poll.register(p.fileno(), select.POLLIN)
        self._paced = False

    def poll(self):
        """Every hosted link's node until none moves a frame (the memory wires included);
        -> the frames moved (firmware/main.py serve)."""
        return settle(self.nodes)
