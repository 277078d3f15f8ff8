"""Exact link-segment / sphere geometry (range-sensor emulation and contact checks).

Link i is the segment from p_{i-1} (its proximal joint) to p_i (its distal joint).
All functions are vectorised over links x obstacles with numpy.
"""

import numpy as np

MIN_RHO = 1e-6   # rho reported when the link axis is on or inside an obstacle sphere


def segment_points_to_centers(A, B, C):
    """Nearest points on segments A[i]->B[i] to centers C[k].

    A, B: (n, 3); C: (K, 3).  Returns (P, dist): P (n, K, 3) nearest points on each
    segment, dist (n, K) = |C[k] - P[i, k]|.
    """
    D = B - A                                        # (n, 3)
    DD = np.einsum("ij,ij->i", D, D)                 # (n,)
    AC = C[None, :, :] - A[:, None, :]               # (n, K, 3)
    num = np.einsum("ikj,ij->ik", AC, D)             # (n, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(DD[:, None] > 0.0, num / DD[:, None], 0.0)
    np.clip(t, 0.0, 1.0, out=t)
    P = A[:, None, :] + t[:, :, None] * D[:, None, :]
    diff = C[None, :, :] - P
    dist = np.sqrt(np.einsum("ikj,ikj->ik", diff, diff))
    return P, dist


def segment_center_distances2(A, B, C):
    """Squared distances (n, K) from segments A[i]->B[i] to points C[k] (fast path)."""
    D = B - A
    AC = C[None, :, :] - A[:, None, :]
    t = (AC * D[:, None, :]).sum(-1)
    DD = (D * D).sum(-1)
    if DD.all():
        t /= DD[:, None]
    else:
        t = np.where(DD[:, None] > 0.0, t / np.where(DD > 0.0, DD, 1.0)[:, None], 0.0)
    np.clip(t, 0.0, 1.0, out=t)
    AC -= t[:, :, None] * D[:, None, :]
    return (AC * AC).sum(-1)


def segment_center_distances(A, B, C):
    """dist (n, K) from segments A[i]->B[i] to points C[k]."""
    return np.sqrt(segment_center_distances2(A, B, C))


def nearest_surface(A, B, C, radii):
    """Per link: nearest obstacle surface.

    Returns (k_best (n,), p_psh (n,3), x_r (n,3), rho (n,), penetrating (n,) bool) in world
    coordinates.  x_r points from p_psh to the nearest surface point of obstacle k_best,
    i.e. (c - p)(1 - r/|c - p|).  When the segment reaches into the sphere (|c-p| <= r),
    rho = MIN_RHO and x_r = MIN_RHO * unit(c - p) so that it still points at the obstacle
    (a repulsion along -x_r then pushes the link out).
    """
    P, dist = segment_points_to_centers(A, B, C)
    surf = dist - radii[None, :]                    # signed distance axis -> surface
    n = A.shape[0]
    kb = np.argmin(surf, axis=1)
    idx = np.arange(n)
    p = P[idx, kb]                                  # (n, 3)
    c = C[kb]
    dv = c - p
    dd = dist[idx, kb]
    s = surf[idx, kb]
    pen = s <= MIN_RHO
    rho = np.where(pen, MIN_RHO, s)
    safe = np.where(dd > 0.0, dd, 1.0)
    unit = dv / safe[:, None]
    # degenerate: p exactly at the center -> any direction normal to the link
    if np.any(dd <= 0.0):
        D = B - A
        for i in np.nonzero(dd <= 0.0)[0]:
            ax = D[i] if np.dot(D[i], D[i]) > 0 else np.array([1.0, 0.0, 0.0])
            e = np.array([0.0, 0.0, 1.0]) if abs(ax[2]) < 0.9 * np.linalg.norm(ax) else np.array([1.0, 0.0, 0.0])
            nrm = np.cross(ax, e)
            unit[i] = nrm / np.linalg.norm(nrm)
    x_r = unit * rho[:, None]
    return kb, p, x_r, rho, pen
