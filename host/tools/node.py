"""`linkteam node`: one node's bring-up commands over the bus of HIL runs (--ports), in
the spirit of moteus_tool / odrivetool: status, brake, release, reset (reboot), get KEY,
set KEY VALUE, save, jog (torque or velocity, with the dead-man), zero. The node's side
is firmware/params.py; the frames are COMMAND and CONFIG (bus_protocol/SPEC.md), the
answers STATUS and LOG lines "param ...".

A parameter KEY is a dotted path into the link's config as the scenario writes it
(host/scenario/loader.py agent_configs): a link field (u_sat, q_low, q_high, mass), a behaviour
field (behaviours.centering.kq) or a safety field (safety.watchdog_ms); a value is checked
against the scenario schema (host/scenario/schema.py) before it is sent."""
import json
import time

from bus_protocol import messages as m
from bus_protocol import states
from host.errors import ScenarioError, UsageError
from host.scenario.schema import BEHAVIOURS, LINK, _Checker

REPLY_S = 2.0   # how long a command waits for the node's answer


# the link fields a node's config holds as they are (host/scenario/loader.py agent_configs; the
# rest are the plant's, or the DH table's, fixed by the arm)
NODE_LINK_FIELDS = ("u_sat", "q_low", "q_high", "mass", "centroid", "brake_at_start")


def param_spec(key):
    """The schema entry of a parameter KEY (UsageError if it is not one)."""
    parts = key.split(".")
    if len(parts) == 1 and parts[0] in NODE_LINK_FIELDS:
        return LINK[parts[0]]
    if len(parts) == 2 and parts[0] == "safety" and parts[1] in BEHAVIOURS["safety"]:
        spec = BEHAVIOURS["safety"][parts[1]]
        if not isinstance(spec, dict):
            return spec
    if len(parts) == 3 and parts[0] == "behaviours" and parts[1] in BEHAVIOURS:
        spec = BEHAVIOURS[parts[1]].get(parts[2])
        if spec is not None and not isinstance(spec, dict):
            return spec
    raise UsageError("%r is not a parameter: a link field (%s), safety.FIELD or behaviours.NAME.FIELD "
                     "(host/scenario/schema.py)" % (key, ", ".join(NODE_LINK_FIELDS)))


def parse_value(key, text):
    """VALUE text (JSON: 12.5, true, [0, 0, 1]) -> the value, checked by the schema."""
    spec = param_spec(key)
    try:
        v = json.loads(text)
    except ValueError:
        raise UsageError("%s: %r is not a value (a number, true/false or a list)" % (key, text)) from None
    try:
        out = _Checker([("node set", "")]).value(v, spec, key)
    except ScenarioError as e:
        raise UsageError(str(e).split(": ", 1)[-1]) from None
    return v if out is None else out


class Node:
    """One node on an open transport (host/runners/hil.open_ports)."""

    def __init__(self, transport, link, signer=None):
        self.tr, self.link = transport, link
        self.dec = m.Decoder()
        self.seq = 0
        self.signer = signer   # host/tools/keys.Signer: the nodes check host commands

    def send(self, mtype, values, dst=None):
        f = m.encode(mtype, m.HOST, self.link if dst is None else dst, self.seq, values)
        self.tr.send(f if self.signer is None else self.signer.sign(f))
        self.seq = (self.seq + 1) & 0xFFFF

    def command(self, cmd, arg=0.0):
        self.send(m.COMMAND, (cmd, float(arg)))

    def frames(self, seconds):
        """The node's frames to the host for `seconds` (a generator)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            f = self.tr.recv(max(0.0, end - time.monotonic()))
            msg = self.dec.decode(f) if f is not None else None
            if msg and msg[1] == self.link and msg[2] in (m.HOST, m.BROADCAST):
                yield msg

    def status(self, seconds=REPLY_S):
        """PING -> the node's STATUS values (UsageError if none comes)."""
        for tries in range(3):
            self.command(m.CMD_PING)
            for msg in self.frames(seconds / 3):
                if msg[0] == m.STATUS:
                    return msg[4]
        raise UsageError("link %d did not answer a PING on the bus in %.0f s" % (self.link, seconds))

    def param_reply(self, seconds=REPLY_S, want=None):
        """The node's next LOG line "param ..." (its text after "param "); the reason if it
        starts with "!"."""
        for msg in self.frames(seconds):
            if msg[0] == m.LOG:
                text = bytes(msg[4][0]).decode("utf-8", "replace")
                if text.startswith("param ") and (want is None or text[6:].startswith(want) or text[6] == "!"):
                    return text[6:]
        raise UsageError("link %d did not answer in %.0f s" % (self.link, seconds))

    def request(self, req):
        """A parameter request (firmware/params.py): the CONFIG blob, then COMMAND PARAM."""
        blob = json.dumps(req).encode()
        step = m.CONFIG_MAX_DATA if self.signer is None else m.CONFIG_MAX_DATA_AUTH   # room for the trailer
        for off in range(0, len(blob), step):
            self.send(m.CONFIG, (off, len(blob), blob[off:off + step]))
        self.command(m.CMD_PARAM)
        return self.param_reply()


def describe(v):
    """STATUS values -> one line."""
    return "state %s  faults %s  tick %d  bad_frames %d  cycle_us %d" % (
        states.state_name(v[1]), ",".join(states.fault_names(v[2])) or "-", v[0] if v[0] < 0xFFFFFFFF else -1, v[3], v[4])


def _answer(text):
    if text.startswith("!"):
        raise NodeRefused(text[1:].strip())
    return text


class NodeRefused(Exception):
    """The node answered with a refusal (its reason)."""


def jog(node, velocity, value, seconds, refresh_hz, out):
    """Jog for `seconds`, refreshing at refresh_hz, then stop refreshing and watch the
    dead-man brake the joint. -> the STATUS after it."""
    cmd = m.CMD_JOG_VELOCITY if velocity else m.CMD_JOG_TORQUE
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        node.command(cmd, value)
        text = _answer(node.param_reply(want="jog"))
        if n == 0:
            out.write("%s\n" % text)
        n += 1
        time.sleep(1.0 / refresh_hz)
    out.write("jogged %.1f s (%d commands, %g Hz); not refreshed now: the dead-man brakes the joint\n"
              % (seconds, n, refresh_hz))
    for msg in node.frames(3.0):
        if msg[0] == m.STATUS and msg[4][1] == states.BRAKED:
            return msg[4]
    return node.status()


def signer_for(key_file):
    """The host's signer for a command-line session with the arm's key (a new block: a
    host start), or None without a key (nodes flashed "unauthenticated")."""
    if key_file is None:
        return None
    from host.tools import keys
    try:
        return keys.Signer(keys.load(key_file), keys.BlockState(key_file + ".fv"))
    except keys.KeyError_ as e:
        raise UsageError(str(e)) from None


def run(a, out):
    """`linkteam node` (host/cli.py): -> exit status."""
    from host.runners.hil import open_ports, parse_ports
    parse_ports(a.ports)
    if not 1 <= a.link <= 254:
        raise UsageError("--link must be 1-254 (a node's bus address), not %d" % a.link)
    act = a.action
    value = None
    if act == "set":
        value = parse_value(a.key, a.value)
    elif act == "get":
        param_spec(a.key)
    elif act == "jog":
        if (a.torque is None) == (a.velocity is None):
            raise UsageError("jog: give --torque NM or --velocity RAD_S (one of them)")
        if not (0.0 < a.seconds <= 60.0 and 1.0 <= a.refresh_hz <= 500.0):
            raise UsageError("jog: --for 0-60 s and --refresh-hz 1-500")
        if a.scenario:   # within the link's limits, checked here before anything moves
            from host.scenario.loader import load
            sc = load(a.scenario)
            if not 1 <= a.link <= sc.n:
                raise UsageError("--link %d: scenario %s has links 1-%d" % (a.link, sc.name, sc.n))
            L = sc.links[a.link - 1]
            if a.torque is not None and abs(a.torque) > L["u_sat"]:
                raise UsageError("jog --torque %g: beyond link %d's u_sat %g" % (a.torque, a.link, L["u_sat"]))
    tr = open_ports(a.ports, max(a.link, 1))
    try:
        node = Node(tr, a.link, signer_for(a.key_file))
        v = node.status()
        if act == "status":
            out.write("link %d  %s\n" % (a.link, describe(v)))
        elif act in ("brake", "release"):
            node.command(m.CMD_BRAKE if act == "brake" else m.CMD_RELEASE)
            time.sleep(0.05)
            out.write("link %d  %s\n" % (a.link, describe(node.status())))
        elif act == "reset":
            node.command(m.CMD_REBOOT)
            if node.signer is not None:   # a restarted node takes no block it has seen (firmware/auth.py)
                node.signer.new_block()
            out.write("link %d rebooting ...\n" % a.link)
            time.sleep(0.5)
            end = time.monotonic() + 20.0
            while True:   # back when it answers a PING again
                try:
                    out.write("link %d  %s\n" % (a.link, describe(node.status(1.0))))
                    break
                except UsageError:
                    if time.monotonic() > end:
                        raise UsageError("link %d did not come back in 20 s after its reboot" % a.link) from None
        elif act == "get":
            out.write("%s\n" % _answer(node.request({"get": a.key})))
        elif act == "set":
            out.write("%s\n" % _answer(node.request({"set": a.key, "value": value})))
        elif act == "save":
            node.command(m.CMD_SAVE)
            out.write("link %d: %s\n" % (a.link, _answer(node.param_reply())))
        elif act == "zero":
            node.command(m.CMD_ZERO, a.at)
            out.write("link %d: %s\n" % (a.link, _answer(node.param_reply(want="zero"))))
        elif act == "jog":
            velocity = a.velocity is not None
            v = jog(node, velocity, a.velocity if velocity else a.torque, a.seconds, a.refresh_hz, out)
            out.write("link %d  %s\n" % (a.link, describe(v)))
    except NodeRefused as e:
        import sys
        sys.stderr.write("linkteam node: link %d refused: %s\n" % (a.link, e))
        return 1
    finally:
        tr.close()
    return 0
