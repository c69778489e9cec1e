"""The golden model's shared steps (PRNG, verdict, counters, telemetry export, epochs),
checked for every algorithm; each algorithm's own step is tested in tests/algorithms/."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from control_plane.aqm import (ALGORITHMS, Aecn, Blue, Codel, DropTail, DualPi2, Ecnm, Mecn,
                               Newque, Pi, Pi2, Pie, PortConfig, Red, RedEcn, Rem)
from control_plane.dataplane import ECN_LEVEL, Ecn, Outcome
from control_plane.golden import Arrival, PortModel, xorshift32
from support.modeling import arrivals, run_model

# Every algorithm, tuned so a random queue makes it mark, drop and pass.
EVERY_ALGORITHM = {
    "droptail": DropTail(limit=30),
    "red": Red(wq=0.05, limit=30),
    "red-gentle": Red(wq=0.05, gentle=True, limit=30),
    "red-ecn": RedEcn(wq=0.05, limit=30),
    "ecnm": Ecnm(wq=0.05, limit=30),
    "mecn": Mecn(wq=0.05, limit=30),
    "newque": Newque(alpha=0.05, min_interval=0.01, capacity=600.0, limit=30),
    "blue": Blue(d1=0.1, freeze_time=0.01, threshold=20, limit=30),
    "pi": Pi(a=0.002, b=0.0019, qref=10.0, limit=30),
    "rem": Rem(gamma=0.01, phi=1.2, target_backlog=5.0, interval=0.005, limit=30),
    "aecn": Aecn(wq=0.05, minth=5.0, maxth=20.0, maxp=0.3, limit=30),
    "codel": Codel(target=0.005, interval=0.02, limit=30),
    "pie": Pie(target=0.005, tupdate=0.005, max_burst=0.0, alpha=2.0, beta=20.0,
               mark_ecnth=0.5, limit=30),
    "pi2": Pi2(target=0.005, tupdate=0.005, alpha=2.0, beta=20.0, limit=30),
    "dualpi2": DualPi2(target=0.005, tupdate=0.005, alpha=2.0, beta=20.0, limit=30),
}


def test_every_algorithm_is_covered():
    assert {type(aqm) for aqm in EVERY_ALGORITHM.values()} == set(ALGORITHMS.values())


def test_xorshift32_known_answers():
    # Marsaglia's xorshift32 (13, 17, 5) from seed 1.
    x, seq = 1, []
    for _ in range(3):
        x = xorshift32(x)
        seq.append(x)
    assert seq == [270369, 67634689, 2647435461]


def test_xorshift32_is_uniform_enough_for_marking():
    x, n, bins = 12345, 100_000, Counter()
    for _ in range(n):
        x = xorshift32(x)
        bins[x >> 28] += 1
    chi2 = sum((bins[b] - n / 16) ** 2 / (n / 16) for b in range(16))
    assert chi2 < 37.7  # 15 degrees of freedom, p = 0.001


def random_trace(seed: int, n: int = 3000) -> list[Arrival]:
    """A queue that wanders up to 40 packets and empties, at 800 packets/s, every codepoint,
    RTTs of every AECN group."""
    rng = random.Random(seed)
    q, t, out = 0, 0, []
    for i in range(n):
        q = max(0, min(40, q + rng.choice((-2, -1, 0, 1, 1, 2))))
        if rng.random() < 0.01:
            q = 0
        t += rng.choice((200, 1250, 2500))
        out.append(Arrival(qdepth=q, enq_ts=t, deq_timedelta=q * 1000, ecn=rng.choice(list(Ecn)),
                           length=rng.choice((64, 1500)), ip_id=i & 0xFFFF,
                           deq_qdepth=max(0, q - 1), arr_seq=i + 1,
                           rtt=rng.choice((0, 3000, 90_000, 200_000))))
    return out


@pytest.mark.parametrize("name", list(EVERY_ALGORITHM))
def test_ecn_rules_and_counters_hold_for_every_algorithm(name):
    """Not-ECT never marked, CE never changed, no level lowered, a pass leaves the packet
    alone; a packet that finds the limit is dropped; every drop in exactly one counter;
    DropTail drops only at the limit."""
    model, recs = run_model(EVERY_ALGORITHM[name], random_trace(3))
    for r in recs:
        before, after = Ecn(r.ecn_in), Ecn(r.ecn_out)
        if before in (Ecn.NOT_ECT, Ecn.CE):
            assert after == before
        else:
            assert ECN_LEVEL[after] >= ECN_LEVEL[before]
        if Outcome(r.outcome) == Outcome.MARK:
            assert before != Ecn.NOT_ECT
        elif Outcome(r.outcome) == Outcome.PASS:
            assert after == before
        if r.qdepth >= 30:
            assert Outcome(r.outcome).is_drop
    c, tally = model.counters, Counter(Outcome(r.outcome) for r in recs)
    assert c.seen_packets == len(recs)
    assert c.seen_bytes == sum(r.pkt_len for r in recs)
    assert c.marks_ce + c.marks_incipient == tally[Outcome.MARK]
    assert (c.prob_drops, c.forced_drops, c.overflow_drops) == (
        tally[Outcome.PROB_DROP], tally[Outcome.FORCED_DROP], tally[Outcome.OVERFLOW_DROP])
    assert c.notect_drops <= c.prob_drops + c.forced_drops
    if name == "droptail":
        assert set(tally) <= {Outcome.PASS, Outcome.OVERFLOW_DROP}
    elif name.startswith("red") and "ecn" not in name:     # drop-only modes
        assert tally[Outcome.MARK] == 0 and tally[Outcome.PROB_DROP] > 0, tally
    else:
        assert tally[Outcome.MARK] > 0 and tally[Outcome.PROB_DROP] > 0, tally


@pytest.mark.parametrize("name", list(EVERY_ALGORITHM))
def test_a_new_epoch_starts_clean(name):
    """A second model on a new epoch, fed the same packets, repeats the first exactly:
    every register restarts at the epoch's first packet."""
    aqm = EVERY_ALGORITHM[name]
    program = PortConfig(port=2, aqm=aqm, link_pps=1000.0, seed=9,
                         telemetry_interval=0.0).encode()
    trace = random_trace(8, 800)
    first = PortModel(program, epoch=1)
    a = [first.process(p)[0] for p in trace]
    first.epoch = 2
    b = [first.process(p)[0] for p in trace]
    assert [(r.outcome, r.prob, r.state0, r.state1, r.rnd) for r in a] == \
        [(r.outcome, r.prob, r.state0, r.state1, r.rnd) for r in b]
    assert [r.pkt_seq for r in b] == list(range(1, 801))


@pytest.mark.parametrize("interval, numbers", [
    (None, [0] * 6), (0.0, [1, 2, 3, 4, 5, 6]), (1.0, [1, 2, 3, 4, 5, 6])],
    ids=["telemetry-off", "every-packet", "one-record-a-second"])
def test_packet_numbers_count_only_with_telemetry(interval, numbers):
    """telemetry.p4: a port with telemetry numbers every packet of the epoch, exported or
    not; one without counts nothing."""
    program = PortConfig(port=2, aqm=Red(), link_pps=1000.0,
                         telemetry_interval=interval).encode()
    model = PortModel(program, epoch=1)
    records = [model.process(p)[0] for p in arrivals([1] * 6)]
    assert [r.pkt_seq for r in records] == numbers


def test_every_aqm_port_draws_once_per_packet():
    _, drop_tail = run_model(DropTail(), arrivals([1] * 5), seed=4)
    _, red = run_model(Red(), arrivals([1] * 5), seed=4)
    assert [r.rnd for r in drop_tail] == [r.rnd for r in red] and len({r.rnd for r in red}) == 5


def test_seeded_runs_repeat_and_seeds_differ():
    depths = [0] + [14] * 300
    _, a = run_model(Red(wq=0.05), arrivals(depths), seed=3)
    _, b = run_model(Red(wq=0.05), arrivals(depths), seed=3)
    _, c = run_model(Red(wq=0.05), arrivals(depths), seed=4)
    assert a == b
    assert [r.outcome for r in a] != [r.outcome for r in c]


def test_telemetry_export_interval():
    model = PortModel(PortConfig(port=2, aqm=Red(), link_pps=1000.0,
                                 telemetry_interval=0.005).encode(), epoch=1)
    exported = [model.process(a)[1] for a in arrivals([1] * 20, gap_us=1000)]
    # departures at 10, 1010, 2010 ... us: one record every 5 ms, the first at once.
    assert [i for i, e in enumerate(exported) if e] == [0, 5, 10, 15]
