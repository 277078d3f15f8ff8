"""Run directory: the per-tick time series (NPZ), summary.json and run.log."""
import json
from pathlib import Path

import numpy as np


class Recorder:
    """Per-tick samples, appended as rows; `arrays()` stacks them."""

    def __init__(self, n):
        self.n = n
        self.rows = {}

    def add(self, **row):
        for k, v in row.items():
            self.rows.setdefault(k, []).append(np.array(v, dtype=float, copy=True))

    def __len__(self):
        return len(self.rows.get("t", []))

    def arrays(self):
        return {k: np.stack(v) for k, v in self.rows.items()}


def write_run(out_dir, summary, arrays, log_lines, meta=None):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if arrays:
        np.savez_compressed(out / "timeseries.npz", **arrays, **(meta or {}))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    (out / "run.log").write_text("\n".join(log_lines) + "\n")
    return out


def load_run(run_dir):
    d = Path(run_dir)
    summary = json.loads((d / "summary.json").read_text())
    data = dict(np.load(d / "timeseries.npz", allow_pickle=False))
    return summary, data
