"""RMDAC against a hand-computed trapezoid integration (DESIGN 4)."""
import numpy as np

from host.rmdac import RMDAC

G = {"wp": 2.0, "wv": 3.0, "delta": 0.5, "alpha": 1.5, "beta": 0.25, "nu": 2.0, "gamma": 0.75,
     "lambda": 1.25, "u2": 0.1, "d0": 0.3, "kp0": 1.0, "kv0": 0.0, "c0": 0.0, "b0": -0.2, "a0": 0.4}


def test_two_ticks_by_hand():
    c = RMDAC([G])
    sig = [(0.01, 0.2, 0.1, 0.3, 1.0, 0.5, -0.2), (0.009, -0.1, 0.4, 0.35, 1.1, 0.4, 0.3)]
    k_int = np.zeros(6)
    prev = None
    for dt, e, ed, xd, xdd, xddd, _ in sig:
        f = c.update(dt, np.array([xd]), np.array([xdd]), np.array([xddd]), np.array([e]), np.array([ed]))
        r = 2.0 * e + 3.0 * ed
        s = np.array([1, e, ed, xd, xdd, xddd])
        if prev is not None:
            k_int += 0.5 * dt * (r * s + prev)
        prev = r * s
        k = np.array([0.3, 1.0, 0.0, 0.0, -0.2, 0.4]) + np.array([0.5, 1.5, 0.25, 2.0, 0.75, 1.25]) * k_int + 0.1 * r * s
        assert np.isclose(f[0], k @ s)


def test_coordinates_are_independent():
    c = RMDAC([G, dict(G, wp=10.0)])
    z = np.zeros(2)
    f1 = c.update(0.01, z, z, z, np.array([0.1, 0.0]), z)
    assert f1[1] == 0.3 and f1[0] != f1[1]   # coordinate 2 saw no error: f = d0 only
