"""`linkteam budget`: bytes per control cycle, chain latency and the highest control
rate for N links on a UART daisy chain, classic CAN or CAN-FD, from the protocol's real
frame sizes (bus_protocol) and per-hop compute (host/tools/hop_compute.py: measured under
MicroPython, priced from an emulated board's instruction counts, or given).

The latency is a small discrete-event simulation of one cycle (docs/design.md §6): lines are
FIFO and store-and-forward (a frame is usable when its last byte has arrived); UART has
one line per direction per segment, CAN one shared medium (arbitration order ignored).
A UART ring (topology "ring", the default) adds the return line tip -> host and sends
every frame for the host down the chain and over it; a "chain" sends them up. On a ring
the host also sends GOAL into the tip (the return line's other direction), and the two
goal waves stop where they meet (firmware/node.py ChainNode).
Nodes forward passing frames after `fwd_us` and answer their own after `k_us`
(K_{i-1} -> K_i) or `goal_us` (GOAL -> TORQUE); the host turns K_N into the goal in
`host_us`. With `kinematic_copies` = k (the kinematic bus's time redundancy) every
KINEMATIC frame goes out k times back to back; a node composes on the first copy, the
others only take line time. docs/design.md §6: the whole chain must fit inside one control period."""
import heapq
import math

from bus_protocol import medium
from bus_protocol import messages as m
from host.tools.hop_compute import BOARDS, DEFAULT_COMPUTE, board_compute

BUS_FORMS = "uart:BAUD | can:BITRATE | canfd:NOMINAL/DATA (bit/s; 1000000, 1e6, 1M or 500k)"
_SI = {"k": 1e3, "K": 1e3, "M": 1e6}


def parse_rate(text, spec):
    """'1000000' | '1e6' | '1M' | '500k' -> bit/s (> 0); ValueError naming the spec."""
    t = text.strip()
    scale = _SI.get(t[-1:], 1.0)
    try:
        v = float(t[:-1] if scale != 1.0 else t) * scale
    except ValueError:
        raise ValueError("bus %r: %r is not a bit rate (%s)" % (spec, text, BUS_FORMS)) from None
    if not v > 0 or v == float("inf"):
        raise ValueError("bus %r: the bit rate must be positive, not %r" % (spec, text))
    return v


def parse_bus(spec):
    """uart:BAUD | can:BITRATE | canfd:NOMINAL/DATA -> (kind, rate, data_rate)"""
    kind, colon, rate = spec.partition(":")
    if colon and not rate.strip():
        raise ValueError("bus %r: no bit rate after the colon (%s)" % (spec, BUS_FORMS))
    if kind in ("uart", "can"):
        return kind, parse_rate(rate or "1000000", spec), None
    if kind == "canfd":
        nom, _, data = (rate or "1000000/5000000").partition("/")
        return kind, parse_rate(nom, spec), parse_rate(data or nom, spec)
    raise ValueError("bus: %s, not %r" % (BUS_FORMS, spec))


def uart_bytes(mtype, auth=False):
    return m.frame_size(mtype, auth) + medium.UART_FRAME_EXTRA


def frame_seconds(kind, rate, data_rate, mtype, auth=False):
    """Time one logical frame occupies the line (nominal bits, no stuffing); `auth`: the
    host's frames protected (bus_protocol/SPEC.md §9)."""
    n = m.frame_size(mtype, auth)
    if kind == "uart":
        return medium.uart_seconds(uart_bytes(mtype, auth), rate)
    if kind == "can":      # fragments of 1 control + 7 data bytes, extended id: 67 + 8*dlc bits
        frags = math.ceil(n / 7.0)
        last = n - 7 * (frags - 1)
        return ((frags - 1) * (67 + 64) + 67 + 8 * (last + 1)) / rate
    return medium.fd_frame_seconds(n, rate, data_rate)   # arbitration at nominal, data at data rate


PLANTS = {
    # plant: (JOINT_STATE frames on the bus, TORQUE frames on the bus, cycle ends when)
    "bus": (True, True, "the host has every TORQUE"),          # HIL: simulated plant fed over the bus
    "wire": (False, False, "every agent has acted"),           # processes: joint I/O on wires of its own
    "real": (False, True, "every agent has acted"),            # boards with real encoders and motors;
}                                                              # TORQUE frames are telemetry


def cycle_frames(n, plant="bus", kinematic_copies=1):
    """(mtype, count) on the bus per cycle (STATUS every 12 cycles, amortised)."""
    js, tq, _ = PLANTS[plant]
    out = [(m.SYNC, 1), (m.KINEMATIC, (n + 1) * kinematic_copies), (m.GOAL, 1), (m.STATUS, n / 12.0)]
    if tq:
        out.append((m.TORQUE, n))
    if js:
        out.append((m.JOINT_STATE, n))
    return out


class _Line:
    def __init__(self):
        self.free = 0.0
        self.busy = 0.0

    def send(self, ready, seconds):
        start = max(ready, self.free)
        self.free = start + seconds
        self.busy += seconds
        return self.free


def simulate(n, bus, plant="bus", compute=None, topology="ring", kinematic_copies=1, auth=False):
    """One cycle -> dict(latency_s, k_n_s, line_busy_s (busiest line), ...)."""
    return _Cycle(n, bus, plant, compute, topology, kinematic_copies, auth).run()


class _Cycle:
    """The discrete-event simulation of one cycle behind `simulate`: frames leave nodes
    (`emit`), take their line's time and arrive (`push`); the host (node 0) and every
    link act on what arrives (`at_host`, `at_link`)."""

    def __init__(self, n, bus, plant, compute, topology, kinematic_copies, auth=False):
        kind, rate, data_rate = parse_bus(bus) if isinstance(bus, str) else bus
        self.n, self.kind, self.plant, self.topology, self.copies = n, kind, plant, topology, kinematic_copies
        self.auth = auth
        c = self.c = dict(DEFAULT_COMPUTE)
        c.update(compute or {})
        self.w = c["wake_us"]
        self.k_us, self.goal_us, self.fwd_us = c["k_us"] + self.w, c["goal_us"] + self.w, c["fwd_us"] + self.w
        self.t_of = {mt: frame_seconds(kind, rate, data_rate, mt, auth) for mt in
                     (m.SYNC, m.JOINT_STATE, m.KINEMATIC, m.GOAL, m.TORQUE)}
        self.ev = []
        self.seq = 0
        self.chain = kind == "uart"
        self.ring = self.chain and topology == "ring"
        self.medium = _Line()
        self.ret = _Line()                            # ring: the tip's down port -> the host
        self.ret_in = _Line()                         # ring: the host -> the tip's down port (GOAL)
        self.got_goal = set()
        self.got_k = set()                            # nodes that composed K_i (on the first copy)
        self.down = [_Line() for _ in range(n + 2)]   # down[j]: node j-1 -> node j
        self.up = [_Line() for _ in range(n + 2)]     # up[j]:   node j -> node j-1
        self.torques = 0
        self.t_kn = self.t_end = None

    def push(self, t, node, frame):
        self.seq += 1
        heapq.heappush(self.ev, (t, self.seq, node, frame))

    def emit(self, t, src, frame):
        """Frame (mtype, dst[, way]) leaves node src at time t; way = -1 for a ring's
        goal wave running up from the tip."""
        n, push, down, up = self.n, self.push, self.down, self.up
        mt, dst = frame[:2]
        dt = self.t_of[mt]
        if not self.chain:
            arr = self.medium.send(t, dt)
            targets = range(1, n + 1) if dst == m.BROADCAST else [dst]
            for d in targets:
                if d != src:
                    push(arr, d, frame)
            return
        if mt == m.GOAL and self.ring:   # two waves: from the host into both ends, on away from it
            if src == 0:
                push(down[1].send(t, dt), 1, (mt, dst, 1))
                push(self.ret_in.send(t, dt), n, (mt, dst, -1))
            elif frame[2] > 0 and src < n:
                push(down[src + 1].send(t, dt), src + 1, frame)
            elif frame[2] < 0 and src > 1:
                push(up[src].send(t, dt), src - 1, frame)
            return
        if dst == m.HOST and self.ring:
            if src < n:
                push(down[src + 1].send(t, dt), src + 1, frame)
            else:
                push(self.ret.send(t, dt), 0, frame)
            return
        if dst == m.BROADCAST or (dst != m.HOST and dst > src):
            if src < n:
                push(down[src + 1].send(t, dt), src + 1, frame)
        if dst == m.HOST or (dst != m.BROADCAST and dst < src):
            push(up[src].send(t, dt), src - 1, frame)

    def run(self):
        js, self.tq, _ = PLANTS[self.plant]
        n = self.n
        frames = [(m.JOINT_STATE, i) for i in range(1, n + 1)] if js else []
        frames += [(m.SYNC, m.BROADCAST)] + [(m.KINEMATIC, 1)] * self.copies
        for f in frames:
            self.emit(0.0, 0, f)
        while self.ev:
            t, _, node, frame = heapq.heappop(self.ev)
            if self.ring and frame[0] == m.GOAL:
                if node in self.got_goal:
                    continue              # the other wave was here first
                self.got_goal.add(node)
            if node == 0:
                self.at_host(t, frame[0])
            else:
                self.at_link(t, node, frame)
        return self.result()

    def at_host(self, t, mt):
        """K_N in: the goal out after the host's compute; with the plant on the bus, the
        cycle ends when the last torque is in."""
        if mt == m.KINEMATIC and self.t_kn is None:
            self.t_kn = t
            self.emit(t + self.c["host_us"] * 1e-6, 0, (m.GOAL, m.BROADCAST))
        elif mt == m.TORQUE and self.plant == "bus":
            self.torques += 1
            if self.torques == self.n:
                self.t_end = t

    def at_link(self, t, node, frame):
        """A link forwards what passes by (cut-through: first), composes K_i on its first
        copy of K_{i-1}, and acts on the goal (its torque to the host and, with the plant
        elsewhere, at its joint)."""
        us = 1e-6
        mt, dst = frame[:2]
        if self.chain and dst != node:
            self.emit(t + self.fwd_us * us, node, frame)
        if dst != node and dst != m.BROADCAST:
            return
        if mt == m.KINEMATIC and node not in self.got_k:
            self.got_k.add(node)
            for _ in range(self.copies):
                self.emit(t + self.k_us * us, node, (m.KINEMATIC, node + 1 if node < self.n else m.HOST))
        elif mt == m.GOAL:
            acted = t + self.goal_us * us
            if self.tq:
                self.emit(acted, node, (m.TORQUE, m.HOST))
            if self.plant != "bus":   # the torque acts at the node (+ one wire hop to the plant)
                done = acted + (self.w * us if self.plant == "wire" else 0.0)
                self.t_end = done if self.t_end is None else max(self.t_end, done)

    def result(self):
        n, chain, kind = self.n, self.chain, self.kind
        lines = [self.medium] if not chain else self.down[1:n + 1] + self.up[1:n + 1] + [self.ret, self.ret_in]
        bytes_cycle = sum(cnt * (uart_bytes(mt, self.auth) if chain else m.frame_size(mt, self.auth))
                          for mt, cnt in cycle_frames(n, self.plant, self.copies))
        busiest = max(ln.busy for ln in lines)
        return {"bus": kind, "links": n, "topology": self.topology if chain else None, "latency_s": self.t_end,
                "k_n_s": self.t_kn, "bytes_per_cycle": bytes_cycle,
                "busiest_line_s": busiest, "max_rate_hz": 1.0 / max(self.t_end, busiest), "compute": self.c}


def board_verdicts(results, links=(10, 20), rates=(120.0, 500.0),
                   buses=("uart:1000000", "uart:2000000", "uart:4000000", "canfd:1000000/5000000")):
    """Rows (board, links, bus, topology, max_rate_hz, {rate: fits}) for every board whose
    build was measured, plant "real" (boards with their own encoders and motors)."""
    rows = []
    for board in sorted(BOARDS):
        if BOARDS[board][0] not in results.get("mcu", {}):
            continue
        c = board_compute(results, board)
        for n in links:
            for bus in buses:
                r = simulate(n, bus, "real", c, "ring")
                rows.append((board, n, bus, r["topology"], r["max_rate_hz"],
                             dict((f, r["max_rate_hz"] >= f) for f in rates)))
    return rows


def report(n, bus, rate, plant="bus", compute=None, topology="ring", kinematic_copies=1, auth=False):
    if n < 1:
        raise ValueError("--links must be at least 1, not %d" % n)
    if n > m.MAX_LINKS:
        raise ValueError("--links must be at most %d (bus addresses), not %d" % (m.MAX_LINKS, n))
    if not 0 < rate < float("inf"):
        raise ValueError("--rate must be a finite positive number of Hz, not %g" % rate)
    r = simulate(n, bus, plant, compute, topology, kinematic_copies, auth)
    period = 1.0 / rate
    lines = ["%d links on %s%s, plant %r%s: the cycle ends when %s" % (
                 n, bus, " (%s)" % topology if r["topology"] else "", plant,
                 ", %d copies of each K_i" % kinematic_copies if kinematic_copies > 1 else "", PLANTS[plant][2])
             + ("; host commands and GOAL authenticated" if auth else "; unauthenticated"),
             "  bytes per cycle (all frames)     %8d" % r["bytes_per_cycle"],
             "  busiest line per cycle           %8.3f ms" % (r["busiest_line_s"] * 1e3),
             "  K_N at the host                  %8.3f ms" % (r["k_n_s"] * 1e3),
             "  cycle latency                    %8.3f ms" % (r["latency_s"] * 1e3),
             "  highest control rate             %8.1f Hz" % r["max_rate_hz"],
             "  at %.0f Hz (period %.3f ms): %s" % (rate, period * 1e3,
                                                    "fits" if r["max_rate_hz"] >= rate else "DOES NOT FIT"),
             "  per-hop compute (us): " + ", ".join("%s %.0f" % kv for kv in sorted(r["compute"].items()))]
    return "\n".join(lines)
