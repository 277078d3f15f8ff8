# Fake `pyb` for testing firmware/hal/stm32_can.py: Pin, Timer (ENC_AB counter, PWM
# channels), ADC and a CAN controller with bxCAN's three TX mailboxes on a shared
# simulated bus. Arbitration is by CAN id (lowest wins), across nodes AND across one
# node's mailboxes -- which is what reorders frames if a driver loads several mailboxes.
# Runs under CPython and the MicroPython unix port.


class Pin:
    IN = 0
    OUT_PP = 1
    OUT = 1
    PULL_UP = 1
    PULL_NONE = 0

    def __init__(self, name, mode=-1, pull=-1):
        self.name = name
        self.mode = mode
        self._v = 1 if pull == Pin.PULL_UP else 0

    def value(self, v=None):
        if v is None:
            return self._v
        self._v = 1 if v else 0


class _Channel:
    def __init__(self, timer, n, mode, pin, pulse_width=0):
        self.timer = timer
        self.n = n
        self.mode = mode
        self.pin = pin
        self._pw = pulse_width

    def pulse_width(self, w=None):
        if w is None:
            return self._pw
        if w < 0:
            raise ValueError("negative pulse width")
        self._pw = w


class Timer:
    PWM = 0
    ENC_AB = 1

    def __init__(self, n, freq=None, prescaler=None, period=None):
        self.n = n
        self._period = period if period is not None else (84000000 // freq - 1 if freq else 0xFFFF)
        self._cnt = 0
        self.channels = {}

    def period(self):
        return self._period

    def counter(self, v=None):
        if v is None:
            return self._cnt
        self._cnt = v & self._period

    def channel(self, n, mode, pin=None, pulse_width=0):
        ch = _Channel(self, n, mode, pin, pulse_width)
        self.channels[n] = ch
        return ch

    def _move(self, counts):
        """Test helper: the encoder turned by `counts` (wraps like the hardware)."""
        self._cnt = (self._cnt + counts) & self._period


class ADC:
    def __init__(self, pin):
        self.pin = pin
        self._v = 0

    def read(self):
        return self._v


class Bus:
    """A CAN bus segment. step() transmits one frame: the lowest id among every
    pending mailbox of every node wins; all other nodes whose filter accepts it
    receive it (RX FIFO 0, depth rx_depth; overflow is counted and lost)."""

    def __init__(self):
        self.nodes = []
        self.log = []            # (id, data bytes, fdf) in wire order

    def step(self):
        best = None
        for node in self.nodes:
            for mb in node._mb:
                if best is None or mb[0] < best[1][0]:
                    best = (node, mb)
        if best is None:
            return False
        node, mb = best
        node._mb.remove(mb)
        cid, data, fdf = mb
        self.log.append((cid, data, fdf))
        for other in self.nodes:
            if other is not node and other._accepts(cid):
                if len(other._rx) >= other.rx_depth:
                    other.overruns += 1
                else:
                    other._rx.append((cid, data))
        return True

    def run(self, limit=100000):
        n = 0
        while n < limit and self.step():
            n += 1
        return n


bus = Bus()


def _reset():
    global bus
    bus = Bus()
    return bus


class CAN:
    NORMAL = 0
    LOOPBACK = 1
    MASK16 = 0
    LIST16 = 1
    MASK32 = 2
    LIST32 = 3

    def __init__(self, n, mode=0, baudrate=500000, sample_point=75, auto_restart=False,
                 brs_baudrate=0, **kw):
        self.n = n
        self.mode = mode
        self.baudrate = baudrate
        self.brs_baudrate = brs_baudrate
        self.auto_restart = auto_restart
        self._mb = []            # up to 3 pending TX mailboxes
        self._rx = []
        self.rx_depth = 64
        self.overruns = 0
        self.filters = {}
        self.sends = 0
        self._bus = bus
        bus.nodes.append(self)

    def setfilter(self, bank, mode, fifo, params, rtr=None, extframe=False):
        if mode != CAN.MASK32 or not extframe:
            raise ValueError("fake pyb: only extended MASK32 filters")
        self.filters[bank] = (params[0], params[1])

    def _accepts(self, cid):
        if not self.filters:
            return False         # bxCAN: no filter bank -> nothing received
        for bank in self.filters:
            i, m = self.filters[bank]
            if cid & m == i & m:
                return True
        return False

    def info(self, lst=None):
        if lst is None:
            lst = [0] * 8
        lst[5] = len(self._mb)
        lst[6] = len(self._rx)
        return lst

    def send(self, data, id, timeout=0, rtr=False, extframe=False, fdf=False, brs=False):
        if not extframe:
            raise ValueError("fake pyb: linkteam uses extended ids")
        n = len(data)
        if n > (64 if fdf else 8):
            raise ValueError("data too long")
        if fdf and n not in (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64):
            raise ValueError("invalid FD length")
        if len(self._mb) >= 3:
            raise OSError(16)    # EBUSY: all mailboxes in use
        self._mb.append((id, bytes(data), fdf))
        self.sends += 1
        if timeout:
            while (id, bytes(data), fdf) in self._mb:   # blocking: the bus runs
                self._bus.step()

    def any(self, fifo):
        return len(self._rx)

    def recv(self, fifo, lst=None, timeout=5000):
        if not self._rx:
            raise OSError(110)   # ETIMEDOUT
        cid, data = self._rx.pop(0)
        if lst is None:
            return (cid, True, False, 0, data)
        mv = lst[4]
        lst[0] = cid
        lst[1] = True
        lst[2] = False
        lst[3] = 0
        lst[4] = _resize(lst, mv, data)
        return lst


_bufs = {}


def _resize(lst, mv, data):
    # keep the underlying bytearray per list so repeated calls reuse it (like pyb)
    key = id(lst)
    b = _bufs.get(key)
    if b is None:
        b = bytearray(len(mv))
        _bufs[key] = b
    n = len(data)
    b[0:n] = data
    return memoryview(b)[:n]
