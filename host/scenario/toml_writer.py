"""A small TOML writer for the scenario dict (`linkteam convert`, and the TOML lines a
thesis directory's schema errors name)."""


def _tv(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(v, list):
        return "[" + ", ".join(_tv(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join("%s = %s" % (k, _tv(x)) for k, x in v.items()) + " }"
    raise TypeError("cannot write %r as TOML" % (v,))


def dumps(data, prefix=""):
    lines = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not _is_table_array(v)}
    for k, v in scalars.items():
        lines.append("%s = %s" % (k, _tv(v)))
    for k, v in data.items():
        full = prefix + k
        if isinstance(v, dict):
            if full.startswith("robot.override") or (prefix.startswith("robot.override")):
                continue
            sub = dumps(v, full + ".")
            inner_scalars = any(not isinstance(x, dict) and not _is_table_array(x) for x in v.values())
            if inner_scalars or not v:
                lines += ["", "[%s]" % full]
            lines.append(sub.rstrip("\n")) if sub else None
        elif _is_table_array(v):
            for item in v:
                lines += ["", "[[%s]]" % full]
                nested = {}
                for ik, iv in item.items():
                    if isinstance(iv, dict):
                        lines.append("%s = %s" % (ik, _tv(iv)))
                    elif _is_table_array(iv):
                        nested[ik] = iv
                    else:
                        lines.append("%s = %s" % (ik, _tv(iv)))
                for ik, iv in nested.items():
                    for sub in iv:
                        lines += ["", "[[%s.%s]]" % (full, ik)]
                        lines += ["%s = %s" % (a, _tv(b)) for a, b in sub.items()]
    return "\n".join(x for x in lines if x is not None).strip("\n") + "\n" if lines else ""


def _is_table_array(v):
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)
