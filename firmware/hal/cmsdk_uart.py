# The CMSDK APB UART (ARM DDI 0479, Cortex-M System Design Kit: the UARTs of ARM's MPS2
# FPGA images, five of them on QEMU's mps2-an385 / mps2-an386) and the board "mps2-uart"
# (firmware/boards): a link agent on a Cortex-M whose chain ports and joint are UARTs
#   UART0  console (the REPL; the node's phase trace, "PH" lines, goes out here; what
#          comes in while the agent runs is a line-break report, below)
#   UART1  up, toward the host        UART2  down, toward the tip (a ring's tip: the
#                                             return wire to the host)
#   UART3  the joint: JOINT_STATE in, the TORQUE report out, as a motor driver's wire
# Config: "bus" {"up": 1, "down": 2 | null, "ring", "overhear"}, "joint_uart" (3),
# "trace" (print the phase trace).
#
# The UART holds one received byte (DATA, STATE.RXFULL). Receiving is the interrupt's
# job on a board (here: board.wait() draining every UART into a ring of its own before
# it sleeps); the receive interrupts only wake the core: the board sleeps in WFI with
# PRIMASK set and the UARTs' receive interrupts enabled in the NVIC, so a byte (or the
# 1 ms SysTick) ends the WFI and no handler is ever entered (the vector table has none
# for them). A port hands the node whole frames only (up to the last 0x00 received), as
# an idle-line DMA receiver does, so what a poll round costs does not depend on how the
# bytes happened to trickle in.
#
# A neighbour that loses power holds its TX line low: a break on this node's RX, which
# STM32 (LBD) and RP2040 (PL011 BE) UARTs flag. The CMSDK UART has no break detection and
# QEMU does not tell a UART its socket's far end closed, so the emulation reports it on
# the console: a byte "1" or "2" there is a break on UART1 or UART2 (host/runners/boards.py
# sends it when it kills a board). The port then reads as hung up (`hup`), as a desktop
# node's wire does: a ring routes round the dead node (firmware/node.py).
import time
from array import array

import micropython
from machine import mem32
from micropython import const

from bus_protocol import framing
from bus_protocol import messages as m
from firmware import node as node_mod
from firmware.boards.mcu import McuBoard
from firmware.hal.sim import SimHAL
from firmware.accel.forward import find0

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
I_TICK = const(0)
I_KIN = const(2)
I_ACTED = const(3)
# ---- end of layout ----

BASES = (0x40004000, 0x40005000, 0x40006000, 0x40007000, 0x40009000)   # UART0..4
RX_IRQS = (0, 2, 4, 18, 20)   # their receive interrupts (QEMU hw/arm/mps2.c)
_CTRL = const(8)
_BAUDDIV = const(16)
_CTRL_ON = const(0x0B)   # TX enable | RX enable | RX interrupt enable
NVIC_ISER = 0xE000E100
NVIC_ICER = 0xE000E180
NVIC_ICPR = 0xE000E280


@micropython.viper
def _drain(base: uint, buf: ptr8, st: ptr32) -> int:
    """Clear the receive interrupt, then move what the UART holds into buf[st[0]:st[2]];
    st[1]: the end of the last whole frame (after its 0x00). -> bytes moved."""
    reg = ptr32(base)
    reg[3] = 2    # INTCLEAR.RX: the next byte raises the interrupt (wakes WFI) again
    n = st[0]
    cap = st[2]
    k = 0
    while n < cap:
        if not (reg[1] & 2):   # STATE.RXFULL
            break
        c = reg[0]
        buf[n] = c
        n += 1
        k += 1
        if c == 0:
            st[1] = n
    st[0] = n
    return k


@micropython.viper
def _take(src: ptr8, st: ptr32, dst: ptr8, cap: int) -> int:
    """Move the whole frames of src (st[1] bytes, at most cap) to dst; what follows them
    moves to the front of src. -> bytes moved."""
    k = st[1]
    if k > cap:
        k = cap
    i = 0
    while i < k:
        dst[i] = src[i]
        i += 1
    n = st[0]
    j = k
    while j < n:
        src[j - k] = src[j]
        j += 1
    st[0] = n - k
    st[1] = st[1] - k
    return k


@micropython.viper
def _tx(base: uint, buf: ptr8, n: int):
    reg = ptr32(base)
    i = 0
    while i < n:
        while reg[1] & 1:   # STATE.TXFULL: the line still shifts the last byte out
            pass
        reg[0] = buf[i]
        i += 1


@micropython.viper
def _console(base: uint) -> int:
    """The byte the console UART holds, or -1."""
    reg = ptr32(base)
    if reg[1] & 2:
        return int(reg[0])
    return -1


@micropython.asm_thumb
def _wfi(r0, r1, r2, r3):
    """Sleep until an interrupt is pending: r0 the receive interrupts' NVIC bits, enabled
    (r1 ISER) only while PRIMASK keeps them from being taken, then disabled (r2 ICER)
    and cleared (r3 ICPR). ARMv6-M instructions (Cortex-M0+ and up)."""
    cpsid(i)
    str(r0, [r1, 0])
    wfi()
    str(r0, [r2, 0])
    str(r0, [r3, 0])
    cpsie(i)


class Uart:
    """One CMSDK UART as a byte port (node.ChainNode's): write(buf[, n]) -> n,
    readinto(buf) -> n whole-frame bytes or None; pump() moves received bytes into the
    port's ring (rxbuf bytes; a frame longer than that is the node's to drop)."""

    def __init__(self, index, rxbuf=1024):
        self.base = BASES[index]
        self.irq_bit = 1 << RX_IRQS[index]
        mem32[self.base + _BAUDDIV] = 16   # the smallest divider the UART accepts
        mem32[self.base + _CTRL] = _CTRL_ON
        self._buf = bytearray(rxbuf)
        self._st = array("I", (0, 0, rxbuf))   # bytes held, end of the last whole frame, room
        self.hup = False   # a UART never hangs up: a dead neighbour is silence

    def pump(self):
        return _drain(self.base, self._buf, self._st)

    def any(self):
        return self._st[1]

    def readinto(self, buf):
        n = _take(self._buf, self._st, buf, len(buf))
        return n or None

    def write(self, buf, n=None):
        if n is None:
            n = len(buf)
        _tx(self.base, buf, n)
        return n


class UartJoint(SimHAL):
    """The joint on a UART of its own (SimHAL's surface): JOINT_STATE frames from the
    host's plant in, the agent's TORQUE report out, COBS-framed as on the bus."""

    def __init__(self, port, board):
        SimHAL.__init__(self)
        self.port = port
        self.board = board
        self._rx = bytearray(len(port._buf))
        self._frame = bytearray(m.MAX_FRAME)
        self._tx = bytearray(m.MAX_FRAME + m.MAX_FRAME // 254 + 2)
        self._dec = m.Decoder()

    def read(self):
        p = self.port
        p.pump()
        n = p.readinto(self._rx)
        if n:
            rx, frame = self._rx, self._frame
            i = 0
            while i < n:
                j = find0(rx, i, n)
                if j < 0:
                    break
                k = framing.cobs_decode_into(rx, i, j, frame)
                msg = self._dec.decode(frame, k) if k > 0 else None
                if msg is not None and msg[0] == m.JOINT_STATE:
                    self.on_joint_state(msg[4])
                i = j + 1
        return True

    def wait_state(self, tick, ms=5000):
        """Lockstep: sleep until the joint state of `tick` is in (or ms pass). A round
        that ends without it counts as sleep (board.slept), as the bytes it drained are
        the receive interrupt's: the work is the read() that finds the state."""
        b = self.board
        t0 = time.ticks_ms()
        while True:
            t = now_us()
            s = b.slept
            self.read()
            if self.state_tick >= tick:
                return True
            if time.ticks_diff(time.ticks_ms(), t0) >= ms:
                return False
            b.sleep()
            b.slept = time.ticks_add(s, time.ticks_diff(now_us(), t))

    def report(self, buf, n):
        k = framing.cobs_encode_at(buf, n, self._tx, 0)
        self.port.write(self._tx, k)


def now_us():
    """time.ticks_us() without its slips: the QEMU port reads its millisecond count and
    SysTick's down-counter one after the other, so a SysTick reload between the two makes
    a reading 1 ms low. Of two readings in a row at most one slips (a reload each 1 ms);
    the later in ticks order is right."""
    a = time.ticks_us()
    b = time.ticks_us()
    return b if time.ticks_diff(b, a) >= 0 else a


class TimedChainNode(node_mod.ChainNode):
    """A ChainNode whose poll rounds are timed (us of the board's clock less what it
    slept: instructions / 1000 under QEMU -icount shift=0) and put down to the phase
    they did, as benchmarks/mp_node_cycle.py names them: sync (the tick's SYNC in,
    joint sampled), k_hop (K_{i-1} in, K_i out), goal_hop (GOAL in, TORQUE out),
    forward (anything else: frames passing by)."""

    def __init__(self, board, *args, **kw):
        node_mod.ChainNode.__init__(self, *args, **kw)
        self.board = board
        self._I = self.agent.I

    def poll(self):
        b = self.board
        I = self._I
        tick, kin, acted = I[I_TICK], I[I_KIN], I[I_ACTED]
        s0 = b.slept
        t0 = now_us()
        k = node_mod.ChainNode.poll(self)
        if k:
            b.phase(tick, kin, acted, time.ticks_diff(now_us(), t0) - time.ticks_diff(b.slept, s0))
        return k


# the trace's phases, in the order of a "PH" line: PH tick sync k_hop goal_hop forward n_forward
_SYNC = const(0)
_K = const(1)
_GOAL = const(2)
_FWD = const(3)
_NFWD = const(4)


class Mps2Board(McuBoard):
    """The firmware/boards contract on the MPS2's UARTs (see the top of this file)."""

    def __init__(self, name, cfg):
        self.slept = 0      # us spent in WFI, so far (a ticks_us value: wraps, never a long int)
        self.trace = bool(cfg.get("trace", True))
        McuBoard.__init__(self, name, self._make, cfg)

    def _make(self, cfg):
        bus = cfg.get("bus", {})
        up = Uart(int(bus.get("up", 1)))
        down = Uart(int(bus["down"])) if bus.get("down") is not None else None
        self.joint = Uart(int(cfg.get("joint_uart", 3)), 256)
        self.uarts = [u for u in (up, down, self.joint) if u is not None]
        self.bus_ports = [u for u in (up, down) if u is not None]
        mask = 1 << RX_IRQS[0]   # the console: a line-break report
        for u in self.uarts:
            mask |= u.irq_bit
        self._mask = mask
        self.overhear = int(bus.get("overhear", 0))
        self._cur = [-1, 0, 0, 0, 0, 0]   # the tick being counted, then its phases
        return UartJoint(self.joint, self), {"node": "chain", "up": up, "down": down,
                                             "ring": bool(bus.get("ring"))}

    def node(self, agent):
        p = self.ports
        self._ints = agent.I
        return TimedChainNode(self, agent, p["up"], p["down"], bufsize=1024, ring=p["ring"],
                              overhear=self.overhear)

    def phase(self, tick, kin, acted, us):
        """A poll round of `us` that began in `tick` (the agent's K and torque ticks then).
        A tick's line goes out with its successor's first round: at the same point of
        every run, so what it allocates leaves the heap as it would in any other."""
        cur = self._cur
        if tick != cur[0]:
            if cur[0] >= 0 and self.trace:
                print("PH", cur[0], cur[1], cur[2], cur[3], cur[4], cur[5])
            cur[0] = tick
            cur[1] = cur[2] = cur[3] = cur[4] = cur[5] = 0
        ints = self._ints
        if ints[I_ACTED] != acted:
            cur[1 + _GOAL] += us
        elif ints[I_KIN] != kin:
            cur[1 + _K] += us
        elif ints[I_TICK] != tick:
            cur[1 + _SYNC] += us
        else:
            cur[1 + _FWD] += us
            cur[1 + _NFWD] += 1

    def sleep(self):
        t = now_us()
        _wfi(self._mask, NVIC_ISER, NVIC_ICER, NVIC_ICPR)
        self.slept = time.ticks_add(self.slept, time.ticks_diff(now_us(), t))

    def wait(self, ms):
        """Sleep (WFI) until a bus port holds a whole frame (True) or ms pass (False)."""
        t0 = time.ticks_ms()
        while True:
            got = False
            c = _console(BASES[0])
            if c == 0x31 or c == 0x32:   # "1", "2": a break on UART1 (up) or UART2 (down)
                p = self.ports["up" if c == 0x31 else "down"]
                if p is not None:
                    p.hup = True
            for u in self.uarts:
                u.pump()
            for u in self.bus_ports:
                if u.any():
                    got = True
            if got:
                return True
            if time.ticks_diff(time.ticks_ms(), t0) >= ms:
                return False
            self.sleep()


def make_board(name, cfg):
    return Mps2Board(name, cfg)
