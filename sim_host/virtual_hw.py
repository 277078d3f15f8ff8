"""The plant as bus endpoints: what the joints' sensors would put on each agent's
HAL (JOINT_STATE frames from the host), and the torques taken from TORQUE frames.
The same frames feed in-process agents, MicroPython processes and boards in HIL."""
import math

import numpy as np

from bus_protocol import messages as m
from bus_protocol.states import BRAKED


class VirtualHardware:
    def __init__(self, plant, max_range=math.inf):
        self.plant = plant
        self.max_range = max_range
        self.seq = 0
        self.last_ranges = [None] * plant.n
        self._brakes = [L.get("physical_brake", False) for L in plant.links]
        self._any_brake = any(self._brakes)

    def sense_frames(self, tick):
        """One JOINT_STATE frame per link: q, qd and the link's range reading (link frame)."""
        plant = self.plant
        d = plant.data
        q, qd = d.qpos.tolist(), d.qvel.tolist()
        ranges = plant.range_readings(self.max_range) if self.max_range > 0 else [None] * plant.n
        self.last_ranges = ranges
        out = []
        encode, seq = m.encode, self.seq   # locals: N frames a tick (make bench)
        for i, r in enumerate(ranges):
            if r is None:
                vals = (tick, q[i], qd[i], 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            else:
                p_psh, x_r = r[0], r[1]
                vals = (tick, q[i], qd[i], 1) + tuple(map(float, p_psh)) + tuple(map(float, x_r))
            out.append(encode(m.JOINT_STATE, m.HOST, i + 1, seq, vals))
            seq = (seq + 1) & 0xFFFF
        self.seq = seq
        return out

    def apply(self, torques, states=None, silent=None, timeout=2, locked=()):
        """Motor drivers: hold these torques until the next call (zero-order hold).
        With the agents' reported states, a joint whose link has a physical brake
        (link field `physical_brake`) is locked while its agent reports BRAKED, and while
        its agent has been silent (`silent`: ticks without a torque command) for `timeout`
        ticks: the driver's watchdog drops the torque and the holding brake engages, as on
        a loss of power or heartbeat. `locked`: joints held whatever (joint_locked fault)."""
        plant = self.plant
        if silent is not None:   # plain ints: numpy scalars and .any() cost a call each (make bench)
            silent = np.asarray(silent).tolist()
            if any(silent):
                torques = np.where(np.array(silent) >= timeout, 0.0, torques)
        plant.set_torques(torques)
        if states is None or not (self._any_brake or locked):   # no brake to work
            return
        states = np.asarray(states).tolist()   # plain ints and bools: numpy scalars cost a call each (make bench)
        braked = plant.braked.tolist()
        for i, brake in enumerate(self._brakes):
            if brake:
                on = states[i] == BRAKED or (silent is not None and silent[i] >= timeout) or i in locked
            elif locked:
                on = i in locked
            else:
                continue
            if on != braked[i]:
                plant.set_brake(i, on)
