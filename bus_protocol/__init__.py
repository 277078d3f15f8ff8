# linkteam wire format, shared by the MicroPython link agents and the CPython host
# (docs/design.md §1). Submodules are imported explicitly, so an MCU loads only what it uses:
#   messages - ids, payload layouts, CRC-16, encode_into/encode, Decoder
#   framing  - COBS + 0x00 delimiter for the UART daisy chain (Deframer)
#   can_ids  - 29-bit CAN ids, CAN-FD padding, classic-CAN fragmentation (Reassembler)
# Byte-level specification: SPEC.md.
