"""ns-3's RedQueueDisc (ns-3.44, a port of ns-2's RED, the seeds' simulator) against the RED
golden model on the same packet traces (tests/support/ns3_oracle.py). With the conformance suites
(golden model = BMv2) this is the chain ns-3 ~ golden model = switch.

Each trace is fed to ns-3 first; the golden model then gets what ns-3's queue did: each
packet's depth on arrival and when it left. A packet ns-3 dropped on arrival is stamped
with the departure of the packet before it (RED drops only with 2 or more queued, so that
one is still queued), so a later idle time counts from the last real departure, as ns-3's
does. Where ns-3 decides with given draws, they are the golden model's (its xorshift
stream, rnd / 2^32).

Differences by design, each named where it is tested and shown to account for the whole
gap:
- idle time: after an idle period ns-3 (as ns-2) multiplies the average by
  (1 - wq)^(m + 1), m = floor(ptc * time since the server found the queue empty), ptc =
  LinkBandwidth / (8 MeanPktSize); an arrival that finds the queue empty while the server
  is still busy takes a plain EWMA step with q = 0. The golden model multiplies by
  (1 - wq)^x, x = (time since the previous departure) * link_pps, from a table within
  2.5e-4. The idle period starts one service time after the previous departure, so ns-3's
  exponent is max(1, floor(x)) (the same rule, floored).
- count: the golden model's count is the packets since the last mark before this one
  (Floyd & Jacobson's analysis); ns-3's counts the arriving packet too; ns-3 decides only
  when the packet finds 2 or more queued; the first packet in the ramp after the average
  was below minth (or the queue held 1 or none) makes no decision and restarts the count at
  1; a forced drop keeps the count (ns-3 resets it only with Ns1Compat, ns-2 without).
- defaults: run_red sets every ns-3 default that differs from ours (MeanPktSize 500 and
  LinkBandwidth 1.5 Mb/s set ptc, LInterm 50, QW 0.002, Gentle and Wait true, MaxSize
  25p) from the golden model's configuration; RED in packet mode, as ours (in byte mode
  ns-3 scales the count and pb by packet size).
- ARED: ns-3 adapts max_p at the first arrival more than Interval after its last change,
  without bounds on the result; our controller every Interval, kept in [0.01, 0.5].
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import pytest

from control_plane import fixedpoint as fp
from control_plane.adaptation import ared_band, ared_step
from control_plane.algorithms.base import Link
from control_plane.algorithms.red import Ramp, decay, ewma, fires
from control_plane.aqm import PortConfig, Red, RedEcn, port_seed
from control_plane.dataplane import Ecn, Outcome, Region
from control_plane.golden import Arrival, PortModel, xorshift32
from support.ns3_oracle import Trace, bursts, idle_gaps, poisson, rate_step

PPS = 1000.0
PORT = 2
SEED = 7            # the golden model's run seed: its draws
RAMP = dict(minth=5.0, maxth=30.0, maxp=0.1, wq=0.002)


def mixed(trace: Trace) -> Trace:
    """Every fifth packet Not-ECT, the rest ECT(0): RED+ECN marks and drops."""
    return replace(trace, ecn=tuple(int(Ecn.NOT_ECT if k % 5 == 4 else Ecn.ECT0)
                                    for k in range(len(trace))))


TRACES = {
    # The reference: 20 000 Poisson arrivals at load 0.97, 1 000 packets/s.
    "steady": lambda: poisson(20_000, PPS, 0.97, seed=1),
    "overload": lambda: poisson(8_000, PPS, 1.2, seed=2),
    "bursts": lambda: bursts(8_000, PPS, seed=3, burst=(20, 60), gap=0.04),
    "idle-gaps": lambda: idle_gaps(8_000, PPS, seed=4),
    "rate-step": lambda: rate_step(8_000, PPS, seed=5),
}
# name -> (class, gentle, ecn)
CONFIGS = {"red": (Red, False, False), "red-gentle": (Red, True, False),
           "red-ecn": (RedEcn, False, True)}
CASES = [(t, c) for t in TRACES for c in CONFIGS]


@functools.cache
def trace_of(name: str, ecn: bool) -> Trace:
    trace = TRACES[name]()
    return mixed(trace) if ecn else trace


def draws(n: int) -> list[int]:
    """The golden model's draws, one per packet (prologue.p4 from the port's seed)."""
    x, out = port_seed(SEED, PORT), []
    for _ in range(n):
        x = xorshift32(x)
        out.append(x)
    return out


def config(name: str, wait: bool, **ramp):
    cls, gentle, ecn = CONFIGS[name]
    return cls(**(ramp or RAMP), gentle=gentle, wait=wait, limit=1_000_000), ecn


@functools.cache
def ns3_red(ns3, trace_name: str, name: str, wait: bool, scripted: bool, ramp=()):
    aqm, ecn = config(name, wait, **dict(ramp))
    trace = trace_of(trace_name, ecn)
    u = [x / 2**32 for x in draws(len(trace))] if scripted else None
    return ns3.run_red(trace, minth=aqm.minth, maxth=aqm.maxth, maxp=aqm.maxp, wq=aqm.wq,
                       gentle=aqm.gentle, wait=wait, ecn=ecn, draws=u)


def arrivals(trace: Trace, run) -> list[Arrival]:
    """What BMv2 would hand egress had its queue done what ns-3's did."""
    out, last = [], 0
    for t, pkt, ecn, size in zip(trace.arrivals_us, run.packets, trace.ecn, trace.sizes):
        if pkt.left_us is not None:
            last = round(pkt.left_us)
        assert last >= t, "ns-3 dropped a packet that found fewer than 2 queued"
        out.append(Arrival(qdepth=pkt.queued, enq_ts=t, deq_timedelta=last - t,
                           ecn=Ecn(ecn), length=size, egress_ts=last))
    return out


@functools.cache
def golden(ns3, trace_name: str, name: str, wait: bool, scripted: bool, ramp=()):
    aqm, ecn = config(name, wait, **dict(ramp))
    trace = trace_of(trace_name, ecn)
    run = ns3_red(ns3, trace_name, name, wait, scripted, ramp)
    model = PortModel(PortConfig(port=PORT, aqm=aqm, link_pps=PPS, seed=SEED).encode(),
                      epoch=1)
    return [model.process(a)[0] for a in arrivals(trace, run)], model


# ----- the average -------------------------------------------------------------------------

def idle_exponents(trace: Trace, t: int, last_departure: int) -> set[int]:
    """ns-3's exponent of (1 - wq) for an arrival that finds the queue empty: 1 while the
    server is busy, m + 1 after, m = floor(ptc * idle seconds) in doubles (both neighbours
    at an exact multiple, where the floor of the double product may land either side)."""
    idle = t - (last_departure + trace.service_at_ns(last_departure) // 1000)
    if idle <= 0:
        return {1}
    exact = idle * PPS / 1e6
    m = math.floor(PPS * (idle * 1000 / 1e9))
    return {m + 1, m} if exact == round(exact) else {m + 1}


def one_step_gaps(trace: Trace, run, aqm) -> tuple[list[float], list[float], int]:
    """For each packet, from ns-3's average before it: (ns-3's average after it - the
    golden model's step, the step's tolerance); and the idle arrivals checked."""
    encoded = PortConfig(port=PORT, aqm=aqm, link_pps=PPS).encode().encoded
    wq, table = encoded.action.params["wq"], encoded.tables[0].lookup
    w = aqm.wq
    gaps, tols, idle, last, prev = [], [], 0, 0, 0.0
    for k, (t, pkt) in enumerate(zip(trace.arrivals_us, run.packets)):
        start = round(prev * 2**32)
        if pkt.queued > 0:
            ours = fp.from_qavg(ewma(start, pkt.queued, wq))
            gaps.append(run.avg[k] - ours)
            tols.append(2**-32 * (3 + abs(pkt.queued - prev)) + 1e-14 * (1 + prev))
        else:
            idle += k > 0
            x = max(0, t - last) * PPS / 1e6
            ours = fp.from_qavg(decay(start, max(0, t - last), table))
            best = min((run.avg[k] - ours * (1 - w) ** (n - x) for n in idle_exponents(trace, t, last)),
                       key=abs)
            gaps.append(best)
            tols.append(2.5e-4 * ours + 4 * 2**-32 * (1 + prev))
        if pkt.left_us is not None:
            last = round(pkt.left_us)
        prev = run.avg[k]
    return gaps, tols, idle


@pytest.mark.parametrize("trace_name, name", CASES)
def test_each_average_step_is_ns3s_but_for_the_idle_rule(ns3, trace_name, name):
    """From ns-3's average before each packet, the golden model's step (EWMA in QAVG, or
    the idle_decay table's factor) gives ns-3's average after it within the fixed point's
    error - a busy step within 2^-32 (3 + |q - avg|) packets, wq being within 2^-33 of
    ns-3's -, once an idle step is corrected by (1 - wq)^(n - x): ns-3's exponent n against
    the golden model's x (module docstring). Within 2.5e-4 (the table's interpolation)."""
    aqm, ecn = config(name, wait=True)
    trace = trace_of(trace_name, ecn)
    run = ns3_red(ns3, trace_name, name, True, False)
    gaps, tols, idle = one_step_gaps(trace, run, aqm)
    bad = [(k, g, t) for k, (g, t) in enumerate(zip(gaps, tols)) if abs(g) > t]
    assert not bad, f"{len(bad)} steps off, first (packet, gap, tolerance): {bad[:3]}"
    assert idle > 0 and max(run.avg) > aqm.minth


def free_running_bound(trace: Trace, run, aqm, records) -> list[float]:
    """How far apart the two averages can drift, packet by packet: each step adds its own
    gap (the idle rule's |1 - (1 - wq)^(n - x)| of the average, the table's 2.5e-4, the
    rounding) and shrinks what came before by the step's factor; plus the QPKT reading's
    2^-16."""
    w, out, bound, last = aqm.wq, [], 0.0, 0
    for t, pkt, rec in zip(trace.arrivals_us, run.packets, records):
        avg = fp.from_qpkt(rec.avg) + 2**-16
        if pkt.queued > 0:
            bound = (1 - w) * bound + 2**-32 * (3 + pkt.queued + avg)
        else:
            x = max(0, t - last) * PPS / 1e6
            factor = (1 - w) ** x
            rule = max(abs(1 - (1 - w) ** (n - x)) for n in idle_exponents(trace, t, last))
            bound = factor * bound + avg * (rule + 2.6e-4)
        out.append(bound + 2**-16)
        if pkt.left_us is not None:
            last = round(pkt.left_us)
    return out


@pytest.mark.parametrize("trace_name, name", CASES)
def test_the_average_follows_ns3s_within_the_idle_rule(ns3, trace_name, name):
    """The golden model on its own (fed ns-3's queue): its average stays within the bound
    the named steps add up to (free_running_bound), packet by packet."""
    aqm, ecn = config(name, wait=True)
    trace = trace_of(trace_name, ecn)
    run = ns3_red(ns3, trace_name, name, True, False)
    records, _ = golden(ns3, trace_name, name, True, False)
    bound = free_running_bound(trace, run, aqm, records)
    diffs = [abs(fp.from_qpkt(r.avg) - a) for r, a in zip(records, run.avg)]
    worst = max(range(len(diffs)), key=lambda k: diffs[k] - bound[k])
    assert diffs[worst] <= bound[worst], (worst, diffs[worst], bound[worst])


@pytest.mark.parametrize("trace_name, name", CASES)
def test_every_decision_s_region_is_ns3s(ns3, trace_name, name):
    """ns-3's reason for each packet it marked or dropped names its region: "Forced" (the
    average at maxth, 2 maxth if gentle) and "Unforced" (the ramp). The golden model puts
    the packet in the same region, but within the two averages' bound of a threshold; and
    where it is forced and ns-3 did nothing, the packet found 1 or no packet queued (ns-3
    decides only with 2 or more)."""
    aqm, ecn = config(name, wait=True)
    trace = trace_of(trace_name, ecn)
    run = ns3_red(ns3, trace_name, name, True, False)
    records, _ = golden(ns3, trace_name, name, True, False)
    bound = free_running_bound(trace, run, aqm, records)
    hard = 2 * aqm.maxth if aqm.gentle else aqm.maxth
    near = lambda k, th: abs(run.avg[k] - th) <= bound[k]  # noqa: E731
    reasons = {}
    for k, (pkt, rec) in enumerate(zip(run.packets, records)):
        if near(k, aqm.minth) or near(k, hard):
            continue
        kind = pkt.reason.split(" ")[0] if pkt.reason else ""
        reasons[kind] = reasons.get(kind, 0) + 1
        if kind == "Forced":
            assert rec.region == Region.FORCED, (k, pkt, rec.describe())
        elif kind == "Unforced":
            assert rec.region in (Region.A, Region.B), (k, pkt, rec.describe())
        elif rec.region == Region.FORCED:
            assert pkt.queued <= 1, (k, pkt, rec.describe())
    assert reasons.get("Unforced", 0) > 0


# ----- decisions: the count rules ----------------------------------------------------------

COUNTS_ARRIVAL = "count includes the arrival"
TWO_QUEUED = "decides only with 2 or more queued"
RESTART = "restarts the count above minth without deciding"
FORCED_KEEPS = "a forced drop keeps the count"
NS3_RULES = frozenset({COUNTS_ARRIVAL, TWO_QUEUED, RESTART, FORCED_KEEPS})


def replica(avgs, queued, rnds, ramp: Ramp, rules=NS3_RULES) -> list[str]:
    """The golden model's decision arithmetic (Ramp.probability, fires) with the count kept
    by ns-3's rules (the named ones in `rules`; none: the golden model's marker).
    Per packet: "fire", "forced" or ""."""
    out, count, restart = [], 0, True
    for avg, q, rnd in zip(avgs, queued, rnds):
        region, pb = ramp.probability(avg)
        if region == Region.NONE or (TWO_QUEUED in rules and q <= 1):
            out.append("")
            count, restart = (count + 1 if RESTART in rules else 0), True
        elif region == Region.FORCED:
            out.append("forced")
            count = count + 1 if FORCED_KEEPS in rules else 0
        elif restart and RESTART in rules:
            out.append("")
            count, restart = 1, False
        else:
            fire = fires(count + (COUNTS_ARRIVAL in rules), pb, rnd, ramp.wait)
            out.append("fire" if fire else "")
            count, restart = (0 if fire else count + 1), False
    return out


def ns3_decision(reason: str) -> str:
    return {"Unforced": "fire", "Forced": "forced"}.get(reason.split(" ")[0], "")


def pa(avg: float, count: int, aqm, wait: bool) -> float:
    """ns-3's probability for a packet (CalculatePNew, ModifyP) in doubles."""
    if avg < aqm.maxth:
        pb = aqm.maxp * (avg - aqm.minth) / (aqm.maxth - aqm.minth)
    else:
        pb = (1 - aqm.maxp) / aqm.maxth * avg + 2 * aqm.maxp - 1
    s = count * pb
    if wait:
        return 0.0 if s < 1 else pb / (2 - s) if s < 2 else 1.0
    return pb / (1 - s) if s < 1 else 1.0


def too_close(run, k: int, u: float, aqm, wait: bool) -> bool:
    """The draw is within the fixed point's reach of ns-3's probability: pb moves by at
    most slope * 2^-16 + 2^-31 between ns-3's average and its QPKT reading."""
    count = (run.count[k - 1] if k else 0) + 1
    slope = max(aqm.maxp / (aqm.maxth - aqm.minth), (1 - aqm.maxp) / aqm.maxth)
    delta = slope * 2**-16 + 2**-31
    lo, hi = (pa(run.avg[k] + d / slope, count, aqm, wait) for d in (-delta, delta))
    return min(lo, hi) - 1e-12 <= u <= max(lo, hi) + 1e-12


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
@pytest.mark.parametrize("trace_name, name", CASES)
def test_with_the_same_draws_every_decision_is_ns3s_under_its_count_rules(
        ns3, trace_name, name, wait):
    """ns-3 decides with the golden model's draws: its every decision (mark or drop,
    forced, none) is the golden model's arithmetic - the ramp, and the marker's rule with
    or without wait - given ns-3's average and the count kept by the four named rules
    (NS3_RULES), except where a draw falls within the fixed point's reach of ns-3's
    probability. So those rules are the whole gap between the two deciders."""
    aqm, ecn = config(name, wait)
    run = ns3_red(ns3, trace_name, name, wait, True)
    trace = trace_of(trace_name, ecn)
    rnds = draws(len(trace))
    ramp = type(aqm).model(aqm.encode(Link(PPS))).ramp
    ours = replica([math.floor(a * 2**16) for a in run.avg],
                   [p.queued for p in run.packets], rnds, ramp)
    theirs = [ns3_decision(p.reason) for p in run.packets]
    off = [k for k, (a, b) in enumerate(zip(ours, theirs))
           if a != b and not too_close(run, k, rnds[k] / 2**32, aqm, wait)]
    assert not off, [(k, ours[k], theirs[k], run.avg[k], run.count[k - 1]) for k in off[:5]]
    close = sum(a != b for a, b in zip(ours, theirs))
    assert close <= max(1, len(trace) // 2000)
    assert theirs.count("fire") > 0


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
@pytest.mark.parametrize("trace_name, name", CASES)
def test_without_ns3s_count_rules_the_decisions_are_the_golden_model_s(
        ns3, trace_name, name, wait):
    """The same replica with none of the rules, on the golden model's own average, is the
    golden model's marker packet by packet: the named rules are all that separates it from
    ns-3's decisions above."""
    aqm, _ = config(name, wait)
    records, model = golden(ns3, trace_name, name, wait, True)
    ours = replica([r.avg for r in records], [r.qdepth for r in records],
                   [r.rnd for r in records], model.algorithm.ramp, rules=frozenset())
    want = ["forced" if r.region == Region.FORCED else
            "fire" if Outcome(r.outcome) in (Outcome.MARK, Outcome.PROB_DROP) else ""
            for r in records]
    assert ours == want
    assert [r.rnd for r in records] == draws(len(records))


# ----- marks from independent streams ------------------------------------------------------

def chi2_bound(k: int) -> float:
    """The chi-square quantile at p = 0.001 with k degrees of freedom (Wilson-Hilferty)."""
    return k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3


WINDOW = 2000


@pytest.mark.parametrize("wait", [True, False], ids=["wait", "no-wait"])
@pytest.mark.parametrize("trace_name", list(TRACES))
def test_marks_per_window_match_ns3s_own_stream(ns3, trace_name, wait):
    """RED+ECN on ECT(0) packets only (marks never change the queue): ns-3 with its own
    random stream against the replica (ns-3's count rules, the golden model's draws) on
    ns-3's average. Per window of 2 000 packets, sum (a - b)^2 / (a + b) stays below the
    chi-square bound at p = 0.001 (windows with marks as degrees of freedom; marks spaced
    by the count are less variable than Poisson ones, so the bound is conservative), and
    the totals within 3.29 sqrt(a + b)."""
    trace = TRACES[trace_name]()
    run = ns3.run_red(trace, **RAMP, wait=wait, ecn=True)
    aqm = RedEcn(**RAMP, wait=wait)
    ramp = RedEcn.model(aqm.encode(Link(PPS))).ramp
    ours = replica([math.floor(a * 2**16) for a in run.avg],
                   [p.queued for p in run.packets], draws(len(trace)), ramp)
    a_w, b_w = [], []
    for start in range(0, len(trace), WINDOW):
        a_w.append(sum(p.reason == "Unforced mark" for p in run.packets[start:start + WINDOW]))
        b_w.append(ours[start:start + WINDOW].count("fire"))
    stat = sum((a - b) ** 2 / (a + b) for a, b in zip(a_w, b_w) if a + b)
    windows = sum(1 for a, b in zip(a_w, b_w) if a + b)
    assert windows and stat <= chi2_bound(windows), (a_w, b_w)
    a, b = sum(a_w), sum(b_w)
    assert abs(a - b) <= 3.29 * math.sqrt(a + b), (a, b)


# ----- ARED --------------------------------------------------------------------------------

ARED = dict(minth=5.0, maxth=30.0, maxp=0.1, wq=0.002)


def ared_with_ns3s_interval(times_us, avgs, maxp: float, interval_us: int) -> list[float]:
    """control_plane.adaptation.ared_step applied as ns-3 applies its step: at the first
    arrival more than an interval after the last change (or 0), on the average after it."""
    out, last = [], 0
    for t, avg in zip(times_us, avgs):
        if t > last + interval_us:
            step = ared_step(maxp, avg, ARED["minth"], ARED["maxth"])
            if step.value != maxp:
                maxp, last = step.value, t
        out.append(maxp)
    return out


# (load, service rate factor at the step): above the band then below it, within [0.01,
# 0.5]; below the band until ns-3 leaves [0.01, 0.5], then above it.
ARED_LOADS = {"rises-then-falls": (1.2, 1.6), "falls-to-the-floor": (0.9, 0.75)}


@pytest.mark.parametrize("profile", list(ARED_LOADS))
def test_ared_steps_are_ns3s_given_its_interval_rule(ns3, profile):
    """ns-3's adaptive RED (AdaptMaxP, Interval 0.5 s, Alpha 0.01, Beta 0.9, Top 0.5,
    Bottom 0.01) on a load that crosses the target band both ways (a rate step): given
    ns-3's averages, our ARED step (control_plane/adaptation.py) applied when ns-3 applies
    its own - at the first arrival more than 0.5 s after the last change - gives ns-3's
    max_p after every packet, until ns-3 leaves [0.01, 0.5] (it has no bounds on the
    result; ours is kept in them), where ours is ns-3's clamped. Our controller's other
    rule - a step every 0.5 s, changed or not - is the difference named here: it takes
    steps ns-3 does not."""
    load, factor = ARED_LOADS[profile]
    trace = rate_step(24_000, PPS, seed=6, load=load, factor=factor)
    run = ns3.run_red(trace, **ARED, wait=True, ecn=False,
                      attributes={"AdaptMaxP": "true", "Interval": "500ms", "Alpha": "0.01",
                                  "Beta": "0.9", "Top": "0.5", "Bottom": "0.01"})
    ours = ared_with_ns3s_interval(trace.arrivals_us, run.avg, ARED["maxp"], 500_000)
    low, high = ared_band(ARED["minth"], ARED["maxth"])
    assert min(run.avg) < low and max(run.avg) > high
    changes = [k for k in range(1, len(ours)) if run.max_p[k] != run.max_p[k - 1]]
    assert sum(run.max_p[k] > run.max_p[k - 1] for k in changes) > 0
    assert sum(run.max_p[k] < run.max_p[k - 1] for k in changes) > 0
    out = next((k for k, p in enumerate(run.max_p) if not 0.01 <= p <= 0.5), len(ours))
    assert (out < len(ours)) == (profile == "falls-to-the-floor")
    for k in range(out):
        assert ours[k] == pytest.approx(run.max_p[k], rel=1e-12), k
    if out < len(ours):
        assert ours[out] == pytest.approx(min(0.5, max(0.01, run.max_p[out])), rel=1e-12)
    # Every 0.5 s whatever happened: a different sequence of steps.
    timer, maxp, tick, k = [], ARED["maxp"], 500_000, 0
    while tick <= trace.arrivals_us[-1]:
        while k + 1 < len(trace) and trace.arrivals_us[k + 1] <= tick:
            k += 1
        maxp = ared_step(maxp, run.avg[k], ARED["minth"], ARED["maxth"]).value
        timer.append((maxp, run.max_p[k]))
        tick += 500_000
    assert any(abs(a - b) > 1e-9 for a, b in timer)
