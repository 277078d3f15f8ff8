"""Protected host commands (bus_protocol/SPEC.md §9, firmware/auth.py, host/tools/keys.py):
the MAC's published vectors and the SPEC's frame vectors under CPython and the unix port,
a node's check through restarts, keys on disk, and runs that carry and report it."""
import hashlib
import hmac
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bus_protocol import messages as m
from firmware import auth
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL
from host.tools import keys
from tests.conftest import needs, same_under_both

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "bus_protocol" / "SPEC.md").read_text()
KEY = bytes(range(32))

# RFC 4231 §4.2, §4.3, §4.7: HMAC-SHA-256 of test cases 1, 2 and 6
RFC4231 = {"1": "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
           "2": "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
           "6": "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"}
# and §4.4-4.6, §4.8: cases 3, 4, 5 (published truncated to 128 bits) and 7
RFC4231_MORE = {"3": "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
                "4": "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
                "5": "a3b6167473100ee06e0c796c2955552b",
                "7": "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"}


def assert_native_mac(out):
    """tests/mp/mp_mac_native.py's output (CPython, the unix port, a board): linkcore's
    HMAC-SHA256 makes RFC 4231's seven digests, equals bus_protocol/mac.py on all 200
    random cases, and a node's check on it takes and refuses what the pure one does: of
    its 60 genuine frames all, 12 flipped + 9 under another key as mac, its 15 replays,
    its 6 without a trailer."""
    lines = [ln for ln in out.splitlines() if ln.startswith("native")]
    assert lines[0] == "native True", "linkcore without the MAC"
    want = dict(RFC4231, **RFC4231_MORE)
    got = {ln.split()[2]: ln.split()[3] for ln in lines if ln.startswith("native rfc4231 ")}
    assert sorted(got) == sorted(want) and all(got[c].startswith(want[c]) for c in want), got
    assert "native random 200 of 200" in lines
    assert "native guard True True 60 (21, 15, 6) True" in lines


def test_native_mac_is_the_reference_under_cpython():
    """linkcore for CPython (linkcore_cpython.c, make setup) carries the MAC a node checks
    with: the same as bus_protocol/mac.py (hashlib), RFC 4231 and random cases."""
    pytest.importorskip("linkcore", reason="linkcore for CPython not built (make setup)")
    r = subprocess.run([sys.executable, str(ROOT / "tests" / "mp" / "mp_mac_native.py")], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert_native_mac(r.stdout)


@pytest.fixture(scope="module")
def lines():
    out = {}
    for line in same_under_both("mp_auth.py"):
        f = line.split()
        out[" ".join(f[:2])] = f[2:]
    return out


def test_mac_matches_rfc4231_under_cpython_and_micropython(lines):
    for case, digest in RFC4231.items():
        assert lines["rfc4231 " + case] == [digest]


def spec_vector(name):
    return bytes.fromhex(re.search(r"^\s+vector %s ([0-9a-f]+)$" % name, SPEC, re.M).group(1))


def by_hand(plain, fv):
    """SPEC §9 laid out from the text with Python's hmac, not the codec."""
    body = bytearray(plain[:-2])
    body[5] += 8
    body += struct.pack("<I", fv & 0xFFFFFFFF)
    mac = hmac.new(KEY, bytes(body) + struct.pack("<I", fv >> 32), hashlib.sha256).digest()[:4]
    frame = bytes(body) + mac
    return frame + struct.pack("<H", m.crc16(frame))


def test_spec_vectors_are_hmac_over_the_documented_bytes_and_the_codec_makes_them(lines):
    release = m.encode(m.COMMAND, m.HOST, 5, 7, (m.CMD_RELEASE, 0.0))
    goal = m.encode(m.GOAL, m.HOST, m.BROADCAST, 300, (42, 0, 0.5, 0.25, -1.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0))
    for name, plain, fv in (("release", release, 1 << 24 | 2), ("goal", goal, 0x1234 << 24 | 0xABCDE)):
        v = spec_vector(name)
        assert v == by_hand(plain, fv)
        assert lines["vector " + name] == [v.hex()]       # the codec, under both interpreters
        assert m.Decoder().decode(v) is None              # a plain decoder does not take it


def node(lines, step):
    state, faults, counts, accepted, bad = lines["node " + step]
    return int(state), int(faults), tuple(int(c) for c in counts.split(",")), int(accepted), int(bad)


BRAKED = 2


def test_node_acts_only_on_fresh_frames_with_a_good_mac(lines):
    assert node(lines, "brake")[:2] == (BRAKED, 1)
    # forged (another key), plain, altered with a good CRC: each refused and counted
    assert node(lines, "forged_release")[:3] == (BRAKED, 1, (1, 0, 0))
    assert node(lines, "plain_release")[:3] == (BRAKED, 1, (1, 0, 1))
    assert node(lines, "altered_release")[:3] == (BRAKED, 1, (2, 0, 1))
    assert node(lines, "release")[:2] == (0, 0)
    # recorded genuine frames replayed: refused as replays
    assert node(lines, "replayed_brake")[:3] == (0, 0, (2, 1, 1))
    assert node(lines, "replayed_release")[:3] == (BRAKED, 1, (2, 2, 1))
    assert node(lines, "broadcast_release")[:2] == (0, 0)   # its own stream
    assert lines["store 1"] == []


def test_after_a_node_restart_nothing_from_before_is_taken(lines):
    assert node(lines, "restart_old_block")[:3] == (0, 0, (0, 1, 0))
    assert node(lines, "restart_new_block")[:2] == (BRAKED, 1)
    assert node(lines, "restart_replayed_release")[:3] == (BRAKED, 1, (0, 2, 0))
    assert node(lines, "restart_release")[:2] == (0, 0)
    assert node(lines, "host_restarts")[:2] == (BRAKED, 1)   # two blocks ahead: rebuilt
    assert lines["store 4"] == []
    # a corrupt frame is noise for the decoder, not an authentication failure
    assert node(lines, "noise")[2:] == ((0, 2, 0), 3, 1)


def test_a_node_without_a_key_refuses_to_run(lines):
    assert lines["nokey 2"] == [str(auth.states.F_NO_KEY)]
    assert lines["unauthenticated None"] == ["0"]


def test_keys_create_rotate_are_private_and_load_refuses_a_readable_file(tmp_path):
    path = str(tmp_path / "arm.key")
    keys.create(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    k1 = keys.load(path)
    assert len(k1) == 32
    with pytest.raises(keys.KeyError_):
        keys.create(path)                       # never over an existing key
    keys.create(path, rotate=True)
    assert os.stat(path).st_mode & 0o777 == 0o600 and keys.load(path) != k1
    os.chmod(path, 0o644)
    with pytest.raises(keys.KeyError_, match="chmod 600"):
        keys.load(path)
    with pytest.raises(keys.KeyError_):
        keys.create(str(tmp_path / "none.key"), rotate=True)


def make_node(key, floor, store):
    a = LinkAgent({"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0,
                   "behaviours": {"proxy": {"weight": 1.0}, "brake": {"kq": 2000.0, "kw": 40.0}}},
                  SimHAL(lambda b, n: None))
    auth.guard(a, {"auth": {"key": key.hex(), "floor": floor}}, store)
    return a


def test_host_restart_opens_a_block_nodes_take_and_old_frames_are_refused(tmp_path):
    path = str(tmp_path / "arm.key")
    keys.create(path)
    key = keys.load(path)
    host = keys.Signer(key, keys.BlockState(path + ".fv"))
    store = auth.MemBlock()
    a = make_node(key, host.block, store)
    brake = host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0)))
    release = host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_RELEASE, 0.0)))
    a.receive(brake)
    a.receive(release)
    assert a.safety.faults == 0 and a.auth.accepted == 2
    host = keys.Signer(key, keys.BlockState(path + ".fv"))   # the host restarts
    assert host.block == 1
    a.receive(host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0))))
    assert a.safety.faults == 1
    a.receive(release)                                       # recorded before the restart
    assert a.safety.faults == 1 and a.auth.counts() == (0, 1, 0)
    # the node restarts: the host's current block is refused until the host opens a new one
    a = make_node(key, 0, store)
    a.receive(host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0))))
    assert a.safety.faults == 0 and a.auth.counts() == (0, 1, 0)
    host.new_block()
    a.receive(host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0))))
    assert a.safety.faults == 1


def test_summary_reports_authentication_and_no_key_reaches_the_run_directory(tmp_path):
    from host.run import run_scenario
    from host.scenario.loader import load
    sc = load(ROOT / "scenarios" / "reference.toml")
    sc.duration = 0.5
    path = str(tmp_path / "arm.key")
    keys.create(path)
    sc.key_file = path
    s, out = run_scenario(sc, tmp_path / "run", quiet=True, make_plots=False)
    assert s["status"] == "ok"
    a = s["auth"]
    assert a["mode"] == "authenticated" and a["key"] == "file" and a["mac"] == "HMAC-SHA256/32"
    assert a["frames_signed"] >= round(0.5 * sc.control_rate_hz)   # a GOAL every tick at least
    assert a["auth_rejected"] == {"mac": 0, "replay": 0, "plain": 0}
    key_hex = keys.load(path).hex()
    for f in Path(out).rglob("*"):
        if f.is_file():
            assert key_hex.encode() not in f.read_bytes(), f
    sc.auth = "unauthenticated"
    s, _ = run_scenario(sc, tmp_path / "plain", quiet=True, make_plots=False)
    assert s["status"] == "ok" and s["auth"] == {"mode": "unauthenticated"}
    assert json.loads((tmp_path / "plain" / "summary.json").read_text())["auth"]["mode"] == "unauthenticated"


def test_commands_mode_sends_goal_plain_and_still_protects_commands(tmp_path):
    run_auth = keys.RunAuth("commands")
    goal = m.encode(m.GOAL, m.HOST, m.BROADCAST, 0, (1, 0) + (0.0,) * 9)
    assert run_auth.signer.sign(goal) == goal
    brake = run_auth.signer.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0)))
    assert len(brake) == m.frame_size(m.COMMAND, True) == m.frame_size(m.COMMAND) + 8
    a = LinkAgent({"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0},
                  SimHAL(lambda b, n: None))
    auth.guard(a, {"auth": run_auth.node_auth()}, auth.MemBlock())
    a.receive(goal)
    a.receive(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0)))   # plain: refused
    assert a.safety.faults == 0 and a.auth.counts() == (0, 0, 1) and a.auth.accepted == 0
    a.receive(brake)
    assert a.safety.faults == 1


def test_a_command_claiming_another_sender_is_judged_as_the_hosts():
    """src is a byte anyone can write: a plain COMMAND, GOAL or CONFIG naming a node as its
    sender is refused like one naming the host, never acted on."""
    a = make_node(KEY, 0, auth.MemBlock())
    for src in (2, 0x7F):
        a.receive(m.encode(m.COMMAND, src, 1, 0, (m.CMD_BRAKE, 0.0)))
        assert a.safety.faults == 0
    a.receive(m.encode(m.GOAL, 2, m.BROADCAST, 0, (0, 0) + (0.0,) * 9))
    assert a.auth.counts() == (0, 0, 3) and a.auth.accepted == 0
    host = keys.Signer(KEY)
    a.receive(host.sign(m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_BRAKE, 0.0))))
    assert a.safety.faults == 1
    a.receive(m.encode(m.COMMAND, 3, 1, 1, (m.CMD_RELEASE, 0.0)))   # a forged RELEASE
    assert a.safety.faults == 1 and a.auth.counts() == (0, 0, 4)


def test_firmware_constants_agree_with_the_protocol():
    assert (auth._OVERHEAD, auth._HEADER, auth._TRAILER, auth._COUNTER_BITS) == (
        m.OVERHEAD, m.HEADER_SIZE, m.AUTH_TRAILER, m.COUNTER_BITS)
    assert (auth._BROADCAST, auth._GOAL, auth._COMMAND, auth._CONFIG) == (
        m.BROADCAST, m.GOAL, m.COMMAND, m.CONFIG)
    assert m.PROTECTED == (m.GOAL, m.COMMAND, m.CONFIG)   # Guard's stream order
    assert m.CONFIG_MAX_DATA_AUTH == m.CONFIG_MAX_DATA - m.AUTH_TRAILER


def test_budget_counts_the_trailer_and_the_measured_check():
    from host.tools import budget, hop_compute
    res = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    for board in hop_compute.BOARDS:
        plain = hop_compute.board_compute(res, board)
        authed = hop_compute.board_compute(res, board, auth=True)
        assert authed["goal_us"] > plain["goal_us"]
        for bus in ("canfd:1000000/5000000", "uart:2000000"):
            p = budget.simulate(10, bus, "real", plain, "ring")
            a = budget.simulate(10, bus, "real", authed, "ring", auth=True)
            assert a["bytes_per_cycle"] == p["bytes_per_cycle"] + m.AUTH_TRAILER   # one GOAL a cycle
            assert a["max_rate_hz"] < p["max_rate_hz"]


@needs("micropython")
def test_fuzz_accepts_no_forgery_under_both_interpreters():
    """benchmarks/mp_fuzz_auth.py, a short run (make bench runs 10^6 and 10^5 frames)."""
    import subprocess
    from tests.conftest import MICROPYTHON
    outs = []
    for interp in (MICROPYTHON, os.environ.get("PYTHON", None) or __import__("sys").executable):
        r = subprocess.run([interp, str(ROOT / "benchmarks" / "mp_fuzz_auth.py"), "3000", "5"],
                           capture_output=True, text=True, cwd=str(ROOT), timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(r.stdout)
    assert outs[0] == outs[1] and " forgeries 0 " in outs[0]
    f = outs[0].split()
    assert int(f[f.index("genuine") + 1]) > 500   # genuine frames went through, fresh


def test_rejection_counts_wrap_as_status_carries_them():
    a = LinkAgent({"link": 1, "n_links": 1, "dh": {"type": "revolute", "a": 1.0}, "u_sat": 100.0},
                  SimHAL(lambda b, n: None))
    g = auth.guard(a, {"auth": {"key": KEY.hex()}})
    plain = m.encode(m.COMMAND, m.HOST, 1, 0, (m.CMD_RELEASE, 0.0))
    for _ in range(65537):
        a.receive(plain)
    assert g.counts() == (0, 0, 1)
    a.send_status()   # the STATUS frame takes them


def test_a_forged_goal_for_the_coming_tick_ahead_of_the_hosts_holds_nothing_on_a_ring():
    """UART ring (firmware/node.py _goal_wave): a forged GOAL for tick 6, plain and under
    another key, in the same write just ahead of the host's: every link still acts on the
    host's GOAL of tick 6, and refuses and counts both forgeries (tests/mp/mp_ring_forged_goal.py,
    under CPython and the unix port)."""
    lines = same_under_both("mp_ring_forged_goal.py")
    assert sorted(x for x in lines if x.startswith("T ")) == sorted(
        "T %d %d 1" % (link, tick) for tick in (5, 6) for link in (1, 2, 3))
    assert sorted(x for x in lines if x.startswith("A ")) == ["A %d 1 0 1" % link for link in (1, 2, 3)]


def test_a_new_run_on_a_ring_takes_its_first_goal_whatever_tick_the_last_run_held():
    """A ring node holds the low byte of the tick whose GOAL passed (node.py _goal_wave);
    COMMAND RESET (a new run on boards that stayed powered) lets go of it, so a run that
    ended on tick 256 (low byte 0) does not leave the next run's tick-0 GOAL taken for the
    other wave's copy: every link sends its torque for ticks 0 and 1."""
    from bus_protocol import framing
    from firmware.hal.mem import settle
    from tests.mp.mp_ring_goal import N, ring

    def torques_after_reset(first):
        host, nodes, ret = ring(None)

        def send(frames, both=False):
            b = b"".join(framing.uart_frame(f) for f in frames)
            host.write(b)
            if both:   # the ring's second goal wave, into the tip
                ret.write(b)
            settle(nodes)

        def tick(t):
            send([m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (t, 0.1 * i, 0.0, 0) + (0.0,) * 6) for i in range(N)]
                 + [m.encode(m.SYNC, m.HOST, m.BROADCAST, 7, (t,)), m.encode(m.KINEMATIC, m.HOST, 1, 8, (t, 1.0) + (0.0,) * 12)])
            send([m.encode(m.GOAL, m.HOST, m.BROADCAST, 9, (t, 0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0))], both=True)
        for t in first:
            tick(t)
        ret.rx = b""
        send([m.encode(m.COMMAND, m.HOST, m.BROADCAST, 10, (m.CMD_RESET, 1.0))])
        for t in (0, 1):
            tick(t)
        dec = m.Decoder()
        msgs = [dec.decode(f) for f in framing.Deframer().feed(ret.rx)]
        return sorted((msg[1], msg[4][0]) for msg in msgs if msg and msg[0] == m.TORQUE)

    want = sorted((link, t) for link in range(1, N + 1) for t in (0, 1))
    assert torques_after_reset((254, 255)) == want
    assert torques_after_reset((255, 256)) == want
