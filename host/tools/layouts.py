"""`make layouts`: the firmware's shared layouts (firmware/layout.py) written out where
they are used.

  * every firmware module with a block between the marker lines BEGIN and END below gets
    there one `NAME = const(value)` for each table name it uses (as `NAME` or `_NAME`) and
    does not bind itself: MicroPython's compiler folds a module's own const names into
    the code (an imported one is a dictionary lookup per use, and mpy-cross folds it
    not), also in an asm_thumb function's operands (firmware/accel/thumb.py);
  * firmware/native/linkcore_layout.h: every table entry as a #define for the C core.

`python -m host.tools.layouts --check` (and tests/test_layouts.py) fails when a file on disk
is not what the table makes of it."""
import ast
import sys
from pathlib import Path

from firmware import layout

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "# ---- layout: written by `make layouts` from firmware/layout.py (do not edit) ----"
END = "# ---- end of layout ----"
HEADER = ROOT / "firmware" / "native" / "linkcore_layout.h"
PACKAGES = ("firmware", "bus_protocol")


def _split(text, path):
    """text -> (before the block, the block's lines, after it), or None without markers."""
    lines = text.split("\n")
    if BEGIN not in lines:
        return None
    b = lines.index(BEGIN)
    if END not in lines[b:]:
        raise ValueError("%s: %r without %r" % (path, BEGIN, END))
    e = lines.index(END, b)
    return lines[:b + 1], lines[b + 1:e], lines[e:]


def used_names(source):
    """The table names a module's source (without its block) reads and does not bind
    itself at module level: {emitted name: table name}."""
    tree = ast.parse(source)
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                bound.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Try):   # try: from micropython import const ...
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    bound.update((a.asname or a.name).split(".")[0] for a in sub.names)
    table = layout.table()
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            base = node.id[1:] if node.id.startswith("_") else node.id
            if base in table:
                out[node.id] = base
    return out


def py_block(source):
    """The block's lines for a module whose source, block left out, is `source`."""
    names = used_names(source)
    order = {name: k for k, name in enumerate(layout.table())}
    lines = []
    for emitted in sorted(names, key=lambda x: (order[names[x]], x)):
        lines.append("%s = const(%s)" % (emitted, _literal(layout.table()[names[emitted]])))
    return lines


def _literal(v):
    return "0x%X" % v if v >= 0x10000 else str(v)


def py_file(path):
    """The module's text with its block as the table makes it (None: it has no block)."""
    text = path.read_text()
    parts = _split(text, path)
    if parts is None:
        return None
    before, _, after = parts
    return "\n".join(before + py_block("\n".join(before[:-1] + after[1:])) + after)


def c_header():
    out = ["// linkcore's layouts (the float state S, the integers I, safety's N and V, the",
           "// node's buffer block, frame lengths): written by `make layouts` from",
           "// firmware/layout.py, where each is defined and explained. Do not edit.",
           "#ifndef LINKCORE_LAYOUT_H",
           "#define LINKCORE_LAYOUT_H"]
    for title, entries in layout.GROUPS:
        out.append("")
        out.append("// ---- %s ----" % title)
        for name, value, comment in entries:
            name = layout.C_PREFIX.get(name, "") + name
            line = "#define %s %s" % (name, _literal(value))
            out.append(line + (" " * max(1, 26 - len(line)) + "// " + comment if comment else ""))
    out.append("")
    out.append("#endif")
    return "\n".join(out) + "\n"


def generated():
    """{path: text} of every generated file as the table makes it."""
    files = {HEADER: c_header()}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            text = py_file(path)
            if text is not None:
                files[path] = text
    return files


def stale():
    """The generated files whose text on disk differs from the table's."""
    return [p for p, text in generated().items() if not p.exists() or p.read_text() != text]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        bad = stale()
        for p in bad:
            print("stale: %s (run `make layouts`)" % p.relative_to(ROOT), file=sys.stderr)
        return 1 if bad else 0
    for p, text in generated().items():
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
            print("wrote %s" % p.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
