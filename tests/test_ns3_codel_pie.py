"""The ns-3 driver's CoDel and PIE (tests/support/ns3_oracle.py) against facts of RFC 8289 and RFC
8033 checked by hand, so the driver is proved before it serves as the golden models'
oracle. The traces are deterministic overloads (an arrival every 800 us into a queue
served at 1 000 packets/s: each packet waits 200 us longer than the one before), which
make every quantity predictable; arrivals start at 100 us, so none falls on a PIE update
(every 15 ms from 0)."""

from __future__ import annotations

import math

import pytest

from support.ns3_oracle import Trace

SERVICE_US = 1000
TARGET_US, INTERVAL_US = 5000, 100_000
NOT_ECT, ECT0 = 0, 2


def overload(*spells: tuple[int, int], gap_us: int = 800, ecn: int = ECT0) -> Trace:
    """(packets, pause after, us) spells of arrivals every gap_us, from 100 us."""
    t, times = 100, []
    for count, pause in spells:
        for _ in range(count):
            times.append(t)
            t += gap_us
        t += pause
    n = len(times)
    return Trace(tuple(times), (1000,) * n, (ecn,) * n, ((0, 1e6 / SERVICE_US),))


def sojourns(trace: Trace, run) -> list[float]:
    return [p.left_us - t for p, t in zip(run.packets, trace.arrivals_us)]


# ----- CoDel (RFC 8289) --------------------------------------------------------------------

def codel_time(us: float) -> int:
    """ns-3's CoDel clock: nanoseconds >> 10."""
    return round(us * 1000) >> 10


def newton_step(rec: int, count: int) -> int:
    """Linux's (and ns-3's) 1/sqrt(count) in Q0.16, one Newton step from the last value."""
    inv = rec << 16
    inv2 = (inv * inv) >> 32
    val = ((3 << 32) - count * inv2) >> 2
    return ((val * inv) >> 31) >> 16 & 0xFFFF


def control_law(t: int, rec: int) -> int:
    """t + interval / sqrt(count), in CoDel's clock (ReciprocalDivide)."""
    return (t + ((codel_time(INTERVAL_US) * (rec << 16)) >> 32)) & 0xFFFF_FFFF


def test_codel_enters_dropping_one_interval_after_the_sojourn_passes_target(ns3):
    """RFC 8289: a packet is dropped (here marked) only once the sojourn stayed at or above
    target for an interval. The first spell goes above target for 60 ms and drains below it:
    nothing; the second stays above: the first mark is the first departure more than an
    interval after its first packet above target, and enters the dropping state with count
    1."""
    trace = overload((100, 80_000), (400, 0))
    second = 100                                    # the second spell's first packet
    run = ns3.run_codel(trace, ecn=True)
    wait = sojourns(trace, run)
    above = [k for k in range(len(trace)) if wait[k] >= TARGET_US]
    assert above[0] < second and wait[second] < TARGET_US
    marks = [k for k, p in enumerate(run.packets) if p.reason]
    assert marks and marks[0] > second
    assert {run.packets[k].reason for k in marks} == {"Target exceeded mark"}
    start = next(k for k in above if k > second)
    assert all(wait[k] >= TARGET_US for k in range(start, marks[0] + 1))
    delay = run.packets[marks[0]].left_us - run.packets[start].left_us
    assert INTERVAL_US < delay <= INTERVAL_US + SERVICE_US, (start, marks[0], delay)
    state = next(s for s in run.states if s.packet == marks[0])
    assert state.dropping and state.count == 1
    assert not any(s.dropping for s in run.states if s.packet < marks[0])


def test_codel_marks_at_interval_over_sqrt_count(ns3):
    """In the dropping state the next signal is due at interval / sqrt(count) (RFC 8289's
    control law) as Linux computes it: 1/sqrt(count) by one Newton step per count, Q0.16,
    in a clock of 1.024 us - here exactly, and within 3 % of the exact root from count 3
    (the step gives 0.5 for 1/sqrt(2)). ns-3 schedules a mark's successor from the mark's
    time (a drop's from the previous due time); each mark is the first departure at or after
    its due time."""
    trace = overload((2000, 0))
    run = ns3.run_codel(trace, ecn=True)
    marks = [s for s in run.states if run.packets[s.packet].reason]
    assert len(marks) > 50
    rec, due = 0xFFFF, None
    for s in marks:
        now = codel_time(s.at_us)
        rec = 0xFFFF if s.count == 1 else newton_step(rec, s.count)
        assert round(s.drop_next_us / 1.024) == control_law(now, rec), s
        if due is not None:
            assert now >= due and codel_time(s.at_us - SERVICE_US) < due, s
        due = round(s.drop_next_us / 1.024)
        if s.count >= 3:
            spacing = s.drop_next_us - s.at_us
            assert spacing == pytest.approx(INTERVAL_US / math.sqrt(s.count), rel=0.03), s
    assert [s.count for s in marks] == list(range(1, len(marks) + 1))


def test_codel_leaves_dropping_below_target_and_reenters_with_its_last_count(ns3):
    """RFC 8289: the dropping state ends at the first departure whose sojourn is below
    target (or with less than MinBytes, 1 500 bytes, queued behind it: ns-3's form of the
    RFC's "bytes <= maxpacket"). Re-entering soon after (now - drop_next < 16 intervals,
    Linux's rule the RFC adopts), count starts from count - lastcount when that is more
    than 1, else 1. Three spells that each drain within 150 ms."""
    trace = overload((400, 150_000), (400, 150_000), (400, 0))
    run = ns3.run_codel(trace, ecn=True)
    wait = sojourns(trace, run)
    left = [p.left_us for p in run.packets]
    states = run.states
    exits = [k for k in range(1, len(states)) if states[k - 1].dropping and not states[k].dropping]
    entries = [k for k in range(1, len(states))
               if states[k].dropping and not states[k - 1].dropping]
    assert len(exits) >= 3 and len(entries) >= 3
    for k in exits:
        i = states[k].packet
        behind = sum(1 for t in trace.arrivals_us[i + 1:] if t <= left[i])
        assert wait[i] < TARGET_US or 1000 * behind < 1500, (states[k], wait[i], behind)
        assert wait[states[k - 1].packet] >= TARGET_US     # the first one below ends it
    reentered = 0
    for k in entries[1:]:
        before, now = states[k - 1], states[k]
        delta = before.count - before.lastcount
        recent = codel_time(now.at_us) - round(before.drop_next_us / 1.024) < \
            16 * codel_time(INTERVAL_US)
        assert now.count == (delta if delta > 1 and recent else 1), (before, now)
        assert now.lastcount == now.count
        reentered += now.count > 1
    assert reentered


# ----- PIE (RFC 8033) ----------------------------------------------------------------------

REF, TUPDATE, ALPHA, BETA, MAX_BURST = 0.015, 0.015, 0.125, 1.25, 0.15
SCALES = ((1e-6, 2048), (1e-5, 512), (1e-4, 128), (1e-3, 32), (1e-2, 8), (0.1, 2))


def rfc8033_update(p: float, qdelay: float, qdelay_old: float, burst: float) -> float:
    """RFC 8033 section 4.2 (and 5.5's cap): the probability after one update."""
    if burst > 0:
        return 0.0
    delta = ALPHA * (qdelay - REF) + BETA * (qdelay - qdelay_old)
    delta /= next((scale for below, scale in SCALES if p < below), 1)
    if p >= 0.1 and delta > 0.02:
        delta = 0.02
    p += delta
    if qdelay == 0 and qdelay_old == 0:
        p *= 0.98
    return min(1.0, max(0.0, p))


def test_pie_probability_follows_rfc8033_with_its_scaling_table(ns3):
    """Sustained delay above target raises p every 15 ms by alpha (qdelay - target) + beta
    (qdelay - qdelay_old), divided as RFC 8033's table says for the p in force (2048 below
    1e-6 ... 2 below 0.1), at most 0.02 once p >= 0.1; an empty queue (qdelay 0 twice)
    decays it by 2 %. qdelay is the sojourn of the latest packet to leave (ns-3's default,
    not the RFC's departure-rate estimate). Every update, as ns-3 made it."""
    trace = overload((3000, 0), gap_us=800)
    run = ns3.run_pie(trace, until=4.0)
    ups = run.updates
    bands = set()
    for prev, up in zip(ups, ups[1:]):
        if prev.burst_state == 0:       # NO_BURST: a packet may arm the allowance between
            continue
        want = rfc8033_update(prev.prob, up.qdelay_us / 1e6, prev.qdelay_us / 1e6,
                              prev.burst_us / 1e6)
        assert up.prob == pytest.approx(want, rel=1e-9, abs=1e-15), (prev, up)
        if prev.burst_us == 0 and up.prob != prev.prob:
            bands.add(next((s for below, s in SCALES if prev.prob < below), 1))
    assert bands == {2048, 512, 128, 32, 8, 2, 1}, bands
    assert max(u.prob for u in ups) > 0.1
    assert ups[-1].qdelay_us == 0 and ups[-1].prob < max(u.prob for u in ups)


def test_pie_burst_allowance_keeps_p_at_zero_for_150_ms(ns3):
    """RFC 8033 section 4.4: the burst allowance (150 ms) keeps p at 0 and drains by
    tupdate each update; p moves only after it is spent, although the delay passes target
    within 80 ms."""
    trace = overload((1000, 0))
    ups = ns3.run_pie(trace, until=0.6).updates
    armed = [u for u in ups if u.burst_us > 0]
    # Armed by the first packet (at 100 us) with 150 ms, 135 ms left after the first update.
    assert [round(u.burst_us) for u in armed] == list(range(135_000, 0, -15_000))
    assert all(u.prob == 0 for u in ups if u.at_us <= armed[-1].at_us + TUPDATE * 1e6)
    assert any(u.qdelay_us > REF * 1e6 for u in armed)
    assert next(u.at_us for u in ups if u.prob > 0) == armed[-1].at_us + 2 * TUPDATE * 1e6


def test_pie_drops_and_marks_the_packets_rfc8033_picks_with_given_draws(ns3):
    """With the draws given, ns-3's PIE treats each arriving packet as RFC 8033's
    drop_early says: no drop while the burst allowance lasts, while qdelay_old < target / 2
    and p < 0.2, or with 2 packets or fewer queued; otherwise the packet goes when its draw
    is at most p: an ECT packet is marked while p < 0.1 (MarkEcnThreshold), dropped from
    0.1 on, a Not-ECT one dropped. Every packet, as ns-3 decided."""
    base = overload((3000, 0))
    trace = Trace(base.arrivals_us, base.sizes,
                  tuple(NOT_ECT if k % 4 == 3 else ECT0 for k in range(len(base))), base.rates)
    u = [((k * 2654435761) % 2**32) / 2**32 for k in range(len(trace))]
    run = ns3.run_pie(trace, ecn=True, draws=u, until=3.0)
    ups, j, got = run.updates, 0, {"": 0, "Unforced mark": 0, "Unforced drop": 0}
    for k, (t, pkt) in enumerate(zip(trace.arrivals_us, run.packets)):
        while j + 1 < len(ups) and ups[j + 1].at_us <= t:
            j += 1
        state = ups[j]
        safe = (state.qdelay_us / 1e6 < REF / 2 and state.prob < 0.2) or pkt.queued <= 2
        if state.burst_us > 0 or safe or u[k] > state.prob:
            want = ""
        elif trace.ecn[k] != NOT_ECT and state.prob < 0.1:
            want = "Unforced mark"
        else:
            want = "Unforced drop"
        assert pkt.reason == want, (k, t, pkt, state, u[k])
        got[want] += 1
    assert all(got.values()), got
