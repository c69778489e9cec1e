"""What a topology is, without building it: the links and hosts a run names (Mininet builds
them on the testbed, topologies/dumbbell.py and parking_lot.py; ns-3 in the twin,
experiments/ns3/). Importing this needs neither Mininet nor root."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Access:
    """A host's link: rate (Mbit/s, None = unshaped veth), one-way delay (s), loss."""

    mbps: float | None = 100.0
    delay: float = 0.0
    loss: float = 0.0


@dataclass(frozen=True)
class Bottleneck:
    mbps: float
    delay: float = 0.0
    buffer: int = 64               # packets: BMv2's queue depth on the bottleneck port
    packet_bytes: int = 1500       # converts Mbit/s to set_queue_rate's packets/s; the hosts'
                                   # MTU, so data packets are this size

    @property
    def pps(self) -> int:
        return max(1, round(self.mbps * 1e6 / (8 * self.packet_bytes)))


@dataclass(frozen=True)
class DumbbellSpec:
    senders: tuple[Access, ...]
    receivers: tuple[Access, ...]
    bottleneck: Bottleneck
    congestion_control: str = "reno"
    ecn: bool = False
    seed: int = 1

    def hosts(self) -> tuple[int, int]:
        """How many senders and receivers flows can name."""
        return len(self.senders), len(self.receivers)

    def expected_rtt(self, i: int, j: int) -> float:
        """Propagation RTT between sender i and receiver j (seconds)."""
        return 2 * (self.senders[i].delay + self.bottleneck.delay + self.receivers[j].delay)


@dataclass(frozen=True)
class ParkingLotSpec:
    links: tuple[Bottleneck, ...]
    long_senders: tuple[Access, ...]
    cross_access: Access = Access(20, 0.0)
    receiver_access: Access = Access(20, 0.0)
    congestion_control: str = "reno"
    ecn: bool = False
    seed: int = 1

    def hosts(self) -> tuple[int, int]:
        """How many senders (long, then cross) and receivers flows can name."""
        n = len(self.long_senders) + len(self.links)
        return n, n


# Seed 002: one-way access delays of the three RTT groups (minimum RTTs 20, 100, 300 ms
# over a 5 ms bottleneck).
RTT_GROUP_DELAYS = {"robust": 0.005, "average": 0.045, "fragile": 0.145}


def rtt_groups(bottleneck: Bottleneck, access_mbps: float = 20.0, ecn: bool = False,
               congestion_control: str = "reno", delays: dict[str, float] = RTT_GROUP_DELAYS,
               receiver_delay: float = 0.005) -> tuple[DumbbellSpec, list[str]]:
    """Seed 002's dumbbell: one sender per RTT group (sender k is 10.0.0.k+1) and one
    receiver 5 ms from the switch; returns the spec and the group of each sender (flows
    of a group share its sender)."""
    groups = list(delays)
    spec = DumbbellSpec(senders=tuple(Access(access_mbps, delays[g]) for g in groups),
                        receivers=(Access(access_mbps, receiver_delay),), bottleneck=bottleneck,
                        congestion_control=congestion_control, ecn=ecn)
    return spec, groups
