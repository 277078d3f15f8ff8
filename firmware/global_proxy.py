# The global goal proxy: agent i's row of the Jacobian transpose (docs/design.md §3, 4.128, 4.141).
from firmware.kinematic_bus import REVOLUTE


def share(jtype, z, p_prev, p_app, f):
    """u_i = [(z x (p_app - p_{i-1}))^T, z^T] f   (revolute)
       u_i = [z^T, 0] f                           (prismatic)
    z: joint axis (world), p_prev: origin of frame i-1, p_app: point of application,
    f: wrench (fx, fy, fz, mx, my, mz), all world coordinates."""
    if jtype == REVOLUTE:
        rx = p_app[0] - p_prev[0]
        ry = p_app[1] - p_prev[1]
        rz = p_app[2] - p_prev[2]
        # (z x r) . F  +  z . M
        return ((z[1] * rz - z[2] * ry) * f[0] + (z[2] * rx - z[0] * rz) * f[1]
                + (z[0] * ry - z[1] * rx) * f[2] + z[0] * f[3] + z[1] * f[4] + z[2] * f[5])
    return z[0] * f[0] + z[1] * f[1] + z[2] * f[2]
