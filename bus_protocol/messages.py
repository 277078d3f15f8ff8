# Message ids, payload layouts, CRC and the binary codec (docs/design.md §1, §2, §6; SPEC.md).
# Runs unchanged under CPython and MicroPython: no typing/dataclasses/enum, `struct`
# only through pack_into/unpack_from/calcsize, tables built once at import.
#
# Logical frame (identical on UART, CAN-FD and classic CAN):
#   off 0 type u8 | 1 src u8 | 2 dst u8 | 3 seq u16 | 5 len u8 | 6 payload[len] | crc16 LE
# so a frame is 8 + len bytes, len <= 56, frame <= 64 (one CAN-FD data field).
import struct
from array import array

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

try:  # CPython: C implementation of exactly CRC-16/CCITT-FALSE when init=0xFFFF
    from binascii import crc_hqx as _crc_hqx
except ImportError:
    _crc_hqx = None
# MicroPython's binascii has no crc_hqx; guard against partial ports anyway.

# --- addressing -------------------------------------------------------------
HOST = const(0)          # links are 1..N (link index, base = 1)
BROADCAST = const(0xFF)
MAX_LINKS = const(0xFE)    # link addresses 1..MAX_LINKS: every byte but HOST and BROADCAST

# --- message types (id == wire byte) ----------------------------------------
SYNC = const(0x01)
JOINT_STATE = const(0x02)
KINEMATIC = const(0x03)
GOAL = const(0x04)
ASSERT = const(0x05)
TORQUE = const(0x06)
STATUS = const(0x07)
CONFIG = const(0x08)
COMMAND = const(0x09)
LOG = const(0x0A)
IDENT = const(0x0B)      # identification row of a window link, to the last link
ESTIMATE = const(0x0C)   # the last link's load estimate, to the host
TIMING = const(0x0D)     # a node's completion history of its last 12 cycles, to the host

NAMES = {SYNC: "SYNC", JOINT_STATE: "JOINT_STATE", KINEMATIC: "KINEMATIC",
         GOAL: "GOAL", ASSERT: "ASSERT", TORQUE: "TORQUE", STATUS: "STATUS",
         CONFIG: "CONFIG", COMMAND: "COMMAND", LOG: "LOG", IDENT: "IDENT",
         ESTIMATE: "ESTIMATE", TIMING: "TIMING"}

# COMMAND.cmd values
CMD_BRAKE = const(1)
CMD_RELEASE = const(2)
CMD_RESET = const(3)
CMD_PING = const(4)
CMD_CONFIG_APPLY = const(5)
CMD_NODE_OUT = const(6)     # host -> all: link `arg` is out of the team (braked, bridged)
CMD_NODE_IN = const(7)      # host -> all: link `arg` is back in the team
# bring-up (`linkteam node`, firmware/params.py), answered by LOG lines "param ..."
CMD_PARAM = const(8)        # the CONFIG blob so far is {"get": KEY} or {"set": KEY, "value": V}
CMD_SAVE = const(9)         # the link's config -> its config file
CMD_ZERO = const(10)        # encoder offset: the joint reads `arg` where it stands (saved)
CMD_JOG_TORQUE = const(11)  # drive the joint with torque `arg`; braked when not refreshed
CMD_JOG_VELOCITY = const(12)  # ... at velocity `arg`
CMD_REBOOT = const(13)      # restart the board (it reads its config file again)

# ASSERT.kind values (docs/design.md §5: RMOA couplets; gravity assertions)
KIND_RMOA = const(1)
KIND_GRAVITY = const(2)

# JOINT_STATE.flags bits
FLAG_RANGE_VALID = const(1)

# --- sizes --------------------------------------------------------------------
HEADER_SIZE = const(6)    # type, src, dst, seq(2), len
OVERHEAD = const(8)       # header + crc
MAX_PAYLOAD = const(56)
MAX_FRAME = const(64)
CONFIG_MAX_DATA = const(52)   # 56 - <HH
LOG_MAX_TEXT = const(56)

_HDR = "<BBBHB"
_CFG_HDR = "<HH"

# Payload layouts, indexed by type id. None = unknown id; "" = variable (CONFIG/LOG).
# Every float is float32 little-endian; vectors are (x, y, z); see SPEC.md for frames.
_FMT = (
    None,
    "<I",          # SYNC        tick
    "<IffB3f3f",   # JOINT_STATE tick, q, qd, flags, p_psh(3, link), x_r(3, link)
    "<I13f",       # KINEMATIC   tick, quat wxyz, p(3), v(3), w(3)  (world)
    "<IB9f",       # GOAL        tick, goal_id, p_app(3), f(6)       (world)
    "<IBB9f",      # ASSERT      tick, origin_link, kind, p(3), f(6) (world)
    "<IfB6f",      # TORQUE      tick, u, state, proxy, assertions, local_pd, joint_limit, brake, other
    "<IBHHIHH3H",  # STATUS      tick, state, faults, bad_frames, cycle_us, stale_kinematic, late, auth_rejected(3)
    "",            # CONFIG      offset u16, total u16, data[<=52]
    "<Bf",         # COMMAND     cmd, arg
    "",            # LOG         text[<=56]
    "<I13f",       # IDENT       tick, y, z(3), p_prev(3), F(3), M(3)  (world)
    "<I10f",       # ESTIMATE    tick, m, h(3), I(6)  (frame N)
    "<I24H",       # TIMING      first tick, cycle_us(12), finish clock & 0xFFFF (12)
)
_NTYPES = len(_FMT)

# Precomputed per-type payload size and value count (one-time allocation at import).
_SIZE = [0] * _NTYPES
_NVAL = [0] * _NTYPES
for _t in range(_NTYPES):
    _f = _FMT[_t]
    if _f:
        _SIZE[_t] = struct.calcsize(_f)
        _NVAL[_t] = len(struct.unpack_from(_f, bytes(_SIZE[_t])))
_SIZE[CONFIG] = MAX_PAYLOAD
_NVAL[CONFIG] = 3
_SIZE[LOG] = MAX_PAYLOAD
_NVAL[LOG] = 1
del _t, _f

# --- CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, xorout 0 ---------
# Check value: crc16(b"123456789") == 0x29B1.


def _make_table():
    # an array('H'): 512 bytes of RAM on a board, where a list of ints takes 1 KB, and
    # the one the viper CRC reads (benchmarks/README.md, firmware design figures)
    t = array("H", bytes(512))
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else (c << 1)
        t[i] = c & 0xFFFF
    return t


_CRC_TABLE = _make_table()


def crc16_table(data, n=None):
    """Pure-Python table CRC (the MicroPython path; also used by the tests)."""
    if n is None:
        n = len(data)
    t = _CRC_TABLE
    c = 0xFFFF
    for i in range(n):
        c = ((c << 8) & 0xFFFF) ^ t[(c >> 8) ^ data[i]]
    return c


_crc_native = None   # a board's CRC loop over (data, n, _CRC_TABLE), where crc_hqx is absent


def use_crc_loop(fn):
    """crc16 runs fn(data, n, table) where binascii has no crc_hqx: a board's assembly
    or viper loop of crc16_table (firmware/accel installs it)."""
    global _crc_native
    _crc_native = fn


def crc16(data, n=None):
    """CRC-16/CCITT-FALSE of data[:n] (n defaults to len(data))."""
    if _crc_hqx is None:
        if _crc_native is not None:
            return _crc_native(data, len(data) if n is None else n, _CRC_TABLE)
        return crc16_table(data, n)
    if n is not None and n != len(data):
        data = memoryview(data)[:n]
    return _crc_hqx(data, 0xFFFF)


# --- sizes API -----------------------------------------------------------------

def payload_size(mtype):
    """Payload bytes of a fixed layout; the maximum (56) for CONFIG and LOG."""
    if not 0 < mtype < _NTYPES:
        raise ValueError("unknown message type")
    return _SIZE[mtype]


def frame_size(mtype, protected=False):
    """Bytes of a frame of mtype; `protected`: as the host sends it authenticated (§9 of
    SPEC.md: the trailer on COMMAND, CONFIG and GOAL)."""
    n = OVERHEAD + payload_size(mtype)
    if protected and (mtype == GOAL or mtype == COMMAND or mtype == CONFIG):
        n += AUTH_TRAILER
    return n


# --- encoder -------------------------------------------------------------------

def encode_into(buf, mtype, src, dst, seq, values):
    """Write one frame into buf (bytearray >= 64); return its length.

    values: the flat tuple of the layout; CONFIG -> (offset, total, data_bytes),
    LOG -> (text_bytes,). seq is taken modulo 2**16. Raises ValueError on a sender
    bug (unknown type, wrong value count, oversize payload, unpackable value).
    Note: MicroPython's struct wraps out-of-range ints silently; CPython raises.
    """
    if not 0 < mtype < _NTYPES:
        raise ValueError("unknown message type")
    if len(values) != _NVAL[mtype]:
        raise ValueError("wrong value count")
    if not (0 <= src <= 255 and 0 <= dst <= 255):
        raise ValueError("bad address")
    fmt = _FMT[mtype]
    try:
        if fmt:
            n = _SIZE[mtype]
            try:
                struct.pack_into(fmt, buf, HEADER_SIZE, *values)
            except OverflowError:   # CPython refuses a float beyond float32's range, which
                struct.pack_into(fmt, buf, HEADER_SIZE, *[_f32(x) for x in values])   # IEEE 754 rounds to inf
        elif mtype == CONFIG:
            data = values[2]
            n = 4 + len(data)
            if n > MAX_PAYLOAD:
                raise ValueError("CONFIG data > 52 bytes")
            struct.pack_into(_CFG_HDR, buf, HEADER_SIZE, values[0], values[1])
            buf[HEADER_SIZE + 4:HEADER_SIZE + n] = data
        else:  # LOG
            data = values[0]
            n = len(data)
            if n > MAX_PAYLOAD:
                raise ValueError("LOG text > 56 bytes")
            buf[HEADER_SIZE:HEADER_SIZE + n] = data
        struct.pack_into(_HDR, buf, 0, mtype, src, dst, seq & 0xFFFF, n)
    except ValueError:
        raise
    except Exception as e:  # struct.error / OverflowError / TypeError on CPython
        raise ValueError("cannot encode: %s" % e)
    end = HEADER_SIZE + n
    c = crc16(buf, end)
    buf[end] = c & 0xFF
    buf[end + 1] = c >> 8
    return end + 2


def _f32(x):
    """x as a float32 field takes it: a float beyond float32's range as +-inf (the IEEE 754
    rounding C and MicroPython give it); anything else unchanged."""
    if isinstance(x, float):
        try:
            struct.pack("<f", x)
        except OverflowError:
            return _INF if x > 0 else -_INF
    return x


_INF = float("inf")


def encode(mtype, src, dst, seq, values):
    """Convenience: a fresh bytes frame (allocates; use encode_into in loops)."""
    buf = bytearray(MAX_FRAME)
    n = encode_into(buf, mtype, src, dst, seq, values)
    return bytes(buf[:n])


# --- decoder -------------------------------------------------------------------
ERR_NONE = const(0)
ERR_SHORT = const(1)    # fewer than 8 bytes (or n > len(frame))
ERR_LENGTH = const(2)   # length byte > 56 or 8 + length != frame length
ERR_CRC = const(3)      # CRC mismatch
ERR_TYPE = const(4)     # unknown message type
ERR_LAYOUT = const(5)   # payload length does not match the type's layout
ERR_NAMES = {ERR_NONE: "none", ERR_SHORT: "short", ERR_LENGTH: "length",
             ERR_CRC: "crc", ERR_TYPE: "type", ERR_LAYOUT: "layout"}
_NERR = 6


# The last bytes frame decoded and its result: a broadcast is one immutable bytes object
# handed to every agent of a process (the in-process loopback bus), so it is checked and
# unpacked once (make bench: 62k -> 41k decodes per 10 simulated seconds, one per frame). Buffers that
# can change (bytearray, memoryview: a board's receive pool) are never cached.
_last = [None, None]


class Decoder:
    """Strict frame decoder. decode() never raises on garbage: it returns None,
    sets last_error, bumps errors[kind] and bad. On success: good += 1 and
    last_error = ERR_NONE. Counters are plain ints (cheap on MicroPython)."""

    def __init__(self):
        self.errors = [0] * _NERR
        self.good = 0
        self.bad = 0
        self.last_error = ERR_NONE

    def reset(self):
        for i in range(_NERR):
            self.errors[i] = 0
        self.good = self.bad = 0
        self.last_error = ERR_NONE

    def _fail(self, kind):
        self.last_error = kind
        self.errors[kind] += 1
        self.bad += 1
        return None

    def decode(self, frame, n=None):
        """frame: bytes/bytearray/memoryview holding exactly one frame in [:n].
        Returns (mtype, src, dst, seq, values) or None."""
        if frame is _last[0] and n is None:
            self.good += 1
            self.last_error = ERR_NONE
            return _last[1]
        size = len(frame)
        if n is None:
            n = size
        if n < OVERHEAD or n > size:
            return self._fail(ERR_SHORT)
        plen = frame[5]
        if plen > MAX_PAYLOAD or n != OVERHEAD + plen:
            return self._fail(ERR_LENGTH)
        end = HEADER_SIZE + plen
        if crc16(frame, end) != (frame[end] | (frame[end + 1] << 8)):
            return self._fail(ERR_CRC)
        t = frame[0]
        if t >= _NTYPES or _FMT[t] is None:
            return self._fail(ERR_TYPE)
        fmt = _FMT[t]
        if fmt:
            if plen != _SIZE[t]:
                return self._fail(ERR_LAYOUT)
            values = struct.unpack_from(fmt, frame, HEADER_SIZE)
        elif t == CONFIG:
            if plen < 4:
                return self._fail(ERR_LAYOUT)
            off, tot = struct.unpack_from(_CFG_HDR, frame, HEADER_SIZE)
            values = (off, tot, bytes(frame[HEADER_SIZE + 4:end]))
        else:  # LOG
            values = (bytes(frame[HEADER_SIZE:end]),)
        self.good += 1
        self.last_error = ERR_NONE
        msg = (t, frame[1], frame[2], frame[3] | (frame[4] << 8), values)
        if type(frame) is bytes and n == size:
            _last[0] = frame
            _last[1] = msg
        return msg


# --- protected frames (SPEC.md §9; AUTOSAR SecOC's secured I-PDU) -----------------
# A protected frame is a frame whose payload is followed by a trailer: the low FV_BYTES
# bytes of the freshness value (FV, u32 LE), then the first MAC_BYTES bytes of
# HMAC-SHA256(key, header + payload + FV low bytes + FV high bytes (u32 LE))
# (bus_protocol/mac.py). len counts the trailer; the CRC covers all of it. The FV is 64
# bits: block << 24 | counter, counter 24 bits per (type, dst) stream of the host; the
# receiver rebuilds the high 32 bits from the last FV it accepted (fv_rebuild).
FV_BYTES = const(4)
MAC_BYTES = const(4)
AUTH_TRAILER = const(8)
COUNTER_BITS = const(24)
CONFIG_MAX_DATA_AUTH = const(44)   # CONFIG_MAX_DATA - AUTH_TRAILER
PROTECTED = (GOAL, COMMAND, CONFIG)   # host -> node types that carry the trailer


def fv_low(frame, n):
    """The FV's low 32 bits a protected frame of n bytes carries."""
    i = n - 2 - AUTH_TRAILER
    return frame[i] | frame[i + 1] << 8 | frame[i + 2] << 16 | frame[i + 3] << 24


def fv_rebuild(last_hi, last_lo, low):
    """The FV's high 32 bits for a received low part, given the last FV accepted on its
    stream (last_hi, last_lo; last_lo -1: none yet): SecOC's rule, the smallest FV above
    the last one with these low bits."""
    return last_hi if low > last_lo else last_hi + 1


_fv_high = bytearray(4)   # the FV's high 32 bits, LE: the MAC input's last 4 bytes


def _mac_into(hm, buf, n_body, fv_hi, out, at):
    """The truncated MAC of buf[:n_body] (header .. FV low bytes) with FV high bits fv_hi,
    written to out[at:at + MAC_BYTES]."""
    b = _fv_high
    b[0] = fv_hi & 0xFF
    b[1] = (fv_hi >> 8) & 0xFF
    b[2] = (fv_hi >> 16) & 0xFF
    b[3] = (fv_hi >> 24) & 0xFF
    d = hm.mac(buf, n_body, b)
    for i in range(MAC_BYTES):
        out[at + i] = d[i]


def protect_into(buf, n, hm, fv_hi, fv_lo):
    """Turn the plain frame buf[:n] into a protected one in place (buf >= n + 8 bytes):
    FV low bits, MAC, new len and CRC; -> its length. hm: a mac.Hmac of the arm's key.
    ValueError if the payload has no room for the trailer."""
    plen = buf[5]
    if plen + AUTH_TRAILER > MAX_PAYLOAD:
        raise ValueError("no room for the authentication trailer")
    end = HEADER_SIZE + plen
    struct.pack_into("<I", buf, end, fv_lo & 0xFFFFFFFF)
    buf[5] = plen + AUTH_TRAILER
    _mac_into(hm, buf, end + FV_BYTES, fv_hi, buf, end + FV_BYTES)
    end += AUTH_TRAILER
    c = crc16(buf, end)
    buf[end] = c & 0xFF
    buf[end + 1] = c >> 8
    return end + 2


def protect(frame, hm, fv_hi, fv_lo):
    """protect_into on a copy: the protected bytes of a plain frame (allocates)."""
    buf = bytearray(MAX_FRAME + AUTH_TRAILER)
    buf[:len(frame)] = frame
    return bytes(buf[:protect_into(buf, len(frame), hm, fv_hi, fv_lo)])


_mac_scratch = bytearray(MAC_BYTES)


def mac_ok(frame, n, hm, fv_hi):
    """The MAC of the protected frame[:n] checks with FV high bits fv_hi (CRC and length
    checked before: the caller's)."""
    at = n - 2 - MAC_BYTES
    _mac_into(hm, frame, at, fv_hi, _mac_scratch, 0)
    d = 0
    for i in range(MAC_BYTES):   # every byte compared: no early exit to time
        d |= _mac_scratch[i] ^ frame[at + i]
    return d == 0


def strip_into(buf, frame, n):
    """The plain frame of the protected frame[:n], written to buf (>= 64 bytes): trailer
    cut, len and CRC made again; -> its length."""
    end = n - 2 - AUTH_TRAILER
    buf[:end] = memoryview(frame)[:end]
    buf[5] = end - HEADER_SIZE
    c = crc16(buf, end)
    buf[end] = c & 0xFF
    buf[end + 1] = c >> 8
    return end + 2


def frame_ok(frame, n):
    """Length and CRC of frame[:n] hold (what Decoder.decode checks first)."""
    if n < OVERHEAD or n > len(frame):
        return False
    end = HEADER_SIZE + frame[5]
    return end + 2 == n and crc16(frame, end) == (frame[end] | (frame[end + 1] << 8))


# --- CPython fast paths ----------------------------------------------------------
# Selected at import where struct.Struct and binascii.crc_hqx exist (CPython; MicroPython
# has neither and keeps the portable encode_into, encode and Decoder.decode above). Each
# fixed layout is one compiled Struct, header and payload packed or unpacked by one call,
# the CRC one C call over a bytes slice (a memoryview slice costs two objects). A frame
# these do not take at once (CONFIG, LOG, anything malformed, any value struct refuses)
# goes the portable way, which gives the same bytes, the same result and the same error
# (tests/test_bus_protocol.py compares the two; make bench: benchmarks/README.md,
# firmware design figures).
try:
    _FRAME = [struct.Struct(_HDR + f[1:]) if f else None for f in _FMT]   # header + payload
    _PACK = [s.pack_into if s else None for s in _FRAME]
    _PACK_BYTES = [s.pack if s else None for s in _FRAME]
    _UNPACK = [struct.Struct(f).unpack_from if f else None for f in _FMT]   # payload
except AttributeError:
    _PACK = None
if _PACK is not None and _crc_hqx is not None:
    _encode_into_portable = encode_into
    _encode_portable = encode
    _decode_portable = Decoder.decode

    def encode_into(buf, mtype, src, dst, seq, values):  # noqa: F811
        if 0 < mtype < _NTYPES and _PACK[mtype] is not None:
            n = _SIZE[mtype]
            try:
                _PACK[mtype](buf, 0, mtype, src, dst, seq & 0xFFFF, n, *values)
            except Exception:   # struct checks the count and the byte ranges: say which
                return _encode_into_portable(buf, mtype, src, dst, seq, values)
            end = HEADER_SIZE + n
            c = _crc_hqx(buf[:end], 0xFFFF)
            buf[end] = c & 0xFF
            buf[end + 1] = c >> 8
            return end + 2
        return _encode_into_portable(buf, mtype, src, dst, seq, values)

    def encode(mtype, src, dst, seq, values):  # noqa: F811
        if 0 < mtype < _NTYPES and _PACK[mtype] is not None:
            try:
                f = _PACK_BYTES[mtype](mtype, src, dst, seq & 0xFFFF, _SIZE[mtype], *values)
            except Exception:
                return _encode_portable(mtype, src, dst, seq, values)
            return f + _crc_hqx(f, 0xFFFF).to_bytes(2, "little")
        return _encode_portable(mtype, src, dst, seq, values)

    def _decode_fast(self, frame, n=None):
        if n is None and type(frame) is bytes:
            if frame is _last[0]:
                self.good += 1
                self.last_error = ERR_NONE
                return _last[1]
            size = len(frame)
            if size > OVERHEAD:
                t = frame[0]
                end = size - 2
                if t < _NTYPES and _UNPACK[t] is not None and frame[5] == _SIZE[t] == end - HEADER_SIZE \
                        and _crc_hqx(frame[:end], 0xFFFF) == frame[end] | (frame[end + 1] << 8):
                    self.good += 1
                    self.last_error = ERR_NONE
                    msg = (t, frame[1], frame[2], frame[3] | (frame[4] << 8), _UNPACK[t](frame, HEADER_SIZE))
                    _last[0] = frame
                    _last[1] = msg
                    return msg
        return _decode_portable(self, frame, n)

    encode_into.__doc__ = _encode_into_portable.__doc__
    encode.__doc__ = _encode_portable.__doc__
    _decode_fast.__doc__ = _decode_portable.__doc__
    Decoder.decode = _decode_fast
