"""The firmware on emulated microcontrollers (host/tools/mcu.py: MicroPython's QEMU port with
firmware/ and bus_protocol/ frozen in): it boots, and one agent cycle of a 4-link chain
(tests/mp/mp_agent_cycle.py) sends the same frames as under CPython and the unix port.

Needs qemu-system-arm, arm-none-eabi-gcc with newlib and MICROPY_SRC (a MicroPython
source tarball; `make test` and .ci/run provide them); otherwise skipped."""
import contextlib
import io
import runpy

import pytest

from bus_protocol import messages as m
from firmware.accel import forward
from host.tools import mcu
from tests.mp import mp_agent_cycle as cyc
from tests.mp import mp_framing_cases, mp_node_stream
from tests.conftest import REPO, assert_wire_chain, needs, pure_python, run_micropython
from tests.test_auth import assert_native_mac

pytestmark = [pytest.mark.slow, needs("qemu")]

# Both builds compute in single precision (MicroPython's float on these ports is a
# float32, as on the stm32 and rp2 ports), CPython and the unix port in double and round
# to float32 only when packing. Every float on the wire comes out of at most ~120
# operations (4 links x ~30 for K_i, the proxy and assertion sums of the torque), each
# rounding by at most 2**-24 (6e-8) of operands no larger than ~50 (torques of these
# gains; positions < 2 m): 120 * 6e-8 * 50 = 3.6e-4 absolute at worst. A wrong term
# (a sign, a swapped axis, a missed assertion) moves a value by >= 1e-2.
ATOL = 4e-4


@pytest.fixture(scope="module")
def firmware():
    """Build once (incremental in build/mcu/, kept between runs)."""
    return {name: mcu.build(name) for name in mcu.BUILDS}


def _frames(text):
    frames = [bytes.fromhex(line.split()[1]) for line in text.splitlines() if line.startswith("FRAME ")]
    torques = [[float(x) for x in line.split()[1:]] for line in text.splitlines() if line.startswith("U ")]
    return frames, torques


def _stdout(fn):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


def _cpython():
    with pure_python():   # the oracle
        return _stdout(cyc.run)


def _values(frame):
    """The frame's payload values, each float as the float32 the wire carries."""
    msg = m.Decoder().decode(frame)
    assert msg is not None, "a frame the board sent does not decode: %s" % frame.hex()
    return msg


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_agent_cycle_frames_on_emulated_mcu_match_cpython_and_unix_port(firmware, name):
    board = mcu.run(name, firmware[name], "import mp_agent_cycle\nmp_agent_cycle.run()", timeout=300)
    assert "MicroPython" in board and "Cortex-M" in board, "the board did not boot:\n" + board[-1000:]
    ref = _cpython()
    unix = run_micropython(open(REPO / "tests" / "mp" / "mp_agent_cycle.py").read().replace(
        "__file__", repr(str(REPO / "tests" / "mp" / "mp_agent_cycle.py"))))
    assert unix.splitlines() == ref.splitlines()   # the desktop pair is bit-identical
    got, u_got = _frames(board)
    want, u_want = _frames(ref)
    assert len(want) >= 3 * cyc.N and len(got) == len(want)
    identical = 0
    for g, w in zip(got, want):
        mg, mw = _values(g), _values(w)
        assert mg[:4] == mw[:4], "type, src, dst, seq"
        if mg[4] == mw[4]:
            assert g == w          # same float32 values: the same bytes, CRC included
            identical += 1
            continue
        for a, b in zip(mg[4], mw[4]):
            if isinstance(b, float):
                assert abs(a - b) <= ATOL, (m.NAMES[mw[0]], mg[4], mw[4])
            else:
                assert a == b, (m.NAMES[mw[0]], mg[4], mw[4])
    assert identical >= 1     # SYNC-tick frames without floats at least
    assert len(u_got) == cyc.N
    for a, b in zip(u_got, u_want):
        assert a[0] == b[0] and all(abs(x - y) <= ATOL for x, y in zip(a[1:], b[1:])), (a, b)


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_node_stream_on_emulated_mcu_matches_cpython(firmware, name):
    """The node's receive path with the Thumb-assembly loops (firmware/accel/thumb.py):
    every read split gives what CPython's pure-Python loops give (integers only: exact)."""
    board = mcu.run(name, firmware[name], "import mp_node_stream\nmp_node_stream.main()", timeout=600)
    want = [ln for ln in _stdout(mp_node_stream.main).splitlines()]
    got = [ln for ln in board.splitlines() if ln.startswith(("DOWN", "UP", "GOT", "DROPPED", "DIFFERS"))]
    assert got == want


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_byte_loops_on_emulated_mcu_match_the_python_reference(firmware, name):
    """COBS, peek/find/put, the run splitter and the CRC in Thumb assembly and viper on
    the boards give what forward.py's, framing.py's and messages.py's pure-Python loops give under
    CPython, on clean and corrupted pseudo-random frames; and so does the forwarder, in
    Python over those loops on the board, and in C (linkcore.cut: built into the firmware,
    and from linkcore.mpy)."""
    board = mcu.run(name, firmware[name], "import sys, mp_node_cycle\nmp_node_cycle.without_native()\n"
                    "import mp_framing_cases\nmp_framing_cases.main()\nprint('BUILTIN')\n"
                    "sys.modules.pop('linkcore')\nimport linkcore\nmp_framing_cases.main(cut=linkcore.cut)\n"
                    "print('NATIVE')\nimport mcu_mpy_files\nmp_node_cycle.with_native(mcu_mpy_files.NATIVE)\n"
                    "import linkcore\nmp_framing_cases.main(cut=linkcore.cut)", timeout=600)
    py, rest = board.split("\nBUILTIN\n")
    built_in, native = rest.split("\nNATIVE\n")
    want = _stdout(lambda: mp_framing_cases.main(cut=forward.cut_python)).splitlines()
    assert len(want) == 350
    for text in (py, built_in, native):
        assert [ln for ln in text.splitlines() if ln[:1] in ("C", "M") and ln[1:2].isdigit()] == want


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_linkcore_on_emulated_mcu_is_bytewise_the_frozen_python(firmware, name):
    """The native core linkcore (firmware/native/linkcore.c: compiled into the firmware,
    and as a .mpy built for the board's architecture and loaded from a RAM filesystem)
    against the frozen pure Python on the
    same board, both float32: the reference chain's cycle, 100 random agents and four
    links' samples whose readings make safety's checks fire (tests/mp/mp_native_cases.py),
    and four chain nodes whose hot frames linkcore queues on
    their transmit buffers (tests/mp/mp_wire_chain.py) send the same frames, bit for bit."""
    run = "mp_native_cases.run()\nmp_agent_cycle.run()\nmp_wire_chain.run()"
    board = mcu.run(name, firmware[name], "import sys, mp_node_cycle\nmp_node_cycle.without_native()\n"
                    "import mp_native_cases, mp_agent_cycle, mp_wire_chain\n" + run + "\n"
                    "sys.modules.pop('linkcore')\nimport linkcore, firmware.linkstate as ls\nls.linkcore = linkcore\n"
                    "print('BUILTIN', getattr(linkcore, '__file__', '-'))\n" + run + "\n"
                    "import mcu_mpy_files\nmp_node_cycle.with_native(mcu_mpy_files.NATIVE)\n"
                    "import linkcore\nls.linkcore = linkcore\nprint('NATIVE', linkcore.__file__)\n" + run,
                    timeout=900)
    py, rest = board.split("\nBUILTIN -\n")   # (built into the firmware: no file)
    built_in, native = rest.split("\nNATIVE /native/linkcore.mpy\n")

    def lines(text):
        return [ln for ln in text.splitlines()
                if ln.startswith(("FRAME ", "U ", "TRIG ", "SAMPLE ", "WIRE ", "QUEUED ", "CORES "))]
    py, built_in, native = lines(py), lines(built_in), lines(native)
    assert built_in == native   # the same C, compiled into the firmware and as a .mpy
    assert "CORES 0 of 100" in py and "CORES 100 of 100" in native
    frames = [x[6:8] for x in py if x.startswith("FRAME ")]
    assert frames.count("03") >= 200 and frames.count("06") >= 190
    assert len([x for x in py if x.startswith("TRIG ")]) == 326
    assert len([x for x in py if x.startswith("SAMPLE ")]) == 160   # the sample's checks, 4 x 40 ticks
    wire = ("WIRE ", "QUEUED ")   # four chain nodes on memory wires (tests/mp/mp_wire_chain.py)
    assert_wire_chain([x for x in native if x.startswith(wire)], [x for x in py if x.startswith(wire)])
    assert [x for x in native if not x.startswith(("CORES", "QUEUED"))] == [
        x for x in py if not x.startswith(("CORES", "QUEUED"))]


def test_frozen_armv6m_native_code_is_word_aligned(firmware):
    """ARMv6-M native code loads its 32-bit constants PC-relative from a word placed for a
    4-byte aligned start (py/asmthumb.c); MicroPython v1.28's mpy-tool freezes it 2-byte
    aligned, and at 2 mod 4 the agent's native actuate() computed wrong on the M0+ build.
    host/tools/mcu.py makes the frozen ARMv6-M code 4-byte aligned: every native function array
    of the M0+ build says so, and the firmware's hot path is among them."""
    import os
    text = open(os.path.join(os.path.dirname(firmware["m0plus"]), "frozen_content.c")).read()
    native = [line for line in text.splitlines() if line.startswith("static const byte fun_data_")
              and "__attribute__ ((aligned" in line]
    assert any("LinkAgent_actuate[" in line for line in native)
    assert native and all("aligned (4)" in line for line in native), \
        [line.split("[")[0] for line in native if "aligned (4)" not in line][:5]


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_mac_vectors_and_node_check_on_emulated_mcu_match_cpython(firmware, name):
    """tests/mp/mp_auth.py on the board: RFC 4231's HMAC-SHA256 vectors, the SPEC's protected
    frames and a node's check through a restart print what they print under CPython
    (tests/test_auth.py checks those lines against RFC 4231 and the SPEC)."""
    board = mcu.run(name, firmware[name], "import mp_auth", timeout=300)
    lines = [ln for ln in board.splitlines() if ln.split(" ", 1)[0] in
             ("rfc4231", "vector", "node", "store", "nokey", "unauthenticated")]
    want = _stdout(lambda: runpy.run_path(str(REPO / "tests" / "mp" / "mp_auth.py"), run_name="mp_auth"))
    assert lines == want.splitlines()


@pytest.mark.parametrize("name", sorted(mcu.BUILDS))
def test_native_mac_on_emulated_mcu_is_the_reference(firmware, name):
    """linkcore's MAC (linkcore_mac.h, the module loaded from a RAM filesystem) on the
    board: RFC 4231, random cases, a node's check equal to bus_protocol/mac.py's there
    (tests/mp/mp_mac_native.py)."""
    assert_native_mac(mcu.run(name, firmware[name], "import mp_node_cycle, mcu_mpy_files\n"
                              "mp_node_cycle.with_native(mcu_mpy_files.NATIVE)\nimport mp_mac_native", timeout=300))
