"""Driving the golden model by hand: arrivals with chosen depths, times and sojourns."""

from __future__ import annotations

from typing import Callable

from control_plane.aqm import PortConfig
from control_plane.dataplane import Ecn, Event
from control_plane.golden import Arrival, PortModel
from control_plane.telemetry import TelemetryRecord


def arrivals(depths, ecn=Ecn.ECT0, gap_us=1000, sojourn_us=10, start_us=0) -> list[Arrival]:
    """One packet every gap_us, finding depths[i] queued and leaving as many behind."""
    return [Arrival(qdepth=d, enq_ts=start_us + i * gap_us, deq_timedelta=sojourn_us, ecn=ecn,
                    length=100, ip_id=i, deq_qdepth=d, arr_seq=i + 1)
            for i, d in enumerate(depths)]


def run_model(aqm, packets: list[Arrival], seed=1, telemetry=0.0, link_pps=1000.0,
              port=2) -> tuple[PortModel, list[TelemetryRecord]]:
    model = PortModel(PortConfig(port=port, aqm=aqm, link_pps=link_pps, seed=seed,
                                 telemetry_interval=telemetry).encode(), epoch=1)
    return model, [model.process(p)[0] for p in packets]


def departures(delays_ms, every_us=1000, start=1_000_000, left=5, ecn=Ecn.ECT0,
               found=5) -> list[Arrival]:
    """One departure every `every_us`, each with its sojourn (ms), having found `found`
    packets queued and leaving `left` (the delay-based AQMs' input: PIE, PI2)."""
    return [Arrival(qdepth=found, enq_ts=start + i * every_us - round(d * 1000),
                    deq_timedelta=round(d * 1000), ecn=ecn, length=100, ip_id=i + 1,
                    egress_ts=start + i * every_us, deq_qdepth=left)
            for i, d in enumerate(delays_ms)]


def check_updates_on_grid(aqm, delays_ms, interval_us: int,
                          update: Callable[[float, float, float], float],
                          p_of: Callable[[TelemetryRecord], int]) -> list[TelemetryRecord]:
    """A delay-based AQM's periodic update (PIE, PI2), one departure a millisecond with
    these sojourns: one update per interval, run by the first packet departing at or after
    each boundary of a fixed grid, using the sojourn of the packet before it; p (p_of a
    record, FRAC32) follows update(p, cur s, qdelay_old s) in floating point."""
    packets = departures(delays_ms)
    _, recs = run_model(aqm, packets)
    p, old, updates, boundary = 0.0, 0.0, 0, packets[0].departure + interval_us
    for i, (pkt, rec) in enumerate(zip(packets, recs)):
        if pkt.departure >= boundary:
            cur = packets[i - 1].deq_timedelta
            assert rec.event == Event.UPDATE and rec.count == 1 and rec.avg == cur
            p = update(p, cur / 1e6, old / 1e6)
            old, updates, boundary = cur, updates + 1, boundary + interval_us
            assert rec.state0 == old
        else:
            assert rec.event == Event.NONE and rec.count == 0
        assert abs(p_of(rec) / 2**32 - p) < 1e-7
    assert updates == (len(packets) - 1) * 1000 // interval_us
    return recs
