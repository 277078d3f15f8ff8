# CRC-16/CCITT-FALSE with MicroPython's viper emitter (firmware/accel installs it in
# messages.crc16 under MicroPython, where it replaces the table loop: ~10x faster).
# Boards whose port lacks native code fall back to the table loop (ImportError/SyntaxError).
import micropython


@micropython.viper
def crc16_viper(data, n: int, table) -> int:
    d = ptr8(data)       # noqa: F821  (viper builtin)
    t = ptr16(table)     # noqa: F821  messages._CRC_TABLE, an array('H')
    c = 0xFFFF
    i = 0
    while i < n:
        c = ((c << 8) & 0xFFFF) ^ t[(c >> 8) ^ d[i]]
        i += 1
    return c
