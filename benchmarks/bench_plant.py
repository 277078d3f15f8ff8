"""Seconds to simulate 40 s of the 10-link reference arm (1 ms RK4) with constant torques.

    .venv/bin/python benchmarks/bench_plant.py [--repeat 3]

Reference arm: links a=0.75, mass 10, inertia [0.05, 0.4938, 0.4938], centroid
[-0.375, 0, 0], damping 1.0, payload 10 kg (sim_host.reference_arm()).  Also reports the
same run with the thesis obstacle (sphere d=0.25 m at [1, -0.75, 0]), stepped at the
120 Hz control rate (step(8)/step(9)), where the link-obstacle contact check is active.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sim_host import Plant, reference_arm  # noqa: E402

TORQUES = np.array([3.0, -2.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 0.1])
T_END = 40.0


def run(obstacles=(), per_tick=False):
    plant = Plant(reference_arm(10), obstacles)
    plant.set_torques(TORQUES)
    nsteps = int(round(T_END / plant.timestep))
    t0 = time.perf_counter()
    if per_tick:
        done, k = 0, 0
        while done < nsteps:
            k += 1
            target = min(nsteps, int(round(k * 1000.0 / 120.0)))
            plant.step(target - done)
            done = target
    else:
        plant.step(nsteps)
    wall = time.perf_counter() - t0
    return wall, plant


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ball = [{"name": "ball", "radius": 0.125, "pos": [1.0, -0.75, 0.0]}]
    for label, kw in (("no obstacles, step(40000)", {}),
                      ("no obstacles, 120 Hz ticks", {"per_tick": True}),
                      ("1 obstacle, 120 Hz ticks", {"obstacles": ball, "per_tick": True})):
        walls = []
        for _ in range(args.repeat):
            wall, plant = run(**kw)
            walls.append(wall)
        n = plant.n
        best = min(walls)
        print("%-28s %.3f s for %.0f s simulated (best of %d; dT_N = %.2f us/link/step; t=%.3f)"
              % (label, best, T_END, args.repeat, best / (T_END * 1000 * n) * 1e6, plant.t))


if __name__ == "__main__":
    main()
