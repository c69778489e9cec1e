"""Telemetry records: what the data plane exports per packet (telemetry_t in headers.p4)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

from control_plane import fixedpoint as fp
from control_plane.dataplane import Ecn, Event, Outcome, Region


@dataclass(frozen=True, slots=True)
class TelemetryRecord:
    """One packet's AQM record, in data-plane integers (formats in fixedpoint.py)."""

    port: int
    epoch: int
    pkt_seq: int
    tele_seq: int
    enq_ts: int         # USEC
    deq_timedelta: int  # USEC
    egress_ts: int      # USEC48, departure
    qdepth: int         # PKTS found on arrival
    deq_qdepth: int     # PKTS left behind at departure (PI, REM at updates; else 0)
    arr_seq: int        # ingress's arrival number for the port (BLUE, REM; else 0)
    avg: int            # QPKT after this packet's update (RED family)
    prob: int           # FRAC32 marking probability in force
    count: int          # unmarked packets since the last mark, before this one (RED family)
    rnd: int            # FRAC32 draw
    state0: int         # algorithm state (control_plane/algorithms/)
    state1: int
    ingress_ts: int     # USEC, low 32 bits of the ingress timestamp (AECN; else 0)
    rtt: int            # USEC, the flow's RTT the ingress measured (AECN; else 0)
    ip_id: int
    event: int          # Event
    group: int          # the packet's group (AECN; else 0)
    region: int
    outcome: int
    ecn_in: int
    ecn_out: int
    pkt_len: int

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, int]) -> "TelemetryRecord":
        """Build from PacketIn metadata; a missing field is an error, not a zero."""
        missing = [f.name for f in fields(cls) if f.name not in metadata]
        if missing:
            raise ValueError(f"telemetry PacketIn lacks fields {missing}")
        return cls(**{f.name: int(metadata[f.name]) for f in fields(cls)})

    @property
    def avg_packets(self) -> float:
        return fp.from_qpkt(self.avg)

    @property
    def probability(self) -> float:
        return fp.from_frac32(self.prob)

    def describe(self) -> str:
        return (
            f"port {self.port} seq {self.pkt_seq} arr {self.arr_seq} q={self.qdepth}/"
            f"{self.deq_qdepth} avg={self.avg_packets:.3f} p={self.probability:.6f} "
            f"count={self.count} state={self.state0}/{self.state1} {Event(self.event).name} "
            f"{Region(self.region).name} {Outcome(self.outcome).name} "
            f"{Ecn(self.ecn_in).name}->{Ecn(self.ecn_out).name}"
        )
