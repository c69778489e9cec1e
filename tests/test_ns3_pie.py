"""Our PIE's golden model (control_plane/algorithms/pie.py) against ns-3's PieQueueDisc.

Every packet is ECT(0) and marking goes on up to p = 1 (MarkEcnThreshold 1 in ns-3,
mark_ecnth 1 here): nothing is dropped, so ns-3's queue and the one the golden model is
given (each packet's departure, sojourn and the packets behind it, from ns-3's run) are the
same, and so are the queue delays both update from. Arrivals fall on whole milliseconds plus
1 us and the server takes 1 or 2 ms a packet, so no departure falls between ns-3's update
times (every 15 ms from 0) and ours (every 15 ms from the first departure, 1 us later).

What ns-3 and our PIE do differently by design, each checked where it shows:
- the update's arithmetic: ns-3 in floating point, ours in P48 with gains rounded to
  PGAIN (within 1.5e-8 of themselves);
- boundaries without a departure: ns-3 updates at each, ours applies them at once along
  the idle orbit (within one orbit step plus alpha target of one by one);
- the burst allowance: ns-3 holds p at 0 while it lasts, arms it at the first packet and
  again only after 1.5 s of quiet updates; ours (RFC 8033's basic pseudocode) lets p move
  and only holds back the drops, and refills it whenever p = 0 with both delays below
  target / 2;
- the decision: ns-3 decides on the arriving packet (RFC 8033), ours on the departing one,
  so the two mark different packets from the same probabilities; they are compared by how
  many they mark, against each other's probabilities.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right

import pytest

from control_plane.algorithms.base import Link
from control_plane.algorithms.pie import PieModel, idle_orbit
from control_plane.aqm import Pie
from control_plane.dataplane import Ecn, Event, Outcome
from control_plane.golden import Arrival
from support.modeling import run_model
from support.ns3_oracle import Trace

TUPDATE_US, TARGET_US = 15_000, 15_000
OURS = dict(ecn=True, max_burst=0.0, mark_ecnth=1.0, limit=10**6)
MARK_ALWAYS = {"MarkEcnThreshold": "1.0"}


def ms_trace(n: int, load: float, seed: int, on: float | None = None, off: float = 0.0,
             step_at_s: float | None = None) -> Trace:
    """Poisson arrivals at load x 1 000 packets/s (on for `on` s, off for `off` s), put on
    whole milliseconds plus 1 us, the first at 60 ms; the server's rate is halved for 1 s
    from step_at_s."""
    rng, t, times = random.Random(seed), 0.0, []
    while len(times) < n:
        t += rng.expovariate(load * 1000.0)
        if on is None or t % (on + off) < on:
            times.append(t)
    # The first at 60 ms + 1 us: our boundaries are ns-3's (every 15 ms) plus 1 us.
    first = int(times[0] * 1000)
    arrivals = tuple((int(x * 1000) - first) * 1000 + 60_001 for x in times)
    rates = ((0, 1000.0),) if step_at_s is None else (
        (0, 1000.0), (round(step_at_s * 1e6), 500.0), (round((step_at_s + 1) * 1e6), 1000.0))
    return Trace(arrivals, (1000,) * n, (2,) * n, rates)


def traces() -> dict[str, Trace]:
    """Seeded traces that take p up to 0.1-0.3 and back, never to 1 (where ns-3 would drop
    what it cannot mark)."""
    return {"steady": ms_trace(9000, 0.96, seed=5),
            "on-off": ms_trace(9000, 1.03, seed=2, on=1.0, off=0.5),
            "rate-step": ms_trace(9000, 0.6, seed=3, step_at_s=4.0)}


def packets(trace: Trace, run) -> list[Arrival]:
    """ns-3's packets as BMv2 gives them to egress: departure, sojourn, queue on arrival
    and behind."""
    out = []
    for i, (t, pkt) in enumerate(zip(trace.arrivals_us, run.packets)):
        out_at = round(pkt.left_us)
        behind = bisect_right(trace.arrivals_us, out_at) - (i + 1)
        out.append(Arrival(qdepth=pkt.queued, enq_ts=t, deq_timedelta=out_at - t,
                           ecn=Ecn.ECT0, length=1000, ip_id=i & 0xFFFF, egress_ts=out_at,
                           deq_qdepth=behind))
    return out


@pytest.fixture(scope="module")
def runs(ns3):
    out = {}
    for name, trace in traces().items():
        run = ns3.run_pie(trace, ecn=True, max_burst=0.0, attributes=MARK_ALWAYS)
        assert not any(p.left_us is None for p in run.packets), "ns-3 dropped a packet"
        _, recs = run_model(Pie(**OURS), packets(trace, run), link_pps=1000.0)
        out[name] = (trace, run, recs)
    return out


def ns3_update_before(run, us: int):
    """ns-3's update at the last 15 ms boundary at or before `us` - 1 (ours lag by 1 us)."""
    updates = {round(u.at_us): u for u in run.updates}
    return updates[(us - 1) // TUPDATE_US * TUPDATE_US]


@pytest.mark.parametrize("name", list(traces()))
def test_every_update_uses_ns3s_queue_delay(runs, name):
    """The queue delay each of our updates used is the one ns-3's update at that boundary
    used: the last departure's sojourn, 0 if it left the queue empty."""
    _, run, recs = runs[name]
    updates = [r for r in recs if r.event == Event.UPDATE and r.count == 1]
    assert len(updates) > 400
    for r in updates:
        assert r.avg == round(ns3_update_before(run, r.egress_ts).qdelay_us), r.describe()
    assert any(r.avg == 0 for r in updates) and max(r.avg for r in updates) > 2 * TARGET_US


@pytest.mark.parametrize("name", list(traces()))
def test_each_update_from_ns3s_state_is_ns3s(runs, name):
    """From ns-3's state before a boundary (p, qdelay_old) and the delay it used, our
    update gives ns-3's p within the gains' rounding (5e-9); from its state before a run of
    boundaries without a departure, our catch-up gives ns-3's p within one step of the idle
    orbit plus alpha target."""
    _, run, recs = runs[name]
    encoded = Pie(**OURS).encode(Link(1000.0))
    p = encoded.action.params
    orbit = idle_orbit(p["alpha_target"], p["decay"])
    by_time = {round(u.at_us): u for u in run.updates}
    exact = caught_up = 0
    for r in recs:
        if r.event != Event.UPDATE:
            continue
        last = ns3_update_before(run, r.egress_ts)
        first = by_time[round(last.at_us) - r.count * TUPDATE_US]   # before the first boundary
        model = PieModel(encoded)
        model.prob, model.old, model.prev = round(first.prob * 2**48), round(first.qdelay_us), \
            round(by_time[round(first.at_us) + TUPDATE_US].qdelay_us)
        model.calculate_drop_prob()
        if r.count > 1:
            model.idle_updates(r.count - 1)
            step = max((a - b for a, b in zip(orbit, orbit[1:])
                        if b <= model.prob <= a), default=0)
            assert abs(model.prob - last.prob * 2**48) <= step + p["alpha_target"], r.describe()
            caught_up += 1
        else:
            assert model.prob / 2**48 == pytest.approx(last.prob, abs=5e-9), r.describe()
            exact += 1
    assert exact > 400 and (caught_up > 0) == (name == "on-off")


@pytest.mark.parametrize("name", list(traces()))
def test_ns3_marks_as_often_as_our_probabilities_say(runs, name):
    """ns-3 marks the arriving packet with its p, we the departing one with ours: the two
    choose different packets, but ns-3's count of marks is what our probabilities predict
    (the sum of each packet's p where its draw decides) within 3.29 standard deviations,
    so is ours, and the two counts are within 3.29 standard deviations of each other."""
    _, run, recs = runs[name]
    live = [r for r in recs if r.state1 == 0 and r.qdepth > 2
            and not (r.state0 < TARGET_US // 2 and r.prob < 0.2 * 2**32)]
    probs = [r.prob / 2**32 for r in live]
    mean, sd = sum(probs), math.sqrt(sum(q * (1 - q) for q in probs))
    ours = sum(1 for r in recs if Outcome(r.outcome) == Outcome.MARK)
    theirs = sum(1 for pkt in run.packets if pkt.reason == "Unforced mark")
    assert mean > 30
    assert abs(ours - mean) <= 3.29 * sd + 1, (ours, mean, sd)
    assert abs(theirs - mean) <= 3.29 * sd + 1, (theirs, mean, sd)
    assert abs(ours - theirs) <= 3.29 * math.sqrt(ours + theirs), (ours, theirs)
    print(f"\n{name}: marks ours {ours}, ns-3 {theirs}, expected {mean:.1f} +- {sd:.1f}")


def test_the_burst_allowance_holds_p_in_ns3_and_the_drops_in_ours(ns3):
    """With the 150 ms allowance, a queue already above target: ns-3 keeps p at 0 until it
    is spent; ours lets p rise meanwhile. Neither marks a packet while it lasts."""
    trace = ms_trace(400, 1.5, seed=4)
    run = ns3.run_pie(trace, ecn=True, attributes=MARK_ALWAYS)
    _, recs = run_model(Pie(**{**OURS, "max_burst": 0.15}), packets(trace, run),
                        link_pps=1000.0)
    start = trace.arrivals_us[0]
    armed = [u for u in run.updates if u.burst_us > 0]
    assert armed and all(u.prob == 0 for u in armed)
    ours_during = [r for r in recs if r.egress_ts < start + 150_000]
    assert any(r.prob > 0 for r in ours_during)
    assert all(r.outcome == Outcome.PASS for r in ours_during)
    assert all(not pkt.reason for t, pkt in zip(trace.arrivals_us, run.packets)
               if t < start + 150_000)
