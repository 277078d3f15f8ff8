"""A SIGTERM to `linkteam experiments` leaves no pool worker running cells on its own
(host/studies/experiments.py pool: the workers end with the process that made the pool)."""
import pytest

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _group(pgid):
    """Live (not zombie) processes of process group pgid: {pid: ppid}, from /proc."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        f = stat[stat.rindex(")") + 2:].split()   # state ppid pgrp ...
        if f[0] != "Z" and int(f[2]) == pgid:
            found[int(d.name)] = int(f[1])
    return found


def test_sigterm_to_experiments_ends_its_pool_workers(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "host.cli", "experiments", "--only", "reference", "step",
                          "--jobs", "2", "--out", str(tmp_path), "--quiet"], cwd=ROOT, start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(pp == p.pid for pp in _group(p.pid).values()):
            time.sleep(0.1)
        assert any(pp == p.pid for pp in _group(p.pid).values()), "no pool worker started within 60 s"
        time.sleep(1.0)   # the workers are into their first cells
        os.kill(p.pid, signal.SIGTERM)   # the command only, not its group
        p.wait(timeout=30)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group(p.pid):
            time.sleep(0.1)
        assert _group(p.pid) == {}
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)
