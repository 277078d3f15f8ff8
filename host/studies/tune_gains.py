"""Tuned gains that know their arm. `linkteam tune` writes a `[tuned]` table into the gains
overlay it makes: the fingerprint of the arm it was tuned on (kinematics and masses), that
arm's scenario name, the study and the trial. A scenario that takes the overlay (`extends`)
gets `gains_from`: where its gains came from and whether its own arm is that arm; `linkteam
run` refuses another arm's gains unless --gains-anyway, and every run says so in run.log and
summary.json.

The fingerprint covers what the gains act on: each link's joint type, DH parameters (theta,
d, a, alpha), mass, centroid and inertia (Scenario.links, in the scenario's units), each to
3 significant digits: an arm written with rounder numbers (the thesis's 0.4938 for 0.49375
kg m^2) is the same arm; a change of a few per cent is another. Payload, gravity, limits, damping and the trajectory are not the arm:
a study trains on payload and rate variants of it, and a held-out check varies them."""
import hashlib
import json

ARM_FIELDS = ("type", "theta", "d", "a", "alpha", "mass", "centroid", "inertia")


def _canon(v):
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    return "%.3g" % v if isinstance(v, float) else v


def arm_fingerprint(links):
    """'arm-' + 16 hex digits of SHA-256 over the links' ARM_FIELDS."""
    text = json.dumps([[_canon(L[k]) for k in ARM_FIELDS] for L in links], separators=(",", ":"))
    return "arm-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def arm_summary(links):
    return "%d links, %.4g kg" % (len(links), sum(L["mass"] for L in links))


def tuned_table(sc, study, trial):
    """The `[tuned]` table of a gains overlay tuned on scenario `sc`."""
    return {"arm": arm_fingerprint(sc.links), "arm_name": sc.name, "arm_summary": arm_summary(sc.links),
            "study": study, "trial": trial}


def _source_of_table(sources, table, key):
    """The file (of a scenario's extends chain) that writes `key` in [table]."""
    for path, text in sources or ():
        inside = False
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                inside = line.startswith("[%s]" % table)
            elif inside and line.split("=")[0].strip() == key:
                return path
    return None


def gains_from(sc, sources):
    """summary.json `gains_from` of a scenario whose gains carry a [tuned] table (else None)."""
    t = sc.raw.get("tuned") or {}
    if not t.get("arm"):
        return None
    here = arm_fingerprint(sc.links)
    return {"file": _source_of_table(sources, "tuned", "arm"), "study": t.get("study"), "trial": t.get("trial"),
            "tuned_arm": t["arm"], "tuned_arm_name": t.get("arm_name"), "tuned_arm_summary": t.get("arm_summary"),
            "arm": here, "arm_summary": arm_summary(sc.links), "same_arm": here == t["arm"],
            "other_arm": t.get("other_arm")}


def describe(g):
    """One line for run.log and the refusal."""
    where = "gains from %s (study %s, trial %s)" % (g["file"], g["study"], g["trial"])
    if g["same_arm"]:
        return "%s, tuned on this arm (%s)" % (where, g["arm"])
    line = ("%s were tuned on another arm: %s %s (%s); this arm is %s (%s)"
            % (where, g["tuned_arm_name"], g["tuned_arm"], g["tuned_arm_summary"], g["arm"], g["arm_summary"]))
    return line + ("; on purpose: %s" % g["other_arm"] if g["other_arm"] else "")
