# CRC-16/CCITT-FALSE with MicroPython's viper emitter (imported by messages.py only
# under MicroPython, where it replaces the pure-Python table loop: ~10x faster).
# Boards whose port lacks native code fall back to the table loop (ImportError/SyntaxError).
import micropython

from bus_protocol.messages import _CRC_TABLE as _T   # an array('H')


@micropython.viper
def crc16_viper(data, n: int) -> int:
    d = ptr8(data)       # noqa: F821  (viper builtin)
    t = ptr16(_T)        # noqa: F821
    c = 0xFFFF
    i = 0
    while i < n:
        c = ((c << 8) & 0xFFFF) ^ t[(c >> 8) ^ d[i]]
        i += 1
    return c
