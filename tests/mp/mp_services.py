# The node side of the host services (firmware/services.py) on a stub agent, runnable
# under MicroPython and CPython alike: prints every frame sent, decoded.

from bus_protocol import messages as m
from firmware import services


class Stub:
    def __init__(self):
        self.out = []
        self.dec = m.Decoder()

    def send(self, mtype, dst, values):
        f = m.encode(mtype, 3, dst, 0, values)
        self.out.append(self.dec.decode(f))


def run():
    a = Stub()
    q = services.LogQueue()
    kept = [q.put("line %d" % i) for i in range(6)]
    print("kept", kept, "dropped", q.dropped)
    while q.pump(a):
        pass
    fl = services.FinishLog(3)
    for tick in range(30):
        if tick != 20:   # the node did not act in cycle 20
            fl.record(tick, 1000 + tick, 65000 + 100 * tick)
        fl.pump(a, tick)
    fl = services.FinishLog(13)   # TIMING at tick % 12 == 7
    for tick in (156, 175, 163):  # the ticks go back (a late SYNC): 156's record stays
        fl.record(tick, 1000 + tick, tick)
        fl.pump(a, tick)
    for msg in a.out:
        print(m.NAMES[msg[0]], msg[4])


run()
