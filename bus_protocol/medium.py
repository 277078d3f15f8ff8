# Facts of the medium every bus end uses, written once (SPEC.md "Frame sizes", "CAN"):
# who takes a frame by its destination address, and how long a frame occupies the line.
# Runs unchanged under CPython and MicroPython.
from bus_protocol import messages as m
from bus_protocol.can_ids import fd_length

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

UART_BITS_PER_BYTE = const(10)   # start bit, 8 data bits, stop bit
UART_FRAME_EXTRA = const(2)      # COBS code byte + 0x00 delimiter per frame (frames < 254 bytes)


def receivers(dst, src, n, overhear=0):
    """Addresses (0 = host, 1..N = links) that take a frame from `src` to `dst` on a
    shared medium of the host and N links (CAN, its UDP emulation, the in-process
    loopback): the addressee, or every node but the sender for BROADCAST. With `overhear`
    = d (the caller passes it for KINEMATIC frames) links dst+1..dst+d take it too (dst a
    link: K_N for the host is nobody's neighbour packet): their
    filters also let their proximal neighbours' packets in (firmware/neighbours.py). A
    node itself takes a frame when dst is its address or BROADCAST; the firmware's
    per-frame paths (ChainNode._pump, LinkAgent.receive) test that inline: a call costs
    ~700 instructions on a Cortex-M4F."""
    if dst == m.BROADCAST:
        return [a for a in range(n + 1) if a != src]
    if dst > n:
        return []
    if dst == m.HOST:   # K_N for the host: no link's neighbour packet
        overhear = 0
    return [a for a in range(dst, min(n, dst + overhear) + 1) if a != src]


def uart_seconds(nbytes, baud):
    """Line time of `nbytes` on a UART at `baud`."""
    return nbytes * UART_BITS_PER_BYTE / baud


def fd_frame_bits(n):
    """(nominal, data) bits of the CAN-FD frame carrying an n-byte logical frame, no bit
    stuffing: arbitration, ACK and end of frame at the nominal rate (50); at the data
    rate ESI, DLC, the data field padded to fd_length(n), stuff count and CRC-17 (up to
    16 bytes) or CRC-21, CRC delimiter."""
    dlc = fd_length(n)
    return 50, 5 + 8 * dlc + 4 + (17 if dlc <= 16 else 21) + 1


def fd_frame_seconds(n, nominal, data=0):
    """Line time of the CAN-FD frame carrying an n-byte logical frame (data rate =
    nominal when not given)."""
    nom, dat = fd_frame_bits(n)
    return nom / nominal + dat / (data or nominal)
