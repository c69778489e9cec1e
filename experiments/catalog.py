"""The demo and the seed papers' experiments (SPEC E1-E7), scaled to what one BMv2 on a
laptop carries. Each states its scaling and lays its figures next to the paper's claims.
"""

from __future__ import annotations

import fnmatch
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from analysis import plots, stats
from control_plane.aqm import DropTail, Mecn, Red, RedEcn
from control_plane.adaptation import auto_thresholds, ared_band
from control_plane.controller import LoopSpec
from experiments import e5, e6, factors
from experiments.spec import Flow, RunSpec, Transfers
from topologies.dumbbell import DumbbellSpec
from topologies.nodes import Access, Bottleneck
from topologies.parking_lot import ParkingLotSpec

Row = dict[str, object]
# Runs per configuration for the claim tables: the fewest that give a t interval of useful
# width (t = 4.30 at n = 3; a single run has no interval and decides no claim).
REPEAT = 3


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    scaling: str
    plan: Callable[["PlanOptions"], list[RunSpec]]
    # (label, run folder, metrics) of every run -> table rows and figures
    report: Callable[[list[tuple[str, Path, dict]], Path], tuple[list[Row], list[Path]]]
    claims: list[str] = field(default_factory=list)
    # (label, run folder, metrics) of every run -> each claim beside our result, verdict
    verdicts: Callable[[list[tuple[str, Path, dict]]], list[Row]] | None = None
    repeat: int = REPEAT        # runs per configuration unless `--repeat` says otherwise

    def runs(self, opts: "PlanOptions") -> list[RunSpec]:
        """The plan, each configuration repeated with seeds 1..N, repeats of a configuration
        together."""
        n = opts.repeat or self.repeat
        return [factors.apply(spec, opts.factors).repeat(seed)
                for spec in self.plan(opts) for seed in range(1, n + 1)
                if opts.only is None or fnmatch.fnmatchcase(spec.label, opts.only)]


@dataclass(frozen=True)
class PlanOptions:
    loss: float = 0.0           # E7: random loss on the clients' access links
    # Seed 001's runs: userspace MECN senders (transport/) for MECN/AMECN and RFC 3168
    # ones for ARED, or Linux's kernel TCP for all.
    kernel_tcp: bool = False
    full: bool = False          # E6: the paper's whole sweep instead of the default subset
    repeat: int | None = None   # runs per configuration; None: the experiment's default
    only: str | None = None     # run only the configurations whose label matches (fnmatch)
    # (name, value) pairs of experiments/factors.py, applied to every run
    factors: tuple[tuple[str, str], ...] = ()

    def transport(self, response: str) -> str:
        return "kernel" if self.kernel_tcp else response

    def flags(self) -> list[str]:
        """The command-line arguments that rebuild these options (resume, sweep workers)."""
        return ((["--loss", repr(self.loss)] if self.loss else [])
                + (["--kernel-tcp"] if self.kernel_tcp else [])
                + (["--full"] if self.full else [])
                + (["--repeat", str(self.repeat)] if self.repeat else [])
                + (["--only", self.only] if self.only else [])
                + [arg for name, value in self.factors for arg in ("--factor", f"{name}={value}")])


def _fmt(value, digits=2):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return value


def _basic_row(label: str, m: dict) -> Row:
    return {"run": label, "goodput Mb/s": _fmt(m.get("goodput_mbps")),
            "utilisation": _fmt(m.get("utilisation")), "avg queue": _fmt(m.get("avg_queue")),
            "delay ms": _fmt(m.get("queueing_delay_ms"), 1), "loss %": _fmt(m.get("loss_percent")),
            "slots lost %": _fmt(m.get("slots_lost_percent"), 1),
            "marks": m.get("marks", "-"), "Jain": _fmt(m.get("jain"), 3),
            "senders": m.get("senders", "-"),
            # Below ~0.9 the machine set the pace: the row measures the testbed, not the AQM.
            "switch kept rate": _fmt(m.get("service_ratio"))}


def _queue_figure(runs, out: Path, name: str, title: str) -> Path:
    return plots.queue_over_time([(label, folder) for label, folder, _ in runs],
                                 out / f"{name}.png", title)


# ----- demo ------------------------------------------------------------------------------

DEMO_TOPO = DumbbellSpec(
    senders=(Access(20, 0.005),) * 3, receivers=(Access(20, 0.0),) * 3,
    bottleneck=Bottleneck(mbps=10, delay=0.010, buffer=60))


def plan_demo(opts: PlanOptions) -> list[RunSpec]:
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=60)
    mecn = dict(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.1, wq=0.002, limit=60)
    # One Reno implementation in every row, so the rows differ only in the queue and in
    # the response to marks: RFC 3168 for single-level ECN, seed 001's for MECN.
    reno, mecn_tcp = opts.transport("rfc3168"), opts.transport("mecn")
    runs = [("droptail", DropTail(limit=60), False, None, reno),
            ("red", Red(**red), False, None, reno),
            ("red_ecn", RedEcn(**red), True, None, reno),
            ("mecn", Mecn(**mecn), True, None, mecn_tcp),
            ("amecn", Mecn(**mecn), True, LoopSpec("amecn"), mecn_tcp)]
    return [RunSpec("demo", label, replace(DEMO_TOPO, ecn=ecn), aqm, duration=40,
                    flows=tuple(Flow(i, i, transport=transport) for i in range(3)),
                    loop=loop, measure_from=10) for label, aqm, ecn, loop, transport in runs]


def report_basic(name: str, title: str):
    def report(runs, out):
        rows = [_basic_row(label, m) for label, _, m in runs]
        figures = [_queue_figure(runs, out, f"{name}-queue", title)]
        figures.append(plots.bars(
            [label for label, _, _ in runs],
            {"goodput (Mb/s)": [m.get("goodput_mbps", math.nan) for _, _, m in runs],
             "average queue (pkts)": [m.get("avg_queue", math.nan) for _, _, m in runs],
             "loss (%)": [m.get("loss_percent", math.nan) for _, _, m in runs]},
            out / f"{name}-summary.png", title))
        return rows, figures
    return report


# ----- E1 (seed 000) ---------------------------------------------------------------------

E1_LINK_MBPS = 8
E1_CLAIMS = ["ECN drops fewer packets than RED and DropTail for every variant (paper, Reno: "
             "1920 drops with RED, 7920 with ECN in Table 2/3 -- the paper's tables "
             "contradict its text; we compare to the text)",
             "ECN's average queue is higher than RED's (RED drops more)",
             "throughput is about the same for all (~link rate)"]


def plan_e1(opts: PlanOptions) -> list[RunSpec]:
    topo = dict(senders=(Access(100, 0.001),) * 3, receivers=(Access(100, 0.001),) * 3,
                bottleneck=Bottleneck(mbps=E1_LINK_MBPS, delay=0.010, buffer=20))
    flows = tuple(Flow(i, i) for i in range(3))
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=20)
    runs = []
    for cc in ("reno", "cubic", "bbr"):
        for label, aqm, ecn in (("droptail", DropTail(limit=20), False),
                                ("red", Red(**red), False), ("red_ecn", RedEcn(**red), True)):
            runs.append(RunSpec("e1", f"{cc}-{label}",
                                DumbbellSpec(ecn=ecn, congestion_control=cc, **topo),
                                aqm, duration=30, flows=flows, measure_from=5))
    return runs


def report_e1(runs, out):
    rows = []
    for label, _, m in runs:
        received = stats.over(m, lambda r: r.get("arrived", 0) - r.get("dropped", 0))
        # Linux halves its window once per round trip with a loss or a mark alike: the
        # signals, not their kind, set the queue.
        signals = stats.over(m, lambda r: r.get("dropped", 0) + r.get("marks", 0))
        rows.append({"run": label, "received pkts": f"{received:.0f}",
                     "dropped": m.get("dropped", "-"), "marks": m.get("marks", "-"),
                     "drops + marks": f"{signals:.0f}", "avg queue": _fmt(m.get("avg_queue")),
                     "throughput Mb/s": _fmt(m.get("throughput_mbps")),
                     "goodput Mb/s": _fmt(m.get("goodput_mbps")),
                     "switch kept rate": _fmt(m.get("service_ratio"))})
    figures = [_queue_figure(runs, out, "e1-queue", "E1: queue, 3 flows, buffer 20"),
               plots.bars([label for label, _, _ in runs],
                          {"dropped packets": [m.get("dropped", 0) for _, _, m in runs],
                           "average queue": [m.get("avg_queue", math.nan) for _, _, m in runs],
                           "throughput (Mb/s)": [m.get("throughput_mbps", math.nan)
                                                 for _, _, m in runs]},
                          out / "e1-summary.png", "E1: RED vs RED+ECN (seed 000)")]
    return rows, figures


def _by_point(runs, split) -> dict[str, dict[str, dict]]:
    """{point: {algorithm: combined metrics}} from run labels; split(label) -> (point,
    algorithm)."""
    points: dict[str, dict[str, dict]] = {}
    for label, _, m in runs:
        point, algorithm = split(label)
        points.setdefault(point, {})[algorithm] = m
    return points


def _bound(points: dict[str, dict[str, dict]], value, limit, larger: bool,
           digits: str = ".2f", algorithms=None) -> list[tuple[str, str]]:
    """Every run's quantity against a fixed figure (the paper's, or a link rate)."""
    return [(f"{where} {name}: {stats.over(m, value):{digits}}",
             stats.compare(stats.over(m, value), limit(where) if callable(limit) else limit,
                           larger))
            for where, runs in points.items() for name, m in runs.items()
            if algorithms is None or name in algorithms]


def verdicts_e1(runs) -> list[Row]:
    points = _by_point(runs, lambda label: tuple(label.split("-", 1)))
    dropped = stats.metric("dropped")
    return [stats.claim_row(E1_CLAIMS[0],
                            stats.versus(points, "red_ecn", "red", dropped, False, ".0f")
                            + stats.versus(points, "red_ecn", "droptail", dropped, False, ".0f")),
            stats.claim_row(E1_CLAIMS[1], stats.versus(points, "red_ecn", "red",
                                                       stats.metric("avg_queue"), True)),
            stats.claim_row(E1_CLAIMS[2] + " (here: every run uses over 90 % of the link's "
                            "packet slots)",
                            _bound(points, _percent("utilisation"), 90.0, True, ".1f"))]


# ----- E2 (seed 001, Figs. 5-8) ----------------------------------------------------------

E2_MECN = dict(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.1, wq=0.0027, limit=40)


def plan_e2(opts: PlanOptions) -> list[RunSpec]:
    topo = DumbbellSpec(senders=(Access(10, 0.040),) * 2, receivers=(Access(10, 0.0),) * 2,
                        bottleneck=Bottleneck(mbps=2.25, delay=0.010, buffer=40), ecn=True)
    window = 25 * 1460         # 25 segments of the userspace sender (iperf3 -w is a socket buffer)
    tcp = opts.transport("mecn")
    # The paper's reverse flow is left out: its 40-byte ACKs cost a full service slot in
    # BMv2's packets/s queue (1/25 of one in ns-2), and its data direction is not the
    # bottleneck, so its ACK stream alone filled the forward queue and timed every flow out.
    base = (Flow(0, 0, transport=tcp), Flow(1, 1, transport=tcp))
    joining = tuple(Flow(k % 2, k % 2, start=25 + 0.1 * k, window=window, transport=tcp)
                    for k in range(20))
    leaving = tuple(Flow(k % 2, k % 2, start=0.1 * k, duration=25 - 0.1 * k, window=window,
                         transport=tcp) for k in range(20))
    runs = []
    for direction, extra in (("up", joining), ("down", leaving)):
        for label, loop in (("mecn", None), ("amecn", LoopSpec("amecn"))):
            runs.append(RunSpec("e2", f"{label}-{direction}", topo, Mecn(**E2_MECN),
                                duration=50, flows=base + extra, loop=loop, measure_from=5))
    return runs


def settle_time(folder: Path, step: float, low: float, high: float, hold: float = 5.0) -> float:
    """Seconds after `step` until the average enters [low, high] and stays `hold` s."""
    from analysis.results import read_csv
    rows = [r for r in read_csv(folder / "telemetry.csv") if r["t"] >= step]
    entered = None
    for r in rows:
        inside = low <= r["avg"] <= high
        if inside and entered is None:
            entered = r["t"]
        elif not inside:
            entered = None
        if entered is not None and r["t"] - entered >= hold:
            return entered - step
    return math.nan


E2_STEP, E2_SETTLE = 25.0, 15.0
E2_CLAIMS = ["AMECN brings the average back into the target band within ~15 s",
             "utilisation AMECN 96.3 % vs MECN 94.5 % (increase); 94.5 % vs 93.4 % "
             "(decrease)"]


def e2_settling(m: dict) -> tuple[stats.Estimate, str]:
    """Seconds back in the band after the step, per repeat, and how many repeats never came
    back: their time counts the rest of the run (a lower bound)."""
    low, high = ared_band(E2_MECN["minth"], E2_MECN["maxth"])
    rest = m["repeats"][0]["window_s"][1] - E2_STEP
    seconds = [settle_time(folder, E2_STEP, low, high) for folder in m["folders"]]
    never = sum(math.isnan(s) for s in seconds)
    return (stats.Estimate(rest if math.isnan(s) else s for s in seconds),
            f", {never} of {len(seconds)} never" if never else "")


def verdicts_e2(runs) -> list[Row]:
    points = _by_point(runs, lambda label: tuple(reversed(label.split("-"))))
    settle = []
    for direction, ms in points.items():
        if "amecn" in ms:
            seconds, never = e2_settling(ms["amecn"])
            settle.append((f"{direction}: {seconds:.1f} s{never}",
                           stats.compare(seconds, E2_SETTLE, larger=False)))
    return [stats.claim_row(E2_CLAIMS[0], settle),
            stats.claim_row(E2_CLAIMS[1], stats.versus(points, "amecn", "mecn",
                                                       _percent("utilisation"), True, ".1f"))]


def _percent(key: str):
    return lambda m: 100 * m[key] if isinstance(m.get(key), (int, float)) else math.nan


def report_e2(runs, out):
    rows = []
    for label, folder, m in runs:
        row = _basic_row(label, m)
        seconds, never = e2_settling(m)
        row["back in band after (s)"] = _fmt(seconds, 1) + never
        row["final Pmax"] = _fmt(m.get("pmax_final"), 3)
        rows.append(row)
    figures = []
    for direction, name, title in (
            ("up", "e2-increase", "E2: 20 flows join at 25 s (seed 001 Figs. 5-6)"),
            ("down", "e2-decrease", "E2: 20 flows leave at 25 s (seed 001 Figs. 7-8)")):
        chosen = [r for r in runs if r[0].endswith(direction)]    # --only may leave one out
        if chosen:
            figures.append(_queue_figure(chosen, out, name, title))
    return rows, figures


# ----- E3 (seed 001, Figs. 9-10) ---------------------------------------------------------

E3_TARGETS = (0.020, 0.040, 0.080, 0.120)


# The paper's 7 Mb/s of 1000-byte packets is 875 packets/s: 10.5 Mb/s of our 1500 B (BMv2
# prices its queue in packets, and thresholds and windows count packets).
E3_MBPS, E3_FLOWS, E3_DURATION, E3_MEASURE_FROM = 10.5, 100, 100.0, 50.0


def plan_e3(opts: PlanOptions) -> list[RunSpec]:
    delays = (0.040, 0.048, 0.056, 0.064)   # one-way access: RTT 100 to 148 ms
    bn = Bottleneck(mbps=E3_MBPS, delay=0.010, buffer=300)
    topo = DumbbellSpec(senders=tuple(Access(20, d) for d in delays),
                        receivers=(Access(20, 0.0),) * 4, bottleneck=bn, ecn=True)
    runs = []
    for target in E3_TARGETS:
        auto = auto_thresholds(target, bn.pps)
        ared = RedEcn(minth=auto.minth, maxth=auto.maxth, maxp=0.1, wq=auto.wq, limit=bn.buffer)
        amecn = Mecn(minth=auto.minth, midth=auto.midth, maxth=auto.maxth, p1max=0.1,
                     p2max=0.1, wq=auto.wq, limit=bn.buffer)
        for label, aqm, loop, response in (("ared", ared, LoopSpec("ared"), "rfc3168"),
                                           ("amecn", amecn, LoopSpec("amecn"), "mecn")):
            # Starts spread over the first 5 s: 100 slow starts at once would synchronise.
            flows = tuple(Flow(k % 4, k % 4, start=0.05 * k, transport=opts.transport(response))
                          for k in range(E3_FLOWS))
            runs.append(RunSpec("e3", f"{label}-{int(target * 1000)}ms", topo, aqm,
                                duration=E3_DURATION, flows=flows, loop=loop,
                                measure_from=E3_MEASURE_FROM))
    return runs


def report_e3(runs, out):
    rows, curves, measured = [], {}, {}
    for label, _, m in runs:
        algo, target = label.split("-")
        row = _basic_row(label, m)
        row["target ms"] = target
        rows.append(row)
        curves.setdefault(algo.upper(), ([], []))
        curves[algo.upper()][0].append(m.get("queueing_delay_ms", math.nan))
        curves[algo.upper()][1].append(m.get("utilisation", math.nan))
        measured.setdefault(algo.upper(), ([], []))
        measured[algo.upper()][0].append(float(target.rstrip("ms")))
        measured[algo.upper()][1].append(m.get("queueing_delay_ms", math.nan))
    measured["target"] = ([t * 1000 for t in E3_TARGETS], [t * 1000 for t in E3_TARGETS])
    figures = [plots.lines("average queueing delay (ms)", curves, "link utilisation",
                           out / "e3-utilisation-vs-delay.png",
                           "E3: ARED vs AMECN (seed 001 Fig. 9)"),
               plots.lines("target delay (ms)", measured, "measured queueing delay (ms)",
                           out / "e3-measured-vs-target.png",
                           "E3: measured vs target delay (seed 001 Fig. 10)")]
    return rows, figures


E3_CLAIMS = ["AMECN reaches higher utilisation than ARED at the same delay",
             "both keep the measured delay near the target (here: within 0.5x to 1.5x "
             "of it)"]


def _target_split(label: str) -> tuple[str, str]:
    algorithm, target = label.split("-")
    return target, algorithm


def verdicts_e3(runs) -> list[Row]:
    points = _by_point(runs, _target_split)
    delay = stats.metric("queueing_delay_ms")
    near = _bound(points, delay, lambda t: 0.5 * float(t.rstrip("ms")), True, ".1f")
    under = _bound(points, delay, lambda t: 1.5 * float(t.rstrip("ms")), False, ".1f")
    return [stats.claim_row(E3_CLAIMS[0], stats.versus(points, "amecn", "ared",
                                                       _percent("utilisation"), True, ".1f")),
            stats.claim_row(E3_CLAIMS[1], [(text, stats.overall([a, b])) for (text, a), (_, b)
                                           in zip(near, under)])]


# ----- E4 (seed 001 Fig. 11-12, seed 003 Fig. 10) ----------------------------------------

E4_TARGETS = (0.020, 0.040, 0.080)


# The paper's 10 Mb/s of 1000 B per link is 1 250 packets/s: 15 Mb/s of 1500 B.
E4_MBPS, E4_LONG, E4_CROSS, E4_DURATION, E4_MEASURE_FROM = 15, 20, 20, 100.0, 50.0


def plan_e4(opts: PlanOptions) -> list[RunSpec]:
    link = Bottleneck(mbps=E4_MBPS, delay=0.002, buffer=300)
    topo = ParkingLotSpec(links=(link,) * 3, long_senders=(Access(20, 0.010),) * 2,
                          cross_access=Access(20, 0.010), receiver_access=Access(20, 0.0),
                          ecn=True)
    n_long = len(topo.long_senders)

    def flows(tcp: str) -> tuple[Flow, ...]:
        """The paper's 20 long flows across the three links and 20 cross flows per link,
        starts spread over the first 4 s."""
        long = tuple(Flow(k % n_long, k % n_long, start=0.05 * k, group="long", transport=tcp)
                     for k in range(E4_LONG))
        return long + tuple(Flow(n_long + link_k, n_long + link_k, group=f"cross{link_k + 1}",
                                 start=0.05 * (E4_LONG + E4_CROSS * link_k + c), transport=tcp)
                            for link_k in range(3) for c in range(E4_CROSS))
    runs = []
    for target in E4_TARGETS:
        auto = auto_thresholds(target, link.pps)
        ared = RedEcn(minth=auto.minth, maxth=auto.maxth, maxp=0.1, wq=auto.wq, limit=link.buffer)
        amecn = Mecn(minth=auto.minth, midth=auto.midth, maxth=auto.maxth, p1max=0.1,
                     p2max=0.1, wq=auto.wq, limit=link.buffer)
        for label, aqm, loop, response in (("ared", ared, LoopSpec("ared"), "rfc3168"),
                                           ("amecn", amecn, LoopSpec("amecn"), "mecn")):
            runs.append(RunSpec("e4", f"{label}-{int(target * 1000)}ms", topo, aqm,
                                duration=E4_DURATION, flows=flows(opts.transport(response)),
                                loop=loop, measure_from=E4_MEASURE_FROM))
    return runs


def report_e4(runs, out):
    rows, curves = [], {}
    for label, _, m in runs:
        algo, target = label.split("-")
        row = _basic_row(label, m)
        row["target ms"] = target
        for name, link in m.get("links", {}).items():
            row[f"{name} delay ms"] = _fmt(link.get("queueing_delay_ms"), 1)
        groups = m.get("group_goodput_mbps", {})
        row["long Mb/s (mean)"] = _fmt(groups.get("long", {}).get("mean"))
        rows.append(row)
        curves.setdefault(algo.upper(), ([], []))
        curves[algo.upper()][0].append(m.get("queueing_delay_ms", math.nan))
        curves[algo.upper()][1].append(m.get("goodput_mbps", math.nan))
    figures = [plots.lines("summed queueing delay over the 3 links (ms)", curves,
                           "total goodput (Mb/s)", out / "e4-throughput-vs-delay.png",
                           "E4: parking lot, ARED vs AMECN (seed 001 Fig. 12)")]
    return rows, figures


E4_CLAIMS = ["AMECN on all routers gives a higher overall throughput than ARED at the same "
             "summed queueing delay"]


def verdicts_e4(runs) -> list[Row]:
    points = _by_point(runs, _target_split)
    goodput, delay = stats.metric("goodput_mbps"), stats.metric("queueing_delay_ms")
    return [stats.claim_row(E4_CLAIMS[0] + " (Mb/s; ARED's throughput-delay curve read at "
                            "AMECN's summed delay in ms, seed by seed)",
                            stats.versus_curve(points, "amecn", "ared", delay, goodput, True)),
            stats.claim_row("the same at the same target delay (the delays differ)",
                            stats.versus(points, "amecn", "ared", goodput, True))]


# ----- E7 (seed 004) ---------------------------------------------------------------------

E7_BUFFERS = {16: (5, 15), 32: (10, 30), 64: (20, 60), 128: (40, 120)}


def plan_e7(opts: PlanOptions) -> list[RunSpec]:
    loss = opts.loss
    runs = []
    for buffer, (lo, hi) in E7_BUFFERS.items():
        red = dict(minth=lo, maxth=hi, maxp=0.1, wq=0.002, gentle=True, limit=buffer)
        topo = dict(senders=(Access(10, 0.0005),), receivers=(Access(10, 0.0005, loss),) * 10,
                    bottleneck=Bottleneck(mbps=1.5, delay=0.020, buffer=buffer))
        for label, aqm, ecn in (("dt", DropTail(limit=buffer), False),
                                ("red", Red(**red), False), ("ecn", RedEcn(**red), True)):
            suffix = f"-loss{int(loss * 100)}" if loss else ""
            runs.append(RunSpec("e7", f"{label}-q{buffer}{suffix}", DumbbellSpec(ecn=ecn, **topo),
                                aqm, duration=240, transfers=Transfers(), measure_from=0))
    return runs


E7_CLAIMS = ["ECN does not improve transfer times significantly",
             "ECN lowers network overhead (QL 64: 10.18 % DT, 7.32 % RED, lower ECN)",
             "with 1 % loss, receiver overhead QL 128, 25 clients: DT 3.07 %, RED 0.87 %, "
             "ECN 0.56 %"]


def _client_count(folder: Path) -> int | None:
    """How many short-transfer clients the run had (its config.json), None if unknown."""
    try:
        return len(json.loads((folder / "config.json").read_text())["topology"]["receivers"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _e7_split(label: str) -> tuple[str, str]:
    algorithm, queue, *loss = label.split("-")
    return "-".join([queue, *loss]), algorithm


def verdicts_e7(runs) -> list[Row]:
    points = _by_point(runs, _e7_split)
    def time(m: dict) -> float:
        return m.get("transfer_time_s", {}).get("mean", math.nan)

    # "Not significantly faster": holds where the intervals overlap or ECN is slower.
    not_faster = []
    for where, ms in points.items():
        for other in ("red", "dt"):
            if "ecn" in ms and other in ms:
                ecn, them = stats.over(ms["ecn"], time), stats.over(ms[other], time)
                faster = stats.compare(ecn, them, larger=False)
                verdict = (stats.DIFFERS if faster == stats.HOLDS else stats.HOLDS) \
                    if min(ecn.n, them.n) >= 2 else stats.UNCLEAR
                not_faster.append((f"{where}: ECN {ecn:.2f} s vs {other.upper()} "
                                   f"{them:.2f} s", verdict))
    overhead = stats.metric("network_overhead_percent")
    lossy = {p: ms for p, ms in points.items() if "loss" in p and p.startswith("q128")}
    receiver = stats.metric("receiver_overhead_percent")
    rows = [stats.claim_row(E7_CLAIMS[0], not_faster),
            stats.claim_row(E7_CLAIMS[1], stats.versus(points, "ecn", "red", overhead, False)
                            + stats.versus(points, "ecn", "dt", overhead, False))]
    if lossy:
        clients = sorted({n for _, folder, _ in runs if (n := _client_count(folder))})
        rows.append(stats.claim_row(
            E7_CLAIMS[2] + (f" (here: {'/'.join(map(str, clients))} clients)" if clients else ""),
            stats.versus(lossy, "ecn", "red", receiver, False)
            + stats.versus(lossy, "red", "dt", receiver, False)))
    else:
        rows.append({"claim": E7_CLAIMS[2], "ours": "not run: needs `--loss 0.01`",
                     "verdict": stats.UNCLEAR})
    return rows


def report_e7(runs, out):
    rows = []
    for label, _, m in runs:
        times = m.get("transfer_time_s", {})
        rows.append({"run": label, "transfers": m.get("transfers", 0),
                     "failed": m.get("transfers_failed", "-"),
                     "transfer s (mean)": _fmt(times.get("mean")),
                     "transfer s (sd)": _fmt(times.get("sd")),
                     "network overhead %": _fmt(m.get("network_overhead_percent")),
                     "receiver overhead %": _fmt(m.get("receiver_overhead_percent")),
                     "loss %": _fmt(m.get("loss_percent")), "marks": m.get("marks", "-"),
                     "utilisation": _fmt(m.get("utilisation")),
                     # RED's drops happen at dequeue and cost a slot; DropTail's do not.
                     "slots lost %": _fmt(m.get("slots_lost_percent"), 1),
                     "switch kept rate": _fmt(m.get("service_ratio"))})
    curves_net, curves_time = {}, {}
    for label, _, m in runs:
        algo, q = label.split("-")[:2]
        buffer = int(q[1:])
        curves_net.setdefault(algo.upper(), ([], []))
        curves_net[algo.upper()][0].append(buffer)
        curves_net[algo.upper()][1].append(m.get("network_overhead_percent", math.nan))
        curves_time.setdefault(algo.upper(), ([], []))
        curves_time[algo.upper()][0].append(buffer)
        curves_time[algo.upper()][1].append(m.get("transfer_time_s", {}).get("mean", math.nan))
    figures = [plots.lines("buffer (packets)", curves_net, "network overhead (%)",
                           out / "e7-network-overhead.png", "E7: network overhead (seed 004 Fig. 4)"),
               plots.lines("buffer (packets)", curves_time, "mean transfer time (s)",
                           out / "e7-transfer-time.png", "E7: transfer time (seed 004 Fig. 6)")]
    return rows, figures


# ----- the userspace transport against Linux's Reno (issue 6's validation) ---------------

def plan_transport(opts: PlanOptions) -> list[RunSpec]:
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=60)
    senders = {"kernel": ("kernel", "kernel"), "userspace": ("rfc3168", "rfc3168"),
               "mixed": ("kernel", "rfc3168")}
    runs = []
    for label, aqm, ecn in (("droptail", DropTail(limit=60), False),
                            ("red_ecn", RedEcn(**red), True)):
        for who, transports in senders.items():
            flows = tuple(Flow(i, i, transport=t) for i, t in enumerate(transports))
            runs.append(RunSpec("transport", f"{label}-{who}",
                                replace(DEMO_TOPO, senders=DEMO_TOPO.senders[:2],
                                        receivers=DEMO_TOPO.receivers[:2], ecn=ecn),
                                aqm, duration=30, flows=flows, measure_from=5))
    return runs


def _flow_rows(folder: Path) -> list[dict]:
    import csv
    with open(folder / "flows.csv") as f:
        return list(csv.DictReader(f))


def _goodput_of(rows: list[dict], transport: str) -> float:
    """Summed goodput of one run's flows with this sender (nan if it has none)."""
    flows = [float(f["goodput_mbps"]) for f in rows if f["transport"] == transport]
    return sum(flows) if flows else math.nan


def _share(a: float, b: float) -> float:
    return a / b if b else math.nan


def report_transport(runs, out):
    rows = []
    totals = {label: m for label, _, m in runs}
    # Each repeat's flows.csv read once.
    flows = {folder: _flow_rows(folder) for _, _, m in runs for folder in m["folders"]}
    for label, _, m in runs:
        aqm, who = label.split("-")
        kernel = stats.over_folders(m, lambda f: _goodput_of(flows[f], "kernel"))
        userspace = stats.over_folders(m, lambda f: _goodput_of(flows[f], "rfc3168"))
        if who == "mixed":
            ratio = stats.over_folders(m, lambda f: _share(_goodput_of(flows[f], "rfc3168"),
                                                           _goodput_of(flows[f], "kernel")))
        elif who == "userspace" and f"{aqm}-kernel" in totals:
            # Each repeat against the kernel run of the same seed.
            base = totals[f"{aqm}-kernel"]
            by_seed = {run.get("seed"): _goodput_of(flows[folder], "kernel")
                       for run, folder in zip(base["repeats"], base["folders"])}
            ratio = stats.Estimate(
                _share(_goodput_of(flows[folder], "rfc3168"),
                       by_seed.get(run.get("seed"), math.nan))
                for run, folder in zip(m["repeats"], m["folders"]))
        else:
            ratio = math.nan

        def cuts(kinds: tuple[str, ...]) -> stats.Estimate:
            return stats.over_folders(m, lambda folder: sum(
                int(f[f"cuts_{k}"] or 0) for f in flows[folder] for k in kinds))
        rows.append({**_basic_row(label, m),
                     "kernel flows Mb/s": _fmt(kernel) if kernel.n else "-",
                     "userspace flows Mb/s": _fmt(userspace) if userspace.n else "-",
                     "userspace/kernel": _fmt(ratio),
                     "userspace cuts per run (mark/loss/timeout)": "/".join(
                         f"{float(cuts(kinds)):.0f}" for kinds in (
                             ("incipient", "moderate"), ("loss",), ("timeout",)))})
    figures = [plots.cwnd_over_time([(label, folder) for label, folder, _ in runs],
                                    out / "transport-cwnd.png",
                                    "cwnd: userspace Reno (lines) and Linux Reno (dots, 1/s)"),
               _queue_figure(runs, out, "transport-queue", "queue with each kind of sender")]
    return rows, figures


# ----- smoke: the whole path in about a minute (setup check; the interruption tests) -----

def plan_smoke(opts: PlanOptions) -> list[RunSpec]:
    topo = DumbbellSpec(senders=(Access(20, 0.005),) * 2, receivers=(Access(20, 0.0),) * 2,
                        bottleneck=Bottleneck(mbps=5, delay=0.005, buffer=30))
    red = dict(minth=3, maxth=9, maxp=0.1, wq=0.02, limit=30)
    # A Linux TCP flow (iperf3) and a userspace one: every kind of process a run starts.
    flows = (Flow(0, 0), Flow(1, 1, transport="rfc3168"))
    return [RunSpec("smoke", label, replace(topo, ecn=ecn), aqm, duration=6, flows=flows,
                    measure_from=1)
            for label, aqm, ecn in (("droptail", DropTail(limit=30), False),
                                    ("red_ecn", RedEcn(**red), True))]


SENDERS = ("senders: the userspace Reno of transport/ (seed 001 Table 3 for AMECN, RFC 3168 "
           "halving for ARED; `--kernel-tcp`: Linux Reno for both, which ignores ECT(1))")

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("demo", "Demo: DropTail, RED, RED+ECN, MECN, AMECN on one dumbbell",
               "3 Reno flows, 10 Mb/s bottleneck (833 packets/s of 1500 B), RTT 30 ms, "
               "buffer 60, 40 s per algorithm; the userspace Reno of transport/ in every "
               "row, halving on a mark (RFC 3168) for DropTail/RED/RED+ECN and answering "
               "seed 001's levels for MECN/AMECN (`--kernel-tcp`: Linux Reno for all)",
               plan_demo,
               report_basic("demo", "Demo: 3 flows through a 10 Mb/s bottleneck"),
               claims=["RED+ECN keeps the queue of RED with fewer drops",
                       "MECN and AMECN hold the average near their thresholds"], repeat=1),
    Experiment("e1", "E1 (seed 000): RED vs RED+ECN, TCP variants, dumbbell 3 -> 3",
               "bottleneck 8 Mb/s (the paper's '1 MB/s', 667 packets/s of 1500 B; the paper's "
               "packets are 100 B: `--factor packet=100` keeps the packet rate), 10 ms, "
               "buffer 20, min 5 / max 15, access 100 Mb/s 1 ms; Linux offers reno, cubic, "
               "bbr (not NewReno/SACK/Vegas as ns-2 agents); 30 s runs; wq 0.002 (the "
               "paper's table says 0.0002, which would not leave min in a 30 s run)",
               plan_e1, report_e1, claims=E1_CLAIMS, verdicts=verdicts_e1),
    Experiment("e2", "E2 (seed 001 Figs. 5-8): MECN vs AMECN under a load step",
               "the paper's 1.5 Mb/s of 1000-byte packets is 187 packets/s: here 2.25 Mb/s of "
               "1500 B; buffer 40, min 5 / mid 11.25 / max 15, wq 0.0027; 2 forward long-lived "
               "flows, without the paper's reverse flow (its ACKs would each cost a full "
               "packet slot in BMv2's packets/s queue, 25x their ns-2 cost); 20 flows "
               "(window 25 packets) join at 25 s one every 0.1 s, or run from 0 and stop "
               "at 25 s; RTT 100 ms (the paper's 'terrestrial' RTT); senders: the userspace MECN Reno of transport/ (seed 001 Table 3; "
               "`--kernel-tcp`: Linux Reno, which ignores ECT(1))",
               plan_e2, report_e2, claims=E2_CLAIMS, verdicts=verdicts_e2),
    Experiment("e3", "E3 (seed 001 Figs. 9-10): ARED vs AMECN over target delays",
               f"the paper's scale: {E3_FLOWS} Reno flows with RTT 100-148 ms (starts spread "
               f"over 5 s), 875 packets/s (the paper's 7 Mb/s of 1000 B; here {E3_MBPS:g} "
               "Mb/s of 1500 B), buffer 300, automatic thresholds from target delays "
               f"20/40/80/120 ms, {E3_DURATION:g} s runs measured over the second half; "
               "without the paper's web and reverse traffic; " + SENDERS,
               plan_e3, report_e3, claims=E3_CLAIMS, verdicts=verdicts_e3),
    Experiment("e4", "E4 (seed 001 Figs. 11-12): parking lot, ARED vs AMECN on every link",
               "the paper's scale: 3 congested links of 1 250 packets/s (the paper's 10 Mb/s "
               f"of 1000 B; here {E4_MBPS} Mb/s of 1500 B), 2 ms each, one BMv2 per link; "
               f"{E4_LONG} long flows across all three, {E4_CROSS} cross flows per link; "
               "access 10 ms (the paper does not say); automatic thresholds from target "
               f"delays 20/40/80 ms on every link; {E4_DURATION:g} s runs measured over the "
               "last 50 s; on 2 cores the three switches keep their rate only with a BMv2 "
               "built without logging macros (P4AQM_BMV2; `switch kept rate`: 0.68 in one "
               "run with the default build); " + SENDERS,
               plan_e4, report_e4, claims=E4_CLAIMS, verdicts=verdicts_e4),
    Experiment("transport", "The userspace transport's Reno against Linux's Reno",
               "the demo's dumbbell with 2 senders (10 Mb/s, RTT 30 ms, buffer 60): 2 Linux "
               "Reno flows, 2 userspace Reno flows in RFC 3168 mode, or one of each; DropTail "
               "and RED+ECN (min 5 / max 15, maxp 0.1); 30 s runs measured from 5 s",
               plan_transport, report_transport,
               claims=["the userspace Reno reaches goodput comparable to Linux's Reno "
                       "(ratio near 1), alone and sharing the link",
                       "its cwnd is Reno's sawtooth: halving per mark or loss, +1 per RTT"],
               repeat=1),
    Experiment("smoke", "Smoke: DropTail and RED+ECN for 6 s each on a small dumbbell",
               "2 flows (Linux Reno and the userspace RFC 3168 Reno), 5 Mb/s bottleneck, RTT "
               "20 ms, buffer 30; checks the setup end to end in about a minute",
               plan_smoke, report_basic("smoke", "Smoke: 2 flows through a 5 Mb/s bottleneck"),
               repeat=1),
    Experiment("e5", "E5 (seed 002): RED vs ECN vs AECN with heterogeneous RTTs", e5.SCALING,
               e5.plan, e5.report, claims=e5.CLAIMS, verdicts=e5.verdicts),
    Experiment("e6", "E6 (seed 003): NEWQUE vs RED vs BLUE vs PI vs REM", e6.SCALING,
               e6.plan, e6.report, claims=e6.CLAIMS, verdicts=e6.verdicts),
    Experiment("e7", "E7 (seed 004): short transfers, DT vs RED vs ECN over buffer sizes",
               "the paper's: 10 clients, each 11 serial 100 KB transfers from one server; "
               "10 Mb/s access with 0.5 ms; bottleneck 1.5 Mb/s (125 packets/s of 1500 B, the "
               "paper's MSS 1460) with d = 20 ms; buffers 16/32/64/128 with min/max 5/15, "
               "10/30, 20/60, 40/120, maxp 0.1, wq 0.002, gentle; Linux Reno, delayed ACKs; "
               "`--loss` adds 1 % random loss on the clients' access links. The paper's 25 "
               "clients: `--factor clients=25` (at least 154 s of transfers per run instead of 62 s)",
               plan_e7, report_e7, claims=E7_CLAIMS, verdicts=verdicts_e7),
)}
