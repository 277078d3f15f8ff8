# STM32 joint node on CAN (board name "stm32-can"): Pyboard v1.1 / STM32F4 (bxCAN,
# classic CAN) or STM32G4/H7 (FDCAN, CAN-FD) with a 3.3 V transceiver (TJA1051T/3,
# SN65HVD230, TCAN332; FD: TCAN1042/TJA1462 for 5 Mbit/s). Imported only on that board
# (or under tests/fakes): uses pyb (CAN, Timer, Pin, ADC) and machine (I2C, WDT).
# Hardware: hardware/stm32-can-node.md. Bus: firmware/node.py BusNode; ids, FD padding
# and classic-CAN fragmentation: bus_protocol/can_ids.py (SPEC.md 6).
#
#   hal, ports = make(cfg)          ports = {"node": "bus", "port": CanPort}
#   node = BusNode(agent, ports["port"])
#
# Transmit order. The agent sends its ASSERT frames before its KINEMATIC frame and relies
# on them leaving in that order (firmware/agent.py on_kinematic). bxCAN has three TX
# mailboxes served by CAN id priority, and KINEMATIC (priority 1) has a lower id than
# ASSERT (priority 2), so loading several mailboxes at once would reorder them (and
# fragments of different frames would interleave). CanPort therefore keeps its own FIFO
# of fragments and hands the controller ONE frame at a time: the next only when
# info()[5] (pending TX) is 0 -- or, with can.tx_wait_ms > 0, by a blocking send.
#
# Config keys (beside the LinkAgent keys; link is needed for the receive filter):
#   board        "stm32-can"
#   can          {bus (1), bitrate (1000000), fd (false), data_bitrate (5000000, FD),
#                 brs (true, FD), sample_point (75), tx_slots (48 fragments / FD frames),
#                 tx_wait_ms (0 = queued, one frame in flight), filter (true: accept
#                 only dst == link or broadcast), rx_burst (8), auto_restart (true)}
#   pins         {enc_a, enc_b (a timer's CH1/CH2), pwm, dir | in1, in2 (timer channels),
#                 brake, enable (optional), fault (optional, active low), isense (ADC pin, optional)}
#                 pin names as pyb.Pin accepts ("X1", "Y1", "PA0", ...)
#   encoder      {timer (2), af_ch (1,2)}: timer in ENC_AB mode = hardware x4 decoder,
#                 16-bit counter unwrapped in software (read at least every 32767 counts)
#   bridge       {mode "pwm_dir" | "in1_in2", timer (8; Pyboard TIM3 is reserved), ch (1) / ch2 (2), freq (20000),
#                 brake_release_level (1), enable_level (1)}
#   isense       {v_per_a, offset_v, vref (3.3), bits (12)}
#   i2c          {id (1), freq (400000)}  for the range sensors (Pyboard I2C1 = X9/X10)
#   range, wdt_ms, joint, motor, brake_cuts_motor: as in rp2_uart.py / joint.py
import machine
import pyb
from micropython import const

from bus_protocol import can_ids
from firmware.hal.joint import JointCore, unwrap

_FRAG = const(7)            # can_ids.FRAG_DATA
_INFO_TX_PENDING = const(5)  # pyb.CAN.info(): TEC, REC, warn, passive, bus-off, TX pending, RX0, RX1


class CanPort:
    """Frame port for BusNode on pyb.CAN: send(frame) -> bool, recv() -> frame | None.
    Classic CAN: frames are fragmented (SPEC 6, same bytes as can_ids.fragment, written
    in place into preallocated slots) and rebuilt with can_ids.Reassembler. CAN-FD: one
    frame per CAN frame, padded with can_ids.fd_payload rules, cut with strip_padding."""

    def __init__(self, can, fd=False, brs=True, slots=48, tx_wait_ms=0, rx_burst=8, fifo=0):
        self.can = can
        self.fd = fd
        self.brs = brs
        self.fifo = fifo
        self.tx_wait_ms = tx_wait_ms
        self.rx_burst = rx_burst
        w = 64 if fd else 8
        self._buf = [bytearray(w) for _ in range(slots)]
        self._mv = [memoryview(b) for b in self._buf]
        self._len = bytearray(slots)
        self._id = [0] * slots
        self._slots = slots
        self._head = 0               # next free slot
        self._tail = 0               # next slot to transmit
        self._n = 0                  # slots in use
        self._info = [0] * 8
        self._rx = bytearray(w)
        self._rxl = [0, False, False, 0, memoryview(self._rx)]   # pyb.CAN.recv(list) form
        self.reasm = None if fd else can_ids.Reassembler()
        self.tx_frames = 0
        self.tx_dropped = 0          # whole frames refused: queue full
        self.tx_errors = 0           # controller refused (bus off, timeout)
        self.rx_frames = 0

    # ---- transmit: software FIFO, one frame in the controller at a time ---------------
    def send(self, frame):
        n = len(frame)
        cid = can_ids.can_id(frame[0], frame[1], frame[2])
        need = 1 if self.fd else (n + _FRAG - 1) // _FRAG
        if n == 0 or n > 64 or self._n + need > self._slots:
            self.tx_dropped += 1     # never put half a frame on the bus
            self.pump()
            return False
        if self.fd:
            k = can_ids.fd_length(n)
            b = self._buf[self._head]
            b[0:n] = frame
            for j in range(n, k):
                b[j] = 0
            self._push(cid, k)
        else:
            last = need - 1
            for i in range(need):
                b = self._buf[self._head]
                a = i * _FRAG
                e = a + _FRAG if a + _FRAG < n else n
                b[0] = (i << 4) | last
                b[1:1 + e - a] = frame[a:e]
                self._push(cid, 1 + e - a)
        self.tx_frames += 1
        self.pump()
        return True

    def _push(self, cid, k):
        h = self._head
        self._id[h] = cid
        self._len[h] = k
        self._head = (h + 1) % self._slots
        self._n += 1

    def pending(self):
        return self._n

    def pump(self):
        """Hand the controller the next queued frame if it holds none. Bounded: one
        frame, or with tx_wait_ms > 0 every queued frame with a blocking send each."""
        can = self.can
        while self._n:
            if not self.tx_wait_ms:
                can.info(self._info)
                if self._info[_INFO_TX_PENDING]:
                    return
            t = self._tail
            k = self._len[t]
            data = self._mv[t] if k == len(self._buf[t]) else self._mv[t][:k]
            try:
                if self.fd:
                    can.send(data, self._id[t], timeout=self.tx_wait_ms, extframe=True,
                             fdf=True, brs=self.brs)
                else:
                    can.send(data, self._id[t], timeout=self.tx_wait_ms, extframe=True)
            except OSError:
                self.tx_errors += 1   # mailbox busy or bus off: retry on the next pump
                return
            self._tail = (t + 1) % self._slots
            self._n -= 1
            if not self.tx_wait_ms:
                return

    # ---- receive ------------------------------------------------------------------------
    def recv(self):
        """Next complete logical frame or None; also moves the TX queue on. Bounded:
        at most rx_burst CAN frames are taken from the controller per call."""
        self.pump()
        can = self.can
        k = 0
        while k < self.rx_burst and can.any(self.fifo):
            k += 1
            can.recv(self.fifo, self._rxl, timeout=0)
            data = self._rxl[4]
            if self.fd:
                self.rx_frames += 1
                return bytes(can_ids.strip_padding(data))
            f = self.reasm.push(self._rxl[0], data)
            if f is not None:
                self.rx_frames += 1
                return f
        return None


def accept_filter(can, link):
    """Hardware filter: extended ids with dst == link or dst == BROADCAST, into FIFO 0
    (dst is the low byte of the id, SPEC 6). bxCAN: MASK32 banks; FDCAN: MASK."""
    mode = _mask_mode()
    can.setfilter(0, mode, 0, (link & 0xFF, 0xFF), extframe=True)
    can.setfilter(1, mode, 0, (0xFF, 0xFF), extframe=True)


def _mask_mode():
    mode = getattr(pyb.CAN, "MASK32", None)
    return pyb.CAN.MASK if mode is None else mode


class Stm32JointHAL(JointCore):
    """Joint HAL on an STM32: timer encoder (ENC_AB), timer PWM H-bridge, spring brake."""

    def __init__(self, cfg):
        JointCore.__init__(self, cfg)
        pins = cfg["pins"]
        enc = cfg.get("encoder", {})
        br = cfg.get("bridge", {})
        self._release = int(br.get("brake_release_level", 1))
        self._brake = pyb.Pin(pins["brake"], pyb.Pin.OUT_PP)
        self._brake.value(1 - self._release)         # engaged until the first torque
        # encoder: a general-purpose timer in encoder mode counts x4 in hardware
        self._etim = pyb.Timer(int(enc.get("timer", 2)), prescaler=0, period=0xFFFF)
        self._etim.channel(1, pyb.Timer.ENC_AB, pin=pyb.Pin(pins["enc_a"]))
        self._etim.channel(2, pyb.Timer.ENC_AB, pin=pyb.Pin(pins["enc_b"]))
        self._raw = self._etim.counter()
        self._count = 0
        # motor: timer PWM channels
        self.mode = br.get("mode", "pwm_dir")
        self._ptim = pyb.Timer(int(br.get("timer", 8)), freq=int(br.get("freq", 20000)))
        self._period = self._ptim.period() + 1
        self._ch = self._ptim.channel(int(br.get("ch", 1)), pyb.Timer.PWM,
                                      pin=pyb.Pin(pins["in1" if self.mode == "in1_in2" else "pwm"]),
                                      pulse_width=0)
        self._ch2 = None
        self._dir = None
        if self.mode == "in1_in2":
            self._ch2 = self._ptim.channel(int(br.get("ch2", 2)), pyb.Timer.PWM,
                                           pin=pyb.Pin(pins["in2"]), pulse_width=0)
        else:
            self._dir = pyb.Pin(pins["dir"], pyb.Pin.OUT_PP)
            self._dir.value(0)
        if "enable" in pins:
            self._en = pyb.Pin(pins["enable"], pyb.Pin.OUT_PP)
            self._en.value(int(br.get("enable_level", 1)))
        self._fault = pyb.Pin(pins["fault"], pyb.Pin.IN, pyb.Pin.PULL_UP) if "fault" in pins else None
        self.driver_fault = False
        self._adc = None
        if "isense" in pins:
            isc = cfg.get("isense", {})
            full = (1 << int(isc.get("bits", 12))) - 1
            v_per_a = float(isc.get("v_per_a", 0.45))
            self._adc = pyb.ADC(pyb.Pin(pins["isense"]))
            self._a_per_count = float(isc.get("vref", 3.3)) / full / v_per_a
            self._i_off = float(isc.get("offset_v", 0.0)) / v_per_a
        self._wdt_ms = int(cfg.get("wdt_ms", 0))
        self._wdt = None
        if "range" in cfg:
            ic = cfg.get("i2c", {})
            i2c = machine.I2C(int(ic.get("id", 1)), freq=int(ic.get("freq", 400000)))
            self.setup_ranges(cfg["range"], i2c, lambda p: _out_pin(p))

    def read(self):
        if self._wdt_ms:
            if self._wdt is None:
                self._wdt = machine.WDT(timeout=self._wdt_ms)
            self._wdt.feed()
        if self._fault is not None:
            self.driver_fault = not self._fault.value()
        return JointCore.read(self)

    def _counts(self):
        raw = self._etim.counter()
        self._count += unwrap(self._raw, raw, 16)
        self._raw = raw
        return self._count

    def _current(self):
        if self._adc is None:
            return 0.0
        i = self._adc.read() * self._a_per_count - self._i_off
        return i if self.duty >= 0.0 else -i

    def _drive(self, duty):
        w = int(abs(duty) * self._period + 0.5)
        if w > self._period:
            w = self._period
        if self._dir is not None:
            self._dir.value(1 if duty > 0.0 else 0)
            self._ch.pulse_width(w)
        elif duty >= 0.0:
            self._ch2.pulse_width(0)
            self._ch.pulse_width(w)
        else:
            self._ch.pulse_width(0)
            self._ch2.pulse_width(w)

    def _brake_out(self, engaged):
        self._brake.value(1 - self._release if engaged else self._release)


def _out_pin(name):
    p = pyb.Pin(name, pyb.Pin.OUT_PP)
    p.value(0)
    return p


def make(cfg):
    """-> (hal, ports) for firmware/main.py: BusNode(agent, ports["port"])."""
    cc = cfg.get("can", {})
    fd = bool(cc.get("fd", False))
    kw = {"baudrate": int(cc.get("bitrate", 1000000)),
          "sample_point": int(cc.get("sample_point", 75)),
          "auto_restart": bool(cc.get("auto_restart", True))}
    if fd:
        kw["brs_baudrate"] = int(cc.get("data_bitrate", 5000000))
    can = pyb.CAN(int(cc.get("bus", 1)), pyb.CAN.NORMAL, **kw)
    if cc.get("filter", True) and "link" in cfg:
        accept_filter(can, int(cfg["link"]))
    else:
        can.setfilter(0, _mask_mode(), 0, (0, 0), extframe=True)     # accept everything
    port = CanPort(can, fd=fd, brs=bool(cc.get("brs", True)), slots=int(cc.get("tx_slots", 48)),
                   tx_wait_ms=int(cc.get("tx_wait_ms", 0)), rx_burst=int(cc.get("rx_burst", 8)))
    hal = Stm32JointHAL(cfg)
    return hal, {"node": "bus", "port": port}


def make_board(name, cfg):
    """firmware/boards contract (firmware.main.run boots through this)."""
    from firmware.boards.mcu import McuBoard
    return McuBoard(name, make, cfg)
