"""Each kernel flow's rates within the measured window, from the byte counters the runner
sampled at both ends of every connection (experiments/connections.py, connections.json).

A counter between two samples is read linearly; before a connection's first sample it is 0
from the host's sample before (the connection did not exist then), and after its last
sample it reaches the final count (the iperf3 server's report for the bytes received, else
the last sample) by the host's next sample."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from analysis.metrics import FlowRates


@dataclass(frozen=True)
class Window:
    """The part of the measured window [start, end] a flow was planned to live in."""
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def flow_window(measured: tuple[float, float], flow_start: float, flow_end: float
                ) -> Window | None:
    start, end = max(measured[0], flow_start), min(measured[1], flow_end)
    return Window(start, end) if end > start else None


def points(entry: dict, key: str, rounds: list[float], period: float,
           final: float | None = None) -> list[tuple[float, float]]:
    """A counter's known (time, value) points: its samples, 0 at the host's round before
    the first, `final` (or the last sample's value) at the round after the last (a period
    after it when there was none)."""
    times, values = entry["t"], entry[key]
    before = bisect_left(rounds, times[0])
    after = bisect_right(rounds, times[-1])
    first = rounds[before - 1] if before > 0 else 0.0
    last = rounds[after] if after < len(rounds) else times[-1] + period
    end_value = values[-1] if final is None else max(final, values[-1])
    return [(first, 0.0), *zip(times, values), (last, end_value)]


def value_at(known: list[tuple[float, float]], t: float) -> float:
    """The counter at t, linear between known points, held beyond them."""
    if t <= known[0][0]:
        return known[0][1]
    if t >= known[-1][0]:
        return known[-1][1]
    k = bisect_right([p[0] for p in known], t)
    (t0, v0), (t1, v1) = known[k - 1], known[k]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def delta(known: list[tuple[float, float]], window: Window) -> float:
    return value_at(known, window.end) - value_at(known, window.start)


def client_ports(client: dict) -> list[int]:
    """Each stream's local port, in the order of the client report's streams."""
    start, end = client["start"], client["end"]
    port_of = {c["socket"]: c["local_port"] for c in start["connected"]}
    streams = end.get("streams", [])
    if len(streams) > 1:
        return [port_of[s["sender"]["socket"]] for s in streams]
    return [start["connected"][0]["local_port"]]


def server_finals(server: dict | None) -> dict[int, float]:
    """Bytes the iperf3 server received per client port, from its report."""
    try:
        port_of = {c["socket"]: c["remote_port"] for c in server["start"]["connected"]}
        return {port_of[s["receiver"]["socket"]]: float(s["receiver"]["bytes"])
                for s in server["end"]["streams"]}
    except (TypeError, KeyError):
        return {}


def window_rates(samples: dict, client: dict, server: dict | None, window: Window
                 ) -> list[FlowRates] | None:
    """Each stream's rates within `window` (goodput: bytes received; throughput: bytes
    sent, retransmissions included) from the samples of the client's connections (its
    iperf3 report names their ports), or None where a stream's counters are missing."""
    try:
        ports = client_ports(client)
        server_port = client["start"]["connected"][0]["remote_port"]
    except (KeyError, IndexError):
        return None
    finals = server_finals(server)
    rates = []
    for port in ports:
        key = f"{server_port}/{port}"
        received, sent = samples["receiver"].get(key), samples["sender"].get(key)
        if received is None or sent is None:
            return None
        period = samples["period"]
        got = delta(points(received, "bytes", samples["rounds"][received["host"]], period,
                           finals.get(port)), window)
        rounds = samples["rounds"][sent["host"]]
        out = delta(points(sent, "bytes", rounds, period), window)
        retrans = delta(points(sent, "retrans", rounds, period), window)
        rates.append(FlowRates(8 * out / window.seconds, 8 * got / window.seconds,
                               round(retrans), window.seconds, "window"))
    return rates
