# RP2040 / RP2350 joint node on the UART daisy chain (board name "rp2-uart").
# Imported only on that board (or under tests/fakes): uses machine and rp2.
# Hardware: hardware/rp2040-uart-node.md. Bus: firmware/node.py ChainNode,
# framing COBS + 0x00 (bus_protocol/SPEC.md 5).
#
#   hal, ports = make(cfg)   ports = {"node": "chain", "up": UartPort, "down": UartPort|None, "ring"}
#   node = ChainNode(agent, ports["up"], ports["down"], ring=ports["ring"])
#
# Config keys (cfg = the link's JSON dict; LinkAgent keys live alongside):
#   board        "rp2-uart"
#   uart         {baud (3000000), rxbuf (1024), txbuf (1024),
#                 up {id, tx, rx}, down {id, tx, rx} | null on the last link}
#                 defaults: up = UART0 GP0/GP1, down = UART1 GP4/GP5
#   pins         {enc_a, enc_b (consecutive GPIOs for "pio"), pwm, dir | in1, in2,
#                 brake, enable (optional), fault (optional, active low), isense (ADC GPIO, optional)}
#   encoder      {mode "pio" (default: PIO x4 decoder) | "irq" (pin IRQs, x4), sm (0..3 / 0..7)}
#   bridge       {mode "pwm_dir" (DRV8874 PH/EN, default) | "in1_in2" (DRV8871, BTS7960 RPWM/LPWM),
#                 freq (20000 Hz), brake_release_level (1), enable_level (1)}
#   isense       {v_per_a (0.45: DRV8874 IPROPI 450 uA/A into 1 kohm), offset_v (0), vref (3.3)}
#   i2c          {id (1), sda (14), scl (15), freq (400000)}  for the range sensors
#   range        see JointCore.setup_ranges (firmware/hal/joint.py)
#   wdt_ms       hardware watchdog, started at the first read() and fed by every joint read; 0 = off
#   joint, motor, brake_cuts_motor: firmware/hal/joint.py
import machine
import rp2
from machine import PWM, UART, Pin
from micropython import const

from firmware.hal.joint import JointCore

_U16 = const(65535)
_U32 = const(0xFFFFFFFF)
# x4 quadrature decoding table, index = old_state << 2 | new_state, state = B << 1 | A;
# forward sequence 00 -> 01 -> 11 -> 10 -> 00 (A leads B); +-2 steps (both pins
# changed at once) are lost edges and count 0.
_QDEC = (0, 1, -1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 0, -1, 1, 0)


def _quadrature_program():
    # x4 decoder after pico-examples pio/quadrature_encoder (jump table on
    # old<<2|new, count kept in Y, pushed non-blocking). The jump table must sit at
    # PIO address 0, so the program is padded to all 32 instructions: it then can
    # only be loaded at offset 0 (it owns one PIO block; its 4 SMs may share it).
    @rp2.asm_pio(in_shiftdir=rp2.PIO.SHIFT_LEFT, out_shiftdir=rp2.PIO.SHIFT_RIGHT)
    def quad():  # noqa: F821 (names below are PIO assembler built-ins)
        jmp("update")       # 00 -> 00
        jmp("increment")    # 00 -> 01
        jmp("decrement")    # 00 -> 10
        jmp("update")       # 00 -> 11
        jmp("decrement")    # 01 -> 00
        jmp("update")       # 01 -> 01
        jmp("update")       # 01 -> 10
        jmp("increment")    # 01 -> 11
        jmp("increment")    # 10 -> 00
        jmp("update")       # 10 -> 01
        jmp("update")       # 10 -> 10
        jmp("decrement")    # 10 -> 11
        jmp("update")       # 11 -> 00
        jmp("decrement")    # 11 -> 01
        jmp("increment")    # 11 -> 10
        wrap_target()
        label("update")     # 11 -> 11 falls through to here (address 15)
        mov(isr, y)
        push(noblock)
        out(isr, 2)         # ISR = previous pins (low 2 bits of OSR)
        in_(pins, 2)        # ISR = old << 2 | new
        mov(osr, isr)
        mov(pc, isr)        # jump into the table
        label("increment")
        mov(y, invert(y))   # y + 1 = ~(~y - 1)
        jmp(y_dec, "inc1")
        label("inc1")
        mov(y, invert(y))
        jmp("update")
        label("decrement")
        jmp(y_dec, "update")
        wrap()
        nop()
        nop()
        nop()
        nop()
        nop()
        nop()
    return quad


class PioEncoder:
    """Quadrature counter in a PIO state machine: no CPU per edge (tens of MHz)."""

    def __init__(self, sm_id, pin_a, pin_b):
        self._pa = Pin(pin_a, Pin.IN, Pin.PULL_UP)
        self._pb = Pin(pin_b, Pin.IN, Pin.PULL_UP)
        self.sm = rp2.StateMachine(sm_id, _quadrature_program(), in_base=self._pa)
        self.sm.exec("set(y, 0)")
        self.sm.active(1)
        self._last = 0

    def count(self):
        # The FIFO holds the oldest pushes (push noblock drops when full): drain it
        # (<= 8 words), then take the next, fresh value. Bounded.
        sm = self.sm
        k = 0
        while sm.rx_fifo() and k < 8:
            sm.get()
            k += 1
        v = sm.get() & _U32
        self._last = v - 0x100000000 if v & 0x80000000 else v
        return self._last


class IrqEncoder:
    """x4 decoding in hard pin IRQs on both edges of A and B. Costs ~10-20 us of CPU
    per edge: fine up to a few 10 k edges/s (an output-shaft or low-CPR encoder)."""

    def __init__(self, pin_a, pin_b):
        self._pa = Pin(pin_a, Pin.IN, Pin.PULL_UP)
        self._pb = Pin(pin_b, Pin.IN, Pin.PULL_UP)
        self._state = self._pa.value() | (self._pb.value() << 1)
        self._n = 0
        self.errors = 0
        cb = self._edge          # one bound method, allocated once (no alloc in the IRQ)
        trig = Pin.IRQ_RISING | Pin.IRQ_FALLING
        self._pa.irq(cb, trig, hard=True)
        self._pb.irq(cb, trig, hard=True)

    def _edge(self, pin):
        s = self._pa.value() | (self._pb.value() << 1)
        i = (self._state << 2) | s
        self._n += _QDEC[i]
        if i == 3 or i == 6 or i == 9 or i == 12:
            self.errors += 1     # both pins changed: an edge was missed
        self._state = s

    def count(self):
        return self._n


class UartPort:
    """Byte-stream port for ChainNode on machine.UART: write(buf[, n]) -> n,
    readinto(buf) -> n | None without blocking (checks any() first)."""

    def __init__(self, uart):
        self.uart = uart
        self.short_writes = 0

    def readinto(self, buf):
        n = self.uart.any()
        if not n:
            return None
        if n > len(buf):
            n = len(buf)
        return self.uart.readinto(buf, n)

    def write(self, buf, n=None):
        want = len(buf) if n is None else n
        n = self.uart.write(buf, want)   # stream write(buf, max_len): no slice allocated
        if n is None:
            n = 0
        if n < want:
            self.short_writes += 1   # TX ring full: the frame is cut (receiver drops it)
        return n


class Rp2JointHAL(JointCore):
    """Joint HAL on an RP2040/RP2350: encoder, H-bridge, spring brake, current sense."""

    def __init__(self, cfg):
        JointCore.__init__(self, cfg)
        pins = cfg["pins"]
        enc = cfg.get("encoder", {})
        br = cfg.get("bridge", {})
        self.mode = br.get("mode", "pwm_dir")
        freq = int(br.get("freq", 20000))
        self._release = int(br.get("brake_release_level", 1))
        self._brake = Pin(pins["brake"], Pin.OUT, value=1 - self._release)  # engaged
        if enc.get("mode", "pio") == "irq":
            self.encoder = IrqEncoder(pins["enc_a"], pins["enc_b"])
        else:
            self.encoder = PioEncoder(int(enc.get("sm", 0)), pins["enc_a"], pins["enc_b"])
        if self.mode == "in1_in2":
            self._pwm = PWM(Pin(pins["in1"]))
            self._pwm2 = PWM(Pin(pins["in2"]))
            self._pwm2.freq(freq)
            self._pwm2.duty_u16(0)
            self._dir = None
        else:
            self._pwm = PWM(Pin(pins["pwm"]))
            self._pwm2 = None
            self._dir = Pin(pins["dir"], Pin.OUT, value=0)
        self._pwm.freq(freq)
        self._pwm.duty_u16(0)
        self._en = None
        if "enable" in pins:
            self._en = Pin(pins["enable"], Pin.OUT, value=int(br.get("enable_level", 1)))
        self._fault = Pin(pins["fault"], Pin.IN, Pin.PULL_UP) if "fault" in pins else None
        self.driver_fault = False
        self._adc = None
        if "isense" in pins:
            isc = cfg.get("isense", {})
            self._adc = machine.ADC(Pin(pins["isense"]))
            self._a_per_count = float(isc.get("vref", 3.3)) / _U16 / float(isc.get("v_per_a", 0.45))
            self._i_off = float(isc.get("offset_v", 0.0)) / float(isc.get("v_per_a", 0.45))
        self._wdt_ms = int(cfg.get("wdt_ms", 0))
        self._wdt = None
        if "range" in cfg:
            ic = cfg.get("i2c", {})
            i2c = machine.I2C(int(ic.get("id", 1)), sda=Pin(ic.get("sda", 14)),
                              scl=Pin(ic.get("scl", 15)), freq=int(ic.get("freq", 400000)))
            self.setup_ranges(cfg["range"], i2c, lambda p: Pin(p, Pin.OUT, value=0))

    def read(self):
        if self._wdt_ms:
            if self._wdt is None:
                self._wdt = machine.WDT(timeout=self._wdt_ms)
            self._wdt.feed()   # fed by every joint read (SYNC and idle): only firmware that stops reading for wdt_ms resets the board -> brake pin falls -> engaged
        if self._fault is not None:
            self.driver_fault = not self._fault.value()
        return JointCore.read(self)

    def _counts(self):
        return self.encoder.count()

    def _current(self):
        if self._adc is None:
            return 0.0
        i = self._adc.read_u16() * self._a_per_count - self._i_off
        return i if self.duty >= 0.0 else -i   # IPROPI is unsigned: sign from the drive

    def _drive(self, duty):
        d = int(abs(duty) * _U16 + 0.5)
        if d > _U16:
            d = _U16
        if self._dir is not None:            # PH/EN: direction pin + one PWM
            self._dir.value(1 if duty > 0.0 else 0)
            self._pwm.duty_u16(d)
        elif duty >= 0.0:                    # IN1/IN2: PWM on one side, other low
            self._pwm2.duty_u16(0)
            self._pwm.duty_u16(d)
        else:
            self._pwm.duty_u16(0)
            self._pwm2.duty_u16(d)

    def _brake_out(self, engaged):
        self._brake.value(1 - self._release if engaged else self._release)


def _uart(c, baud, rxbuf, txbuf):
    u = UART(int(c["id"]), baudrate=baud, tx=Pin(c["tx"]), rx=Pin(c["rx"]),
             rxbuf=rxbuf, txbuf=txbuf, timeout=0, timeout_char=0)
    return UartPort(u)


def make(cfg):
    """-> (hal, ports) for firmware/main.py: ChainNode(agent, ports["up"], ports["down"], ring=...)."""
    uc = cfg.get("uart", {})
    baud = int(uc.get("baud", 3000000))
    rxbuf = int(uc.get("rxbuf", 1024))
    txbuf = int(uc.get("txbuf", 1024))
    up = _uart(uc.get("up", {"id": 0, "tx": 0, "rx": 1}), baud, rxbuf, txbuf)
    dc = uc.get("down", {"id": 1, "tx": 4, "rx": 5})
    ring = bool(cfg.get("bus", {}).get("ring"))   # the tip's down UART is the return wire
    last = cfg.get("link") is not None and cfg.get("link") == cfg.get("n_links")
    down = None if dc is None or (last and not ring) else _uart(dc, baud, rxbuf, txbuf)
    hal = Rp2JointHAL(cfg)
    return hal, {"node": "chain", "up": up, "down": down, "ring": ring}


def make_board(name, cfg):
    """firmware/boards contract (firmware.main.run boots through this)."""
    from firmware.boards.mcu import McuBoard
    return McuBoard(name, make, cfg)
