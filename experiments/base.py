"""What every experiment module builds on: the Experiment it exports, the options that shape
a plan, and the table rows, figures and claim parts several experiments share.

An experiment module (one per experiment in this package, named like the experiment)
holds its scaling line, its plan (PlanOptions -> RunSpecs), its report (runs -> table rows
and figures), its paper's claims and their verdicts, and exports them as EXPERIMENT;
experiments/catalog.py lists the modules.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from analysis import plots, stats
from control_plane.adaptation import auto_thresholds
from control_plane.aqm import Aqm, Mecn, RedEcn
from control_plane.controller import LoopSpec
from experiments import factors
from experiments.spec import Flow, RunSpec
from topologies.specs import DumbbellSpec

Row = dict[str, object]
# (label, first repeat's folder, metrics combined over the repeats) of every configuration
Runs = list[tuple[str, Path, dict]]
# A quantity read from a run's label and metrics (a figure's axis)
Value = Callable[[str, dict], float]
# Runs per configuration for the claim tables: the fewest that give a t interval of useful
# width (t = 4.30 at n = 3; a single run has no interval and decides no claim).
REPEAT = 3
# In simulation, where a run costs seconds: intervals narrow enough to decide most claims
# (t = 2.26 at n = 10).
TWIN_REPEAT = 10


@dataclass(frozen=True)
class PlanOptions:
    loss: float = 0.0           # E7: random loss on the clients' access links
    # Seed 001's runs: userspace MECN senders (transport/) for MECN/AMECN and RFC 3168
    # ones for ARED, or Linux's kernel TCP for all.
    kernel_tcp: bool = False
    full: bool = False          # E5, E6: the paper's whole sweep instead of the default subset
    repeat: int | None = None   # runs per configuration; None: the experiment's default
    # run only the configurations whose label matches (fnmatch; several patterns with commas)
    only: str | None = None
    # (name, value) pairs of experiments/factors.py, applied to every run
    factors: tuple[tuple[str, str], ...] = ()
    backend: str = "bmv2"       # the switch in Mininet, or its ns-3 twin (experiments/ns3/)
    pcap: int = 0               # packets of each bottleneck's egress to capture (0: none)

    def matches(self, label: str) -> bool:
        """A configuration `--only` keeps."""
        return self.only is None or any(fnmatch.fnmatchcase(label, pattern.strip())
                                        for pattern in self.only.split(","))

    def transport(self, response: str) -> str:
        return "kernel" if self.kernel_tcp else response

    def flags(self) -> list[str]:
        """The command-line arguments that rebuild these options (resume, sweep workers)."""
        return ((["--loss", repr(self.loss)] if self.loss else [])
                + (["--kernel-tcp"] if self.kernel_tcp else [])
                + (["--full"] if self.full else [])
                + (["--repeat", str(self.repeat)] if self.repeat else [])
                + (["--only", self.only] if self.only else [])
                + [arg for name, value in self.factors for arg in ("--factor", f"{name}={value}")]
                + (["--backend", self.backend] if self.backend != "bmv2" else [])
                + (["--pcap", str(self.pcap)] if self.pcap else []))


@dataclass(frozen=True)
class Experiment:
    """An experiment, named by its module (`python -m experiments run <module>`)."""

    title: str
    scaling: str
    plan: Callable[[PlanOptions], list[RunSpec]]
    # every configuration's runs -> table rows and figures
    report: Callable[[Runs, Path], tuple[list[Row], list[Path]]]
    claims: list[str] = field(default_factory=list)
    # every configuration's runs -> each claim beside our result, and its verdict
    verdicts: Callable[[Runs], list[Row]] | None = None
    repeat: int = REPEAT        # runs per configuration unless `--repeat` says otherwise
    # The paper's own scale, where it differs from the testbed's: the ns-3 twin's plan
    # (`--factor scale=testbed` keeps the testbed's), and what it changes.
    paper_scale: Callable[[RunSpec], RunSpec] | None = None
    paper_scaling: str = ""
    # The paper (or RFC) the claims are from: its anchor on docs/bibliography.md, as shown.
    source: tuple[str, str] | None = None

    def at_paper_scale(self, backend: str, changed: list | tuple) -> bool:
        """Whether runs on `backend` with the factors `changed` ran at the paper's scale."""
        return (backend == "ns3" and self.paper_scale is not None
                and dict(changed).get("scale", factors.PAPER) == factors.PAPER)

    def scaling_of(self, backend: str, changed: list | tuple) -> str:
        """The scaling line of runs on `backend` with the factors `changed`."""
        if self.at_paper_scale(backend, changed):
            return f"in the ns-3 twin, {self.paper_scaling}"
        return self.scaling + (" (in the ns-3 twin)" if backend == "ns3" else "")

    def repeats(self, opts: PlanOptions) -> int:
        return opts.repeat or (self.repeat if opts.backend == "bmv2" else TWIN_REPEAT)

    def runs(self, opts: PlanOptions) -> list[RunSpec]:
        """The plan, each configuration repeated with seeds 1..N, repeats of a configuration
        together, each run naming the program they all run (factors.program: the smallest
        build profile that holds the algorithms of these runs, `--only` leaving some out
        unless `--factor program=plan`) and its backend; in ns-3 at the paper's scale
        unless `--factor scale=testbed`."""
        n = self.repeats(opts)
        planned = self.plan(opts)
        if self.at_paper_scale(opts.backend, opts.factors):
            planned = [self.paper_scale(spec) for spec in planned]
        planned = [replace(spec, backend=opts.backend, pcap=opts.pcap) for spec in planned]
        specs = [factors.apply(spec, opts.factors).repeat(seed)
                 for spec in planned for seed in range(1, n + 1) if opts.matches(spec.label)]
        program = factors.program(opts.factors, specs, planned).name
        return [replace(spec, program=program) for spec in specs]


# ----- seed 001's adaptive queues (E3, E4) -----------------------------------------------

SEED_001_SENDERS = ("senders: the userspace Reno of transport/ (seed 001 Table 3 for AMECN, "
                    "RFC 3168 halving for ARED; `--kernel-tcp`: Linux Reno for both, which "
                    "ignores ECT(1))")


def ared_and_amecn(target: float, pps: float, buffer: int, opts: PlanOptions
                   ) -> tuple[tuple[str, Aqm, LoopSpec, str], ...]:
    """(label, AQM, loop, senders' transport) of ARED and AMECN with the automatic
    thresholds of a target delay (s) at this link rate."""
    auto = auto_thresholds(target, pps)
    ared = RedEcn(minth=auto.minth, maxth=auto.maxth, maxp=0.1, wq=auto.wq, limit=buffer)
    amecn = Mecn(minth=auto.minth, midth=auto.midth, maxth=auto.maxth, p1max=0.1,
                 p2max=0.1, wq=auto.wq, limit=buffer)
    return (("ared", ared, LoopSpec("ared"), opts.transport("rfc3168")),
            ("amecn", amecn, LoopSpec("amecn"), opts.transport("mecn")))


# ----- the paper's scale (the ns-3 twin) --------------------------------------------------

def resized(spec: RunSpec, packet_bytes: int, mbps: float | None = None) -> RunSpec:
    """The run with packets of `packet_bytes` on every congested link (the hosts' MTU): at
    `mbps`, or at the same packet rate (thresholds, buffers and windows count packets)."""
    def change(link):
        return replace(link, packet_bytes=packet_bytes,
                       mbps=mbps or link.mbps * packet_bytes / link.packet_bytes)
    topo = spec.topology
    if isinstance(topo, DumbbellSpec):
        return replace(spec, topology=replace(topo, bottleneck=change(topo.bottleneck)))
    return replace(spec, topology=replace(topo, links=tuple(change(link) for link in topo.links)))


# ----- table rows ------------------------------------------------------------------------

def fmt(value, digits: int = 2):
    """A number for a table ("-" if missing); an Estimate with its interval."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return value


def queue_columns(m: dict) -> Row:
    """The time-averaged queue of every algorithm, and the EWMA's own average beside it
    ("-" for an algorithm without one)."""
    return {"avg queue": fmt(m.get("avg_queue")), "EWMA avg": fmt(m.get("avg_ewma"))}


def basic_row(label: str, m: dict) -> Row:
    return {"run": label, "goodput Mb/s": fmt(m.get("goodput_mbps")),
            "utilisation": fmt(m.get("utilisation")), **queue_columns(m),
            "delay ms": fmt(m.get("queueing_delay_ms"), 1), "loss %": fmt(m.get("loss_percent")),
            "slots lost %": fmt(m.get("slots_lost_percent"), 1),
            "marks": fmt(m.get("marks"), 0), "Jain": fmt(m.get("jain"), 3),
            "senders": m.get("senders", "-"),
            # Below ~0.9 the machine set the pace: the row measures the testbed, not the AQM.
            "switch kept rate": fmt(m.get("service_ratio"))}


# ----- figures: none without data (`--only` may leave a figure's runs out) ---------------

def queue_figure(runs: Runs, out: Path, name: str, title: str) -> list[Path]:
    """The queue over time, one panel per run."""
    if not runs:
        return []
    return [plots.queue_over_time([(label, folder) for label, folder, _ in runs],
                                  out / f"{name}.png", title)]


def algorithm_of(label: str) -> str:
    """A run's algorithm as figures name it: its label's first part ("red-q64": "RED")."""
    return label.split("-")[0].upper()


def curves(runs: Runs, x: str | Value, y: str | Value,
           series: Callable[[str], str] = algorithm_of) -> dict[str, tuple[list, list]]:
    """{SERIES: (xs, ys)}, one curve per series(label) (by default the algorithm) through
    its runs in their order. x and y: a metric's key, or a function of (label, metrics)."""
    def value(of: str | Value) -> Value:
        return of if callable(of) else lambda label, m: m.get(of, math.nan)
    x, y = value(x), value(y)
    out: dict[str, tuple[list, list]] = {}
    for label, _, m in runs:
        xs, ys = out.setdefault(series(label), ([], []))
        xs.append(x(label, m))
        ys.append(y(label, m))
    return out


def line_figure(x_label: str, lines: dict[str, tuple[list, list]], y_label: str, out: Path,
                title: str) -> list[Path]:
    """y against x, drawn when some curve has two points to join."""
    if not any(sum(math.isfinite(v) for v in ys) > 1 for _, ys in lines.values()):
        return []
    return [plots.lines(x_label, lines, y_label, out, title)]


def basic_report(name: str, title: str):
    """The report of an experiment without claims: the basic row of every run, its queue
    over time, goodput, queue and loss side by side."""
    def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
        rows = [basic_row(label, m) for label, _, m in runs]
        figures = queue_figure(runs, out, f"{name}-queue", title)
        figures.append(plots.bars(
            [label for label, _, _ in runs],
            {"goodput (Mb/s)": [m.get("goodput_mbps", math.nan) for _, _, m in runs],
             "average queue (pkts)": [m.get("avg_queue", math.nan) for _, _, m in runs],
             "loss (%)": [m.get("loss_percent", math.nan) for _, _, m in runs]},
            out / f"{name}-summary.png", title))
        return rows, figures
    return report


# ----- claims ----------------------------------------------------------------------------

def algorithm_first(label: str) -> tuple[str, str]:
    """(point, algorithm) of a label "algorithm-point" (e.g. "amecn-40ms")."""
    algorithm, point = label.split("-", 1)
    return point, algorithm


def by_point(runs: Runs, split: Callable[[str], tuple[str, str]] = algorithm_first
             ) -> dict[str, dict[str, dict]]:
    """{point: {algorithm: combined metrics}} from run labels, for stats.versus and
    stats.bound; split(label) -> (point, algorithm)."""
    points: dict[str, dict[str, dict]] = {}
    for label, _, m in runs:
        point, algorithm = split(label)
        points.setdefault(point, {})[algorithm] = m
    return points


def percent(key: str) -> Callable[[dict], float]:
    """One run's fraction (utilisation) in %, nan when the run lacks it."""
    return lambda m: 100 * m[key] if isinstance(m.get(key), (int, float)) else math.nan


def spread(flows: int, pairs: int, first: int = 0, offset: int = 0) -> tuple[Flow, ...]:
    """`flows` long-lived streams over `pairs` iperf3 processes, starts staggered by 0.2 s
    (the paper says nothing of start times; all at once would synchronise them)."""
    per, extra = divmod(flows, pairs)
    return tuple(Flow(first + k, first + k, start=0.2 * (offset + k),
                      streams=per + (1 if k < extra else 0)) for k in range(pairs)
                 if per + (1 if k < extra else 0))


def configurations(results: list[tuple[str, Path, dict]],
                   plan: list[RunSpec]) -> list[tuple[str, Path, dict]]:
    """Every run's (label, folder, metrics) -> one (label, first folder, combined metrics)
    per configuration, its repeats' numbers as Estimates (analysis/stats.py), in the plan's
    order; labels not in it go last."""
    order = {spec.label: k for k, spec in reversed(list(enumerate(plan)))}
    by_label: dict[str, list[tuple[Path, dict]]] = {}
    for label, folder, metrics in sorted(results, key=lambda r: r[2].get("seed", 1)):
        by_label.setdefault(label, []).append((folder, metrics))
    out = [(label, runs[0][0], stats.combine([m for _, m in runs], [f for f, _ in runs]))
           for label, runs in by_label.items()]
    return sorted(out, key=lambda r: order.get(r[0], len(order)))
