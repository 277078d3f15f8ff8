# Board HAL checks through fake machine/rp2/pyb (tests/fakes), runnable under the
# MicroPython unix port and CPython alike. Prints "PASS name" / "FAIL name: why" per
# check and "TORQUES <mode> <json>" for the cycle runs; tests/test_boards.py runs it
# under both interpreters.
import sys

try:
    _root = __file__.rsplit("/", 1)[0] + "/../.." if "/" in __file__ else "."
except NameError:
    _root = "."
for _p in (_root + "/tests/fakes", _root):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import json  # noqa: E402

import machine  # noqa: E402
import pyb  # noqa: E402

from bus_protocol import can_ids, framing, medium  # noqa: E402
from bus_protocol import messages as m  # noqa: E402
from firmware.layout import I_NA  # noqa: E402
from firmware.agent import LinkAgent  # noqa: E402
from firmware.hal import joint as J  # noqa: E402
from firmware.hal import rp2_uart, stm32_can  # noqa: E402
from firmware.hal.sim import SimHAL  # noqa: E402
from firmware.node import BusNode, ChainNode  # noqa: E402

PI = 3.141592653589793
RESULTS = []


def check(name):
    def dec(f):
        RESULTS.append((name, f))
        return f
    return dec


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


class Clock:
    """Replaces firmware.hal.joint.ticks_us so velocity checks are deterministic."""

    def __init__(self):
        self.t = 1000

    def __call__(self):
        self.t += 1              # 1 us per call, so busy-waits end
        return self.t


CLOCK = Clock()
J.ticks_us = CLOCK


def rp2_cfg(link=1, n=2, **over):
    cfg = {"board": "rp2-uart", "link": link, "n_links": n,
           "dh": {"type": "revolute", "theta": 0.0, "d": 0.0, "a": 0.5, "alpha": 0.0},
           "u_sat": 50.0, "mass": 2.0, "centroid": [-0.25, 0.0, 0.0],
           "behaviours": {"proxy": {}, "assertions": {}, "gravity": {"g": [0.0, -9.81, 0.0]}},
           "pins": {"enc_a": 2, "enc_b": 3, "pwm": 6, "dir": 7, "brake": 8, "fault": 10},
           "encoder": {"mode": "pio", "sm": 0},
           "joint": {"counts_per_rev": 2000, "gear_ratio": 10.0, "vel_tau_s": 0.005},
           "motor": {"kt": 0.1, "r_ohm": 2.0, "v_supply": 24.0, "i_max": 3.0, "backemf_ff": False}}
    for k in over:
        cfg[k] = over[k]
    return cfg


def stm_cfg(link=1, n=2, fd=False, **over):
    cfg = rp2_cfg(link, n)
    cfg["board"] = "stm32-can"
    cfg["pins"] = {"enc_a": "X1", "enc_b": "X2", "pwm": "Y1", "dir": "Y7", "brake": "Y8"}
    cfg["encoder"] = {"timer": 2}
    cfg["can"] = {"bus": 1, "fd": fd}
    for k in over:
        cfg[k] = over[k]
    return cfg


def pio_attach(hal):
    enc = hal.encoder
    enc.sm._attach_pins([enc._pa, enc._pb])
    enc.sm.run(40)
    enc._state = enc._pa.value() | (enc._pb.value() << 1)


def turn(hal, steps):
    """Drive the quadrature pins `steps` x4 counts (sign = direction)."""
    enc = hal.encoder
    seq = (0, 1, 3, 2)   # B<<1|A, A leads
    s = enc._pa.value() | (enc._pb.value() << 1)
    i = seq.index(s)
    d = 1 if steps > 0 else -1
    for _ in range(abs(steps)):
        i = (i + d) % 4
        a = seq[i] & 1
        b = seq[i] >> 1
        if hasattr(enc, "sm"):
            enc._pa.value(a)
            enc._pb.value(b)
            enc.sm.run(12)       # the SM samples every ~8 cycles
        else:
            if a != enc._pa.value():
                enc._pa._set(a)
            if b != enc._pb.value():
                enc._pb._set(b)


# ---------------------------------------------------------------- joint HAL checks
@check("pio_encoder_counts_to_rad")
def _():
    hal, ports = rp2_uart.make(rp2_cfg())
    pio_attach(hal)
    hal.read()
    turn(hal, 500)
    hal.read()
    assert hal.encoder.count() == 500, hal.encoder.count()
    assert close(hal.q, 500 * 2 * PI / (2000 * 10.0)), hal.q
    turn(hal, -1300)
    hal.read()
    assert hal.encoder.count() == -800, hal.encoder.count()
    assert close(hal.q, -800 * 2 * PI / 20000.0), hal.q


@check("irq_encoder_counts_invert_offset_prismatic")
def _():
    cfg = rp2_cfg(encoder={"mode": "irq"},
                  joint={"counts_per_rev": 400, "gear_ratio": 2.0, "encoder_invert": True,
                         "q_offset": 0.25, "m_per_rev": 0.01})
    hal, _p = rp2_uart.make(cfg)
    hal.read()
    assert hal.q == 0.25
    turn(hal, 123)
    hal.read()
    assert hal.encoder.count() == 123 and hal.encoder.errors == 0
    assert close(hal.q, 0.25 - 123 * 0.01 / 800.0), hal.q
    assert hal.encoder._pa.hard and hal.encoder._pb.hard


@check("velocity_filtered_difference")
def _():
    hal, _p = rp2_uart.make(rp2_cfg(encoder={"mode": "irq"},
                                    joint={"counts_per_rev": 20000, "gear_ratio": 10.0,
                                           "vel_tau_s": 0.005}))
    hal.read()
    # 2 rad/s at the joint = 2 * 200000/(2 pi) counts/s; 1 ms steps
    per_ms = 2.0 * 200000.0 / (2 * PI) / 1000.0
    acc = 0.0
    done = 0
    hist = []
    for k in range(60):
        CLOCK.t += 1000
        acc += per_ms
        n = int(acc) - done
        turn(hal, n)
        done += n
        hal.read()
        hist.append(hal.qd)
    assert 0.0 < hist[0] < 1.0, hist[0]            # filtered: a = 1/6 of the first quotient
    assert abs(hist[-1] - 2.0) < 0.02, hist[-1]    # converged within 1 %
    CLOCK.t += 1000
    hal.read()                                     # stopped: decays
    assert hal.qd < hist[-1]


@check("torque_to_duty_pwm_dir")
def _():
    hal, _p = rp2_uart.make(rp2_cfg(encoder={"mode": "irq"}))
    hal.read()
    # tau_m = 1/10 = 0.1; i = 1 A; V = 2 V; duty = 1/12
    assert hal.write(1.0)
    assert close(hal.duty, 1.0 / 12.0) and not hal.saturated
    assert hal._pwm.duty_u16() == int(65535 / 12.0 + 0.5) and hal._dir.value() == 1
    hal.write(-1.0)
    assert close(hal.duty, -1.0 / 12.0) and hal._dir.value() == 0
    assert hal._pwm.duty_u16() == int(65535 / 12.0 + 0.5)
    hal.write(100.0)                               # current limit 3 A -> 6 V -> 0.25
    assert close(hal.duty, 0.25) and hal.saturated and close(hal.i_cmd, 3.0)
    hal.write(-100.0)
    assert close(hal.duty, -0.25) and hal._dir.value() == 0
    assert not hal.write(float("nan")) and hal.duty == 0.0 and hal._pwm.duty_u16() == 0
    assert not hal.write(float("inf")) and hal.bad_writes == 2


@check("torque_to_duty_in1_in2_backemf_invert_dutymax")
def _():
    cfg = rp2_cfg(encoder={"mode": "irq"},
                  pins={"enc_a": 2, "enc_b": 3, "in1": 6, "in2": 7, "brake": 8},
                  bridge={"mode": "in1_in2", "freq": 25000},
                  motor={"kt": 0.1, "ke": 0.1, "r_ohm": 2.0, "v_supply": 24.0, "i_max": 3.0,
                         "motor_invert": True})
    hal, _p = rp2_uart.make(cfg)
    hal.read()
    assert hal._pwm.freq() == 25000 and hal._pwm2.freq() == 25000
    hal.qd = 1.0                                   # omega_m = 10 rad/s -> +1 V back-EMF
    hal.write(1.0)                                 # (2 + 1)/24, inverted -> IN2 side
    assert close(hal.duty, -3.0 / 24.0), hal.duty
    assert hal._pwm.duty_u16() == 0 and hal._pwm2.duty_u16() == int(65535 * 3.0 / 24.0 + 0.5)
    hal.qd = 0.0
    hal.write(-1.0)
    assert close(hal.duty, 2.0 / 24.0) and hal._pwm2.duty_u16() == 0 and hal._pwm.duty_u16() > 0
    hal.r_ohm = 20.0                               # 3 A * 20 ohm = 60 V > supply
    hal.write(-50.0)
    assert close(hal.duty, 0.95) and hal.saturated


@check("brake_pin_on_set_brake")
def _():
    hal, _p = rp2_uart.make(rp2_cfg(encoder={"mode": "irq"}))
    assert hal._brake.value() == 0 and hal.brake_engaged     # spring brake on at boot
    hal.read()
    hal.write(0.5)
    assert hal._brake.value() == 1 and not hal.brake_engaged  # released by the first torque
    hal.set_brake(True)
    assert hal._brake.value() == 0 and hal.duty == 0.0 and hal._pwm.duty_u16() == 0
    hal.write(5.0)                                 # agent's PD lock: motor stays off
    assert hal._pwm.duty_u16() == 0 and hal._brake.value() == 0
    hal.set_brake(False)
    assert hal._brake.value() == 0                 # lifted with the next torque
    hal.write(0.5)
    assert hal._brake.value() == 1 and hal._pwm.duty_u16() > 0
    hal.stop()
    assert hal._brake.value() == 0 and hal._pwm.duty_u16() == 0
    # active-low release wiring
    cfg = rp2_cfg(encoder={"mode": "irq"}, bridge={"brake_release_level": 0})
    hal2, _p = rp2_uart.make(cfg)
    assert hal2._brake.value() == 1
    hal2.write(0.1)
    assert hal2._brake.value() == 0


@check("range_sensors_nearest_round_robin")
def _():
    cfg = rp2_cfg(encoder={"mode": "irq"},
                  range={"driver": "fake_tof", "max_m": 1.0,
                         "sensors": [{"addr": 0x30, "pos": [-0.4, 0, 0], "dir": [0, 2, 0], "xshut": 16},
                                     {"addr": 0x31, "pos": [-0.1, 0, 0], "dir": [0, 0, 1], "xshut": 17}]})
    hal, _p = rp2_uart.make(cfg)
    i2c = hal._ranges[0][0].i2c
    i2c._dist[0x30] = 500
    i2c._dist[0x31] = 300
    hal.read()                                     # sensor 0 only (one per cycle)
    assert hal.range_valid and close(hal.x_r[1], 0.5) and hal.p_psh == (-0.4, 0.0, 0.0)
    hal.read()                                     # sensor 1 nearer
    assert close(hal.x_r[2], 0.3) and hal.p_psh == (-0.1, 0.0, 0.0)
    i2c._dist[0x30] = 2000                         # beyond max_m
    i2c._dist[0x31] = "err"                        # I2C error -> no reading
    hal.read()
    hal.read()
    assert not hal.range_valid


@check("stm32_timer_encoder_unwrap_and_pwm")
def _():
    hal, ports = stm32_can.make(stm_cfg())
    tim = hal._etim
    tim._cnt = 65000
    hal._raw = 65000
    hal.read()
    for _ in range(4):
        tim._move(20000)                           # wraps the 16-bit counter
        hal.read()
    assert hal._count == 80000, hal._count
    assert close(hal.q, 80000 * 2 * PI / 20000.0)
    tim._move(-30000)
    hal.read()
    assert hal._count == 50000
    hal.write(1.0)
    assert hal._ch.pulse_width() == int(hal._period / 12.0 + 0.5) and hal._dir.value() == 1
    assert hal._brake.value() == 1
    hal.set_brake(True)
    assert hal._brake.value() == 0 and hal._ch.pulse_width() == 0


# ---------------------------------------------------------------- bus checks
def reference_torques(cfgs, qs):
    """Same agents on SimHAL fed JOINT_STATE, routed in-process (as tests/mp/mp_agent_cycle)."""
    queue = []

    def send(buf, n):
        queue.append(bytes(buf[:n]))
    agents = [LinkAgent(c, SimHAL(send)) for c in cfgs]
    tick = 5
    for i in range(len(cfgs)):
        queue.append(m.encode(m.JOINT_STATE, m.HOST, i + 1, i, (tick, qs[i], 0.0, 0, 0., 0., 0., 0., 0., 0.)))
    host = Host(tick)
    for f in host.start():
        queue.append(f)
    while queue:
        f = queue.pop(0)
        for k in medium.receivers(f[2], f[1], len(agents)):
            if k == m.HOST:
                for g in host.on_frame(f):
                    queue.append(g)
            else:
                agents[k - 1].receive(f)
    return [a.u[0] for a in agents]


class Host:
    """A hand-rolled host for one cycle: SYNC, K_0, then on K_N the assertions and GOAL."""

    def __init__(self, tick, n=2):
        self.tick = tick
        self.n = n
        self.seq = 0
        self.asserts = []
        self.got = []
        self.torques = {}
        self.dec = m.Decoder()

    def enc(self, t, dst, v):
        self.seq += 1
        return m.encode(t, m.HOST, dst, self.seq, v)

    def start(self):
        return [self.enc(m.SYNC, m.BROADCAST, (self.tick,)),
                self.enc(m.KINEMATIC, 1, (self.tick, 1., 0., 0., 0.) + (0.,) * 9)]

    def on_frame(self, f):
        msg = self.dec.decode(f)
        assert msg is not None, "host got a bad frame"
        t, src, dst, seq, v = msg
        self.got.append((t, src))
        out = []
        if t == m.ASSERT:
            self.asserts.append(v)
        elif t == m.TORQUE:
            self.torques[src] = v[1]
        elif t == m.KINEMATIC and src == self.n:
            for a in self.asserts:
                out.append(self.enc(m.ASSERT, m.BROADCAST, a))
            p = v[5:8]
            out.append(self.enc(m.GOAL, m.BROADCAST, (self.tick, 0) + tuple(p) + (3.0, -2.0, 0.0, 0.0, 0.0, 0.5)))
        return out


def set_counts(hal, counts):
    if hasattr(hal, "encoder"):
        hal.encoder.sm.r["y"] = counts & 0xFFFFFFFF
    else:
        hal._etim._cnt = counts & 0xFFFF


def board_qs(hals):
    return [h.q for h in hals]


class ChainRig:
    """Two rp2 nodes on fake UARTs and a host; with `ring` link 2's down UART is wired
    back to a second host UART (the return wire)."""

    def __init__(self, ring):
        self.ring = ring
        self.cfgs = [rp2_cfg(1, bus={"ring": ring}), rp2_cfg(2, bus={"ring": ring})]
        self.hals, self.nodes, ports = [], [], []
        for c in self.cfgs:
            hal, p = rp2_uart.make(c)
            pio_attach(hal)
            self.hals.append(hal)
            ports.append(p)
        self.ports = ports
        self.host_uart = machine.UART(0)
        machine.wire(self.host_uart, ports[0]["up"].uart)
        machine.wire(ports[0]["down"].uart, ports[1]["up"].uart)
        self.host_in = [self.host_uart]
        if ring:
            self.host_ret = machine.UART(1)
            machine.wire(ports[1]["down"].uart, self.host_ret)   # the tip's down port: the return wire
            self.host_in.append(self.host_ret)
        else:
            assert ports[1]["down"] is None                # last link of a plain chain: no down port
        for c, hal, p in zip(self.cfgs, self.hals, ports):
            self.nodes.append(ChainNode(LinkAgent(c, hal), p["up"], p["down"], ring=p["ring"]))
        self.deframers = [framing.Deframer() for _ in self.host_in]
        self.per_port = [0] * len(self.host_in)
        self.bad = 0
        self._buf = bytearray(256)

    def cycle(self, host, split_goal=False, tolerant=False):
        """Run one host cycle to its end. With `split_goal` the host also sends its goal
        batch into the tip, split so that the tip takes the rebroadcast ASSERTs from below
        and again from link 1 before any GOAL. `tolerant`: frames the host cannot decode
        (garbage passed on by the nodes) are counted in .bad, not failed on."""
        nodes, host_uart = self.nodes, self.host_uart
        for f in host.start():
            host_uart.write(framing.uart_frame(f))
        for _ in range(50):
            for nd in nodes:
                nd.poll()
            for j in range(len(self.host_in)):
                n = self.host_in[j].readinto(self._buf)
                if not n:
                    continue
                for f in self.deframers[j].feed(bytes(self._buf[:n])):
                    if tolerant and host.dec.decode(f) is None:
                        self.bad += 1
                        continue
                    self.per_port[j] += 1
                    out = host.on_frame(f)
                    if split_goal and out:
                        for g in out[:-1]:         # the ASSERTs, from below
                            self.host_ret.write(framing.uart_frame(g))
                        nodes[1].poll()
                    for g in out:
                        host_uart.write(framing.uart_frame(g))
                    if split_goal and out:
                        nodes[0].poll()
                        nodes[1].poll()
                        self.host_ret.write(framing.uart_frame(out[-1]))   # the GOAL, last


def chain_cycle(ring, split_goal=False):
    """One cycle on two rp2 nodes; on a ring every frame for the host must come round
    it. With `split_goal` the agent must apply each assertion once, act once, and the
    late GOAL copy stop."""
    rig = ChainRig(ring)
    hals, nodes, cfgs = rig.hals, rig.nodes, rig.cfgs
    # joint 1 at +0.3 rad, joint 2 at -0.6 rad (counts of a 20000-count joint rev)
    set_counts(hals[0], 955)
    set_counts(hals[1], -1910)
    for h in hals:
        h._c0 = 0
    host = Host(5)
    rig.cycle(host, split_goal)
    per_port = rig.per_port
    assert sorted(host.torques) == [1, 2], host.got
    if ring:   # everything came round the ring, and none of the host's own frames did
        assert per_port[0] == 0 and per_port[1] == len(host.got), per_port
        assert all(src != m.HOST for _, src in host.got), host.got
    # link 2's gravity ASSERT reaches the host before its KINEMATIC (FIFO on the chain)
    order = [x for x in host.got if x[1] == 2 and x[0] in (m.ASSERT, m.KINEMATIC)]
    assert order == [(m.ASSERT, 2), (m.KINEMATIC, 2)], order
    qs = board_qs(hals)
    assert close(qs[0], 955 * 2 * PI / 20000) and close(qs[1], -1910 * 2 * PI / 20000)
    ref = reference_torques(cfgs, qs)
    for i in range(2):
        assert close(host.torques[i + 1], ref[i], 1e-5), (host.torques, ref)
        assert close(hals[i].u, ref[i], 1e-5)      # JOINT_STATE carries q as f32
        assert close(hals[i].duty, hals[i].duty_for(hals[i].u, 0.0), 1e-12)
    assert hals[0]._pwm.duty_u16() == int(abs(hals[0].duty) * 65535 + 0.5)
    # node 1 relayed node 2's traffic (chain) / node 2 relayed node 1's (ring)
    assert nodes[1 if ring else 0].forwarded >= (2 if ring else 3), [nd.forwarded for nd in nodes]
    assert nodes[0].dropped == nodes[1].dropped == 0
    if split_goal:   # link 1 applies both gravity assertions, link 2 its own, each once
        assert [nd.agent.I[I_NA] for nd in nodes] == [2, 1], [nd.agent.I[I_NA] for nd in nodes]
        assert nodes[1].goal_tick == 5
    return hals


@check("chain_two_nodes_full_cycle")
def _():
    hals = chain_cycle(False)
    print("TORQUES chain " + json.dumps([hals[0].u, hals[1].u]))


@check("ring_two_nodes_full_cycle")
def _():
    hals = chain_cycle(True)
    print("TORQUES ring " + json.dumps([hals[0].u, hals[1].u]))


@check("ring_goal_from_both_ends")
def _():
    hals = chain_cycle(True, split_goal=True)
    print("TORQUES ring2 " + json.dumps([hals[0].u, hals[1].u]))


@check("chain_and_ring_survive_line_noise")
def _():
    """Bursts of random bytes on every wire between cycles, on a chain and on a ring:
    nothing raises, the garbage is counted, and every cycle still gets both torques (a
    burst ends at a 0x00, i.e. the line resyncs before the next frame; one that does not
    swallows the frame it runs into, here that cycle's SYNC, and the next cycle is whole
    again)."""
    seed = [2463534242]

    def rnd(n):   # xorshift32: the same bytes under both interpreters
        x = seed[0]
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        seed[0] = x
        return x % n

    for ring in (False, True):
        rig = ChainRig(ring)
        wires = [rig.host_uart, rig.ports[0]["down"].uart, rig.ports[1]["up"].uart]
        if ring:
            wires += [rig.host_ret]
        for tick in range(10, 40):
            for u in wires:
                burst = bytes(rnd(256) for _ in range(rnd(120)))
                u.write(burst + (b"" if tick % 10 == 9 else b"\x00"))
            host = Host(tick)
            host.dec = m.Decoder()
            rig.cycle(host, tolerant=True)
            if tick % 10 != 9:   # an unterminated burst swallows the frame after it
                assert sorted(host.torques) == [1, 2], (ring, tick, host.got)
        bad = sum(nd.dropped + nd.agent.decoder.bad for nd in rig.nodes) + rig.bad
        assert bad > 30, bad


def can_cycle(fd):
    bus = pyb._reset()
    cfgs = [stm_cfg(1, fd=fd), stm_cfg(2, fd=fd)]
    hals = []
    nodes = []
    for c in cfgs:
        hal, p = stm32_can.make(c)
        hals.append(hal)
        nodes.append(BusNode(LinkAgent(c, hal), p["port"]))
    hcan = pyb.CAN(1, pyb.CAN.NORMAL)
    hcan.setfilter(0, pyb.CAN.MASK32, 0, (0, 0xFF), extframe=True)   # host: dst == 0
    hport = stm32_can.CanPort(hcan, fd=fd)
    set_counts(hals[0], 955)
    set_counts(hals[1], (-1910) & 0xFFFF)
    for h in hals:
        h._raw = 0
        h._c0 = 0
    host = Host(5)
    for f in host.start():
        hport.send(f)
    for _ in range(400):
        bus.step()
        for nd in nodes:
            nd.poll()
        f = hport.recv()
        if f is not None:
            for g in host.on_frame(f):
                hport.send(g)
        if len(host.torques) == 2 and not bus.nodes[0]._mb and not hport.pending():
            break
    assert sorted(host.torques) == [1, 2], host.got
    for nd in bus.nodes:
        assert len(nd._mb) <= 1 and nd.overruns == 0    # never more than one frame in flight
    # FIFO per sender on the wire: frames contiguous (fragments in order) and link 2's
    # ASSERT (priority 2) before its KINEMATIC (priority 1, lower id)
    seq = []
    for cid, data, fdf in bus.log:
        pr, t, src, dst = can_ids.parse_can_id(cid)
        assert fdf == fd
        if fd:
            assert len(data) in can_ids.FD_LENGTHS and len(data) >= 8 + data[5]
            seq.append((src, t, 0, 0))
        else:
            seq.append((src, t, data[0] >> 4, data[0] & 15))
    for src in (1, 2):
        mine = [s for s in seq if s[0] == src]
        k = 0
        while k < len(mine):                       # each frame: fragments 0..count-1, unbroken
            count = mine[k][3] + 1
            for i in range(count):
                assert mine[k + i][2] == i and mine[k + i][1] == mine[k][1], mine
            k += count
        types = [s[1] for s in mine if s[2] == 0]
        ia = types.index(m.ASSERT)
        ik = types.index(m.KINEMATIC)
        assert ia < ik, types
    qs = board_qs(hals)
    ref = reference_torques(cfgs, qs)
    for i in range(2):
        assert close(host.torques[i + 1], ref[i], 1e-5), (host.torques, ref)
    return hals, bus


@check("can_classic_fragmented_cycle_fifo_order")
def _():
    hals, bus = can_cycle(False)
    assert max(len(d) for _, d, _ in bus.log) == 8
    print("TORQUES can " + json.dumps([hals[0].u, hals[1].u]))


@check("can_fd_cycle_padding")
def _():
    hals, bus = can_cycle(True)
    assert max(len(d) for _, d, _ in bus.log) == 64
    print("TORQUES canfd " + json.dumps([hals[0].u, hals[1].u]))


@check("can_fragments_match_can_ids_fragment")
def _():
    bus = pyb._reset()
    a = pyb.CAN(1)
    b = pyb.CAN(2)
    b.setfilter(0, pyb.CAN.MASK32, 0, (0, 0), extframe=True)
    port = stm32_can.CanPort(a)
    frame = m.encode(m.KINEMATIC, 3, 4, 77, (9, 1., 0., 0., 0.) + tuple(float(i) for i in range(9)))
    port.send(frame)
    while port.pending() or a._mb:
        bus.step()
        port.pump()
    assert [d for _, d, _ in bus.log] == can_ids.fragment(frame)
    assert all(c == can_ids.can_id(m.KINEMATIC, 3, 4) for c, _, _ in bus.log)


@check("can_naive_mailboxes_would_reorder")
def _():
    # Why CanPort keeps one frame in flight: loading two mailboxes lets the lower id
    # (KINEMATIC, priority 1) overtake the ASSERT queued before it.
    bus = pyb._reset()
    a = pyb.CAN(1)
    a.send(b"\x00assert", can_ids.can_id(m.ASSERT, 2, 0), extframe=True)
    a.send(b"\x00kinema", can_ids.can_id(m.KINEMATIC, 2, 0), extframe=True)
    bus.run()
    assert can_ids.parse_can_id(bus.log[0][0])[1] == m.KINEMATIC


@check("can_reassembler_drops_lost_fragment")
def _():
    bus = pyb._reset()
    a = pyb.CAN(1)
    b = pyb.CAN(2)
    b.setfilter(0, pyb.CAN.MASK32, 0, (0, 0), extframe=True)
    tx = stm32_can.CanPort(a)
    rx = stm32_can.CanPort(b)
    f1 = m.encode(m.TORQUE, 1, m.HOST, 1, (5, 1.5, 1, 0., 0., 0., 0., 0., 0.))   # 6 fragments
    f2 = m.encode(m.TORQUE, 1, m.HOST, 2, (6, 2.5, 1, 0., 0., 0., 0., 0., 0.))
    tx.send(f1)
    tx.send(f2)
    got = []
    k = 0
    while tx.pending() or a._mb or b._rx:
        if a._mb:
            k += 1
            if k == 3:                             # fragment 2 of f1 is lost on the wire
                a._mb.pop(0)
            else:
                bus.step()
        tx.pump()
        f = rx.recv()
        if f is not None:
            got.append(f)
    assert got == [f2], got
    # fragments 0,1 of f1 discarded when 3 arrives out of order, then 3, 4, 5 stray
    assert rx.reasm.dropped == 5, rx.reasm.dropped
    assert rx.reasm.frames == 1


@check("can_tx_queue_full_drops_whole_frames")
def _():
    pyb._reset()
    a = pyb.CAN(1)
    port = stm32_can.CanPort(a, slots=12)
    f = m.encode(m.TORQUE, 1, m.HOST, 1, (5, 1.5, 1, 0., 0., 0., 0., 0., 0.))   # 6 fragments
    assert port.send(f)          # 1 in a mailbox, 5 queued
    assert port.send(f)          # 11 queued
    assert not port.send(f)      # needs 6, 1 left: refused whole
    assert port.tx_dropped == 1 and port.pending() == 11


@check("can_receive_filter_dst")
def _():
    pyb._reset()
    hal, p = stm32_can.make(stm_cfg(3, 4))
    can = p["port"].can
    assert can._accepts(can_ids.can_id(m.KINEMATIC, 2, 3))
    assert can._accepts(can_ids.can_id(m.GOAL, 0, 0xFF))
    assert not can._accepts(can_ids.can_id(m.KINEMATIC, 3, 4))
    assert not can._accepts(can_ids.can_id(m.TORQUE, 2, 0))


@check("uart_port_nonblocking_and_short_write")
def _():
    a = machine.UART(0)
    b = machine.UART(1)
    machine.wire(a, b)
    pa = rp2_uart.UartPort(a)
    pb = rp2_uart.UartPort(b)
    buf = bytearray(4)
    assert pb.readinto(buf) is None
    assert pa.write(b"abcdef") == 6
    assert pb.readinto(buf) == 4 and bytes(buf) == b"abcd"
    assert pb.readinto(buf) == 2 and bytes(buf[:2]) == b"ef"
    a.tx_limit = 3
    assert pa.write(b"xyzw") == 3 and pa.short_writes == 1


@check("boards_table_boots_both_mcu_boards")
def _():
    from firmware import main as fw_main
    pyb._reset()
    for cfg in (rp2_cfg(1, 2), stm_cfg(1, 2)):
        board, agent, node = fw_main.build(cfg)      # what main.run() does on the board
        assert board.name == cfg["board"] and agent.link == 1 and not board.closed
        assert board.wait(3) is False                # quiet bus: sleeps, returns after ms
    # a board with the arm's key answers a PING signed with it (firmware/auth.py)
    from bus_protocol.mac import Hmac
    key = bytes(range(32))
    cfg = rp2_cfg(1, 2)
    cfg["auth"] = {"key": key}
    board, agent, node = fw_main.build(cfg)
    host = machine.UART(5)
    machine.wire(host, board.ports["up"].uart)
    host.write(framing.uart_frame(m.protect(m.encode(m.COMMAND, 0, 1, 0, (m.CMD_PING, 0.0)), Hmac(key), 0, 0)))
    assert board.wait(50) is True and node.poll() == 1
    out = bytearray(128)
    n = host.readinto(out, host.any())
    frames = framing.Deframer().feed(out[:n])
    assert frames and m.Decoder().decode(frames[0])[0] == m.STATUS   # the agent answered


def main():
    failed = 0
    for name, f in RESULTS:
        try:
            f()
            print("PASS " + name)
        except Exception as e:  # noqa: BLE001 - report every check
            failed += 1
            print("FAIL %s: %s %r" % (name, type(e).__name__, e))
            if "-v" in sys.argv:
                raise
    print("DONE %d failed" % failed)


main()
