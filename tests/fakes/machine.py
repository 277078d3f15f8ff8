# Fake `machine` for testing the board HALs (firmware/hal/rp2_uart.py, stm32_can.py)
# without boards, under CPython and the MicroPython unix port. Only the calls the HALs
# use, with machine.* semantics; test helpers start with an underscore or are named
# wire()/set_input().


class Pin:
    IN = 0
    OUT = 1
    OPEN_DRAIN = 2
    PULL_UP = 1
    PULL_DOWN = 2
    IRQ_FALLING = 4
    IRQ_RISING = 8

    def __init__(self, id, mode=-1, pull=-1, value=None):
        self.id = id
        self.mode = mode
        self.pull = pull
        self._v = 1 if pull == Pin.PULL_UP else 0
        if value is not None:
            self._v = 1 if value else 0
        self._handler = None
        self._trigger = 0
        self.hard = False

    def value(self, v=None):
        if v is None:
            return self._v
        self._v = 1 if v else 0

    def on(self):
        self._v = 1

    def off(self):
        self._v = 0

    def irq(self, handler=None, trigger=12, hard=False):
        self._handler = handler
        self._trigger = trigger
        self.hard = hard

    def _set(self, v):
        """Test helper: drive an input; fires the IRQ handler on a matching edge."""
        v = 1 if v else 0
        old = self._v
        self._v = v
        if self._handler is not None and v != old:
            if (v and self._trigger & Pin.IRQ_RISING) or (not v and self._trigger & Pin.IRQ_FALLING):
                self._handler(self)


class PWM:
    def __init__(self, pin, freq=None, duty_u16=None):
        self.pin = pin
        self._freq = freq or 0
        self._duty = duty_u16 or 0

    def freq(self, f=None):
        if f is None:
            return self._freq
        self._freq = f

    def duty_u16(self, d=None):
        if d is None:
            return self._duty
        if not 0 <= d <= 65535:
            raise ValueError("duty_u16 out of range")
        self._duty = d


class UART:
    """Byte pipe: write() appends to the peer's receive buffer (see wire())."""

    def __init__(self, id, baudrate=115200, tx=None, rx=None, rxbuf=256, txbuf=256, timeout=0,
                 timeout_char=0):
        self.id = id
        self.baudrate = baudrate
        self.timeout = timeout
        self.rxbuf = rxbuf
        self._rx = bytearray()
        self._peer = None
        self.tx_bytes = 0
        self.tx_limit = None       # test helper: accept at most this many bytes per write

    def any(self):
        return len(self._rx)

    def readinto(self, buf, nbytes=None):
        n = len(buf) if nbytes is None else nbytes
        n = min(n, len(self._rx))
        if n == 0:
            return None
        buf[0:n] = self._rx[0:n]
        self._rx = self._rx[n:]
        return n

    def read(self, n=-1):
        if not self._rx:
            return None
        if n < 0:
            n = len(self._rx)
        out = bytes(self._rx[:n])
        self._rx = self._rx[n:]
        return out

    def write(self, buf, max_len=None):   # a MicroPython stream's write(buf[, max_len])
        n = len(buf) if max_len is None else min(max_len, len(buf))
        if self.tx_limit is not None and n > self.tx_limit:
            n = self.tx_limit
        if self._peer is not None:
            self._peer._rx += bytes(buf[:n])
        self.tx_bytes += n
        return n


def wire(a, b):
    """Test helper: cross-connect two UARTs (TX of one to RX of the other)."""
    a._peer = b
    b._peer = a


class ADC:
    def __init__(self, pin):
        self.pin = pin
        self._u16 = 0

    def read_u16(self):
        return self._u16


class I2C:
    def __init__(self, id, sda=None, scl=None, freq=400000):
        self.id = id
        self.freq = freq
        self._dist = {}          # test helper: addr -> distance in mm (read by fake_tof)


class WDT:
    def __init__(self, id=0, timeout=5000):
        self.timeout = timeout
        self.feeds = 0

    def feed(self):
        self.feeds += 1
