"""A minimal Foxglove WebSocket protocol client (github.com/foxglove/ws-protocol
docs/spec.md, subprotocol foxglove.websocket.v1) on `websockets`: for tests and scripts
that take a live run's messages in Python."""
import json
import struct
import time

from websockets.exceptions import ConnectionClosed

from host.telemetry.server import OP_MESSAGE_DATA, SUBPROTOCOL

_header = struct.Struct("<BIQ")


class Client:
    def __init__(self, url, timeout=10.0):
        from websockets.sync.client import connect
        self.ws = connect(url, subprotocols=[SUBPROTOCOL], open_timeout=timeout, max_size=1 << 22).__enter__()
        self.server_info = None
        self.channels = {}   # topic -> channel
        self.subs = {}       # subscription id -> topic
        end = time.monotonic() + timeout
        while not (self.server_info and self.channels) and time.monotonic() < end:
            self._text(self.ws.recv(max(0.01, end - time.monotonic())))

    def _text(self, raw):
        msg = json.loads(raw)
        if msg["op"] == "serverInfo":
            self.server_info = msg
        elif msg["op"] == "advertise":
            for c in msg["channels"]:
                self.channels[c["topic"]] = c

    def subscribe(self, *topics):
        subs = []
        for topic in topics:
            sid = len(self.subs) + 1
            self.subs[sid] = topic
            subs.append({"id": sid, "channelId": self.channels[topic]["id"]})
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))

    def recv(self, timeout):
        """The next message -> (topic, timestamp ns, decoded JSON), or None after `timeout` s
        without one (or once the server closed)."""
        end = time.monotonic() + timeout
        while True:
            try:
                raw = self.ws.recv(max(0.0, end - time.monotonic()))
            except (TimeoutError, ConnectionClosed):
                return None
            if isinstance(raw, str):
                self._text(raw)
                continue
            op, sid, ns = _header.unpack_from(raw)
            if op == OP_MESSAGE_DATA and sid in self.subs:
                return self.subs[sid], ns, json.loads(raw[_header.size:])

    def close(self):
        self.ws.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def stalled(port, channel_ids, host="127.0.0.1", rcvbuf=4096):
    """A viewer that subscribes to `channel_ids` and then never reads (a stalled client,
    for tests and make bench): a raw socket with a small receive buffer, the opening
    handshake (RFC 6455 4.1) and one masked subscribe frame sent, nothing read. -> socket"""
    import socket
    s = socket.create_connection((host, port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.sendall(("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Protocol: %s\r\n\r\n" % SUBPROTOCOL).encode())
    frame = json.dumps({"op": "subscribe", "subscriptions": [
        {"id": i + 1, "channelId": c} for i, c in enumerate(channel_ids)]}).encode()
    # text frame, masked with the key 0 (RFC 6455 5.2-5.3), 16-bit length
    s.sendall(bytes([0x81, 0xFE]) + len(frame).to_bytes(2, "big") + b"\0\0\0\0" + frame)
    return s
