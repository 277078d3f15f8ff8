"""A node's bring-up commands (firmware/params.py) on a LinkAgent in CPython: parameter get
and set (refused while running, an invalid value leaves the config), save, encoder zero on a
board joint (firmware/hal/joint.py), the jog's limits and its dead-man; and the host's
parameter checks (host/tools/node.py). The same commands against two virtual boards:
tests/test_bringup.py."""
import json

import pytest

from bus_protocol import messages as m
from bus_protocol import states
from firmware import safety
from firmware.agent import LinkAgent
from firmware.hal.joint import JointCore
from host.errors import UsageError
from host.tools.node import param_spec, parse_value
from host.scenario.loader import load

from .conftest import REPO

HIL2 = REPO / "scenarios" / "hil2.toml"


class Joint(JointCore):
    """A board joint whose encoder counts and clock the test sets."""

    def __init__(self, cfg):
        JointCore.__init__(self, cfg)
        self.counts = 0
        self.now = 0
        self.ticks_us = lambda: self.now
        self.frames = []
        self.drives = []

    def _counts(self):
        return self.counts

    def _drive(self, duty):
        self.drives.append(duty)

    def _brake_out(self, engaged):
        pass

    def send(self, buf, n):
        self.frames.append(m.Decoder().decode(bytes(buf[:n])))


@pytest.fixture
def node(tmp_path, monkeypatch):
    from firmware.hal import joint
    cfg = dict(load(HIL2).agent_configs[0])
    cfg["joint"] = {"counts_per_rev": 4000}
    cfg["config_path"] = str(tmp_path / "config.json")
    hal = Joint(cfg)
    monkeypatch.setattr(joint, "ticks_us", hal.ticks_us)   # the joint's velocity on the test's clock
    agent = LinkAgent(cfg, hal)
    return agent, hal


def command(agent, cmd, arg=0.0):
    agent.receive(m.encode(m.COMMAND, m.HOST, agent.link, 0, (cmd, arg)))


def replies(hal):
    out = [bytes(f[4][0]).decode()[6:] for f in hal.frames if f and f[0] == m.LOG and bytes(f[4][0]).startswith(b"param ")]
    hal.frames.clear()
    return out


def request(agent, req):
    blob = json.dumps(req).encode()
    agent.receive(m.encode(m.CONFIG, m.HOST, agent.link, 0, (0, len(blob), blob)))
    command(agent, m.CMD_PARAM)


def test_get_set_save_and_refused_while_running(node, tmp_path):
    agent, hal = node
    request(agent, {"get": "u_sat"})
    request(agent, {"set": "behaviours.brake.kw", "value": 55.0})
    assert replies(hal) == ["u_sat = 10000.0", "behaviours.brake.kw = 55.0"]
    assert agent.brake_gains == (2000.0, 55.0)   # in effect, not only stored
    request(agent, {"set": "u_sat", "value": "abc"})   # the agent cannot use it: the old config stays
    assert replies(hal)[0].startswith("! ValueError") and agent.u_sat == 10000.0
    command(agent, m.CMD_SAVE)
    assert replies(hal) == ["saved"]
    assert json.loads((tmp_path / "config.json").read_text())["behaviours"]["brake"]["kw"] == 55.0
    agent.safety.state = safety.RUN
    request(agent, {"set": "u_sat", "value": 5.0})
    assert replies(hal)[0].startswith("! refused: running") and agent.u_sat == 10000.0


def test_zero_sets_the_encoder_offset_and_saves_it(node, tmp_path):
    agent, hal = node
    hal.read()
    hal.counts = 1000   # a quarter turn: q = pi / 2
    hal.read()
    command(agent, m.CMD_ZERO, 0.25)
    assert replies(hal)[0].startswith("zero: q = 0.25")
    assert hal.q == 0.25
    hal.counts = 2000   # another quarter turn from there
    hal.read()
    assert abs(hal.q - (0.25 + 1.5707963267948966)) < 1e-12
    saved = json.loads((tmp_path / "config.json").read_text())
    assert abs(saved["joint"]["q_offset"] - (0.25 - 1.5707963267948966)) < 1e-12


def test_jog_within_limits_and_the_dead_man_brakes(node):
    agent, hal = node
    agent.u_sat = 3.0
    command(agent, m.CMD_JOG_TORQUE, 5.0)   # clamped to u_sat
    assert replies(hal)[0].startswith("jog u = 3 ") and hal.u == 3.0
    hal.now += 200_000   # refreshed within the dead-man's 250 ms
    assert not agent.idle()
    command(agent, m.CMD_JOG_TORQUE, -1.0)
    assert replies(hal)[0].startswith("jog u = -1 ")
    hal.now += 240_000
    assert not agent.idle() and agent.safety.state == states.INIT
    hal.now += 20_000   # 260 ms since the last jog: braked
    assert agent.idle()
    assert agent.safety.state == states.BRAKED and agent.safety.faults == states.F_COMMAND
    assert hal.braked and hal.u == 0.0
    assert any(f[0] == m.STATUS and f[4][1] == states.BRAKED for f in hal.frames)
    command(agent, m.CMD_JOG_TORQUE, 1.0)   # faults latched: no jog until released
    assert replies(hal)[0].startswith("! refused: faults latched")
    command(agent, m.CMD_RELEASE)
    hal.counts = 4000   # a full turn: beyond q_high (3.1416) pushing further is refused
    hal.read()
    command(agent, m.CMD_JOG_TORQUE, 1.0)
    assert replies(hal)[0].startswith("jog u = 0 ")
    for _ in range(3):   # standing still there (the velocity filter settles)
        hal.now += 10_000_000
        hal.read()
    agent.u_sat = 100.0
    command(agent, m.CMD_JOG_VELOCITY, -0.5)   # velocity: the brake's kw on the error, back in range
    assert replies(hal)[0].startswith("jog u = -%g " % (40.0 * 0.5))


def test_host_checks_parameters_against_the_scenario_schema():
    assert parse_value("behaviours.centering.kq", "150") == 150.0
    assert parse_value("safety.watchdog_ms", "200") == 200
    for key, text, word in (("u_sat", "-1", "u_sat"), ("u_sat", "x", "not a value"),
                            ("safety.watchdog_ms", "0.5", "integer"), ("nope", "1", "not a parameter"),
                            ("behaviours.centering.nope", "1", "not a parameter")):
        with pytest.raises(UsageError, match=word):
            parse_value(key, text)
    with pytest.raises(UsageError):
        param_spec("type")   # a string field is not a parameter a node takes
