"""The built-in live page in a real browser: headless Chromium (Debian's `chromium`; .ci/run
installs it where absent) driven over the Chrome DevTools protocol against the page
served by `linkteam run --live` during scenarios/faults/link5-dies.toml in processes
mode, lockstep (a node's bus watchdog runs on the wall clock only: a machine busy enough
to hold a node or the host back for its 50 ms would brake a link on the wall clock, and
the verdict would be the machine's). Read from the page's DOM: the joint traces advance,
and link 5 shows as braked, with its fault name and the time of the change, within 1 s
(of simulated time, the run's clock) of its crash at t = 15 s, whenever the page is
read. A screenshot of the page is saved beside the test's files (and to
$LINKTEAM_ARTIFACTS where set)."""
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import REPO, needs

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CRASH_T = 15.0   # scenarios/faults/link5-dies.toml [[fault]] start
HANG_S = 600.0   # a bound for a hung run only: lockstep takes what the machine gives it


class DevTools:
    """One page of a headless Chromium, over the DevTools protocol (CDP) on `websockets`."""

    def __init__(self, tmp, url, timeout=30.0):
        self.proc = subprocess.Popen(
            # (/dev/shm is small in containers: shared memory in /tmp instead)
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-port=0", "--user-data-dir=%s" % (tmp / "chromium"), "--window-size=1400,1000",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + timeout
        port = None
        said = []
        while port is None and time.monotonic() < end:
            line = self.proc.stderr.readline()
            if not line:
                break
            said.append(line)
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        if port is None:   # nothing else will end it: the caller has no DevTools to close
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("chromium gave no DevTools address (exit %s); it said:\n%s"
                                 % (self.proc.returncode, "".join(said[-20:])))
        pages = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=10).read())
        target = next(p for p in pages if p["type"] == "page")
        from websockets.sync.client import connect
        self.ws = connect(target["webSocketDebuggerUrl"], max_size=1 << 26, open_timeout=10).__enter__()
        self.ids = itertools.count(1)
        self.call("Page.navigate", url=url)

    def call(self, method, timeout=20.0, **params):
        i = next(self.ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        end = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(max(0.01, end - time.monotonic())))
            if msg.get("id") == i:
                assert "error" not in msg, msg
                return msg["result"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r["result"].get("value")

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stderr.close()


# joint 1's plot as drawn (a hash of its canvas' pixels as PNG, and whether anything is
# drawn on it) and link 5's row of the node table, its cells by the table's column names
READ_DOM = """(() => {
  if (!document.getElementById('simtime')) return null;
  const t = parseFloat(document.getElementById('simtime').textContent);
  const row = document.getElementById('node-5');
  const j1 = document.querySelector('#joint-1 .u-over');
  const cv = document.querySelector('#joint-1 canvas');
  let trace = null;
  if (cv && cv.width) {
    const png = cv.toDataURL(), blank = document.createElement('canvas');
    blank.width = cv.width; blank.height = cv.height;
    let h = 0;
    for (let i = 0; i < png.length; i++) h = (h * 31 + png.charCodeAt(i)) | 0;
    trace = {hash: h, drawn: png !== blank.toDataURL()};
  }
  const cols = Array.from(document.querySelectorAll('#nodes thead th')).map((th) => th.textContent.trim());
  const cell = (name) => (row && cols.indexOf(name) >= 0 ? row.cells[cols.indexOf(name)].textContent : null);
  return {t: Number.isFinite(t) ? t : -1,
          joints: parseInt(document.getElementById('joint-count').textContent),
          plot: !!j1, trace: trace,
          row: row ? {cls: row.className, text: row.innerText, state: cell('state'), faults: cell('faults'),
                      since: parseFloat(cell('since (s)'))} : null,
          conn: document.getElementById('conn').textContent};
})()"""


@pytest.mark.skipif(not CHROMIUM, reason="needs chromium (Debian package; .ci/run installs it as root)")
@needs("micropython")
def test_live_page_in_chromium_shows_the_traces_and_link5_braked(tmp_path):
    sc = tmp_path / "link5-dies-17s.toml"   # the fault scenario, cut 2 s after the crash
    sc.write_text('extends = "%s"\nname = "link5-dies-live"\n[simulation]\nduration = 17.0\n'
                  % (REPO / "scenarios" / "faults" / "link5-dies.toml"))
    run = subprocess.Popen([sys.executable, "-m", "host.cli", "run", str(sc), "--out", str(tmp_path / "run"),
                            "--mode", "processes", "--lockstep", "--quiet", "--no-plots", "--live", "0", "--live-wait", "60"],
                           cwd=str(REPO), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    browser = None
    seen = []
    try:
        m = re.search(r"live: http://127\.0\.0\.1:(\d+)/", run.stderr.readline())
        assert m, "no live address"
        browser = DevTools(tmp_path, "http://127.0.0.1:%s/" % m.group(1))
        end = time.monotonic() + HANG_S
        while time.monotonic() < end and run.poll() is None:
            d = browser.eval(READ_DOM)
            time.sleep(0.1)
            if d is None:   # not loaded yet
                continue
            seen.append(d)
            if d["row"] and "braked" in d["row"]["cls"]:
                break
        png = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        for where in [tmp_path] + ([Path(os.environ["LINKTEAM_ARTIFACTS"])] if "LINKTEAM_ARTIFACTS" in os.environ else []):
            where.mkdir(parents=True, exist_ok=True)
            (where / "live-page.png").write_bytes(png)
        assert run.wait(HANG_S) == 5   # degraded: link 5 gone (cli.EXIT_DEGRADED)
    finally:
        if browser is not None:
            browser.close()
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stderr.close()
    live = [d for d in seen if d["joints"] > 0]
    assert len(live) >= 3 and live[-1]["plot"]
    assert live[-1]["t"] > live[0]["t"] and live[-1]["joints"] > live[0]["joints"]   # the traces advance
    drawn = [d["trace"] for d in live if d["trace"] and d["trace"]["drawn"]]
    assert len({tr["hash"] for tr in drawn}) >= 3, "joint 1's plot drawn %d times, %d different" % (
        len(drawn), len({tr["hash"] for tr in drawn}))   # ... on the plot itself
    braked = [d for d in seen if d["row"] and "braked" in d["row"]["cls"]]
    assert braked, "link 5 never showed as braked; last seen %r" % (seen[-1:],)
    first = braked[0]
    assert first["row"]["state"] == "braked" and "silent" in first["row"]["faults"].split(", "), first
    before = [d for d in live if d is not first and d["t"] < CRASH_T]
    assert before and not any(d["row"] and "braked" in d["row"]["cls"] for d in before)
    assert CRASH_T <= first["row"]["since"] <= CRASH_T + 1.0, first   # the page's time of the change
