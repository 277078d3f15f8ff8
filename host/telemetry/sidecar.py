"""The telemetry process of a run (forked by host/telemetry.Telemetry): it reads the
per-tick record's rows as the run hands them over (host/report/run_dir.RunDir), encodes them
(topics.Encoder), writes run.mcap (chunked, zstd) and, with --live, publishes the same
messages on the Foxglove WebSocket protocol (server.Server). A process of its own, so
that encoding and serving never take the control loop's time or memory.

In, one JSON object a line: first the configuration {meta, mcap, live: {host, port}
or null}, then {rows: pickle path, logs, events, t0_ns, wall} per hand-over of the record,
{wait: s} to wait for a live subscriber, {end: true}. Out: {ready: port}, {subscribed: bool},
{stats: ...}. The end of its input without {end} (the run's process was killed) also
finishes run.mcap.

Live, the per-tick topics and the scene go out at most LIVE_HZ a wall second each: a run
faster than real time (in-process: 20-30x) is decimated evenly in its own time, the
joints of a real-time one are not; run.mcap keeps every message. Events, node tables, bus
counters and log lines always go."""
import json
import os
import pickle
import signal
import time
import types
from collections import deque

import mcap.writer
import zstandard
from mcap.writer import CompressionType, Writer

from host.telemetry.topics import SCHEMAS, Encoder

NICE = 19        # run.mcap only
NICE_LIVE = 10   # with --live (CFS weight 110 against the loop's 1024)
# messages a wall second per topic to a live viewer, at most: /joints at the control rate
# (every tick of a real-time run, a faster one no faster than that: None below), the
# rest at a screen's rate
LIVE_HZ = {"/joints": None, "/tool": 60.0, "/goal": 60.0, "/scene": 30.0}
LIVE_MARGIN = 1.25   # a real-time run's speed wavers by a few per cent: its ticks all go
SPEED_S = 1.0


class LiveRate:
    """Which messages of a hand-over go live: per topic of LIVE_HZ, a message at least
    `speed` / (LIVE_HZ * LIVE_MARGIN) of the run's own time after the last one taken,
    where speed is the run's time per wall second by the run's clock at its hand-overs
    (from t = 0 on), over the last SPEED_S."""

    def __init__(self, control_rate_hz):
        self.hz = {k: (hz or control_rate_hz) * LIVE_MARGIN for k, hz in LIVE_HZ.items()}
        self.next_ns = dict.fromkeys(LIVE_HZ, 0)
        self.seen = deque()   # (wall s, log time ns) at the hand-overs of the last SPEED_S
        self.stride = dict.fromkeys(LIVE_HZ, 0)
        self.decimated = 0

    def start(self, t0_ns):
        """The wall time (ns) of t = 0: the first point of the run's speed."""
        self.seen.append((t0_ns * 1e-9, t0_ns))

    def pace(self, last_ns, wall):
        """A hand-over made at `wall` (s, the run's time.time()) reaching `last_ns`."""
        seen = self.seen
        seen.append((wall, last_ns))
        while len(seen) > 2 and wall - seen[1][0] >= SPEED_S:
            seen.popleft()
        if wall > seen[0][0] and last_ns > seen[0][1]:
            speed = (last_ns - seen[0][1]) / (wall - seen[0][0])   # ns of the run a wall s
            self.stride = {k: int(speed / hz) for k, hz in self.hz.items()}

    def take(self, topic, ns):
        nxt = self.next_ns.get(topic)
        if nxt is None:
            return True
        if ns < nxt:
            self.decimated += 1
            return False
        self.next_ns[topic] = ns + self.stride[topic]
        return True


ZSTD_LEVEL = 1   # run.mcap's chunks: a third of level 3's time (the default), no larger


class _Zstd:
    """zstandard as mcap.writer calls it (`compress(data)`), at ZSTD_LEVEL."""

    def __init__(self, level):
        self.compressor = zstandard.ZstdCompressor(level=level)

    def compress(self, data):
        return self.compressor.compress(data)


class McapSink:
    """run.mcap: one JSON-schema'd channel per topic, zstd-compressed chunks."""

    def __init__(self, path, schemas, metadata):
        if hasattr(mcap.writer, "zstandard"):   # (this process writes only run.mcap)
            mcap.writer.zstandard = _Zstd(ZSTD_LEVEL)
        self.f = open(path, "wb")
        self.w = Writer(self.f, chunk_size=1 << 20, compression=CompressionType.ZSTD)
        self.w.start(profile="", library="linkteam")
        self.channel = {}
        for topic, (name, schema) in schemas.items():
            sid = self.w.register_schema(name=name, encoding="jsonschema", data=json.dumps(schema).encode())
            self.channel[topic] = self.w.register_channel(topic=topic, message_encoding="json", schema_id=sid)
        self.metadata = metadata   # written with the first rows (t0_ns known then), or at the end
        self.seq = 0
        self.messages = 0

    def write(self, topic, ns, payload):
        self.seq += 1
        self.w.add_message(channel_id=self.channel[topic], log_time=ns, data=payload, publish_time=ns,
                           sequence=self.seq)
        self.messages += 1

    def write_metadata(self):
        if self.metadata is not None:
            self.w.add_metadata("linkteam.run", {k: str(v) for k, v in self.metadata.items()})
            self.metadata = None

    def close(self):
        self.write_metadata()
        self.w.finish()
        self.f.close()


def obstacle_mover(obstacles):
    """t -> every obstacle's position (host/runners/base.obstacle_paths' blend), or None
    where none moves."""
    if not any(o.get("knot") for o in obstacles):
        return None
    from host.runners.base import obstacle_paths
    paths = obstacle_paths(types.SimpleNamespace(obstacles=obstacles))
    if not any(paths):
        return None
    return lambda t: [p.sample(t).p.tolist() if p is not None else o["position"] for p, o in zip(paths, obstacles)]


def preload(live):
    """Import here, before the fork, what this process will need (a thread of the parent
    importing a module at the moment of the fork would leave the child a half-made one)."""
    if live:
        import host.telemetry.server  # noqa: F401
        import websockets.asyncio.server  # noqa: F401
        import websockets.datastructures  # noqa: F401
        import websockets.http11  # noqa: F401


def main(inp, out):
    """Serve one run: configuration and hand-overs from `inp`, answers to `out` (files)."""
    def say(**msg):
        out.write(json.dumps(msg) + "\n")
        out.flush()

    cfg = json.loads(inp.readline())
    # a low CPU priority: where the machine is busy, the control loop and the nodes run
    # first and telemetry takes what is left (the rows wait in their files meanwhile);
    # live, a little more: a viewer should not fall far behind a real-time run
    os.nice(NICE_LIVE if cfg.get("live") else NICE)
    # Ctrl-C at a terminal reaches the whole process group: the run's process ends the
    # run, and this one ends when its input does, with run.mcap finished
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    meta = cfg["meta"]
    enc = Encoder(meta, obstacle_mover(meta.get("obstacles", [])))
    sink = McapSink(cfg["mcap"], SCHEMAS, {k: v for k, v in meta.items() if k != "obstacles"})
    server = rate = None
    if cfg.get("live"):
        rate = LiveRate(float(meta["control_rate_hz"]))
        from host.telemetry.server import Server
        server = Server(SCHEMAS, cfg["live"]["host"], cfg["live"]["port"])
        server.start()
    say(ready=server.port if server else None)
    handovers, encode_s = 0, 0.0
    for line in inp:
        msg = json.loads(line)
        if "rows" in msg:
            t0 = time.process_time()
            with open(msg["rows"], "rb") as f:   # written by this run's own process
                rows = pickle.load(f)
            os.unlink(msg["rows"])
            if msg.get("t0_ns") is not None and sink.metadata is not None:   # the first tick's wall time
                enc.t0_ns = sink.metadata["t0_ns"] = int(msg["t0_ns"])
                sink.write_metadata()
                if rate is not None:
                    rate.start(enc.t0_ns)
            msgs = enc.side(msg)
            if len(rows.get("t", ())):
                msgs += enc.rows(rows)
            msgs.sort(key=lambda m: m[1])   # stable: a tick's topics keep their order
            if server is not None and msgs:
                rate.pace(msgs[-1][1], msg["wall"])
            for topic, ns, payload in msgs:
                sink.write(topic, ns, payload)
                if server is not None and rate.take(topic, ns):
                    server.publish(topic, ns, payload)
            handovers += 1
            encode_s += time.process_time() - t0
        elif "wait" in msg:
            say(subscribed=server.subscribed.wait(float(msg["wait"])) if server else False)
        elif msg.get("end"):
            break
    sink.close()
    stats = {"mcap_messages": sink.messages, "handovers": handovers, "encode_cpu_s": round(encode_s, 3)}
    if server is not None:
        server.flush()
        stats["live"] = dict(server.stats(), decimated=rate.decimated)
        server.stop()
    say(stats=stats)

