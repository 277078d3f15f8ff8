"""linkteam command line."""
import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

from bus_protocol.messages import MAX_LINKS
from host.errors import UsageError
from host.scenario.loader import ScenarioError, load

EXIT_BAD_INPUT = 2
EXIT_ABORTED = 3         # `run`: the run stopped before its end (summary.json says why)
EXIT_DEGRADED = 5        # `run`: it ran to its end with a link braked or out of the team
EXIT_INTERRUPTED = 130   # 128 + SIGINT, as a shell reports it


def _grouping(a, n):
    """--grouping 5,1 | --links-per-node K (the last node takes what is left) -> sizes,
    checked against the arm (UsageError with the reason)."""
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
        raise UsageError("--grouping: %s" % e) from None
    return sizes


def _add_live_flags(p, help_):
    from host.telemetry import DEFAULT_PORT
    p.add_argument("--live", type=int, nargs="?", const=DEFAULT_PORT, metavar="PORT",
                   help="%s (PORT default %d; 0: any free port)" % (help_, DEFAULT_PORT))
    p.add_argument("--live-address", default="127.0.0.1", metavar="ADDR",
                   help="address to serve on (default 127.0.0.1, this machine only)")


def cmd_replay(a):
    from host.telemetry import DEFAULT_PORT, replay
    return replay.main(a.rundir, a.speed, a.live_address, DEFAULT_PORT if a.live is None else a.live, a.live_wait)


def _add_key_flag(p, more=""):
    p.add_argument("--key", dest="key_file", metavar="FILE", default=os.environ.get("LINKTEAM_KEY") or None,
                   help="the arm's key file (linkteam keys create; default $LINKTEAM_KEY)" + more)


def _key_file(path):
    """--key PATH checked (host/tools/keys.py): the path, or UsageError."""
    from host.tools import keys
    if path is not None:
        try:
            keys.load(path)
        except keys.KeyError_ as e:
            raise UsageError(str(e)) from None
    return path


def cmd_keys(a):
    from host.tools import keys
    try:
        keys.create(a.path, rotate=a.action == "rotate")
        print("%s: key %s %s (mode 0600); %s" % (
            a.path, keys.fingerprint(keys.load(a.path)), "rotated" if a.action == "rotate" else "created",
            "flash it onto every board (linkteam flash --key)" if a.action == "rotate" else
            "linkteam flash --key provisions it, linkteam run --key uses it"))
    except keys.KeyError_ as e:
        raise UsageError(str(e)) from None
    return 0


def cmd_run(a):
    from host.run import print_summary, run_scenario
    sc = load(a.scenario)
    sc.key_file = _key_file(a.key_file)
    if a.mode == "hil":
        from host.runners.hil import parse_ports
        if not a.ports:
            raise UsageError("--mode hil needs --ports (the host's end of the bus: udp:BASE | serial:PATH[@BAUD] | "
                             "can:INTERFACE:CHANNEL)")
        parse_ports(a.ports)
    g = sc.gains_from
    if g and not (g["same_arm"] or g["other_arm"] or a.gains_anyway):
        from host.studies.tune_gains import describe
        raise UsageError("%s: refusing (--gains-anyway runs it regardless; a scenario that means it "
                         "says why in [tuned] other_arm)" % describe(g))
    opts = {}
    if a.mode == "processes":
        opts = {"bus": a.bus, "baud": a.baud, "lockstep": a.lockstep, "wire": a.wire, "joint_io": a.joint_io,
                "topology": a.topology, "grouping": _grouping(a, sc.n)}
    elif a.mode == "hil":
        opts = {"ports": a.ports, "lockstep": a.lockstep, "real_plant": a.real_plant}
    elif a.mode == "boards":
        opts = {"board": a.board, "topology": a.topology}
    live = (a.live_address, a.live) if a.live is not None else None
    summary, out = run_scenario(sc, a.out, mode=a.mode, quiet=a.quiet, make_plots=not a.no_plots,
                                previous="replace" if a.force else "keep", live=live, live_wait=a.live_wait,
                                **opts)
    if not a.quiet:
        print_summary(summary, out)
    if summary["status"] == "degraded":   # said even with --quiet: the arm did not finish whole
        sys.stderr.write("linkteam run: DEGRADED: %s (summary.json \"degraded\")\n" % summary["reason"])
        return EXIT_DEGRADED
    return 0 if summary["status"] == "ok" else EXIT_ABORTED


# ---- thesis experiments, thesis scenario format, animation ----------------------
def cmd_experiments(a):
    if a.gains or a.timing:
        from host.studies import gains, timing
        return (gains if a.gains else timing).main(a)
    from host.studies import experiments
    return experiments.main(a)


def cmd_convert(a):
    from host.scenario.loader import convert_thesis
    out = convert_thesis(a.directory, a.output)
    if not a.quiet:
        print("wrote", out)
    return 0


def cmd_animate(a):
    from host.report import animate
    if not (Path(a.rundir) / "summary.json").exists():
        raise UsageError("%s is not a run directory (no summary.json)" % a.rundir)
    try:
        json.loads((Path(a.rundir) / "summary.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise UsageError("%s/summary.json: not a run's summary (%s)" % (a.rundir, e)) from None
    out = animate.animate(a.rundir, a.output, fps=a.fps, every=a.every)
    print("wrote", out)
    return 0


def cmd_faults(a):
    from host.runners.stats import finished
    from host.studies import fault_study
    results = fault_study.main(a.only or (), a.modes, lockstep=not a.wall_clock, jobs=a.jobs)
    print("wrote experiments/FAULTS.md (%d runs)" % len(results))
    return 0 if all(finished(s) for _, s in results) else EXIT_ABORTED   # (a fault may degrade a run)


def cmd_console(a):
    from host import node_services
    if not (a.run or a.scenario):
        sys.stderr.write("linkteam console: give --run DIR or --scenario FILE\n")
        return 2
    run_dir = Path(a.run or Path("runs") / load(a.scenario).name)
    links = _run_links(run_dir, a.scenario)
    if a.link < 1 or (links and a.link > links):
        raise UsageError("--link %d: %s has links 1-%s" % (a.link, run_dir, links or "N"))
    sys.stderr.write("linkteam console: waiting up to %.0f s for link %d's log (%s) of a processes or hil run "
                     "to %s ...\n" % (a.wait, a.link, node_services.node_log_path("", a.link), run_dir))
    try:
        node_services.follow(run_dir, a.link, sys.stdout, wait_s=a.wait)
    except FileNotFoundError as e:
        sys.stderr.write("linkteam console: gave up: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _run_links(run_dir, scenario):
    """How many links the run (its summary, finished or under way) or the scenario has; None if unknown."""
    from host.report.run_dir import partial_dir
    for d in (partial_dir(run_dir), run_dir):
        try:
            return int(json.loads((d / "summary.json").read_text())["links"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return load(scenario).n if scenario else None


def cmd_envelope(a):
    from host.studies import envelope
    return envelope.main(a)


def _add_experiments_command(sub):
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


def _add_convert_command(sub):
    c = sub.add_parser("convert", help="convert a thesis NAME.scenario directory (Appendix C) to TOML")
    c.add_argument("directory")
    c.add_argument("-o", "--output", required=True, help="TOML file to write")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(fn=cmd_convert)


def _add_animate_command(sub):
    n = sub.add_parser("animate", help="draw a run directory's arm motion as a GIF")
    n.add_argument("rundir")
    n.add_argument("-o", "--output", help="GIF file (default RUNDIR/arm.gif)")
    n.add_argument("--fps", type=int, default=15)
    n.add_argument("--every", type=float, default=0.25, help="seconds of simulation per frame (default 0.25)")
    n.set_defaults(fn=cmd_animate)


# ---- gain tuning on Optuna ---------------------------------------------------------
def cmd_tune(a):
    from host.studies import tune
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
    from host.studies.tune import GRACE_BEATS, HEARTBEAT_S
    t.add_argument("--heartbeat", type=int, default=HEARTBEAT_S, metavar="S", help="worker heartbeat (s); a trial "
                   "whose worker misses %d beats is failed and retried (default %d)" % (GRACE_BEATS, HEARTBEAT_S))
    t.add_argument("--timeout", type=float, help="seconds after which no worker starts another trial")
    t.add_argument("--workers", type=int, default=1, help="worker processes (each joins the study)")
    t.add_argument("--out", help="output directory: study journal, gains.toml, report.md, plots (default tune/)")
    t.add_argument("--storage", help="study storage: a journal file path (default OUT/study.journal; "
                   "shared file system = shared study) or an RDB URL, e.g. postgresql://user:pw@host/db")
    t.add_argument("--study", help="study name (default linkteam-tune); workers with the same name and storage join it")
    t.add_argument("--space", help="TOML file changing the search space (see host/studies/tune.py load_space)")
    t.add_argument("--validate", nargs="+", metavar="SCENARIO", default=[], help="held-out scenarios for the report")
    t.add_argument("--payloads", type=_kg_list, metavar="KG,...", help="also report the first training "
                   "scenario with these payload masses")
    t.add_argument("--objective", choices=("mean", "worst"), default="mean")
    t.add_argument("--robust", action="store_true", help="also train on the first scenario with payload 0, payload x2 and half the control rate")
    t.add_argument("--no-plots", dest="plots", action="store_false", help="no Optuna plots in the report")
    t.add_argument("--ship", metavar="DIR", help="copy gains.toml to DIR and write DIR/<row>.toml for every training, --validate and "
                   "thesis scenario on the arm the gains were tuned on")
    t.set_defaults(fn=cmd_tune)


def _bus_json(text):
    if not text:
        return {}
    try:
        bus = json.loads(text)
    except ValueError as e:
        raise UsageError("--bus-json: not JSON (%s): %r" % (e, text)) from None
    if not isinstance(bus, dict):
        raise UsageError("--bus-json: a JSON object, e.g. '{\"base_port\": 47000}', not %r" % text)
    return bus


def cmd_flash(a):
    from host.tools import flash
    if not a.chain and (a.port is None or a.link is None):
        raise UsageError("give --port and --link, or --chain MAP")
    sc = load(a.scenario)
    bus = _bus_json(a.bus_json)
    targets = flash.parse_map(a.chain) if a.chain else {a.link: a.port}
    for link in sorted(targets):   # every target checked before any board is touched
        flash.check_target(sc, link, a.board, bus)
    key = _key_file(a.key_file)
    if key is None and sc.auth != "unauthenticated":
        raise UsageError("--key FILE (linkteam keys create FILE): a board without a key refuses to run, "
                         "unless the scenario says [bus] auth = \"unauthenticated\"")
    for link, port in sorted(targets.items()):
        try:
            flash.flash(port, link, sc, board=a.board, bus=bus, lines=a.lines, key_file=key)
        except flash.FlashError as e:
            if e.status is None:
                raise
            sys.stderr.write("linkteam flash: %s; the board said:\n" % e)
            sys.stderr.write("".join("  | %s\n" % line for line in e.lines))
            return e.status
    return 0


def cmd_boards(a):
    from host.tools import flash
    if a.ports:
        ports = [p.strip() for p in a.ports.split(",") if p.strip()]
    else:
        ports, tried = flash.discover_ports()
        print("looked for boards in: %s" % "; ".join(tried))
        if not ports:
            print("no boards found: plug one in, start `linkteam vboard PATH`, or name ports with --ports P1,P2")
            return 1
    print("%-24s %-10s %-8s %-5s %-10s %-8s %s" % ("port", "platform", "arch", "link", "board", "firmware", "boots"))
    answered = 0
    for p in ports:
        try:
            i = flash.board_info(p)
        except flash.FlashError as e:
            print("%-24s (no answer: %s)" % (p, str(e).splitlines()[0]))
            continue
        answered += 1
        if i["fw"] is None:
            boots = "no: no linkteam firmware (linkteam flash)"
        else:   # the REPL query stopped main.py: boot it again, and watch it boot
            ok, said = flash.reset_and_watch(p)
            boots = "yes" if ok else "no: " + (said[-1] if said else "?")
        print("%-24s %-10s %-8s %-5s %-10s %-8s %s" % (p, i["platform"], i["arch"], i["link"], i["board"], i["fw"], boots))
    return 0 if answered else 1


def cmd_config(a):
    from host.tools import flash
    if a.action == "dump":
        from firmware.auth import redacted
        cfg = redacted(flash.dump_config(a.port))   # a key written inline never shown
        text = json.dumps(cfg, indent=2)
        if a.file:
            try:
                with open(a.file, "w") as f:
                    f.write(text + "\n")
            except OSError as e:
                raise UsageError("--file %s: %s" % (a.file, e.strerror or e)) from None
        else:
            print(text)
    else:
        if not a.file:
            raise UsageError("config restore needs --file F (a JSON file, as config dump writes)")
        try:
            with open(a.file) as f:
                cfg = json.load(f)
        except OSError as e:
            raise UsageError("--file %s: %s" % (a.file, e.strerror or e)) from None
        except ValueError as e:
            raise UsageError("--file %s: not JSON: %s" % (a.file, e)) from None
        if not isinstance(cfg, dict) or not isinstance(cfg.get("link"), int):
            raise UsageError("--file %s: not a link config (a JSON object with \"link\")" % a.file)
        flash.restore_config(a.port, cfg)
    flash.soft_reset_to_main(a.port)   # back to the link agent (the REPL stopped it)
    return 0


def cmd_scan(a):
    from bus_protocol import states
    from host.tools.node import signer_for
    from host.runners.hil import UART_BAUDS, open_ports, parse_ports, scan
    if not 1 <= a.max_links <= MAX_LINKS:
        raise UsageError("--max-links must be 1-%d (bus addresses), not %d" % (MAX_LINKS, a.max_links))
    if not a.timeout > 0:
        raise UsageError("--timeout must be positive, not %g" % a.timeout)
    kind, kw = parse_ports(a.ports)
    # what the medium has to sweep: every address answers one broadcast PING; on a UART
    # with no @BAUD given, every usual line rate in turn
    specs = [a.ports] if kind != "serial" or "@" in a.ports else ["%s@%d" % (a.ports, b) for b in UART_BAUDS]
    found = {}
    for spec in specs:
        tr = open_ports(spec, a.max_links)
        try:
            found = scan(tr, a.max_links, timeout=a.timeout, signer=signer_for(a.key_file))
        finally:
            tr.close()
        print("%s: %s" % (spec, "%d node(s)" % len(found) if found else "no answer"))
        if found:
            break
    for link, v in sorted(found.items()):
        print("link %2d  state %s  faults %s  bad_frames %d  cycle_us %d" % (
            link, states.state_name(v[1]), ",".join(states.fault_names(v[2])) or "-", v[3], v[4]))
    if not found:
        print("no nodes answered on addresses 1-%d (%s)" % (a.max_links, ", ".join(specs)))
    return 0 if found else 1


def cmd_node(a):
    from host.tools import node
    return node.run(a, sys.stdout)


def _add_node_command(sub):
    n = sub.add_parser("node", help="one node's bring-up commands over the bus: status, brake, release, reset, "
                       "get, set, save, jog, zero (firmware/params.py)")
    n.add_argument("--ports", required=True, help="the host's end of the bus, as for --mode hil: udp:BASE | "
                   "serial:PATH[@BAUD] | can:IFACE:CHANNEL")
    n.add_argument("--link", type=int, required=True, help="the node's link (bus address)")
    acts = n.add_subparsers(dest="action", required=True)
    acts.add_parser("status", help="the node's STATUS: state, latched faults, counters")
    acts.add_parser("brake", help="brake the joint (latches fault `command`)")
    acts.add_parser("release", help="clear every latched fault (COMMAND RELEASE)")
    acts.add_parser("reset", help="reboot the board: it boots main.py and reads its config file again")
    g = acts.add_parser("get", help="read one parameter (a dotted config key: u_sat, behaviours.centering.kq)")
    g.add_argument("key")
    s = acts.add_parser("set", help="set one parameter (checked by the scenario schema; refused while running)")
    s.add_argument("key")
    s.add_argument("value", help="JSON: 12.5, true, [0, 0, 1]")
    acts.add_parser("save", help="persist the node's config (its /config.json)")
    j = acts.add_parser("jog", help="drive the joint by torque or velocity; it brakes when the jog stops "
                        "being refreshed (dead-man, firmware/params.py JOG_TIMEOUT_MS)")
    j.add_argument("--torque", type=float, help="N m (N for a prismatic joint), within u_sat")
    j.add_argument("--velocity", type=float, help="rad/s (m/s), within safety.qd_max")
    j.add_argument("--for", dest="seconds", type=float, default=1.0, help="seconds of refreshing (default 1)")
    j.add_argument("--refresh-hz", type=float, default=20.0, help="jog commands a second (default 20)")
    j.add_argument("--scenario", help="check --torque against the link's u_sat in this scenario first")
    z = acts.add_parser("zero", help="encoder offset: the joint reads --at where it stands (saved)")
    z.add_argument("--at", type=float, default=0.0, help="the position it reads now (rad or m; default 0)")
    _add_key_flag(n)
    n.set_defaults(fn=cmd_node)


def cmd_budget(a):
    from host.tools import budget, hop_compute
    compute = {}
    try:
        if a.measure_on:
            compute = hop_compute.measure_compute(port=None if a.measure_on == "local" else a.measure_on)
            if not compute:
                sys.stderr.write("linkteam budget: the benchmark printed no HOP lines on %s\n" % a.measure_on)
                return 1
        if a.from_run:   # the instructions a boards-mode run counted (summary.json "boards")
            from host.runners.boards import run_compute
            compute, a.board, n = run_compute(a.from_run, a.board, a.stat)
            a.links = a.links or n
        if a.links is None:
            raise ValueError("--links (or --from-run) is required")
        if a.compute:
            compute.update(hop_compute.parse_compute(a.compute, a.board))
        elif a.board and not a.from_run:
            import json
            with open(a.results) as f:
                compute = hop_compute.board_compute(json.load(f), a.board, a.auth == "on")
        print(budget.report(a.links, a.bus, a.rate, plant=a.plant, compute=compute, topology=a.topology,
                            kinematic_copies=a.kinematic_copies, auth=a.auth == "on"))
    except (ValueError, OSError, RuntimeError) as e:   # RuntimeError: flash.FlashError (mpremote)
        sys.stderr.write("linkteam budget: %s\n" % e)
        return 2
    return 0


def cmd_vboard(a):
    from host.tools import vboard
    return vboard.main(a.path, a.fs)


def cmd_vwire(a):
    from host.tools import vwire
    if not 1 <= a.links <= MAX_LINKS:
        raise UsageError("--links must be 1-%d (bus addresses), not %d" % (MAX_LINKS, a.links))
    return vwire.main(a.dir, a.links, a.topology, a.goal_pair)


def _add_run_command(sub):
    r = sub.add_parser("run", help="run a scenario and write summary.json, the time series and plots")
    r.add_argument("scenario", help="scenario TOML file (or a thesis NAME.scenario directory)")
    r.add_argument("--out", help="output directory (default runs/<scenario name>)")
    r.add_argument("--mode", choices=("inprocess", "processes", "hil", "boards"), default="inprocess")
    r.add_argument("--board", choices=("m4f", "m0plus"), default="m4f",
                   help="boards mode: every link on an emulated Cortex-M4F (STM32F4 class) or Cortex-M0+ "
                        "(RP2040's instruction set), QEMU, lockstep (MICROPY_SRC: host/tools/mcu.py)")
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
    r.add_argument("--force", action="store_true", help="replace a run already in the output directory "
                   "(default: it is moved aside to OUT.YYYYmmdd-HHMMSS, the time it ended)")
    r.add_argument("--quiet", action="store_true", help="no progress bar, no summary print")
    r.add_argument("--no-plots", action="store_true")
    _add_live_flags(r, "serve the run live while it goes: the built-in page at http://ADDRESS:PORT/ and the "
                    "Foxglove WebSocket protocol (Foxglove, Lichtblick, PlotJuggler) on the same port")
    r.add_argument("--live-wait", type=float, default=0.0, metavar="S",
                   help="with --live: hold the first tick until a client subscribes, at most S seconds")
    r.add_argument("--gains-anyway", action="store_true", help="run with tuned gains even when they were tuned "
                   "on another arm (run.log and summary.json gains_from say so)")
    _add_key_flag(r, "; without one in-process and processes runs make an ephemeral key")
    r.set_defaults(fn=cmd_run)


def _add_keys_command(sub):
    k = sub.add_parser("keys", help="create or rotate an arm's key for authenticated host commands (docs/security.md)")
    k.add_argument("action", choices=("create", "rotate"))
    k.add_argument("path", help="the key file (written mode 0600; its freshness state beside it as PATH.fv)")
    k.set_defaults(fn=cmd_keys)


def _add_replay_command(sub):
    y = sub.add_parser("replay", help="play a recorded run (its run.mcap) into the live server and page")
    y.add_argument("rundir", help="run directory holding run.mcap")
    y.add_argument("--speed", type=float, default=1.0, help="playback speed (2: twice real time)")
    _add_live_flags(y, "port of the live server")
    y.add_argument("--live-wait", type=float, default=30.0, metavar="S",
                   help="wait up to S seconds for a client to subscribe before playing")
    y.set_defaults(fn=cmd_replay)


def _add_console_command(sub):
    o = sub.add_parser("console", help="follow one node's log live (requests and finish times) during a "
                       "processes or hil run")
    o.add_argument("--link", type=int, required=True)
    o.add_argument("--run", help="run directory (the run's --out)")
    o.add_argument("--scenario", help="or the scenario: its default run directory runs/<name>")
    o.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the node's log to appear")
    o.set_defaults(fn=cmd_console)


def _add_faults_command(sub):
    fl = sub.add_parser("faults", help="run scenarios/faults/ in-process and in processes mode (UART ring, CAN) "
                        "and write experiments/FAULTS.md")
    fl.add_argument("--only", nargs="+", metavar="NAME", help="only these scenarios (and the fault-free reference-ft)")
    fl.add_argument("--modes", nargs="+", metavar="MODE",
                    help="of: in-process, 'processes uart ring', 'processes can' (default all)")
    fl.add_argument("--wall-clock", action="store_true", help="processes mode on the wall clock (default lockstep)")
    fl.add_argument("--jobs", type=int, default=2, help="parallel runs (default 2)")
    fl.set_defaults(fn=cmd_faults)


def _add_envelope_command(sub):
    n = sub.add_parser("envelope", help="the reference run beyond the thesis's arm (payload, links, rate, gains, "
                       "start pose) -> experiments/ENVELOPE.md and a heat map")
    n.add_argument("--jobs", type=int, default=2, help="parallel processes (at most 2)")
    n.add_argument("--duration", type=float, help="simulated seconds per cell (default: the scenario's 40 s)")
    n.add_argument("--out", help="output directory (default experiments/)")
    n.add_argument("--quiet", action="store_true", help="no progress bar")
    n.set_defaults(fn=cmd_envelope)


def _add_vboard_command(sub):
    v = sub.add_parser("vboard", help="a virtual board: MicroPython unix port behind a pty at PATH (for mpremote)")
    v.add_argument("path", help="where to put the board's serial device (a symlink to a pty)")
    v.add_argument("--fs", help="the board's filesystem directory (default PATH.fs)")
    v.set_defaults(fn=cmd_vboard)


def _add_vwire_command(sub):
    w = sub.add_parser("vwire", help="the UART wires of a ring or chain of vboards and the host, on ptys in DIR")
    w.add_argument("dir", help="where to put the ports: host, up1, down1, ... (symlinks to ptys)")
    w.add_argument("--links", type=int, required=True)
    w.add_argument("--topology", choices=("ring", "chain"), default="ring",
                   help="ring: link N's down TX back to the host's RX; chain: host <-> link 1 only")
    w.add_argument("--goal-pair", action="store_true", help="ring: the host's TX reaches link N's down RX too")
    w.set_defaults(fn=cmd_vwire)


def _add_flash_command(sub):
    f = sub.add_parser("flash", help="mpy-cross + mpremote: firmware, link config and boot main.py onto a board")
    f.add_argument("--port", help="the board's serial port (or a vboard PATH)")
    f.add_argument("--link", type=int, help="link index this board drives (1 = base)")
    f.add_argument("--chain", help="all links: 1=PORT,2=PORT,...")
    f.add_argument("--scenario", required=True, help="scenario whose link config to write")
    f.add_argument("--board", help="board name in firmware/boards (default from the board's platform)")
    f.add_argument("--bus-json", help='bus settings for config.json, e.g. \'{"base_port": 47000}\'')
    f.add_argument("--lines", action="store_true", help="keep line numbers in the .mpy files: tracebacks "
                   "name the line (about 1.3 KB more RAM on a Cortex-M4F; host/tools/flash.py MPY_OPT)")
    _add_key_flag(f, ", provisioned onto the board (/auth.key)")
    f.set_defaults(fn=cmd_flash)


def _add_boards_command(sub):
    b = sub.add_parser("boards", help="list attached boards: port, platform, arch, link, board, firmware version")
    b.add_argument("--ports", help="comma-separated ports to ask (default: USB serial ports)")
    b.set_defaults(fn=cmd_boards)


def _add_config_command(sub):
    c = sub.add_parser("config", help="dump or restore a board's /config.json")
    c.add_argument("action", choices=("dump", "restore"))
    c.add_argument("--port", required=True)
    c.add_argument("--file", help="JSON file (restore: required; dump: default stdout)")
    c.set_defaults(fn=cmd_config)


def _add_scan_command(sub):
    s_ = sub.add_parser("scan", help="find the nodes on a bus by broadcast ping")
    s_.add_argument("--ports", required=True, help="udp:BASE | serial:PATH[@BAUD] | can:IFACE:CHANNEL")
    s_.add_argument("--max-links", type=int, default=32)
    _add_key_flag(s_)
    s_.add_argument("--timeout", type=float, default=1.0)
    s_.set_defaults(fn=cmd_scan)


def _add_budget_command(sub):
    g = sub.add_parser("budget", help="bus bytes per cycle, chain latency and the highest control rate")
    g.add_argument("--links", type=int, help="links (default with --from-run: the run's)")
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
                        "(--results; cycles per instruction in host/tools/hop_compute.py BOARDS)")
    g.add_argument("--results", default="benchmarks/results.json", help="make mcu-bench's results (with --board)")
    g.add_argument("--from-run", metavar="RUN_DIR",
                   help="per-hop compute from the instructions a `--mode boards` run counted (its summary.json), "
                        "priced for --board (default: the profile of the run's build)")
    g.add_argument("--stat", choices=("median", "max"), default="median",
                   help="with --from-run: the run's median or largest count per phase")
    g.add_argument("--kinematic-copies", type=int, default=1, choices=(1, 2, 3),
                   help="each K_i sent this many times (a scenario's [bus] kinematic_copies)")
    g.add_argument("--auth", choices=("on", "off"), default="on",
                   help="the host's COMMAND, CONFIG and GOAL authenticated (a scenario's [bus] auth; with "
                        "--board the hops measured with the check, make mcu-bench)")
    g.set_defaults(fn=cmd_budget)


def parser():
    """The command line: one subcommand per job, each added by its own _add_*_command."""
    p = argparse.ArgumentParser(prog="linkteam", description="Multiagent manipulator control: "
                                "MicroPython link agents, RMDAC host, MuJoCo plant.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for add in (_add_run_command,
                _add_replay_command,
                _add_console_command,
                _add_experiments_command,
                _add_convert_command,
                _add_animate_command,
                _add_faults_command,
                _add_tune_command,
                _add_envelope_command,
                _add_vboard_command,
                _add_vwire_command,
                _add_flash_command,
                _add_boards_command,
                _add_config_command,
                _add_scan_command,
                _add_node_command,
                _add_budget_command,
                _add_keys_command):
        add(sub)
    return p


def main(argv=None):
    a = parser().parse_args(argv)
    return _call(a.fn, a, a.cmd)


def error_log_dir():
    """Where the traceback of an unexpected error goes ($LINKTEAM_LOG_DIR, else
    ~/.cache/linkteam, else the temporary directory)."""
    d = os.environ.get("LINKTEAM_LOG_DIR")
    for c in ([Path(d)] if d else []) + [Path.home() / ".cache" / "linkteam", Path(os.environ.get("TMPDIR", "/tmp"))]:
        try:
            c.mkdir(parents=True, exist_ok=True)
            return c
        except OSError:
            continue
    return Path(".")


def _one_line(e):
    text = str(e).strip() or type(e).__name__
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[0] if len(lines) == 1 else "%s (%s)" % (lines[0].rstrip(":"), lines[-1])


def _call(fn, a, cmd):
    """Run one command: bad input -> one line and status 2; an unexpected error -> one line
    naming the log that holds its traceback, status 1; Ctrl-C -> status 130. No traceback
    reaches the terminal."""
    from host.tools.flash import FlashError
    try:
        return fn(a)
    except ScenarioError as e:
        sys.stderr.write("linkteam %s: scenario error: %s\n" % (cmd, _one_line(e)))
        return EXIT_BAD_INPUT
    except (UsageError, FileExistsError, FlashError) as e:   # FileExistsError: --out not a run's (host/report/run_dir.py)
        sys.stderr.write("linkteam %s: %s\n" % (cmd, _one_line(e)))
        return e.status if isinstance(e, FlashError) and e.status else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("linkteam %s: interrupted\n" % cmd)
        return EXIT_INTERRUPTED
    except BrokenPipeError:   # `linkteam ... | head`
        return 0
    except Exception as e:
        path = error_log_dir() / ("linkteam-error-%s-%d.log" % (time.strftime("%Y%m%d-%H%M%S"), os.getpid()))
        try:
            path.write_text("linkteam %s\n%s" % (" ".join(sys.argv[1:]), traceback.format_exc()))
            where = "traceback in %s" % path
        except OSError:
            where = "no log written"
        sys.stderr.write("linkteam %s: unexpected error: %s: %s (%s)\n" % (cmd, type(e).__name__, _one_line(e), where))
        return 1


if __name__ == "__main__":
    sys.exit(main())
