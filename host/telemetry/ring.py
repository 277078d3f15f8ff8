"""The record's rows from the run's process to its telemetry process through memory they
share: an anonymous shared mapping made before the fork is the same memory in both. The
run copies a hand-over's arrays in (one memcpy each) and names them on the pipe; the
telemetry process copies them out and writes in the ring's header how far it has read.
The run never waits: where the ring has no room (the telemetry process behind by more
than its size), `put` says so and the hand-over goes by file instead."""
import mmap
import struct

import numpy as np

SIZE = 4 << 20   # bytes: a second or more of an in-process run's record (~1.8 kB a tick at 14x 120 Hz)
_HEAD = 64       # the header: bytes read so far (uint64, written by the reader only)
_U64 = struct.Struct("<Q")


class Ring:
    def __init__(self, size=None):
        self.size = size or SIZE
        # shared across fork(); its pages made at once (not a page fault each as the ring fills)
        self.mem = mmap.mmap(-1, _HEAD + self.size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_POPULATE", 0))
        self.buf = np.frombuffer(self.mem, np.uint8)
        self.written = 0   # bytes placed so far (the writer's count; the ring's position is it mod size)

    def read_so_far(self):
        return _U64.unpack_from(self.mem, 0)[0]

    def put(self, rows):
        """rows (key -> array) into the ring -> their description for `take` (JSON), or None
        where it has no room for them now."""
        arrays = [(k, np.ascontiguousarray(a)) for k, a in rows.items()]
        start = self.written
        pos = start % self.size
        need = sum(a.nbytes for _, a in arrays)
        if pos + need > self.size:   # in one piece: from the ring's start
            start += self.size - pos
            pos = 0
        end = start + need
        if end - self.read_so_far() > self.size:
            return None
        desc = []
        for k, a in arrays:
            at = _HEAD + pos
            self.buf[at:at + a.nbytes] = a.reshape(-1).view(np.uint8)
            desc.append((k, a.dtype.str, a.shape, pos))
            pos += a.nbytes
        self.written = end
        return {"end": end, "arrays": desc}

    def take(self, desc):
        """The rows that `put` described, copied out; their room is free again."""
        rows = {}
        for k, dtype, shape, pos in desc["arrays"]:
            dtype = np.dtype(dtype)
            at = _HEAD + pos
            n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            rows[k] = self.buf[at:at + n].view(dtype).reshape(shape).copy()
        _U64.pack_into(self.mem, 0, desc["end"])
        return rows
