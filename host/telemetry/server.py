"""A live server on the Foxglove WebSocket protocol (subprotocol `foxglove.websocket.v1`,
github.com/foxglove/ws-protocol docs/spec.md), plus the built-in live page over plain
HTTP on the same port (host/telemetry/page/).

Spec parts used: the server sends `serverInfo` and `advertise` (one channel per topic,
JSON encoding, a JSON schema each) as text; a client sends `subscribe`
{subscriptions: [{id, channelId}]} and `unsubscribe` {subscriptionIds}; every message
goes out as a binary frame: opcode 0x01, uint32 subscription id, uint64 timestamp (ns),
the payload (all little-endian).

The publisher never waits: `publish` appends to a bounded inbox (full: the message is
dropped and counted); the server's thread moves the inbox into each subscriber's own
bounded queue (full: dropped and counted for that client) and one task per client
sends from it, so a client that reads slowly or not at all fills only its own queue
and the socket buffers, never the publisher's memory or time."""
import asyncio
import json
import mimetypes
import os
import struct
import threading
import time
from collections import deque
from pathlib import Path

SUBPROTOCOL = "foxglove.websocket.v1"
OP_MESSAGE_DATA = 0x01
PAGE_DIR = Path(__file__).resolve().parent / "page"
INBOX = 4096          # messages between publisher and server thread
CLIENT_QUEUE = 1024   # messages waiting for one client's socket
DRAIN_S = 0.02        # flush(): how often it looks whether all went out

_header = struct.Struct("<BIQ")


def page_files():
    """URL path -> file of the built-in page (index.html at /)."""
    files = {"/": PAGE_DIR / "index.html"}
    for p in PAGE_DIR.rglob("*"):
        if p.is_file() and p.suffix in (".html", ".js", ".css"):
            files["/" + p.relative_to(PAGE_DIR).as_posix()] = p
    return files


class _Client:
    def __init__(self, ws):
        self.ws = ws
        self.subs = {}       # channel id -> subscription id
        self.queue = deque()
        self.wake = asyncio.Event()
        self.dropped = 0
        self.sent = 0
        self.inflight = 0   # the messages being sent

    def unsent(self):
        """Messages taken for this client and not (yet) gone out."""
        return len(self.queue) + self.inflight


class Server:
    """Foxglove ws-protocol server for `schemas` (topic -> (schema name, JSON schema)) on
    host:port (port 0: any free one; `start()` returns the port)."""

    def __init__(self, schemas, host="127.0.0.1", port=8765, name="linkteam", inbox=INBOX,
                 client_queue=CLIENT_QUEUE):
        self.host, self.port, self.name = host, port, name
        self.channels = [{"id": i + 1, "topic": topic, "encoding": "json", "schemaName": sname,
                          "schema": json.dumps(schema), "schemaEncoding": "jsonschema"}
                         for i, (topic, (sname, schema)) in enumerate(schemas.items())]
        self.channel_of = {c["topic"]: c["id"] for c in self.channels}
        self.inbox = deque()
        self.inbox_max = inbox
        self.client_queue = client_queue
        self.clients = set()
        self.published = 0
        self.dropped_inbox = 0
        self.dropped_clients = 0
        self.sent = 0
        self.clients_seen = 0
        self.subscribed = threading.Event()   # a client subscribed to something
        self.files = page_files()
        self._thread = None
        self._loop = None
        self._stop = None
        self._wake = None
        self._idle = False   # the server's thread waits for the inbox to fill (publish wakes it)
        self._ready = threading.Event()
        self._error = None

    # ------------------------------------------------------------ publisher side
    def publish(self, topic, ns, payload):
        """Queue one message; never blocks (a full inbox drops it, counted)."""
        self.published += 1
        if len(self.inbox) >= self.inbox_max:
            self.dropped_inbox += 1
            return
        self.inbox.append((self.channel_of[topic], ns, payload))
        if self._idle:   # the server's thread waits for work: woken once, it takes all there is
            self._idle = False
            self._loop.call_soon_threadsafe(self._wake.set)

    def stats(self):
        """Counts at the end (after `flush`): what a client still holds then is never sent,
        so it counts as dropped (published = sent + dropped, per subscribed client)."""
        clients = list(self.clients)
        dropped_clients = self.dropped_clients + sum(c.dropped + c.unsent() for c in clients)
        return {"address": "%s:%d" % (self.host, self.port), "published": self.published,
                "dropped": self.dropped_inbox + dropped_clients,
                "dropped_inbox": self.dropped_inbox,
                "dropped_clients": dropped_clients,
                "sent": self.sent + sum(c.sent for c in clients), "clients": self.clients_seen}

    def start(self, timeout=10.0):
        self._thread = threading.Thread(target=self._run, name="foxglove-ws", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("live server did not start within %g s" % timeout)
        if self._error:
            raise self._error
        return self.port

    def flush(self, timeout=2.0):
        """Wait (bounded) until the inbox and the clients' queues have gone out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and (self.inbox or any(c.queue for c in list(self.clients))):
            time.sleep(DRAIN_S)

    def stop(self):
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10.0)

    # ------------------------------------------------------------ server thread
    def _run(self):
        try:
            asyncio.run(self._main())
        except Exception as e:  # reported to start()
            self._error = e
            self._ready.set()

    async def _main(self):
        from websockets.asyncio.server import serve
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        async with serve(self._handler, self.host, self.port, subprotocols=[SUBPROTOCOL],
                         process_request=self._http, compression=None, max_size=1 << 20) as srv:
            self.port = srv.sockets[0].getsockname()[1]
            self._ready.set()
            drain = asyncio.create_task(self._drain())
            await self._stop.wait()
            drain.cancel()

    async def _drain(self):
        inbox = self.inbox
        while True:
            self._idle = True   # (before the check below: a message published after it wakes us)
            if not inbox:
                await self._wake.wait()
            self._wake.clear()
            self._idle = False
            while inbox:
                ch, ns, payload = inbox.popleft()
                for c in self.clients:
                    sub = c.subs.get(ch)
                    if sub is None:
                        continue
                    if len(c.queue) >= self.client_queue:
                        c.dropped += 1
                        continue
                    c.queue.append(_header.pack(OP_MESSAGE_DATA, sub, ns) + payload)
                    c.wake.set()

    def _http(self, connection, request):
        """Plain HTTP (no WebSocket upgrade): the built-in page."""
        from websockets.datastructures import Headers
        from websockets.http11 import Response
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        path = request.path.split("?")[0]
        f = self.files.get(path)
        if f is None:
            return Response(404, "Not Found", Headers([("Content-Type", "text/plain"), ("Content-Length", "10")]),
                            b"not found\n")
        body = f.read_bytes()
        ctype = mimetypes.guess_type(f.name)[0] or "application/octet-stream"
        return Response(200, "OK", Headers([("Content-Type", ctype + "; charset=utf-8"),
                                            ("Content-Length", str(len(body))), ("Cache-Control", "no-store")]), body)

    async def _handler(self, ws):
        c = _Client(ws)
        self.clients.add(c)
        self.clients_seen += 1
        sender = asyncio.create_task(self._sender(c))
        try:
            await ws.send(json.dumps({"op": "serverInfo", "name": self.name, "capabilities": [],
                                      "supportedEncodings": [], "metadata": {}, "sessionId": str(os.getpid())}))
            await ws.send(json.dumps({"op": "advertise", "channels": self.channels}))
            async for raw in ws:
                if isinstance(raw, bytes):
                    continue
                try:
                    msg = json.loads(raw)
                except ValueError:
                    continue
                if msg.get("op") == "subscribe":
                    for s in msg.get("subscriptions", ()):
                        c.subs[int(s["channelId"])] = int(s["id"])
                    self.subscribed.set()
                elif msg.get("op") == "unsubscribe":
                    gone = set(msg.get("subscriptionIds", ()))
                    c.subs = {ch: sid for ch, sid in c.subs.items() if sid not in gone}
        except Exception:  # a client that vanishes or misbehaves costs only itself
            pass
        finally:
            sender.cancel()
            self.clients.discard(c)
            self.dropped_clients += c.dropped + c.unsent()
            self.sent += c.sent

    async def _sender(self, c):
        try:
            while True:
                await c.wake.wait()
                c.wake.clear()
                while c.queue:
                    # what waits goes out as one batch of frames: one flow-control wait for
                    # them all (websockets' send_context, as its Connection.send uses it)
                    batch = [c.queue.popleft() for _ in range(len(c.queue))]
                    c.inflight = len(batch)
                    async with c.ws.send_context():
                        for frame in batch:
                            c.ws.protocol.send_binary(frame)
                    c.inflight = 0
                    c.sent += len(batch)
        except Exception:
            pass
