"""The seed papers' metrics, computed from a run's raw data. Pure functions on plain
numbers, so each one is tested on hand-made data with a known answer.

Definitions (seed in brackets):
- throughput: bits/s a flow put on the wire, retransmissions included; goodput: bits/s of
  application data delivered [000, 002]; both within the measured window where the run
  sampled the connections' counters (analysis/connections.py), else over the flow's life.
- Jain's index: (sum x)^2 / (n sum x^2) [002].
- lockout: flows whose goodput stays below `share` (1 %) of the fair share capacity/n
  over the measured interval: they got (almost) nothing through [002].
- average queue: time average of the queue the packets found (a step function between
  samples), whatever the algorithm [003]; EWMA average: time average of the average the
  RED family keeps, the "average queue" of RED's tables [000].
- queueing delay: mean sojourn of the packets in the bottleneck queue.
- loss %: packets dropped at the bottleneck over packets that arrived there.
- utilisation: packets the bottleneck sent over what it could send in the interval.
- network overhead: packets the sender sent beyond the minimum an uncongested network
  needs for the same payload, in % of that minimum; receiver overhead: packets the
  receiver got beyond that minimum (duplicates, corrupted), in % [004].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean, pstdev
from typing import Iterable, Sequence


def jain(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("Jain's index of no flows")
    total = sum(values)
    squares = sum(v * v for v in values)
    if squares == 0:
        return 1.0  # all equal (all zero)
    return total * total / (len(values) * squares)


def lockout(goodputs: Sequence[float], capacity_bps: float, share: float = 0.01) -> int:
    """Flows whose goodput is below `share` of the fair share capacity / n."""
    if not goodputs:
        return 0
    fair = capacity_bps / len(goodputs)
    return sum(1 for g in goodputs if g < share * fair)


def time_average(times: Sequence[float], values: Sequence[float], start: float,
                 end: float) -> float:
    """Average over [start, end] of the step function that holds each value until the
    next sample (the value before the first sample is the first value)."""
    if end <= start:
        raise ValueError("empty interval")
    if not times:
        raise ValueError("no samples")
    total, current = 0.0, values[0]
    last = start
    for t, v in zip(times, values):
        if t <= start:
            current = v
            continue
        if t >= end:
            break
        total += current * (t - last)
        last, current = t, v
    total += current * (end - last)
    return total / (end - start)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of sorted samples, nearest rank (a sample, not an interpolation)."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def loss_percent(arrived: int, dropped: int) -> float:
    return 100.0 * dropped / arrived if arrived else 0.0


def utilisation(sent_packets: float, capacity_pps: float, seconds: float) -> float:
    """Fraction of the bottleneck's packet slots used (BMv2's rate is in packets/s; a link
    of bytes counts full-size packets' worth)."""
    if capacity_pps <= 0 or seconds <= 0:
        raise ValueError("capacity and interval must be > 0")
    return sent_packets / (capacity_pps * seconds)


def overhead_percent(packets: int, minimum: int) -> float:
    if minimum <= 0:
        raise ValueError("the minimum packet count must be > 0")
    return 100.0 * (packets - minimum) / minimum


@dataclass(frozen=True)
class FlowRates:
    throughput_bps: float
    goodput_bps: float
    retransmits: int
    seconds: float
    # Whose bytes the goodput counts: the receiver's, or, where no receiver's report is
    # left, the sender's (more by at most what its socket still held).
    goodput_from: str = "receiver"


def _rates(sent: dict, received: dict, mss: int, received_bytes: float | None) -> FlowRates:
    """Goodput from the receiver's count of bytes, or, where nobody's report has it (None),
    from the bytes the sender wrote; throughput adding the retransmitted segments."""
    seconds = received["seconds"] or sent["seconds"]
    retransmits = int(sent.get("retransmits", 0))
    delivered, source = ((sent["bytes"], "sender") if received_bytes is None
                         else (received_bytes, "receiver"))
    if seconds <= 0:     # an iperf3 stopped before its test started: it sent nothing
        return FlowRates(0.0, 0.0, retransmits, 0.0, source)
    return FlowRates(8 * (sent["bytes"] + retransmits * mss) / seconds,
                     8 * delivered / seconds, retransmits, seconds, source)


def iperf3_rates(result: dict, mss: int) -> FlowRates:
    """A flow's rates from iperf3's JSON (client side)."""
    end = result["end"]
    return _rates(end["sum_sent"], end["sum_received"], mss, end["sum_received"]["bytes"])


def stream_reports(result: dict) -> list[tuple[dict, dict]]:
    """Each TCP connection's (sender, receiver) sums in an iperf3 client report: its
    streams' when it carries several (-P), else the whole test's."""
    end = result["end"]
    streams = end.get("streams", [])
    return ([(stream["sender"], stream["receiver"]) for stream in streams]
            if len(streams) > 1 else [(end["sum_sent"], end["sum_received"])])


def client_ports(client: dict) -> list[int]:
    """Each stream's local port, in the order of an iperf3 client report's streams (its
    `start.connected` names each socket's port)."""
    start, end = client["start"], client["end"]
    port_of = {c["socket"]: c["local_port"] for c in start["connected"]}
    streams = end.get("streams", [])
    if len(streams) > 1:
        return [port_of[s["sender"]["socket"]] for s in streams]
    return [start["connected"][0]["local_port"]]


def server_received(server: dict | None) -> dict[int, float]:
    """Bytes an iperf3 server received (its --json) per client port: the streams matched
    by port, as the server may accept them in another order than the client connected."""
    try:
        port_of = {c["socket"]: c["remote_port"] for c in server["start"]["connected"]}
        return {port_of[s["receiver"]["socket"]]: float(s["receiver"]["bytes"])
                for s in server["end"]["streams"]}
    except (TypeError, KeyError):
        return {}


def iperf3_stream_rates(result: dict, mss: int, received_known: bool = True,
                        server: dict | None = None) -> list[FlowRates]:
    """Each TCP connection's rates when one iperf3 carries several (-P), else the one
    connection's: the flows that fairness and lockout are about. An iperf3 client stopped
    by a signal has no report from the server (`received_known` False): a stream's
    received bytes are then the server's own report's (`server`), else unknown."""
    pairs = stream_reports(result)
    if received_known:
        counts: list[float | None] = [received["bytes"] for _, received in pairs]
    else:
        try:
            ports = client_ports(result)
        except (KeyError, IndexError):
            ports = [None] * len(pairs)
        received_by_port = server_received(server)
        counts = [received_by_port.get(port) for port in ports]
    return [_rates(sent, received, mss, n) for (sent, received), n in zip(pairs, counts)]


def aggregate_rate(flows: Iterable[tuple[float, float, float]]) -> float:
    """Flows given as (start s, lifetime s, mean rate): their summed rate over the span from
    the first start to the last end. Summing mean rates is wrong when lifetimes differ (a
    flow alive for half the span contributes half its rate)."""
    flows = list(flows)
    if not flows:
        return math.nan
    span = max(start + life for start, life, _ in flows) - min(start for start, _, _ in flows)
    return sum(life * rate for _, life, rate in flows) / span if span > 0 else math.nan


def summary(values: Iterable[float]) -> dict[str, float]:
    values = list(values)
    if not values:
        return {"n": 0, "mean": math.nan, "sd": math.nan, "min": math.nan, "max": math.nan}
    return {"n": len(values), "mean": mean(values), "sd": pstdev(values),
            "min": min(values), "max": max(values)}
