# CRC-16/CCITT-FALSE with MicroPython's viper emitter (imported by messages.py only
# under MicroPython, where it replaces the pure-Python table loop: ~10x faster).
# Boards whose port lacks native code fall back to the table loop (ImportError/SyntaxError).
import array

import micropython

_T = None   # the CRC table as an array('H'), given by messages.py (use_table)


def use_table(table):
    """The table crc16_viper reads (messages._CRC_TABLE, kept as it is when already an
    array('H')); -> crc16_viper."""
    global _T
    _T = table if type(table) is array.array else array.array("H", table)
    return crc16_viper


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
