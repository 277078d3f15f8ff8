"""Host-side bus transports (STYLE: python-can's BusABC). One small base class
(`base.Transport`: send(frame), recv(timeout) -> frame | None, close()); named back ends
imported only when asked for:
    loopback   in-process queues (tests)
    pty        UART byte stream on a pty master fd (desktop processes)
    serial     UART byte stream on a serial port via pyserial (boards, virtual boards)
    udp        CAN-FD medium on loopback UDP (desktop processes, virtual boards)
    can        python-can bus: socketcan, slcan, virtual, ... (boards)"""
import importlib

BACKENDS = {
    "loopback": ("host.transports.base", "LoopbackTransport"),
    "pty": ("host.transports.stream", "FdStreamTransport"),
    "serial": ("host.transports.stream", "SerialTransport"),
    "udp": ("host.transports.udp", "UdpTransport"),
    "can": ("host.transports.pycan", "PythonCanTransport"),
}


def open_transport(name, **kwargs):
    if name not in BACKENDS:
        raise ValueError("unknown transport %r (have %s)" % (name, ", ".join(BACKENDS)))
    mod, cls = BACKENDS[name]
    return getattr(importlib.import_module(mod), cls)(**kwargs)
