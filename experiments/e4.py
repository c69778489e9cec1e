"""E4 (seed 001 Figs. 11-12, seed 003 Fig. 10): a parking lot of three congested links,
ARED against AMECN on every one."""

from __future__ import annotations

from pathlib import Path

from analysis import stats
from experiments.base import (SEED_001_SENDERS, Experiment, PlanOptions, Row, Runs,
                              ared_and_amecn, basic_row, by_point, curves, fmt, line_figure,
                              resized)
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, ParkingLotSpec

TARGETS = (0.020, 0.040, 0.080)
# The paper's 10 Mb/s of 1000 B per link is 1 250 packets/s: 15 Mb/s of 1500 B.
MBPS, LONG, CROSS, DURATION, MEASURE_FROM = 15, 20, 20, 100.0, 50.0

SCALING = ("the paper's scale: 3 congested links of 1 250 packets/s (the paper's 10 Mb/s "
           f"of 1000 B; here {MBPS} Mb/s of 1500 B), 2 ms each, one BMv2 per link; "
           f"{LONG} long flows across all three, {CROSS} cross flows per link; "
           "access 10 ms (the paper does not say); automatic thresholds from target "
           f"delays 20/40/80 ms on every link; {DURATION:g} s runs measured over the "
           "last 50 s; on 2 cores the three switches keep their rate only with a BMv2 "
           "built without logging macros (P4AQM_BMV2; `switch kept rate` 0.69 - 0.95 in "
           "single runs with the default build); " + SEED_001_SENDERS)

PAPER_SCALING = ("the paper's: 3 congested links of 10 Mb/s of 1000-byte packets (1 250 "
                 f"packets/s), 2 ms each; {LONG} long flows across all three, {CROSS} cross "
                 "flows per link; access 10 ms (the paper does not say); automatic "
                 "thresholds from target delays 20/40/80 ms on every link; 100 s runs "
                 "measured over the last 50 s; " + SEED_001_SENDERS)

CLAIMS = ["AMECN on all routers gives a higher overall throughput than ARED at the same "
          "summed queueing delay"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    link = Bottleneck(mbps=MBPS, delay=0.002, buffer=300)
    topo = ParkingLotSpec(links=(link,) * 3, long_senders=(Access(20, 0.010),) * 2,
                          cross_access=Access(20, 0.010), receiver_access=Access(20, 0.0),
                          ecn=True)
    n_long = len(topo.long_senders)

    def flows(tcp: str) -> tuple[Flow, ...]:
        """The paper's 20 long flows across the three links and 20 cross flows per link,
        starts spread over the first 4 s."""
        long = tuple(Flow(k % n_long, k % n_long, start=0.05 * k, group="long", transport=tcp)
                     for k in range(LONG))
        return long + tuple(Flow(n_long + link_k, n_long + link_k, group=f"cross{link_k + 1}",
                                 start=0.05 * (LONG + CROSS * link_k + c), transport=tcp)
                            for link_k in range(3) for c in range(CROSS))
    runs = []
    for target in TARGETS:
        for label, aqm, loop, tcp in ared_and_amecn(target, link.pps, link.buffer, opts):
            runs.append(RunSpec("e4", f"{label}-{int(target * 1000)}ms", topo, aqm,
                                duration=DURATION, flows=flows(tcp), loop=loop,
                                measure_from=MEASURE_FROM))
    return runs


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        row = basic_row(label, m)
        row["target ms"] = label.split("-")[1]
        for name, link in m.get("links", {}).items():
            row[f"{name} delay ms"] = fmt(link.get("queueing_delay_ms"), 1)
        groups = m.get("group_goodput_mbps", {})
        row["long Mb/s (mean)"] = fmt(groups.get("long", {}).get("mean"))
        rows.append(row)
    figures = line_figure("summed queueing delay over the 3 links (ms)",
                          curves(runs, "queueing_delay_ms", "goodput_mbps"),
                          "total goodput (Mb/s)", out / "e4-throughput-vs-delay.png",
                          "E4: parking lot, ARED vs AMECN (seed 001 Fig. 12)")
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs)
    goodput, delay = stats.metric("goodput_mbps"), stats.metric("queueing_delay_ms")
    return [stats.claim_row(CLAIMS[0] + " (Mb/s; ARED's throughput-delay curve read at "
                            "AMECN's summed delay in ms, seed by seed)",
                            stats.versus_curve(points, "amecn", "ared", delay, goodput, True)),
            stats.claim_row("the same at the same target delay (the delays differ)",
                            stats.versus(points, "amecn", "ared", goodput, True))]


EXPERIMENT = Experiment(
    "E4 (seed 001 Figs. 11-12): parking lot, ARED vs AMECN on every link",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts,
    paper_scale=lambda spec: resized(spec, 1000), paper_scaling=PAPER_SCALING,
    source=("durresi2007", "Durresi, Sridharan, Jain 2007"))
