"""python -m benchmarks publish JSON [--as NAME]: a benchmark run into the documentation.

The JSON a run writes (results/bench/, not committed) is summarised into
docs/results/bench/<NAME>.json, committed: the machine, the tool versions, the BMv2 build,
the method, each case's instructions per packet with their parts and steps, the --compare
revision's counts, the head-to-head rows and the CPU capacity, each when the run measured
it. The results page's block is generated from every file there, between the markers
below; tests/test_bench_publish.py regenerates it and fails if the page differs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from analysis.markdown import PublishError, begin, replaced, rewrite, table, valid_name
from benchmarks.report import part_costs
from control_plane.profiles import OPTIONAL_PARTS

DOCS = Path(__file__).resolve().parent.parent / "docs"
FOLDER = Path("results") / "bench"          # under docs/
PAGE = Path("benchmarks") / "results.md"    # under docs/
BEGIN = begin("python -m benchmarks publish")
# What a published file keeps of a case's instruction count, unrounded (the pages round
# once, as the console does).
COUNTED = ("instructions_per_packet", "ratio_to_trivial")
BREAKDOWNS = ("parts_per_packet", "steps_per_packet")
# ... of a case's CPU time (the data plane's trials), and of a peer against ours.
TIMED = ("cpu_us_per_packet", "spread_percent", "ratio_to_trivial")
MET = ("peer_instructions", "ours_all", "ours_profile", "ours_lean", "profile_vs_peer",
       "lean_vs_peer", "ours_constants", "constants_vs_peer")
# Our builds a head-to-head row may give a capacity for, besides the peer's.
BUILDS = ("peer", "all", "profile", "lean", "constants")
NUMBER = (int, float)


def field(doc: dict, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """doc[key], refused in one line when it is missing or not of its kind (a number is
    never a boolean)."""
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise PublishError(f"not a benchmark JSON: {where}{key} is "
                           f"{'missing' if value is None else type(value).__name__}")
    return value


def optional(doc: dict, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    """doc[key] as field() checks it, or None where the run did not measure it."""
    return None if doc.get(key) is None else field(doc, key, kind, where)


def case_counts(name: str, counted: dict, breakdowns: bool) -> dict:
    """A case's instructions per packet and ratio to the trivial program (and where they go)."""
    where = f"instructions.{name}."
    out: dict = {key: field(counted, key, NUMBER, where) for key in COUNTED}
    for key in BREAKDOWNS if breakdowns else ():
        if key in counted:
            parts = field(counted, key, dict, where)
            out[key] = {part: field(parts, part, NUMBER, where + key + ".") for part in parts}
    return out


def timed(i: int, r: dict) -> dict:
    """A case's CPU time per packet, the spread of its trials and its capacity."""
    where = f"dataplane[{i}]."
    return {"case": field(r, "case", str, where),
            **{key: field(r, key, NUMBER, where) for key in TIMED}}


def met(i: int, r: dict) -> dict:
    """A peer against ours running its algorithm (None where the run did not count one)."""
    where = f"head_to_head[{i}]."
    out = {"algorithm": field(r, "algorithm", str, where), "peer": field(r, "peer", str, where),
           **{key: optional(r, key, NUMBER, where) for key in MET}}
    capacity = optional(r, "capacity_vs_trivial", dict, where)   # a run with --interleaved
    if capacity is not None:
        out["capacity_vs_trivial"] = {
            build: optional(capacity, build, NUMBER, where + "capacity_vs_trivial.")
            for build in BUILDS}
    parameters = optional(r, "parameters", dict, where)   # the peer's, ours ran them
    if parameters:
        out["parameters"] = {name: field(parameters, name, str, where + "parameters.")
                             for name in parameters}
    return out


def capacity_search(i: int, r: dict) -> dict:
    """One capacity search: the highest rate kept, the first that failed and what limited
    it there (its step's CPU use: the switch's, the delay lines', the machine's)."""
    where = f"capacity.results[{i}]."
    out = {"program": field(r, "program", str, where),
           "packet_bytes": field(r, "packet_bytes", int, where),
           "path": field(r, "path", str, where), "flows": field(r, "flows", int, where),
           "capacity_mbps": optional(r, "capacity_mbps", NUMBER, where),
           "failing_mbps": optional(r, "failing_mbps", NUMBER, where),
           "limit": r.get("limit") if isinstance(r.get("limit"), str) else None}
    failed = [s for s in field(r, "steps", list, where)
              if isinstance(s, dict) and s.get("mbps") == out["failing_mbps"]]
    if failed:
        usage = field(failed[0], "usage", dict, where + "steps[].")
        out["at_failure"] = {
            "switch_cores": field(usage["switch"], "cores", NUMBER, where + "usage.switch."),
            # The busiest delay line, as the benchmark's console and page give it.
            "delay_line_cores": max((field(u, "cores", NUMBER, where + "usage.")
                                     for name, u in usage.items()
                                     if name.startswith("delay line")), default=0.0),
            "machine_busy": field(failed[0], "machine_busy", NUMBER, where + "steps[]."),
            "load": field(failed[0], "load", NUMBER, where + "steps[].")}
    return out


def instructions(doc: dict, key: str, breakdowns: bool) -> dict:
    counted = field(doc, key, dict)
    if not counted:
        raise PublishError(f"not a benchmark JSON: {key} counts no case")
    return {name: case_counts(name, r, breakdowns) for name, r in counted.items()}


def summary(doc: dict, source: str, name: str) -> dict:
    """What the documentation keeps of a benchmark JSON: the figures its tables show and
    what they were measured with."""
    if not isinstance(doc, dict):
        raise PublishError("not a benchmark JSON: not an object")
    machine = field(doc, "machine", dict)
    versions = field(doc, "versions", dict)
    out = {"name": name, "from": source,
           "machine": {k: v for k, v in machine.items() if k != "host"},
           "versions": {k: v for k, v in versions.items() if k != "machine"},
           "bmv2": field(doc, "bmv2", dict),
           "elapsed_s": round(field(doc, "elapsed_s", (int, float)))}
    if "capacity" in doc:      # a --capacity run measures nothing else
        capacity = field(doc, "capacity", dict)
        out["capacity"] = {"method": field(capacity, "method", dict, "capacity."),
                           "results": [capacity_search(i, r) for i, r in enumerate(
                               field(capacity, "results", list, "capacity."))]}
    else:
        out["method"] = field(doc, "method", dict)
        out["instructions"] = instructions(doc, "instructions", True)
    field(versions, "p4aqm", str, "versions.")
    field(out["bmv2"], "logging_macros", bool, "bmv2.")
    if "compare" in doc:
        compare = field(doc, "compare", dict)
        out["compare"] = {"revision": field(compare, "revision", str, "compare."),
                          "instructions": instructions(compare, "instructions", False)}
    if doc.get("head_to_head"):
        out["head_to_head"] = [met(i, r) for i, r in enumerate(field(doc, "head_to_head", list))]
    if "dataplane" in doc:
        out["dataplane"] = [timed(i, r) for i, r in enumerate(field(doc, "dataplane", list))]
    if "interleaved" in doc:
        rounds = field(doc, "interleaved", dict)
        out["interleaved"] = {
            "rounds": field(rounds, "rounds", int, "interleaved."),
            **({"packets_per_s": field(rounds, "packets_per_s", int, "interleaved.")}
               if "packets_per_s" in rounds else {}),
            "cases": {name: {key: field(r, key, NUMBER, f"interleaved.cases.{name}.")
                             for key in TIMED}
                      for name, r in field(rounds, "cases", dict, "interleaved.").items()}}
    return out


def publish(json_path: Path, name: str | None = None, docs: Path | None = None) -> list[Path]:
    """The run's summary written under `name` (by default the JSON's own) and the results
    page regenerated; returns what it wrote."""
    docs = docs or DOCS
    name = name or json_path.stem
    if not valid_name(name):
        raise PublishError(f"--as {name[:40]!r}: letters, digits, - and _ only")
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise PublishError(f"{json_path}: {str(err).splitlines()[0]}") from None
    try:
        published = summary(doc, json_path.name, name)
    except PublishError as err:
        raise PublishError(f"{json_path}: {err}") from None
    out = docs / FOLDER / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(published, indent=1) + "\n")
    return [out, *regenerate(docs)]


# ----- the results page's generated block --------------------------------------------------

def published(docs: Path = DOCS) -> list[dict]:
    """Every published benchmark run, by name."""
    return [json.loads(path.read_text()) for path in sorted((docs / FOLDER).glob("*.json"))]


def count(value: float | None) -> str:
    """Instructions as the pages write them: whole, thousands grouped by a space."""
    return "-" if value is None else f"{round(value):,}".replace(",", " ")


def change(now: float, before: float) -> str:
    return f"{100 * (now / before - 1):+.1f} %".replace("-", "−")


def provenance(doc: dict) -> str:
    """What a published run measured, with what, where and at which commit."""
    v, m, bmv2 = doc["versions"], doc["machine"], doc["bmv2"]
    against = f" against revision `{doc['compare']['revision']}`" if "compare" in doc else ""
    measured = ", ".join(what for key, what in (
        ("instructions", "instructions per 64-byte packet (callgrind)"),
        ("dataplane", "CPU time per packet"), ("interleaved", "CPU time per packet, interleaved"),
        ("head_to_head", "peers head to head"),
        ("capacity", "the testbed's capacity")) if key in doc)
    macros = "with" if bmv2["logging_macros"] else "without"
    return (f"`docs/results/bench/{doc['name']}.json` (from `{doc['from']}`): {measured}; "
            f"this tree at commit {v['p4aqm']}{against}. BMv2 {v.get('simple_switch_grpc', '')}"
            f" {macros} logging macros (`{bmv2['binary']}`), {v.get('p4c', 'p4c')}; "
            f"{m.get('cpu', 'a CPU')}, {m.get('cores', '?')} cores, kernel "
            f"{m.get('kernel', '?')}; {doc['elapsed_s'] / 60:.0f} min.")


def instruction_rows(doc: dict) -> list[dict]:
    """Each case's instructions per packet, its capacity against the trivial program, and
    the compared revision's count beside it."""
    compare = doc.get("compare")
    rows = []
    for case, r in doc.get("instructions", {}).items():
        row = {"case": case, "instructions per packet": count(r["instructions_per_packet"]),
               "capacity vs trivial": f"{r['ratio_to_trivial']:.2f}"}
        if compare:
            before = compare["instructions"].get(case)
            row[f"at {compare['revision']}"] = count(before and before["instructions_per_packet"])
            row["change"] = change(r["instructions_per_packet"],
                                   before["instructions_per_packet"]) if before else "-"
        rows.append(row)
    return rows


def breakdown_rows(doc: dict, key: str) -> list[dict]:
    """The cases' instructions per packet by part (or by step), a column each."""
    rows = []
    for case, r in doc.get("instructions", {}).items():
        if key in r:
            row = {"case": case, **{part.replace("_", " "): count(n)
                                    for part, n in r[key].items()}}
            if key == "parts_per_packet":
                row["total"] = count(r["instructions_per_packet"])
            rows.append(row)
    return rows


def head_to_head_rows(doc: dict) -> list[dict]:
    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"
    rows = doc.get("head_to_head", [])
    lean = any(r.get("ours_lean") is not None for r in rows)   # a run with --lean
    fixed = any(r.get("ours_constants") is not None for r in rows)   # with --constants
    return [{"algorithm": r["algorithm"], "peer": r["peer"],
             "ours configured as": " ".join(f"{k}={v}" for k, v in r["parameters"].items())
             if r.get("parameters") else "our defaults",
             'ours, "all"': count(r["ours_all"]),
             "ours, its profile": count(r["ours_profile"]),
             **({"ours, lean": count(r.get("ours_lean"))} if lean else {}),
             **({"ours, lean, constants": count(r.get("ours_constants"))} if fixed else {}),
             "the peer": count(r["peer_instructions"]),
             "profile / peer": ratio(r["profile_vs_peer"]),
             **({"lean / peer": ratio(r.get("lean_vs_peer"))} if lean else {}),
             **({"constants / peer": ratio(r.get("constants_vs_peer"))} if fixed else {}),
             **({f"CPU capacity vs trivial, interleaved: {build}":
                 ratio(r["capacity_vs_trivial"].get(build))
                 for build in BUILDS if build != "constants" or fixed}
                if r.get("capacity_vs_trivial") else {})}
            for r in rows]


def capacity_rows(doc: dict) -> list[dict]:
    def mbps(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"
    rows = []
    results = doc.get("capacity", {}).get("results", [])
    # The switch alone, for each program and size: what the delay lines leave of it.
    alone = {(r["program"], r["packet_bytes"]): r["capacity_mbps"] for r in results
             if r["path"] == "direct"}
    for r in results:
        at = r.get("at_failure")
        direct = alone.get((r["program"], r["packet_bytes"]))
        share = (f"{r['capacity_mbps'] / direct:.2f}" if r["path"] != "direct" and direct
                 and r["capacity_mbps"] else "-")
        rows.append({"program": r["program"], "packet": f"{r['packet_bytes']} B",
                     "path": r["path"], "keeps ≥ 95 % up to, Mb/s": mbps(r["capacity_mbps"]),
                     "first rate that failed": mbps(r["failing_mbps"]),
                     "of the switch alone": share,
                     "what limits it": r["limit"] or "-",
                     "there: the switch's cores": f"{at['switch_cores']:.2f}" if at else "-",
                     "the busiest delay line's": f"{at['delay_line_cores']:.2f}" if at
                     else "-",
                     "the machine busy, load": "-" if not at or math.isnan(at["machine_busy"])
                     else f"{100 * at['machine_busy']:.0f} %, {at['load']:.1f}"})
    return rows


def interleaved_rows(doc: dict) -> list[dict]:
    return [{"case": case, "CPU µs per packet": f"{r['cpu_us_per_packet']:.1f}",
             "spread": f"±{r['spread_percent']:.0f} %",
             "capacity vs trivial": f"{r['ratio_to_trivial']:.2f}"}
            for case, r in doc.get("interleaved", {}).get("cases", {}).items()]


def part_cost_rows(doc: dict) -> list[dict]:
    return [{"case": r["case"], "profile": count(r["profile"]),
             **{part.lower().replace("_", " "): count(r["saved"][part]) for part in OPTIONAL_PARTS},
             "all of them (lean)": count(r["lean"]), "constants (after lean)": count(r["constants"])}
            for r in part_costs(doc.get("instructions", {}))]


def cpu_rows(doc: dict) -> list[dict]:
    return [{"case": r["case"], "CPU µs per packet": f"{r['cpu_us_per_packet']:.1f}",
             "spread": f"±{r['spread_percent']:.0f} %",
             "capacity vs trivial": f"{r['ratio_to_trivial']:.2f}"}
            for r in doc.get("dataplane", [])]


def run_block(doc: dict) -> list[str]:
    """One published run: where it comes from, then each of its tables that has rows."""
    lines = [f"### {doc['name']}", "", provenance(doc), ""]
    for title, rows in (
            ("Instructions per 64-byte packet"
             + (f", this tree against `{doc['compare']['revision']}`" if "compare" in doc
                else "") + ":", instruction_rows(doc)),
            ("Where they go, per packet (BMv2's parts, [the benchmark's](index.md)):",
             breakdown_rows(doc, "parts_per_packet")),
            ("The steps inside those parts, per packet:", breakdown_rows(doc, "steps_per_packet")),
            ("Head to head: the same algorithm, instructions per packet:",
             head_to_head_rows(doc)),
            ("What each part costs a packet: the instructions its profile saves without it "
             "([optional parts](../dataplane/profiles.md)):", part_cost_rows(doc)),
            ("CPU capacity against the trivial program (CPU time per packet, median of three "
             "trials, and their spread):", cpu_rows(doc)),
            ("CPU capacity against the trivial program, interleaved (CPU time per packet"
             + (f" at {doc['interleaved']['packets_per_s']} packets/s"
                if doc.get("interleaved", {}).get("packets_per_s") else "")
             + f", median of {doc.get('interleaved', {}).get('rounds')} rounds of one trial "
             "of every case, and their spread):", interleaved_rows(doc)),
            ("The testbed's capacity: the highest bottleneck rate a dumbbell of "
             f"{doc.get('capacity', {}).get('method', {}).get('flows', '?')} Reno flows keeps "
             "at least 95 % of, and what limits it at the first rate that failed "
             "([the benchmark](index.md#the-testbeds-capacity)):", capacity_rows(doc))):
        if rows:
            lines += [title, "", *table(rows), ""]
    return lines


def results_block(docs: Path = DOCS) -> list[str]:
    runs = published(docs)
    if not runs:
        return ["Nothing published yet: `sudo make bench`, then `python -m benchmarks publish` "
                "with the JSON it names.", ""]
    return [line for doc in runs for line in run_block(doc)]


def pages(docs: Path = DOCS) -> dict[Path, str]:
    """The results page as it must read."""
    page = docs / PAGE
    return {page: replaced(page.read_text(), results_block(docs), BEGIN)}


def regenerate(docs: Path = DOCS) -> list[Path]:
    """Write the results page's generated block; the pages that changed."""
    return rewrite(pages(docs))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks publish", description=__doc__.split("\n\n")[0])
    parser.add_argument("json", type=Path, metavar="JSON",
                        help="a benchmark run's JSON (results/bench/bench-<time>.json)")
    parser.add_argument("--as", dest="as_name", metavar="NAME",
                        help="the name it is published under, saying what it measured or "
                             "compares (default: the JSON's, bench-<time>)")
    args = parser.parse_args(argv)
    try:
        written = publish(args.json, args.as_name)
    except PublishError as err:
        print(f"benchmarks: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path.relative_to(DOCS.parent) if path.is_relative_to(DOCS.parent) else path)
    return 0
