# forward.py's byte loops (COBS encoder at an offset, decoder and peek, find0, put, cut, split_into) and
# messages' CRC in ARM Thumb assembly (MicroPython's inline assembler, 16-bit Thumb-1
# instructions only, so the same code runs on ARMv6-M (Cortex-M0+) and ARMv7E-M).
# Imported by forward.py and firmware/accel first where @micropython.asm_thumb exists;
# there the viper modules (cobs_native.py, crc_native.py) are not loaded (RAM as .mpy).
# Why: a tenth of the viper loops' instructions a byte on a Cortex-M4F (benchmarks/README.md,
# firmware design figures).
# Arguments arrive in r0..r3 (a bytearray as the address of its bytes); r0 is returned.
import micropython
from micropython import const

# the node's buffer block and the frame bytes the assembly reads (firmware/layout.py)
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
_MAX_WIRE = const(80)
_TX = const(162)
_ROOM = const(81)
_POOL = const(8)
_POOL_FRAME = const(64)
_POOL_FRAME_SHIFT = const(6)
_MINE_UP = const(64)
_BLK_TOTAL = const(0)
_BLK_QUEUED = const(4)
_BLK_K = const(6)
_BLK_DATA = const(8)
_BLK_TABLE_AT = const(12)
_BLK_SHIFT = const(16)
_BLK_TX = const(20)
_BLK_TAB = const(344)
_BLK_CARRY = const(600)
_BLK_NMINE = const(602)
_BLK_BAD = const(603)
_BLK_RING = const(604)
_BLK_RING_TICK = const(605)
_BLK_RING_HELD = const(606)
_BLK_MINE_N = const(608)
_BLK_POOL = const(616)
_HEADER = const(6)
_GOAL = const(4)
_ASSERT = const(5)
_BROADCAST = const(255)
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



# One function of ~360 lines, not split: an asm_thumb function's labels are its own and
# it cannot call another (no linker, no bl between them), so each piece would be a call
# back through the VM with its buffer arguments, per frame, against the forward budget.
@micropython.asm_thumb
def cut(r0, r1, r2):
    # r0 data, r1 blk, r2 span = n | i << 12 | side << 24 -> forward.cut. blk as
    # firmware/layout.py lays it out (BLK_*: the shift at BLK_SHIFT is a byte, its word
    # cleared at the start; r5 points at BLK_NMINE where the pool's header is used). Why: the whole "frame from
    # down not for me -> up" in one call, each byte read once (delimiter search and copy
    # in one pass), in place of the Python routing (peek, _route, _queue, put); and a
    # frame for the node decoded here into the pool, in place of the node's _pump
    # (benchmarks/README.md, firmware design figures).
    # Conditional branches reach +-256 bytes (Thumb-1): far targets go through a b().
    mov(r5, r0)          # noqa: F821  data
    mov(r3, r1)          # noqa: F821  blk
    mov(r1, r2)          # noqa: F821  span
    mov(r6, 0)           # noqa: F821
    strh(r6, [r3, _BLK_K])   # noqa: F821  k = 0
    lsl(r4, r1, 20)      # noqa: F821
    lsr(r4, r4, 20)      # noqa: F821  n
    lsl(r2, r1, 8)       # noqa: F821
    lsr(r2, r2, 20)      # noqa: F821  i
    lsr(r1, r1, 24)      # noqa: F821  side
    add(r6, r1, r1)      # noqa: F821
    str(r6, [r3, _BLK_SHIFT])   # noqa: F821  its bits' shift: 0 or 2
    str(r5, [r3, _BLK_DATA])    # noqa: F821  data, for the index at the end
    add(r4, r5, r4)      # noqa: F821  end = data + n
    add(r6, r5, r2)      # noqa: F821  p = data + i
    mov(r2, _BLK_TAB >> 2)   # noqa: F821
    lsl(r2, r2, 2)       # noqa: F821  BLK_TAB
    add(r2, r2, r3)      # noqa: F821  the table
    str(r2, [r3, _BLK_TABLE_AT])   # noqa: F821  (r2 is the copy loop's too)
    add(r5, r2, r1)      # noqa: F821
    add(r5, 255)         # noqa: F821
    ldrb(r5, [r5, _BLK_CARRY - _BLK_TAB - 255])   # noqa: F821  a run carried over from this side
    mov(r1, r6)          # noqa: F821  p: the frame's start
    cmp(r5, 0)           # noqa: F821
    bne(STOP_A)          # noqa: F821
    label(FRAME)         # noqa: F821
    cmp(r1, r4)          # noqa: F821
    bcs(ALL_A)           # noqa: F821  p == end: the whole read done
    ldrb(r6, [r1, 0])    # noqa: F821
    cmp(r6, 0)           # noqa: F821
    bne(HEAD)            # noqa: F821
    add(r1, 1)           # noqa: F821  an empty run: skipped
    b(FRAME)             # noqa: F821
    label(HEAD)          # noqa: F821  four COBS bytes, none the delimiter
    add(r5, r1, 4)       # noqa: F821
    cmp(r5, r4)          # noqa: F821
    bhi(STOP_A)          # noqa: F821
    ldrb(r6, [r1, 1])    # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(STOP_A)          # noqa: F821
    ldrb(r6, [r1, 2])    # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(STOP_A)          # noqa: F821
    ldrb(r6, [r1, 3])    # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(STOP_A)          # noqa: F821
    add(r6, r1, 3)       # noqa: F821  where the decoded byte 2 (dst) is encoded:
    mov(r7, r1)          # noqa: F821  a code byte there stands for a 0x00
    label(WALK)          # noqa: F821
    cmp(r7, r6)          # noqa: F821
    bcs(WALKED)          # noqa: F821
    ldrb(r0, [r7, 0])    # noqa: F821
    add(r7, r7, r0)      # noqa: F821  the next code byte
    b(WALK)              # noqa: F821
    label(WALKED)        # noqa: F821
    mov(r0, 0)           # noqa: F821
    cmp(r7, r6)          # noqa: F821
    beq(DST)             # noqa: F821
    ldrb(r0, [r6, 0])    # noqa: F821
    label(DST)           # noqa: F821
    cmp(r0, _BROADCAST)  # noqa: F821
    bne(DSTV)            # noqa: F821
    mov(r5, _BLK_NMINE >> 2)   # noqa: F821
    lsl(r5, r5, 2)       # noqa: F821
    add(r5, _BLK_NMINE & 3)   # noqa: F821
    add(r5, r5, r3)      # noqa: F821  the pool's header: blk + BLK_NMINE
    ldrb(r6, [r5, _BLK_RING - _BLK_NMINE])   # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(DSTV)            # noqa: F821
    b(RINGBC)            # noqa: F821  a broadcast on a ring: the goal waves
    label(DSTV)          # noqa: F821
    add(r0, r2, r0)      # noqa: F821
    ldrb(r0, [r0, 0])    # noqa: F821  v = table[dst]
    ldrb(r6, [r3, _BLK_SHIFT])   # noqa: F821
    lsr(r7, r6, 1)       # noqa: F821  from down: 1
    mov(r5, r0)          # noqa: F821
    lsr(r5, r7)          # noqa: F821  bit 6: the node's own (bit 6 from up, 7 from down)
    lsr(r0, r6)          # noqa: F821
    mov(r6, 3)           # noqa: F821
    and_(r0, r6)         # noqa: F821  side to pass it to: 1 up, 2 down, 0 none
    mov(r6, _MINE_UP)    # noqa: F821
    and_(r5, r6)         # noqa: F821  mine
    cmp(r0, 0)           # noqa: F821
    beq(NOSIDE)          # noqa: F821
    add(r6, r3, r0)      # noqa: F821  blk + side: its fill at [_BLK_QUEUED - 1]
    ldrb(r7, [r6, _BLK_QUEUED - 1])   # noqa: F821  o
    cmp(r7, _ROOM)       # noqa: F821
    bhi(STOP_A)          # noqa: F821  no room to pass it on
    cmp(r5, 0)           # noqa: F821
    beq(PASS)            # noqa: F821
    b(MINE)              # noqa: F821
    label(NOSIDE)        # noqa: F821
    cmp(r5, 0)           # noqa: F821
    bne(MINE_A)          # noqa: F821
    label(STOP_A)        # noqa: F821
    b(STOP)              # noqa: F821
    label(ALL_A)         # noqa: F821
    b(ALL)               # noqa: F821
    label(MINE_A)        # noqa: F821
    b(MINE)              # noqa: F821
    label(PASS)          # noqa: F821  r0 side, r1 p
    add(r6, r3, r0)      # noqa: F821  blk + side: its fill at [_BLK_QUEUED - 1]
    ldrb(r7, [r6, _BLK_QUEUED - 1])   # noqa: F821  o
    add(r7, r7, r3)      # noqa: F821
    add(r7, _BLK_TX)     # noqa: F821  dest = blk + BLK_TX + o
    cmp(r0, 1)           # noqa: F821
    beq(LIMIT)           # noqa: F821
    add(r7, _TX)         # noqa: F821  the down buffer
    label(LIMIT)         # noqa: F821
    mov(r5, r1)          # noqa: F821
    add(r5, _MAX_WIRE + 1)   # noqa: F821  the delimiter by p + MAX_WIRE, and before the end
    cmp(r5, r4)          # noqa: F821
    bls(COPY0)           # noqa: F821
    mov(r5, r4)          # noqa: F821
    label(COPY0)         # noqa: F821
    mov(r0, r1)          # noqa: F821
    label(COPY)          # noqa: F821  up to and with the delimiter (beyond the fill
    cmp(r0, r5)          # noqa: F821  until it is found: harmless if not)
    bcs(STOP_A)          # noqa: F821
    ldrb(r2, [r0, 0])    # noqa: F821
    strb(r2, [r7, 0])    # noqa: F821
    add(r0, 1)           # noqa: F821
    add(r7, 1)           # noqa: F821
    cmp(r2, 0)           # noqa: F821
    bne(COPY)            # noqa: F821
    sub(r2, r0, r1)      # noqa: F821  length + 1
    ldrb(r7, [r6, _BLK_QUEUED - 1])   # noqa: F821
    add(r7, r7, r2)      # noqa: F821
    strb(r7, [r6, _BLK_QUEUED - 1])   # noqa: F821  o += length + 1
    mov(r1, r0)          # noqa: F821  the next frame
    ldr(r2, [r3, _BLK_TABLE_AT])   # noqa: F821
    ldr(r0, [r3, _BLK_TOTAL])   # noqa: F821
    add(r0, 1)           # noqa: F821
    str(r0, [r3, _BLK_TOTAL])   # noqa: F821  total += 1
    ldrh(r0, [r3, _BLK_K])   # noqa: F821
    add(r0, 1)           # noqa: F821
    strh(r0, [r3, _BLK_K])   # noqa: F821  k += 1
    b(FRAME)             # noqa: F821
    label(MINE)          # noqa: F821  r0 side, r1 p, r4 end: the node's own frame
    push({r0, r1, r4})   # noqa: F821
    mov(r5, _BLK_NMINE >> 2)   # noqa: F821
    lsl(r5, r5, 2)       # noqa: F821
    add(r5, _BLK_NMINE & 3)   # noqa: F821
    add(r5, r5, r3)      # noqa: F821  the pool's header: blk + BLK_NMINE
    ldrb(r0, [r5, 0])    # noqa: F821  f, frames in the pool
    cmp(r0, _POOL)       # noqa: F821
    bcs(MSTOP)           # noqa: F821  full: the node hands them over first
    mov(r6, r1)          # noqa: F821
    mov(r7, r1)          # noqa: F821
    add(r7, _MAX_WIRE + 1)   # noqa: F821  the delimiter by p + MAX_WIRE, and before the end
    cmp(r7, r4)          # noqa: F821
    bls(MSCAN)           # noqa: F821
    mov(r7, r4)          # noqa: F821
    label(MSCAN)         # noqa: F821
    cmp(r6, r7)          # noqa: F821
    bcs(MSTOP)           # noqa: F821
    ldrb(r2, [r6, 0])    # noqa: F821
    cmp(r2, 0)           # noqa: F821
    beq(MJ)              # noqa: F821
    add(r6, 1)           # noqa: F821
    b(MSCAN)             # noqa: F821
    label(MJ)            # noqa: F821  r6: its delimiter j; the frame is handled now
    lsl(r7, r0, _POOL_FRAME_SHIFT)   # noqa: F821
    add(r7, r7, r5)      # noqa: F821
    add(r7, _BLK_POOL - _BLK_NMINE)   # noqa: F821  out = blk + BLK_POOL + f * POOL_FRAME
    mov(r4, r7)          # noqa: F821
    add(r4, _POOL_FRAME)   # noqa: F821  its end
    label(DLOOP)         # noqa: F821  COBS-decode p..j (cobs_decode_span's loop: an asm_thumb function calls no other)
    cmp(r1, r6)          # noqa: F821
    bcs(DDONE)           # noqa: F821
    ldrb(r2, [r1, 0])    # noqa: F821  code (no 0x00 before j)
    add(r1, 1)           # noqa: F821
    sub(r2, 1)           # noqa: F821  run = code - 1
    add(r0, r1, r2)      # noqa: F821
    cmp(r0, r6)          # noqa: F821
    bhi(DBAD)            # noqa: F821  the block runs past the frame
    add(r5, r7, r2)      # noqa: F821
    cmp(r5, r4)          # noqa: F821
    bhi(DBAD)            # noqa: F821  or past the pool frame
    label(DCOPY)         # noqa: F821
    cmp(r1, r0)          # noqa: F821
    bcs(DCOPIED)         # noqa: F821
    ldrb(r5, [r1, 0])    # noqa: F821
    strb(r5, [r7, 0])    # noqa: F821
    add(r1, 1)           # noqa: F821
    add(r7, 1)           # noqa: F821
    b(DCOPY)             # noqa: F821
    label(DCOPIED)       # noqa: F821
    cmp(r2, 0xFE)        # noqa: F821
    bcs(DLOOP)           # noqa: F821  code 0xFF: no zero follows
    cmp(r1, r6)          # noqa: F821
    bcs(DLOOP)           # noqa: F821  the frame's last block
    cmp(r7, r4)          # noqa: F821
    bcs(DBAD)            # noqa: F821
    mov(r5, 0)           # noqa: F821
    strb(r5, [r7, 0])    # noqa: F821
    add(r7, 1)           # noqa: F821
    b(DLOOP)             # noqa: F821
    label(DBAD)          # noqa: F821  not valid COBS, or longer than a pool frame
    mov(r5, _BLK_NMINE >> 2)   # noqa: F821
    lsl(r5, r5, 2)       # noqa: F821
    add(r5, _BLK_NMINE & 3)   # noqa: F821
    add(r5, r5, r3)      # noqa: F821
    ldrb(r0, [r5, _BLK_BAD - _BLK_NMINE])   # noqa: F821
    add(r0, 1)           # noqa: F821
    strb(r0, [r5, _BLK_BAD - _BLK_NMINE])   # noqa: F821  counted for the node (agent.decoder.bad)
    b(MDONE)             # noqa: F821
    label(DDONE)         # noqa: F821
    mov(r5, _BLK_NMINE >> 2)   # noqa: F821
    lsl(r5, r5, 2)       # noqa: F821
    add(r5, _BLK_NMINE & 3)   # noqa: F821
    add(r5, r5, r3)      # noqa: F821
    ldrb(r0, [r5, 0])    # noqa: F821  f
    sub(r4, _POOL_FRAME)   # noqa: F821  the pool frame's start
    sub(r7, r7, r4)      # noqa: F821  its length
    add(r4, r5, r0)      # noqa: F821
    strb(r7, [r4, _BLK_MINE_N - _BLK_NMINE])   # noqa: F821  lengths[f]
    add(r0, 1)           # noqa: F821
    strb(r0, [r5, 0])    # noqa: F821  f + 1
    label(MDONE)         # noqa: F821
    pop({r0, r1, r4})    # noqa: F821
    ldr(r2, [r3, _BLK_TABLE_AT])   # noqa: F821  the table again
    cmp(r0, 0)           # noqa: F821
    beq(MNEXT)           # noqa: F821
    b(PASS)              # noqa: F821  a broadcast: passed on too
    label(MNEXT)         # noqa: F821
    add(r1, r6, 1)       # noqa: F821  the next frame: after j
    ldrh(r0, [r3, _BLK_K])   # noqa: F821
    add(r0, 1)           # noqa: F821
    strh(r0, [r3, _BLK_K])   # noqa: F821  k += 1
    b(FRAME)             # noqa: F821
    label(MSTOP)         # noqa: F821
    pop({r0, r1, r4})    # noqa: F821
    b(STOP)              # noqa: F821
    label(RINGBC)        # noqa: F821  firmware/node.py _ring_admits: r0 dst (255), r1 p
    ldrb(r6, [r1, 0])    # noqa: F821  the first code byte
    mov(r7, 0)           # noqa: F821
    cmp(r6, 1)           # noqa: F821
    beq(RTYPE)           # noqa: F821  code 1: decoded byte 0 (the type) is 0x00
    ldrb(r7, [r1, 1])    # noqa: F821
    label(RTYPE)         # noqa: F821
    cmp(r7, _GOAL)       # noqa: F821
    beq(RWAVE)           # noqa: F821
    cmp(r7, _ASSERT)     # noqa: F821
    beq(RWAVE)           # noqa: F821
    label(RDST)          # noqa: F821
    mov(r0, 255)         # noqa: F821
    b(DSTV)              # noqa: F821  taken and passed on, as on a chain
    label(RWAVE)         # noqa: F821  a goal wave's: its tick (low byte), decoded byte 6
    mov(r6, r1)          # noqa: F821
    add(r6, _HEADER + 1)   # noqa: F821  at p + 7 (the code byte, then the header)
    cmp(r6, r4)          # noqa: F821
    bcs(RSTOP)           # noqa: F821  the read ends first: _pump
    mov(r0, r1)          # noqa: F821
    add(r0, 4)           # noqa: F821
    label(RZ)            # noqa: F821  a frame of 8 COBS bytes at least (p+1..p+3 checked)
    ldrb(r5, [r0, 0])    # noqa: F821
    cmp(r5, 0)           # noqa: F821
    beq(RSTOP)           # noqa: F821
    add(r0, 1)           # noqa: F821
    cmp(r0, r6)          # noqa: F821
    bls(RZ)              # noqa: F821
    mov(r5, r7)          # noqa: F821  the type
    mov(r7, r1)          # noqa: F821
    label(RWALK)         # noqa: F821
    cmp(r7, r6)          # noqa: F821
    bcs(RWALKED)         # noqa: F821
    ldrb(r0, [r7, 0])    # noqa: F821
    add(r7, r7, r0)      # noqa: F821
    b(RWALK)             # noqa: F821
    label(RWALKED)       # noqa: F821
    mov(r0, 0)           # noqa: F821
    cmp(r7, r6)          # noqa: F821
    beq(RTICK)           # noqa: F821
    ldrb(r0, [r6, 0])    # noqa: F821
    label(RTICK)         # noqa: F821  r0 tick, r5 type
    mov(r7, _BLK_NMINE >> 2)   # noqa: F821
    lsl(r7, r7, 2)       # noqa: F821
    add(r7, _BLK_NMINE & 3)   # noqa: F821
    add(r7, r7, r3)      # noqa: F821  the pool's header
    ldrb(r6, [r7, _BLK_RING_HELD - _BLK_NMINE])   # noqa: F821  a goal's tick held?
    cmp(r6, 0)           # noqa: F821
    beq(RNEW)            # noqa: F821
    ldrb(r6, [r7, _BLK_RING_TICK - _BLK_NMINE])   # noqa: F821
    cmp(r6, r0)          # noqa: F821
    beq(RSKIP)           # noqa: F821  the other wave got here first
    label(RNEW)          # noqa: F821  taken and passed on (a GOAL's tick: held by the node once it has passed its check)
    b(RDST)              # noqa: F821
    label(RSKIP)         # noqa: F821  neither passed on nor taken: past its delimiter
    mov(r6, r1)          # noqa: F821
    mov(r7, r1)          # noqa: F821
    add(r7, _MAX_WIRE + 1)   # noqa: F821  (by p + MAX_WIRE)
    cmp(r7, r4)          # noqa: F821
    bls(RSCAN)           # noqa: F821
    mov(r7, r4)          # noqa: F821
    label(RSCAN)         # noqa: F821
    cmp(r6, r7)          # noqa: F821
    bcs(RSTOP)           # noqa: F821
    ldrb(r0, [r6, 0])    # noqa: F821
    cmp(r0, 0)           # noqa: F821
    beq(RSKIPPED)        # noqa: F821
    add(r6, 1)           # noqa: F821
    b(RSCAN)             # noqa: F821
    label(RSKIPPED)      # noqa: F821
    add(r1, r6, 1)       # noqa: F821  the next frame
    ldrh(r0, [r3, _BLK_K])   # noqa: F821
    add(r0, 1)           # noqa: F821
    strh(r0, [r3, _BLK_K])   # noqa: F821  k += 1 (handled)
    ldr(r2, [r3, _BLK_TABLE_AT])   # noqa: F821  the table
    b(FRAME)             # noqa: F821
    label(RSTOP)         # noqa: F821
    b(STOP)              # noqa: F821
    label(ALL)           # noqa: F821
    ldrh(r0, [r3, _BLK_K])   # noqa: F821  -> k
    b(END)               # noqa: F821
    label(STOP)          # noqa: F821  -> -1 - (i | j << 12), j its delimiter
    mov(r5, r1)          # noqa: F821
    label(SCAN)          # noqa: F821
    cmp(r5, r4)          # noqa: F821
    bcs(NONE)            # noqa: F821
    ldrb(r6, [r5, 0])    # noqa: F821
    cmp(r6, 0)           # noqa: F821
    beq(FOUND)           # noqa: F821
    add(r5, 1)           # noqa: F821
    b(SCAN)              # noqa: F821
    label(NONE)          # noqa: F821
    ldr(r5, [r3, _BLK_DATA])   # noqa: F821
    mov(r6, 255)         # noqa: F821
    lsl(r6, r6, 4)       # noqa: F821
    add(r6, 15)          # noqa: F821
    add(r5, r5, r6)      # noqa: F821  data + 0xFFF: none
    label(FOUND)         # noqa: F821
    ldr(r0, [r3, _BLK_DATA])   # noqa: F821
    sub(r1, r1, r0)      # noqa: F821  i
    sub(r5, r5, r0)      # noqa: F821  j
    lsl(r5, r5, 12)      # noqa: F821
    orr(r5, r1)          # noqa: F821
    mvn(r0, r5)          # noqa: F821  (~x == -1 - x)
    label(END)           # noqa: F821


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
    # r0 data, r1 span = i | j << 16, r2 out, r3 len(out) -> forward.cobs_decode_into
    lsr(r5, r1, 16)      # noqa: F821
    lsl(r4, r1, 16)      # noqa: F821
    lsr(r4, r4, 16)      # noqa: F821
    add(r5, r0, r5)      # noqa: F821  end of the run: data + j
    add(r0, r0, r4)      # noqa: F821  p = data + i
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
