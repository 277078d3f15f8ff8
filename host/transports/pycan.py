"""python-can back end (socketcan, slcan, virtual, ...): CAN-FD frames carry a whole
logical frame; on classic CAN (fd=False) frames are fragmented (bus_protocol.can_ids)."""
from collections import deque

from bus_protocol import can_ids
from host.transports.base import Transport


class PythonCanTransport(Transport):
    name = "can"

    def __init__(self, interface="socketcan", channel="can0", fd=True, bitrate=1000000,
                 data_bitrate=5000000, **kwargs):
        super().__init__()
        import can
        self.can = can
        self.fd = fd
        opts = dict(interface=interface, channel=channel, **kwargs)
        if interface not in ("virtual", "udp_multicast"):
            opts["bitrate"] = bitrate
            if fd:
                opts["data_bitrate"] = data_bitrate
        if fd:
            opts["fd"] = True
        self.bus = can.Bus(**opts)
        self.reasm = can_ids.Reassembler()
        self.pending = deque()

    def send(self, frame):
        cid = can_ids.can_id(frame[0], frame[1], frame[2])
        if self.fd:
            self.bus.send(self.can.Message(arbitration_id=cid, is_extended_id=True, is_fd=True,
                                           bitrate_switch=True, data=can_ids.fd_payload(frame)))
        else:
            for part in can_ids.fragment(frame):
                self.bus.send(self.can.Message(arbitration_id=cid, is_extended_id=True, data=part))
        self.sent += 1

    def _recv(self, timeout):
        msg = self.bus.recv(timeout)
        if msg is None:
            return None
        if msg.is_fd or len(msg.data) > 8:
            return bytes(can_ids.strip_padding(bytes(msg.data)))
        f = self.reasm.push(msg.arbitration_id, bytes(msg.data))
        return f

    def close(self):
        self.bus.shutdown()
