"""Driving the golden model by hand: arrivals with chosen depths and times."""

from __future__ import annotations

from control_plane.aqm import PortConfig
from control_plane.dataplane import Ecn
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
