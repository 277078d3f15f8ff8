"""Tools beside a run: keys."""
