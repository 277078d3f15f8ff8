# Fake `rp2` for testing firmware/hal/rp2_uart.py: asm_pio really assembles the
# decorated program (two passes, like rp2.asm_pio, for the instructions the HAL uses)
# and StateMachine interprets it, so the PIO quadrature decoder itself is tested.
# Runs under CPython and the MicroPython unix port.

_M32 = 0xFFFFFFFF


class PIO:
    SHIFT_LEFT = 0
    SHIFT_RIGHT = 1
    IN_LOW = 0
    IN_HIGH = 1


class _Prog:
    def __init__(self, kw):
        self.kw = kw
        self.ins = []
        self.labels = {}
        self.wrap_target = 0
        self.wrap = None


def asm_pio(**kw):
    def dec(f):
        prog = _Prog(kw)
        for pass_ in (0, 1):
            prog.ins = []
            ns = _namespace(prog, pass_)
            g = f.__globals__
            saved = {}
            for k in ns:
                if k in g:
                    saved[k] = g[k]
                g[k] = ns[k]
            try:
                f()
            finally:
                for k in ns:
                    del g[k]
                for k in saved:
                    g[k] = saved[k]
        if prog.wrap is None:
            prog.wrap = len(prog.ins) - 1
        if len(prog.ins) > 32:
            raise ValueError("PIO program > 32 instructions")
        return prog
    return dec


def _namespace(prog, pass_):
    def emit(*t):
        prog.ins.append(t)

    def label(name):
        if pass_ == 0:
            if name in prog.labels:
                raise ValueError("duplicate label " + name)
            prog.labels[name] = len(prog.ins)

    def wrap_target():
        prog.wrap_target = len(prog.ins)

    def wrap():
        prog.wrap = len(prog.ins) - 1

    def jmp(cond, target=None):
        if target is None:
            cond, target = None, cond
        emit("jmp", cond, target)

    def mov(dst, src):
        emit("mov", dst, src)

    def push(mode=1):
        emit("push", mode)

    def out(dst, n):
        emit("out", dst, n)

    def in_(src, n):
        emit("in", src, n)

    def set(dst, v):  # noqa: A001 - PIO mnemonic
        emit("set", dst, v)

    def nop():
        emit("nop")

    def invert(r):
        return ("inv", r)

    return {"label": label, "wrap_target": wrap_target, "wrap": wrap, "jmp": jmp, "mov": mov,
            "push": push, "out": out, "in_": in_, "set": set, "nop": nop, "invert": invert,
            "x": "x", "y": "y", "isr": "isr", "osr": "osr", "pins": "pins", "pc": "pc",
            "null": "null", "noblock": 0, "block": 1, "x_dec": "x_dec", "y_dec": "y_dec",
            "not_x": "not_x", "not_y": "not_y", "x_not_y": "x_not_y"}


class StateMachine:
    """Interprets a _Prog. in_base must be a fake machine.Pin; pins in_base+1.. are
    read through the `_pins` list given with _attach_pins (test helper)."""

    def __init__(self, id, prog, freq=125000000, in_base=None, **kw):
        self.id = id
        self.prog = prog
        self.in_base = in_base
        self._pins = [in_base]
        self.r = {"x": 0, "y": 0, "isr": 0, "osr": 0}
        self.pc = 0
        self.fifo = []
        self.running = False
        self.cycles = 0

    def _attach_pins(self, pins):
        self._pins = list(pins)

    def exec(self, s):
        # only what the HAL uses: "set(y, 0)" / "set(x, 0)"
        s = s.replace(" ", "")
        if s.startswith("set(") and s.endswith(")"):
            reg, v = s[4:-1].split(",")
            self.r[reg] = int(v) & _M32
        else:
            raise ValueError("fake rp2: unsupported exec " + s)

    def active(self, v=None):
        if v is None:
            return self.running
        self.running = bool(v)

    def rx_fifo(self):
        return len(self.fifo)

    def get(self):
        n = 0
        while not self.fifo:
            self.run(1)
            n += 1
            if n > 1000:
                raise RuntimeError("fake rp2: state machine never pushes")
        return self.fifo.pop(0)

    def _src(self, s):
        if isinstance(s, tuple):
            return (~self._src(s[1])) & _M32
        if s == "pins":
            return self._read_pins(32)
        if s == "null":
            return 0
        return self.r[s]

    def _read_pins(self, n):
        v = 0
        for i in range(min(n, len(self._pins))):
            v |= (self._pins[i].value() & 1) << i
        return v

    def run(self, cycles):
        """Execute `cycles` instructions."""
        ins = self.prog.ins
        labels = self.prog.labels
        left = self.prog.kw.get("in_shiftdir", PIO.SHIFT_RIGHT) == PIO.SHIFT_LEFT
        oright = self.prog.kw.get("out_shiftdir", PIO.SHIFT_RIGHT) == PIO.SHIFT_RIGHT
        r = self.r
        for _ in range(cycles):
            self.cycles += 1
            t = ins[self.pc]
            op = t[0]
            nxt = self.wrap_next(self.pc)
            if op == "jmp":
                cond, target = t[1], t[2]
                take = True
                if cond == "y_dec":
                    take = r["y"] != 0
                    r["y"] = (r["y"] - 1) & _M32
                elif cond == "x_dec":
                    take = r["x"] != 0
                    r["x"] = (r["x"] - 1) & _M32
                elif cond == "not_x":
                    take = r["x"] == 0
                elif cond == "not_y":
                    take = r["y"] == 0
                elif cond == "x_not_y":
                    take = r["x"] != r["y"]
                elif cond is not None:
                    raise ValueError("fake rp2: jmp condition " + str(cond))
                if take:
                    nxt = labels[target]
            elif op == "mov":
                v = self._src(t[2])
                if t[1] == "pc":
                    nxt = v & 31
                else:
                    r[t[1]] = v
            elif op == "push":
                if len(self.fifo) < 4:
                    self.fifo.append(r["isr"])
                r["isr"] = 0
            elif op == "out":
                n = t[2]
                mask = (1 << n) - 1
                if oright:
                    v = r["osr"] & mask
                    r["osr"] = r["osr"] >> n
                else:
                    v = (r["osr"] >> (32 - n)) & mask
                    r["osr"] = (r["osr"] << n) & _M32
                if t[1] == "pc":
                    nxt = v
                else:
                    r[t[1]] = v
            elif op == "in":
                n = t[2]
                v = self._src(t[1]) & ((1 << n) - 1)
                if left:
                    r["isr"] = ((r["isr"] << n) | v) & _M32
                else:
                    r["isr"] = (r["isr"] >> n) | (v << (32 - n))
            elif op == "set":
                r[t[1]] = t[2]
            self.pc = nxt

    def wrap_next(self, pc):
        return self.prog.wrap_target if pc == self.prog.wrap else pc + 1
