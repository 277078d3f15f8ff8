"""The telemetry process of a run (forked by host/telemetry.Telemetry): it reads the
per-tick record's rows as the run hands them over (host/report/run_dir.RunDir), encodes them
(topics.Encoder), writes run.mcap (chunked, zstd) and, with --live, publishes the same
messages on the Foxglove WebSocket protocol (server.Server). A process of its own, so
that encoding and serving never take the control loop's time or memory.

In, one JSON object a line: first the configuration {meta, mcap, live: {host, port}
or null}, then {ring: where the rows are in the shared ring.Ring, or null and rows: a pickle's
path; logs, events, t0_ns, wall} per hand-over of the record,
{wait: s} to wait for a live subscriber, {end: true}. Out: {ready: port}, {subscribed: bool},
{stats: ...}. The end of its input without {end} (the run's process was killed) also
finishes run.mcap.

Live, the per-tick topics, the scene and the bus counters go out at most LIVE_HZ a wall
second each: a run faster than real time (in-process: 10-30x) is decimated evenly in its
own time; every tick of a real-time run's /joints goes. run.mcap keeps every message.
Events, node tables and log lines always go.
"""
import json
import os
import pickle
import signal
import time
import types
from collections import deque

import foxglove
from foxglove.mcap import MCAPCompression, MCAPWriteOptions

from host.telemetry.topics import SCHEMAS, Encoder

# CPU priority: beside a real-time run its nodes and loop go first (nice 19; 10 with a live
# viewer, CFS weight 110 against their 1024, that it not fall far behind); an in-process
# run has no deadline, and a busy machine would starve a low priority until the end of
# the run, which then waits for all that was put off
NICE, NICE_LIVE, NICE_INPROCESS = 19, 10, 0


def own_share(nice):
    """This process in a session of its own, at `nice`. With the kernel's autogroup
    scheduling (sched(7) "The autogroup feature") CPU time is shared between sessions
    first and then between a session's runnable tasks: in the run's session, this process
    would take half the session's share from the control loop whenever both are runnable,
    on any CPU, however little it runs. Its own session's weight is set by the autogroup's
    nice (/proc/self/autogroup); os.nice is what counts without autogroup."""
    os.setsid()
    os.nice(nice)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:   # no autogroup (kernel without it): os.nice is the priority
        pass


# messages a wall second per topic to a live viewer, at most: a plot's or a 3-D view's
# refresh (the bus counters are totals: the latest is what a viewer reads). Each message
# costs the server and every client some 30-50 us of CPU (make bench), the run's machine
# alike where the viewer runs on it.
LIVE_HZ = {"/joints": 30.0, "/tool": 30.0, "/goal": 30.0, "/scene": 30.0, "/bus": 10.0}
LIVE_MARGIN = 1.25   # a real-time run's speed wavers by a few per cent: its ticks all go
REAL_TIME_WHOLE = ("/joints",)   # every message of a run no faster than LIVE_MARGIN x real time
SPEED_S = 1.0


class LiveRate:
    """Which messages of a hand-over go live: per topic of LIVE_HZ, a message at least
    `speed` / (LIVE_HZ * LIVE_MARGIN) of the run's own time after the last one taken
    (REAL_TIME_WHOLE: every message while speed <= LIVE_MARGIN x real time),
    where speed is the run's time per wall second by the run's clock at its hand-overs
    (from t = 0 on), over the last SPEED_S."""

    def __init__(self):
        self.hz = {k: hz * LIVE_MARGIN for k, hz in LIVE_HZ.items()}
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
            whole = speed <= 1e9 * LIVE_MARGIN
            self.stride = {k: 0 if whole and k in REAL_TIME_WHOLE else int(speed / hz) for k, hz in self.hz.items()}

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
CHUNK_BYTES = 1 << 20


class McapSink:
    """run.mcap: one JSON-schema'd channel per topic, zstd-compressed chunks, written by
    foxglove-sdk's MCAP writer (Rust: a fifth of the CPU time of the `mcap` package's pure
    Python writer a message)."""

    def __init__(self, path, schemas, metadata):
        self.ctx = foxglove.Context()   # this writer's own channels, no other sink
        opts = MCAPWriteOptions(compression=MCAPCompression.Zstd, compression_level=ZSTD_LEVEL,
                                compression_threads=0, chunk_size=CHUNK_BYTES)
        self.w = foxglove.open_mcap(path, allow_overwrite=True, context=self.ctx, writer_options=opts)
        self.channel = {topic: foxglove.Channel(topic, message_encoding="json", context=self.ctx,
                                                schema=foxglove.Schema(name=name, encoding="jsonschema",
                                                                       data=json.dumps(schema).encode()))
                        for topic, (name, schema) in schemas.items()}
        self.metadata = metadata   # written with the first rows (t0_ns known then), or at the end
        self.messages = 0

    def write(self, topic, ns, payload):
        self.channel[topic].log(payload, log_time=ns)
        self.messages += 1

    def write_metadata(self):
        if self.metadata is not None:
            self.w.write_metadata("linkteam.run", {k: str(v) for k, v in self.metadata.items()})
            self.metadata = None

    def close(self):
        self.write_metadata()
        self.w.close()


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


def main(inp, out, ring):
    """Serve one run: configuration and hand-overs from `inp`, answers to `out` (files),
    the hand-overs' rows in `ring` (ring.Ring, shared with the run) or in files."""
    def say(**msg):
        out.write(json.dumps(msg) + "\n")
        out.flush()

    cfg = json.loads(inp.readline())
    own_share(NICE_INPROCESS if cfg["meta"].get("mode") == "inprocess" else NICE_LIVE if cfg.get("live") else NICE)
    # the run's process ends the run on Ctrl-C or SIGTERM, and this one ends when its input
    # does, with run.mcap finished
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    meta = cfg["meta"]
    enc = Encoder(meta, obstacle_mover(meta.get("obstacles", [])))
    sink = McapSink(cfg["mcap"], SCHEMAS, {k: v for k, v in meta.items() if k != "obstacles"})
    server = rate = None
    if cfg.get("live"):
        rate = LiveRate()
        from host.telemetry.server import Server
        server = Server(SCHEMAS, cfg["live"]["host"], cfg["live"]["port"])
        server.start()
    say(ready=server.port if server else None)
    handovers, encode_s = 0, 0.0
    for line in inp:
        msg = json.loads(line)
        if "ring" in msg:
            t0 = time.process_time()
            if msg["ring"] is not None:
                rows = ring.take(msg["ring"])
            else:   # the ring was full: a file, written by this run's own process
                with open(msg["rows"], "rb") as f:
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

