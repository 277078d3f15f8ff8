# The message authentication code of protected frames (SPEC.md §9): HMAC-SHA256
# (RFC 2104, FIPS 180-4) truncated to its first MAC_BYTES bytes, as AUTOSAR SecOC
# allows (truncation: RFC 2104 §5, NIST SP 800-107 §5.3.3). hashlib.sha256 is C on
# CPython, on MicroPython's unix port and on the boards (MICROPY_PY_HASHLIB_SHA256), so
# the same code runs everywhere. Published vectors: RFC 4231 (tests/test_auth.py,
# tests/mp/mp_auth.py).
import hashlib

_BLOCK = 64   # SHA-256 block size (bytes)


class Hmac:
    """HMAC-SHA256 with one key, the padded key blocks made once (RFC 2104 §2).
    mac(data, n, extra) -> the 32-byte HMAC of data[:n] + extra (extra: bytes or None).
    Allocation per call: two hash objects and two digests (MicroPython's sha256 has no
    copy(), so the padded key block is hashed again each time)."""

    def __init__(self, key):
        if len(key) > _BLOCK:
            key = hashlib.sha256(key).digest()
        k = bytearray(_BLOCK)
        k[:len(key)] = key
        self._ipad = bytes([b ^ 0x36 for b in k])
        self._opad = bytes([b ^ 0x5C for b in k])

    def mac(self, data, n=None, extra=None):
        h = hashlib.sha256(self._ipad)
        if n is None or n == len(data):
            h.update(data)
        else:
            h.update(memoryview(data)[:n])
        if extra:
            h.update(extra)
        inner = h.digest()
        h = hashlib.sha256(self._opad)
        h.update(inner)
        return h.digest()


def hmac_sha256(key, data):
    """The full HMAC-SHA256 of data under key (the RFC 4231 vectors' form)."""
    return Hmac(key).mac(data)
