# A link's configuration sent over the bus: CONFIG frames carry
# chunks of a JSON blob of link fields, COMMAND CONFIG_APPLY merges them into the
# link's config. Imported by the agent on the first CONFIG frame: a nominal cycle never
# runs it (and as a .mpy file on a board's filesystem it would hold RAM: make mcu-bench).
from firmware import safety

CONFIG_MAX = 2048   # bytes of a CONFIG blob


def take(agent, v):
    """One CONFIG chunk (offset, total, data) of the blob."""
    off, total, data = v
    if total > CONFIG_MAX or off + len(data) > total:
        agent._cfg_blob = None
        agent.safety.trip(safety.F_CONFIG, "config blob over %d bytes" % CONFIG_MAX)
        return
    if off == 0 or agent._cfg_blob is None or len(agent._cfg_blob) != total:
        agent._cfg_blob = bytearray(total)
    agent._cfg_blob[off:off + len(data)] = data


def apply(agent):
    """COMMAND CONFIG_APPLY: merge the blob's fields into the link's config. Refused
    while running (brake or RESET the node first); an invalid blob leaves the old
    config in place and latches F_CONFIG."""
    if agent.safety.state == safety.RUN:
        agent.log("config refused: running")
        return
    blob, agent._cfg_blob = agent._cfg_blob, None
    old = agent.cfg
    try:
        import json
        new = dict(old)
        new.update(json.loads(bytes(blob or b"")))
        agent.configure(new)
        agent.safety.configure(agent._safety_cfg)
    except Exception as e:
        agent.configure(old)
        agent._safety_cfg = old.get("safety", {})
        agent.safety.trip(safety.F_CONFIG, "%s %s" % (type(e).__name__, e))
        return
    agent.log("config applied")
