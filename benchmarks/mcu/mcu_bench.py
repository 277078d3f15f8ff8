"""`make mcu-bench`: one link agent behind its ChainNode on emulated Cortex-M boards.

Builds MicroPython's QEMU port for a Cortex-M4F (single-precision FPU) and for
Cortex-M0+ code with firmware/ and bus_protocol/ frozen in (host/tools/mcu.py), boots each
with -icount shift=0 and runs benchmarks/mp_node_cycle.py on it with the native module
linkcore (firmware/native/linkcore.c, a .mpy file loaded into RAM) and the modules
frozen, imported from .mpy files on a filesystem (copied into RAM) and from the same
.mpy files in a ROMFS image (executed in place); and once with the frozen pure Python
alone (the "python" figures: a board without linkcore.mpy). Writes the figures into
benchmarks/results.json under "mcu" and prints a table. Instruction counts: 1 us of guest
time = 1000 instructions under -icount shift=0.

    MICROPY_SRC=path/to/micropython-src.tar.gz python benchmarks/mcu/mcu_bench.py [--only m4f]
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from host.tools import mcu  # noqa: E402

RESULTS = os.path.join(ROOT, "benchmarks", "results.json")
PHASES = ("sync", "k_hop", "goal_hop", "forward", "cycle", "idle_poll", "cycle_status", "cycle_timing")
# the M4F build's targets (instructions, bytes; benchmarks/README.md)
TARGETS = {"k_hop": 20000, "goal_hop": 25000, "forward": 5000, "cycle": 60000,
           "alloc_bytes_per_cycle": 0, "ram_frozen": 24 * 1024, "ram_mpy": 64 * 1024,
           "k_hop_checks": 20000, "cycle_checks": 70000}


def parse(text):
    """mp_node_cycle.py's output -> {phase: instructions, alloc_bytes_per_cycle, ram, gc}."""
    r = {}
    for line in text.splitlines():
        w = line.split()
        if line.startswith("PHASE "):
            r[w[1]] = int(round(float(w[2]) * 1000))
        elif line.startswith("ALLOC per control cycle"):
            r["alloc_bytes_per_cycle"] = int(w[-2])
        elif line.startswith("ALLOC node per control cycle"):
            r["alloc_bytes_per_cycle_node"] = int(w[-2])
        elif line.startswith("RAM init "):
            r["ram"] = int(w[2])
        elif line.startswith("GC pause "):
            r["gc_pause_max_instructions"] = int(w[2]) * 1000
            r["heap_bytes"] = int(w[5])
    missing = [k for k in PHASES + ("alloc_bytes_per_cycle", "alloc_bytes_per_cycle_node", "ram",
                                    "gc_pause_max_instructions") if k not in r]
    if missing:
        raise mcu.McuError("the board printed no %s:\n%s" % (", ".join(missing), text[-2000:]))
    return r


def measure(name, lines=False):
    elf = mcu.build(name, keep_lines=lines)
    # frozen: the firmware's modules frozen and linkcore built into the image (flash);
    # .mpy: the modules imported from .mpy files and linkcore from linkcore.mpy, both
    # loaded into RAM (a board whose firmware carries neither); pure: no linkcore at all
    native = "import mp_node_cycle, mcu_mpy_files\nmp_node_cycle.with_native(mcu_mpy_files.NATIVE)\n"
    built_in = "import mp_node_cycle\n"
    pure = "import mp_node_cycle\nmp_node_cycle.without_native()\n"
    frozen = parse(mcu.run(name, elf, built_in + "mp_node_cycle.main()"))
    mpy = parse(mcu.run(name, elf, native + "mp_node_cycle.main_mpy(mcu_mpy_files.FILES)"))
    keep = PHASES + ("alloc_bytes_per_cycle", "alloc_bytes_per_cycle_node", "gc_pause_max_instructions")
    out = {k: frozen[k] for k in keep + ("heap_bytes",)}
    romfs = parse(mcu.run(name, elf, native + "import mcu_romfs\nmp_node_cycle.main_romfs(mcu_romfs.IMAGE)"))
    out["ram_after_init_bytes"] = {"frozen": frozen["ram"], "mpy": mpy["ram"], "mpy_romfs": romfs["ram"]}
    mods = mcu.run(name, elf, native + "mp_node_cycle.modules_mpy(mcu_mpy_files.FILES)")
    # [module, bytes] in import order: each figure is what no module before it held
    out["ram_mpy_by_module_bytes"] = [[ln[len("RAM module "):].rsplit(":", 1)[0], int(ln.rsplit(":", 1)[1])]
                                      for ln in mods.splitlines() if ln.startswith("RAM module ")]
    # the phases split into the node's share and the agent's (benchmarks/mp_hop_split.py)
    split = mcu.run(name, elf, built_in + "import mp_hop_split\nmp_hop_split.run()")
    out["split"] = {ln.split()[1] + " " + ln.split()[2]: int(round(float(ln.split()[3]) * 1000))
                    for ln in split.splitlines() if ln.startswith("SPLIT ")}
    # the same cycle with the neighbour check (depth 1) and the bridge on, its node overhearing
    checks = mcu.run(name, elf, built_in + "mp_node_cycle.main(checks=True)")
    out["checks"] = parse_checks(checks)
    python = parse(mcu.run(name, elf, pure + "mp_node_cycle.main()"))
    out["python"] = dict({k: python[k] for k in keep}, ram_after_init_bytes={"frozen": python["ram"]})
    # the cost of fault tolerance (benchmarks/mp_fault_cost.py, experiments/FAULTS.md), with and
    # without linkcore: 40 cycles, one round, SysTick-timed from a collected heap
    cost = "import mp_fault_cost\nmp_fault_cost.main(40, 1)"
    out["fault_cost"] = parse_cost(mcu.run(name, elf, built_in + cost))
    out["python"]["fault_cost"] = parse_cost(mcu.run(name, elf, pure + cost))
    out["auth"] = measure_auth(name, elf, built_in)
    return out


def measure_auth(name, elf, native):
    """Authenticated host commands (bus_protocol/SPEC.md §9): the cycle with the node
    checking a protected GOAL (benchmarks/mp_node_cycle.py main(auth=True)), and the MAC,
    a check, a forgery refused and a frame signed alone (benchmarks/mp_auth_cost.py)."""
    authed = parse(mcu.run(name, elf, native + "mp_node_cycle.main(auth=True)"))
    out = {k: authed[k] for k in PHASES + ("alloc_bytes_per_cycle",)}
    text = mcu.run(name, elf, native + "import mp_auth_cost\nmp_auth_cost.main()")
    for line in text.splitlines():
        f = line.split()
        if line.startswith("AUTH ") and len(f) == 3:
            out[f[1]] = int(round(float(f[2]) * 1000))
    if "check_goal" not in out:
        raise mcu.McuError("the board printed no AUTH lines:\n%s" % text[-2000:])
    return out


def parse_checks(text):
    """mp_node_cycle.main(checks=True)'s output -> {phase: instructions, alloc_bytes_per_cycle}."""
    r = {}
    for line in text.splitlines():
        w = line.split()
        if line.startswith("PHASE ") and w[1].endswith("_checks"):
            r[w[1][:-len("_checks")]] = int(round(float(w[2]) * 1000))
        elif line.startswith("ALLOC_checks per control cycle"):
            r["alloc_bytes_per_cycle"] = int(w[-2])
        elif line.startswith("RAM init "):
            r["ram_after_init_frozen_bytes"] = int(w[2])
    missing = [k for k in ("sync", "k_hop", "goal_hop", "cycle", "alloc_bytes_per_cycle",
                           "ram_after_init_frozen_bytes") if k not in r]
    if missing:
        raise mcu.McuError("the board printed no %s (checks):\n%s" % (", ".join(missing), text[-2000:]))
    return r


def parse_cost(text):
    """mp_fault_cost.py's COST lines -> {case: {instructions, frames, bytes}}."""
    out = {}
    for line in text.splitlines():
        if line.startswith("COST "):   # COST <case words> us <us> frames <n> bytes <b>
            f = line.split()
            out[" ".join(f[1:-6])] = {"instructions": int(round(float(f[-5]) * 1000)), "frames": int(f[-3]),
                                      "bytes": int(f[-1])}
    if not out:
        raise mcu.McuError("the board printed no COST lines:\n%s" % text[-2000:])
    return out


def table(res):
    names = [n for n in mcu.BUILDS if n in res]
    rows = ["%-34s" % "instructions (1 us = 1000)" + "".join("%12s" % n for n in names) + "   target (m4f)"]

    def row(label, get, target=""):
        rows.append("%-34s" % label + "".join("%12d" % get(res[n]) for n in names) + "   " + target)
    for p, label in zip(PHASES, ("SYNC + joint state", "kinematic hop K_{i-1} -> K_i",
                                 "goal hop GOAL -> TORQUE", "forward a frame not for the node",
                                 "whole cycle (sync + k + goal)", "idle poll round",
                                 "  a cycle that sends STATUS too", "  a cycle that sends TIMING too")):
        row(label, lambda r, p=p: r.get(p, -1), "<= %d" % TARGETS[p] if p in TARGETS else "")
    row("bytes allocated per cycle", lambda r: r["alloc_bytes_per_cycle"], "0")
    row("  of which the node's", lambda r: r.get("alloc_bytes_per_cycle_node", -1), "0")
    rows.append("with the neighbour check (depth 1) and the bridge on:")
    for p, label in (("sync", "SYNC + joint state"), ("k_hop", "kinematic hop (K_{i-2} overheard too)"),
                     ("goal_hop", "goal hop"), ("cycle", "whole cycle")):
        row("  " + label, lambda r, p=p: r.get("checks", {}).get(p, -1),
            "<= %d" % TARGETS[p + "_checks"] if p + "_checks" in TARGETS else "")
    row("  bytes allocated per cycle", lambda r: r.get("checks", {}).get("alloc_bytes_per_cycle", -1), "0")
    row("  RAM after init, frozen (bytes)", lambda r: r.get("checks", {}).get("ram_after_init_frozen_bytes", -1),
        "<= %d" % TARGETS["ram_frozen"])
    row("RAM after init, frozen (bytes)", lambda r: r["ram_after_init_bytes"]["frozen"],
        "<= %d" % TARGETS["ram_frozen"])
    row("RAM after init, .mpy (bytes)", lambda r: r["ram_after_init_bytes"]["mpy"], "<= %d" % TARGETS["ram_mpy"])
    row("RAM after init, .mpy in ROMFS (bytes)", lambda r: r["ram_after_init_bytes"].get("mpy_romfs", -1))
    row("longest GC pause (instructions)", lambda r: r["gc_pause_max_instructions"])
    row("heap (bytes)", lambda r: r["heap_bytes"])
    rows.append("RAM after init as .mpy, by module (bytes)")
    for mod, _ in res[names[0]].get("ram_mpy_by_module_bytes", []):
        row("  " + mod, lambda r, mod=mod: dict(r.get("ram_mpy_by_module_bytes", [])).get(mod, -1))
    rows.append("split (instructions): the node alone (the agent taking nothing), the agent alone")
    for key in sorted(res[names[0]].get("split", {})):
        row("  " + key, lambda r, key=key: r.get("split", {}).get(key, -1))
    rows.append("authenticated (a protected GOAL checked: bus_protocol/SPEC.md §9):")
    for p in ("goal_hop", "cycle", "mac", "check_goal", "reject_forged", "sign_goal"):
        row("  " + p, lambda r, p=p: r.get("auth", {}).get(p, -1))
    row("  bytes allocated per cycle", lambda r: r.get("auth", {}).get("alloc_bytes_per_cycle", -1))
    rows.append("without linkcore (the frozen pure Python):")
    for p in ("sync", "k_hop", "goal_hop", "cycle"):
        row("  " + p, lambda r, p=p: r["python"][p])
    row("  bytes allocated per cycle", lambda r: r["python"]["alloc_bytes_per_cycle"])
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(mcu.BUILDS), action="append")
    ap.add_argument("--lines", action="store_true", help="the .mpy files with line numbers "
                    "(`linkteam flash --lines`; without: as deployed, host/tools/flash.py MPY_OPT)")
    ap.add_argument("--install", action="store_true",
                    help="apt-get the missing Debian packages first (as root)")
    a = ap.parse_args(argv)
    lack = mcu.install() if a.install else mcu.missing()
    if lack:
        sys.exit("mcu-bench: missing " + "; ".join(lack))
    res = {}
    for name in a.only or list(mcu.BUILDS):
        res[name] = measure(name, a.lines)
    results = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            results = json.load(f)
    results.setdefault("mcu", {}).update(res)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")
    print(table(results["mcu"]))
    print("written to %s" % os.path.relpath(RESULTS, ROOT))
    if all(b in results["mcu"] for b in mcu.BUILDS):
        print(verdicts(results))


def verdicts(results):
    """The budget's verdict on real boards priced from these counts (host/tools/budget.py)."""
    from host.tools import budget
    rows = ["highest control rate, boards with their own joint I/O, UART ring / CAN-FD (linkteam budget --board)",
            "%-16s %5s %-22s %10s %8s %8s" % ("board", "links", "bus", "max Hz", "120 Hz", "500 Hz")]
    for board, n, bus, _, hz, fits in budget.board_verdicts(results):
        rows.append("%-16s %5d %-22s %10.1f %8s %8s" % (board, n, bus, hz, "fits" if fits[120.0] else "NO",
                                                        "fits" if fits[500.0] else "NO"))
    return "\n".join(rows)


if __name__ == "__main__":
    main()
