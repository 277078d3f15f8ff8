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
    r.add_argument("--lockstep", action="store_true", help="synthetic clock instead of wall clock (processes)")
    r.add_argument("--quiet", action="store_true", help="no progress bar, no summary print")
    r.add_argument("--no-plots", action="store_true")
    r.set_defaults(fn=cmd_run)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except ScenarioError as e:
        sys.stderr.write("linkteam: scenario error: %s\n" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
