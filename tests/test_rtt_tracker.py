"""The RTT tracker's golden model: samples from echoed timestamps, the two legs, smoothing,
stale entries, collisions and flow takeover (the switch against it: tests/algorithms/
test_aecn.py)."""

from __future__ import annotations

import ipaddress

from control_plane.rtt_tracker import (FT_SLOTS, FT_TIMEOUT, PT_SLOTS, PT_TIMEOUT, RttEvent,
                                       RttTrackerModel, TcpSegment, rtt_hash)

A = int(ipaddress.IPv4Address("10.0.1.1"))
B = int(ipaddress.IPv4Address("10.0.2.2"))


def data(tsval: int, tsecr: int, sport: int = 40000) -> TcpSegment:
    return TcpSegment(A, B, sport, 5201, tsval, tsecr)


def ack(tsval: int, tsecr: int, dport: int = 40000) -> TcpSegment:
    return TcpSegment(B, A, 5201, dport, tsval, tsecr)


def test_two_legs_make_the_rtt():
    """A's data passes at 0 ms, B's ACK echoing it at 20 ms (the receiver's leg), A's next
    segment echoing the ACK at 25 ms (the sender's leg): RTT 25 ms from then on, for
    packets of both directions."""
    t = RttTrackerModel()
    assert t.process(data(100, 7), 1_000_000) == 0
    assert t.process(ack(500, 100), 1_020_000) == 0        # one leg known
    assert t.process(data(101, 500), 1_025_000) == 25_000
    # B's leg: a 15 ms sample moves 20 ms an eighth of the way.
    assert t.process(ack(501, 101), 1_040_000) == 5_000 + 20_000 - (20_000 - 15_000) // 8
    assert t.events[RttEvent.SAMPLE] == 3 and t.events[RttEvent.FLOW_NEW] == 1


def test_legs_are_smoothed_by_an_eighth_per_sample():
    t = RttTrackerModel()
    now, legs = 0, []
    tsval = 1
    t.process(data(tsval, 0), now)
    for k, delay in enumerate([10_000, 10_000, 18_000, 18_000, 2_000]):
        now += delay
        t.process(ack(900 + k, tsval), now)            # a sample of B's leg
        tsval += 1
        now += 1_000
        legs.append(t.process(data(tsval, 900 + k), now))   # and one of A's: 1 ms
    # B's leg: 10, 10, 10 + 8/8, 11 + 7/8, 11.875 - (9.875 >> 3) ms; A's: 1 ms
    assert legs == [11_000, 11_000, 12_000, 12_875, 11_641]


def test_a_repeated_tsval_keeps_the_first_time_and_an_echo_is_used_once():
    t = RttTrackerModel()
    t.process(data(100, 0), 0)
    t.process(data(100, 0), 5_000)                     # same TSval: keeps time 0
    t.process(ack(1, 100), 30_000)
    t.process(ack(2, 100), 40_000)                     # already consumed: no sample
    assert t.events[RttEvent.SAMPLE] == 1
    assert t.events[RttEvent.PT_COLLISION] == 0
    assert t.ft_leg[leg_index(ack(1, 100))] == 30_000


def leg_index(seg: TcpSegment) -> int:
    hosts = seg.src ^ seg.dst
    ports = ((((seg.sport + seg.dport) & 0xFFFF) << 16) | (seg.sport ^ seg.dport))
    fslot = rtt_hash(hosts, ports, 0x5BD1E995) & (FT_SLOTS - 1)
    side = 0 if (seg.src, seg.sport) < (seg.dst, seg.dport) else 1
    return fslot * 2 + side


def test_no_sample_without_an_echo_or_after_the_timeout():
    t = RttTrackerModel()
    t.process(data(100, 0), 0)
    t.process(ack(1, 0), 10_000)                       # TSecr 0: nothing echoed
    t.process(ack(2, 100), PT_TIMEOUT + 1)             # too late
    assert t.events[RttEvent.SAMPLE] == 0


def slot_mates(n: int) -> list[int]:
    """n TSvals whose data segments share a packet-tracker slot."""
    hosts, ports = A ^ B, (40000 << 16) | 5201
    by_slot: dict[int, list[int]] = {}
    for tsval in range(1, 4 * PT_SLOTS):
        same = by_slot.setdefault(rtt_hash(hosts, ports, tsval) & (PT_SLOTS - 1), [])
        same.append(tsval)
        if len(same) == n:
            return same
    raise AssertionError("no slot mates")


def test_a_live_entry_is_not_overwritten_and_a_stale_one_is():
    first, second = slot_mates(2)
    t = RttTrackerModel()
    t.process(data(first, 0), 0)
    t.process(data(second, 0), 1_000)                  # collision: not remembered
    assert t.events[RttEvent.PT_COLLISION] == 1
    t.process(ack(1, second), 5_000)
    assert t.events[RttEvent.SAMPLE] == 0
    t.process(data(second, 0), PT_TIMEOUT + 1)         # the first is stale now
    assert t.events[RttEvent.PT_STALE] == 1
    t.process(ack(2, second), PT_TIMEOUT + 8_001)
    assert t.events[RttEvent.SAMPLE] == 1


def test_times_wrap_at_32_bits():
    t = RttTrackerModel()
    start = (1 << 32) - 3_000                          # 48-bit time; the tracker keeps 32
    t.process(data(100, 0), (5 << 32) + start)
    t.process(ack(1, 100), (5 << 32) + start + 7_000)
    assert t.ft_leg[leg_index(ack(1, 100))] == 7_000


def flow_mates() -> tuple[int, int]:
    """Two source ports whose flows (A:port <-> B:5201) share a flow slot."""
    seen: dict[int, int] = {}
    for sport in range(1024, 65536):
        ports = ((((sport + 5201) & 0xFFFF) << 16) | (sport ^ 5201))
        slot = rtt_hash(A ^ B, ports, 0x5BD1E995) & (FT_SLOTS - 1)
        if slot in seen:
            return seen[slot], sport
        seen[slot] = sport
    raise AssertionError("no flow mates")


def test_a_flow_slot_is_taken_over_only_after_the_owner_is_idle():
    owner, other = flow_mates()
    t = RttTrackerModel()
    t.process(data(1, 0, sport=owner), 0)
    t.process(ack(1, 1, dport=owner), 10_000)
    t.process(data(2, 1, sport=owner), 12_000)
    assert t.process(data(5, 0, sport=other), 20_000) == 0
    assert t.events[RttEvent.FLOW_COLLISION] == 1
    assert t.process(data(3, 1, sport=owner), 30_000) == 12_000
    t.process(data(6, 0, sport=other), 30_000 + FT_TIMEOUT + 1)
    assert t.events[RttEvent.FLOW_NEW] == 2                 # taken over, legs cleared
    assert t.process(data(4, 1, sport=owner), 30_000 + FT_TIMEOUT + 2) == 0
