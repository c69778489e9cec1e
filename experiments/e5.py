"""E5 (seed 002, Liu, chs. 4-5): RED, ECN and AECN with heterogeneous round-trip times.

The seed's dumbbell: fragile, average and robust senders 145, 45 and 5 ms from the
router (minimum RTT 300, 100 and 20 ms with the 5 ms to the receivers), a 10 Mb/s
bottleneck, 1000-byte packets, a 120-packet queue, minth 10 / maxth 30 (maxth = 3 minth),
send window 64 packets, 300 Mb/s of demand split equally among the groups, 15 to 600
flows. AECN's RTT comes from the switch's own measurement (TCP timestamps), the senders'
addresses in its table as the fallback; three short runs check the measurement against
ping, one group at a time.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path

from analysis import plots, stats
from control_plane.aqm import Aecn, Aqm, Red, RedEcn
from experiments.base import (Experiment, PlanOptions, Row, Runs, curves, fmt, line_figure,
                              queue_columns)
from experiments.spec import CONNECT_RTTS, Flow, RunSpec
from topologies.specs import Bottleneck, rtt_groups

BOTTLENECK = Bottleneck(mbps=10, delay=0.0, buffer=120, packet_bytes=1000)
# One sender per group, 300 Mb/s of demand into the router as the seed's: 100 Mb/s each.
TOPOLOGY, SENDER_GROUPS = rtt_groups(BOTTLENECK, access_mbps=100)
GROUPS = ("fragile", "average", "robust")    # the seed's order, in tables and plots
MINTH, MAXTH, MAXP, WQ = 10.0, 30.0, 0.5, 0.002
WINDOW = 64 * 1000          # bytes: 64 packets (iperf3 -w; Linux's accounting is approximate)
DURATION, MEASURE_FROM = 60.0, 10.0
# Streams per iperf3 process, and the time by which every group has connected (the
# fragile group's STREAMS handshakes of 300 ms, with a margin).
STREAMS = 20
SETUP = CONNECT_RTTS * STREAMS * 0.300
FLOWS = (15, 30, 60, 120, 240, 480, 600)
SUBSET_FLOWS = (15, 60, 240)
ALGORITHMS = ("red", "ecn", "aecn")
RTT_RUN_DURATION, RTT_RUN_FLOWS = 30.0, 6
# The table AECN falls back to: each sender's address (sender k is 10.0.0.k+1).
GROUP_RULES = ";".join(f"src:10.0.0.{k + 1}/32={g}" for k, g in enumerate(SENDER_GROUPS))

SCALING = ("the seed's scale: 10 Mb/s bottleneck (1 250 packets/s of 1000 B), 5 ms to the "
           "receivers, senders 145 / 45 / 5 ms away (RTT 300 / 100 / 20 ms), queue 120, "
           f"minth {MINTH:g} / maxth {MAXTH:g}, maxp {MAXP} (the seed's figures use 0.1 to "
           f"0.8), wq {WQ}; every group's flows are iperf3 streams of one 100 Mb/s sender "
           "(300 Mb/s in all, as the seed), window 64 packets; Linux Reno with its "
           "timestamps (the seed: ns-2 Reno, no delayed ACKs); "
           f"{DURATION:g} s runs, queue measured from {MEASURE_FROM:g} s; AECN's RTT "
           "measured by the switch, the senders' addresses as fallback; a = b = 2. "
           f"`make e5` runs {', '.join(map(str, SUBSET_FLOWS))} flows; `--full` adds "
           f"{', '.join(str(n) for n in FLOWS if n not in SUBSET_FLOWS)}")

CLAIMS = [
    "ECN gives better aggregate goodput than RED for heterogeneous flows (ch. 4)",
    "AECN is fairer than ECN (Jain's index) (ch. 5)",
    "AECN drops fewer packets than ECN (ch. 5)",
    "AECN locks out fewer flows than ECN (ch. 5)",
    "AECN gives the fragile group a larger share than ECN does (ch. 5)",
]


def aqm(name: str) -> Aqm:
    common = dict(minth=MINTH, maxth=MAXTH, maxp=MAXP, wq=WQ, limit=BOTTLENECK.buffer)
    return {"red": Red(**common), "ecn": RedEcn(**common),
            "aecn": Aecn(**common, rtt_source="measured_or_table", groups=GROUP_RULES)}[name]


def group_flows(group: str, n: int) -> list[Flow]:
    """n flows of one group as iperf3 processes of at most STREAMS streams, started so that
    every group's transfers begin together: iperf3 connects its streams one after the
    other (one RTT each) before any sends, and a SYN is Not-ECT, dropped by a congested
    ECN queue, so a group that connects late is locked out by the handshake, not by the
    AQM (seed 002's ns-2 senders have no handshake)."""
    k = SENDER_GROUPS.index(group)
    chunks = [STREAMS] * (n // STREAMS) + ([n % STREAMS] if n % STREAMS else [])
    rtt = TOPOLOGY.expected_rtt(k, 0)
    return [Flow(k, 0, start=SETUP - CONNECT_RTTS * size * rtt + 0.05 * c, window=WINDOW,
                 group=group, streams=size) for c, size in enumerate(chunks)]


def sweep_run(name: str, flows: int) -> RunSpec:
    per = flows // len(GROUPS)
    return RunSpec("e5", f"{name}-{flows}f", replace(TOPOLOGY, ecn=name != "red"), aqm(name),
                   duration=DURATION, measure_from=MEASURE_FROM,
                   flows=tuple(f for g in GROUPS for f in group_flows(g, per)))


def rtt_run(group: str) -> RunSpec:
    """One group alone, AECN with only the measured RTT."""
    return RunSpec("e5", f"rtt-{group}", replace(TOPOLOGY, ecn=True),
                   Aecn(minth=MINTH, maxth=MAXTH, maxp=MAXP, wq=WQ, limit=BOTTLENECK.buffer,
                        rtt_source="measured"),
                   duration=RTT_RUN_DURATION, measure_from=MEASURE_FROM,
                   flows=(Flow(SENDER_GROUPS.index(group), 0, window=WINDOW, group=group,
                               streams=RTT_RUN_FLOWS),))


def plan(opts: PlanOptions) -> list[RunSpec]:
    flows = FLOWS if opts.full else SUBSET_FLOWS
    return ([rtt_run(g) for g in GROUPS]
            + [sweep_run(name, n) for n in flows for name in ALGORITHMS])


# ----- report ----------------------------------------------------------------------------

def _nan(value) -> float:
    if isinstance(value, stats.Estimate):
        return value
    return math.nan if value is None else float(value)


def _per(value: float, n: int) -> float:
    return value.scaled(1 / n) if isinstance(value, stats.Estimate) else value / n


def _groups(folder: Path) -> dict:
    path = folder / "groups.json"
    return json.loads(path.read_text()) if path.exists() else {}


def rtt_accuracy(folder: Path, group: str) -> dict:
    """The RTTs the switch measured for one group's packets (telemetry) against ping's
    minimum plus the queueing delay the packets saw, and the share classified right."""
    pings = [r["min_ms"] for r in json.loads((folder / "rtt.json").read_text())
             if r["from"] == f"h{SENDER_GROUPS.index(group) + 1}"] \
        if (folder / "rtt.json").exists() else []
    ping = min(pings, default=math.nan)
    with open(folder / "telemetry.csv") as f:
        rows = [r for r in csv.DictReader(f) if float(r["t"]) >= MEASURE_FROM]
    measured = [float(r["rtt_ms"]) for r in rows if float(r["rtt_ms"]) > 0]
    if not measured:
        return {"group": group, "ping_ms": ping, "records": len(rows)}
    sojourn = statistics.median(float(r["sojourn_ms"]) for r in rows)
    median = statistics.median(measured)
    return {"group": group, "ping_ms": ping, "queueing_ms": sojourn,
            "measured_median_ms": median,
            "measured_p5_ms": sorted(measured)[len(measured) // 20],
            "error_ms": median - (ping + sojourn),
            "measured_share": len(measured) / len(rows),
            "right_group": sum(1 for r in rows if float(r["rtt_ms"]) > 0
                               and GROUPS[2 - int(r["group"])] == group) / len(measured)}


def _point(label: str) -> tuple[str, int]:
    name, flows = label.split("-")
    return name, int(flows[:-1])


def _row(label: str, folder: Path, m: dict) -> Row:
    name, flows = _point(label)
    row = {"run": label, "algorithm": name.upper(), "flows": flows,
           "goodput Mb/s": fmt(_nan(m.get("goodput_mbps"))),
           "Jain": fmt(_nan(m.get("jain")), 3), "lockout": m.get("lockout", "-"),
           # Each repeat's count, and of it the streams of iperf3 processes whose test
           # never started (results.py: held back).
           "lockout (held back) per repeat": " / ".join(
               f"{r.get('lockout', '-')} ({r.get('held_back', '-')})"
               for r in m.get("repeats", [m]))}
    per_group = m.get("group_goodput_mbps", {})
    for g in GROUPS:
        row[f"{g} Mb/s/flow"] = fmt(per_group.get(g, {}).get("mean", math.nan), 3)
    retransmits = m.get("group_retransmits", {})
    for g in GROUPS:
        row[f"{g} retx/flow"] = fmt(retransmits.get(g, {}).get("mean", math.nan), 1)
    # Over the measured window, BMv2's tail drops included: comparable across algorithms.
    row["marks/flow"] = fmt(_per(_nan(m.get("marks")), flows), 1)
    row["drops/flow"] = fmt(_per(_nan(m.get("dropped")), flows), 1)
    per = flows / len(GROUPS)
    # AECN's own counters by group (robust 0, average 1, fragile 2): the whole run, and
    # only the drops egress decides (not BMv2's tail drops); the mean over the repeats.
    for key, name in (("group_marks", "AECN marks/flow F/A/R"),
                      ("group_drops", "AECN egress drops/flow F/A/R")):
        counts = [stats.over_folders(m, lambda f: _groups(f).get(key, [math.nan] * 3)[2 - k])
                  for k in range(3)] if _groups(folder) else []
        row[name] = "/".join(f"{c.scaled(1 / per):.1f}" for c in counts) if counts else "-"
    row.update(queue_columns(m))
    row["switch kept rate"] = fmt(_nan(m.get("service_ratio")))
    return row


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    sweep = [(label, folder, m) for label, folder, m in runs if not label.startswith("rtt-")]
    rows = [_row(label, folder, m) for label, folder, m in sweep]
    # Every repeat's accuracy in the table; the first repeat's in the figure.
    accuracies = {folder: rtt_accuracy(folder, label[4:]) for label, _, m in runs
                  if label.startswith("rtt-") for folder in m["folders"]}
    for folder, acc in accuracies.items():
        rows.append({"run": folder.name, "algorithm": "AECN (measured RTT)",
                     "flows": RTT_RUN_FLOWS,
                     **{k: fmt(v) if isinstance(v, float) else v for k, v in acc.items()}})
    figures = []
    titles = {"goodput_mbps": "aggregate goodput (Mb/s)", "jain": "Jain's fairness index",
              "lockout": "flows locked out", "dropped": "packets dropped"}
    for key, title in titles.items():
        figures += line_figure("number of flows",
                               curves(sweep, lambda label, m: _point(label)[1],
                                      lambda label, m: _nan(m.get(key))),
                               title, out / f"e5-{key}-vs-flows.png",
                               f"E5: {title} vs flows (seed 002 chs. 4-5)")
    for n in sorted({_point(label)[1] for label, _, _ in sweep}):
        series = {_point(label)[0].upper(): [m.get("group_goodput_mbps", {}).get(g, {}).get(
            "mean", math.nan) for g in GROUPS] for label, _, m in sweep if _point(label)[1] == n}
        figures.append(plots.grouped_bars(GROUPS, series, "goodput per flow (Mb/s)",
                                          out / f"e5-groups-{n}f.png",
                                          f"E5: goodput per flow by group, {n} flows"))
    accuracy = [accuracies[folder] for label, folder, _ in runs if label.startswith("rtt-")]
    if accuracy and all("measured_median_ms" in a for a in accuracy):
        figures.append(plots.grouped_bars(
            [a["group"] for a in accuracy],
            {"ping + queueing": [a["ping_ms"] + a["queueing_ms"] for a in accuracy],
             "switch (median)": [a["measured_median_ms"] for a in accuracy]},
            "RTT (ms)", out / "e5-rtt-accuracy.png",
            "E5: RTT measured by the switch against ping"))
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    """Each claim beside the runs, flow count by flow count: it holds where the two
    algorithms' 95 % intervals separate in the seed's direction, at every count."""
    by_n: dict[int, dict[str, dict]] = {}
    for label, _, m in runs:
        if not label.startswith("rtt-"):
            name, n = _point(label)
            by_n.setdefault(n, {})[name] = m
    points = {f"{n}f": by_n[n] for n in sorted(by_n) if len(by_n[n]) == len(ALGORITHMS)}

    def fragile_share(m):
        groups = m.get("group_goodput_mbps", {})
        total = sum(groups.get(g, {}).get("mean", 0.0) for g in GROUPS)
        return 100 * groups.get("fragile", {}).get("mean", math.nan) / total if total else math.nan

    parts = [stats.versus(points, "ecn", "red", stats.metric("goodput_mbps"), larger=True),
             stats.versus(points, "aecn", "ecn", stats.metric("jain"), larger=True),
             stats.versus(points, "aecn", "ecn", stats.metric("dropped"), larger=False,
                          digits=".0f"),
             stats.versus(points, "aecn", "ecn", stats.metric("lockout"), larger=False,
                          digits=".0f"),
             stats.versus(points, "aecn", "ecn", fragile_share, larger=True, digits=".1f")]
    return [stats.claim_row(claim, part) for claim, part in zip(CLAIMS, parts)]


EXPERIMENT = Experiment(
    "E5 (seed 002): RED vs ECN vs AECN with heterogeneous RTTs",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts,
    source=("seed002", "seed 002 (thesis, ns-2)"))
