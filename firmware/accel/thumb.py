# forward.py's byte loops (COBS encoder at an offset, decoder and peek, find0, put, split_into) and
# messages' CRC in ARM Thumb assembly (MicroPython's inline assembler, 16-bit Thumb-1
# instructions only, so the same code runs on ARMv6-M (Cortex-M0+) and ARMv7E-M).
# Imported by forward.py and firmware/accel first where @micropython.asm_thumb exists;
# there the viper modules (cobs_native.py, crc_native.py) are not loaded (RAM as .mpy).
# Why: a tenth of the viper loops' instructions a byte on a Cortex-M4F (benchmarks/README.md,
# firmware design figures).
# Arguments arrive in r0..r3 (a bytearray as the address of its bytes); r0 is returned.
import micropython
from micropython import const

# the longest COBS run the run splitter keeps (firmware/layout.py)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_MAX_WIRE = const(80)
# ---- end of layout ----


@micropython.asm_thumb
def find0(r0, r1, r2):
    # r0 data, r1 i, r2 n -> index of the first 0x00 in data[i:n], or -1
    label(LOOP)          # noqa: F821  (inline-assembler builtins)
    cmp(r1, r2)          # noqa: F821
    bge(NONE)            # noqa: F821
    add(r3, r0, r1)      # noqa: F821
    ldrb(r3, [r3, 0])    # noqa: F821
    cmp(r3, 0)           # noqa: F821
    beq(FOUND)           # noqa: F821
    add(r1, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(NONE)          # noqa: F821
    mov(r0, 0)           # noqa: F821
    sub(r0, 1)           # noqa: F821
    b(END)               # noqa: F821
    label(FOUND)         # noqa: F821
    mov(r0, r1)          # noqa: F821
    label(END)           # noqa: F821


@micropython.asm_thumb
def put(r0, r1, r2, r3):
    # r0 out, r1 o, r2 data, r3 span = i | n << 16 -> o + n - i + 1
    lsr(r4, r3, 16)      # noqa: F821  n
    lsl(r3, r3, 16)      # noqa: F821
    lsr(r3, r3, 16)      # noqa: F821  i
    add(r0, r0, r1)      # noqa: F821  out + o
    sub(r4, r4, r3)      # noqa: F821  count
    add(r1, r1, r4)      # noqa: F821
    add(r1, 1)           # noqa: F821  the new end
    add(r2, r2, r3)      # noqa: F821  data + i
    label(LOOP)          # noqa: F821
    cmp(r4, 0)           # noqa: F821
    beq(DONE)            # noqa: F821
    ldrb(r5, [r2, 0])    # noqa: F821
    strb(r5, [r0, 0])    # noqa: F821
    add(r0, 1)           # noqa: F821
    add(r2, 1)           # noqa: F821
    sub(r4, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(DONE)          # noqa: F821
    mov(r5, 0)           # noqa: F821
    strb(r5, [r0, 0])    # noqa: F821
    mov(r0, r1)          # noqa: F821



@micropython.asm_thumb
def cobs_peek(r0, r1, r2, r3):
    # r0 data, r1 i, r2 j, r3 k -> forward.cobs_peek: byte k of the frame COBS-encoded
    # in data[i:j], or -1
    add(r1, r0, r1)      # noqa: F821  p
    add(r2, r0, r2)      # noqa: F821  end
    mov(r4, 0)           # noqa: F821  out: decoded bytes before p's block
    label(LOOP)          # noqa: F821
    cmp(r1, r2)          # noqa: F821
    bcs(BAD)             # noqa: F821
    ldrb(r5, [r1, 0])    # noqa: F821  code
    cmp(r5, 0)           # noqa: F821
    beq(BAD)             # noqa: F821
    sub(r6, r5, 1)       # noqa: F821
    add(r7, r4, r6)      # noqa: F821  out + run
    cmp(r3, r7)          # noqa: F821
    bcs(SKIP)            # noqa: F821  k >= out + run: not in this block
    sub(r7, r3, r4)      # noqa: F821
    add(r7, r7, r1)      # noqa: F821
    add(r7, 1)           # noqa: F821  p + 1 + k - out
    cmp(r7, r2)          # noqa: F821
    bcs(BAD)             # noqa: F821
    ldrb(r0, [r7, 0])    # noqa: F821
    b(END)               # noqa: F821
    label(SKIP)          # noqa: F821
    mov(r4, r7)          # noqa: F821  out += run
    add(r1, r1, r5)      # noqa: F821  the next code byte
    cmp(r5, 0xFF)        # noqa: F821
    beq(LOOP)            # noqa: F821  a full block: no zero follows
    cmp(r3, r4)          # noqa: F821
    bne(NEXT)            # noqa: F821
    cmp(r1, r2)          # noqa: F821  byte k is that zero, if a block follows
    bcs(BAD)             # noqa: F821
    mov(r0, 0)           # noqa: F821
    b(END)               # noqa: F821
    label(NEXT)          # noqa: F821
    add(r4, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(BAD)           # noqa: F821
    mov(r0, 0)           # noqa: F821
    sub(r0, 1)           # noqa: F821
    label(END)           # noqa: F821


@micropython.asm_thumb
def _split(r0, r1, r2, r3):
    # r0 data, r1 span = i | n << 16, r2 acc (MAX_WIRE = 80 bytes), r3 st (array('i'))
    # -> forward.split_into
    lsr(r4, r1, 16)      # noqa: F821
    add(r4, r0, r4)      # noqa: F821  end
    lsl(r1, r1, 16)      # noqa: F821
    lsr(r1, r1, 16)      # noqa: F821
    add(r1, r0, r1)      # noqa: F821  p
    ldr(r5, [r3, 0])     # noqa: F821  o = st[0]
    label(LOOP)          # noqa: F821
    cmp(r1, r4)          # noqa: F821
    bcs(NONE)            # noqa: F821
    ldrb(r6, [r1, 0])    # noqa: F821
    add(r1, 1)           # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(DELIM)           # noqa: F821
    cmp(r5, _MAX_WIRE)   # noqa: F821
    bcs(OVER)            # noqa: F821
    add(r7, r2, r5)      # noqa: F821
    strb(r6, [r7, 0])    # noqa: F821
    add(r5, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(OVER)          # noqa: F821
    mov(r7, 1)           # noqa: F821
    str(r7, [r3, 4])     # noqa: F821  st[1] = 1
    b(LOOP)              # noqa: F821
    label(DELIM)         # noqa: F821
    str(r5, [r3, 0])     # noqa: F821
    sub(r0, r1, r0)      # noqa: F821  the index after the delimiter
    b(END)               # noqa: F821
    label(NONE)          # noqa: F821
    str(r5, [r3, 0])     # noqa: F821
    mov(r0, 0)           # noqa: F821
    sub(r0, 1)           # noqa: F821
    label(END)           # noqa: F821


def split_into(data, i, n, acc, st):
    return _split(data, i | (n << 16), acc, st)


@micropython.asm_thumb
def crc16(r0, r1, r2):
    # r0 data, r1 n, r2 table (messages._CRC_TABLE, array('H')) -> CRC-16/CCITT-FALSE
    # of data[:n]: c = ((c << 8) & 0xFFFF) ^ table[(c >> 8) ^ byte], c from 0xFFFF
    mov(r3, 0)           # noqa: F821
    sub(r3, 1)           # noqa: F821
    lsr(r3, r3, 16)      # noqa: F821  c = 0xFFFF
    label(LOOP)          # noqa: F821
    cmp(r1, 0)           # noqa: F821
    beq(END)             # noqa: F821
    ldrb(r4, [r0, 0])    # noqa: F821
    lsr(r5, r3, 8)       # noqa: F821
    eor(r5, r4)          # noqa: F821  (c >> 8) ^ byte
    add(r5, r5, r5)      # noqa: F821  2 bytes an entry
    add(r5, r5, r2)      # noqa: F821
    ldrh(r5, [r5, 0])    # noqa: F821
    lsl(r3, r3, 24)      # noqa: F821
    lsr(r3, r3, 16)      # noqa: F821  (c << 8) & 0xFFFF
    eor(r3, r5)          # noqa: F821
    add(r0, 1)           # noqa: F821
    sub(r1, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(END)           # noqa: F821
    mov(r0, r3)          # noqa: F821


@micropython.asm_thumb
def cobs_encode_at(r0, r1, r2, r3):
    # r0 data, r1 n, r2 out, r3 o -> the end: forward.cobs_encode_at's loop, at out + o
    add(r2, r2, r3)      # noqa: F821
    push({r3})           # noqa: F821  o, for the end
    mov(r3, 0)           # noqa: F821  code_i
    mov(r4, 1)           # noqa: F821  code
    mov(r5, 1)           # noqa: F821  o
    label(LOOP)          # noqa: F821
    cmp(r1, 0)           # noqa: F821
    beq(FINISH)          # noqa: F821
    ldrb(r6, [r0, 0])    # noqa: F821
    add(r0, 1)           # noqa: F821
    sub(r1, 1)           # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(CLOSE)           # noqa: F821
    add(r7, r2, r5)      # noqa: F821
    strb(r6, [r7, 0])    # noqa: F821  out[o] = b
    add(r5, 1)           # noqa: F821
    add(r4, 1)           # noqa: F821
    cmp(r4, 0xFF)        # noqa: F821
    blt(LOOP)            # noqa: F821
    label(CLOSE)         # noqa: F821  a zero byte, or 254 non-zero ones
    add(r7, r2, r3)      # noqa: F821
    strb(r4, [r7, 0])    # noqa: F821  out[code_i] = code
    mov(r3, r5)          # noqa: F821
    add(r5, 1)           # noqa: F821
    mov(r4, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(FINISH)        # noqa: F821
    add(r7, r2, r3)      # noqa: F821
    strb(r4, [r7, 0])    # noqa: F821
    add(r7, r2, r5)      # noqa: F821
    mov(r6, 0)           # noqa: F821
    strb(r6, [r7, 0])    # noqa: F821  the delimiter
    add(r0, r5, 1)       # noqa: F821  bytes written
    pop({r3})            # noqa: F821
    add(r0, r0, r3)      # noqa: F821


@micropython.asm_thumb
def cobs_decode_span(r0, r1, r2, r3):
    # r0 data, r1 span = i | j << 16, r2 out, r3 cap | o << 16 -> forward.cobs_decode_span
    lsr(r5, r1, 16)      # noqa: F821
    lsl(r4, r1, 16)      # noqa: F821
    lsr(r4, r4, 16)      # noqa: F821
    add(r5, r0, r5)      # noqa: F821  end of the run: data + j
    add(r0, r0, r4)      # noqa: F821  p = data + i
    lsr(r4, r3, 16)      # noqa: F821
    add(r2, r2, r4)      # noqa: F821  out + o
    lsl(r3, r3, 16)      # noqa: F821
    lsr(r3, r3, 16)      # noqa: F821  cap
    add(r3, r2, r3)      # noqa: F821  end of out
    mov(r4, r2)          # noqa: F821  out, for the length at the end
    label(LOOP)          # noqa: F821
    cmp(r0, r5)          # noqa: F821
    bcs(DONE)            # noqa: F821
    ldrb(r6, [r0, 0])    # noqa: F821  code
    cmp(r6, 0)           # noqa: F821
    beq(BAD)             # noqa: F821
    add(r0, 1)           # noqa: F821
    sub(r6, 1)           # noqa: F821  run = code - 1
    add(r1, r0, r6)      # noqa: F821
    cmp(r1, r5)          # noqa: F821
    bhi(BAD)             # noqa: F821  the block runs past the frame
    add(r7, r2, r6)      # noqa: F821
    cmp(r7, r3)          # noqa: F821
    bhi(BAD)             # noqa: F821  or past out
    label(COPY)          # noqa: F821
    cmp(r0, r1)          # noqa: F821
    bcs(COPIED)          # noqa: F821
    ldrb(r7, [r0, 0])    # noqa: F821
    strb(r7, [r2, 0])    # noqa: F821
    add(r0, 1)           # noqa: F821
    add(r2, 1)           # noqa: F821
    b(COPY)              # noqa: F821
    label(COPIED)        # noqa: F821
    cmp(r6, 0xFE)        # noqa: F821
    bcs(LOOP)            # noqa: F821  code 0xFF: no zero follows
    cmp(r0, r5)          # noqa: F821
    bcs(LOOP)            # noqa: F821  the frame's last block
    cmp(r2, r3)          # noqa: F821
    bcs(BAD)             # noqa: F821
    mov(r7, 0)           # noqa: F821
    strb(r7, [r2, 0])    # noqa: F821
    add(r2, 1)           # noqa: F821
    b(LOOP)              # noqa: F821
    label(BAD)           # noqa: F821
    mov(r0, 0)           # noqa: F821
    sub(r0, 1)           # noqa: F821
    b(END)               # noqa: F821
    label(DONE)          # noqa: F821
    sub(r0, r2, r4)      # noqa: F821
    label(END)           # noqa: F821


def cobs_decode_into(data, i, j, out):
    return cobs_decode_span(data, i | (j << 16), out, len(out))
