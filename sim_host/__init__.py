"""sim_host: the plant simulator (MuJoCo) standing in for motors and sensors.

Input is plain dicts (host/scenario/loader.py builds them; sim_host never reads scenario files
and imports neither host/ nor firmware/):

    arm = {"links": [{"type": "revolute"|"prismatic", "theta", "d", "a", "alpha",
                      "mass", "inertia": [Ixx, Iyy, Izz], "centroid": [x, y, z],   # in F_i
                      "q_low", "q_high", "limited", "u_sat", "damping", "radius", "q0"}, ...],
           "payload": {"mass", "inertia", "centroid"} or None,                     # in F_N
           "gravity": [gx, gy, gz], "base": {"pos", "quat"}, "link_collisions": bool}
    obstacles = [{"name", "radius", "pos"}, ...]                                   # spheres

See model.py for the DH convention and plant.py for the Plant API.
"""

from .model import DEFAULT_RADIUS, DEFAULT_TIMESTEP, build_mjcf, reference_arm
from .plant import Plant

__all__ = ["DEFAULT_RADIUS", "DEFAULT_TIMESTEP", "Plant", "build_mjcf", "reference_arm"]
