# forward.py's cobs_encode_at / cobs_decode_into / cobs_peek / split_into / find0 / put
# with MicroPython's viper emitter: the loops of forward.py and bus_protocol/framing.py,
# byte for byte, ~10x faster on a node's hot path.
# Imported by forward.py only where it compiles (MicroPython with native code); CPython
# and ports without viper keep the pure-Python loops.
import micropython
from micropython import const

# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_MAX_WIRE = const(80)
# ---- end of layout ----


@micropython.viper
def cobs_encode_at(data, n: int, out, o: int) -> int:
    s = ptr8(data)     # noqa: F821  (viper builtin)
    d = ptr8(out)      # noqa: F821
    code_i = o
    code = 1
    o += 1
    i = 0
    while i < n:
        b = s[i]
        i += 1
        if b:
            d[o] = b
            o += 1
            code += 1
            if code < 0xFF:
                continue
        d[code_i] = code
        code_i = o
        o += 1
        code = 1
    d[code_i] = code
    d[o] = 0
    return o + 1


@micropython.viper
def cobs_decode_at(data, i: int, j: int, out, o: int, cap: int) -> int:
    s = ptr8(data)     # noqa: F821
    d = ptr8(out)      # noqa: F821
    start = o
    end_o = o + cap
    while i < j:
        code = s[i]
        if code == 0:
            return -1
        i += 1
        end = i + code - 1
        if end > j or o + end - i > end_o:
            return -1
        while i < end:
            d[o] = s[i]
            o += 1
            i += 1
        if code < 0xFF and i < j:
            if o >= end_o:
                return -1
            d[o] = 0
            o += 1
    return o - start


@micropython.viper
def cobs_decode_into(data, i: int, j: int, out) -> int:
    return int(cobs_decode_at(data, i, j, out, 0, int(len(out))))


@micropython.viper
def cobs_peek(data, i: int, j: int, k: int) -> int:
    s = ptr8(data)     # noqa: F821
    out = 0
    while i < j:
        code = s[i]
        if code == 0:
            return -1
        run = code - 1
        if k < out + run:
            p = i + 1 + k - out
            if p < j:
                return s[p]
            return -1
        out += run
        i += code
        if code < 0xFF:
            if k == out:
                if i < j:
                    return 0
                return -1
            out += 1
    return -1


@micropython.viper
def split_into(data, i: int, n: int, acc, st) -> int:
    s = ptr8(data)     # noqa: F821
    a = ptr8(acc)      # noqa: F821
    t = ptr32(st)      # noqa: F821
    o = t[0]
    cap = _MAX_WIRE
    while i < n:
        b = s[i]
        i += 1
        if b == 0:
            t[0] = o
            return i
        if o < cap:
            a[o] = b
            o += 1
        else:
            t[1] = 1
    t[0] = o
    return -1


@micropython.viper
def find0(data, i: int, n: int) -> int:
    s = ptr8(data)     # noqa: F821
    while i < n:
        if s[i] == 0:
            return i
        i += 1
    return -1


@micropython.viper
def put(out, o: int, data, span: int) -> int:
    d = ptr8(out)      # noqa: F821
    s = ptr8(data)     # noqa: F821
    i = span & 0xFFFF
    n = span >> 16
    while i < n:
        d[o] = s[i]
        o += 1
        i += 1
    d[o] = 0
    return o + 1
