"""Each flow's rates within the measured window.

A Linux TCP flow's from the byte counters the runner sampled at both ends of every iperf3
connection (experiments/connections.py, connections.json): a counter between two samples
is read linearly; before a connection's first sample it is 0 from the host's round before
(the connection did not exist then), and after its last sample it reaches the final count
(from the iperf3 reports, where they count more) by the host's next round.

The userspace transport's from its own per-second intervals (bytes acknowledged, segments
retransmitted), placed on the run's clock by the start it stamps, read the same way."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from analysis.metrics import FlowRates, client_ports, server_received, stream_reports


@dataclass(frozen=True)
class Window:
    """The part of the measured window a flow was planned to live in, s from the start."""
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def flow_window(measured: tuple[float, float], flow_start: float, flow_end: float
                ) -> Window | None:
    start, end = max(measured[0], flow_start), min(measured[1], flow_end)
    return Window(start, end) if end > start else None


Points = list[tuple[float, float]]


def points(entry: dict, key: str, rounds: list[float], period: float,
           final: float | None = None) -> Points:
    """A sampled counter's known (time, value) points: its samples, 0 at the host's round
    before the first, `final` (or the last sample's value, whichever is more) at the round
    after the last (a period after it when there was none)."""
    times, values = entry["t"], entry[key]
    before = bisect_left(rounds, times[0])
    after = bisect_right(rounds, times[-1])
    first = rounds[before - 1] if before > 0 else 0.0
    last = rounds[after] if after < len(rounds) else times[-1] + period
    end_value = values[-1] if final is None else max(final, values[-1])
    return [(first, 0.0), *zip(times, values), (last, end_value)]


def value_at(known: Points, t: float) -> float:
    """The counter at t, linear between known points, held beyond them."""
    if t <= known[0][0]:
        return known[0][1]
    if t >= known[-1][0]:
        return known[-1][1]
    k = bisect_right([p[0] for p in known], t)
    (t0, v0), (t1, v1) = known[k - 1], known[k]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def delta(known: Points, window: Window) -> float:
    return value_at(known, window.end) - value_at(known, window.start)


def window_rates(samples: dict, client: dict, server: dict | None, window: Window,
                 mss: int) -> list[FlowRates] | None:
    """Each stream's rates within `window` (goodput: bytes received; throughput: bytes
    sent, retransmissions included) from the samples of the client's connections (its
    iperf3 report names their ports); None where a stream's counters are missing or a host
    was not sampled on both sides of the window."""
    if client.get("start", {}).get("connected") == []:
        return []        # no stream connected: nothing to read, nothing delivered
    try:
        ports = client_ports(client)
        server_port = client["start"]["connected"][0]["remote_port"]
        sent_by_port = dict(zip(ports, (sent for sent, _ in stream_reports(client))))
    except (KeyError, IndexError):
        return None
    received_by_port = server_received(server)
    rates = []
    for port in ports:
        key = f"{server_port}/{port}"
        received, sent = samples["receiver"].get(key), samples["sender"].get(key)
        if received is None or sent is None:
            return None
        rounds_r = samples["rounds"][received["host"]]
        rounds_s = samples["rounds"][sent["host"]]
        if not all(r and r[0] <= window.start and r[-1] >= window.end
                   for r in (rounds_r, rounds_s)):
            return None
        period = samples["period"]
        report = sent_by_port[port]
        retransmits = report.get("retransmits", 0)
        got = delta(points(received, "bytes", rounds_r, period, received_by_port.get(port)),
                    window)
        out = delta(points(sent, "bytes", rounds_s, period,
                           report["bytes"] + retransmits * mss), window)
        retrans = delta(points(sent, "retrans", rounds_s, period, retransmits), window)
        rates.append(FlowRates(8 * out / window.seconds, 8 * got / window.seconds,
                               round(retrans), window.seconds, "window"))
    return rates


def userspace_rates(client: dict, run_started: float, window: Window, mss: int
                    ) -> FlowRates | None:
    """The userspace transport's rates within `window`, from its intervals; what it
    acknowledged after its last interval (its end's count) falls between that and its
    end. None without the stamp of its start."""
    try:
        offset = client["start"]["started"] - run_started
        end = client["end"]
        acked, retransmits = end["sum_received"]["bytes"], end["sum_sent"]["retransmits"]
        seconds = end["sum_sent"]["seconds"]
        intervals = [iv["sum"] for iv in client["intervals"]]
    except (KeyError, TypeError):
        return None
    got: Points = [(offset, 0.0)]
    retx: Points = [(offset, 0.0)]
    for iv in intervals:
        got.append((offset + iv["end"], got[-1][1] + iv["bytes"]))
        retx.append((offset + iv["end"], retx[-1][1] + iv["retransmits"]))
    if offset + seconds > got[-1][0]:
        got.append((offset + seconds, max(acked, got[-1][1])))
        retx.append((offset + seconds, max(retransmits, retx[-1][1])))
    delivered, resent = delta(got, window), delta(retx, window)
    return FlowRates(8 * (delivered + resent * mss) / window.seconds,
                     8 * delivered / window.seconds, round(resent), window.seconds, "window")
