"""Build linkcore for CPython: firmware/native/linkcore_cpython.c (the boards' C core,
linkcore_core.h, as a CPython extension module) into this interpreter's site-packages,
so that `import linkcore` works in every process of the environment and the in-process
agents run on it (firmware/linkstate.py). `make setup` runs it; a build that fails
leaves the pure-Python firmware in use and says so once, it never fails the setup.

    python -m host.tools.linkcore_ext          # build (when the sources changed), print the note
"""
import os
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NATIVE_SRC = os.path.join(ROOT, "firmware", "native")
SOURCES = ("linkcore_cpython.c", "linkcore_core.h", "linkcore_mac.h", "linkcore_layout.h")
# the float operations exactly as written (no fused multiply-add: every operation rounded,
# as CPython rounds it); never -ffast-math; cos and sin called one by one, as math.cos
# and math.sin call them (not merged into sincos)
CFLAGS = ["-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-builtin-cos", "-fno-builtin-sin"]


def target():
    """Where the built module goes: this interpreter's site-packages."""
    return os.path.join(sysconfig.get_paths()["platlib"], "linkcore" + sysconfig.get_config_var("EXT_SUFFIX"))


def build(build_temp=None):
    """Compile and install the module when it is older than its sources; returns its path.
    Raises on a failed build (setuptools' CompileError, or OSError)."""
    out = target()
    srcs = [os.path.join(NATIVE_SRC, f) for f in SOURCES]
    if os.path.exists(out) and os.path.getmtime(out) >= max(os.path.getmtime(s) for s in srcs):
        return out
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    ext = Extension("linkcore", [srcs[0]], depends=srcs[1:], extra_compile_args=CFLAGS)
    cmd = build_ext(Distribution({"name": "linkcore", "ext_modules": [ext]}))
    cmd.build_lib = os.path.dirname(out)
    cmd.build_temp = build_temp or os.path.join(ROOT, "build", "cpython")
    cmd.force = True
    cmd.ensure_finalized()
    cmd.run()
    return out


def note():
    """One line: whether this process's agents run on linkcore, and if not why."""
    try:
        import linkcore  # noqa: F401
    except ImportError as e:
        return "linkcore: not in use, the agents run pure Python (%s)" % e
    return "linkcore: the in-process agents run on the C core (%s)" % linkcore.__file__


def main():
    try:
        path = build()
    except Exception as e:   # no compiler, no Python.h: the pure-Python firmware runs
        print("linkcore for CPython not built (%s: %s): in-process agents run pure Python"
              % (type(e).__name__, e))
        return 0
    print("linkcore for CPython: %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
