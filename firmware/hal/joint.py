# Board-independent half of a real joint's HAL (firmware/hal/__init__.py surface):
# encoder counts -> joint position, velocity by filtered differencing, joint torque ->
# signed PWM duty through a DC motor model, fail-safe brake bookkeeping, and the range
# sensor array along the link -> (p_psh, x_r). No machine/rp2/pyb import here: the
# board modules (rp2_uart.py, stm32_can.py) subclass JointCore and supply the pins,
# so this file runs (and is tested) on CPython and the MicroPython unix port alike.
#
# Config keys (cfg["joint"], all optional except counts_per_rev):
#   counts_per_rev   encoder counts per MOTOR revolution after x4 decoding (e.g. 4*CPR)
#   gear_ratio       motor revolutions per joint revolution (default 1)
#   m_per_rev        prismatic joints: metres of travel per joint revolution (lead);
#                    absent -> revolute, q in rad
#   encoder_invert   true flips the count direction (fix a wrong A/B order in software)
#   q_offset         joint position at count 0 (rad or m), i.e. where the node booted
#   vel_tau_s        time constant of the first-order velocity filter (default 0.005 s)
# Motor (cfg["motor"]), DC motor model (docs/design.md §7, thesis 2.36-2.49), voltage mode:
#   kt               torque constant, N m/A at the motor shaft
#   ke               back-EMF constant, V s/rad (default kt, SI units)
#   r_ohm            winding resistance, ohm
#   v_supply         motor supply voltage, V
#   i_max            current limit, A (the torque request is clamped to kt*i_max)
#   duty_max         PWM duty limit 0..1 (default 0.95; bootstrap drivers need < 1)
#   gear_eff         gearbox efficiency 0..1 (default 1)
#   backemf_ff       true adds ke*omega_motor to the voltage (default true)
#   motor_invert     true flips the drive direction (fix a swapped motor lead)
#   brake_cuts_motor true (default): while the brake is commanded on, duty = 0
from firmware.hal import ticks_diff, ticks_us

try:
    from micropython import const
except ImportError:  # CPython
    def const(x):
        return x

_TWO_PI = 6.283185307179586
_INF = float("inf")
RANGE_NONE = const(-1)      # a sensor with no target in range


def unwrap(prev, raw, bits):
    """Signed difference raw - prev of a free-running `bits`-wide hardware counter."""
    half = 1 << (bits - 1)
    d = (raw - prev) & ((1 << bits) - 1)
    return d - (1 << bits) if d >= half else d


class JointCore:
    """Shared state and maths of a board joint. A subclass implements
    _counts() -> int (monotonic, already unwrapped), _drive(duty) with duty in
    [-duty_max, duty_max] (sign = direction), _brake_out(engaged) and, optionally,
    _current() -> A. Attributes follow firmware/hal/__init__.py."""

    def __init__(self, cfg):
        j = cfg.get("joint", {})
        mo = cfg.get("motor", {})
        cpr = float(j["counts_per_rev"])
        gear = float(j.get("gear_ratio", 1.0))
        lead = j.get("m_per_rev")
        self.prismatic = lead is not None
        per_rev = float(lead) if self.prismatic else _TWO_PI   # joint units per joint rev
        self.gear = gear
        # q = q_offset + sign * counts * per_rev / (cpr * gear)
        self.scale = (-1.0 if j.get("encoder_invert") else 1.0) * per_rev / (cpr * gear)
        self.q_offset = float(j.get("q_offset", 0.0))
        # motor shaft rad per joint unit: omega_m = qd * m_rad; tau_m = u / (m_rad * eff)
        self.m_rad = gear * _TWO_PI / per_rev
        self.vel_tau = float(j.get("vel_tau_s", 0.005))
        self.kt = float(mo.get("kt", 0.05))
        self.ke = float(mo.get("ke", self.kt))
        self.r_ohm = float(mo.get("r_ohm", 1.0))
        self.v_supply = float(mo.get("v_supply", 24.0))
        self.i_max = float(mo.get("i_max", 2.0))
        self.duty_max = float(mo.get("duty_max", 0.95))
        self.gear_eff = float(mo.get("gear_eff", 1.0))
        self.backemf_ff = bool(mo.get("backemf_ff", True))
        self.motor_sign = -1.0 if mo.get("motor_invert") else 1.0
        self.brake_cuts_motor = bool(cfg.get("brake_cuts_motor", True))
        # state (HAL surface)
        self.q = self.q_offset
        self.qd = 0.0
        self.range_valid = False
        self.p_psh = (0.0, 0.0, 0.0)
        self.x_r = (0.0, 0.0, 0.0)
        self.u = 0.0
        self.duty = 0.0
        self.i_cmd = 0.0
        self.saturated = False
        self.current = 0.0
        self.braked = False          # brake commanded by the agent
        self.brake_engaged = True    # spring brake: engaged from power-up until released
        self.bad_writes = 0
        self.unrouted = 0
        self.ticks_us = ticks_us
        self._c0 = None              # count at the first read (q_offset there)
        self._t_prev = 0
        self._q_prev = self.q
        self._ranges = []            # [(sensor, pos(3), dir(3))], filled by the board
        self._rng_mm = []            # latest reading per sensor (mm, RANGE_NONE)
        self._rng_next = 0
        self.range_max_m = 2.0

    # ---- read(): sense ----------------------------------------------------------
    def read(self):
        """Refresh q, qd (and one range sensor, round-robin: bounded I2C per cycle)."""
        c = self._counts()
        t = ticks_us()
        if self._c0 is None:
            self._c0 = c
            self._t_prev = t
            self.q = self._q_prev = self.q_offset
            self.qd = 0.0
        else:
            q = self.q_offset + (c - self._c0) * self.scale
            dt = ticks_diff(t, self._t_prev) * 1e-6
            if dt > 0.0:
                # first-order low pass on the difference quotient: a = dt / (tau + dt)
                raw = (q - self._q_prev) / dt
                self.qd += (dt / (self.vel_tau + dt)) * (raw - self.qd)
                self._t_prev = t
                self._q_prev = q
            self.q = q
        self.current = self._current()
        if self._ranges:
            self._read_range()
        return True

    def _current(self):
        return 0.0

    def _read_range(self):
        k = self._rng_next
        sensor = self._ranges[k][0]
        try:
            mm = sensor.read()
        except OSError:       # I2C NAK / timeout: this sensor reads nothing this cycle
            mm = None
        self._rng_mm[k] = RANGE_NONE if mm is None or mm < 0 else mm
        self._rng_next = (k + 1) % len(self._ranges)
        best = -1
        best_mm = 0
        lim = self.range_max_m * 1000.0
        for i in range(len(self._rng_mm)):
            d = self._rng_mm[i]
            if d != RANGE_NONE and d <= lim and (best < 0 or d < best_mm):
                best = i
                best_mm = d
        if best < 0:
            self.range_valid = False
            return
        # docs/design.md §5 RMOA: p_psh = the sensor's point on the link, x_r = vector from it to
        # the obstacle surface along the beam, both in link frame i (sim_host/plant.py).
        _, pos, d = self._ranges[best]
        r = best_mm * 0.001
        self.p_psh = pos
        self.x_r = (d[0] * r, d[1] * r, d[2] * r)
        self.range_valid = True

    # ---- write(): act -------------------------------------------------------------
    def duty_for(self, u, qd):
        """Joint torque (N m) or force (N) -> signed duty in [-duty_max, duty_max].
        tau_m = u / (gear_ratio' * eff); i = tau_m / kt clamped to +-i_max;
        V = i*R + ke*omega_m; duty = V / v_supply clamped. Sets i_cmd, saturated."""
        tau_m = u / (self.m_rad * self.gear_eff)
        i = tau_m / self.kt
        sat = False
        if i > self.i_max:
            i = self.i_max
            sat = True
        elif i < -self.i_max:
            i = -self.i_max
            sat = True
        v = i * self.r_ohm
        if self.backemf_ff:
            v += self.ke * qd * self.m_rad
        duty = v / self.v_supply
        if duty > self.duty_max:
            duty = self.duty_max
            sat = True
        elif duty < -self.duty_max:
            duty = -self.duty_max
            sat = True
        self.i_cmd = i
        self.saturated = sat
        return duty * self.motor_sign

    def write(self, u):
        """ros2_control-style: False (and motor off) on a non-finite command."""
        if u != u or u == _INF or u == -_INF:
            self.bad_writes += 1
            self.duty = 0.0
            self._drive(0.0)
            return False
        self.u = u
        if self.braked and self.brake_cuts_motor:
            self.duty = 0.0
            self._drive(0.0)
            return True
        if self.brake_engaged and not self.braked:
            # first torque after power-up (or after a release): lift the spring brake
            self.brake_engaged = False
            self._brake_out(False)
        self.duty = self.duty_for(u, self.qd)
        self._drive(self.duty)
        return True

    def set_brake(self, on):
        """docs/design.md §5 fail-safe brake: engage the spring-applied brake (and cut the motor)."""
        on = bool(on)
        self.braked = on
        if on:
            self.brake_engaged = True
            self._brake_out(True)
            if self.brake_cuts_motor:
                self.duty = 0.0
                self._drive(0.0)
        else:
            # released on the next write(), so brake and motor hand over in one step
            pass

    def setup_ranges(self, rcfg, i2c, make_pin):
        """Range sensors along the link (docs/design.md §5 RMOA), from cfg["range"]:
          driver   module name exposing Sensor(i2c, addr) (default "vl53l1x")
          max_m    readings beyond this are ignored (default 2.0)
          sensors  [{addr, pos [x,y,z] m in link frame i, dir [x,y,z] beam direction
                    in link frame i, xshut pin (optional)}]
        With xshut pins, every sensor is held in reset and woken one at a time so that
        the driver can move it off the shared default address 0x29."""
        Sensor = load_driver(rcfg.get("driver", "vl53l1x"))
        self.range_max_m = float(rcfg.get("max_m", 2.0))
        sensors = rcfg.get("sensors", [])
        xs = []
        for s in sensors:
            p = make_pin(s["xshut"]) if "xshut" in s else None
            if p is not None:
                p.value(0)
            xs.append(p)
        for k in range(len(sensors)):
            s = sensors[k]
            if xs[k] is not None:
                xs[k].value(1)
                t0 = ticks_us()
                while ticks_diff(ticks_us(), t0) < 2000:   # VL53Lx boot time (< 1.2 ms)
                    pass
            d = vec3(s.get("dir"), (0.0, 0.0, 1.0))
            n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) ** 0.5
            self._ranges.append((Sensor(i2c, int(s.get("addr", 0x29))), vec3(s.get("pos")),
                                 (d[0] / n, d[1] / n, d[2] / n)))
            self._rng_mm.append(RANGE_NONE)

    def send(self, buf, n):
        """Replaced by the node (firmware/node.py) before the first frame."""
        self.unrouted += 1

    def stop(self):
        """Motor off, brake on: what a board does before a soft reset."""
        self._drive(0.0)
        self.braked = True
        self.brake_engaged = True
        self._brake_out(True)


def vec3(v, default=(0.0, 0.0, 0.0)):
    if v is None:
        return default
    return (float(v[0]), float(v[1]), float(v[2]))


def load_driver(name):
    """Import a range-sensor driver module by name (e.g. a VL53L1X driver copied to the
    board). The module must offer Sensor(i2c, addr) with read() -> mm (negative or
    None = no target); see hardware/README.md."""
    mod = __import__(name)
    for part in name.split(".")[1:]:
        mod = getattr(mod, part)
    return mod.Sensor
