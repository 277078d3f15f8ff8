"""Write the thesis experiment scenarios (DESIGN 10, thesis chapters 6-7) as TOML files
next to this script. The files are committed; rerun after changing this script:

    .venv/bin/python scenarios/thesis/generate.py

Every file is the reference experiment (scenarios/reference.toml, thesis 6.3.1) plus
the changes the thesis names for that experiment; each file's header says which."""
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent

GAINS = """[rmdac.linear]
wp = 1800.0
wv = 800.0
delta = 6.0
alpha = 4.0
beta = 4.0
nu = 1.0
gamma = 1.0
lambda = 2.0

[rmdac.rotation]
wp = 500.0
wv = 100.0
delta = 6.0
alpha = 4.0
beta = 4.0
nu = 1.0
gamma = 1.0
lambda = 2.0
"""

SQUARE_WAVE = """# SquareWave (Table 6.7, Fig. C.79): x, y in metres, angle about z in radians
""" + "".join("""
[[trajectory.knot]]
interval = [%.1f, %.1f]
position = [%.1f, %.1f, 0.0]
angle = 1.57
""" % k for k in [(0, 10, 1, 2), (10, 16, 1, 1), (16, 22, 2, 1), (22, 28, 2, -1), (28, 34, 1, -1), (34, 40, 1, -2)])


def cylinder(n, total_length=7.5, total_mass=100.0, r=0.1):
    """Equal solid cylinders 0.2 m in diameter: (a, mass, [Ixx, Iyy, Izz] about the centroid)."""
    a, m = total_length / n, total_mass / n
    return a, m, [0.5 * m * r * r, m * (3 * r * r + a * a) / 12.0, m * (3 * r * r + a * a) / 12.0]


def robot(n=10, u_sat=1.0e6, q_range=3.1416, exact=False):
    a, m, inertia = cylinder(n)
    if n == 10 and not exact:
        inertia = [0.05, 0.4938, 0.4938]     # the thesis's rounded table values (Table 5.4)
    return """[robot]
links = %d
gravity = [0.0, 0.0, 0.0]

[robot.link]
type = "revolute"
a = %r
mass = %r
inertia = [%.6g, %.6g, %.6g]
centroid = [%r, 0.0, 0.0]
u_sat = %r
damping = 1.0
q_low = %r
q_high = %r

[payload]
mass = 10.0
inertia = [0.4938, 0.4938, 0.4938]
centroid = [0.0, 0.0, 0.0]
""" % (n, a, m, inertia[0], inertia[1], inertia[2], -a / 2.0, u_sat, -q_range, q_range)


def header(name, description, comment, duration=40.0):
    lines = "".join("# %s\n" % c for c in comment.strip().splitlines())
    return lines + """name = "%s"
description = "%s"

[simulation]
duration = %.1f
control_rate_hz = 120.0
timestep = 0.001
task = "planar"
""" % (name, description, duration)


PROXY = "[behaviours.proxy]\nweight = 1.0\n"
OBSTACLE = """
# Fig. 7.40: a sphere 0.25 m in diameter at [1.00, -0.75]
[[obstacle]]
name = "ball"
radius = 0.125
position = [1.0, -0.75, 0.0]
"""


def rmoa(eta, weight=1.0):
    # The end-effector link (10) carries no range-sensor array: its distal end is the
    # tracked tool point, which passes 0.125 m from the sphere's surface at t = 34 s; a
    # repulsion there fights the trajectory head on (thesis 7.3.4: an adaptive tracker
    # must have the trajectory changed instead). Links 1-9 sense and assert.
    return """
[behaviours.assertions]
weight = %r

[[robot.override]]
links = [1, 2, 3, 4, 5, 6, 7, 8, 9]
behaviours = { rmoa = { eta = %r, clearance = 0.75 } }
""" % (weight, eta)


def centering(kq, kw, weight=1.0):
    return "\n[behaviours.centering]\nweight = %r\nkq = %r\nkw = %r\n" % (weight, kq, kw)


def write(fname, text):
    (HERE / fname).write_text(text)
    print("wrote", HERE / fname)


def main():
    ref = robot() + "\n" + PROXY + "\n" + GAINS + "\n" + SQUARE_WAVE
    write("reference.toml", header("thesis-reference", "Thesis 6.3.1: 10-link reference arm, SquareWave, best gains",
                                   "Thesis 6.3.1 and Table 6.9: the reference experiment.") + "\n" + ref)
    write("step.toml", header("step", "Thesis 6.3.2: step [7.5,0,0] -> [6.5,1,1.57] at t = 1 s",
                              "Thesis 6.3.2, Table 6.9: the desired pose jumps at t = 1 s; RMS over the 40 s window.")
          + "\n" + robot() + "\n" + PROXY + "\n" + GAINS + """
[[trajectory.knot]]
type = "step"
interval = [1.0, 40.0]
position = [6.5, 1.0, 0.0]
angle = 1.57
""")
    write("spiral.toml", header(
        "spiral", "Thesis 6.3.2: spiral about the axis through [4.5,0,0], radius 2 -> 0.5 on parabolic profiles",
        """Thesis 6.3.2, figs 6.32-6.33, Table 6.9: a spiral whose radius and angular displacement
both follow parabolic velocity profiles, from [4.5, 2, 0] to [4.5, -0.5, 0] about the axis
through [4.5, 0, 0]. The arm is planar (horizontal x-y plane), so the axis is normal to that
plane (z); the thesis's 'axis x_axis = [4.5 0 0]' is the point it passes through. Our reading:
a 5 s approach from the straight start [7.5, 0] to [4.5, 2], then 1.5 turns (sweep 3 pi,
counter-clockwise) while the radius shrinks 2 -> 0.5, peak angular rate at t = 22.5 s
(the thesis: 'between 15 and 25 seconds'); orientation held at 0.""") + "\n" + robot() + "\n" + PROXY + "\n" + GAINS + """
[[trajectory.knot]]
interval = [0.0, 5.0]
position = [4.5, 2.0, 0.0]
angle = 0.0

[[trajectory.knot]]
type = "spiral"
interval = [5.0, 40.0]
position = [4.5, -0.5, 0.0]
center = [4.5, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
sweep = %r
angle = 0.0
""" % (3 * math.pi))
    for n in (5, 10, 15, 20):
        write("dof%d.toml" % n, header(
            "dof%d" % n, "Thesis 6.3.2, Table 6.10: %d equal links, 7.5 m and 100 kg in total" % n,
            """Thesis Table 6.10: %d links, total length 7.5 m and mass 100 kg kept, equal solid
cylinders 0.2 m in diameter (inertia about the centroid: m r^2/2, m (3 r^2 + a^2)/12).""" % n)
              + "\n" + robot(n, exact=True) + "\n" + PROXY + "\n" + GAINS + "\n" + SQUARE_WAVE)
    write("saturation.toml", header("saturation", "Thesis 6.3.3: actuator saturation 1000 N m",
                                    "Thesis 6.3.3, fig. 6.37: every actuator saturates at 1000 N m (6.216).")
          + "\n" + robot(u_sat=1000.0) + "\n" + PROXY + "\n" + GAINS + "\n" + SQUARE_WAVE)
    write("obstacle.toml", header("obstacle", "Thesis 7.3.3: RMOA around a 0.25 m sphere, c = 0.75 m, eta = 100",
                                  "Thesis 7.3.3, figs 7.40-7.46, Table 7.11: tracking + RMOA (eta = 100, c = 0.75 m).")
          + "\n" + robot() + "\n" + PROXY + rmoa(100.0) + "\n" + GAINS + OBSTACLE + "\n" + SQUARE_WAVE)
    write("failsafe-link9.toml", header(
        "failsafe-link9", "Thesis 7.6.1: link 9 braked from the start",
        """Thesis 7.6.1, figs 7.49-7.50, Table 7.12: link 9's fail-safe behaviour locks it from
the start (u_9 = u_brake, no tracking proxy). The plant models the physical holding brake:
the joint is locked while its agent reports BRAKED (physical_brake, default true); the
agent's brake PD runs as well.""") + "\n" + robot() + "\n" + PROXY + "\n" + GAINS + """
[[robot.override]]
links = [9]
brake_at_start = true
""" + "\n" + SQUARE_WAVE)
    for kq, kw in ((30.0, 10.95), (50.0, 14.14), (100.0, 20.0), (225.0, 30.0)):
        write("centering-%d.toml" % kq, header(
            "centering-%d" % kq, "Thesis 7.6.2, Table 7.13: joint centering kq = %g, kw = %g" % (kq, kw),
            "Thesis 7.6.2, Table 7.13: tracking + joint centering PD to mid-range 0 (range +-1.57).")
              + "\n" + robot(q_range=1.57) + "\n" + PROXY + centering(kq, kw) + "\n" + GAINS + "\n" + SQUARE_WAVE)
    write("retraction.toml", header(
        "retraction", "Thesis 7.6.3, Tables 7.14-7.15: retraction, setpoints +-1.570 alternating",
        "Thesis 7.6.3, Table 7.14: centering PD (kq 100, kw 20) with setpoints +1.570, -1.570, ... along the chain.")
          + "\n" + robot(q_range=1.57) + "\n" + PROXY
          + "\n[behaviours.retraction]\nkq = 100.0\nkw = 20.0\namplitude = 1.570\n\n" + GAINS + "\n" + SQUARE_WAVE)
    for name, kqs in (("increasing", [100.0 - 10 * i for i in range(10)]),
                      ("decreasing", [10.0 + 10 * i for i in range(10)])):
        ov = "".join("""
[[robot.override]]
links = [%d]
behaviours = { centering = { kq = %r, kw = %.4g } }
""" % (i + 1, kq, 2 * math.sqrt(kq)) for i, kq in enumerate(kqs))
        write("compliance-%s.toml" % name, header(
            "compliance-%s" % name, "Thesis 7.6.4, Tables 7.16-7.17: variable compliance centering, '%s'" % name,
            """Thesis 7.6.4, Table 7.16 ('%s' column, agents 1..10): per-link centering kq from
%g to %g, kw = 2 sqrt(kq) (critically damped).""" % (name, kqs[0], kqs[-1]))
              + "\n" + robot(q_range=1.57) + "\n" + PROXY + centering(100.0, 20.0) + ov + "\n" + GAINS + "\n" + SQUARE_WAVE)
    write("avoidance.toml", header("avoidance", "Thesis 7.6.5, Table 7.18: tracking + avoidance (eta = 10)",
                                   "Thesis 7.6.5, Table 7.18 row 2: tracking + RMOA with eta = 10.")
          + "\n" + robot(q_range=1.57) + "\n" + PROXY + rmoa(10.0) + "\n" + GAINS + OBSTACLE + "\n" + SQUARE_WAVE)
    for name, w in (("combined", 1.0), ("combined-half", 0.5)):
        write("%s.toml" % name, header(
            name, "Thesis 7.6.5, Table 7.18: tracking + avoidance (eta 10) + centering (100/20), weights 1, 1, %g" % w,
            "Thesis 7.6.5, figs 7.65-7.71, Table 7.18: three behaviours, arbitration weights [1, 1, %g]." % w)
              + "\n" + robot(q_range=1.57) + "\n" + PROXY + rmoa(10.0) + centering(100.0, 20.0, w) + "\n" + GAINS
              + OBSTACLE + "\n" + SQUARE_WAVE)


if __name__ == "__main__":
    main()
