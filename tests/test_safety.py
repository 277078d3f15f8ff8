"""The node safety state machine (firmware/safety.py, bus_protocol/states.py):
latched faults with reasons, reactions, clear, config refusal, NaN/inf inputs; the same
frames under MicroPython and CPython give the same lines."""
import pytest

from bus_protocol import states as sc
from tests.conftest import same_under_both

KQ, KW = 2000.0, 40.0   # the rig's brake gains


@pytest.fixture(scope="module")
def lines():
    cpy = same_under_both("mp_safety.py")
    out = {}
    for line in cpy:
        case, rest = line.split(" ", 1) if " u_sat=" not in line else (line.split(" ")[0], line.split(" ", 2)[2])
        f = rest.split(" ")
        out[case] = {"state": int(f[0]), "faults": int(f[1]), "u": float(f[2]),
                     "frames": f[3].split(",") if len(f) > 3 else [], "line": line}
    return out


def test_nan_or_inf_input_latches_nan_fault_brakes_and_reports_at_once(lines):
    for case in ("nan_goal", "inf_packet", "nan_joint"):
        r = lines[case]
        assert r["state"] == sc.BRAKED and r["faults"] == sc.F_NAN, r["line"]
        assert "STATUS:%d:%d" % (sc.BRAKED, sc.F_NAN) in r["frames"]   # at once
        # the reason as a LOG line, after the cycle's torque (a LOG never delays a cycle)
        later = r["frames"] + (lines["nan_goal_next"]["frames"] if case == "nan_goal" else [])
        assert any(x.startswith("LOG:fault_nan_input") for x in later)
    # the brake acts about the held angle, never on the NaN: -kw qd at the lock
    assert lines["nan_goal_next"]["u"] == pytest.approx(-KW * 0.5)
    assert lines["nan_joint"]["u"] == 0.0


def test_reactions_damp_and_hold_then_explicit_clear(lines):
    assert lines["stale_damp"]["state"] == sc.DAMP and lines["stale_damp"]["faults"] == sc.F_GOAL_STALE
    assert lines["stale_damp"]["u"] == pytest.approx(-KW * 0.5)
    assert lines["stale_hold"]["state"] == sc.HOLD
    assert lines["stale_hold"]["u"] == pytest.approx(KQ * (0.33 - 0.34) - KW * 0.5, rel=1e-5)
    for r in ("damp", "hold"):
        assert (lines["cleared_" + r]["state"], lines["cleared_" + r]["faults"]) == (sc.INIT, 0)
        assert lines["after_clear_" + r]["state"] == sc.RUN
        assert lines["after_clear_" + r]["u"] == lines["run"]["u"]


def test_commanded_brake_carries_a_fault_code(lines):
    assert lines["brake_code"]["state"] == sc.BRAKED
    assert lines["brake_code"]["faults"] == sc.F_NEIGHBOUR_DISAGREES


def test_config_refused_while_running_applied_when_braked_invalid_latched(lines):
    assert "u_sat=100 " in lines["config_running"]["line"]
    assert "LOG:config_refused:_running" in lines["config_running"]["frames"]
    assert lines["config_running"]["state"] == sc.RUN
    assert "u_sat=5 " in lines["config_braked"]["line"]
    assert "u_sat=5 " in lines["config_invalid"]["line"]   # the old config stays
    assert lines["config_invalid"]["faults"] == sc.F_COMMAND | sc.F_CONFIG
    assert lines["config_bad_reaction"]["faults"] == sc.F_COMMAND | sc.F_CONFIG


def test_exception_in_the_cycle_is_an_internal_error(lines):
    assert lines["internal"]["state"] == sc.BRAKED and lines["internal"]["faults"] == sc.F_INTERNAL


def test_every_fault_of_the_brief_has_one_bit_and_a_reaction():
    wanted = {"bus_lost", "goal_stale", "kinematic_stale", "neighbour_silent", "neighbour_disagrees",
              "sensor_implausible", "motor_not_responding", "over_torque", "config_invalid",
              "nan_input", "internal_error"}
    assert wanted <= set(sc.FAULT_NAMES.values())
    bits = list(sc.FAULT_NAMES)
    assert all(b & (b - 1) == 0 for b in bits) and len(set(bits)) == len(bits) and max(bits) < 1 << 16
    assert sc.fault_names(sc.F_NAN | sc.F_COMMAND) == ["command", "nan_input"]
    assert set(sc.DEFAULT_REACTIONS) == set(sc.FAULT_NAMES.values())


@pytest.fixture(scope="module")
def response():
    out = {}
    for line in same_under_both("mp_response.py"):
        case, first, state, faults = line.split()
        out[case] = (int(first), int(state), int(faults))
    return out


def test_frozen_encoder_under_a_changing_torque_is_sensor_implausible(response):
    # the reading stops at tick 20 (tick 20 reads what 19 read); the defaults want 3 frozen
    # samples (20, 21, 22) and the torque 2 N m off the one over the first frozen cycle:
    # the goal ramps 1.5 N m a cycle, so at tick 22 it is 3 N m off -> latched at 22
    assert response["frozen_ramp"] == (20 + 3 - 1, sc.BRAKED, sc.F_SENSOR)
    # held still under a constant torque (a joint against a stop, under gravity), or a
    # change within frozen_du: nothing to blame
    assert response["frozen_constant"] == (-1, sc.RUN, 0)
    assert response["frozen_small_change"] == (-1, sc.RUN, 0)
    # garbage (the other dead encoder): the jump check (max_q_step 0.5 rad) sees it at once
    assert response["garbage"][1:] == (sc.BRAKED, sc.F_SENSOR) and 20 <= response["garbage"][0] <= 21


def test_joint_flung_against_its_torque_is_a_motor_not_responding(response):
    # respond_ms 150 ms at the default 120 Hz is 18 cycles; the first sample that can be
    # judged is tick 1 (tick 0 has no torque behind it) -> latched at tick 18
    assert response["dead_flung"] == (round(0.150 * 120), sc.BRAKED, sc.F_MOTOR)
    # a live joint flung for 12 cycles (a coupling transient), a torque under respond_u,
    # or a fling under respond_a: no fault
    # (and with respond_u 0, the default, the check is off; a silent node's torque never
    # reached its motor)
    for case in ("live_flung_briefly", "dead_flung_small_u", "dead_flung_slowly", "live_ramp", "live_wave",
                 "dead_flung_check_off", "silent_flung"):
        assert response[case] == (-1, sc.RUN, 0), case


@pytest.mark.parametrize("cycles", [2 ** 31, 10 ** 12])
def test_a_watchdog_longer_than_int32_is_taken_and_never_fires(cycles):
    """watchdog_cycles has no upper bound in a scenario; safety's N holds it as int32 (2^31
    raised OverflowError when the agent was built)."""
    from firmware import layout, safety
    sf = safety.Safety({"watchdog_cycles": cycles})
    assert sf.watchdog_cycles == cycles and sf.N[layout.N_WATCHDOG] == 0x7FFFFFFF
    for tick in (0, 1, 2 ** 31 - 1):
        sf.on_sample(tick, 0.1, 0.0)
    assert sf.faults == 0 and sf.state == safety.RUN
