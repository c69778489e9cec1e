"""The benchmarks' tables on the console, from the JSON document they write."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from benchmarks import instructions, profile
from control_plane.profiles import CONSTANTS, LEAN, OPTIONAL_PARTS, Profile

console = Console(width=None if sys.stdout.isatty() else 150)
# Capacity against the one-table program that every AQM should reach: above the 0.78-0.81
# an independent measurement gave the public P4 AQMs (P4-CoDel, PI2 for P4).
GOAL = 0.85


def print_tables(doc: dict) -> None:
    if "dataplane" in doc:
        print_dataplane(doc)
    if "instructions" in doc:
        print_instructions(doc)
        print_head_to_head(doc)
        print_part_costs(doc)
        print_parts(doc)
    if "profile" in doc:
        print_profile(doc)
    if "control" in doc:
        print_control(doc)


def print_dataplane(doc: dict) -> None:
    ceiling = doc["source_ceiling_pps"]
    table = Table(title=f"Data plane (BMv2 logging macros "
                        f"{'on' if doc['bmv2']['logging_macros'] else 'off'}, log level off; "
                        f"source ceiling {ceiling:.0f} pps)")
    for column in ("case", "CPU us/packet", "spread", "capacity vs trivial", f">= {GOAL}",
                   "loss-free packets/s", "vs trivial"):
        table.add_column(column, justify="right")
    for r in doc["dataplane"]:
        lf = r.get("loss_free_ratio_to_trivial")
        table.add_row(r["case"], f"{r['cpu_us_per_packet']:.1f}", f"±{r['spread_percent']:.0f} %",
                      f"{r['ratio_to_trivial']:.2f}", "yes" if r["goal_met"] else "NO",
                      str(r["pps"]), f"{lf:.2f}" if lf else "-")
    console.print(table)


def print_instructions(doc: dict) -> None:
    compare = doc.get("compare")
    table = Table(title="Instructions per packet (callgrind, 64 B frames): the steady figure"
                        + (f"; this tree against {compare['revision']}" if compare else ""))
    counted = doc["instructions"]
    # A case on a profile (case@profile) against the same case on "all".
    profiled = any("@" in name for name in counted)
    columns = ["case", "instructions/packet", "capacity vs trivial", f">= {GOAL}"]
    if profiled:
        columns += ["vs all"]
    if compare:
        columns += [f"at {compare['revision']}", "vs trivial", "change"]
    for column in columns:
        table.add_column(column, justify="right")
    for name, r in counted.items():
        row = [name, f"{r['instructions_per_packet']:.0f}", f"{r['ratio_to_trivial']:.2f}",
               "yes" if r["ratio_to_trivial"] >= GOAL else "NO"]
        if profiled:
            on_all = counted.get(name.split("@")[0]) if "@" in name else None
            change = on_all and r["instructions_per_packet"] / on_all["instructions_per_packet"]
            row += [f"{100 * (change - 1):+.1f} %" if change else ""]
        if compare and name in compare["instructions"]:
            b = compare["instructions"][name]
            change = r["instructions_per_packet"] / b["instructions_per_packet"] - 1
            row += [f"{b['instructions_per_packet']:.0f}", f"{b['ratio_to_trivial']:.2f}",
                    f"{100 * change:+.1f} %"]
        table.add_row(*row)
    console.print(table)


def part_costs(counted: dict[str, dict]) -> list[dict]:
    """What each optional part costs a packet, from a run with --parts: for each case on its
    one-algorithm profile (`codel-64B@codel`), the instructions it saves without each part
    (`+no-telemetry`, by part: None where the profile has no such part), without all of
    them (`+lean`), and with the parameters as constants besides (`+lean+constants`
    against `+lean`, None where not counted)."""
    def count(name: str) -> float | None:
        return counted[name]["instructions_per_packet"] if name in counted else None
    rows = []
    for name in counted:
        case, _, profile_name = name.partition("@")
        if not profile_name or "+" in profile_name:
            continue
        profile = Profile.named(profile_name)
        without = {part: f"{case}@{profile.leaving_out(part).name}"
                   for part in OPTIONAL_PARTS if part in profile.parts}
        if not any(c in counted for c in without.values()):
            continue    # not a run with --parts
        base, lean = count(name), count(f"{name}+{LEAN}")
        fixed = count(f"{name}+{LEAN}+{CONSTANTS}")
        rows.append({"case": name, "profile": base,
                     "saved": {part: None if part not in without or count(without[part]) is None
                               else base - count(without[part]) for part in OPTIONAL_PARTS},
                     "lean": None if lean is None else base - lean,
                     "constants": None if lean is None or fixed is None else lean - fixed})
    return rows


def print_part_costs(doc: dict) -> None:
    """What each optional part costs, by the instructions its profile saves without it."""
    rows = part_costs(doc["instructions"])
    if not rows:
        return
    table = Table(title="What each part costs a packet: instructions its profile saves "
                        "without it (64 B)")
    for column in ("case", "profile", *(p.lower().replace("_", " ") for p in OPTIONAL_PARTS),
                   "all of them (lean)", "constants (after lean)"):
        table.add_column(column, justify="right")

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"
    for r in rows:
        table.add_row(r["case"], shown(r["profile"]),
                      *(shown(r["saved"][p]) for p in OPTIONAL_PARTS), shown(r["lean"]),
                      shown(r["constants"]))
    console.print(table)


def print_head_to_head(doc: dict) -> None:
    """Our algorithm on "all" and on its profile against the peer that runs it."""
    rows = doc.get("head_to_head")
    if not rows:
        return
    table = Table(title="Head to head: the same algorithm, instructions per packet (64 B)")
    for column in ("algorithm", "peer", "ours, all", "ours, profile", "ours, lean",
                   "lean, constants", "peer's", "profile vs peer", "lean vs peer",
                   "constants vs peer"):
        table.add_column(column, justify="right")

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    def ratio(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"
    for r in rows:
        table.add_row(r["algorithm"], r["peer"], shown(r["ours_all"]), shown(r["ours_profile"]),
                      shown(r.get("ours_lean")), shown(r.get("ours_constants")),
                      shown(r["peer_instructions"]), ratio(r["profile_vs_peer"]),
                      ratio(r.get("lean_vs_peer")), ratio(r.get("constants_vs_peer")))
    console.print(table)
    for r in rows:
        if r.get("parameters"):
            console.print(f"ours ran {r['algorithm']} with {r['peer']}'s parameters: "
                          + " ".join(f"{k}={v}" for k, v in r["parameters"].items()))


def print_parts(doc: dict) -> None:
    """Where each case's instructions go: the measured reason for a ratio."""
    table = Table(title="Where the instructions go, per packet (callgrind, inclusive): BMv2's "
                        "zeroing and invalidating grow with metadata fields and headers")
    table.add_column("case", justify="right")
    names = list(instructions.PARTS) + ["rest"]
    for name in names:
        table.add_column(name.replace("_", " "), justify="right")
    for case, r in doc["instructions"].items():
        parts = r.get("parts_per_packet")
        if parts:
            table.add_row(case, *[f"{parts[name]:.0f}" for name in names])
    console.print(table)
    table = Table(title="Steps inside those parts, per packet (callgrind, inclusive): the input "
                        "checks' checksum, counters, registers, conditions, every field write")
    table.add_column("case", justify="right")
    for name in instructions.STEPS:
        table.add_column(name.replace("_", " "), justify="right")
    for case, r in doc["instructions"].items():
        found = r.get("steps_per_packet")
        if found:
            table.add_row(case, *[f"{found[name]:.0f}" for name in instructions.STEPS])
    console.print(table)


def print_profile(doc: dict) -> None:
    p = doc["profile"]
    table = Table(title=f"Per packet, from BMv2's trace ({p['packets']} packets, 64 B): the "
                        "pipeline's shape")
    table.add_column("case", justify="right")
    for kind in profile.KINDS:
        table.add_column(kind.replace("_", " "), justify="right")
    for name, counts in p["cases"].items():
        table.add_row(name, *[f"{counts[kind]:.1f}" for kind in profile.KINDS])
    console.print(table)


def print_control(doc: dict) -> None:
    c = doc["control"]
    table = Table(title="Control plane")
    table.add_column("what")
    table.add_column("figure", justify="right")
    for name, s in c["p4runtime"].items():
        table.add_row(f"P4Runtime {name.replace('_', ' ')}",
                      f"median {s['median_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms (n={s['n']})")
    for interval, s in c["loop_period"].items():
        table.add_row(f"loop period error at {interval}",
                      f"mean {s['mean_error_ms']:.2f} ms, worst {s['worst_error_ms']:.2f} ms "
                      f"({s['ticks']} ticks)")
    for label, s in c["telemetry"].items():
        table.add_row(f"telemetry, {label}",
                      f"{s['records_per_s']:.0f} records/s, loss {s['loss_percent']:.2f} %")
    for command, s in c["cli"].items():
        table.add_row(f"aqmctl {command} (process start to exit)",
                      f"median {s['median_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms (n={s['n']})")
    table.add_row("golden model", f"{c['golden_model']['packets_per_s']:.0f} packets/s")
    t = doc.get("transport")
    if t:
        table.add_row(f"MECN sender, {t['bottleneck_mbps']:.0f} Mb/s tbf bottleneck",
                      f"{t['goodput_mbps']:.2f} Mb/s ({100 * t['fill']:.0f} % of the link), "
                      f"{100 * t['sender_cores']:.1f} % of a core")
    console.print(table)
