"""An interpreter of the Thumb-1 subset firmware/accel/thumb.py is written in, read from
its source (MicroPython's inline-assembler syntax: `add(r0, r1, 4)`, `ldrb(r2, [r3, 8])`,
`label(X)`, `bcs(X)`), so the assembly runs under CPython with the table's numbers
(firmware/layout.py) and is compared with the Python reference without QEMU. Operands
are checked against the 16-bit encodings' ranges (ARMv6-M Architecture Reference Manual,
A6.7): an offset the table moved out of an instruction's reach fails here."""
import ast

from firmware import layout

M32 = 0xFFFFFFFF
REGS = {"r%d" % k: k for k in range(8)}
# immediate ranges of the 16-bit forms (ARMv6-M ARM A6.7): (max, multiple of)
IMM8 = (255, 1)
MEM = {"ldrb": (31, 1), "strb": (31, 1), "ldrh": (62, 2), "strh": (62, 2), "ldr": (124, 4), "str": (124, 4)}


class AsmError(Exception):
    pass


def _consts(tree):
    """The module's const names (its generated layout block) -> values."""
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "const"):
            out[node.targets[0].id] = ast.literal_eval(node.value.args[0])
    return out


def load(path):
    """{name: Function} of the asm_thumb functions in the module at `path`."""
    tree = ast.parse(open(path).read())
    consts = _consts(tree)
    table = layout.table()
    for name, value in consts.items():   # the block is the table's
        if table.get(name.lstrip("_")) != value:
            raise AsmError("%s: %s = %r is not the table's %r" % (path, name, value, table.get(name.lstrip("_"))))
    funcs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                getattr(d, "attr", None) == "asm_thumb" for d in node.decorator_list):
            funcs[node.name] = Function(node, consts)
    return funcs


class Function:
    def __init__(self, node, consts):
        self.name = node.name
        self.code = []     # (op, args)
        self.labels = {}
        for st in node.body:
            if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)):
                continue   # (a docstring)
            op = st.value.func.id
            args = [self._arg(a, consts) for a in st.value.args]
            if op == "label":
                self.labels[args[0]] = len(self.code)
            else:
                self.code.append((op, args))

    @staticmethod
    def _arg(a, consts):
        if isinstance(a, ast.Name):
            if a.id in REGS:
                return ("r", REGS[a.id])
            if a.id in consts:
                return consts[a.id]
            return a.id   # a label
        if isinstance(a, ast.List):
            return ("m", Function._arg(a.elts[0], consts)[1], Function._arg(a.elts[1], consts))
        if isinstance(a, ast.Set):
            return ("regs", sorted(REGS[e.id] for e in a.elts))
        value = eval(compile(ast.Expression(a), "<operand>", "eval"), {}, dict(consts))   # (folded by MicroPython's parser)
        if not isinstance(value, int):
            raise AsmError("operand %s" % ast.dump(a))
        return value


class Memory:
    """Byte buffers at addresses: a bytearray argument is passed as its address."""

    def __init__(self):
        self.regions = []   # (base, buffer)
        self.top = 0x1000

    def place(self, buf):
        base = self.top
        self.regions.append((base, buf))
        self.top += (len(buf) + 0x1000) & ~0xFFF
        return base

    def _at(self, addr, n):
        for base, buf in self.regions:
            if base <= addr and addr + n <= base + len(buf):
                return buf, addr - base
        raise AsmError("access of %d bytes at 0x%x outside every buffer" % (n, addr))

    def load(self, addr, n):
        if addr % n:
            raise AsmError("unaligned %d-byte load at 0x%x" % (n, addr))
        buf, o = self._at(addr, n)
        return int.from_bytes(buf[o:o + n], "little")

    def store(self, addr, n, v):
        if addr % n:
            raise AsmError("unaligned %d-byte store at 0x%x" % (n, addr))
        buf, o = self._at(addr, n)
        buf[o:o + n] = (v & ((1 << 8 * n) - 1)).to_bytes(n, "little")


def _imm(v, rng, what):
    hi, mult = rng
    if not (0 <= v <= hi and v % mult == 0):
        raise AsmError("%s: immediate %d not encodable (0..%d, multiple of %d)" % (what, v, hi, mult))
    return v


def run(fn, args, mem, max_steps=200000):
    """Run `fn` with r0.. = args (ints: addresses or values); -> r0 as MicroPython
    returns it (a signed 32-bit int)."""
    r = [0] * 8
    for k, a in enumerate(args):
        r[k] = a & M32
    stack = []
    flags = {"N": 0, "Z": 0, "C": 0, "V": 0}

    def nz(v):
        flags["N"] = v >> 31 & 1
        flags["Z"] = int(v == 0)
        return v

    def add(a, b):
        s = a + b
        flags["C"] = int(s > M32)
        s &= M32
        flags["V"] = int((a >> 31) == (b >> 31) and (s >> 31) != (a >> 31))
        return nz(s)

    def sub(a, b):
        s = (a - b) & M32
        flags["C"] = int(a >= b)
        flags["V"] = int((a >> 31) != (b >> 31) and (s >> 31) != (a >> 31))
        return nz(s)

    def val(x, rng, what):
        return r[x[1]] if isinstance(x, tuple) else _imm(x, rng, what)

    cond = {"beq": lambda: flags["Z"], "bne": lambda: not flags["Z"], "bcs": lambda: flags["C"],
            "bcc": lambda: not flags["C"], "bhi": lambda: flags["C"] and not flags["Z"],
            "bls": lambda: not flags["C"] or flags["Z"], "bge": lambda: flags["N"] == flags["V"],
            "blt": lambda: flags["N"] != flags["V"], "b": lambda: True}
    pc = 0
    for _ in range(max_steps):
        if pc == len(fn.code):
            v = r[0]
            return v - (1 << 32) if v >> 31 else v
        op, a = fn.code[pc]
        pc += 1
        if op in cond:
            if cond[op]():
                pc = fn.labels[a[0]]
        elif op == "mov":
            if isinstance(a[1], tuple):
                r[a[0][1]] = r[a[1][1]]   # MOV (register): flags unchanged
            else:
                r[a[0][1]] = nz(_imm(a[1], IMM8, "mov"))
        elif op in ("add", "sub"):
            f = add if op == "add" else sub
            if len(a) == 3:
                rng = (7, 1)   # the 3-bit immediate form
                r[a[0][1]] = f(r[a[1][1]], val(a[2], rng, op))
            else:
                r[a[0][1]] = f(r[a[0][1]], val(a[1], IMM8, op))
        elif op == "cmp":
            sub(r[a[0][1]], val(a[1], IMM8, "cmp"))
        elif op in ("lsl", "lsr"):
            if len(a) == 3:
                src, n = r[a[1][1]], _imm(a[2], (31, 1), op)
            else:
                src, n = r[a[0][1]], r[a[1][1]] & 0xFF
            if n:
                if op == "lsl":
                    flags["C"] = src >> (32 - n) & 1 if n <= 32 else 0
                    v = (src << n) & M32 if n < 32 else 0
                else:
                    flags["C"] = src >> (n - 1) & 1 if n <= 32 else 0
                    v = src >> n if n < 32 else 0
            else:
                v = src
            r[a[0][1]] = nz(v)
        elif op in ("and_", "orr", "eor"):
            x, y = r[a[0][1]], r[a[1][1]]
            r[a[0][1]] = nz(x & y if op == "and_" else x | y if op == "orr" else x ^ y)
        elif op == "mvn":
            r[a[0][1]] = nz(~r[a[1][1]] & M32)
        elif op in MEM:
            n = {"b": 1, "h": 2}.get(op[-1], 4)
            addr = (r[a[1][1]] + _imm(a[1][2], MEM[op], op)) & M32
            if op.startswith("ldr"):
                r[a[0][1]] = mem.load(addr, n)
            else:
                mem.store(addr, n, r[a[0][1]])
        elif op == "push":
            stack.append([r[k] for k in a[0][1]])
        elif op == "pop":
            for k, v in zip(a[0][1], stack.pop()):
                r[k] = v
        else:
            raise AsmError("instruction %s not modelled" % op)
    raise AsmError("%s: no return after %d instructions" % (fn.name, max_steps))
