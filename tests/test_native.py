"""The native module linkcore (firmware/native/linkcore.c, built with MicroPython's
py/dynruntime.mk) against the pure-Python firmware, its oracle. Built for x64 and loaded
by the unix port's micropython, which computes in double as CPython does, an agent's
frames must be byte-identical to CPython's pure-Python ones: the reference chain's
cycle (tests/mp/mp_agent_cycle.py) and 100 agents of random joint type, DH, gains, gravity,
poses, assertions and goals (tests/mp/mp_native_cases.py). On the emulated boards (float32)
tests/test_mcu.py compares linkcore with the frozen pure Python the same way.

Needs gcc, pyelftools and ar (make setup), MICROPY_SRC (a MicroPython source tarball:
`make test` provides it) and micropython; otherwise skipped."""
import os
import subprocess
import sys

import pytest

from host.tools import mcu
from tests.conftest import PURE_PYTHON_ENV, REPO, assert_wire_chain, needs, run_micropython
from tests.test_auth import assert_native_mac

pytestmark = [pytest.mark.slow, needs("native-x64", "micropython")]


@pytest.fixture(scope="module")
def linkcore_dir():
    return os.path.dirname(mcu.native_module("x64"))


def _cpython(script):
    code = "import sys\nsys.path.insert(0, %r)\n%s" % (str(REPO), (REPO / "tests" / "mp" / script).read_text())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=300,
                       env=PURE_PYTHON_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.splitlines()


def _with_linkcore(linkcore_dir, script, tail=""):
    code = "import sys\nsys.path.append(%r)\n%s\n%s" % (linkcore_dir, (REPO / "tests" / "mp" / script).read_text(), tail)
    return run_micropython(code, timeout=300).splitlines()


def test_agent_cycle_with_linkcore_is_bytewise_cpython(linkcore_dir):
    got = _with_linkcore(linkcore_dir, "mp_agent_cycle.py", "import firmware.linkstate as ls\n"
                         "print('NATIVE', ls.linkcore is not None and ls.core() is ls.linkcore)")
    assert got[-1] == "NATIVE True", "the agents did not run on linkcore"
    want = _cpython("mp_agent_cycle.py")
    assert len([x for x in want if x.startswith("FRAME ")]) >= 3 * 4
    assert got[:-1] == want


def test_hot_frames_queued_by_linkcore_are_bytewise_cpython_on_every_wire(linkcore_dir):
    got = _with_linkcore(linkcore_dir, "mp_wire_chain.py")
    want = _cpython("mp_wire_chain.py")
    assert_wire_chain(got, want)


def test_random_agent_cycles_with_linkcore_are_bytewise_cpython(linkcore_dir):
    got = _with_linkcore(linkcore_dir, "mp_native_cases.py")
    want = _cpython("mp_native_cases.py")
    assert got[-1] == "CORES 100 of 100" and want[-1] == "CORES 0 of 100"
    frames = [x[6:8] for x in want if x.startswith("FRAME ")]
    # every hot frame linkcore writes: K_i, the gravity couplet, the torque (none where
    # the goal held a NaN); and the corrupted frames, counted as bad
    assert frames.count("03") >= 250 and frames.count("06") >= 190 and frames.count("05") >= 50
    assert [x for x in want if x.startswith("U ")][-1].endswith(" bad 2")
    assert len([x for x in want if x.startswith("TRIG ")]) == 326
    assert len([x for x in want if x.startswith("SAMPLE ")]) == 160
    assert got[:-1] == want[:-1]


def test_forwarder_with_linkcore_is_the_python_reference(linkcore_dir):
    """The node's forwarder in C (linkcore.cut, linkcore_forward.h) on the unix port, with
    the byte loops' cases (tests/mp/mp_framing_cases.py): what CPython's pure Python prints."""
    got = _with_linkcore(linkcore_dir, "mp_framing_cases.py",
                         "import linkcore\nprint('C', forward.cut is linkcore.cut)")
    assert got[-1] == "C True"
    assert got[:-1] == _cpython("mp_framing_cases.py")


@pytest.mark.parametrize("script", ["mp_safety.py", "mp_group.py", "mp_services.py", "mp_neighbours.py"])
def test_firmware_scripts_with_linkcore_print_what_cpython_prints(linkcore_dir, script):
    """The agents of the safety (faults, brakes, release), group, services and neighbour
    (redundant kinematics) scripts run on linkcore: all print what CPython's pure Python
    prints."""
    got = _with_linkcore(linkcore_dir, script)
    want = _cpython(script)
    assert len(want) >= 1 and got == want


def test_native_mac_on_the_unix_port_is_the_reference(linkcore_dir):
    """linkcore's MAC (linkcore_mac.h) on the unix port: RFC 4231, random cases, a node's
    check equal to bus_protocol/mac.py's (tests/mp/mp_mac_native.py)."""
    assert_native_mac("\n".join(_with_linkcore(linkcore_dir, "mp_mac_native.py")))


def test_agent_on_linkcore_imports_no_python_cycle(linkcore_dir):
    """A board running its modules as .mpy files holds every imported module's bytecode
    in RAM (make mcu-bench, ram_mpy_by_module_bytes): agents on linkcore running the
    reference chain's cycle import neither the pure-Python cycle nor the neighbour,
    config and identification code they do not run."""
    cold = ("firmware.kinematic_bus", "firmware.global_proxy", "firmware.vec", "firmware.neighbours",
            "firmware.config_parser", "firmware.identification")
    got = _with_linkcore(linkcore_dir, "mp_agent_cycle.py",
                         "print('LOADED', [k for k in %r if k in sys.modules])" % (cold,))
    assert got[-1] == "LOADED []"
