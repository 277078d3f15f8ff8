# Local behaviour controllers of a link agent (docs/design.md §5, thesis ch. 7).
# Each returns a joint torque (force for a prismatic joint); the agent arbitrates.


def weights(beh):
    """(k_proxy, k_assert, k_local, k_jl): the arbitration weights (5.177) of a link's
    `behaviours` table, as its agent uses them and the host checks its torque with them.
    A behaviour not configured weighs 0 (assertions: 1); retraction is the local PD."""
    ret = beh.get("retraction")
    local = _weight(beh, "centering") if ret is None else float(ret.get("weight", 1.0))
    return (_weight(beh, "proxy"), float(beh.get("assertions", {}).get("weight", 1.0)),
            local, _weight(beh, "joint_limit"))


def _weight(beh, name):
    b = beh.get(name)
    if b is None:
        return 0.0
    return float(b.get("weight", 1.0))


def rmoa_force(x_r, rho, eta, clearance, f_max=1e9):
    """RMOA repulsion (7.241-7.253): with rho = |x_r| < c,
    f_psh = eta (1/rho - 1/c) (1/rho^2) (-x_r / rho); None outside the clearance.
    The magnitude is capped at f_max (what the link may assert: near contact the
    1/rho^3 law asks for more than any arm can give in one control period)."""
    if rho >= clearance:
        return None
    if rho < 1e-4:
        rho = 1e-4  # contact: bounded push along the last known direction
    mag = eta * (1.0 / rho - 1.0 / clearance) / (rho * rho)
    if mag > f_max:
        mag = f_max
    g = -mag / rho
    return (g * x_r[0], g * x_r[1], g * x_r[2])


def joint_limit(q, q_low, q_high, eta, rho0):
    """Continuous nonlinear joint-limit repulsion (7.254)."""
    u = 0.0
    rho = q_high - q
    if rho < rho0:
        rho = rho if rho > 1e-3 else 1e-3
        u -= eta * (1.0 / rho - 1.0 / rho0) / (rho * rho)
    rho = q - q_low
    if rho < rho0:
        rho = rho if rho > 1e-3 else 1e-3
        u += eta * (1.0 / rho - 1.0 / rho0) / (rho * rho)
    return u


def pd(q, qd, q_set, kq, kw):
    """Centering / retraction / variable compliance / brake: u = kq (q_c - q) - kw qd (7.274)."""
    return kq * (q_set - q) - kw * qd


def retraction_setpoint(link, amplitude):
    """Retraction (7.311, Table 7.14): centering setpoints alternate along the chain,
    +amplitude at link 1, -amplitude at link 2, ... (a folded 'zig-zag' arm)."""
    return amplitude if link % 2 == 1 else -amplitude


def saturate(u, u_sat):
    """Actuator saturation (6.216)."""
    if u > u_sat:
        return u_sat
    if u < -u_sat:
        return -u_sat
    return u
