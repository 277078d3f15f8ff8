"""The repository stands alone: no file points outside it, and the documents name only
paths that exist (backticked repository paths and markdown links)."""
import glob
import os
import re

from tests.conftest import REPO

OUTSIDE = ".." + "/shared"              # written in two parts so this file does not match
OLD_DESIGN = re.compile(r"DESIGN\.md|\bDESIGN §?\d")
DOCS = ["README.md", "bus_protocol/SPEC.md", "docs/*.md", "hardware/*.md"]
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "runs", "node_modules",
             "build"}   # build/: gitignored outputs (build/mcu/ unpacks a MicroPython tree)
GENERATED = ("runs/", "experiments/runs/")   # run directories: written by runs, not committed
TEXT = re.compile(r"\.(md|py|toml|txt|csv|json|cfg|ini|yml|yaml|sh|rbt|dat|spt|obs)$|^(Makefile|LICENSE|run)$")

BACKTICK = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def repo_files():
    """Text files of the repository (what a clone holds), relative to its root."""
    for root, dirs, files in os.walk(REPO):
        rel_root = os.path.relpath(root, REPO)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            if TEXT.search(name):
                yield os.path.normpath(os.path.join(rel_root, name))


def broken_references(text, doc_dir, root, top_dirs):
    """Paths named in a markdown text that do not exist under root: backticked paths
    whose first component is a top-level folder of the repository (globs allowed), and
    relative markdown link targets (resolved from the document's folder)."""
    bad = []
    for m in BACKTICK.finditer(text):
        word = m.group(1).split()[0].rstrip(".,:;)")
        if "/" not in word or word.split("/")[0] not in top_dirs or word.startswith(GENERATED):
            continue
        if not glob.glob(os.path.join(root, word.split("#")[0])):
            bad.append(word)
    for m in LINK.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z]+:", target):   # anchor only, http:, mailto:
            continue
        path = os.path.normpath(os.path.join(root, doc_dir, target))
        if os.path.relpath(path, root).startswith(GENERATED) and not os.path.isabs(target):
            continue
        if not os.path.exists(path):
            bad.append(target)
    return bad


def top_level_dirs(root):
    return {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) and not d.startswith(".")}


def test_nothing_refers_outside_the_repository():
    hits = []
    for rel in repo_files():
        with open(os.path.join(REPO, rel), encoding="utf-8", errors="replace") as f:
            for no, line in enumerate(f, 1):
                # the one allowed exception: an overridable default of a build input
                if ((OUTSIDE in line and "MICROPY_SRC" not in line)
                        or (OLD_DESIGN.search(line) and rel != "tests/test_docs.py")):
                    hits.append("%s:%d: %s" % (rel, no, line.strip()))
    assert not hits, "\n".join(hits)


def test_documents_name_only_paths_that_exist():
    tops = top_level_dirs(REPO)
    docs = sorted({p for pattern in DOCS for p in glob.glob(os.path.join(REPO, pattern))})
    assert len(docs) >= 8, docs   # README, SPEC, docs/ (3), hardware/ (5)
    bad = []
    for path in docs:
        rel = os.path.relpath(path, REPO)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        bad += ["%s: %s" % (rel, b) for b in broken_references(text, os.path.dirname(rel), REPO, tops)]
    assert not bad, "\n".join(bad)


def test_the_checker_finds_broken_references():
    """The check above can fail: a made-up document with one good and one broken
    reference of each kind."""
    tops = top_level_dirs(REPO)
    text = ("See `firmware/agent.py` and `firmware/no_such_file.py`, "
            "[the spec](../bus_protocol/SPEC.md), [gone](../bus_protocol/GONE.md), "
            "[web](https://example.org/x), `scenarios/thesis/*.toml`, `runs/reference/`.")
    assert broken_references(text, "docs", REPO, tops) == ["firmware/no_such_file.py", "../bus_protocol/GONE.md"]
