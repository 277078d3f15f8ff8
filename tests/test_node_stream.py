"""ChainNode's receive path (firmware/node.py: frames routed and decoded in place, runs
carried across reads, overlong and malformed runs dropped) gives the same result for
every way a read can split the stream, under CPython and the MicroPython unix port, and
that result is the one the frames on the stream call for."""
import contextlib
import io

from bus_protocol import framing
from tests import mp_node_stream as ns
from tests.conftest import REPO, run_micropython


def _cpython():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ns.main()
    return buf.getvalue()


def test_node_stream_any_read_split_micropython_and_cpython_agree_with_the_frames():
    out = _cpython()
    out_mp = run_micropython(open(REPO / "tests" / "mp_node_stream.py").read())
    assert out_mp == out
    assert "DIFFERS" not in out
    js, sync, kin, cmd, goal = ns.frames()[:5]
    pings = ns.frames()[5:]
    lines = dict((ln.split(" ", 1)[0], ln.split(" ", 1)[1]) for ln in out.splitlines() if not ln.startswith("GOT"))
    # passed down: the broadcasts and the command for link 4, as they came (COBS bytes)
    assert bytes.fromhex(lines["DOWN"]) == framing.uart_frame(sync) + framing.uart_frame(cmd) + framing.uart_frame(goal)
    assert lines["UP"] == ""
    # taken: what is addressed to link 3 and the broadcasts, decoded
    got = [bytes.fromhex(ln.split()[1]) for ln in out.splitlines() if ln.startswith("GOT")]
    assert got == [js, sync, kin, goal] + pings
    assert lines["DROPPED"] == "2 FORWARDED 3"     # the overlong run and the malformed one
