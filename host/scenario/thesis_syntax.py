"""The syntax of the thesis's scenario files (Appendix C; host/scenario/thesis_format.py maps
their parameters): `define{X}` ... `end{X}` scopes, formal parameters `name = value`,
informal ones `@ name = value`; values are numbers, vectors `<a b c>`, matrices
`[<row> <row> ...]` or bare strings; `#` starts a comment. A syntax error names the
file, the line and the text."""
import math
import re
from pathlib import Path

from host.errors import ScenarioError

_TOKEN = re.compile(r"""
    (?P<define>define\s*\{\s*(?P<dname>\w+)\s*\})
  | (?P<end>end\s*\{\s*(?P<ename>\w+)\s*\})
  | (?P<comment>\#[^\n]*)
  | (?P<nl>\n)
  | (?P<ws>[ \t\r\f]+)
  | (?P<sym>[@=<>\[\]])
  | (?P<word>[^\s@=<>\[\]\#]+)
""", re.X)


class Node:
    def __init__(self, kind, line, parent=None):
        self.kind, self.line, self.parent = kind, line, parent
        self.params = []      # (name, informal, value, line, text)
        self.children = []
        self.used = set()


class Parser:
    """Tokens and define{}/end{} scopes of one thesis file -> a tree of Nodes (parse())."""

    def __init__(self, path):
        self.path = Path(path)
        self.text = self.path.read_text()
        self.lines = self.text.splitlines()
        self.toks = []
        line = 1
        pos = 0
        while pos < len(self.text):
            m = _TOKEN.match(self.text, pos)
            if m is None:   # cannot happen: every character belongs to some token class
                self.fail(line, self.text[pos:pos + 20], "unreadable text")
            kind = m.lastgroup if m.lastgroup not in ("dname", "ename") else None
            if m.group("define"):
                kind = "define"
            elif m.group("end"):
                kind = "end"
            val = m.group(0)
            if kind not in ("ws", "comment", "nl"):
                self.toks.append((kind, val, line, m.group("dname") or m.group("ename")))
            line += val.count("\n")
            pos = m.end()
        self.i = 0

    def fail(self, line, text, message):
        src = self.lines[line - 1].strip() if line and 0 < line <= len(self.lines) else ""
        raise ScenarioError(self.path, line, "%r" % text, "%s (line: %s)" % (message, src))

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None, self.lines and len(self.lines), None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def parse(self):
        root = Node("file", 1)
        self.block(root, None)
        return root

    def block(self, node, name):
        while True:
            kind, val, line, sub = self.peek()
            if kind is None:
                if name is not None:
                    self.fail(node.line, "define{%s}" % name, "define{%s} is never closed by end{%s}" % (name, name))
                return
            if kind == "end":
                self.take()
                if sub != name:
                    self.fail(line, val, "end{%s} does not close define{%s}" % (sub, name) if name
                              else "end{%s} without a matching define{%s}" % (sub, sub))
                return
            if kind == "define":
                self.take()
                child = Node(sub, line, node)
                node.children.append(child)
                self.block(child, sub)
                continue
            self.param(node)

    def param(self, node):
        kind, val, line, _ = self.take()
        informal = False
        if kind == "sym" and val == "@":
            informal = True
            kind, val, line, _ = self.take()
        if kind != "word" or not re.match(r"^[A-Za-z_]\w*$", val):
            self.fail(line, val, "expected a parameter name (name = value or @ name = value)")
        name = val
        k2, v2, l2, _ = self.take()
        if k2 != "sym" or v2 != "=":
            self.fail(l2 or line, v2, "expected '=' after %r" % name)
        value = self.value(line)
        node.params.append((name, informal, value, line, self.lines[line - 1].strip()))

    def value(self, line):
        kind, val, l, _ = self.peek()
        if kind == "sym" and val == "<":
            return self.vector()
        if kind == "sym" and val == "[":
            self.take()
            rows = []
            while True:
                k, v, l2, _ = self.peek()
                if k == "sym" and v == "]":
                    self.take()
                    return rows
                if k == "sym" and v == "<":
                    rows.append(self.vector())
                    continue
                self.fail(l2 or l, v, "expected a row <...> or ']' in a matrix")
        # numbers (several on one line: interval = t0 t1) or a bare string
        words = []
        while True:
            k, v, l2, _ = self.peek()
            if k != "word" or l2 != l:
                break
            # a following 'name =' on the same line is a new parameter, not part of the value
            if self.i + 1 < len(self.toks) and self.toks[self.i + 1][1] == "=" and words:
                break
            words.append(v)
            self.take()
        if not words:
            self.fail(l, val, "expected a value")
        nums = [number(w) for w in words]
        if all(x is not None for x in nums):
            return nums[0] if len(nums) == 1 else nums
        return " ".join(words)

    def vector(self):
        self.take()   # <
        out = []
        while True:
            k, v, l, _ = self.take()
            if k == "sym" and v == ">":
                return out
            x = number(v) if k == "word" else None
            if x is None:
                self.fail(l, v, "expected a number or '>' in a vector")
            out.append(x)


def number(w):
    try:
        x = float(w)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


class Reader:
    """Walks parsed nodes, takes each parameter exactly once, rejects the rest."""

    def __init__(self, parser, node):
        self.p, self.node = parser, node

    def get(self, name, kind, informal=None, default=None, required=False, length=None):
        for idx, (n, inf, v, line, text) in enumerate(self.node.params):
            if n != name:
                continue
            self.node.used.add(idx)
            if informal is not None and inf != informal:
                self.p.fail(line, text, "%r is %s parameter; write it %s" % (
                    name, "an informal" if informal else "a formal", "'@ %s = ...'" % name if informal else "'%s = ...'" % name))
            return self.check(v, kind, name, line, text, length)
        if required:
            self.p.fail(self.node.line, "define{%s}" % self.node.kind, "missing required parameter %r" % name)
        return default

    def check(self, v, kind, name, line, text, length):
        if kind == "num":
            if not isinstance(v, float):
                self.p.fail(line, text, "%s: expected a number, got %r" % (name, v))
        elif kind == "nums":
            if isinstance(v, float):
                v = [v]
            if not (isinstance(v, list) and v and all(isinstance(x, float) for x in v)):
                self.p.fail(line, text, "%s: expected numbers, got %r" % (name, v))
        elif kind == "vec":
            if not (isinstance(v, list) and all(isinstance(x, float) for x in v)):
                self.p.fail(line, text, "%s: expected a vector <...>, got %r" % (name, v))
        elif kind == "mat":
            if not (isinstance(v, list) and v and all(isinstance(r, list) for r in v)):
                self.p.fail(line, text, "%s: expected a matrix [<...> <...>], got %r" % (name, v))
        elif kind == "str":
            if isinstance(v, float):
                v = repr(v)
            if not isinstance(v, str):
                self.p.fail(line, text, "%s: expected a string, got %r" % (name, v))
        if length is not None and len(v) != length:
            self.p.fail(line, text, "%s: expected %d values, got %d" % (name, length, len(v)))
        return v

    def line_of(self, name):
        for n, inf, v, line, text in self.node.params:
            if n == name:
                return line, text
        return self.node.line, "define{%s}" % self.node.kind

    def done(self):
        for idx, (n, inf, v, line, text) in enumerate(self.node.params):
            if idx not in self.node.used:
                self.p.fail(line, text, "unsupported %sparameter %r in define{%s}" % (
                    "informal " if inf else "", n, self.node.kind))
