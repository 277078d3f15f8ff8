"""The plant as bus endpoints: what the joints' sensors would put on each agent's
HAL (JOINT_STATE frames from the host), and the torques taken from TORQUE frames.
The same frames feed in-process agents, MicroPython processes and boards in HIL."""
import math

from bus_protocol import messages as m
from bus_protocol.states import BRAKED


class VirtualHardware:
    def __init__(self, plant, max_range=math.inf):
        self.plant = plant
        self.max_range = max_range
        self.seq = 0
        self.last_ranges = [None] * plant.n

    def sense_frames(self, tick):
        """One JOINT_STATE frame per link: q, qd and the link's range reading (link frame)."""
        q, qd = self.plant.joint_state()
        ranges = self.plant.range_readings(self.max_range) if self.max_range > 0 else [None] * self.plant.n
        self.last_ranges = ranges
        out = []
        for i in range(self.plant.n):
            r = ranges[i]
            if r is None:
                vals = (tick, float(q[i]), float(qd[i]), 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            else:
                p_psh, x_r = r[0], r[1]
                vals = (tick, float(q[i]), float(qd[i]), 1) + tuple(map(float, p_psh)) + tuple(map(float, x_r))
            out.append(m.encode(m.JOINT_STATE, m.HOST, i + 1, self.seq, vals))
            self.seq = (self.seq + 1) & 0xFFFF
        return out

    def apply(self, torques, states=None):
        """Motor drivers: hold these torques until the next call (zero-order hold).
        With the agents' reported states, a joint whose link has a physical brake
        (link field `physical_brake`) is locked while its agent reports BRAKED."""
        self.plant.set_torques(torques)
        if states is not None:
            for i, L in enumerate(self.plant.links):
                if L.get("physical_brake", False):
                    self.plant.set_brake(i, int(states[i]) == BRAKED)
