"""Host transports: python-can (virtual bus, CAN-FD and fragmented classic CAN) and the
serial back end against a real MicroPython node on a pty."""
import json
import os
import pty
import subprocess
import tty

from bus_protocol import messages as m
from host.runners.hil import open_ports, scan
from host.scenario.loader import load
from host.transports import open_transport

from .conftest import MICROPYTHON, REPO, needs


def test_python_can_virtual_fd_and_classic():
    for fd in (True, False):
        a = open_transport("can", interface="virtual", channel="lt-%d" % fd, fd=fd)
        b = open_transport("can", interface="virtual", channel="lt-%d" % fd, fd=fd)
        try:
            f = m.encode(m.KINEMATIC, 3, 4, 7, (9,) + (0.5,) * 13)
            a.send(f)
            assert b.recv(1.0) == f
        finally:
            a.close()
            b.close()


@needs("micropython")
def test_serial_transport_talks_to_a_micropython_node(tmp_path):
    """The HIL serial path: pyserial on a pty, a real MicroPython ChainNode at the far end."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    os.set_blocking(master, False)
    cfg = dict(load(REPO / "scenarios" / "hil2.toml").agent_configs[0])
    cfg["n_links"] = 1
    cfg.update({"board": "unix-pty", "bus": {"up": "stdin", "down": None}, "idle_exit_ms": 5000})
    path = tmp_path / "link1.json"
    path.write_text(json.dumps(cfg))
    code = "import sys\nsys.path.insert(0, %r)\nfrom firmware import main\nmain.run(%r)\n" % (str(REPO), str(path))
    p = subprocess.Popen([MICROPYTHON, "-c", code], stdin=master, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    os.close(master)
    tr = open_ports("serial:%s@1000000" % os.ttyname(slave), 1)
    try:
        found = scan(tr, 4, timeout=2.0, rounds=4)
        assert list(found) == [1]
    finally:
        tr.close()
        os.close(slave)
        p.kill()
        p.wait()


def test_udp_port_ranges_stay_below_the_ephemeral_range():
    """The nodes' loopback-UDP addresses are chosen where the kernel never puts a socket of
    its own choosing (/proc/sys/net/ipv4/ip_local_port_range), and are free when chosen."""
    import socket

    from host.transports.udp import ephemeral_ports, free_base_port
    lo = ephemeral_ports()[0]
    for _ in range(20):
        base = free_base_port(21)
        assert 10000 <= base and base + 21 < lo
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", base))
    finally:
        s.close()
