# The joint response checks (firmware/safety.py check_response) on a one-link rig whose
# joint is a body of inertia I driven by the agent's own torque, runnable under
# MicroPython and CPython: prints one line per case (case, tick the first fault latched
# or -1, state, fault bits). tests/test_safety.py runs it under both and checks the lines.
import sys

if "__file__" in globals():   # run as a file: the repository on sys.path
    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../..")

from firmware.injection import INJ_SILENT   # noqa: E402
from tests.mp.mp_safety import Rig          # noqa: E402

I = 5.0            # kg m^2
DT = 1.0 / 120.0   # the safety config's default period


def drive(case, n, force, motor=True, fling=0.0, fling_ticks=(), frozen_from=-1, respond_u=5.0, inject=(),
          garbage_from=-1):
    """n cycles: the goal's f_y = force(k) at 1 m (the agent's torque u = f_y); the joint
    integrates (motor * u + d) / I, d flinging it at `fling` rad/s^2 against u on the
    ticks in fling_ticks; from tick frozen_from on the encoder reads what it read the
    tick before, qd = 0; from tick garbage_from on it reads garbage (a fixed pseudo-random
    sequence in +-3 rad, +-30 rad/s). The motor check on with respond_u (the safety
    defaults else); `inject`: the agent's fault injection config."""
    r = Rig(safety={"respond_u": respond_u}, inject=list(inject))
    q = qd = 0.0
    read = (0.0, 0.0)
    first = -1
    seed = 12345
    for k in range(n):
        if 0 <= garbage_from <= k:
            seed = (seed * 1103515245 + 12345) % 2147483648
            read = (6.0 * seed / 2147483648.0 - 3.0, 60.0 * ((seed >> 8) % 1000) / 1000.0 - 30.0)
        elif frozen_from < 0 or k < frozen_from:
            read = (q, qd)
        elif k == frozen_from:
            read = (read[0], 0.0)
        r.cycle(k, q=read[0], qd=read[1], goal=(1.0, 0.0, 0.0, 0.0, force(k), 0.0, 0.0, 0.0, 0.0))
        if first < 0 and r.agent.safety.faults:
            first = k
        u = r.agent.u[0]
        a = (u if motor else 0.0) / I
        if k in fling_ticks:
            a -= fling if u > 0.0 else -fling
        q += qd * DT + 0.5 * a * DT * DT
        qd += a * DT
    s = r.agent.safety
    print("%s %d %d %d" % (case, first, s.state, s.faults))


def run():
    ramp = lambda k: 10.0 + 1.5 * k          # noqa: E731
    wave = lambda k: 10.0 * (1.0 if (k // 20) % 2 else -1.0)   # noqa: E731
    drive("live_ramp", 60, ramp)
    drive("live_wave", 60, wave)
    drive("frozen_ramp", 60, ramp, frozen_from=20)
    drive("garbage", 60, ramp, garbage_from=20)
    drive("frozen_constant", 60, lambda k: 10.0, frozen_from=20)
    drive("frozen_small_change", 60, lambda k: 10.0 + (0.5 if k > 30 else 0.0), frozen_from=20)
    drive("dead_flung", 60, lambda k: 10.0, motor=False, fling=20.0, fling_ticks=range(60))
    drive("live_flung_briefly", 60, lambda k: 10.0, fling=40.0, fling_ticks=range(10, 22))
    drive("dead_flung_small_u", 60, lambda k: 3.0, motor=False, fling=20.0, fling_ticks=range(60))
    drive("dead_flung_check_off", 60, lambda k: 10.0, motor=False, fling=20.0, fling_ticks=range(60), respond_u=0.0)
    # a silent node's torque never reaches its motor (the driver brakes): not the motor's fault
    drive("silent_flung", 60, lambda k: 10.0, motor=False, fling=20.0, fling_ticks=range(60),
          inject=[[INJ_SILENT, 0, -1, 0, 0, None]])
    drive("dead_flung_slowly", 60, lambda k: 10.0, motor=False, fling=8.0, fling_ticks=range(60))


if __name__ == "__main__":
    run()
