"""Hardware in the loop (DESIGN 13): boards run the agents (flashed with `linkteam
flash`); the host runs RMDAC and, unless --real-plant, the plant, feeding joint states
(JOINT_STATE) to the boards and applying their torques. Wall clock, as in processes.

--ports names the host's end of the bus:
  udp:BASE                    CAN-FD medium on loopback UDP (virtual boards, unix-udp)
  serial:/dev/ttyUSB0[@BAUD]  UART chain, link 1 on this port (pyserial); a ring returns
                              on the same port (its RX wired to link N's down TX)
  can:INTERFACE:CHANNEL       python-can (socketcan:can0, slcan:/dev/ttyACM0, ...)"""
import time

from bus_protocol import messages as m
from host.runners.base import Aborted
from host.runners.processes import drain, make_exchange, realtime_host, reset_links
from host.transports import open_transport


def open_ports(spec, n):
    kind, _, rest = spec.partition(":")
    if kind == "udp":
        return open_transport("udp", n_nodes=n, base_port=int(rest))
    if kind == "serial":
        path, _, baud = rest.partition("@")
        return open_transport("serial", port=path, baud=int(baud or 1000000))
    if kind == "can":
        iface, _, channel = rest.partition(":")
        return open_transport("can", interface=iface, channel=channel)
    raise ValueError("--ports: udp:BASE | serial:PATH[@BAUD] | can:INTERFACE:CHANNEL, not %r" % spec)


def scan(transport, n_max=32, timeout=1.0, rounds=3):
    """Broadcast PING; every node answers STATUS. -> {link: (tick, state, faults, bad, cycle_us)}"""
    dec = m.Decoder()
    found = {}
    for r in range(rounds):
        transport.send(m.encode(m.COMMAND, m.HOST, m.BROADCAST, r, (m.CMD_PING, 0.0)))
        end = time.perf_counter() + timeout / rounds
        while time.perf_counter() < end:
            f = transport.recv(max(0.0, end - time.perf_counter()))
            msg = dec.decode(f) if f is not None else None
            if msg and msg[0] == m.STATUS and 1 <= msg[1] <= n_max:
                found[msg[1]] = msg[4]
    return found


def wait_for_links(transport, n, timeout=15.0):
    end = time.perf_counter() + timeout
    found = {}
    while time.perf_counter() < end:
        found.update(scan(transport, n, timeout=0.5, rounds=1))
        if all(i in found for i in range(1, n + 1)):
            return found
    raise Aborted("links %s did not answer a ping on the bus" % sorted(set(range(1, n + 1)) - set(found)))


def run(loop, progress=None, ports=None, lockstep=False, real_plant=False, **_):
    loop.clock = "synthetic" if lockstep else "wall"
    loop.bus_kind = (ports or "").split(":")[0]
    if not ports:
        loop.status, loop.reason, loop.wall_seconds = "aborted", "--mode hil needs --ports", 0.0
        return loop.status
    tr = open_ports(ports, loop.sc.n)
    try:
        try:
            wait_for_links(tr, loop.sc.n)
        except Aborted as e:
            loop.status, loop.reason, loop.wall_seconds = "aborted", str(e), 0.0
            return loop.status
        reset_links(tr, lockstep)
        if real_plant:   # the boards read their own encoders: send no joint states
            loop.hw.sense_frames = lambda tick: []
        with realtime_host(loop):
            loop.run(make_exchange(loop, tr, lockstep), progress)
        drain(loop, tr)
    finally:
        tr.close()
    return loop.status
