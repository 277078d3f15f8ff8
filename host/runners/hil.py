"""Hardware in the loop (docs/design.md §13): boards run the agents (flashed with `linkteam
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
from host.runners import wallclock
from host.transports import open_transport

HOST_PRIORITY = 10   # SCHED_FIFO where allowed: above every ordinary process


UART_BAUDS = (1000000, 2000000, 921600, 460800, 115200)   # `linkteam scan` on a UART without @BAUD
PORT_FORMS = "udp:BASE | serial:PATH[@BAUD] | can:INTERFACE:CHANNEL"


def parse_ports(spec):
    """--ports text -> (transport name, its keyword arguments but n_nodes); UsageError
    naming what is wrong."""
    from host.errors import UsageError
    kind, _, rest = (spec or "").partition(":")
    try:
        if kind == "udp":
            base = int(rest)
            if not 1024 <= base <= 65000:
                raise ValueError("a UDP base port 1024-65000")
            return "udp", {"base_port": base}
        if kind == "serial" and rest:
            path, _, baud = rest.partition("@")
            baud = int(baud or 1000000)
            if baud <= 0:
                raise ValueError("a positive baud rate")
            return "serial", {"port": path, "baud": baud}
        if kind == "can" and rest:
            iface, _, channel = rest.partition(":")
            return "can", {"interface": iface, "channel": channel}
    except ValueError as e:
        raise UsageError("--ports %r: %s (%s)" % (spec, e, PORT_FORMS)) from None
    raise UsageError("--ports: %s, not %r" % (PORT_FORMS, spec))


def open_ports(spec, n):
    """The host's end of the bus named by --ports (UsageError if it cannot be opened)."""
    from host.errors import UsageError
    kind, kw = parse_ports(spec)
    if kind == "udp":
        kw["n_nodes"] = n
    try:
        return open_transport(kind, **kw)
    except (OSError, ImportError) as e:   # pyserial's SerialException is an OSError
        raise UsageError("--ports %s: cannot open it: %s" % (spec, e)) from None


def scan(transport, n_max=32, timeout=1.0, rounds=3, signer=None):
    """Broadcast PING (signed by `signer`, host/tools/keys.Signer, where the nodes check
    host commands); every node answers STATUS. -> {link: STATUS values}"""
    dec = m.Decoder()
    found = {}
    for r in range(rounds):
        transport.send(wallclock.signed(signer, m.encode(m.COMMAND, m.HOST, m.BROADCAST, r, (m.CMD_PING, 0.0))))
        end = time.perf_counter() + timeout / rounds
        while time.perf_counter() < end:
            f = transport.recv(max(0.0, end - time.perf_counter()))
            msg = dec.decode(f) if f is not None else None
            if msg and msg[0] == m.STATUS and 1 <= msg[1] <= n_max:
                found[msg[1]] = msg[4]
    return found


def wait_for_links(transport, n, timeout=15.0, signer=None):
    end = time.perf_counter() + timeout
    found = {}
    while time.perf_counter() < end:
        found.update(scan(transport, n, timeout=0.5, rounds=1, signer=signer))
        if all(i in found for i in range(1, n + 1)):
            return found
    raise Aborted("links %s did not answer a ping on the bus" % sorted(set(range(1, n + 1)) - set(found)))


# what the summary's figures are taken from (summary.json figures_from)
BOARD_FIGURES = "nodes, bus_cycle_ms, goal_sent_ms, missed_cycles, late_cycles"
PLANT_FIGURES = "e_rms_m, phi_rms_rad, q_rms_rad, e_max_m, collisions, timeseries"
FIGURES_FROM = {
    False: {BOARD_FIGURES: "the boards and the bus",
            PLANT_FIGURES: "the host's simulated plant, fed the boards' torques; the boards read it (JOINT_STATE)"},
    True: {BOARD_FIGURES: "the boards and the bus",
           PLANT_FIGURES: "the host's plant model driven by the boards' torques, not the real arm's encoders"},
}


def run(loop, progress=None, ports=None, lockstep=False, real_plant=False, slowdown=1.0, **_):
    """Run `loop` against flashed boards on `ports`; -> loop.stats. With `real_plant` the
    boards drive a real arm: no joint states from the host, and the schedule does not
    wait for a host that opens a tick late (the arm does not). `slowdown`: wall seconds
    per simulated second (wallclock.Schedule)."""
    stats = loop.stats
    stats.bus = (ports or "").split(":")[0]
    if not ports:
        stats.abort("--mode hil needs --ports")
        return stats
    tr = open_ports(ports, loop.sc.n)
    try:
        try:
            wait_for_links(tr, loop.sc.n, signer=loop.gp.signer)
        except Aborted as e:
            stats.abort(str(e))
            return stats
        wallclock.reset_links(tr, lockstep, loop.gp.signer)
        if real_plant:   # the boards read their own encoders: send no joint states
            loop.hw.sense_frames = lambda tick: []
        stats.figures_from = FIGURES_FROM[bool(real_plant)]
        exchange = wallclock.Exchange(loop.gp, stats, tr,
                                      timeout=stats.wait_with_patience(loop.sc) if lockstep else 5.0)
        if lockstep:
            loop.run(exchange, progress)
        else:
            with wallclock.realtime_host(stats, HOST_PRIORITY):
                loop.run(exchange, progress, wallclock.Schedule(stats, world_waits=not real_plant, slowdown=slowdown))
        wallclock.collect_status(loop.gp, tr)
    finally:
        tr.close()
    return stats
