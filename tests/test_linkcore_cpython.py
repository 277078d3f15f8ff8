"""linkcore for CPython (firmware/native/linkcore_cpython.c: the boards' C core,
linkcore_core.h, as a CPython extension module that `make setup` builds) against the
pure-Python firmware, its oracle: CPython agents with and without it send byte-identical
frames (100 agents of random joint type, DH, gains, gravity, poses, assertions, corrupted
and NaN frames: tests/mp_native_cases.py; the reference chain's cycle:
tests/mp_agent_cycle.py), and the in-process reference run records the same time series
to the last bit. Skipped with the reason where the module is not built."""
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import PURE_PYTHON_ENV, REPO, pure_python


def _built():
    try:
        import linkcore  # noqa: F401
    except ImportError as e:
        return "linkcore for CPython is not built (make setup; needs gcc and Python.h): %s" % e
    return ""


pytestmark = pytest.mark.skipif(bool(_built()), reason=_built())


def _cpython(script, env=None):
    r = subprocess.run([sys.executable, str(REPO / "tests" / script)], capture_output=True, text=True,
                       cwd=str(REPO), timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.splitlines()


@pytest.mark.parametrize("script", ["mp_native_cases.py", "mp_agent_cycle.py"])
def test_cpython_agents_with_linkcore_send_the_pure_python_frames(script):
    got = _cpython(script)
    want = _cpython(script, PURE_PYTHON_ENV)
    assert len(got) == len(want) and len([x for x in got if x.startswith("FRAME")]) >= 12
    if script == "mp_native_cases.py":   # the agents' own count of those that ran on linkcore
        assert got[-1] == "CORES 100 of 100" and want[-1] == "CORES 0 of 100"
        got, want = got[:-1], want[:-1]
    for g, w in zip(got, want):
        assert g == w


def test_pure_python_switch():
    """LINKTEAM_PURE_PYTHON=1 turns the module off for a whole process."""
    code = "import firmware.linkstate as s; print(s.linkcore is None)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), env=PURE_PYTHON_ENV)
    assert r.stdout.split() == ["True"], r.stderr


def test_reference_run_with_linkcore_is_bit_identical(tmp_path):
    from host.run import run_scenario
    from host.scenario import load
    from firmware import linkstate
    assert linkstate.linkcore is not None
    sc = load(REPO / "scenarios" / "reference.toml")
    with_core, _ = run_scenario(sc, tmp_path / "core", quiet=True, make_plots=False)
    with pure_python():
        pure, _ = run_scenario(sc, tmp_path / "pure", quiet=True, make_plots=False)
    assert with_core["e_rms_m"] == pure["e_rms_m"] and with_core["phi_rms_rad"] == pure["phi_rms_rad"]
    a = np.load(tmp_path / "core" / "timeseries.npz")
    b = np.load(tmp_path / "pure" / "timeseries.npz")
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert a[k].tobytes() == b[k].tobytes(), k
