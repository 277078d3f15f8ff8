# A node's side of the host services (NYMPH, docs/design.md §11): the host serves what a
# node asks for without ever holding up the node's control cycle.
#   LogQueue:   print/log requests wait in a bounded queue and leave one LOG frame per
#               cycle, after the torque; a request that finds the queue full is dropped
#               and counted, and the next frame out says how many were lost.
#   FinishLog:  the node's completion history: when it finished each cycle (µs from its
#               SYNC to its TORQUE, and its clock then), 12 cycles to a TIMING frame, so
#               the host can tell which node was on the critical path of every cycle.
from bus_protocol import messages as m

try:
    import micropython
    from micropython import const
except ImportError:  # CPython
    from firmware.hal import micropython
    const = micropython.const

LOG_SLOTS = 4
# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----
TIMING_SLOTS = const(12)
# ---- end of layout ----
NOT_FINISHED = 0xFFFF   # a cycle the node did not act in (or took over 65 ms)


class LogQueue:
    def __init__(self, slots=LOG_SLOTS):
        self._q = [None] * slots
        self._head = 0
        self._n = 0
        self.dropped = 0     # requests lost to a full queue, in all
        self._unsaid = 0     # ... not yet reported to the host
        self.waiting = 0     # requests queued + 1 while a drop is unsaid: pump() has work

    def put(self, text):
        q = self._q
        if self._n == len(q):
            self.dropped += 1
            self._unsaid += 1
            self.waiting = self._n + 1
            return False
        q[(self._head + self._n) % len(q)] = text
        self._n += 1
        self.waiting = self._n + (self._unsaid > 0)
        return True

    def pump(self, agent):
        """Send the oldest request (at most one frame): called where the cycle is over."""
        if self._unsaid:
            text = "[%d log lines dropped]" % self._unsaid
            self._unsaid = 0
        elif self._n:
            text = self._q[self._head]
            self._q[self._head] = None
            self._head = (self._head + 1) % len(self._q)
            self._n -= 1
        else:
            return False
        self.waiting = self._n + (self._unsaid > 0)
        agent.send(m.LOG, m.HOST, (text.encode()[:m.LOG_MAX_TEXT],))
        return True


@micropython.native   # (firmware/agent.py: the hot path's helpers)
def record(log, tick, cycle_us, t_finish):
    """FinishLog.record: the cycle's finish, once a cycle (a module function: from native
    code a method call costs ~900 instructions on a Cortex-M4F, this one's ~300), where
    the TIMING frame that reports this tick holds it."""
    i = (tick - log._first) % TIMING_SLOTS
    log._tick[i] = tick
    log._us[i] = cycle_us if 0 <= cycle_us < NOT_FINISHED else NOT_FINISHED
    log._frame[1 + TIMING_SLOTS + i] = t_finish & 0xFFFF


class FinishLog:
    """Per cycle: µs from the node's SYNC to its TORQUE, and the low 16 bits of its clock
    then (comparable across nodes where they share a clock, as processes on one host do)."""

    def __init__(self, link):
        self.slot = (link + TIMING_SLOTS // 2) % TIMING_SLOTS   # away from the STATUS slot
        # the TIMING values (first tick, cycle_us x 12, finish clock x 12), the clocks
        # recorded in place: a TIMING frame's first tick is slot + 1 modulo 12, so each
        # tick has its place in it, in _us and _tick too (no list rebuilt for a frame:
        # make mcu-bench, a cycle that sends TIMING)
        self._frame = [0] + [NOT_FINISHED] * TIMING_SLOTS + [0] * TIMING_SLOTS
        self._first = self.slot + 1
        self._us = [NOT_FINISHED] * TIMING_SLOTS
        self._tick = [-1] * TIMING_SLOTS   # the tick each place holds

    record = record

    def pump(self, agent, tick):
        """At the node's slot: a TIMING frame for ticks tick-11..tick (a cycle it did not
        act in: NOT_FINISHED)."""
        if tick % TIMING_SLOTS != self.slot or tick < TIMING_SLOTS - 1:
            return False
        base = tick - TIMING_SLOTS + 1
        v, us, held = self._frame, self._us, self._tick
        v[0] = base & 0xFFFFFFFF
        for i in range(TIMING_SLOTS):
            v[1 + i] = us[i] if held[i] == base + i else NOT_FINISHED
        agent.send(m.TIMING, m.HOST, v)
        return True
