"""Arm description (plain dicts) -> MuJoCo MJCF text.

DH convention (docs/design.md §2): link frame i sits at the distal joint of link i,
frame 0 is the base, and for link i

    revolute : F_i = F_{i-1} Rz(theta + q_i) Tz(d) Tx(a) Rx(alpha)
    prismatic: F_i = F_{i-1} Rz(theta) Tz(d + q_i) Tx(a) Rx(alpha)

MuJoCo body ``link{i}`` (i = 1..n) has its frame at F_{i-1} and carries joint ``q{i}``
(hinge or slide about its local z at its origin); after the joint moves, the static rest
S_i = Rz(theta) Tz(d) Tx(a) Rx(alpha) places the child body ``link{i+1}`` and the site
``frame_{i}`` (= F_i).  Site ``frame_0`` sits on the static body ``base`` (= F_0).

Inertial data of link i is given in link frame i (F_i) and is converted into body i's
frame through S_i.  The payload is given in the end-effector frame F_N and becomes a
welded child body ``payload`` of the last link.  Inertias are always explicit
(``inertiafromgeom="false"``), so the drawn capsules never change the dynamics.

Obstacles are mocap spheres ``obs_{name}`` that never collide in MuJoCo (link-obstacle
contact is computed geometrically by :mod:`sim_host.sensors`).  Link capsules collide
only with each other, and only when ``arm["link_collisions"]`` is true (adjacent links
excluded).
"""

import math

DEFAULT_RADIUS = 0.1          # drawn/collision radius of a link (m) when not given
DEFAULT_TIMESTEP = 0.001      # s, the thesis's fixed 1 ms RK4 step
MIN_INERTIA = 1e-12           # principal inertias are floored here (MuJoCo rejects zero
                              # inertia on moving bodies, e.g. point-mass links)


def _f(x):
    """Float formatted for MJCF without loss (repr is round-trip exact)."""
    x = float(x)
    if x == 0.0:
        return "0"
    return repr(x)


def _v(xs):
    return " ".join(_f(x) for x in xs)


def link_static_transform(link):
    """(translation(3), quaternion [w, x, y, z]) of S_i = Rz(theta) Tz(d) Tx(a) Rx(alpha)."""
    th = float(link.get("theta", 0.0))
    d = float(link.get("d", 0.0))
    a = float(link.get("a", 0.0))
    al = float(link.get("alpha", 0.0))
    t = (a * math.cos(th), a * math.sin(th), d)
    cz, sz = math.cos(th / 2.0), math.sin(th / 2.0)
    cx, sx = math.cos(al / 2.0), math.sin(al / 2.0)
    # qz(theta) * qx(alpha)
    q = (cz * cx, cz * sx, sz * sx, sz * cx)
    return t, q


def _rot_from_quat(q):
    w, x, y, z = q
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
        (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
        (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
    )


def _apply(t, q, c):
    """t + R(q) c."""
    R = _rot_from_quat(q)
    return tuple(t[r] + R[r][0] * c[0] + R[r][1] * c[1] + R[r][2] * c[2] for r in range(3))


def _u_sat(link):
    u = link.get("u_sat", None)
    if u is None:
        return None
    u = float(u)
    if not math.isfinite(u) or u <= 0:
        return None
    return u


def _inertial_xml(mass, inertia, pos, quat, floor=False):
    """<inertial>; with floor=True (moving link bodies) mass is floored at MIN_INERTIA
    too, since MuJoCo rejects massless moving bodies; otherwise mass <= 0 -> None."""
    mass = float(mass)
    if mass <= 0.0:
        if not floor:
            return None
        mass = MIN_INERTIA
    inertia = [max(float(x), MIN_INERTIA) for x in inertia]
    return '<inertial pos="%s" quat="%s" mass="%s" diaginertia="%s"/>' % (
        _v(pos), _v(quat), _f(mass), _v(inertia))


def build_mjcf(arm, obstacles=(), timestep=DEFAULT_TIMESTEP):
    """MJCF text for ``arm`` (dict, see sim_host/__init__.py) and sphere ``obstacles``."""
    links = list(arm["links"])
    n = len(links)
    if n == 0:
        raise ValueError("arm has no links")
    gravity = arm.get("gravity", (0.0, 0.0, 0.0))
    base = arm.get("base") or {}
    link_coll = bool(arm.get("link_collisions", False))

    out = []
    w = out.append
    w('<mujoco model="linkteam_arm">')
    w('  <compiler angle="radian" inertiafromgeom="false" autolimits="false"/>')
    w('  <option timestep="%s" integrator="RK4" gravity="%s">' % (_f(timestep), _v(gravity)))
    w('    <flag energy="enable"/>')
    w('  </option>')
    w('  <visual><global offwidth="1280" offheight="960"/></visual>')
    w('  <default>')
    w('    <geom contype="0" conaffinity="0"/>')
    w('  </default>')
    w('  <worldbody>')
    w('    <light pos="0 0 20" dir="0 0 -1" directional="true"/>')
    w('    <body name="base" pos="%s" quat="%s">' % (_v(base.get("pos", (0.0, 0.0, 0.0))),
                                                     _v(base.get("quat", (1.0, 0.0, 0.0, 0.0)))))
    w('      <site name="frame_0" size="0.02"/>')
    indent = "      "
    w('%s<body name="link1">' % indent)
    for i, L in enumerate(links, start=1):
        indent = _link_xml(w, i, L, indent, last=i == n, link_coll=link_coll, payload=arm.get("payload"))
    for i in range(n, 0, -1):
        w('%s</body>' % ("      " + "  " * (i - 1)))
    w('    </body>')
    for k, ob in enumerate(obstacles):
        name = ob.get("name", "obs%d" % k)
        w('    <body name="obs_%s" mocap="true" pos="%s">' % (name, _v(ob.get("pos", (0, 0, 0)))))
        w('      <geom name="obs_%s_geom" type="sphere" size="%s" rgba="0.9 0.2 0.2 0.6"'
          ' contype="0" conaffinity="0"/>' % (name, _f(ob["radius"])))
        w('    </body>')
    w('  </worldbody>')
    _joints_xml(w, links, link_coll)
    w('</mujoco>')
    return "\n".join(out) + "\n"


def _link_xml(w, i, L, indent, last, link_coll, payload):
    """Joint i, its link's inertia, geometry and frame site inside body link<i> (opened
    at `indent`); the payload on the last link; the next link's body opened. -> the
    next body's indent."""
    typ = L.get("type", "revolute")
    if typ not in ("revolute", "prismatic"):
        raise ValueError("link %d: unknown joint type %r" % (i, typ))
    ind = indent + "  "
    t, q = link_static_transform(L)
    radius = float(L.get("radius", DEFAULT_RADIUS) or DEFAULT_RADIUS)
    jattr = ['name="q%d"' % i, 'type="%s"' % ("hinge" if typ == "revolute" else "slide"),
             'axis="0 0 1"', 'pos="0 0 0"',
             'damping="%s"' % _f(L.get("damping", 0.0))]
    if L.get("limited", False):
        jattr.append('limited="true" range="%s %s"' % (_f(L["q_low"]), _f(L["q_high"])))
    else:
        jattr.append('limited="false"')
    w('%s<joint %s/>' % (ind, " ".join(jattr)))
    inert = _inertial_xml(L.get("mass", 0.0), L.get("inertia", (0.0, 0.0, 0.0)),
                          _apply(t, q, L.get("centroid", (0.0, 0.0, 0.0))), q, floor=True)
    if inert:
        w(ind + inert)
    cattr = 'contype="1" conaffinity="1"' if link_coll else 'contype="0" conaffinity="0"'
    length = math.sqrt(t[0] ** 2 + t[1] ** 2 + t[2] ** 2)
    rgba = "0.3 0.5 0.8 1" if i % 2 else "0.8 0.5 0.3 1"
    if length > 1e-9:
        w('%s<geom name="link%d_geom" type="capsule" fromto="0 0 0 %s" size="%s" rgba="%s" %s/>'
          % (ind, i, _v(t), _f(radius), rgba, cattr))
    else:
        w('%s<geom name="link%d_geom" type="sphere" size="%s" rgba="%s" %s/>'
          % (ind, i, _f(radius), rgba, cattr))
    w('%s<site name="frame_%d" pos="%s" quat="%s" size="0.02"/>' % (ind, i, _v(t), _v(q)))
    if last and payload:
        pin = _inertial_xml(payload.get("mass", 0.0), payload.get("inertia", (0, 0, 0)),
                            payload.get("centroid", (0.0, 0.0, 0.0)), (1.0, 0.0, 0.0, 0.0))
        if pin:
            w('%s<body name="payload" pos="%s" quat="%s">' % (ind, _v(t), _v(q)))
            w('%s  %s' % (ind, pin))
            w('%s</body>' % ind)
    if not last:
        # S_i places the next link's body (frame F_i, before joint i+1 moves)
        w('%s<body name="link%d" pos="%s" quat="%s">' % (ind, i + 1, _v(t), _v(q)))
        return ind
    return indent


def _joints_xml(w, links, link_coll):
    """Neighbouring links' contacts excluded, the holding brakes, the motors."""
    n = len(links)
    if link_coll and n > 1:
        w('  <contact>')
        for i in range(1, n):
            w('    <exclude body1="link%d" body2="link%d"/>' % (i, i + 1))
        w('  </contact>')

    # physical holding brakes (fail-safe, docs/design.md §5): one joint equality per joint,
    # inactive until Plant.set_brake engages it at the joint's current angle
    w('  <equality>')
    for i in range(1, n + 1):
        w('    <joint name="brake%d" joint1="q%d" polycoef="0 0 0 0 0" active="false"'
          ' solref="0.005 1"/>' % (i, i))
    w('  </equality>')

    w('  <actuator>')
    for i, L in enumerate(links, start=1):
        u = _u_sat(L)
        if u is None:
            w('    <motor name="u%d" joint="q%d" gear="1" ctrllimited="false"/>' % (i, i))
        else:
            w('    <motor name="u%d" joint="q%d" gear="1" ctrllimited="true" ctrlrange="%s %s"/>'
              % (i, i, _f(-u), _f(u)))
    w('  </actuator>')


def reference_arm(n_links=10, total_length=7.5, total_mass=100.0, damping=1.0, u_sat=1e6,
                  payload=True, gravity=(0.0, 0.0, 0.0)):
    """The thesis reference arm (Tables 5.4, 6.5, 6.6) as a plain dict: n equal solid
    cylinders 0.2 m in diameter along +x (alpha = d = 0), planar, starting straight.
    With the defaults: a = 0.75, mass 10, inertia [0.05, 0.4938, 0.4938], centroid
    [-0.375, 0, 0]; payload 10 kg, inertia diag(0.4938), centroid at the gripper."""
    a = total_length / n_links
    m = total_mass / n_links
    r = 0.1
    ixx = 0.5 * m * r * r
    iyy = m * (3 * r * r + a * a) / 12.0
    if n_links == 10:
        ixx, iyy = 0.05, 0.4938        # the thesis's (rounded) table values
    links = [{"type": "revolute", "theta": 0.0, "d": 0.0, "a": a, "alpha": 0.0,
              "mass": m, "inertia": [ixx, iyy, iyy], "centroid": [-a / 2.0, 0.0, 0.0],
              "q_low": -3.14, "q_high": 3.14, "limited": False, "u_sat": u_sat,
              "damping": damping, "radius": r, "q0": 0.0} for _ in range(n_links)]
    return {
        "links": links,
        "payload": ({"mass": 10.0, "inertia": [0.4938, 0.4938, 0.4938], "centroid": [0.0, 0.0, 0.0]}
                    if payload else None),
        "gravity": list(gravity),
        "base": {"pos": [0.0, 0.0, 0.0], "quat": [1.0, 0.0, 0.0, 0.0]},
        "link_collisions": False,
    }
