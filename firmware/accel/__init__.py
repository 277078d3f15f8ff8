# A board's byte loops: the node's forwarder (forward.py; its C in linkcore,
# firmware/native/linkcore_forward.h) and COBS loops, in Thumb assembly (thumb.py) or
# viper (cobs_native.py) where MicroPython compiles them, and the CRC-16 loop
# messages.crc16 uses there (crc_native.py, thumb.py), installed here once.
from bus_protocol import messages

try:  # ARM boards: Thumb assembly (benchmarks/README.md, firmware design figures)
    from firmware.accel.thumb import crc16 as _crc
except Exception:
    try:  # MicroPython with native code: viper loop
        from firmware.accel.crc_native import crc16_viper as _crc
    except Exception:   # CPython (binascii.crc_hqx), ports without native code
        _crc = None
if _crc is not None:
    messages.use_crc_loop(_crc)
