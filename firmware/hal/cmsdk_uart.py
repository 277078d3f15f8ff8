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
# PRIMASK set and the UARTs' receive interrupts enabled in the NVIC, so a byte ends the
# WFI and no handler is ever entered (the vector table has none for them). The port's
# 1 ms SysTick is stopped: only a byte wakes a board, and an idle one costs the host
# nothing. In lockstep nothing is to time out while every board lives (the host waits
# for each tick's frames), and a wait that could time out would tie what the board
# does to how fast the host runs it (a neighbour only slow on a busy host taken for
# dead): a board waits for input only, until a neighbour dies (a break, below); from
# then on a wait times out (TIMER1, one-shot, armed for the wait only) on the board's
# millisecond clock (ticks_ms; the node loop's too: firmware/main.py): its counted
# work, and from then on TIMER0's time too, which follows the wall clock while the
# board sleeps. A port hands the node whole frames only (up to the last 0x00 received),
# as an idle-line DMA receiver does, so what a poll round costs does not depend on how the
# bytes happened to trickle in.
#
# Counting (host/runners/boards.py runs QEMU with -icount shift=7): one instruction is
# 128 ns of the board's clock and TIMER0 (the CMSDK APB timer, 25 MHz PCLK) ticks every
# 40 ns, so a stretch of n instructions spans 3.2 n +- 1 ticks and n = round(ticks / 3.2)
# exactly (no interrupt handler ever runs). Only the node's work is counted: every wait
# (WFI, and the draining of UARTs that comes with it) lies outside the stretches, and the
# board's microsecond clock (the HAL's ticks_us: the agent's cycle and finish times) is
# its counted work at 1 ns an instruction, so what a node sends does not depend on how
# long it waited either: two runs of a scenario count the same, tick for tick. The clock
# leaves out the rounds that only pass frames by (a report coming up from the tip): they
# fall before or after the next SYNC as the bytes arrive, and the times the agent sends
# (STATUS, TIMING: COBS-encoded, so their bytes change what the encoding costs) would
# follow them.
#
# A neighbour that loses power holds its TX line low: a break on this node's RX, which
# STM32 (LBD) and RP2040 (PL011 BE) UARTs flag. The CMSDK UART has no break detection and
# QEMU does not tell a UART its socket's far end closed, so the emulation reports it on
# the console: a byte "1" or "2" there is a break on UART1 or UART2 (host/runners/boards.py
# sends it when it kills a board). The port then reads as hung up (`hup`), as a desktop
# node's wire does: a ring routes round the dead node (firmware/node.py), what is
# written to it goes nowhere, and the wait that saw the break ends (the node loop then
# bridges a K_{i-1} it is waiting for).
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

TIMER0 = 0x40000000   # CTRL, VALUE (counting down), RELOAD
TIMER0_VALUE = 0x40000004
SYST_CSR = 0xE000E010   # SysTick control (ARMv7-M ARM B3.3.3): 0 stops it
TIMER1 = 0x40001000   # the wait's timeout: CTRL, VALUE, RELOAD, INTCLEAR (+12)
TIMER1_IRQ = const(9)   # QEMU hw/arm/mps2.c
TIMER_HZ = const(25000000)   # PCLK
BASES = (0x40004000, 0x40005000, 0x40006000, 0x40007000, 0x40009000)   # UART0..4
RX_IRQS = (0, 2, 4, 18, 20)   # their receive interrupts (QEMU hw/arm/mps2.c)
_CTRL = const(8)
_BAUDDIV = const(16)
_CTRL_RXINT = const(0x08)   # RX interrupt enable
_CTRL_ON = const(0x03 | _CTRL_RXINT)   # TX enable | RX enable | RX interrupt enable
NVIC_ISER = 0xE000E100
NVIC_ICER = 0xE000E180
NVIC_ICPR = 0xE000E280


@micropython.viper
def _drain(base: uint, buf: ptr8, st: ptr32) -> int:
    """Clear the receive interrupt, then move what the UART holds into buf[st[0]:st[2]],
    after moving what is unread (from st[3]) to the front; st[1]: the end of the last
    whole frame (after its 0x00). -> bytes moved."""
    r = st[3]
    n = st[0]
    if r:
        j = r
        while j < n:
            buf[j - r] = buf[j]
            j += 1
        n -= r
        st[1] = st[1] - r
        st[3] = 0
    reg = ptr32(base)
    reg[3] = 2    # INTCLEAR.RX: the next byte raises the interrupt (wakes WFI) again
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
    """Copy the whole frames of src unread (st[3] to st[1], at most cap bytes) to dst;
    they are read. What follows them stays where it is (_drain moves it, outside the
    node's counted work). -> bytes copied."""
    r = st[3]
    k = st[1] - r
    if k > cap:
        k = cap
    if k <= 0:
        return 0
    i = 0
    while i < k:
        dst[i] = src[r + i]
        i += 1
    st[3] = r + k
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
    """The byte the console UART holds, or -1; its receive interrupt cleared."""
    reg = ptr32(base)
    reg[3] = 2    # INTCLEAR.RX
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


@micropython.asm_thumb
def _stamp(r0, r1):
    """r0[0] = the timer's count (r1: its VALUE register)."""
    ldr(r2, [r1, 0])
    str(r2, [r0, 0])


@micropython.asm_thumb
def _mark(r0, r1):
    """The timer's count into r0[2]: a stretch starts."""
    ldr(r2, [r1, 0])
    str(r2, [r0, 8])


# the counter block (array "I"): [0] a stamp, [2] the mark (a stretch's start), [4]
# instructions of this poll round, [5] microseconds counted (mod 2^30: a ticks value),
# [6] instructions beyond them (< 1000), [7] 1 while a stretch runs, [8] milliseconds
# counted (mod 2^30), [9] microseconds beyond them (< 1000), [10:14] [5], [6], [8], [9] as
# the poll round began
_C_ROUND = const(4)
_C_US = const(5)
_C_FRAC = const(6)
_C_ON = const(7)
_C_MS = const(8)
_C_MS_FRAC = const(9)
_C_AT = const(10)


@micropython.viper
def _clock(value: uint, t: ptr32) -> int:
    """The board's milliseconds (mod 2^30: a ticks value) from a 25 MHz timer counting
    down (value: its VALUE register), read at least once per wrap (172 s): t[0] its count
    at the last read, t[1] the milliseconds, t[2] 320 ns units beyond them (< 3125),
    t[3] 40 ns ticks beyond those (< 8)."""
    v = ptr32(value)[0]
    d = uint(t[0]) - uint(v)   # ticks since the last read
    t[0] = v
    r = int(t[2]) + int(d >> 3)
    lo = int(t[3]) + int(d & 7)
    if lo >= 8:
        lo -= 8
        r += 1
    t[3] = lo
    ms = r // 3125
    t[2] = r - ms * 3125
    t[1] = (int(t[1]) + ms) & 0x3FFFFFFF
    return int(t[1])


@micropython.viper
def _count(c: ptr32, move: int) -> int:
    """Instructions from the mark to the stamp; `move`: added to the round's, the mark
    moved to the stamp."""
    d = uint(c[2]) - uint(c[0])   # the timer counts down
    n = int((d * 5 + 8) >> 4)
    if move:
        c[_C_ROUND] += n
        c[2] = c[0]
    return n


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
        self._st = array("I", (0, 0, rxbuf, 0))   # bytes held, end of the last whole frame, room, read to
        self.hup = False   # a UART never hangs up: a dead neighbour is silence
        self.board = None   # Mps2Board: its count paused while a write goes out
        self.free = True   # readinto may hand over a frame (Mps2Board.wait: one per round)

    def pump(self):
        return _drain(self.base, self._buf, self._st)

    def any(self):
        st = self._st
        return st[1] - st[3]

    def readinto(self, buf):
        """The first whole frame (and its 0x00) into buf, if the port is free to."""
        if not self.free:
            return None
        self.free = False
        st = self._st
        n = _take(self._buf, st, buf, find0(self._buf, st[3], st[1]) + 1 - st[3])
        return n or None

    def write(self, buf, n=None):
        if n is None:
            n = len(buf)
        if self.hup:   # into a broken line the bytes go nowhere
            return n
        # the bytes go out as a DMA channel would send them, not counted: however long
        # the far end (a QEMU socket that takes what its UART has read) holds them up
        b = self.board
        on = b is not None and b._c[_C_ON]
        if on:
            b.pause()
        _tx(self.base, buf, n)
        if on:
            b.resume()
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
        """The whole frames the joint's UART holds (pumped where the board waits), in a
        counted round only: the state is taken where the node samples it (its SYNC's
        round), whenever the bytes came, not by an idle read before it."""
        if not self.board._c[_C_ON]:
            return True
        p = self.port
        n = _take(p._buf, p._st, self._rx, len(self._rx))
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
        """Lockstep: sleep until the joint state of `tick` is in (or ms pass). The wait
        is not counted, whether it sleeps or not (the same instructions either way): the
        work is the read() that takes the state (a state of an earlier tick, left by a
        run's start, first)."""
        b = self.board
        p = self.port
        for _ in range(2):
            b.pause()
            t0 = b.ticks_ms()
            while True:
                b.pump()
                left = b.left(ms, t0)
                if p.any() or left <= 0:
                    break
                b.sleep(left)
            b.resume()
            self.read()
            if self.state_tick >= tick:
                return True
        return False

    def report(self, buf, n):
        k = framing.cobs_encode_at(buf, n, self._tx, 0)
        self.port.write(self._tx, k)


class TimedChainNode(node_mod.ChainNode):
    """A ChainNode whose poll rounds (one frame each: Mps2Board.wait) are counted in
    instructions (the top of this file) and put down to the phase they did, as
    benchmarks/mp_node_cycle.py names them: sync (the tick's SYNC in, joint sampled),
    k_hop (K_{i-1} in, K_i out), goal_hop (GOAL in, TORQUE out), forward (anything
    else: frames passing by)."""

    def __init__(self, board, *args, **kw):
        node_mod.ChainNode.__init__(self, *args, **kw)
        self.board = board
        self._I = self.agent.I

    def poll(self):
        b = self.board
        I = self._I
        tick, kin, acted = I[I_TICK], I[I_KIN], I[I_ACTED]
        b.begin()
        k = node_mod.ChainNode.poll(self)
        n = b.end()
        if k:
            b.phase(tick, kin, acted, n)
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
        self.trace = bool(cfg.get("trace", True))
        self._c = array("I", (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        self._t = array("I", (0xFFFFFFFF, 0, 0, 0, 0))   # _clock's, [4] its value at the first break
        self.timed = False   # waits time out (a neighbour has died)
        mem32[SYST_CSR] = 0
        mem32[TIMER1] = 0
        mem32[TIMER0 + 8] = 0xFFFFFFFF   # RELOAD
        mem32[TIMER0 + 4] = 0xFFFFFFFF   # VALUE
        mem32[TIMER0] = 1                # CTRL: enabled, no interrupt
        McuBoard.__init__(self, name, self._make, cfg)
        self.hal.ticks_us = self.work_us

    def _make(self, cfg):
        bus = cfg.get("bus", {})
        up = Uart(int(bus.get("up", 1)))
        down = Uart(int(bus["down"])) if bus.get("down") is not None else None
        self.joint = Uart(int(cfg.get("joint_uart", 3)), 256)
        self.uarts = [u for u in (up, down, self.joint) if u is not None]
        for u in self.uarts:
            u.board = self
        self.bus_ports = [u for u in (up, down) if u is not None]
        mem32[BASES[0] + _CTRL] |= _CTRL_RXINT   # the console: a line-break report wakes it
        mask = 1 << RX_IRQS[0]
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
        else:   # a frame passing by: counted, but not on the board's clock (top of this file)
            cur[1 + _FWD] += us
            cur[1 + _NFWD] += 1
            c = self._c
            c[_C_US] = c[_C_AT]
            c[_C_FRAC] = c[_C_AT + 1]
            c[_C_MS] = c[_C_AT + 2]
            c[_C_MS_FRAC] = c[_C_AT + 3]

    def begin(self):
        """A poll round starts: its count from 0, a stretch from here."""
        c = self._c
        c[_C_ROUND] = 0
        c[_C_AT] = c[_C_US]
        c[_C_AT + 1] = c[_C_FRAC]
        c[_C_AT + 2] = c[_C_MS]
        c[_C_AT + 3] = c[_C_MS_FRAC]
        c[_C_ON] = 1
        _mark(c, TIMER0_VALUE)

    def pause(self):
        """The stretch ends here (a wait begins)."""
        c = self._c
        _stamp(c, TIMER0_VALUE)
        f = c[_C_FRAC] + _count(c, 1)
        us = f // 1000
        c[_C_US] = (c[_C_US] + us) & 0x3FFFFFFF
        c[_C_FRAC] = f % 1000
        us += c[_C_MS_FRAC]
        c[_C_MS] = (c[_C_MS] + us // 1000) & 0x3FFFFFFF
        c[_C_MS_FRAC] = us % 1000
        c[_C_ON] = 0

    def resume(self):
        c = self._c
        c[_C_ON] = 1
        _mark(c, TIMER0_VALUE)

    def end(self):
        """The poll round ends: -> its instructions."""
        self.pause()
        return self._c[_C_ROUND]

    def work_us(self):
        """The board's clock: its counted work, 1 ns an instruction (a ticks_us value)."""
        c = self._c
        if not c[_C_ON]:
            return c[_C_US]
        _stamp(c, TIMER0_VALUE)
        return (c[_C_US] + (c[_C_FRAC] + _count(c, 0)) // 1000) & 0x3FFFFFFF

    def ticks_ms(self):
        """The board's millisecond clock (a ticks value; the node loop's, firmware/main.py):
        its counted work (up to the last wait), and once a neighbour has died the time
        since then too (TIMER0: the wall clock's while the board sleeps)."""
        ms = self._c[_C_MS]
        if self.timed:
            ms += time.ticks_diff(_clock(TIMER0_VALUE, self._t), self._t[4])
        return ms & 0x3FFFFFFF

    def sleep(self, ms=0):
        """WFI until a byte comes in (a break report too) or, once a neighbour has died,
        ms pass (TIMER1: a clock deadline while the board sleeps would make QEMU move its
        clock on by the wall clock's time at the next wake, in a counted stretch maybe)."""
        mask = self._mask
        timed = ms > 0 and self.timed
        if timed:
            mem32[TIMER1 + 12] = 1   # INTCLEAR
            n = min(ms, 60000) * (TIMER_HZ // 1000)
            mem32[TIMER1 + 8] = n    # RELOAD
            mem32[TIMER1 + 4] = n    # VALUE
            mem32[TIMER1] = 9        # CTRL: enabled, interrupt enabled
            mask |= 1 << TIMER1_IRQ
        _wfi(mask, NVIC_ISER, NVIC_ICER, NVIC_ICPR)
        if timed:
            mem32[TIMER1] = 0
            mem32[TIMER1 + 12] = 1

    def pump(self):
        """Every UART's bytes into its ring, its receive interrupt cleared (a byte left in
        one would end every WFI at once, and QEMU hands a UART its next byte only when it
        is read), and a break reported on the console taken (-> True)."""
        broke = False
        c = _console(BASES[0])
        if c == 0x31 or c == 0x32:   # "1", "2": a break on UART1 (up) or UART2 (down)
            p = self.ports["up" if c == 0x31 else "down"]
            if p is not None:
                p.hup = broke = True
                if not self.timed:
                    self._t[4] = _clock(TIMER0_VALUE, self._t)
                    self.timed = True
        for u in self.uarts:
            u.pump()
            u.free = False
        return broke

    def left(self, ms, t0):
        """What is left of a wait of ms from t0 (ticks_ms): all of it until a neighbour
        has died (a break), the wait's timeout never armed (the top of this file)."""
        if not self.timed:
            return ms
        return ms - time.ticks_diff(self.ticks_ms(), t0)

    def wait(self, ms):
        """Sleep (WFI) until a bus port holds a whole frame (True), or a break is reported
        or ms pass (False: only once a neighbour has died); one port (up first) is then
        free to hand over its first frame, so that a poll round takes one frame however
        the bytes came in."""
        t0 = self.ticks_ms()
        while True:
            if self.pump():
                return False
            for u in self.bus_ports:
                if u.any():
                    u.free = True
                    return True
            left = self.left(ms, t0)
            if left <= 0:
                return False
            self.sleep(left)



def make_board(name, cfg):
    return Mps2Board(name, cfg)
