"""The ns-3 twin's bottleneck (experiments/ns3/twin.cc's TwinQueueDisc, bottleneck.py's
TwinPort) against an independent single-server queue, packet by packet.

A trace of UDP packets (random times to the nanosecond, sizes, codepoints) enters the
disc from the node in front of it; the reference is a plain event loop of one FIFO queue
of the link's rate and buffer, handing each packet to a TwinPort of its own at arrival or
departure as the factors say. Every call the disc makes to the golden model must be the
reference's (the depth found, the arrival and sojourn in microseconds, the depth left, the
arrival number, the codepoint), every packet the receiver gets must be one the reference
delivers, with its codepoint, at its departure plus the link's latency, and the telemetry
the two ports record must be the same.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass

import pytest

from control_plane.aqm import Codel, DropTail, Mecn, Pie, PortConfig, RedEcn
from experiments.ns3.bottleneck import DROP, TwinPort
from experiments.ns3.loader import Ns3Unavailable, available

try:
    available()
    WHY = None
except Ns3Unavailable as err:
    WHY = str(err)
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"needs ns-3: {WHY}")

RATE = 8e6            # b/s: a 1000-byte packet takes exactly 1 ms, a 500-byte one 0.5 ms
DELAY_NS = 2_000_000
PORT, UDP = 5, 9000
SIZES = (500, 1000, 1500)


@dataclass(frozen=True)
class Packet:
    t_ns: int
    size: int
    ecn: int


def trace(seed: int, n: int = 1500, load: float = 1.3) -> list[Packet]:
    """Bursty overload: exponential gaps at `load` times the link's rate, in bursts."""
    rng = random.Random(seed)
    mean_service = sum(SIZES) / len(SIZES) * 8 / RATE
    t, out = 0.01, []
    while len(out) < n:
        t += rng.expovariate(load / mean_service) * (0.2 if rng.random() < 0.3 else 1.0)
        out.append(Packet(round(t * 1e9), rng.choice(SIZES), rng.choice((0, 2, 2, 2, 1))))
    return out


def service_ns(size: int) -> int:
    return round(size * 8 / RATE * 1e9)


class Recording(TwinPort):
    """A TwinPort that keeps every call the disc (or the reference) made to the model."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple] = []

    def decide(self, *args):
        out = super().decide(*args)
        # The serial and the telemetry flag aside: what the model was handed, and its answer.
        self.calls.append((*args[1:11], out))
        return out


def port(aqm, decide_at: str, interval: float) -> Recording:
    return Recording(PortConfig(port=PORT, aqm=aqm, link_pps=RATE / 8000, seed=7,
                                telemetry_interval=interval), None, decide_at)


def in_ns3(aqm, decide_at: str, slot_kept: bool, packets: list[Packet], buffer: int,
           interval: float):
    from experiments.ns3.loader import load
    from experiments.ns3.simulation import SOURCE
    g = load(SOURCE)
    twin = port(aqm, decide_at, interval)
    net = g.p4aqm_twin.Network(1, 1)
    # kept alive while ns-3 holds them; the trace has no userspace flow, no timed event
    hooks = (lambda port, *a: twin.decide(*a), lambda port, *a: twin.departed(*a),
             *[lambda *a: None] * 4)
    net.SetHooks(*hooks)
    front, back = net.AddNode(), net.AddNode()
    disc = net.AddBottleneck(front, back, RATE, DELAY_NS / 1e9, 100, 0)
    disc.Configure(RATE, buffer, buffer, False, twin.at_arrival, slot_kept, interval)
    net.AssignAddresses()
    receiver = net.AddTraceReceiver(back, UDP)
    net.AddTraceSender(front, back, UDP, [p.t_ns for p in packets], [p.size for p in packets],
                       [p.ecn for p in packets])
    net.Run(packets[-1].t_ns / 1e9 + 5.0)
    got = {int(k): (int(t), int(e)) for k, t, e in zip(receiver.seq, receiver.atNs,
                                                        receiver.ecn)}
    device_bps = RATE * 1.01 + 1e4        # twin.cc's AddBottleneck
    del net
    return twin, got, device_bps


def reference(aqm, decide_at: str, slot_kept: bool, packets: list[Packet], buffer: int,
              interval: float) -> tuple[Recording, dict[int, tuple[int, int]]]:
    """One FIFO server of RATE and `buffer` packets: the twin's intended semantics."""
    twin = port(aqm, decide_at, interval)
    queue: deque[dict] = deque()
    free = 0                                  # when the server is next free, ns
    arr_seq = serial = last_sojourn = 0
    exported_at: int | None = None
    delivered: dict[int, tuple[int, int]] = {}
    i = 0

    def telemetry_due(now: int) -> bool:
        nonlocal exported_at
        if exported_at is not None and now - exported_at < interval * 1e9:
            return False
        exported_at = now
        return True

    while i < len(packets) or queue:
        start = max(free, queue[0]["at"]) if queue else math.inf
        if i < len(packets) and packets[i].t_ns < start:
            p, i = packets[i], i + 1
            arr_seq += 1
            depth = len(queue)
            if depth >= buffer:
                continue                      # the full queue's silent drop
            serial += 1
            entry = {"k": i - 1, "at": p.t_ns, "size": p.size, "ecn": p.ecn, "depth": depth,
                     "seq": arr_seq, "serial": serial}
            if twin.at_arrival:
                wait = max(free, p.t_ns) + sum(service_ns(q["size"]) for q in queue) - p.t_ns
                out = twin.decide(serial, 0, depth, p.t_ns // 1000, wait // 1000, last_sojourn,
                                  depth, arr_seq, p.size, p.ecn, 0, False)
                if out == DROP:
                    continue
                entry["ecn"] = out
            queue.append(entry)
            continue
        assert not (i < len(packets) and packets[i].t_ns == start), "a tie: draw another trace"
        q = queue.popleft()
        sojourn = (start - q["at"]) // 1000
        if not twin.at_arrival:
            out = twin.decide(q["serial"], 0, q["depth"], q["at"] // 1000, sojourn, last_sojourn,
                              len(queue), q["seq"], q["size"], q["ecn"], 0,
                              telemetry_due(start))
            if out == DROP:
                free = start + service_ns(q["size"]) if slot_kept else start
                continue
            q["ecn"] = out
        elif telemetry_due(start):
            twin.departed(q["serial"], sojourn, len(queue), start // 1000)
        last_sojourn = sojourn
        free = start + service_ns(q["size"])
        delivered[q["k"]] = (start, q["ecn"])
    return twin, delivered


CASES = {
    # RED+ECN as its paper decides, on arrival: marks ECT packets, drops Not-ECT ones.
    "red_ecn-arrival": (RedEcn(minth=3, maxth=12, maxp=0.3, wq=0.05, limit=40), "paper", False),
    # MECN rewrites ECT(0) to ECT(1) (incipient) or CE (moderate).
    "mecn-arrival": (Mecn(minth=3, midth=7, maxth=14, p1max=0.3, p2max=0.3, wq=0.05, limit=40),
                     "paper", False),
    # CoDel at dequeue, dropping (ECN off): the link free at once, or the slot kept (BMv2).
    "codel-drop": (Codel(target=0.002, interval=0.02, ecn=False, limit=40), "paper", False),
    "codel-drop-slot-kept": (Codel(target=0.002, interval=0.02, ecn=False, limit=40), "paper",
                             True),
    # PIE on arrival with the last departure's sojourn; and at departure, as the switch.
    "pie-arrival": (Pie(target=0.003, tupdate=0.005, limit=40), "paper", False),
    "pie-departure": (Pie(target=0.003, tupdate=0.005, limit=40), "departure", True),
    # A buffer smaller than the AQM's limit: the queue's own silent drops.
    "droptail-buffer": (DropTail(limit=40), "paper", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_disc_hands_the_model_what_a_fifo_server_would(case):
    aqm, decide_at, slot_kept = CASES[case]
    buffer = 12 if case == "droptail-buffer" else 40
    packets = trace(seed=len(case))
    twin, got, device_bps = in_ns3(aqm, decide_at, slot_kept, packets, buffer, 0.004)
    ref, delivered = reference(aqm, decide_at, slot_kept, packets, buffer, 0.004)
    assert len(ref.calls) > 500
    assert twin.calls == ref.calls
    assert set(got) == set(delivered)
    outcomes = [c[-1] for c in ref.calls]
    assert outcomes.count(DROP) > 10 or case == "droptail-buffer"
    if case == "droptail-buffer":
        assert len(delivered) < len(packets) - 50           # the buffer dropped
    for k, (at, ecn) in got.items():
        start, sent_ecn = delivered[k]
        latency = (packets[k].size + 2) * 8 / device_bps * 1e9 + DELAY_NS
        assert ecn == sent_ecn
        assert abs(at - (start + latency)) <= 2, (k, at, start)
    assert twin.recorded.telemetry == ref.recorded.telemetry
    assert len(twin.recorded.telemetry) > 50


def test_mecn_rewrites_codepoints_the_receiver_sees():
    aqm, decide_at, slot_kept = CASES["mecn-arrival"]
    packets = trace(seed=3)
    _, got, _ = in_ns3(aqm, decide_at, slot_kept, packets, 40, 0.004)
    sent = {k: p.ecn for k, p in enumerate(packets)}
    changed = [(sent[k], ecn) for k, (_, ecn) in got.items() if ecn != sent[k]]
    assert (2, 1) in changed and (2, 3) in changed          # incipient and moderate
    assert all(before != 0 for before, _ in changed)        # Not-ECT is never marked


def test_ns3s_own_fifo_queue_disc_gives_droptail_s_run_packet_for_packet(tmp_path):
    """--factor aqm_impl=ns3 hands the decisions to ns-3's own queue disc: with DropTail,
    ns-3's FifoQueueDisc, the whole run must be the golden model's, every sample of the
    queue and every counter (the plumbing, not the algorithm, under test)."""
    from dataclasses import replace

    from analysis.results import read_csv
    from experiments.base import PlanOptions
    from experiments.catalog import EXPERIMENTS
    from experiments.ns3.simulation import execute
    spec = next(s for s in EXPERIMENTS["smoke"].runs(PlanOptions(repeat=1, backend="ns3"))
                if s.label == "droptail")
    model = execute(spec, tmp_path / "model")
    native = execute(replace(spec, factors=(("aqm_impl", "ns3"),)), tmp_path / "native")
    columns = ("t", "qdepth", "sojourn_ms", "ecn")
    rows = [[{k: r[k] for k in columns} for r in read_csv(run / "telemetry.csv")]
            for run in (model, native)]
    assert len(rows[0]) > 300 and rows[0] == rows[1]
    assert read_csv(model / "counters.csv") == read_csv(native / "counters.csv")


def through_delay_line(times_ns: list[int], jitter: float, queue: int = 1000) -> list[int]:
    """Each packet's time from its send to its arrival across a link whose ends are delay
    lines late by `jitter` s on average (AddLink's JitterQueueDisc); packets in send order."""
    from experiments.ns3.loader import load
    from experiments.ns3.simulation import SOURCE
    g = load(SOURCE)
    net = g.p4aqm_twin.Network(1, 11)
    net.SetHooks(*[lambda *a: None] * 6)    # kept alive while ns-3 holds them
    a, b = net.AddNode(), net.AddNode()
    net.AddLink(a, b, RATE, DELAY_NS / 1e9, queue, 0.0, 0.0, jitter)
    net.AssignAddresses()
    receiver = net.AddTraceReceiver(b, UDP)
    net.AddTraceSender(a, b, UDP, times_ns, [1000] * len(times_ns), [0] * len(times_ns))
    net.Run(times_ns[-1] / 1e9 + 5.0)
    seq, at = [int(k) for k in receiver.seq], [int(t) for t in receiver.atNs]
    del net
    assert seq == list(range(len(times_ns))), "a delay line loses nothing and keeps order"
    return [t - times_ns[k] for k, t in zip(seq, at)]


def test_the_delay_lines_jitter_is_exponential_and_keeps_order():
    """--factor jitter=MS: apart, each packet is late by an exponential draw of mean MS;
    in a burst, a late packet holds up those behind it (the line releases in order)."""
    apart = [round(0.01e9 + k * 0.1e9) for k in range(400)]      # 100 ms apart: none waits
    on_time = through_delay_line(apart, 0.0)
    assert len(set(on_time)) == 1                # transmission and propagation, constant
    base, mean = on_time[0], 0.005
    late = [(t - base) / 1e9 for t in through_delay_line(apart, mean)]
    assert min(late) >= 0
    n = len(late)
    m = sum(late) / n
    assert abs(m - mean) < 4 * mean / math.sqrt(n)               # the mean, 4 sigma
    # Exponential, not constant nor uniform: the median is ln 2 of the mean, and about
    # e^-2 of the packets are later than twice the mean.
    assert abs(sorted(late)[n // 2] / m - math.log(2)) < 0.15
    assert abs(sum(x > 2 * m for x in late) / n - math.exp(-2)) < 0.05

    burst = [round(0.01e9 + k * 2e6) for k in range(300)]       # one per 2 ms, 1 ms each
    waits = through_delay_line(burst, mean)
    released = [t + waits[k] for k, t in enumerate(burst)]
    assert released == sorted(released)
    # Held up behind a late one: arriving right after it, one transmission apart.
    transmission = base - DELAY_NS
    held = sum(1 for k in range(1, len(released))
               if released[k] - released[k - 1] <= transmission + 2)
    assert held > 30
