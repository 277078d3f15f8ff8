# Replays one link agent's received frames (recorded from a CPython run) into a fresh
# LinkAgent, under MicroPython or CPython alike. Input on stdin: a JSON line with the
# agent's config, then one hex frame a line. Output: every frame the agent sent (hex),
# then the agent's load estimate if it has one ("theta ...").
import json
import sys

from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL


def main():
    cfg = json.loads(sys.stdin.readline())
    sent = []

    def send(buf, n):
        sent.append(bytes(buf[:n]))

    agent = LinkAgent(cfg, SimHAL(send))
    for line in sys.stdin:
        line = line.strip()
        if line:
            agent.receive(bytes.fromhex(line))
    for f in sent:
        print(f.hex())
    ident = agent.ident
    if ident is not None and ident.est is not None:
        print("theta " + " ".join(repr(x) for x in ident.est.theta))
        print("updates %d incomplete %d" % (ident.est.updates, ident.est.incomplete))


main()
