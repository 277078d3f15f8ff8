# UART byte-stream framing: COBS with a 0x00 delimiter (docs/design.md §1; SPEC.md "UART").
# A logical frame (messages.py) of <= 64 bytes becomes <= 65 COBS bytes + 0x00.
# Runs unchanged under CPython and MicroPython; never touches a port.


def cobs_encode_at(data, n, out, o):
    """Consistent Overhead Byte Stuffing of data[:n] into out[o:] (room for at least
    n + n // 254 + 2 bytes), followed by the 0x00 delimiter; returns the end (o + the
    bytes written). The output holds no 0x00 before the delimiter."""
    code_i = o      # where the current block's code byte goes
    code = 1
    o += 1
    for i in range(n):
        b = data[i]
        if b:
            out[o] = b
            o += 1
            code += 1
            if code < 0xFF:
                continue
        # close the block: on a zero byte, or after 254 non-zero bytes
        out[code_i] = code
        code_i = o
        o += 1
        code = 1
    out[code_i] = code
    out[o] = 0
    return o + 1


def cobs_encode_into(data, n, out):
    """cobs_encode_at from out[0]: returns the bytes written."""
    return cobs_encode_at(data, n, out, 0)


def cobs_decode_into(data, i, j, out):
    """COBS-decode data[i:j] (no delimiter) into the bytearray `out`; returns the
    length, or -1 if malformed or longer than `out`. Allocates nothing."""
    return cobs_decode_at(data, i, j, out, 0, len(out))


def cobs_decode_at(data, i, j, out, o, cap):
    """COBS-decode data[i:j] into out[o:o + cap] (a node's pool frame, without a slice);
    returns the length, or -1 if malformed or longer than cap."""
    end_o = o + cap
    start = o
    while i < j:
        code = data[i]
        if code == 0:
            return -1
        i += 1
        end = i + code - 1
        if end > j or o + end - i > end_o:
            return -1
        while i < end:
            out[o] = data[i]
            o += 1
            i += 1
        if code < 0xFF and i < j:
            if o >= end_o:
                return -1
            out[o] = 0
            o += 1
    return o - start


def cobs_encode(data):
    """COBS of `data` (bytes, without the delimiter)."""
    out = bytearray(len(data) + len(data) // 254 + 2)
    return bytes(out[:cobs_encode_into(data, len(data), out) - 1])


def cobs_decode(data):
    """Inverse of cobs_encode (without the delimiter). None if malformed."""
    n = len(data)
    if n == 0:
        return None
    out = bytearray(n)
    k = cobs_decode_into(data, 0, n, out)
    return None if k < 0 else bytes(out[:k])


def uart_frame(frame):
    """Bytes to write to the UART for one logical frame."""
    out = bytearray(len(frame) + len(frame) // 254 + 2)
    return bytes(out[:cobs_encode_into(frame, len(frame), out)])


class Deframer:
    """Splits a UART byte stream into COBS-decoded frames.

    feed(data) -> list of frames (bytes). Malformed COBS and runs longer than maxlen
    without a delimiter are dropped and counted in self.dropped; the rest of an
    overlong run is skipped until the next 0x00 (resync). Memory is one preallocated
    bytearray(maxlen). Empty runs (0x00 0x00, e.g. a wake-up preamble) are ignored.
    """

    def __init__(self, maxlen=80):
        self.maxlen = maxlen
        self._buf = bytearray(maxlen)
        self._mv = memoryview(self._buf)
        self._n = 0
        self._skip = False
        self.dropped = 0
        self.frames = 0

    def reset(self):
        self._n = 0
        self._skip = False

    def feed(self, data):
        out = []
        if isinstance(data, memoryview):
            data = bytes(data)
        i = 0
        n = len(data)
        while i < n:
            j = data.find(b"\x00", i)
            end = n if j < 0 else j
            k = end - i
            if k and not self._skip:
                if self._n + k > self.maxlen:
                    self._skip = True
                    self._n = 0
                    self.dropped += 1
                else:
                    self._mv[self._n:self._n + k] = data[i:end]
                    self._n += k
            if j < 0:
                break
            if self._n and not self._skip:
                f = cobs_decode(self._mv[:self._n])
                if f is None:
                    self.dropped += 1
                else:
                    self.frames += 1
                    out.append(f)
            self._n = 0
            self._skip = False
            i = j + 1
        return out
