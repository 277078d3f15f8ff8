"""linkteam command line."""
import argparse
import sys

from host.scenario import ScenarioError, load


def cmd_run(a):
    from host.run import print_summary, run_scenario
    sc = load(a.scenario)
    opts = {}
    if a.mode != "inprocess":
        opts = {"bus": a.bus, "baud": a.baud, "lockstep": a.lockstep}
    summary, out = run_scenario(sc, a.out, mode=a.mode, quiet=a.quiet, make_plots=not a.no_plots, **opts)
    if not a.quiet:
        print_summary(summary, out)
    return 0 if summary["status"] == "ok" else 3


# ---- thesis experiments, thesis scenario format, animation (issue 4) ----------------
def cmd_experiments(a):
    from host import experiments
    return experiments.main(a)


def cmd_convert(a):
    from host import thesis_format
    out = thesis_format.convert(a.directory, a.output)
    if not a.quiet:
        print("wrote", out)
    return 0


def cmd_animate(a):
    from host import animate
    out = animate.animate(a.rundir, a.output, fps=a.fps, every=a.every)
    print("wrote", out)
    return 0


def _add_thesis_commands(sub):
    e = sub.add_parser("experiments", help="run the thesis experiments (scenarios/thesis/) in parallel and "
                       "write experiments/REPORT.md beside the thesis's figures")
    e.add_argument("--only", nargs="+", metavar="NAME", help="run only these rows (others keep their last results)")
    e.add_argument("--jobs", type=int, default=2, help="parallel processes (default 2)")
    e.add_argument("--out", help="output directory (default experiments/)")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="linkteam", description="Multiagent manipulator control: "
                                "MicroPython link agents, RMDAC host, MuJoCo plant.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario and write summary.json, the time series and plots")
    r.add_argument("scenario", help="scenario TOML file (or a thesis NAME.scenario directory)")
    r.add_argument("--out", help="output directory (default runs/<scenario name>)")
    r.add_argument("--mode", choices=("inprocess", "processes"), default="inprocess")
    r.add_argument("--bus", choices=("uart", "can"), default="uart")
    r.add_argument("--baud", type=int, default=0, help="emulate this line rate (bit/s); 0 = as fast as possible")
    r.add_argument("--lockstep", action="store_true", help="synthetic clock instead of wall clock (processes)")
    r.add_argument("--quiet", action="store_true", help="no progress bar, no summary print")
    r.add_argument("--no-plots", action="store_true")
    r.set_defaults(fn=cmd_run)
    _add_thesis_commands(sub)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except ScenarioError as e:
        sys.stderr.write("linkteam: scenario error: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
