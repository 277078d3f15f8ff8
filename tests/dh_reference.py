"""Independent numpy forward kinematics from DH matrices (4x4 products), used by tests
as the reference the firmware's quaternion kinematic bus is compared against."""
import numpy as np


def dh_matrix(jtype, theta, d, a, alpha, q):
    if jtype == "revolute":
        theta = theta + q
    else:
        d = d + q
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0, sa, ca, d],
                     [0, 0, 0, 1.0]])


def fk(links, q):
    """World 4x4 frames F_0..F_N for links = [(type, theta, d, a, alpha), ...]."""
    T = np.eye(4)
    out = [T]
    for L, qi in zip(links, q):
        T = T @ dh_matrix(*L, qi)
        out.append(T)
    return out


def jacobian_fd(fun, q, h=1e-7):
    """Central-difference Jacobian of fun(q) -> vector."""
    q = np.asarray(q, float)
    f0 = np.asarray(fun(q))
    J = np.zeros((f0.size, q.size))
    for i in range(q.size):
        dq = np.zeros_like(q)
        dq[i] = h
        J[:, i] = (np.asarray(fun(q + dq)) - np.asarray(fun(q - dq))) / (2 * h)
    return J


def rotvec_jacobian_fd(links, q, h=1e-7):
    """Angular-velocity Jacobian of the end frame by finite differences of R."""
    q = np.asarray(q, float)
    R0 = fk(links, q)[-1][:3, :3]
    J = np.zeros((3, q.size))
    for i in range(q.size):
        dq = np.zeros_like(q)
        dq[i] = h
        Rp = fk(links, q + dq)[-1][:3, :3]
        Rm = fk(links, q - dq)[-1][:3, :3]
        W = (Rp - Rm) / (2 * h) @ R0.T       # skew(omega)
        J[:, i] = [W[2, 1], W[0, 2], W[1, 0]]
    return J
