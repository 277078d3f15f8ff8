# UART byte-stream framing: COBS with a 0x00 delimiter (DESIGN §1; SPEC.md "UART").
# A logical frame (messages.py) of <= 64 bytes becomes <= 65 COBS bytes + 0x00.
# Runs unchanged under CPython and MicroPython; never touches a port.


def cobs_encode(data):
    """Consistent Overhead Byte Stuffing: output contains no 0x00 byte."""
    out = bytearray(len(data) + len(data) // 254 + 1)
    code_i = 0      # where the current block's code byte goes
    code = 1
    o = 1
    for b in data:
        if b:
            out[o] = b
            o += 1
            code += 1
            if code < 0xFF:
                continue
        # close the block: on a zero byte, or after 254 non-zero bytes
        out[code_i] = code
        code_i = o
        if o == len(out):
            out.append(0)
        o += 1
        code = 1
    out[code_i] = code
    return bytes(out[:o])


def cobs_decode(data):
    """Inverse of cobs_encode (without the delimiter). None if malformed."""
    n = len(data)
    if n == 0:
        return None
    out = bytearray()
    i = 0
    while i < n:
        code = data[i]
        if code == 0:
            return None
        i += 1
        end = i + code - 1
        if end > n:
            return None
        out += data[i:end]
        i = end
        if code < 0xFF and i < n:
            out.append(0)
    return bytes(out)


def uart_frame(frame):
    """Bytes to write to the UART for one logical frame."""
    return cobs_encode(frame) + b"\x00"


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
