"""`linkteam faults`: every scenario in scenarios/faults/ in-process and in processes mode ->
experiments/FAULTS.md (fault, reaction, time to detect, time to bridge, e_rms, e_max, recovered),
and the fault part of a run's summary.json."""
import json
import re
import subprocess
import sys
from pathlib import Path

from host.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]


def fault_summary(loop):
    """summary.json "faults": what was injected, what the agents reported (their fault
    LOG lines), the host's team changes, bus damage, and per fault the times to detect
    and to bridge."""
    gp = loop.gp
    reports = [{"t": round(t, 4), "link": src, "text": text} for t, src, text in gp.logs
               if text.startswith(("fault ", "neighbour "))]
    events = [{"t": round(t, 4), "link": link, "text": text} for t, link, text in gp.events]
    out = {"injected": [f.describe() for f in loop.faults.faults], "reports": reports, "team": events,
           "bus": {"lost": loop.faults.lost, "corrupted": loop.faults.corrupted, "delayed": loop.faults.delayed,
                   "counted_on": loop.faults.counted},
           "stale_goals": gp.stale_ee, "members": [int(i + 1) for i in range(gp.n) if gp.member[i]]}
    out["per_fault"] = [_timing(f, reports, events, gp) for f in loop.faults.faults]
    return out


def _mentions(entry, link):
    """A report or team event about `link`: from it, or naming it (link L ...)."""
    return entry["link"] == link or re.search(r"\blink %d\b" % link, entry["text"]) is not None


def _timing(f, reports, events, gp):
    t0 = f.schedule.start
    about = [e for e in reports + events if e["t"] >= t0 - 1e-9 and (f.link is None or _mentions(e, f.link))
             and not e["text"].startswith("process exited")]   # the runner's bookkeeping, not a detection
    about.sort(key=lambda e: e["t"])
    detect = about[0] if about else None
    # bridged: a neighbour composes over the link (its neighbour_silent / _disagrees report),
    # or, for the tip, the host does
    bridge = next((e for e in about if ("neighbour_" in e["text"] and e["link"] != f.link)
                   or e["text"] == "bridged by the host"), None)
    back = next((e for e in events if f.link is not None and e["link"] == f.link and e["text"] == "re-admitted"
                 and e["t"] >= t0), None)
    reaction = sorted({_reaction(e["text"]) for e in about})
    return {"fault": f.describe(), "detected_s": None if detect is None else round(detect["t"] - t0, 4),
            "bridged_s": None if bridge is None else round(bridge["t"] - t0, 4),
            "reaction": ", ".join(r for r in reaction if r) or "none",
            "recovered": None if f.link is None else (
                ("yes" if back else "no") if f.schedule.end < float("inf")
                else "in team" if gp.member[f.link - 1] else "out (permanent)")}


def _reaction(text):
    m = re.match(r"fault (\S+?):", text)
    if m:
        return m.group(1)
    if text.startswith("dropped"):
        return "dropped by host"
    if text == "bridged by the host":
        return "bridged by host"
    if text.startswith("link") and "disagrees" in text:
        return "braked by host"
    if text.startswith("host: K_"):
        return "braked by host (tip check)"
    if text.startswith("host:"):
        return "braked by host (torque check)"
    return ""


# ---- linkteam faults ----------------------------------------------------------------
MODES = (("inprocess", {}), ("processes", {"bus": "uart", "topology": "ring"}), ("processes", {"bus": "can"}))


def run_one(path, mode, opts, out_dir, lockstep=True):
    """One run in a child process (a crash of MuJoCo or a runner cannot take the others)."""
    cmd = [sys.executable, "-m", "host.cli", "run", str(path), "--out", str(out_dir), "--quiet", "--no-plots",
           "--mode", mode]
    if mode == "processes":
        cmd += ["--bus", opts["bus"]] + (["--topology", opts["topology"]] if "topology" in opts else [])
        if lockstep:
            cmd.append("--lockstep")
    subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True)
    try:
        return json.loads((out_dir / "summary.json").read_text())
    except (OSError, ValueError) as e:
        return {"status": "aborted", "reason": "no summary: %s" % e}


def label(mode, opts):
    if mode == "inprocess":
        return "in-process"
    return "processes %s%s" % (opts["bus"], " " + opts["topology"] if "topology" in opts else "")


WALL = ("reference-ft", "link5-dies", "link9-dies")   # also on the wall clock, one run at a time


def main(only=(), modes=None, out="experiments", lockstep=True, jobs=2, wall=WALL):
    from concurrent.futures import ThreadPoolExecutor
    scen = [ROOT / "scenarios" / "reference-ft.toml"] + sorted((ROOT / "scenarios" / "faults").glob("*.toml"))
    # bad names are refused before anything runs (FAULTS.md is rewritten from what runs)
    unknown = sorted(set(only or ()) - {p.stem for p in scen})
    if unknown:
        raise UsageError("unknown fault scenario(s) %s; known: %s" % (", ".join(unknown), ", ".join(p.stem for p in scen)))
    unknown = sorted(set(modes or ()) - {label(*m) for m in MODES})
    if unknown:
        raise UsageError("unknown mode(s) %s; known: %s" % (", ".join(map(repr, unknown)),
                                                           ", ".join(repr(label(*m)) for m in MODES)))
    if only:
        scen = [p for p in scen if p.stem in only or p.stem == "reference-ft"]
    modes = [m for m in MODES if modes is None or label(*m) in modes]
    out = ROOT / out
    runs = out / "fault-runs"
    jobs_list = [(p, mode, opts) for p in scen for mode, opts in modes]

    def go(job):
        p, mode, opts = job
        d = runs / ("%s-%s" % (p.stem, label(mode, opts).replace(" ", "-")))
        return job, run_one(p, mode, opts, d, lockstep)

    with ThreadPoolExecutor(jobs) as ex:
        results = list(ex.map(go, jobs_list))
    walls = []
    if lockstep:   # the dead-node runs in real time too: a node killed mid-run, the host on time
        for p in scen:
            for mode, opts in modes:
                if p.stem in wall and mode == "processes":
                    d = runs / ("%s-%s-wall" % (p.stem, label(mode, opts).replace(" ", "-")))
                    walls.append(((p, mode, opts), run_one(p, mode, opts, d, lockstep=False)))
    write_report(out / "FAULTS.md", results, lockstep, walls)
    return results + walls


def status_cell(s):
    """A run's status for the tables: degraded with the links it names, aborted with why."""
    if s.get("status") == "degraded" and s.get("degraded"):
        return "degraded (link %s)" % ", ".join(str(x["link"]) for x in s["degraded"])
    return s.get("status", "?") + (" (%s)" % s["reason"][:60] if s.get("reason") else "")


def _fmt(x, scale=1e3):
    return "-" if x is None else "%.3f" % (x * scale)


def write_report(path, results, lockstep, walls=()):
    ref = {}
    for (p, mode, opts), s in results:
        if p.stem == "reference-ft" and s.get("status") == "ok":
            ref[label(mode, opts)] = s["e_rms_m"]
    lines = ["# Fault injection report (`linkteam faults`)", "",
             "Every scenario in `scenarios/faults/` (each `extends` `scenarios/reference-ft.toml`: the",
             "reference run with neighbour checks and bridging on), in-process and in processes mode",
             "(one MicroPython process per link; %s). Times are from the fault's start to the first"
             % ("lockstep: the host waits for every torque, the synthetic clock" if lockstep else "wall clock"),
             "report about it (detected: an agent's fault LOG, or the host dropping the link) and to the",
             "first neighbour that bridges it. e_rms / e_max: end-effector error over the whole 40 s run",
             "(mm); ratio: e_rms over the fault-free `reference-ft` of the same mode. Recovered: an",
             "intermittent fault's link was re-admitted to the team; for a permanent fault, whether its",
             "link is still in the team at the end.", "",
             "| scenario | mode | status | fault | reaction | detected (ms) | bridged (ms) | e_rms (mm) | ratio | e_max (mm) | recovered |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (p, mode, opts), s in results:
        lab = label(mode, opts)
        pf = (s.get("faults") or {}).get("per_fault") or [{}]
        for f in pf:
            r = ref.get(lab)
            e = s.get("e_rms_m")
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                p.stem, lab, status_cell(s),
                f.get("fault", "none"), f.get("reaction", "-"), _fmt(f.get("detected_s")), _fmt(f.get("bridged_s")),
                _fmt(e), "-" if not (r and e) else "%.2f" % (e / r), _fmt(s.get("e_max_m")),
                f.get("recovered") or "-"))
    if walls:
        lines += ["", "The same in processes mode on the wall clock (120 Hz in real time on this busy 2-core",
                  "machine; a torque late for its tick is a missed cycle and the previous one is held):", "",
                  "| scenario | mode | status | e_rms (mm) | e_max (mm) | missed cycles | bus cycle p50 / p99 (ms) | team changes |",
                  "|---|---|---|---|---|---|---|---|"]
        for (p, mode, opts), s in walls:
            c = s.get("bus_cycle_ms") or {}
            events = (s.get("faults") or {}).get("team", [])
            team = "; ".join("%.3f s link %d %s" % (e["t"], e["link"], e["text"]) for e in events)
            if len(events) > 4:   # a lossy bus: many short drops
                drops = [e for e in events if e["text"].startswith("dropped")]
                team = "%d drops (%d ticks with one), %d re-admissions" % (
                    len(drops), len({e["t"] for e in drops}),
                    sum(1 for e in events if e["text"] == "re-admitted"))
            lines.append("| %s | %s wall clock | %s | %s | %s | %s | %s | %s |" % (
                p.stem, label(mode, opts), status_cell(s),
                _fmt(s.get("e_rms_m")), _fmt(s.get("e_max_m")), s.get("missed_cycles", "-"),
                "%.2f / %.2f" % (c["p50"], c["p99"]) if c else "-", team or "-"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n\n" + NOTES + "\n" + cost_table())


def cost_table():
    """The cost of fault tolerance (Hamilton et al.'s Table 1 for one link agent), measured
    now under the MicroPython unix port by benchmarks/mp_fault_cost.py."""
    from host.runners.children import micropython_path
    r = subprocess.run([micropython_path(), str(ROOT / "benchmarks" / "mp_fault_cost.py")],
                       capture_output=True, text=True, cwd=str(ROOT))
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith("COST")]
    base = float(rows[0][-5]) if rows else 0.0
    out = ["## Cost of fault tolerance (one agent per control cycle)", "",
           "Measured by `micropython benchmarks/mp_fault_cost.py` (the unix port on this machine;",
           "the lowest of 5 medians of 398 cycles): the agent's compute for every frame it takes in",
           "one cycle (joint state, SYNC, its K_{i-1}, the packets it overhears, the goal; framing",
           "not included) and",
           "those frames' logical bytes. On CAN an overheard packet is the same frame on the medium:",
           "the bus carries no more bytes; a node takes one more frame per depth through its filter.",
           "On a UART chain or ring a node passes each K frame on to its overhearing neighbours: with",
           "depth d every K frame (66 bytes with COBS) crosses d more wires, d x 66 bytes per link",
           "per cycle. A bridged (dead) neighbour sends nothing, so bridging costs the bridge's",
           "compositions only. With two copies of every kinematic packet (`[bus] kinematic_copies`)",
           "every K frame crosses every medium twice ((N + 1) x 64 more logical bytes a cycle) and",
           "the agent decodes each second copy only to drop it by its tick.", "",
           "| case | us per cycle | vs none | frames in | bytes in |", "|---|---|---|---|---|"]
    for f in rows:   # COST <name words> us <us> frames <n> bytes <b>
        name = " ".join(f[1:-6])
        us = float(f[-5])
        out.append("| %s | %d | %.2f | %s | %s |" % (name, us, us / base if base else 0.0, f[-3], f[-1]))
    return "\n".join(out) + "\n" + mcu_cost_table([" ".join(f[1:-6]) for f in rows])


def mcu_cost_table(order=(), results=ROOT / "benchmarks" / "results.json"):
    """The same cases on the emulated Cortex-M4F (make mcu-bench: exact instruction counts,
    the firmware frozen, without and with linkcore), where benchmarks/results.json has them."""
    try:
        with open(results) as f:
            m4f = json.load(f)["mcu"]["m4f"]
        native, python = m4f["fault_cost"], m4f["python"]["fault_cost"]
    except (OSError, ValueError, KeyError):
        return ""
    out = ["", "On the emulated Cortex-M4F (`make mcu-bench`, benchmarks/results.json: instructions per",
           "cycle under QEMU's -icount, the median of 38 cycles each from a collected heap, timed",
           "by the SysTick; one agent without its node, as above; two builds of one tree differ by",
           "up to 2 % a case). linkcore, the native core, does neighbour checks of depth 1 and",
           "the bridge; deeper checks, re-admission and a neighbour out are Python on the same state",
           "around the core's calls, its K_i still composed in C.", "",
           "| case | pure Python | vs none | with linkcore.mpy | vs none (linkcore) |", "|---|---|---|---|---|"]
    p0, n0 = python["none"]["instructions"], native["none"]["instructions"]
    for name in sorted(python, key=lambda k: list(order).index(k) if k in order else len(order)):
        p, n = python[name]["instructions"], native[name]["instructions"]
        out.append("| %s | %d | %.2f | %d | %.2f |" % (name, p, p / p0, n, n / n0))
    return "\n".join(out) + "\n"


NOTES = """## What each reaction means

- `neighbour_silent`: the host dropped the link (no torque for `driver_timeout_ticks`: its motor
  driver braked the joint); its distal neighbour now composes K over it with the joint locked at
  the angle predicted for that tick (its last checked angle moved on at its last checked speed).
  Until then (and for any single lost packet) the neighbour bridges over the predicted joint.
- `neighbour_disagrees`: the distal neighbour's check failed twice in a row (K_j's position
  against K_j recomputed from K_{j-1}, tolerance 1 cm); it bridges the link and asks the host,
  which brakes it (COMMAND BRAKE, fault `neighbour_disagrees`) and drops it from the team.
- `sensor_implausible`: the agent's own plausibility check latched and braked its joint: an
  encoder jump > `max_q_step`, or a frozen encoder (reading unchanged, qd = 0, for
  `frozen_cycles` ticks while its torque moved by more than `frozen_du`); a braked joint still
  carries the kinematic bus where it is held (a frozen one at its last reading: off by how far
  it moved before the fault latched).
- `motor_not_responding`: the joint was flung against its commanded torque (by more than
  `respond_a` against more than `respond_u`, for `respond_ms`): its motor gives nothing, the
  joint is braked. Found when the arm moves the dead joint (a knot change); a motor that dies
  while the arm holds still lets its joint drift slowly, which no local check tells from
  coupling.
- braked by host (torque check): the host recomputed the link's torque from the components its
  TORQUE report carries, u = sat(sum k_j u_j), and it disagreed: the host brakes it (fault
  `neighbour_disagrees`) and drops it; its distal neighbour bridges it.
- braked by host (tip check): with `[behaviours.neighbours] check_tip`, link N-1 also sends
  its K to the host, which checks the tip's K_N against K_N recomputed from it, as a
  neighbour checks (the tip has none); failed twice in a row, the host brakes and drops the
  tip and bridges it from K_{N-1}.
- none: nothing detects the fault (a weak motor, latency inside the period); the adaptive goal
  absorbs it.

## What is assumed, and what is not survivable

- A silent node's joint brakes: its motor driver drops the torque and engages the holding brake
  after `driver_timeout_ticks` (2) control periods without a torque command (the plant emulates
  this, as a loss of power or heartbeat does on a real joint).
- The bridge assumes the braked joint holds the predicted angle; its error is the joint's
  acceleration over the few ticks before the brake engaged.
- The tip (link N) has no distal neighbour: the host bridges it. While link N is out of the
  team, link N-1 also sends its K to the host, which composes K_N over joint N locked at the
  angle its last K_N and that K_{N-1} imply (`link10-dies`). In processes mode the host drops
  a tip whose process is gone in the tick it dies (NODE_OUT ahead of that tick's SYNC); the UART
  ring and the plain chain survive it too (link N-1 keeps running when its down wire hangs up).
- On a plain UART chain a dead node cuts every node beyond it off the host (nothing passes a
  dead node's UART): its neighbours cannot bridge what never reaches them, so only the tip
  may die (link N-1 goes on with its down wire hung up; `link10-dies` on the chain: e_rms
  2.831 mm, as on the ring and CAN). A dead middle node ends a processes run in the tick it
  dies ("link 5's node is gone ...: links 6..10 are cut off from the host"). On a ring the frames reach the far side the other way round: the node
  before the dead one sends up what it sent down, the host puts frames for links into the
  tip's end, and the nodes beyond take them from down. CAN (a shared medium) needs nothing
  of that.
- Bus faults in processes mode act in the media between the processes (each node's port
  and the host's, `bus_protocol/wire_faults.py`) with the in-process semantics (a frame
  faces each fault once, on its wire), but not its draws: in-process draws one seeded stream
  in delivery order, processes mode hashes each frame's identity (there is no one order),
  and the nodes send frames in-process nodes do not (ready, more TIMING). What the agents
  do about a lost frame is timed there (in lockstep a node's 100 ms hop timeout before it
  bridges a K_{i-1}, the host's 0.1 s for K_N, a node's 0.25 s for its goal): every run
  loses the same frames, but a busy machine can move a stale goal by a tick, so lockstep
  runs with frame loss repeat only to a few per cent in e_rms (with the 2 ms hop timeout
  the lockstep runs had before, the first 3 s of loss10 with one K copy, three runs each on
  a busy machine: CAN 17.4-18.5 mm, UART ring 16.9-17.9 mm; in-process 26.6 mm). Without
  bus faults nothing is lost, and a lockstep run repeats to the last digit however busy the
  machine as long as no packet comes more than 100 ms late: the 2 ms hop timeout bridged
  packets that were only late (compute-fault-link4 on CAN: 4 of 8 runs off, at 6.46 and
  4.38 mm and two by under 0.01 mm; 100 ms: 10 of 10 runs equal to in-process under load;
  tests/test_processes.py stops a node 50 ms inside a tick; a 150 ms stop still moves a
  bridge). Latency is real time there: within the hop timeout it changes
  nothing (latency-2ms: e_rms as fault-free to 1e-3 mm). On the wall clock the host waits
  5 ms for K_N and a node 7 ms into the 8.3 ms period for its goal: a goal later than that
  is taken for a lost one, so latency of 2-3 ms on top of a lossy bus puts many torques a
  tick behind (5 % loss, bit errors and 2-3 ms latency together from t = 0.5 s: unstable
  within 0.3 s, on both media; each alone tracks).
- A killed process comes back where its `node_crash` has an `end`, on CAN only (a UART
  node's neighbours do not re-open their wires to a rebooted board).
- A compute fault of the tip: no node recomputes K_N. Without `[behaviours.neighbours]
  check_tip` (off by default: one more K frame a tick on link N-1's way to the host)
  nothing detects it: link 10 with its K_N off by 0.1 m from 18 s ran to the end with status
  ok and e_rms 73.1 mm (26 x), in-process and on CAN. With it the host checks K_N as a
  neighbour would (`tip-compute-fault`, rows above; 0.03 m is found as 0.1 m is, 5 mm is
  under the tolerance). Its frames shift in-process loss draws (one stream in delivery
  order): loss10 with check_tip 3.239 mm (1.16 x), the check's largest mismatch 2.8 mm
  against its 1 cm, no false alarm. A torque fault of the tip is caught by
  the host's torque check like any link's. An offset under the neighbour check's 1 cm
  tolerance passes (link 6 off by 5 mm: 4.58 mm, 1.65 x).
- Detected and bridged times are when the report reached the host: a neighbour's LOG line
  in processes mode comes a tick after its in-process twin (compute-fault-link4: 17 ms
  against 8 ms; the runs are otherwise bit-identical).
- The ratios are over the whole 40 s run, whose fault-free error is 97 % the start
  transient's (12.2 mm rms in the first 2 s, 0.53 mm after 15 s): from the fault on, against
  the same window of reference-ft, link9-dies is 2.41 x, link5-dies 1.16 x, link 3 or 7
  dying at 22 s 1.52 x and 1.40 x (in-process).
- Lockstep processes mode has no plant time inside a tick: a node whose torque has not come
  0.5 s after the goal went out is taken as silent for that tick (its driver's timeout).
"""
