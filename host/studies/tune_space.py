"""`linkteam tune`'s search space: which scenario gains a study varies and over what
range (log-uniform around the scenario's own values), overridable by a TOML file, and how a
trial's parameters become a scenario overlay (the same merge as `extends`)."""
import tomllib
from pathlib import Path

from host.rmdac import U1_NAMES
from host.errors import ScenarioError
from host.scenario.schema import SCHEMA, _line_of

GAIN_TABLES = ("linear", "rotation")


def default_space(data):
    """Dotted scenario field -> (low, high, log). Around the scenario's own gains (thesis
    Table 6.8 for the thesis rows): wp, wv and the six integral gains log-uniform over x1/4..x4;
    u2 (thesis 0) in [0, 0.01] (u2 multiplies r x_d, so with x_d ~ 7 m a u2 of 0.5 diverges
    in 20 ms); the initial feedback gains Kp(0), Kv(0) (thesis 0) in [0, 2 wp] and [0, 2 wv].
    The feed-forward initial values d0, c0, b0, a0 depend on the trajectory and stay 0 unless
    a --space file adds them."""
    space = {}
    for table in GAIN_TABLES:
        g = data["rmdac"][table]
        for name in ("wp", "wv") + U1_NAMES:
            v = float(g.get(name, 0.0))
            if v > 0:
                space["rmdac.%s.%s" % (table, name)] = (v / 4, v * 4, True)
        space["rmdac.%s.u2" % table] = (0.0, 0.01, False)
        space["rmdac.%s.kp0" % table] = (0.0, 2.0 * float(g["wp"]), False)
        space["rmdac.%s.kv0" % table] = (0.0, 2.0 * float(g["wv"]), False)
    return space


def _schema_field(key):
    """The schema entry of a dotted scenario field (None when there is none)."""
    node = SCHEMA
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, tuple) and node[0] == "float" else None


def load_space(path, space):
    """Merge a space file into `space`: a table per field with low, high and optional log,
    e.g. [rmdac.linear.wp] low = 900.0 high = 7200.0 log = true, or
    [behaviours.centering.kq] ...; `exclude = ["rmdac.linear.u2", ...]` drops defaults."""
    path = Path(path)
    try:
        text = path.read_text()
        raw = tomllib.loads(text)
    except OSError as e:
        raise ScenarioError(path, None, "file", e.strerror or str(e))
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(path, None, "syntax", str(e))
    space = dict(space)
    exclude = raw.pop("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        raise ScenarioError(path, _line_of(text, "exclude"), "exclude", "expected a list of field names")
    for key in exclude:
        if key not in space:
            raise ScenarioError(path, _line_of(text, "exclude"), "exclude", "%s is not in the search space" % key)
        del space[key]

    def walk(node, prefix):
        if "low" in node or "high" in node:
            field = ".".join(prefix)
            if _schema_field(field) is None:
                raise ScenarioError(path, _line_of(text, field), field, "not a number field of a scenario")
            try:
                low, high, log = float(node["low"]), float(node["high"]), bool(node.get("log", False))
            except (KeyError, TypeError, ValueError):
                raise ScenarioError(path, _line_of(text, field), field, "expected low, high (numbers) and optional log")
            extra = set(node) - {"low", "high", "log"}
            if extra:
                raise ScenarioError(path, _line_of(text, field), field, "unknown key(s) %s" % ", ".join(sorted(extra)))
            if not low < high or (log and low <= 0):
                raise ScenarioError(path, _line_of(text, field), field,
                                    "need low < high (and low > 0 with log): %g, %g" % (low, high))
            space[field] = (low, high, log)
            return
        for k, v in node.items():
            if not isinstance(v, dict):
                field = ".".join(prefix + [k])
                raise ScenarioError(path, _line_of(text, field), field, "expected a table with low and high")
            walk(v, prefix + [k])

    walk(raw, [])
    if not space:
        raise ScenarioError(path, None, "exclude", "the search space is empty")
    return space


def overlay(params):
    """{'rmdac.linear.wp': 900.0, ...} -> nested tables {'rmdac': {'linear': {'wp': 900.0}}}."""
    out = {}
    for key, v in params.items():
        *tables, leaf = key.split(".")
        node = out
        for t in tables:
            node = node.setdefault(t, {})
        node[leaf] = v
    return out


def _applicable(data, params):
    """Only the fields whose table the scenario writes: a behaviour table written by the
    overlay would switch that behaviour on in a scenario that does not use it."""
    keep = {}
    for key, v in params.items():
        node = data
        for t in key.split(".")[:-1]:
            node = node.get(t) if isinstance(node, dict) else None
        if isinstance(node, dict):
            keep[key] = v
    return keep


def thesis_values(data, space):
    """The scenario's own value of every search-space field (schema default if unwritten)."""
    out = {}
    for key in space:
        node = data
        for t in key.split("."):
            node = node.get(t) if isinstance(node, dict) else None
        out[key] = float(node) if node is not None else float(_schema_field(key)[1] or 0.0)
    return out


