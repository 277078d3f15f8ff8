# Hardware abstraction for a link agent. Every back end (sim.py, boards) offers the same
# small surface, split like ros2_control's read()/write():
#   read() -> bool        refresh q, qd and the range reading (False on a sensor error)
#   q, qd                 joint position (rad or m) and velocity, valid after read()
#                         (a simulated joint's may stay in the agent's S instead: sim.py)
#   range_valid, p_psh, x_r   nearest hazard point on the link and vector to the
#                         obstacle surface, both in link-frame coordinates
#   write(u) -> bool      command joint torque (N m) or force (N); none where the motor is
#                         the host's simulated plant, which takes the torque from the
#                         agent's TORQUE report (sim.py); looked up once, when the agent
#                         is built (as report() and take_joint_state())
#   set_brake(on)         physical brake where the board has one
#   send(buf, n)          put one logical frame (bus_protocol) on the bus
#   ticks_us()            free-running microsecond clock
try:
    from time import ticks_diff, ticks_us
except ImportError:  # CPython
    from time import perf_counter_ns

    def ticks_us():
        return perf_counter_ns() // 1000

    from operator import sub as ticks_diff   # a - b, without a Python call per use


try:
    import micropython
except ImportError:  # CPython: what the firmware uses of the micropython module
    class micropython:
        """const() and the @micropython.native decorator as no-ops (MicroPython's compiler
        acts on both where it compiles the firmware)."""
        const = staticmethod(lambda x: x)
        native = staticmethod(lambda f: f)


const = micropython.const   # `from firmware.hal import const`: the layout blocks' (make layouts)
