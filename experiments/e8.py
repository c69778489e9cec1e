"""E8 (beyond the seeds): the seeds' AQMs against today's, delay under load.

One dumbbell, a 10 Mb/s bottleneck of 1000-byte packets (1 250 packets/s), 100 ms base RTT,
a 200-packet buffer, Linux Reno (and CUBIC) with ECN, 1 to 64 long flows; DropTail, RED+ECN
with ARED, MECN with AMECN, NEWQUE, BLUE, PI, REM, CoDel and PIE, each with its paper's
defaults. Each run holds a steady phase, then the bottleneck's rate halves and recovers:
the steady phase gives the queueing delay's percentiles (from the sampled sojourn times),
utilisation, loss and Jain's index; the step gives how long each algorithm takes to bring
the delay back to its target. The claims are RFC 8289's and RFC 8033's own.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from pathlib import Path

from analysis import plots, stats
from analysis.metrics import percentile
from analysis.results import read_csv
from control_plane.adaptation import auto_thresholds
from control_plane.aqm import Aqm, Blue, Codel, DropTail, Mecn, Newque, Pi, Pie, RedEcn, Rem
from control_plane.controller import LoopSpec
from experiments.base import (Experiment, PlanOptions, Row, Runs, by_point, fmt, line_figure,
                              percent, spread)
from experiments.spec import RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

BOTTLENECK = Bottleneck(mbps=10, delay=0.040, buffer=200, packet_bytes=1000)
ACCESS, RECEIVER = Access(100, 0.010), Access(100, 0.0)     # RTT 2 (10 + 40) ms
PAIRS = 4                 # iperf3 processes (sender/receiver pairs); flows are their streams
FLOWS = (1, 4, 16, 64)
CONGESTION = ("reno", "cubic")
# The default plan: Reno at every load, CUBIC at 16 flows; --full: CUBIC at every load.
CUBIC_FLOWS = (16,)
ALGORITHMS = ("droptail", "ared", "amecn", "newque", "blue", "pi", "rem", "codel", "pie")
# The seconds of a run: warm-up, the steady phase measured, the halved rate, the recovery.
MEASURE_FROM, HALVE_AT, RECOVER_AT, DURATION = 15.0, 40.0, 50.0, 60.0
# ARED and AMECN in their automatic mode (thresholds and wq from a target delay and C).
AUTO_TARGET = 0.020
# Back at the target: the delay's median over WINDOW s centred on each moment at most SLACK
# times the target, for HOLD s.
WINDOW, SLACK, HOLD = 0.5, 1.5, 1.0

SCALING = ("10 Mb/s bottleneck of 1000-byte packets (1 250 packets/s), 40 ms, 100 Mb/s "
           "10 ms access (100 ms base RTT), a 200-packet buffer (160 ms at C); Linux Reno "
           "with ECN at 1, 4, 16 and 64 long flows (iperf3 streams over 4 sender/receiver "
           "pairs) and CUBIC at 16 (`--full`: at every load); 60 s runs: delay, "
           "utilisation, loss and Jain's index from 15 to 40 s, the bottleneck's rate "
           "halved from 40 to 50 s and back; every AQM with its paper's defaults in ECN "
           "mode (ARED and AMECN in automatic mode for a 20 ms target delay; PI's qref "
           "half the buffer, 80 ms; REM's b* 20 packets, 16 ms)")

CLAIMS = [
    "CoDel holds the queueing delay near its 5 ms target while the link stays busy "
    "(RFC 8289; here: median delay at most 2x the target and utilisation at least 90 %)",
    "PIE holds the queueing delay near its 15 ms target while the link stays busy "
    "(RFC 8033; here: median delay at most 2x the target and utilisation at least 90 %)",
    "after the link's rate changes, CoDel and PIE bring the delay back to their target "
    "within a few intervals (here: the delay's median over 0.5 s at most 1.5x the target, "
    "held 1 s, within 1 s of the rate halving and of its recovery)",
    "CoDel and PIE keep the tail of the delay (p99) below DropTail's at every load "
    "(RFC 7567's bufferbloat)",
]


def aqm(name: str) -> tuple[Aqm, LoopSpec | None]:
    """Each algorithm with its paper's defaults for this buffer (ECN mode)."""
    auto = auto_thresholds(AUTO_TARGET, BOTTLENECK.pps)
    limit = BOTTLENECK.buffer
    return {"droptail": (DropTail(limit=limit), None),
            "ared": (RedEcn(minth=auto.minth, maxth=auto.maxth, maxp=0.1, wq=auto.wq,
                            limit=limit), LoopSpec("ared")),
            "amecn": (Mecn(minth=auto.minth, midth=auto.midth, maxth=auto.maxth, p1max=0.1,
                           p2max=0.1, wq=auto.wq, limit=limit), LoopSpec("amecn")),
            "newque": (Newque(limit=limit), None), "blue": (Blue(limit=limit), None),
            "pi": (Pi(limit=limit), None), "rem": (Rem(limit=limit), None),
            "codel": (Codel(limit=limit), None), "pie": (Pie(limit=limit), None)}[name]


def plan(opts: PlanOptions) -> list[RunSpec]:
    runs = []
    for cc in CONGESTION:
        for flows in FLOWS if cc == "reno" or opts.full else CUBIC_FLOWS:
            topology = DumbbellSpec(senders=(ACCESS,) * PAIRS, receivers=(RECEIVER,) * PAIRS,
                                    bottleneck=BOTTLENECK, ecn=True, congestion_control=cc)
            for name in ALGORITHMS:
                queue, loop = aqm(name)
                runs.append(RunSpec("e8", f"{name}-{cc}-{flows}f", topology, queue,
                                    duration=DURATION, flows=spread(flows, min(flows, PAIRS)),
                                    loop=loop, measure_from=MEASURE_FROM,
                                    measure_until=HALVE_AT,
                                    rate_steps=((HALVE_AT, 0.5), (RECOVER_AT, 1.0))))
    return runs


def point_of(label: str) -> tuple[str, str]:
    """(point "reno-16f", algorithm) of a label "codel-reno-16f"."""
    algorithm, point = label.split("-", 1)
    return point, algorithm


def sojourns(folder: Path, start: float, end: float) -> list[tuple[float, float]]:
    """(t, sojourn ms) of the telemetry records in [start, end)."""
    return [(r["t"], r["sojourn_ms"]) for r in read_csv(folder / "telemetry.csv")
            if start <= r["t"] < end]


def target_ms(name: str, fraction: float = 1.0) -> float | None:
    """The delay the algorithm aims at with the bottleneck at `fraction` of its rate: the
    delay CoDel and PIE hold at any rate, or the queue ARED, AMECN, PI and REM hold (a
    delay that doubles when the rate halves); None for one that aims at neither (DropTail,
    NEWQUE, BLUE)."""
    queue, _ = aqm(name)
    if queue.target_delay() is not None:
        return 1000 * queue.target_delay()
    packets = queue.target_queue()
    return None if packets is None else 1000 * packets / (fraction * BOTTLENECK.pps)


def back_at_target(samples: list[tuple[float, float]], since: float, target: float,
                   until: float) -> float:
    """Seconds after `since` until the delay's median over WINDOW s centred on a moment
    (within [since, until): a trailing window would lag by WINDOW/2) is at most SLACK times
    the target, and stays so for HOLD s; nan if that does not happen before `until`."""
    phase = sorted((t, ms) for t, ms in samples if since <= t < until)
    times = [t for t, _ in phase]
    good_since = None
    for t, _ in phase:
        window = phase[bisect_left(times, t - WINDOW / 2):bisect_left(times, t + WINDOW / 2)]
        if percentile(sorted(ms for _, ms in window), 50) > SLACK * target:
            good_since = None
        elif good_since is None:
            good_since = t
        if good_since is not None and t - good_since >= HOLD:
            return good_since - since
    return math.nan


def phases(folder: Path) -> dict[str, tuple[float, float, float]]:
    """Each step's (start, end, rate fraction) as the switch took it (rate_steps.json),
    else as planned: "halve" until the recovery, "recover" until the run's end."""
    try:
        steps = json.loads((folder / "rate_steps.json").read_text())
        halved, recovered = steps[0]["at"], steps[1]["at"]
    except (OSError, ValueError, IndexError, KeyError):
        halved, recovered = HALVE_AT, RECOVER_AT
    return {"halve": (halved, recovered, 0.5), "recover": (recovered, DURATION, 1.0)}


def response(name: str, folder: Path, after: str) -> float:
    """One run's seconds back at the target after the halving ("halve") or the recovery
    ("recover"); nan if it never got back within that phase."""
    since, until, fraction = phases(folder)[after]
    return back_at_target(sojourns(folder, since, until), since, target_ms(name, fraction),
                          until)


def recovery(name: str, after: str):
    """response() over a configuration's repeats; a run that never got back counts its
    whole phase (a lower bound)."""
    def of(folder: Path) -> float:
        seconds = response(name, folder, after)
        if math.isnan(seconds):
            since, until, _ = phases(folder)[after]
            return until - since
        return seconds
    return of


def response_cell(name: str, m: dict, after: str) -> str:
    """The table's "back after" cell: the mean over the repeats, how many never got back,
    "no target" for an algorithm that aims at none."""
    if target_ms(name) is None:
        return "no target"
    folders = m.get("folders", [])
    never = sum(math.isnan(response(name, f, after)) for f in folders)
    if folders and never == len(folders):
        return f"never ({never} of {never})"
    return fmt(stats.over_folders(m, recovery(name, after)), 1) + (
        f", {never} never" if never else "")


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        point, algorithm = point_of(label)
        rows.append({"run": label, "utilisation": fmt(m.get("utilisation")),
                     "delay p50 ms": fmt(m.get("delay_p50_ms"), 1),
                     "p95 ms": fmt(m.get("delay_p95_ms"), 1),
                     "p99 ms": fmt(m.get("delay_p99_ms"), 1),
                     "loss %": fmt(m.get("loss_window_percent"), 3),
                     "Jain": fmt(m.get("jain"), 3),
                     "back after halving s": response_cell(algorithm, m, "halve"),
                     "back after recovery s": response_cell(algorithm, m, "recover"),
                     "switch kept rate": fmt(m.get("service_ratio"))})
    return rows, figures(runs, out)


def figures(runs: Runs, out: Path) -> list[Path]:
    """The delay's distribution per load, utilisation against p99 per algorithm, and the
    delay around the rate step at 16 Reno flows."""
    drawn = []
    for point, entries in by_point(runs, point_of).items():
        cdfs = {}
        for algorithm, m in entries.items():
            delays = sorted(v for f in m.get("folders", [])
                            for _, v in sojourns(f, MEASURE_FROM, HALVE_AT))
            if delays:
                # At most 400 points per curve: the shape, not every sample.
                step = max(1, len(delays) // 400)
                cdfs[algorithm.upper()] = (
                    [max(d, 0.01) for d in delays[::step]],
                    [(i + 1) / len(delays) for i in range(0, len(delays), step)])
        if cdfs:
            # Telemetry samples a packet every 10 ms: a share of time more than of packets.
            drawn.append(plots.lines("queueing delay (ms, log scale)", cdfs,
                                     "fraction of samples (a packet every 10 ms)",
                                     out / f"e8-delay-cdf-{point}.png",
                                     f"E8: queueing delay, {point}", marker="", x_log=True))
    tradeoff = {}
    for label, _, m in runs:
        point, algorithm = point_of(label)
        if point.startswith("reno-"):
            xs, ys = tradeoff.setdefault(algorithm.upper(), ([], []))
            xs.append(stats.over(m, stats.metric("delay_p99_ms")))
            ys.append(stats.over(m, percent("utilisation")))
    drawn += line_figure("p99 queueing delay (ms)", tradeoff, "utilisation (%)",
                         out / "e8-utilisation-vs-p99.png",
                         "E8: utilisation against the delay's tail, Reno, 1 to 64 flows")
    steps = {}
    for label, folder, _ in runs:    # each configuration's first repeat
        point, algorithm = point_of(label)
        if point == "reno-16f":
            samples = sojourns(folder, HALVE_AT - 5, DURATION)
            times = [t for t, _ in samples]
            medians = [(t, percentile(sorted(v for _, v in samples[
                bisect_left(times, t - WINDOW / 2):bisect_left(times, t + WINDOW / 2)]), 50))
                for t in times[::5]]
            if medians:
                steps[algorithm.upper()] = ([t for t, _ in medians], [v for _, v in medians])
    if steps:
        drawn.append(plots.lines("time (s): the rate halves at about 40 s, recovers at 50 s",
                                 steps, "queueing delay, median over 0.5 s (ms)",
                                 out / "e8-rate-step-reno-16f.png",
                                 "E8: the delay around the rate step, 16 Reno flows, seed 1",
                                 marker=""))
    return drawn


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs, point_of)
    rows = []
    for claim, name in zip(CLAIMS[:2], ("codel", "pie")):
        parts = []
        for where, ms in points.items():
            if name in ms:
                p50 = stats.over(ms[name], stats.metric("delay_p50_ms"))
                busy = stats.over(ms[name], percent("utilisation"))
                parts.append((f"{where}: p50 {p50:.1f} ms, utilisation {busy:.1f} %",
                              stats.overall([stats.compare(p50, 2 * target_ms(name), False),
                                             stats.compare(busy, 90.0, True)])))
        rows.append(stats.claim_row(claim, parts))
    back = []
    for where, ms in points.items():
        for name in ("codel", "pie"):
            for after, change in (("halve", "halved"), ("recover", "restored")):
                if name in ms:
                    seconds = stats.over_folders(ms[name], recovery(name, after))
                    back.append((f"{where} {name}, rate {change}: {seconds:.2f} s",
                                 stats.compare(seconds, 1.0, larger=False)))
    rows.append(stats.claim_row(CLAIMS[2], back))
    p99 = stats.metric("delay_p99_ms")
    rows.append(stats.claim_row(CLAIMS[3], stats.versus(points, "codel", "droptail", p99, False)
                                + stats.versus(points, "pie", "droptail", p99, False)))
    return rows


EXPERIMENT = Experiment("E8 (beyond the seeds): the seeds' AQMs against CoDel and PIE, "
                        "delay under load", SCALING, plan, report, claims=CLAIMS,
                        verdicts=verdicts, source=("rfc8289", "RFC 8289, RFC 8033"))
