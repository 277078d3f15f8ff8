"""linkteam command line."""
import argparse
import json
import sys

from host.scenario import ScenarioError, load


def _grouping(a, n):
    """--grouping 5,1 | --links-per-node K (the last node takes what is left) -> sizes,
    checked against the arm (SystemExit 2 with the reason)."""
    from host.runners.processes import node_groups
    sizes = None
    try:
        if a.grouping:
            sizes = [int(x) for x in a.grouping.split(",")]
        elif a.links_per_node is not None:
            if a.links_per_node < 1:
                raise ValueError("--links-per-node must be at least 1")
            sizes = [min(a.links_per_node, n - k) for k in range(0, n, a.links_per_node)]
        if sizes is not None:
            node_groups(n, sizes)
            if a.baud and max(sizes) > 1:
                raise ValueError("a node hosting several links does not pace its wires: no --baud with it")
    except ValueError as e:
        sys.stderr.write("linkteam: --grouping: %s\n" % e)
        raise SystemExit(2)
    return sizes


def cmd_run(a):
    from host.run import print_summary, run_scenario
    sc = load(a.scenario)
    if sc.gains_from and not sc.gains_from["same_arm"] and not a.gains_anyway:
        from host.tune_gains import describe
        sys.stderr.write("linkteam run: %s: refusing (--gains-anyway runs it regardless)\n" % describe(sc.gains_from))
        return 2
    opts = {}
    if a.mode == "processes":
        opts = {"bus": a.bus, "baud": a.baud, "lockstep": a.lockstep, "wire": a.wire, "joint_io": a.joint_io,
                "topology": a.topology, "grouping": _grouping(a, sc.n)}
    elif a.mode == "hil":
        opts = {"ports": a.ports, "lockstep": a.lockstep, "real_plant": a.real_plant}
    summary, out = run_scenario(sc, a.out, mode=a.mode, quiet=a.quiet, make_plots=not a.no_plots, **opts)
    if not a.quiet:
        print_summary(summary, out)
    return 0 if summary["status"] == "ok" else 3


# ---- thesis experiments, thesis scenario format, animation (issue 4) ----------------
def cmd_experiments(a):
    if a.gains or a.timing:
        from host import gains, timing
        return (gains if a.gains else timing).main(a)
    from host import experiments
    return experiments.main(a)


def cmd_convert(a):
    from host.scenario import convert_thesis
    out = convert_thesis(a.directory, a.output)
    if not a.quiet:
        print("wrote", out)
    return 0


def cmd_animate(a):
    from host import animate
    out = animate.animate(a.rundir, a.output, fps=a.fps, every=a.every)
    print("wrote", out)
    return 0


def cmd_faults(a):
    from host import faults
    results = faults.main(a.only or (), a.modes, lockstep=not a.wall_clock, jobs=a.jobs)
    print("wrote faults/REPORT.md (%d runs)" % len(results))
    return 0 if all(s.get("status") == "ok" for _, s in results) else 3


def cmd_console(a):
    from pathlib import Path

    from host import services
    if not (a.run or a.scenario):
        sys.stderr.write("linkteam console: give --run DIR or --scenario FILE\n")
        return 2
    run_dir = a.run or str(Path("runs") / load(a.scenario).name)
    try:
        services.follow(run_dir, a.link, sys.stdout, wait_s=a.wait)
    except FileNotFoundError as e:
        sys.stderr.write("linkteam console: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def cmd_envelope(a):
    from host import envelope
    return envelope.main(a)


def _add_thesis_commands(sub):
    e = sub.add_parser("experiments", help="run the thesis experiments (scenarios/thesis/) in parallel and "
                       "write experiments/REPORT.md beside the thesis's figures")
    e.add_argument("--only", nargs="+", metavar="NAME", help="run only these rows (others keep their last results)")
    e.add_argument("--jobs", type=int, default=2, help="parallel processes (default 2)")
    e.add_argument("--out", help="output directory (default experiments/)")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.add_argument("--gains", action="store_true", help="instead: the RMDAC gain (Appendix D), control-rate and "
                   "arbitration-weight sweeps -> experiments/GAINS.md (at most 2 processes)")
    e.add_argument("--timing", action="store_true", help="instead: compute per link per cycle for 5-20 links, "
                   "in-process and in MicroPython processes (Table 6.10's dT_N) -> experiments/TIMING.md")
    e.set_defaults(fn=cmd_experiments)
    c = sub.add_parser("convert", help="convert a thesis NAME.scenario directory (Appendix C) to TOML")
    c.add_argument("directory")
    c.add_argument("-o", "--output", required=True, help="TOML file to write")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(fn=cmd_convert)
    n = sub.add_parser("animate", help="draw a run directory's arm motion as a GIF")
    n.add_argument("rundir")
    n.add_argument("-o", "--output", help="GIF file (default RUNDIR/arm.gif)")
    n.add_argument("--fps", type=int, default=15)
    n.add_argument("--every", type=float, default=0.25, help="seconds of simulation per frame (default 0.25)")
    n.set_defaults(fn=cmd_animate)


# ---- gain tuning on Optuna (issue 17) --------------------------------------------------
def cmd_tune(a):
    from host import tune
    try:
        return tune.main(a)
    except ValueError as e:
        sys.stderr.write("linkteam tune: %s\n" % e)
        return 2
    except tune.StorageLost as e:
        sys.stderr.write("linkteam tune: %s\n" % e)
        return 4
    except KeyboardInterrupt as e:
        sys.stderr.write("linkteam tune: stopped (%s); a trial in progress is queued again\n" % (str(e) or "interrupted"))
        return 130


def _kg_list(text):
    return [float(x) for x in text.split(",") if x.strip()]


def _add_tune_command(sub):
    t = sub.add_parser("tune", help="tune RMDAC gains with an Optuna study that several workers share; "
                       "report thesis vs tuned gains on training and held-out scenarios")
    t.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="training scenarios (--resume: the study's own)")
    t.add_argument("--trials", type=int, help="the study's size: its workers run trials until it holds this many "
                   "finished (complete or pruned) trials, however many invocations join it")
    t.add_argument("--resume", action="store_true", help="continue an existing study (--storage, --study) with its "
                   "recorded scenarios and options: fail the trials of workers that are gone, retry them, "
                   "run on to its size")
    from host.tune import GRACE_BEATS, HEARTBEAT_S
    t.add_argument("--heartbeat", type=int, default=HEARTBEAT_S, metavar="S", help="worker heartbeat (s); a trial "
                   "whose worker misses %d beats is failed and retried (default %d)" % (GRACE_BEATS, HEARTBEAT_S))
    t.add_argument("--timeout", type=float, help="seconds after which no worker starts another trial")
    t.add_argument("--workers", type=int, default=1, help="worker processes (each joins the study)")
    t.add_argument("--out", help="output directory: study journal, gains.toml, report.md, plots (default tune/)")
    t.add_argument("--storage", help="study storage: a journal file path (default OUT/study.journal; "
                   "shared file system = shared study) or an RDB URL, e.g. postgresql://user:pw@host/db")
    t.add_argument("--study", help="study name (default linkteam-tune); workers with the same name and storage join it")
    t.add_argument("--space", help="TOML file changing the search space (see host/tune.py load_space)")
    t.add_argument("--validate", nargs="+", metavar="SCENARIO", default=[], help="held-out scenarios for the report")
    t.add_argument("--payloads", type=_kg_list, metavar="KG,...", help="also report the first training "
                   "scenario with these payload masses")
    t.add_argument("--objective", choices=("mean", "worst"), default="mean")
    t.add_argument("--robust", action="store_true", help="also train on the first scenario with payload 0, payload x2 and half the control rate")
    t.add_argument("--no-plots", dest="plots", action="store_false", help="no Optuna plots in the report")
    t.add_argument("--ship", metavar="DIR", help="copy gains.toml to DIR and write DIR/<row>.toml for every training, --validate and "
                   "thesis scenario on the arm the gains were tuned on")
    t.set_defaults(fn=cmd_tune)


def cmd_flash(a):
    from host import flash
    sc = load(a.scenario)
    bus = json.loads(a.bus_json) if a.bus_json else {}
    targets = flash.parse_map(a.chain) if a.chain else {a.link: a.port}
    if not a.chain and (a.port is None or a.link is None):
        sys.stderr.write("linkteam flash: give --port and --link, or --chain MAP\n")
        return 2
    for link, port in sorted(targets.items()):
        flash.flash(port, link, sc, board=a.board, bus=bus, lines=a.lines)
    return 0


def cmd_boards(a):
    from host import flash
    ports = a.ports.split(",") if a.ports else flash.list_ports()
    print("%-24s %-10s %-8s %-5s %-10s %s" % ("port", "platform", "arch", "link", "board", "firmware"))
    for p in ports:
        try:
            i = flash.board_info(p)
            flash.soft_reset_to_main(p)   # the REPL query stopped main.py: boot it again
            print("%-24s %-10s %-8s %-5s %-10s %s" % (p, i["platform"], i["arch"], i["link"], i["board"], i["fw"]))
        except Exception as e:
            print("%-24s (no answer: %s)" % (p, str(e).splitlines()[0]))
    return 0


def cmd_config(a):
    from host import flash
    if a.action == "dump":
        cfg = flash.dump_config(a.port)
        text = json.dumps(cfg, indent=2)
        if a.file:
            open(a.file, "w").write(text + "\n")
        else:
            print(text)
    else:
        flash.restore_config(a.port, json.load(open(a.file)))
    flash.soft_reset_to_main(a.port)   # back to the link agent (the REPL stopped it)
    return 0


def cmd_scan(a):
    from bus_protocol import states
    from host.runners.hil import open_ports, scan
    tr = open_ports(a.ports, a.max_links)
    try:
        found = scan(tr, a.max_links, timeout=a.timeout)
    finally:
        tr.close()
    for link, v in sorted(found.items()):
        print("link %2d  state %s  faults %s  bad_frames %d  cycle_us %d" % (
            link, states.state_name(v[1]), ",".join(states.fault_names(v[2])) or "-", v[3], v[4]))
    if not found:
        print("no nodes answered")
    return 0 if found else 1


def cmd_budget(a):
    from host import budget, hop_compute
    compute = {}
    try:
        if a.measure_on:
            compute = hop_compute.measure_compute(port=None if a.measure_on == "local" else a.measure_on)
            if not compute:
                sys.stderr.write("linkteam budget: the benchmark printed no HOP lines on %s\n" % a.measure_on)
                return 1
        if a.compute:
            compute.update(hop_compute.parse_compute(a.compute, a.board))
        elif a.board:
            import json
            with open(a.results) as f:
                compute = hop_compute.board_compute(json.load(f), a.board)
        print(budget.report(a.links, a.bus, a.rate, plant=a.plant, compute=compute, topology=a.topology,
                            kinematic_copies=a.kinematic_copies))
    except (ValueError, OSError, RuntimeError) as e:   # RuntimeError: flash.FlashError (mpremote)
        sys.stderr.write("linkteam budget: %s\n" % e)
        return 2
    return 0


def cmd_vboard(a):
    from host import vboard
    return vboard.main(a.path, a.fs)


def cmd_vwire(a):
    from host import vwire
    return vwire.main(a.dir, a.links, a.topology, a.goal_pair)


def main(argv=None):
    p = argparse.ArgumentParser(prog="linkteam", description="Multiagent manipulator control: "
                                "MicroPython link agents, RMDAC host, MuJoCo plant.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario and write summary.json, the time series and plots")
    r.add_argument("scenario", help="scenario TOML file (or a thesis NAME.scenario directory)")
    r.add_argument("--out", help="output directory (default runs/<scenario name>)")
    r.add_argument("--mode", choices=("inprocess", "processes", "hil"), default="inprocess")
    r.add_argument("--bus", choices=("uart", "can"), default="uart")
    r.add_argument("--baud", type=int, default=0, help="emulate this line rate (bit/s); 0 = as fast as possible")
    r.add_argument("--lockstep", action="store_true", help="synthetic clock instead of wall clock (processes, hil)")
    r.add_argument("--wire", choices=("socket", "pty"), default="socket",
                   help="uart wires between processes: AF_UNIX socketpairs or pty pairs (slower: "
                        "a kernel worker thread per write)")
    r.add_argument("--topology", choices=("ring", "chain"), default="ring",
                   help="uart: a ring (the tip's down port wired back to the host, so frames for "
                        "the host cross one wire instead of N hops; hardware/wiring.md) or a plain chain")
    r.add_argument("--joint-io", choices=("wire", "bus"), default="wire",
                   help="processes: joint states and torques on wires of their own (like a board's "
                        "encoder and motor) or on the bus")
    r.add_argument("--grouping", metavar="A,B,...",
                   help="processes: links per node process, base to tip (5,1: links 1-5 on one node, 6 on another)")
    r.add_argument("--links-per-node", type=int, metavar="K", help="processes: K links per node process")
    r.add_argument("--ports", help="hil: the host's end of the bus: udp:BASE | serial:PATH[@BAUD] | can:IFACE:CHANNEL")
    r.add_argument("--real-plant", action="store_true", help="hil: boards read real encoders; no joint states sent")
    r.add_argument("--quiet", action="store_true", help="no progress bar, no summary print")
    r.add_argument("--no-plots", action="store_true")
    r.add_argument("--gains-anyway", action="store_true", help="run with tuned gains even when they were tuned "
                   "on another arm (run.log and summary.json gains_from say so)")
    r.set_defaults(fn=cmd_run)
    o = sub.add_parser("console", help="follow one node's log live (requests and finish times) during a "
                       "processes or hil run")
    o.add_argument("--link", type=int, required=True)
    o.add_argument("--run", help="run directory (the run's --out)")
    o.add_argument("--scenario", help="or the scenario: its default run directory runs/<name>")
    o.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the node's log to appear")
    o.set_defaults(fn=cmd_console)
    _add_thesis_commands(sub)
    fl = sub.add_parser("faults", help="run scenarios/faults/ in-process and in processes mode (UART ring, CAN) "
                        "and write faults/REPORT.md")
    fl.add_argument("--only", nargs="+", metavar="NAME", help="only these scenarios (and the fault-free reference-ft)")
    fl.add_argument("--modes", nargs="+", metavar="MODE",
                    help="of: in-process, 'processes uart ring', 'processes can' (default all)")
    fl.add_argument("--wall-clock", action="store_true", help="processes mode on the wall clock (default lockstep)")
    fl.add_argument("--jobs", type=int, default=2, help="parallel runs (default 2)")
    fl.set_defaults(fn=cmd_faults)



    _add_tune_command(sub)
    n = sub.add_parser("envelope", help="the reference run beyond the thesis's arm (payload, links, rate, gains, "
                       "start pose) -> experiments/ENVELOPE.md and a heat map")
    n.add_argument("--jobs", type=int, default=2, help="parallel processes (at most 2)")
    n.add_argument("--duration", type=float, help="simulated seconds per cell (default: the scenario's 40 s)")
    n.add_argument("--out", help="output directory (default experiments/)")
    n.add_argument("--quiet", action="store_true", help="no progress bar")
    n.set_defaults(fn=cmd_envelope)
    v = sub.add_parser("vboard", help="a virtual board: MicroPython unix port behind a pty at PATH (for mpremote)")
    v.add_argument("path", help="where to put the board's serial device (a symlink to a pty)")
    v.add_argument("--fs", help="the board's filesystem directory (default PATH.fs)")
    v.set_defaults(fn=cmd_vboard)
    w = sub.add_parser("vwire", help="the UART wires of a ring or chain of vboards and the host, on ptys in DIR")
    w.add_argument("dir", help="where to put the ports: host, up1, down1, ... (symlinks to ptys)")
    w.add_argument("--links", type=int, required=True)
    w.add_argument("--topology", choices=("ring", "chain"), default="ring",
                   help="ring: link N's down TX back to the host's RX; chain: host <-> link 1 only")
    w.add_argument("--goal-pair", action="store_true", help="ring: the host's TX reaches link N's down RX too")
    w.set_defaults(fn=cmd_vwire)
    f = sub.add_parser("flash", help="mpy-cross + mpremote: firmware, link config and boot main.py onto a board")
    f.add_argument("--port", help="the board's serial port (or a vboard PATH)")
    f.add_argument("--link", type=int, help="link index this board drives (1 = base)")
    f.add_argument("--chain", help="all links: 1=PORT,2=PORT,...")
    f.add_argument("--scenario", required=True, help="scenario whose link config to write")
    f.add_argument("--board", help="board name in firmware/boards (default from the board's platform)")
    f.add_argument("--bus-json", help='bus settings for config.json, e.g. \'{"base_port": 47000}\'')
    f.add_argument("--lines", action="store_true", help="keep line numbers in the .mpy files: tracebacks "
                   "name the line (about 1.3 KB more RAM on a Cortex-M4F; host/flash.py MPY_OPT)")
    f.set_defaults(fn=cmd_flash)
    b = sub.add_parser("boards", help="list attached boards: port, platform, arch, link, board, firmware version")
    b.add_argument("--ports", help="comma-separated ports to ask (default: USB serial ports)")
    b.set_defaults(fn=cmd_boards)
    c = sub.add_parser("config", help="dump or restore a board's /config.json")
    c.add_argument("action", choices=("dump", "restore"))
    c.add_argument("--port", required=True)
    c.add_argument("--file", help="JSON file (restore: required; dump: default stdout)")
    c.set_defaults(fn=cmd_config)
    s_ = sub.add_parser("scan", help="find the nodes on a bus by broadcast ping")
    s_.add_argument("--ports", required=True, help="udp:BASE | serial:PATH[@BAUD] | can:IFACE:CHANNEL")
    s_.add_argument("--max-links", type=int, default=32)
    s_.add_argument("--timeout", type=float, default=1.0)
    s_.set_defaults(fn=cmd_scan)
    g = sub.add_parser("budget", help="bus bytes per cycle, chain latency and the highest control rate")
    g.add_argument("--links", type=int, required=True)
    g.add_argument("--bus", required=True, help="uart:BAUD | can:BITRATE | canfd:NOMINAL/DATA")
    g.add_argument("--rate", type=float, default=120.0, help="control rate to check (Hz)")
    g.add_argument("--plant", choices=("bus", "wire", "real"), default="real",
                   help="real: boards drive their joints (TORQUE frames are telemetry); bus: a simulated "
                        "plant fed over the bus (HIL); wire: joint I/O on wires of its own (processes mode)")
    g.add_argument("--topology", choices=("ring", "chain"), default="ring",
                   help="uart: ring (tip wired back to the host) or plain chain")
    g.add_argument("--measure-on", metavar="PORT|local",
                   help="per-hop compute measured by benchmarks/mp_node_cycle.py on the flashed board at PORT "
                        "(mpremote), or 'local' under the MicroPython unix port; default: desktop figures")
    g.add_argument("--compute", metavar="NAME=US,...|@FILE",
                   help="per-hop compute in us (k_us, goal_us, fwd_us, host_us, wake_us), or @FILE holding "
                        "mp_node_cycle.py's output from a board; overrides --measure-on")
    g.add_argument("--board", choices=("stm32f4-168mhz", "rp2040-125mhz"),
                   help="per-hop compute of this board from make mcu-bench's instruction counts "
                        "(--results; cycles per instruction in host/hop_compute.py BOARDS)")
    g.add_argument("--results", default="bench/results.json", help="make mcu-bench's results (with --board)")
    g.add_argument("--kinematic-copies", type=int, default=1, choices=(1, 2, 3),
                   help="each K_i sent this many times (a scenario's [bus] kinematic_copies)")
    g.set_defaults(fn=cmd_budget)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except ScenarioError as e:
        sys.stderr.write("linkteam: scenario error: %s\n" % e)
        return 2
    except FileExistsError as e:   # --out names a directory that is not a run's (host/logs.py)
        sys.stderr.write("linkteam: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
