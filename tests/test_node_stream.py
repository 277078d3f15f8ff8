"""ChainNode's receive path (firmware/node.py: frames routed and decoded in place, runs
carried across reads, overlong and malformed runs dropped) gives the same result for
every way a read can split the stream, under CPython and the MicroPython unix port, and
that result is the one the frames on the stream call for."""
import contextlib
import io

from bus_protocol import framing
from tests.mp import mp_node_stream as ns
from tests.conftest import REPO, run_micropython


def _cpython():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ns.main()
    return buf.getvalue()


def test_node_stream_any_read_split_micropython_and_cpython_agree_with_the_frames():
    out = _cpython()
    out_mp = run_micropython(open(REPO / "tests" / "mp" / "mp_node_stream.py").read())
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


def test_node_allocates_nothing_per_cycle_under_micropython():
    """The node's part of a control cycle (benchmarks/mp_node_cycle.py's reads: JOINT_STATE
    + SYNC, K, GOAL from up, a frame passing up from down, an idle round, a frame split
    across two reads, one frame of the agent's sent) allocates 0 bytes once warm, the
    agent taking nothing (its own allocation is the agent's: make mcu-bench)."""
    code = '''
import io
sys.path.insert(0, "benchmarks")
import mp_node_cycle as B
from firmware.agent import LinkAgent
from firmware.hal.sim import SimHAL
from firmware.node import ChainNode
up, down = B.Port(), B.Port()
node = ChainNode(LinkAgent(B.config(), SimHAL()), up, down)
pre = B.inputs()
wire = pre[0][3][0].getvalue()
halves = [(b, b.readinto) for b in (io.BytesIO(wire[:20]), io.BytesIO(wire[20:]))]
def one(k, timed):
    js, kk, gg, fw = pre[k % 4]
    up.feed(js)
    node.poll()
    up.feed(kk)
    node.poll()
    up.feed(gg)
    node.poll()
    down.feed(fw)
    node.poll()
    node.poll()
    down.feed(halves[0])
    node.poll()
    down.feed(halves[1])
    node.poll()
for k in range(4):
    one(k, False)
f0 = node.forwarded
print(B.node_alloc(node, node.agent, one), node.forwarded - f0)
'''
    alloc, forwarded = run_micropython(code).split()
    # passed on every cycle: SYNC and GOAL (broadcast, down), both frames from down (up)
    assert int(forwarded) == 4 * 12
    assert int(alloc) == 0


K_N_UP = '''
from bus_protocol import framing
from bus_protocol import messages as m
from firmware.node import ChainNode
from tests.mp import mp_node_stream as ns
k_n = framing.uart_frame(m.encode(m.KINEMATIC, 5, m.HOST, 9, (7,) + (0.5,) * 13))
for link in (1, 2):
    for overhear in (1, 2):
        agent = ns.Agent()
        agent.link = link
        up, down = ns.Port(), ns.Port([k_n])
        node = ChainNode(agent, up, down, overhear=overhear)
        node.poll()
        print(link, overhear, bytes(up.out) == k_n, len(agent.got), len(down.out))
'''


def test_k_n_for_the_host_passes_the_overhearing_links_of_a_chain():
    """On a plain chain the tip's K_N goes up through links 1.. to the host (address 0),
    which is no link's proximal neighbour: a node that overhears (depth 1 or 2) passes it
    up whole and takes nothing (it kept it, and the host never had a K_N), under CPython
    and MicroPython alike."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(K_N_UP, {})
    want = "".join("%d %d True 0 0\n" % (link, d) for link in (1, 2) for d in (1, 2))
    assert buf.getvalue() == want
    assert run_micropython(K_N_UP) == want
