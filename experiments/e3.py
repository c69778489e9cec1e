"""E3 (seed 001, Figs. 9-10): ARED against AMECN over target delays, at the paper's scale."""

from __future__ import annotations

from pathlib import Path

from analysis import stats
from experiments.base import (SEED_001_SENDERS, Experiment, PlanOptions, Row, Runs,
                              ared_and_amecn, basic_row, by_point, curves, line_figure,
                              percent, resized)
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

TARGETS = (0.020, 0.040, 0.080, 0.120)
# The paper's 7 Mb/s of 1000-byte packets is 875 packets/s: 10.5 Mb/s of our 1500 B (BMv2
# prices its queue in packets, and thresholds and windows count packets).
MBPS, FLOWS, DURATION, MEASURE_FROM = 10.5, 100, 100.0, 50.0

SCALING = (f"the paper's scale: {FLOWS} Reno flows with RTT 100-148 ms (starts spread "
           f"over 5 s), 875 packets/s (the paper's 7 Mb/s of 1000 B; here {MBPS:g} "
           "Mb/s of 1500 B), buffer 300, automatic thresholds from target delays "
           f"20/40/80/120 ms, {DURATION:g} s runs measured over the second half; "
           "without the paper's web and reverse traffic; " + SEED_001_SENDERS)

PAPER_SCALING = (f"the paper's: {FLOWS} Reno flows with RTT 100-148 ms (starts spread over "
                 "5 s), 7 Mb/s of 1000-byte packets (875 packets/s), buffer 300, automatic "
                 "thresholds from target delays 20/40/80/120 ms, 100 s runs measured over "
                 "the second half; its web and reverse traffic, which it does not quantify, "
                 "left out as on the testbed; " + SEED_001_SENDERS)

CLAIMS = ["AMECN reaches higher utilisation than ARED at the same delay",
          "both keep the measured delay near the target (here: within 0.5x to 1.5x "
          "of it)"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    delays = (0.040, 0.048, 0.056, 0.064)   # one-way access: RTT 100 to 148 ms
    bn = Bottleneck(mbps=MBPS, delay=0.010, buffer=300)
    topo = DumbbellSpec(senders=tuple(Access(20, d) for d in delays),
                        receivers=(Access(20, 0.0),) * 4, bottleneck=bn, ecn=True)
    runs = []
    for target in TARGETS:
        for label, aqm, loop, tcp in ared_and_amecn(target, bn.pps, bn.buffer, opts):
            # Starts spread over the first 5 s: 100 slow starts at once would synchronise.
            flows = tuple(Flow(k % 4, k % 4, start=0.05 * k, transport=tcp)
                          for k in range(FLOWS))
            runs.append(RunSpec("e3", f"{label}-{int(target * 1000)}ms", topo, aqm,
                                duration=DURATION, flows=flows, loop=loop,
                                measure_from=MEASURE_FROM))
    return runs


def target_ms(point: str) -> float:
    """The target delay of a point of the plan ("40ms"), in ms."""
    return float(point.rstrip("ms"))


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = [{**basic_row(label, m), "target ms": label.split("-")[1]} for label, _, m in runs]
    measured = curves(runs, lambda label, m: target_ms(label.split("-")[1]), "queueing_delay_ms")
    measured["target"] = ([t * 1000 for t in TARGETS], [t * 1000 for t in TARGETS])
    figures = (line_figure("average queueing delay (ms)",
                           curves(runs, "queueing_delay_ms", "utilisation"), "link utilisation",
                           out / "e3-utilisation-vs-delay.png",
                           "E3: ARED vs AMECN (seed 001 Fig. 9)")
               + line_figure("target delay (ms)", measured, "measured queueing delay (ms)",
                             out / "e3-measured-vs-target.png",
                             "E3: measured vs target delay (seed 001 Fig. 10)"))
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs)
    delay = stats.metric("queueing_delay_ms")
    near = stats.bound(points, delay, lambda point: 0.5 * target_ms(point), True, ".1f")
    under = stats.bound(points, delay, lambda point: 1.5 * target_ms(point), False, ".1f")
    return [stats.claim_row(CLAIMS[0], stats.versus(points, "amecn", "ared",
                                                    percent("utilisation"), True, ".1f")),
            stats.claim_row(CLAIMS[1], [(text, stats.overall([a, b])) for (text, a), (_, b)
                                        in zip(near, under)])]


EXPERIMENT = Experiment(
    "E3 (seed 001 Figs. 9-10): ARED vs AMECN over target delays",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts,
    paper_scale=lambda spec: resized(spec, 1000), paper_scaling=PAPER_SCALING,
    source=("durresi2007", "Durresi, Sridharan, Jain 2007"))
