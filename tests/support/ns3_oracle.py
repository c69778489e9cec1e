"""ns-3's queue discs (RedQueueDisc, CoDelQueueDisc, PieQueueDisc) as an oracle for the
golden models: the same packet trace, fed to ns-3 by a small C++ driver (ns3_oracle.cc,
compiled at run time with cppyy).

ns-3 comes from PyPI's `ns3` wheel (the test extra; Linux x86-64, Python 3.10-3.13),
cppyy compiles the driver with the system's C++ standard library headers (Debian's g++).
load() loads only the four libraries the queue discs need (core, network, stats,
traffic-control), once per process; where it cannot, it raises Ns3Unavailable saying why,
and the tests skip with that reason.

A Trace is the packets offered (arrival times on whole microseconds, sizes, ECN
codepoints) and the server: one packet at a time, each held for 1 / the rate in force
when it starts, as BMv2's rate-limited queue serves (`set_queue_rate`). ns-3's queue discs
take a packet at arrival (RED and PIE decide there) and give one to the server when it is
free (CoDel decides there); a server that finds the queue disc empty asks again after its
service time, as ns-3's devices do, which starts RED's idle time and ends CoDel's dropping
state.

    from support.ns3_oracle import poisson, run_red, run_codel, run_pie
    trace = poisson(n=5000, pps=1000.0, load=1.1, seed=1)
    red = run_red(trace, minth=5, maxth=15, maxp=0.1, wq=0.002, wait=True, ecn=True)
    red.avg[i], red.packets[i].reason                 # after packet i's arrival
    codel = run_codel(trace, target=0.005, interval=0.1, ecn=True)
    codel.states[k].count, .dropping, .drop_next_us   # after each packet that leaves
    pie = run_pie(trace, target=0.015, tupdate=0.015, ecn=True)
    pie.updates[k].prob, .qdelay_us, .burst_us        # after each update (every tupdate)

Every run_* takes `attributes` (ns-3 attribute name -> value text) for anything else;
the defaults it sets are the arguments it names. ns-3's own defaults, and where they
differ from the RFCs, are listed at run_codel and run_pie.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

from experiments.ns3.loader import QUEUE_DISCS, Ns3Unavailable
from experiments.ns3.loader import load as load_ns3

__all__ = ["Ns3Unavailable", "load", "poisson", "bursts", "idle_gaps", "rate_step",
           "run_red", "run_codel", "run_pie"]
DRIVER = Path(__file__).with_suffix(".cc")
# A queue disc limit no trace reaches: every drop is the algorithm's.
UNLIMITED = "1000000p"
ECT0 = 2


def load():
    """The compiled driver's namespace (cppyy), loaded once per process, with only the
    libraries the queue discs need (experiments/ns3/loader.py says why it cannot)."""
    return load_ns3(DRIVER, QUEUE_DISCS).p4aqm_ns3


# ----- traces ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trace:
    """Packets offered to one queue, and the server's rate: rates[k] = (from_us, packets/s),
    the first from 0. Service times are whole nanoseconds."""

    arrivals_us: tuple[int, ...]
    sizes: tuple[int, ...]
    ecn: tuple[int, ...]
    rates: tuple[tuple[int, float], ...]

    def __post_init__(self) -> None:
        n = len(self.arrivals_us)
        if len(self.sizes) != n or len(self.ecn) != n:
            raise ValueError("arrivals, sizes and ecn must have one entry per packet")
        if any(b < a for a, b in zip(self.arrivals_us, self.arrivals_us[1:])):
            raise ValueError("arrival times must not decrease")
        if not self.rates or self.rates[0][0] != 0:
            raise ValueError("the first rate must start at 0")

    def __len__(self) -> int:
        return len(self.arrivals_us)

    @staticmethod
    def service_ns(pps: float) -> int:
        return round(1e9 / pps)

    def service_at_ns(self, t_us: int) -> int:
        """The service time of a packet that starts service at t_us."""
        return self.service_ns([pps for start, pps in self.rates if start <= t_us][-1])


def _trace(times: list[float], rates, ecn: int, size: int) -> Trace:
    arrivals = tuple(round(t * 1e6) for t in times)
    return Trace(arrivals, (size,) * len(arrivals), (ecn,) * len(arrivals), tuple(rates))


def _poisson_times(rng: random.Random, n: int, rate: float, start: float = 0.0) -> list[float]:
    t, out = start, []
    for _ in range(n):
        t += rng.expovariate(rate)
        out.append(t)
    return out


def poisson(n: int, pps: float, load: float, seed: int, ecn: int = ECT0,
            size: int = 1000) -> Trace:
    """Steady load: n Poisson arrivals at load * pps, served at pps."""
    return _trace(_poisson_times(random.Random(seed), n, load * pps), [(0, pps)], ecn, size)


def bursts(n: int, pps: float, seed: int, burst: tuple[int, int] = (5, 40),
           gap: float = 0.03, ecn: int = ECT0, size: int = 1000) -> Trace:
    """Bursts of a random size in `burst`, each packet 10 us after the last, separated by
    exponential gaps of mean `gap` s."""
    rng, t, times = random.Random(seed), 0.0, []
    while len(times) < n:
        t += rng.expovariate(1 / gap)
        for _ in range(rng.randint(*burst)):
            t += 10e-6
            times.append(t)
    return _trace(times[:n], [(0, pps)], ecn, size)


def idle_gaps(n: int, pps: float, seed: int, on: float = 0.4, off: float = 0.3,
              load: float = 1.3, ecn: int = ECT0, size: int = 1000) -> Trace:
    """Overload for `on` s, silence for `off` s, again: the queue drains and stays empty."""
    rng, t, times = random.Random(seed), 0.0, []
    while len(times) < n:
        times += [x for x in _poisson_times(rng, round(1.5 * on * load * pps), load * pps, t)
                  if x < t + on]
        t += on + off
    return _trace(times[:n], [(0, pps)], ecn, size)


def rate_step(n: int, pps: float, seed: int, load: float = 0.8, step_at: float | None = None,
              factor: float = 0.5, ecn: int = ECT0, size: int = 1000) -> Trace:
    """Poisson arrivals at load * pps; the service rate drops to factor * pps halfway (or at
    step_at s), so the queue that was stable overflows."""
    times = _poisson_times(random.Random(seed), n, load * pps)
    at = times[n // 2] if step_at is None else step_at
    return _trace(times, [(0, pps), (round(at * 1e6), factor * pps)], ecn, size)


# ----- runs --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Packet:
    """One packet as ns-3 treated it. left_us: when it left the queue disc (served, or
    dropped at dequeue: CoDel), None if dropped on arrival. reason: ns-3's drop or mark
    reason (e.g. RedQueueDisc's "Unforced mark"), "" for neither."""

    queued: int
    left_us: float | None
    reason: str
    ecn_out: int


@dataclass(frozen=True)
class RedRun:
    """RedQueueDisc, after each packet's arrival: avg (m_qAvg), count (m_count), old (m_old:
    0 means the next packet above minth restarts the count without a decision), max_p
    (m_curMaxP, which ARED adapts). draws_used: draws taken from `draws`."""

    packets: list[Packet]
    avg: list[float]
    count: list[int]
    old: list[int]
    max_p: list[float]
    draws_used: int


@dataclass(frozen=True)
class CodelState:
    """CoDelQueueDisc after packet `packet` left it: count, lastcount, dropping and the
    next drop time (CoDel's clock counts 1.024 us: drop_next_us = that clock * 1.024)."""

    packet: int
    at_us: float
    count: int
    lastcount: int
    dropping: bool
    drop_next_us: float


@dataclass(frozen=True)
class CodelRun:
    packets: list[Packet]
    states: list[CodelState]


@dataclass(frozen=True)
class PieUpdate:
    """PieQueueDisc right after the update at at_us: the drop probability, the queue delay
    the update used (the next update's qdelay_old), the burst allowance left, and the burst
    state (0 NO_BURST, 1 IN_BURST, 2 IN_BURST_PROTECTING)."""

    at_us: float
    prob: float
    qdelay_us: float
    burst_us: float
    burst_state: int


@dataclass(frozen=True)
class PieRun:
    packets: list[Packet]
    updates: list[PieUpdate]
    draws_used: int


def _input(trace: Trace, attributes: dict[str, str], draws=None, stream: int = 1):
    """The driver's Input: attributes, the trace in nanoseconds, the draws (checked)."""
    if draws is not None and len(draws) != len(trace):
        raise ValueError(f"draws: one per packet, {len(trace)}, got {len(draws)}")
    import cppyy
    vec = cppyy.gbl.std.vector
    inp = load().Input()
    inp.names = vec[cppyy.gbl.std.string](list(attributes))
    inp.values = vec[cppyy.gbl.std.string]([str(v) for v in attributes.values()])
    inp.arrivals = vec["int64_t"]([t * 1000 for t in trace.arrivals_us])
    inp.sizes = vec["uint32_t"](trace.sizes)
    inp.ecn = vec["uint32_t"](trace.ecn)
    inp.rate_from = vec["int64_t"]([start * 1000 for start, _ in trace.rates])
    inp.service = vec["int64_t"]([trace.service_ns(pps) for _, pps in trace.rates])
    inp.draws = vec["double"](list(draws or ()))
    inp.stream = stream
    return inp


def _packets(run) -> list[Packet]:
    reasons = [str(r) for r in run.reasons]
    return [Packet(q, None if t < 0 else t / 1000, reasons[k] if k >= 0 else "", e)
            for q, t, k, e in zip(run.queued, run.left, run.reason, run.ecn_out)]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def run_red(trace: Trace, *, minth: float, maxth: float, maxp: float, wq: float,
            gentle: bool = False, wait: bool = True, ecn: bool = False,
            link_pps: float | None = None, mean_pkt_size: int = 1000,
            draws=None, stream: int = 1, attributes: dict[str, str] | None = None) -> RedRun:
    """RedQueueDisc in packet mode on the trace.

    ns-3's defaults that differ from our RED's (and are set here from the arguments):
    Gentle true, Wait true (ns-2's wait_), QW 0.002, LInterm 50 (maxp 0.02), MinTh 5,
    MaxTh 15, MaxSize 25p (here: unlimited), UseHardDrop true (above maxth ECN packets are
    dropped, as our red_ecn does). The idle decay's packet rate is LinkBandwidth /
    (8 MeanPktSize): set from link_pps (default: the trace's first rate).
    draws: one uniform in [0, 1) per packet, used in place of ns-3's stream when RED
    draws for that packet (in DropEarly) - e.g. the golden model's rnd / 2^32; without
    them RED draws from ns-3's stream number `stream` (run 1 of seed 1).
    """
    pps = trace.rates[0][1] if link_pps is None else link_pps
    attrs = {"MinTh": repr(float(minth)), "MaxTh": repr(float(maxth)),
             "LInterm": repr(1.0 / maxp), "QW": repr(float(wq)), "Gentle": _flag(gentle),
             "Wait": _flag(wait), "UseEcn": _flag(ecn), "MaxSize": UNLIMITED,
             "MeanPktSize": str(mean_pkt_size),
             "LinkBandwidth": f"{round(pps * 8 * mean_pkt_size)}bps",
             **(attributes or {})}
    run = load().RunRed(_input(trace, attrs, draws, stream))
    return RedRun(_packets(run), list(run.avg), list(run.count), list(run.old),
                  list(run.max_p), int(run.draws_used))


def run_codel(trace: Trace, *, target: float = 0.005, interval: float = 0.1,
              ecn: bool = False, min_bytes: int | None = None,
              attributes: dict[str, str] | None = None) -> CodelRun:
    """CoDelQueueDisc on the trace (target and interval in seconds).

    ns-3's defaults: Target 5 ms, Interval 100 ms (RFC 8289's), UseEcn false, CeThreshold
    off, UseL4s false, MaxSize 1 500 000 bytes (here: unlimited packets), MinBytes 1500:
    a packet may be dropped only while at least MinBytes stay queued behind it (RFC 8289
    asks for more than one MTU: `bytes() <= maxpacket` keeps it); min_bytes None keeps
    1500. Where ns-3 differs from RFC 8289: an ECN mark schedules the next one from now
    (ControlLaw(now)), a drop from the previous drop_next; after a drop the next packet is
    taken at once (no service time is spent on a dropped packet); the time base is
    nanoseconds >> 10; 1/sqrt(count) is Linux's Newton step (one step per count change),
    not an exact root. Sojourn = dequeue time - enqueue time of the packet.
    """
    attrs = {"Target": f"{round(target * 1e9)}ns", "Interval": f"{round(interval * 1e9)}ns",
             "UseEcn": _flag(ecn), "MaxSize": UNLIMITED,
             **({} if min_bytes is None else {"MinBytes": str(min_bytes)}),
             **(attributes or {})}
    run = load().RunCoDel(_input(trace, attrs))
    states = [CodelState(i, run.left[i] / 1000, c, lc, bool(d), dn * 1.024)
              for i, c, lc, d, dn in zip(run.codel_id, run.codel_count, run.codel_lastcount,
                                         run.codel_dropping, run.codel_drop_next)]
    return CodelRun(_packets(run), states)


def run_pie(trace: Trace, *, target: float = 0.015, tupdate: float = 0.015,
            alpha: float = 0.125, beta: float = 1.25, max_burst: float = 0.15,
            ecn: bool = False, derandomize: bool = False, cap_drop_adjustment: bool = True,
            dq_rate_estimator: bool = False, limit: str = UNLIMITED, draws=None,
            stream: int = 1, until: float | None = None,
            attributes: dict[str, str] | None = None) -> PieRun:
    """PieQueueDisc in packet mode on the trace (times in seconds), sampled after each
    probability update (at 0, tupdate, 2 tupdate, ... until `until`, default the last
    arrival + 1 s).

    ns-3's defaults: QueueDelayReference 15 ms, Tupdate 15 ms, A 0.125, B 1.25,
    MaxBurstAllowance 150 ms, MeanPktSize 1000, MaxSize 25p (here: unlimited),
    UseEcn false, MarkEcnThreshold 0.1 (marks while p < 0.1, drops from 0.1 on),
    UseDerandomization false, UseCapDropAdjustment true (RFC 8033 5.5: a step is at most
    0.02 once p >= 0.1), UseDequeueRateEstimator false: the queue delay is the sojourn of
    the latest packet to leave (0 if it left the queue empty), not RFC 8033's departure
    rate estimate, and it stays as it was while nothing leaves. Where ns-3 differs from
    RFC 8033: the burst allowance is armed by the first packet that meets PIE with no
    burst state (not at start), is spent 15 ms per update, and re-arms only after the
    queue stayed quiet (qdelay and qdelay_old below target / 2, p = 0) for 1.5 s of
    updates; the work-conserving safeguard (no drop while qdelay_old < target / 2 and
    p < 0.2, or with 2 packets or fewer queued) is RFC 8033's; no 250 ms rule.
    """
    attrs = {"QueueDelayReference": f"{round(target * 1e9)}ns",
             "Tupdate": f"{round(tupdate * 1e9)}ns", "A": repr(alpha), "B": repr(beta),
             "MaxBurstAllowance": f"{round(max_burst * 1e9)}ns", "UseEcn": _flag(ecn),
             "UseDerandomization": _flag(derandomize),
             "UseCapDropAdjustment": _flag(cap_drop_adjustment),
             "UseDequeueRateEstimator": _flag(dq_rate_estimator), "MaxSize": limit,
             **(attributes or {})}
    end = (trace.arrivals_us[-1] / 1e6 + 1.0) if until is None else until
    tupdate_ns = round(tupdate * 1e9)
    run = load().RunPie(_input(trace, attrs, draws, stream), tupdate_ns,
                        math.floor(end * 1e9 / tupdate_ns) * tupdate_ns)
    updates = [PieUpdate(at / 1000, p, q / 1000, b / 1000, s)
               for at, p, q, b, s in zip(run.pie_at, run.pie_prob, run.pie_qdelay,
                                         run.pie_burst, run.pie_burst_state)]
    return PieRun(_packets(run), updates, int(run.draws_used))
