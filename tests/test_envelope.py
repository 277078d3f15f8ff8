"""`linkteam envelope` on two cells: the table, the diagnosis and the heat map it writes."""
import pytest

import math

from host.studies import envelope

pytestmark = pytest.mark.slow


def blend_time_to(distance, length, t0, t1):
    """When the cubic blend s = 3 tau^2 - 2 tau^3 over [t0, t1] has moved `distance` of
    `length` (bisection)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if (3 * mid ** 2 - 2 * mid ** 3) * length < distance else (lo, mid)
    return t0 + lo * (t1 - t0)


def test_two_cells(tmp_path):
    """Payload 0 must hold past 10 s; an arm whose motors give 1e-3 N m cannot move, so its
    error is the desired point's travel from the straight start (7.5, 0) towards the first
    knot (1, 2) over 0-10 s, which passes the 2 m divergence bound at a time the blend gives."""
    ok = envelope.Cell("payload", payload=0.0)
    stuck = envelope.Cell("weak motors", payload=0.0, extra={"robot": {"link": {"u_sat": 1e-3}}}, tag="weak")
    results, report = envelope.run([ok, stuck], out_dir=tmp_path, duration=12.0, progress=False)
    assert results[ok.name]["status"] == "ok" and results[ok.name]["e_rms_m"] < 5e-3, results[ok.name]
    s = results[stuck.name]
    t_expect = blend_time_to(2.0, math.hypot(7.5 - 1.0, 2.0), 0.0, 10.0)
    assert s["status"] == "aborted" and s["reason"].startswith("diverged"), s
    assert abs(s["sim_seconds"] - t_expect) < 0.05, (s["sim_seconds"], t_expect)
    assert "no tick-to-tick oscillation" in s["diagnosis"], s["diagnosis"]
    text = report.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| payload |") or line.startswith("| weak motors |")]
    assert len(rows) == 2 and "| ok |" in rows[0] and "| aborted |" in rows[1]
    assert ("%.2f |" % s["sim_seconds"]) in rows[1]
    assert "all ok" in text   # the one cell that must hold (the weak-motor cell changes more than the envelope)
    png = tmp_path / "figures" / "envelope.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
