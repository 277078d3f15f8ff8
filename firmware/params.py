# A node's bring-up commands (`linkteam node`, in the spirit of moteus_tool / odrivetool),
# on the bus as COMMAND frames (bus_protocol/SPEC.md, CMD_PARAM .. CMD_REBOOT), answered
# with LOG lines that start "param ":
#   PARAM    the CONFIG blob received so far is a request: {"get": KEY} or
#            {"set": KEY, "value": V}; KEY is a dotted path into the link's config
#            ("u_sat", "behaviours.centering.kq", "safety.watchdog_ms"). A set is refused
#            while the node runs, as CONFIG_APPLY is, and applied as a config is (invalid:
#            the old config stays)
#   SAVE     the link's config as it is now -> its config file (/config.json on a board)
#   ZERO     encoder offset: the joint reads `arg` where it stands; saved
#   JOG_*    drive the joint by torque (N m or N) or velocity (rad/s or m/s) `arg`, within
#            u_sat, the joint limits and qd_max; not refreshed for JOG_TIMEOUT_MS (the
#            dead-man), the joint brakes (fault `command`, reason "jog not refreshed")
#   REBOOT   restart the board: it boots main.py again and reads its config file
# Imported for one call (agent._once); what lasts is on the agent (agent.jog).
import json

from bus_protocol import messages as m
from firmware import safety

JOG_TIMEOUT_MS = 250   # the dead-man: a jog not refreshed for this long brakes the joint
# the config file main.py reads at boot, from the working directory (the filesystem's root
# on a board at boot): MicroPython's VfsPosix (the unix port, vboards) renames onto an
# absolute path wrongly, a relative one rightly
CONFIG_PATH = "config.json"


def _say(agent, text):
    agent.send(m.LOG, m.HOST, (("param " + text).encode()[:m.LOG_MAX_TEXT],))


def _lookup(cfg, key):
    v = cfg
    for part in key.split("."):
        v = v[part]   # KeyError: no such parameter
    return v


def _with(cfg, key, value):
    """A copy of cfg with the dotted key set (its tables copied on the way down)."""
    new = dict(cfg)
    t = new
    parts = key.split(".")
    for part in parts[:-1]:
        t[part] = dict(t.get(part) or {})
        t = t[part]
    t[parts[-1]] = value
    return new


def command(agent, cmd, arg):
    try:
        if cmd == m.CMD_PARAM:
            _param(agent)
        elif cmd == m.CMD_SAVE:
            save(agent)
            _say(agent, "saved")
        elif cmd == m.CMD_ZERO:
            _zero(agent, arg)
        elif cmd == m.CMD_JOG_TORQUE or cmd == m.CMD_JOG_VELOCITY:
            _jog(agent, cmd == m.CMD_JOG_VELOCITY, arg)
        elif cmd == m.CMD_REBOOT:
            reboot()
    except (KeyError, ValueError, TypeError, OSError, ImportError) as e:
        _say(agent, "! %s %s" % (type(e).__name__, e))


def _param(agent):
    blob, agent._cfg_blob = agent._cfg_blob, None
    req = json.loads(bytes(blob or b"{}"))
    key = req.get("get") or req.get("set")
    if not key:
        raise ValueError("no get or set in the request")
    if "set" in req:
        if agent.safety.state == safety.RUN:
            _say(agent, "! refused: running (brake or reset it first)")
            return
        old = agent.cfg
        try:
            agent.configure(_with(old, key, req["value"]))
            agent.safety.configure(agent._safety_cfg)
        except Exception:
            agent.configure(old)
            raise
    _say(agent, "%s = %s" % (key, json.dumps(_lookup(agent.cfg, key))))


def save(agent):
    """The link's config -> its config file, whole or not at all (written aside, renamed)."""
    import os
    path = agent.cfg.get("config_path", CONFIG_PATH)
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(agent.cfg))
    os.rename(path + ".tmp", path)


def _zero(agent, at):
    hal = agent.hal
    if not hasattr(hal, "q_offset"):
        _say(agent, "! no encoder (a simulated joint)")
        return
    hal.read()
    hal.q_offset += at - hal.q   # firmware/hal/joint.py: q = q_offset + counts * scale
    hal.q = at
    joint = dict(agent.cfg.get("joint") or {})
    joint["q_offset"] = hal.q_offset
    agent.cfg = _with(agent.cfg, "joint", joint)
    save(agent)
    _say(agent, "zero: q = %g, joint.q_offset = %g (saved)" % (at, hal.q_offset))


def _jog(agent, velocity, value):
    sf = agent.safety
    if sf.state == safety.RUN or sf.faults:
        _say(agent, "! refused: %s" % ("running" if sf.state == safety.RUN else
                                       "faults latched (release first): " + " ".join(safety.fault_names(sf.faults))))
        return
    hal = agent.hal
    hal.read()
    q, qd = hal.q, hal.qd
    if velocity:   # velocity loop on the brake's damping gain, within qd_max
        vmax = sf.qd_max if hasattr(sf, "qd_max") else 1e9
        value = max(-vmax, min(vmax, value))
        u = agent.brake_gains[1] * (value - qd)
    else:
        u = value
    u = max(-agent.u_sat, min(agent.u_sat, u))
    if (q >= agent.q_high and u > 0.0) or (q <= agent.q_low and u < 0.0):
        u = 0.0   # never drive past a joint limit
    agent.jog = hal.ticks_us()
    if hasattr(hal, "set_brake"):
        hal.set_brake(False)
    write = getattr(hal, "write", None)
    if write is not None:
        write(u)
    agent.u[0] = u
    _say(agent, "jog u = %.4g q = %.4g qd = %.4g" % (u, q, qd))


def jog_expired(agent):
    """The dead-man (from LinkAgent.idle): a jog not refreshed for JOG_TIMEOUT_MS brakes."""
    from firmware.hal import ticks_diff
    if ticks_diff(agent.hal.ticks_us(), agent.jog) < 1000 * JOG_TIMEOUT_MS:
        return False
    agent.jog = None
    write = getattr(agent.hal, "write", None)
    if write is not None:
        write(0.0)
    agent.safety.trip(safety.F_COMMAND, "jog not refreshed for %d ms" % JOG_TIMEOUT_MS, safety.BRAKED)
    if hasattr(agent.hal, "set_brake"):
        agent.hal.set_brake(True)
    agent.u[0] = 0.0
    agent.report_faults()
    return True


def reboot():
    import machine
    if hasattr(machine, "reset"):
        machine.reset()
    machine.soft_reset()   # the unix port: SystemExit, which a vboard takes for a reset (host/tools/vboard.py)
