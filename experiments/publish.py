"""The published results: what `python -m experiments publish FOLDER` takes from a run
folder into the documentation, and the tables the documentation shows from it.

A published run is a small JSON file, docs/results/<experiment>/<name>.json (the plan's
options and factors, the commit the runs were made at, how long they took, the summary
table's rows and the claims' verdicts), committed with the figures it drew
(docs/figures/<experiment>/ for the plan as it stands, docs/figures/<experiment>/<name>/
for a controlled run). The pages never hold a typed number: each experiment's page has a
block generated from its published files, and the reproductions page one from all of them,
between the markers below; tests/test_published.py regenerates them and fails if a page
differs.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable

from analysis import figures as docs_figures
from analysis.markdown import END, PublishError, begin, replaced, rewrite, table
from analysis.results import run_metrics
from analysis.stats import DIFFERS, HOLDS, NOT_MEASURED, UNCLEAR, points_of
from experiments import factors
from experiments.base import PlanOptions, configurations
from experiments.catalog import EXPERIMENTS
from control_plane.profiles import ALL

DOCS = Path(__file__).resolve().parent.parent / "docs"
RESULTS = DOCS / "results"
BEGIN = begin("python -m experiments publish")
MAIN = "main"
# The ns-3 twin's plan as it stands, published beside the switch's `main`.
TWIN = "ns3"


def unseeded(config: dict) -> dict:
    """A run's configuration without its repeat's seed."""
    return {**config, "seed": None, "topology": {**config["topology"], "seed": None}}


def gather(folders: list[Path], left_out: Callable[[Path], None] = lambda run: None
           ) -> tuple[str, list[tuple[str, Path, dict]], list[dict]]:
    """The finished runs of one experiment in these folders (a sweep's, copied back from
    several machines): (experiment, [(label, folder, metrics)], their configs). Unfinished
    runs are left out (each told to `left_out`); a run present twice, or one configuration
    run two ways, is an error."""
    runs: dict[tuple[str, int], Path] = {}
    configs: dict[str, tuple[dict, Path]] = {}
    names = set()
    for folder in folders:
        paths = sorted(folder.glob("*/config.json"))
        if not paths:
            raise PublishError(f"{folder}: no runs (folders with config.json) here")
        for path in paths:
            config = json.loads(path.read_text())
            if not (path.parent / "metrics.json").is_file():   # written as a run ends
                left_out(path.parent)
                continue
            names.add(config["experiment"])
            key = (config["label"], config.get("seed", 1))
            if key in runs:
                raise PublishError(f"{config['label']} seed {key[1]} is in both {runs[key]} "
                                   f"and {path.parent}: keep one")
            # Repeats combine only if they ran the same configuration (factors, loss...).
            same = configs.setdefault(config["label"], (unseeded(config), path.parent))
            if same[0] != unseeded(config):
                changed = factors.describe(config.get("factors", []), meanings=False)
                raise PublishError(f"{config['label']} ran differently in {same[1]} and "
                                   f"{path.parent}{f', factors {changed}' if changed else ''}"
                                   ": report them apart")
            runs[key] = path.parent
    if len(names) != 1:
        raise PublishError(f"these folders hold finished runs of "
                           f"{', '.join(sorted(names)) or 'nothing'}: give folders of one "
                           "experiment")
    backends = sorted({json.loads((run / "config.json").read_text()).get("backend", "bmv2")
                       for run in runs.values()})
    if len(backends) > 1:
        raise PublishError(f"these folders hold runs of the switch and of its ns-3 twin "
                           f"({', '.join(backends)}): publish them apart")
    done = [json.loads((run / "config.json").read_text()) for run in runs.values()]
    return names.pop(), [(label, run, run_metrics(run)) for (label, _), run in runs.items()], done


def time_line(folder: Path) -> str:
    """How long a folder's runs took: known only to the run that made them (its summary.md)."""
    summary = folder / "summary.md"
    return next((line for line in summary.read_text().splitlines()
                 if line.startswith("Time: ")), "") if summary.is_file() else ""


def timing(folders: list[Path]) -> str:
    """How long the runs of several folders took, one part per folder."""
    parts = [line.removeprefix("Time: ").rstrip(".") for line in map(time_line, folders) if line]
    return "Time: " + "; ".join(parts) + "." if parts else ""


def shown(row: dict) -> dict:
    """A table row as the summary prints it: an Estimate left in a row (a float to JSON)
    becomes its text, mean ± interval (n)."""
    return {k: str(v) if isinstance(v, float) else v for k, v in row.items()}


def run_commit(folder: Path) -> str:
    """The commit a run was made at (its versions.json), "unknown" where none was kept."""
    versions = folder / "versions.json"
    return json.loads(versions.read_text()).get("p4aqm", "unknown") if versions.is_file() \
        else "unknown"


def commits(runs: list[tuple[str, Path, dict]]) -> list[str]:
    """The commits these runs were made at."""
    return sorted({run_commit(folder) for _, folder, _ in runs})


def alongside(experiment_name: str, changed: tuple[tuple[str, str], ...], beside: list[Path]
              ) -> tuple[list[tuple[str, Path, dict]], list[dict], dict]:
    """The runs of `beside` that the controlled runs' factors leave alone (a factor refused
    for their configuration: another algorithm's), their configs, and where they came from.
    A configuration the factors would change is never taken, even one the controlled runs
    lack (unfinished, or outside their --only)."""
    name, results, configs = gather(beside)
    if name != experiment_name:
        raise PublishError(f"the runs beside (--beside) are {name}'s, not {experiment_name}'s")
    plan = {spec.label: spec for spec in EXPERIMENTS[name].plan(PlanOptions(full=True))}

    def untouched(label: str) -> bool:
        try:
            factors.apply(plan[label], changed)
        except factors.FactorError:
            return True
        return False

    keep = {label for label in plan if untouched(label)}
    added = [run for run in results if run[0] in keep]
    if not added:
        raise PublishError("the controlled runs' factors concern every configuration beside "
                           f"({factors.describe(changed, meanings=False) or 'no factor'}): "
                           "nothing to add")
    kept = [c for c in configs if c["label"] in keep]
    their = {tuple(map(tuple, c.get("factors", []))) for c in kept}
    if len(their) > 1:
        raise PublishError("the runs beside ran with different factors: give one baseline")
    return added, kept, {"runs": len(added),
                         "commits": commits(added),
                         "factors": [list(f) for f in their.pop()]}


def publish(folders: list[Path], name: str | None = None, docs: Path | None = None,
            beside: list[Path] | None = None) -> list[Path]:
    """Take finished runs into the documentation under `name` (by default `main` for the
    switch's runs, `ns3` for the twin's); returns what it wrote. `beside`: folders of the
    plan's runs; those of the configurations the controlled runs' factors leave alone are
    shown and judged with them (E6's NEWQUE readings beside the other algorithms)."""
    docs = docs or DOCS
    experiment_name, results, configs = gather(folders)
    experiment = EXPERIMENTS[experiment_name]
    backend = configs[0].get("backend", "bmv2")
    name = name or (MAIN if backend == "bmv2" else TWIN)
    if (name == MAIN) != (backend == "bmv2") and name in (MAIN, TWIN):
        raise PublishError(f"`{name}` is the {'switch' if name == MAIN else 'twin'}'s plan; "
                           f"these runs are the {'twin' if backend == 'ns3' else 'switch'}'s")
    changed = tuple(tuple(f) for f in configs[0].get("factors", []))
    own = len(results)
    others: dict = {}
    if beside:
        if name in (MAIN, TWIN):
            raise PublishError("runs published beside others are a controlled run: name it "
                               "with --as")
        added, kept, others = alongside(experiment_name, changed, beside)
        results, configs = results + added, configs + kept
    programs = sorted({c.get("program", ALL) for c in configs})
    if len(programs) > 1:
        raise PublishError(f"these runs ran on the programs {', '.join(programs)}: "
                           "report them apart" + (" (controlled runs keep their baseline's "
                                                  "program with --factor program=plan)"
                                                  if beside else ""))
    runs = configurations(results, experiment.plan(PlanOptions(full=True)))
    figure_dir = docs / "figures" / experiment_name / ("" if name == MAIN else name)
    sources = ", ".join(docs_figures.shown(f) for f in [*folders, *(beside or [])])
    with tempfile.TemporaryDirectory() as tmp:
        rows, drawn = experiment.report(runs, Path(tmp))
        figure_dir = docs_figures.emptied(figure_dir)
        written = [docs_figures.publish(png, figure_dir / png.name, sources) for png in drawn]
    doc = {"experiment": experiment_name, "name": name, "backend": backend,
           "title": experiment.title,
           "commits": commits(results[:own]), "program": programs[0],
           "repeats": max(m.get("repeats") and len(m["repeats"]) or 1 for _, _, m in runs),
           "configurations": len(runs), "runs": len(results),
           "factors": [list(f) for f in changed],
           **({"own_runs": own, "beside": others} if others else {}),
           "time": timing(folders), "rows": [shown(row) for row in rows],
           "claims": experiment.verdicts(runs) if experiment.verdicts else [],
           "figures": [p.name for p in written]}
    out = docs / "results" / experiment_name / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return [out, *written, *regenerate(docs)]


# ----- the pages' generated blocks -------------------------------------------------------

def published(docs: Path = DOCS) -> dict[str, list[dict]]:
    """Every published file, by experiment, the plan as it stands first (docs/results/bench/
    holds the benchmarks')."""
    out: dict[str, list[dict]] = {}
    for path in sorted(p for p in (docs / "results").glob("*/*.json")
                       if p.parent.name in EXPERIMENTS):
        doc = json.loads(path.read_text())
        out.setdefault(doc["experiment"], []).append(doc)
    for docs_of in out.values():
        docs_of.sort(key=lambda d: (d["name"] != MAIN, d["name"]))
    return out


def provenance(doc: dict) -> str:
    repeats = doc["repeats"]
    n = doc["configurations"]
    head = (f"{doc['runs']} runs ({n} configuration{'s' if n != 1 else ''}, "
            + ("one run each" if repeats == 1 else f"up to {repeats} repeats each") + ")")
    made = f"at commit {', '.join(doc['commits'])}"
    changed = factors.describe(doc["factors"], meanings=False)
    others = doc.get("beside")
    if others:      # controlled runs beside the plan's other configurations
        text = (f"{head} on build profile `{doc['program']}`: {doc['own_runs']} {made}"
                + (f", changed: {changed}" if changed else "")
                + f"; beside them, the other configurations' {others['runs']} runs at commit "
                + ", ".join(others["commits"])
                + (f", changed: {factors.describe(others['factors'], meanings=False)}"
                   if others["factors"] else ", unchanged"))
    else:
        where = (f"on build profile `{doc['program']}`" if backend(doc) == "bmv2" else
                 "in the ns-3 twin (" + ("ns-3's own queue discs"
                                         if factors.ns3_discs(doc["factors"]) else
                                         "the golden models of its algorithms") + ")")
        text = (f"{head} {made} {where}"
                + (f"; changed in every run: {changed}" if changed else ""))
    return text + (f". {doc['time']}" if doc["time"] else ".")


def backend(doc: dict) -> str:
    """Where a published run ran: the switch (bmv2; files published before the twin say
    nothing) or its ns-3 twin."""
    return doc.get("backend", "bmv2")


def meanings(doc: dict) -> list[str]:
    """What each of a published run's factors changes, a line each."""
    return [f"- `{name}={value}`: {factors.FACTORS[name].what}" for name, value in doc["factors"]]


def heading(doc: dict) -> str:
    """A published run's heading on its experiment's page: the plan, a controlled run (its
    factors), or another run of the plan's (e.g. its --full sweep)."""
    if doc["name"] == MAIN:
        return "As planned"
    if doc["name"] == TWIN:
        return "In ns-3, as planned"
    kind = "Controlled" if doc["factors"] else "Also run"
    return f"{kind}{' in ns-3' if backend(doc) == 'ns3' else ''}: {doc['name']}"


def experiment_block(experiment: str, docs_of: list[dict]) -> list[str]:
    if not docs_of:
        return [f"Nothing published yet: `python -m experiments run {experiment}`, then "
                f"`python -m experiments publish` with the run folder it names.", ""]
    lines = []
    if planned(docs_of, MAIN) and planned(docs_of, TWIN):
        lines += ["### Each claim on both backends", "",
                  "As planned, in [the ns-3 twin](twin.md) and on the switch, and the cause of "
                  "the switch's verdict ([how to read it](reproductions.md)):", "",
                  *table(both_backends(experiment, docs_of)), ""]
    for doc in docs_of:
        lines += [f"### {heading(doc)}", "", f"`docs/results/{experiment}/{doc['name']}.json`: "
                  + provenance(doc), ""]
        if doc["factors"]:
            lines += meanings(doc) + [""]
        if any(claim["verdict"] != NOT_MEASURED for claim in doc["claims"]):
            lines += table(doc["claims"]) + [""]
        elif doc["claims"]:
            lines += ["These runs alone measure none of the paper's claims.", ""]
        lines += ["Every configuration (means ± 95 % half-widths over the repeats):", ""]
        lines += table(doc["rows"]) + [""]
        folder = "" if doc["name"] == MAIN else f"{doc['name']}/"
        lines += [f"![{name}](../figures/{experiment}/{folder}{name})" for name in doc["figures"]
                  if doc["name"] != MAIN]
        if doc["name"] != MAIN and doc["figures"]:
            lines.append("")
    return lines


def overview_name(experiment: str, doc: dict) -> str:
    """A published run as the overview names it: a link to its section on the experiment's
    page, with its factors (their meanings are on that page)."""
    changed = factors.describe(doc["factors"], meanings=False)
    return f"[{doc['name']}]({overview_anchor(experiment, doc)})" + (
        f": {changed}" if changed else "")


VERDICTS = (HOLDS, DIFFERS, UNCLEAR)
PLURAL = {HOLDS: "hold", DIFFERS: "differ"}


def claim_of(doc: dict, text: str) -> str:
    """The experiment's planned claim a published claim states: a claim's text may add what
    this run measured (E7's "(here: 10 clients)" on the switch, 25 in the twin)."""
    claims = EXPERIMENTS[doc["experiment"]].claims if doc.get("experiment") in EXPERIMENTS \
        else []
    return max((c for c in claims if text.startswith(c)), key=len, default=text)


def planned(docs_of: list[dict], name: str) -> dict[str, dict]:
    """The plan's claims as one backend judged them (the doc published as `name`), by the
    planned claim each states."""
    doc = next((d for d in docs_of if d["name"] == name), None)
    return {} if doc is None else {claim_of(doc, c["claim"]): c for c in doc["claims"]
                                   if c["verdict"] != NOT_MEASURED}


def counted(n: int, verdict: str) -> str:
    """"1 holds", "2 hold"."""
    return f"{n} {verdict if n == 1 else PLURAL.get(verdict, verdict)}"


def headline(everything: dict[str, list[dict]]) -> list[str]:
    """How many of the planned claims hold, differ or are not distinguishable, per backend."""
    lines = []
    for name, where in ((MAIN, "On the switch"), (TWIN, "In the ns-3 twin")):
        verdicts = [c["verdict"] for docs_of in everything.values()
                    for c in planned(docs_of, name).values()]
        if verdicts:
            counts = ", ".join(counted(verdicts.count(v), v) for v in VERDICTS)
            lines.append(f"- {where}: of the {len(verdicts)} claims judged as planned, "
                         f"{counts}.")
    both = [(planned(d, MAIN)[c]["verdict"], planned(d, TWIN)[c]["verdict"])
            for d in everything.values() for c in planned(d, MAIN) if c in planned(d, TWIN)]
    differs = [t for s, t in both if s == DIFFERS]
    if differs:
        lines.append(f"- Of the {len(differs)} claims that differ on the switch and were judged "
                     f"in the twin: {counted(differs.count(DIFFERS), DIFFERS)} in the twin too "
                     f"(the paper as we read it is a cause, the table says where), "
                     f"{counted(differs.count(HOLDS), HOLDS)} there (the switch is the cause), "
                     f"{counted(differs.count(UNCLEAR), UNCLEAR)} there.")
    return lines or ["Nothing published yet."]


def cause(switch: dict | None, twin: dict | None, explained: str) -> str:
    """Where a claim's verdict on the switch comes from, point by point (a load, a buffer)
    from the twin's beside it: the paper as we read it where the twin misses too, the
    switch where the twin holds (with the controlled run that explains it, if any), the
    twin where only the twin misses."""
    sv, tv = (switch or {}).get("verdict"), (twin or {}).get("verdict")
    if switch is None or twin is None:
        return "the twin has not judged it yet" if sv == DIFFERS else ""
    if DIFFERS not in (sv, tv):
        return ("" if sv == tv == HOLDS else
                f"undecided: not distinguishable {'in the twin' if tv == UNCLEAR else 'on the switch'}")
    s_points, s_miss = points_of(switch)
    t_points, t_miss = points_of(twin)
    if not set(s_points) & set(t_points):      # no point in common: the claims' verdicts
        s_points = t_points = ["all"]
        s_miss, t_miss = (["all"] if sv != HOLDS else []), (["all"] if tv != HOLDS else [])

    def at(names: list[str], every: list[str]) -> str:
        return "" if set(names) >= set(every) else f" at {', '.join(names)}"

    both = [p for p in s_miss if p in t_miss]
    switch_only = [p for p in s_miss if p in t_points and p not in t_miss]
    twin_only = [p for p in t_miss if p in s_points and p not in s_miss]
    parts = []
    if both:
        parts.append(("the paper as we read it" if tv == DIFFERS else
                      "undecided (not distinguishable in the twin)") + at(both, s_points))
    if switch_only:
        parts.append("the switch" + at(switch_only, s_points)
                     + (f" ({explained})" if explained and sv != tv else ""))
    if twin_only:
        parts.append("the twin" + at(twin_only, t_points)
                     + (f" ({explained})" if explained and sv != tv and not switch_only else ""))
    return "; ".join(parts)


# Controlled runs that check the twin rather than play the switch: ns-3's own queue discs in
# place of the golden models (issue 39's model-against-ns-3 comparison) explain no verdict.
NOT_A_CAUSE = {"aqm_impl"}


def why(experiment: str, claim: str, switch: str, twin: str, docs_of: list[dict]) -> str:
    """Why the backends disagree on a claim: a controlled run of one that gives the other's
    verdict (the twin with a behaviour of the switch's switched on, or the switch with one
    of the papers' simulators'), else "not explained yet"."""
    causes = []
    for doc in docs_of:
        if (doc["name"] in (MAIN, TWIN) or not doc["factors"]
                or any(name in NOT_A_CAUSE for name, _ in doc["factors"])):
            continue
        verdict = next((c["verdict"] for c in doc["claims"]
                        if claim_of(doc, c["claim"]) == claim), None)
        target, side = (switch, "the twin") if backend(doc) == "ns3" else (twin, "the switch")
        if verdict == target:
            changed = " and ".join(f"`{n}={v}`" for n, v in doc["factors"])
            other = "the switch's" if side == "the twin" else "the twin's"
            causes.append(f"{side} with {changed} gives {other} verdict "
                          f"([{doc['name']}]({overview_anchor(experiment, doc)}))")
    return "; ".join(causes) if causes else "not explained yet"


def overview_anchor(experiment: str, doc: dict) -> str:
    anchor = "".join(c for c in heading(doc).lower().replace(" ", "-")
                     if c.isalnum() or c == "-")
    return f"{experiment}.md#{anchor}"


def verdict_cell(claim: dict | None) -> str:
    return "-" if claim is None else f"**{claim['verdict']}**: {claim['ours']}"


def both_backends(experiment: str, docs_of: list[dict]) -> list[dict]:
    """Each planned claim as the twin and the switch judge it, and the cause of the
    switch's verdict (why the two disagree, where they do)."""
    rows = []
    switch, twin = planned(docs_of, MAIN), planned(docs_of, TWIN)
    for claim in dict.fromkeys([*switch, *twin]):
        s, t = switch.get(claim), twin.get(claim)
        sv, tv = (s and s["verdict"]), (t and t["verdict"])
        rows.append({"claim (the paper's value)": (s or t)["claim"],
                     "ns-3 twin": verdict_cell(t), "switch": verdict_cell(s),
                     "cause": cause(s, t, why(experiment, claim, sv, tv, docs_of)
                                    if sv and tv and sv != tv else "")})
    return rows


def reproductions_block(everything: dict[str, list[dict]]) -> list[str]:
    """The headline, each planned claim as the switch and the twin judge it (and why they
    differ), then every claim of every controlled run."""
    rows, controlled = [], []
    for experiment, docs_of in everything.items():
        link = f"[{experiment.upper()}]({experiment}.md)"
        source = EXPERIMENTS[experiment].source
        paper = f"[{source[1]}](../bibliography.md#{source[0]})" if source else "-"
        rows += [{"experiment": link, "paper": paper, **row}
                 for row in both_backends(experiment, docs_of)]
        for doc in docs_of:
            if doc["name"] in (MAIN, TWIN):
                continue
            for claim in (c for c in doc["claims"] if c["verdict"] != NOT_MEASURED):
                controlled.append({"experiment": link, "runs": overview_name(experiment, doc),
                                   "on": "ns-3" if backend(doc) == "ns3" else "switch",
                                   "claim": claim["claim"], "verdict": claim["verdict"]})
    if not rows and not controlled:
        return ["Nothing published yet.", ""]
    return [*headline(everything), "", "### Each claim as planned", "", *table(rows), "",
            "### Controlled runs", "", *(table(controlled) or ["None published yet."]), ""]


def pages(docs: Path = DOCS) -> dict[Path, str]:
    """Every page with a generated block, as it must read."""
    everything = published(docs)
    out = {}
    for experiment in EXPERIMENTS:
        page = docs / "experiments" / f"{experiment}.md"
        if page.is_file() and BEGIN in page.read_text():
            out[page] = replaced(page.read_text(),
                                 experiment_block(experiment, everything.get(experiment, [])),
                                 BEGIN)
    overview = docs / "experiments" / "reproductions.md"
    out[overview] = replaced(overview.read_text(), reproductions_block(everything), BEGIN)
    readme = docs.parent / "README.md"
    if readme.is_file() and BEGIN in readme.read_text():
        out[readme] = replaced(readme.read_text(), headline(everything) + [""], BEGIN)
    return out


def regenerate(docs: Path = DOCS) -> list[Path]:
    """Write every page's generated block; the pages that changed."""
    return rewrite(pages(docs))
