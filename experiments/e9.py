"""E9 (beyond the seeds): classic and scalable (L4S) flows sharing one bottleneck.

One dumbbell, a 10 Mb/s bottleneck of 1500-byte packets (833 packets/s), 20 ms base RTT, a
200-packet buffer. A classic flows (Linux Reno with ECN, ECT(0): one iperf3 from the first
sender, a stream each) against B scalable flows (the userspace transport's scalable
sender, ECT(1), transport/scalable.py: one process each from the second sender), for (A, B)
in (1, 1), (1, 4), (4, 1), (4, 4), under DualPI2 (BMv2 with two priority queues), PI2 in one
queue, PIE and RED+ECN. Per run: the rate balance (a scalable flow's mean throughput over a
classic flow's), each class's queueing delay (the sampled sojourn times of its packets,
told by their codepoint on arrival), utilisation, and the marks per class (the scalable
receivers count the CE marks their packets carried; the classic flows' are the rest of the
switch's). The claims are RFC 9332's, and the contrast without a dual queue.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from analysis import plots, stats
from analysis.metrics import percentile
from analysis.results import read_csv
from control_plane.adaptation import auto_thresholds
from control_plane.algorithms.dualpi2 import auto_step_thresh
from control_plane.aqm import Aqm, DualPi2, Pi2, Pie, RedEcn
from experiments.base import Experiment, PlanOptions, Row, Runs, by_point, fmt
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

BOTTLENECK = Bottleneck(mbps=10, delay=0.005, buffer=200, packet_bytes=1500)
ACCESS, RECEIVER = Access(100, 0.005), Access(100, 0.0)    # RTT 2 (5 + 5) ms
MIXES = ((1, 1), (1, 4), (4, 1), (4, 4))                    # (classic, scalable) flows
ALGORITHMS = ("dualpi2", "pi2", "pie", "red_ecn")
CLASSIC, SCALABLE = 0, 1        # the senders (and receivers) of each class
MEASURE_FROM, DURATION = 15.0, 60.0
# Every packet's sojourn would be 833 records a second; one every 2 ms is enough for a
# class's 99th percentile over 45 s.
TELEMETRY_INTERVAL = 0.002
PI2_TARGET_MS = 15.0
STEP_MS = 1000 * auto_step_thresh(BOTTLENECK.pps)
BALANCED = (0.5, 2.0)           # "near 1": within a factor of 2

SCALING = ("10 Mb/s bottleneck of 1500-byte packets (833 packets/s), 5 ms, 100 Mb/s 5 ms "
           "access (20 ms base RTT), a 200-packet buffer (240 ms at C; RFC 9332's limit is "
           "250 ms; DualPI2's two queues hold 200 each); A classic flows (Linux Reno with ECN: "
           "streams of one iperf3) against B scalable ones (the userspace scalable sender, "
           "ECT(1), each its own process) for (A, B) in (1, 1), (1, 4), (4, 1), (4, 4); 60 s "
           "runs measured from 15 s; DualPI2 on two priority queues (the L queue's "
           "departures charged to the classic queue, "
           "the L queue at the port's rate), PI2 in one queue, PIE and RED+ECN (automatic "
           "thresholds for a 15 ms target, maxp 0.1), each in ECN mode with its defaults "
           "(PI2: Linux sch_dualpi2's, k = 2); DualPI2's step at 2.4 ms, two service times "
           "(RFC 9332's 1 ms is less than one 1500-byte packet at 10 Mb/s); telemetry every "
           "2 ms")

CLAIMS = [
    "with k = 2, DualPI2 gives scalable and classic flows about the same rate (RFC 9332 "
    "2.1; here: the rate balance, a scalable flow's throughput over a classic flow's, "
    "within [0.5, 2])",
    "DualPI2 keeps the L4S queue's delay around its step threshold at the 99th percentile "
    "while the classic queue's stays near the PI2 target (RFC 9332; here: L4S p99 at most "
    "2x the 2.4 ms step, classic p50 at most 2x the 15 ms target)",
    "without the coupling of a dual queue the two kinds of flow do not share: the "
    "scalable flows starve the classic ones or the reverse (here: the rate balance outside "
    "[0.5, 2] under PIE and RED+ECN)",
    "in one queue the L4S packets wait as long as the classic ones (PI2 in one queue: L4S "
    "p99 above 2x the step threshold)",
]


def aqm(name: str) -> Aqm:
    """Each algorithm with its defaults for this buffer, in ECN mode."""
    limit = BOTTLENECK.buffer
    auto = auto_thresholds(PI2_TARGET_MS / 1000, BOTTLENECK.pps)
    return {"dualpi2": DualPi2(limit=limit), "pi2": Pi2(limit=limit), "pie": Pie(limit=limit),
            "red_ecn": RedEcn(minth=auto.minth, maxth=auto.maxth, maxp=0.1, wq=auto.wq,
                              limit=limit)}[name]


def flows(classic: int, scalable: int) -> tuple[Flow, ...]:
    """The classic flows as streams of one iperf3, the scalable ones a process each, their
    starts staggered by 0.2 s."""
    return ((Flow(CLASSIC, CLASSIC, streams=classic),)
            + tuple(Flow(SCALABLE, SCALABLE, start=0.2 * (k + 1), transport="scalable")
                    for k in range(scalable)))


def plan(opts: PlanOptions) -> list[RunSpec]:
    topology = DumbbellSpec(senders=(ACCESS, ACCESS), receivers=(RECEIVER, RECEIVER),
                            bottleneck=BOTTLENECK, ecn=True, congestion_control="reno")
    return [RunSpec("e9", f"{name}-{a}c{b}s", topology, aqm(name), duration=DURATION,
                    flows=flows(a, b), measure_from=MEASURE_FROM,
                    telemetry_interval=TELEMETRY_INTERVAL)
            for a, b in MIXES for name in ALGORITHMS]


# ----- one run's quantities, from its folder -----------------------------------------------

def window_rate(doc: dict, start: float) -> float:
    """Mb/s one sender sent in the measured window: the intervals of its output (iperf3's,
    or the userspace transport's in the same shape; times from the flow's start), each
    counted for its overlap with the window, over the time they cover there. A sender
    whose output stops over 2 s before the end stopped sending: the rest counts as 0."""
    sent = covered = 0.0
    last = start
    for iv in (i["sum"] for i in doc.get("intervals", [])):
        begin, end = start + iv["start"], start + iv["end"]
        overlap = min(end, DURATION) - max(begin, MEASURE_FROM)
        if overlap > 0 and end > begin:
            sent += iv["bytes"] * overlap / (end - begin)
            covered += overlap
        last = max(last, end)
    if last < DURATION - 2.0:
        covered = DURATION - MEASURE_FROM
    return sent * 8 / 1e6 / covered if covered else 0.0


def class_rates(folder: Path) -> dict[str, float]:
    """Mean throughput per flow of each class over the measured window (Mb/s): a stream
    that never connected counts as 0 (locked out); a sender without output leaves its
    class unknown. And the balance, scalable over classic."""
    flows = json.loads((folder / "config.json").read_text())["flows"]
    rates = {"kernel": 0.0, "scalable": 0.0}
    streams = {"kernel": 0, "scalable": 0}
    for k, flow in enumerate(flows):
        kind = flow.get("transport", "kernel")
        try:
            doc = json.loads((folder / "flows" / f"flow{k:03d}.json").read_text())
        except (OSError, ValueError):
            rates[kind] = math.nan
            continue
        rates[kind] += window_rate(doc, flow["start"])    # the sum of its streams'
        streams[kind] += flow.get("streams", 1)
    mean = {kind: rates[kind] / streams[kind] if streams[kind] else math.nan for kind in rates}
    out = {"classic_mbps": mean["kernel"], "scalable_mbps": mean["scalable"]}
    out["balance"] = (out["scalable_mbps"] / out["classic_mbps"]
                      if out["classic_mbps"] > 0 else math.nan)
    return out


def class_delays(folder: Path, start: float = MEASURE_FROM, end: float = DURATION
                 ) -> dict[int, list[float]]:
    """Sampled sojourns (ms) of each class in the measured window: ECT(1) and CE on arrival
    are L4S (RFC 9331), the rest classic."""
    out: dict[int, list[float]] = {CLASSIC: [], SCALABLE: []}
    for r in read_csv(folder / "telemetry.csv"):
        if start <= r["t"] < end and not math.isnan(r.get("ecn", math.nan)):
            out[int(r["ecn"]) & 1].append(r["sojourn_ms"])
    return {k: sorted(v) for k, v in out.items()}


def delay(klass: int, q: float):
    """One run's q-th percentile of a class's delay (ms)."""
    def of(folder: Path) -> float:
        samples = class_delays(folder)[klass]
        return percentile(samples, q) if samples else math.nan
    return of


def class_marks(folder: Path) -> dict[str, float]:
    """CE marks per class over the run: the switch's own count per class where the AQM
    keeps one (PI2, DualPI2: groups.json); otherwise the scalable receivers count those on
    their packets (flows/flowNNN-receiver.json, every one needed) and the classic flows'
    are the rest of the switch's (counters.csv)."""
    groups = folder / "groups.json"
    if groups.is_file():
        counted = json.loads(groups.read_text())
        if counted.get("names") == ["classic", "l4s"]:
            return {"classic": float(counted["group_marks"][0]),
                    "l4s": float(counted["group_marks"][1])}
    flows = json.loads((folder / "config.json").read_text())["flows"]
    unknown = {"classic": math.nan, "l4s": math.nan}
    l4s = 0
    for k, flow in enumerate(flows):
        if flow.get("transport") == "scalable":
            try:
                l4s += json.loads((folder / "flows" / f"flow{k:03d}-receiver.json")
                                  .read_text())["ce_packets"]
            except (OSError, ValueError, KeyError):
                return unknown
    counters = read_csv(folder / "counters.csv")
    if not counters:
        return unknown
    return {"classic": counters[-1]["marks_ce"] - l4s, "l4s": float(l4s)}


def rate(key: str):
    return lambda folder: class_rates(folder)[key]


def marks(key: str):
    return lambda folder: class_marks(folder)[key]


# ----- report ------------------------------------------------------------------------------

def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        rows.append({"run": label,
                     "balance": fmt(stats.over_folders(m, rate("balance"))),
                     "classic Mb/s": fmt(stats.over_folders(m, rate("classic_mbps"))),
                     "scalable Mb/s": fmt(stats.over_folders(m, rate("scalable_mbps"))),
                     "classic p50 ms": fmt(stats.over_folders(m, delay(CLASSIC, 50)), 1),
                     "classic p99 ms": fmt(stats.over_folders(m, delay(CLASSIC, 99)), 1),
                     "L4S p50 ms": fmt(stats.over_folders(m, delay(SCALABLE, 50)), 1),
                     "L4S p99 ms": fmt(stats.over_folders(m, delay(SCALABLE, 99)), 1),
                     "utilisation": fmt(m.get("utilisation")),
                     "classic marks": fmt(stats.over_folders(m, marks("classic")), 0),
                     "L4S marks": fmt(stats.over_folders(m, marks("l4s")), 0),
                     "switch kept rate": fmt(m.get("service_ratio"))})
    return rows, figures(runs, out)


def figures(runs: Runs, out: Path) -> list[Path]:
    """The rate balance of every configuration, and each class's delay distribution per
    mix of flows."""
    drawn = []
    points = by_point(runs)
    balances = {name: [stats.over_folders(points[p][name], rate("balance"))
                       if name in points[p] else math.nan for p in points]
                for name in ALGORITHMS if any(name in ms for ms in points.values())}
    if any(math.isfinite(b) for values in balances.values() for b in values):
        drawn.append(plots.grouped_bars(list(points), balances,
                                        "rate balance (scalable / classic per flow)",
                                        out / "e9-rate-balance.png",
                                        "E9: a scalable flow's throughput over a classic "
                                        "flow's, per mix of classic (c) and scalable (s) "
                                        "flows (1: equal rates)"))
    for point, entries in points.items():
        cdfs = {}
        for algorithm, m in entries.items():
            for klass, name in ((CLASSIC, "classic"), (SCALABLE, "L4S")):
                samples = sorted(v for f in m.get("folders", [])
                                 for v in class_delays(f)[klass])
                if samples:
                    step = max(1, len(samples) // 400)    # the shape, not every sample
                    cdfs[f"{algorithm.upper()} {name}"] = (
                        [max(v, 0.01) for v in samples[::step]],
                        [(i + 1) / len(samples) for i in range(0, len(samples), step)])
        if cdfs:
            drawn.append(plots.lines("queueing delay (ms, log scale)", cdfs,
                                     "fraction of packets", out / f"e9-delay-cdf-{point}.png",
                                     f"E9: each class's queueing delay, {point}", marker="",
                                     x_log=True))
    return drawn


# ----- claims ------------------------------------------------------------------------------

def balanced(value: stats.Estimate) -> str:
    """HOLDS when the balance's interval lies inside BALANCED, DIFFERS when outside it."""
    verdicts = [stats.compare(value, BALANCED[0], True), stats.compare(value, BALANCED[1], False)]
    if stats.DIFFERS in verdicts:
        return stats.DIFFERS
    return stats.overall(verdicts)


def unbalanced(value: stats.Estimate) -> str:
    """The reverse: HOLDS when the interval lies above 2 or below 0.5, DIFFERS when inside."""
    if stats.HOLDS in (stats.compare(value, BALANCED[1], True),
                       stats.compare(value, BALANCED[0], False)):
        return stats.HOLDS
    return stats.DIFFERS if balanced(value) == stats.HOLDS else stats.UNCLEAR


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs)
    rows = []
    balance = rate("balance")
    parts = [(f"{where}: {b:.2f}", balanced(b)) for where, ms in points.items()
             if "dualpi2" in ms for b in [stats.over_folders(ms["dualpi2"], balance)]]
    rows.append(stats.claim_row(CLAIMS[0], parts))
    parts = []
    for where, ms in points.items():
        if "dualpi2" in ms:
            l_p99 = stats.over_folders(ms["dualpi2"], delay(SCALABLE, 99))
            c_p50 = stats.over_folders(ms["dualpi2"], delay(CLASSIC, 50))
            parts.append((f"{where}: L4S p99 {l_p99:.1f} ms, classic p50 {c_p50:.1f} ms",
                          stats.overall([stats.compare(l_p99, 2 * STEP_MS, False),
                                         stats.compare(c_p50, 2 * PI2_TARGET_MS, False)])))
    rows.append(stats.claim_row(CLAIMS[1], parts))
    parts = [(f"{where} {name}: {b:.2f}", unbalanced(b)) for where, ms in points.items()
             for name in ("pie", "red_ecn") if name in ms
             for b in [stats.over_folders(ms[name], balance)]]
    rows.append(stats.claim_row(CLAIMS[2], parts))
    parts = [(f"{where}: L4S p99 {p99:.1f} ms", stats.compare(p99, 2 * STEP_MS, True))
             for where, ms in points.items() if "pi2" in ms
             for p99 in [stats.over_folders(ms["pi2"], delay(SCALABLE, 99))]]
    rows.append(stats.claim_row(CLAIMS[3], parts))
    return rows


EXPERIMENT = Experiment("E9 (beyond the seeds): classic and scalable flows sharing one "
                        "bottleneck, DualPI2 against one queue", SCALING, plan, report,
                        claims=CLAIMS, verdicts=verdicts, source=("rfc9332", "RFC 9332"))
