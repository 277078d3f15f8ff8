"""Telemetry (host/telemetry): run.mcap read back with the mcap reader against the run's
timeseries.npz; a live processes-mode run taken by a Foxglove ws-protocol client; the
server's bounded queues under a client that never reads; replay."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from host.run import run_scenario
from host.scenario.loader import from_dict, read_toml
from host.telemetry import MCAP_NAME
from host.telemetry.client import Client, stalled

from .conftest import REPO, needs


def cut(name, seconds):
    data, sources = read_toml(REPO / "scenarios" / name)
    data["simulation"]["duration"] = seconds
    return from_dict(data, REPO / "scenarios" / name, sources)


def read_mcap(path):
    from mcap.reader import make_reader
    out = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            assert schema.encoding == "jsonschema" and channel.message_encoding == "json"
            out.setdefault(channel.topic, []).append(json.loads(message.data))
    return summary, out


@pytest.mark.slow
def test_mcap_joints_every_tick_equal_to_the_time_series_and_a_latched_fault_as_event(tmp_path):
    """encoder-dead-link6 cut to 16 s: link 6 latches sensor_implausible at 15.04 s. run.mcap
    holds one /joints message per recorded tick, q, qd and u equal to timeseries.npz to the
    bit, and a /events message for link 6 at the tick its state left RUN, naming the fault."""
    s, out = run_scenario(cut("faults/encoder-dead-link6.toml", 16.0), tmp_path / "run", quiet=True,
                          make_plots=False)
    d = np.load(out / "timeseries.npz")
    summary, topics = read_mcap(out / MCAP_NAME)
    assert any(c.compression == "zstd" for c in summary.chunk_indexes)
    joints = topics["/joints"]
    assert len(joints) == len(d["t"])
    for key in ("t", "q", "qd", "u"):
        assert np.array_equal(np.array([j[key] for j in joints]), d[key]), key
    assert np.array_equal(np.array([j["u_behaviours"]["proxy"] for j in joints]), d["comp"][:, :, 0])
    tool = topics["/tool"]
    assert np.array_equal(np.array([m["p"] for m in tool]), d["p"])
    assert np.array_equal(np.array([g["gains"]["kv"] for g in topics["/goal"]]), d["gains"][:, :, 2])
    first = int(np.nonzero(d["state"][:, 5] != d["state"][0, 5])[0][0])   # link 6 leaves RUN
    ev = [e for e in topics["/events"] if e["link"] == 6 and e["kind"] == "node"]
    assert ev and ev[0]["t"] == d["t"][first]
    assert ev[0]["node"]["braked"] and "sensor_implausible" in ev[0]["node"]["faults"]
    assert {"/nodes", "/bus", "/scene", "/log"} <= set(topics)
    # the periodic topics at their documented rates: /scene 20 Hz, /bus 10 Hz from t = 0
    assert len(topics["/scene"]) == round(d["t"][-1] * 20) + 1
    assert len(topics["/bus"]) == round(d["t"][-1] * 10) + 1
    # /bus: the host's counters as they stood at the message's own tick (the host decodes
    # frames every tick, so they rise from one message to the next)
    good = np.array([b["host_good_frames"] for b in topics["/bus"]])
    assert (np.diff(good) > 0).all() and good[0] > 0, good
    at = np.searchsorted(d["t"], [b["t"] for b in topics["/bus"]])
    for j, key in enumerate(("host_good_frames", "host_bad_frames", "late_assertions")):
        assert np.array_equal([b[key] for b in topics["/bus"]], d["host_bus"][at, j]), key
    assert s["telemetry"]["mcap_messages"] == sum(len(v) for v in topics.values())


def _live_run(scenario_text, tmp_path, *args):
    """`linkteam run` of a scenario file holding `scenario_text` with --live on a free
    port, held until a client subscribes -> (process, port)."""
    sc = tmp_path / "live.toml"
    sc.write_text(scenario_text)
    p = subprocess.Popen([sys.executable, "-m", "host.cli", "run", str(sc), "--out", str(tmp_path / "run"),
                          "--quiet", "--no-plots", "--live", "0", "--live-wait", "60"] + list(args),
                         cwd=str(REPO), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = p.stderr.readline()
    m = re.search(r"live: http://127\.0\.0\.1:(\d+)/", line)
    if not m:
        p.kill()
        p.wait()
        raise AssertionError("no live address: %r %s" % (line, p.stderr.read()[-2000:]))
    return p, int(m.group(1))


def _reap(p):
    """Stop a `_live_run` process still going (the test failed) and close its pipe."""
    if p.poll() is None:
        p.kill()
        p.wait()
    p.stderr.close()


@pytest.mark.slow
@needs("micropython")
def test_live_processes_run_a_foxglove_client_gets_the_joint_messages(tmp_path):
    """A Foxglove ws-protocol client (host/telemetry/client.py on `websockets`, from the
    spec) subscribes to /joints during a 3 s processes-mode run: it receives >= 95 % of
    the run's ticks, and what it decoded equals timeseries.npz."""
    text = 'extends = "%s"\nname = "live"\n[simulation]\nduration = 3.0\n' % (REPO / "scenarios" / "reference.toml")
    p, port = _live_run(text, tmp_path, "--mode", "processes")
    got = []
    try:
        c = Client("ws://127.0.0.1:%d" % port)
        assert c.server_info["name"] == "linkteam"
        c.subscribe("/joints")
        end = time.monotonic() + 120
        while time.monotonic() < end:
            m = c.recv(1.0)
            if m is None:
                if p.poll() is not None:
                    break
                continue
            got.append(m[2])
        c.close()
        assert p.wait(60) == 0, p.stderr.read()[-2000:]
    finally:
        _reap(p)
    d = np.load(tmp_path / "run" / "timeseries.npz")
    assert len(got) >= 0.95 * len(d["t"]), (len(got), len(d["t"]))
    rows = {j["t"]: j for j in got}
    idx = [i for i, t in enumerate(d["t"].tolist()) if t in rows]
    assert len(idx) == len(got)
    assert np.array_equal(np.array([rows[d["t"][i]]["q"] for i in idx]), d["q"][idx])
    assert np.array_equal(np.array([rows[d["t"][i]]["u"] for i in idx]), d["u"][idx])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["telemetry"]["live"]["clients"] == 1


@pytest.mark.slow
def test_message_times_start_at_the_first_tick_not_before_the_wait_for_a_viewer(tmp_path):
    """--live-wait holds the first tick until a client subscribes: every message's time (the
    wall time of t = 0, plus t) comes after the subscription, in run.mcap as live."""
    from mcap.reader import make_reader
    text = 'extends = "%s"\nname = "live"\n[simulation]\nduration = 0.5\n' % (REPO / "scenarios" / "reference.toml")
    p, port = _live_run(text, tmp_path)
    try:
        time.sleep(0.5)   # the run waits for a viewer meanwhile
        subscribed_ns = time.time_ns()
        c = Client("ws://127.0.0.1:%d" % port)
        c.subscribe("/joints")
        first = c.recv(60.0)
        c.close()
        assert p.wait(60) == 0, p.stderr.read()[-2000:]
    finally:
        _reap(p)
    assert first is not None and first[1] >= subscribed_ns
    with open(tmp_path / "run" / MCAP_NAME, "rb") as f:
        times = [m.log_time for _, _, m in make_reader(f).iter_messages()]
    assert times and min(times) >= subscribed_ns


def test_server_a_client_that_never_reads_costs_dropped_messages_not_memory():
    """A client subscribes and then never reads: publish() never blocks, the messages that
    cannot go are dropped and counted, and what the server holds stays within its bounds."""
    from host.telemetry.server import Server
    from host.telemetry.topics import SCHEMAS
    srv = Server(SCHEMAS, "127.0.0.1", 0, client_queue=64)
    port = srv.start()
    s = stalled(port, [srv.channel_of["/joints"]])
    try:
        end = time.monotonic() + 10
        while not srv.subscribed.is_set() and time.monotonic() < end:
            time.sleep(0.01)
        assert srv.subscribed.is_set()
        payload = b"x" * 4000
        n = 20000
        t0 = time.perf_counter()
        for i in range(n):
            srv.publish("/joints", i, payload)
            if i % 500 == 0:
                time.sleep(0.03)   # the server thread moves the inbox on
        publish_s = time.perf_counter() - t0
        srv.flush(1.0)
        st = srv.stats()
        client = next(iter(srv.clients))
        assert len(client.queue) <= 64 and len(srv.inbox) <= srv.inbox_max
        assert st["dropped"] > n // 2 and st["published"] == n
        # every message accounted for: what the stalled client still holds at the end is dropped
        assert st["sent"] + st["dropped"] == n, st
        assert publish_s < n * 1e-3 + 1.2   # never waited for the client (a blocked send would hang)
    finally:
        s.close()
        srv.stop()


def test_replay_plays_a_recorded_run_into_the_server(tmp_path):
    """A recorded run.mcap played at 50x into the server: a client gets its /joints
    messages, equal to the run's time series."""
    from host.telemetry import replay
    from host.telemetry.server import Server
    from host.telemetry.topics import SCHEMAS
    _, out = run_scenario(cut("reference.toml", 1.0), tmp_path / "run", quiet=True, make_plots=False)
    srv = Server(SCHEMAS, "127.0.0.1", 0)
    port = srv.start()
    try:
        c = Client("ws://127.0.0.1:%d" % port)
        c.subscribe("/joints")
        end = time.monotonic() + 10
        while not srv.subscribed.is_set() and time.monotonic() < end:
            time.sleep(0.01)
        n = replay.play(out / MCAP_NAME, srv, speed=50.0)
        got = []
        while True:
            m = c.recv(1.0)
            if m is None:
                break
            got.append(m[2])
        c.close()
    finally:
        srv.stop()
    d = np.load(out / "timeseries.npz")
    assert n > len(d["t"])
    assert np.array_equal(np.array([j["q"] for j in got]), d["q"])


def test_live_rate_takes_every_tick_of_a_real_time_run_and_decimates_a_faster_one():
    """Hand-overs every 0.1 s of the run's wall clock: a 120 Hz run's /joints in real time
    goes live whole (its speed wavering by 10 %); at 28x real time, /joints and /tool go
    out at their LIVE_HZ (x LIVE_MARGIN) a wall second, evenly over the run's time, and
    /events always."""
    from host.telemetry.sidecar import LIVE_HZ, LIVE_MARGIN, LiveRate
    period_ns = 1e9 / 120.0
    for speed in (1.0, 28.0):
        rate = LiveRate()
        rate.start(0)   # t = 0 at the wall's 0 s
        taken = {"/joints": [], "/tool": [], "/events": []}
        k = 0
        for h in range(50):   # 5 wall seconds
            wall = 0.1 * (h + 1)
            ticks = int(round(12 * speed * (1.1 if h % 2 else 0.9)))
            rows = [int(round((k + i) * period_ns)) for i in range(ticks)]
            k += ticks
            rate.pace(rows[-1], wall)
            for ns in rows:
                for topic in taken:
                    if rate.take(topic, ns):
                        taken[topic].append(ns)
        sent = k
        if speed == 1.0:
            assert len(taken["/joints"]) == sent
        else:
            per_s = {t: len(v) / 5.0 for t, v in taken.items()}
            for topic in ("/joints", "/tool"):
                assert 0.8 * LIVE_HZ[topic] * LIVE_MARGIN <= per_s[topic] <= 1.05 * LIVE_HZ[topic] * LIVE_MARGIN, per_s
            gaps = np.diff(taken["/joints"][10:])   # evenly: no burst of neighbours, no long hole
            assert gaps.min() >= 0.5 * np.median(gaps) and gaps.max() <= 2.0 * np.median(gaps)
        assert len(taken["/events"]) == sent


def test_ring_hands_rows_over_and_says_when_it_is_full():
    """ring.Ring: rows come out as they went in; with its room unread it refuses (the
    hand-over goes by file), and what was read is room again, from the ring's start."""
    from host.telemetry.ring import Ring
    rows = {"t": np.arange(50.0), "q": np.arange(30.0).reshape(10, 3), "state": np.array([[1, -1]] * 10)}
    size = sum(a.nbytes for a in rows.values())   # 400 + 240 + 160
    ring = Ring(size + size // 2)
    first = ring.put(rows)
    assert first is not None and ring.put(rows) is None
    got = ring.take(json.loads(json.dumps(first)))   # (it goes through the pipe as JSON)
    assert got.keys() == rows.keys() and all(np.array_equal(got[k], rows[k]) and got[k].dtype == rows[k].dtype
                                             for k in rows)
    again = ring.put({k: v + 1 for k, v in rows.items()})
    assert again is not None and again["arrays"][0][3] == 0   # it did not fit after the first: from the start
    assert np.array_equal(ring.take(json.loads(json.dumps(again)))["q"], rows["q"] + 1)


def test_rows_by_file_where_the_ring_is_full(tmp_path, monkeypatch):
    """A ring too small for any hand-over: every one goes by file, and run.mcap still holds
    one /joints message per tick equal to timeseries.npz."""
    from host.telemetry import ring
    monkeypatch.setattr(ring, "SIZE", 1024)
    s, out = run_scenario(cut("reference.toml", 1.0), tmp_path / "run", quiet=True, make_plots=False)
    d = np.load(out / "timeseries.npz")
    _, topics = read_mcap(out / MCAP_NAME)
    assert s["telemetry"]["handovers_by_file"] == s["telemetry"]["handovers"] > 0
    assert np.array_equal(np.array([j["q"] for j in topics["/joints"]]), d["q"])


def test_telemetry_process_in_a_session_of_its_own_at_its_priority(tmp_path):
    """The telemetry process is not in the run's session (autogroup scheduling would share
    the session's CPU between it and the control loop) and has its priority there: beside
    a real-time run a low one, for its session (/proc/PID/autogroup) and itself."""
    from host.telemetry import Telemetry
    meta = {"n": 2, "t0_ns": time.time_ns(), "scenario": "x", "path": "x", "mode": "processes",
            "control_rate_hz": 120.0, "obstacles": []}
    tel = Telemetry(tmp_path, meta)
    try:
        pid = tel.proc.pid
        tel.wait_for_client(0.0)   # an answer: its configuration read, its priority set
        assert os.getsid(pid) == pid != os.getsid(0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == 19
        group = Path("/proc/%d/autogroup" % pid)
        if group.exists():
            assert group.read_text().split()[-2:] == ["nice", "19"]
    finally:
        stats = tel.close()
    assert "error" not in stats and (tmp_path / MCAP_NAME).exists()
