"""CoDel: configuration, the control law's table, the model against RFC 8289's pseudocode
packet by packet, and the switch against the model."""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass

import pytest

from support.conformance import (PATTERN, PORT, RATE_PPS, Contract, check_against_model,
                         check_ecn_rules, programs, run_pattern, tally)
from control_plane.algorithms.base import Link
from control_plane.algorithms.codel import (ABOVE, AFTER_DROP, AFTER_ENTRY, AFTER_MARK,
                                            DROPPING, law_table)
from control_plane.aqm import Codel, ConfigError, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from support.modeling import run_model
from support.traffic import paced


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Codel(target=-0.001), "target must be in", id="target-negative"),
    pytest.param(Codel(target=math.nan), "target must be", id="target-nan"),
    pytest.param(Codel(interval=0.0), "interval must be in", id="interval-zero"),
    pytest.param(Codel(interval=1e-7), "at least 1 microsecond", id="interval-below-1us"),
    pytest.param(Codel(interval=61.0), "interval must be in", id="interval-too-long"),
    pytest.param(Codel(min_backlog=-1), "min_backlog", id="min-backlog-negative"),
    pytest.param(Codel(min_backlog=1.5), "min_backlog", id="min-backlog-fraction"),
    pytest.param(Codel(min_backlog=True), "min_backlog", id="min-backlog-bool"),
    pytest.param(Codel(ecn=None), "ecn", id="ecn-not-bool"),
    pytest.param(Codel(limit=0), "limit", id="limit-zero"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_rfc_8289_defaults():
    encoded = Codel().encode(Link(1000.0))
    p = encoded.action.params
    assert (p["target"], p["interval"], p["reentry"], p["min_backlog"]) == (
        5000, 100_000, 1_600_000, 1)
    assert p["ecn_mode"] == 1 and Codel(ecn=False).encode(Link(1.0)).action.params["ecn_mode"] == 0
    (table,) = encoded.tables
    assert table.table == "codel_law" and len(table.lookup.rows) <= 1024


@pytest.mark.parametrize("interval", [0.1, 0.005, 3.0], ids=["100ms", "5ms", "3s"])
def test_control_law_table_is_within_1_5us_and_a_ten_thousandth_over_every_count(interval):
    """interval / sqrt(count) from the LPM table: exact below 64, and within 1.5 us plus
    1e-4 of the exact value at every bucket's start, end and middle up to 2^32 - 1, and at
    random counts in between."""
    us = round(interval * 1e6)
    lookup = law_table(us).lookup
    counts = set(range(1, 64))
    for first, length in lookup.prefixes:
        width = 1 << (32 - length)
        counts |= {first, first + width // 2, first + width - 1}
    rng = random.Random(8289)
    counts |= {rng.randrange(1, 1 << 32) for _ in range(20_000)}
    for count in counts:
        exact = us / math.sqrt(count)
        error = abs(lookup.value(count) - exact)
        assert error <= 1.5 + 1e-4 * exact, (count, lookup.value(count), exact)
        if count < 64:
            assert lookup.value(count) == round(exact)


# ----- RFC 8289's pseudocode, as a queue -----------------------------------------------------

@dataclass
class Dequeued:
    ip_id: int
    ecn: Ecn
    arrival: int
    now: int
    remaining: int
    fate: Outcome = Outcome.PASS


class RfcCodel:
    """RFC 8289 section 5's dodequeue() and dequeue(), line by line, over a FIFO served one
    packet per service time; a drop inside dequeue() takes no time. ECN as Linux's codel
    (the RFC leaves it to implementations): an ECN-capable packet is marked instead of
    dropped, and after a mark in the dropping state drop_next moves at once. maxpacket is
    counted in packets. control_law() is given (the switch's table), so times compare
    exactly; the table's own error is tested above."""

    def __init__(self, target: int, interval: int, maxpacket: int, ecn: bool, law):
        self.target, self.interval, self.maxpacket, self.ecn = target, interval, maxpacket, ecn
        self.law = law
        self.first_above_time = self.drop_next = self.count = self.lastcount = 0
        self.dropping = False
        self.queue: deque[tuple[int, int, Ecn]] = deque()
        self.log: list[Dequeued] = []
        self.calls: list[tuple[int, tuple]] = []   # (first log index, state at the call)

    def state(self) -> tuple:
        return (self.count, self.lastcount, self.dropping, self.drop_next)

    def control_law(self, t: int, count: int) -> int:
        return t + self.law(count)

    def dodequeue(self, now: int) -> tuple[Dequeued | None, bool]:
        if not self.queue:
            self.first_above_time = 0
            return None, False
        ip_id, arrival, ecn = self.queue.popleft()
        p = Dequeued(ip_id, ecn, arrival, now, len(self.queue))
        self.log.append(p)
        ok_to_drop = False
        if now - arrival < self.target or len(self.queue) <= self.maxpacket:
            self.first_above_time = 0
        elif self.first_above_time == 0:
            self.first_above_time = now + self.interval
        elif now >= self.first_above_time:
            ok_to_drop = True
        return p, ok_to_drop

    def marks(self, p: Dequeued) -> bool:
        return self.ecn and p.ecn != Ecn.NOT_ECT

    def dequeue(self, now: int) -> Dequeued | None:
        self.calls.append((len(self.log), self.state()))
        p, ok_to_drop = self.dodequeue(now)
        if self.dropping:
            if not ok_to_drop:
                self.dropping = False
            while now >= self.drop_next and self.dropping:
                self.count += 1
                if self.marks(p):
                    p.fate = Outcome.MARK
                    self.drop_next = self.control_law(self.drop_next, self.count)
                    return p
                p.fate = Outcome.PROB_DROP
                p, ok_to_drop = self.dodequeue(now)
                if not ok_to_drop:
                    self.dropping = False
                else:
                    self.drop_next = self.control_law(self.drop_next, self.count)
        elif ok_to_drop:
            if self.marks(p):
                p.fate = Outcome.MARK
            else:
                p.fate = Outcome.PROB_DROP
                p, _ = self.dodequeue(now)
            self.dropping = True
            delta = self.count - self.lastcount
            self.count = 1
            if delta > 1 and now - self.drop_next < 16 * self.interval:
                self.count = delta
            self.drop_next = self.control_law(now, self.count)
            self.lastcount = self.count
        return p

    def serve(self, arrivals: list[tuple[int, Ecn]], service_us) -> None:
        """Every packet arrives at its time; the link dequeues when free and not empty."""
        pending = deque(enumerate(arrivals, start=1))
        free = 0
        while pending or self.queue:
            now = max(free, self.queue[0][1] if self.queue else pending[0][1][0])
            while pending and pending[0][1][0] <= now:
                ip_id, (t, ecn) = pending.popleft()
                self.queue.append((ip_id, t, ecn))
            if self.dequeue(now) is not None:
                free = now + service_us(now)


def poisson(rate_pps: float, seconds: float, rng: random.Random, start_us: int = 1_000_000,
            ecn_cycle=(Ecn.ECT0,)) -> list[tuple[int, Ecn]]:
    t, out = float(start_us), []
    while t < start_us + seconds * 1e6:
        t += rng.expovariate(rate_pps) * 1e6
        out.append((int(t), ecn_cycle[len(out) % len(ecn_cycle)]))
    return out


def traces() -> dict[str, tuple[list[tuple[int, Ecn]], object]]:
    """Seeded traces into a 1 000 packets/s link (1 ms per packet): steady overload,
    bursts with idle gaps, a rate step (the link halves for 3 s), all with mixed codepoints."""
    rng = random.Random(2024)
    mixed = (Ecn.ECT0, Ecn.NOT_ECT, Ecn.ECT1, Ecn.ECT0, Ecn.CE, Ecn.NOT_ECT)
    steady = poisson(1150, 20, rng, ecn_cycle=mixed)
    bursts = []
    for k in range(12):
        start = 1_000_000 + k * 1_500_000
        bursts += [(start + i * 400, mixed[i % len(mixed)]) for i in range(600)]
    step = poisson(900, 15, rng, ecn_cycle=mixed)
    return {"steady-overload": (steady, lambda now: 1000),
            "bursts-and-idle": (bursts, lambda now: 1000),
            "rate-step": (step, lambda now: 2000 if 4_000_000 <= now < 7_000_000 else 1000)}


@pytest.mark.parametrize("ecn", [True, False], ids=["ecn", "drop"])
@pytest.mark.parametrize("trace", list(traces()))
def test_model_equals_rfc_8289_packet_by_packet(trace, ecn):
    """The same dequeues through RFC 8289's pseudocode and through the model: every
    packet's fate is the same, and at every dequeue() call of the RFC's queue, its count,
    lastcount, dropping and drop_next are the model's after the packet before."""
    arrivals, service = traces()[trace]
    aqm = Codel(target=0.005, interval=0.1, ecn=ecn, limit=100_000)
    law = law_table(100_000).lookup.value
    rfc = RfcCodel(target=5000, interval=100_000, maxpacket=1, ecn=ecn, law=law)
    rfc.serve(arrivals, service)
    packets = [Arrival(qdepth=0, enq_ts=p.arrival, deq_timedelta=p.now - p.arrival,
                       ecn=p.ecn, length=100, ip_id=p.ip_id, egress_ts=p.now,
                       deq_qdepth=p.remaining) for p in rfc.log]
    _, recs = run_model(aqm, packets)
    assert [Outcome(r.outcome) for r in recs] == [p.fate for p in rfc.log]
    for index, (count, lastcount, dropping, drop_next) in rfc.calls[1:]:
        r = recs[index - 1]
        assert (r.count, r.state1, bool(r.avg & DROPPING)) == (count, lastcount, dropping), index
        # After a mark the model's drop_next advances at the next packet, before it is judged.
        pending = law(r.count) if r.avg & AFTER_MARK else 0
        if dropping:
            assert (r.state0 + pending) & 0xFFFF_FFFF == drop_next & 0xFFFF_FFFF, index
    fates = {p.fate for p in rfc.log}
    assert Outcome.PROB_DROP in fates and (Outcome.MARK in fates) == ecn
    assert max(r.count for r in recs) > 3       # the control law ran, not only entries


def departures(sojourns_ms, every_us=1000, start=1_000_000, left=5, ecn=Ecn.ECT0):
    """One departure every `every_us` with the given sojourns, each leaving `left` queued."""
    return [Arrival(qdepth=left, enq_ts=start + i * every_us - s * 1000, deq_timedelta=s * 1000,
                    ecn=ecn, length=100, ip_id=i + 1, egress_ts=start + i * every_us,
                    deq_qdepth=left) for i, s in enumerate(sojourns_ms)]


def test_dropping_starts_only_after_a_whole_interval_above_target():
    """Sojourn 6 ms against target 5 ms: the first packet above starts the clock, the
    first departing a full interval (100 ms) later is dropped; one short dip resets it."""
    _, recs = run_model(Codel(ecn=False), departures([6] * 50 + [4] + [6] * 150))
    fired = [i for i, r in enumerate(recs) if r.outcome != Outcome.PASS]
    assert fired[0] == 51 + 100            # the dip at 50 restarted the interval at 51
    assert recs[fired[0]].event == Event.INCREASE
    assert all(r.region == Region.A for r in recs[51:151])


def test_drops_follow_interval_over_sqrt_count():
    """In the dropping state the n-th next drop comes interval / sqrt(n) after the last
    scheduled one (a departure every 100 us, so every drop time is hit to 100 us)."""
    _, recs = run_model(Codel(ecn=False), departures([20] * 20_000, every_us=100))
    times = [1_000_000 + i * 100 for i, r in enumerate(recs) if r.outcome != Outcome.PASS]
    for n, (a, b) in enumerate(zip(times[1:], times[2:]), start=2):
        assert abs((b - a) - 100_000 / math.sqrt(n)) <= 100 + 1, n


def test_reentry_keeps_the_drop_rate_of_the_last_episode():
    """Leaving and re-entering within 16 intervals restarts count at count - lastcount
    (here > 1); after more than 16 intervals it restarts at 1."""
    episode = [20] * 2000
    short, long = [1] * 300, [1] * 1700
    _, recs = run_model(Codel(ecn=False), departures(episode + short + episode + long + episode))
    entries = [r for r in recs if r.event == Event.INCREASE]
    assert len(entries) == 3
    first_end = recs[len(episode) - 1].count
    assert entries[1].count == first_end - 1 > 1       # count - lastcount, lastcount 1
    assert entries[2].count == 1


def test_a_nearly_empty_queue_is_never_dropped():
    """Sojourn above target, but at most min_backlog packets left behind: no drop."""
    _, recs = run_model(Codel(ecn=False), departures([50] * 500, left=1))
    assert all(r.outcome == Outcome.PASS and r.region == Region.NONE for r in recs)
    _, recs = run_model(Codel(ecn=False, min_backlog=0), departures([50] * 500, left=1))
    assert any(r.outcome == Outcome.PROB_DROP for r in recs)


@pytest.mark.parametrize("ecn_in, outcome", [(Ecn.ECT0, Outcome.MARK), (Ecn.ECT1, Outcome.MARK),
                                             (Ecn.CE, Outcome.MARK),
                                             (Ecn.NOT_ECT, Outcome.PROB_DROP)],
                         ids=["ect0", "ect1", "ce", "not-ect"])
def test_ecn_marks_what_it_may_and_drops_the_rest(ecn_in, outcome):
    _, recs = run_model(Codel(), departures([20] * 400, ecn=ecn_in))
    signals = {Outcome(r.outcome) for r in recs} - {Outcome.PASS}
    assert signals == {outcome}
    marked = [r for r in recs if r.outcome == Outcome.MARK]
    assert all(Ecn(r.ecn_out) == Ecn.CE for r in marked)


# ----- the switch against the model --------------------------------------------------------

# At 200 packets/s: target 4 packets' service, interval 40; the pattern then runs three
# episodes: the first from a fresh state, a re-entry within 16 intervals (count restarts at
# count - lastcount), and one after a longer pause (count restarts at 1).
CODEL_PATTERN = PATTERN + [(0, 1.7)] + paced(300, 0.6)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("ecn, program", programs({"ecn": "codel"}, {"ecn": (True,),
                                                                   "drop": (False,)}),
                         indirect=["program"])
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed, ecn):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Codel(target=0.01, interval=0.1, ecn=ecn, limit=35), link_pps=RATE_PPS,
        seed=2024, telemetry_interval=0.0), steps=CODEL_PATTERN)
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A, Region.B} == set(regions), regions
    expected = {Outcome.PASS, Outcome.PROB_DROP, Outcome.OVERFLOW_DROP}
    assert expected | ({Outcome.MARK} if ecn else set()) == set(outcomes), outcomes
    assert {Event.NONE, Event.INCREASE, Event.DECREASE} == {r.event for r in records}
    flags = {r.avg for r in records}
    assert (DROPPING | ABOVE | AFTER_DROP) in flags
    assert (DROPPING | ABOVE | (AFTER_MARK if ecn else AFTER_ENTRY)) in flags
    entries = [(before, r) for before, r in zip(records, records[1:])
               if r.event == Event.INCREASE]
    assert any(r.count == before.count - before.state1 > 1 for before, r in entries)
    assert any(r.count == 1 and before.count - before.state1 > 1 for before, r in entries)


def drops_follow_the_control_law(records) -> None:
    """Under sustained overload the drops of a dropping episode come at the times the
    control law set: never before, and the median within one service slot (the next
    departure). A drop in the dropping state is due at the drop_next it was judged against
    (its record's): it comes at the first departure at or after it."""
    late = sorted((r.egress_ts - r.state0) & 0xFFFF_FFFF for r in records
                  if r.outcome == Outcome.PROB_DROP and r.event != Event.INCREASE)
    assert len(late) >= 10
    assert late[-1] < 1 << 31, "a drop came before its drop_next"
    assert late[len(late) // 2] <= 1_000_000 // RATE_PPS, late


# What every algorithm shows on the switch (tests/algorithms/test_contract.py). CoDel draws
# nothing: with BMv2's random() every decision is still the model's.
CONTRACTS = {"codel": Contract(
    good=Codel(), bad=Codel(interval=0.0), refusal="interval must be in",
    unseeded=Codel(target=0.01, interval=0.1, ecn=False, limit=1000),
    steps=tuple(paced(300, 3.0)), ecn_cycle=(Ecn.ECT0,), check=drops_follow_the_control_law)}
