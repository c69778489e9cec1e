"""What a run is: topology, the bottleneck's AQM (and loop), traffic, measurement window."""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path

from control_plane.aqm import Aqm, DropTail, NoAqm
from control_plane.controller import LoopSpec
from control_plane.profiles import ALL
from topologies.specs import DumbbellSpec, ParkingLotSpec


TRANSPORTS = ("kernel", "mecn", "rfc3168", "scalable")
# Where a run runs: the switch in Mininet, or its twin in ns-3 (experiments/ns3/).
BACKENDS = ("bmv2", "ns3")
# The most packets a run's capture holds (--pcap): 128 bytes each, about 140 MB.
PCAP_MAX = 1_000_000
PCAP_SNAPLEN = 128
# The flows' server ports (flow k listens on IPERF_BASE_PORT + k) and seed 004's server's.
IPERF_BASE_PORT = 5201
TRANSFER_PORT = 8000
# Queues other than the bottleneck never drop (seed 004: "adequately provisioned"); their
# ports run DropTail at that limit.
WIDE_QUEUE = 10_000
OTHER_PORTS = DropTail(limit=WIDE_QUEUE)


@dataclass(frozen=True)
class Flow:
    """A long-lived flow. sender/receiver index the dumbbell's hosts; a reverse flow sends
    from the receiver side to the sender side (ACK-path traffic). transport: "kernel" is
    Linux TCP through iperf3; "mecn" and "rfc3168" are the userspace Reno of `transport/`
    answering marks as seed 001's Table 3 says or halving on any mark; "scalable" its L4S
    sender (ECT(1), transport/scalable.py)."""

    sender: int
    receiver: int
    start: float = 0.0
    duration: float | None = None   # None: until the run ends
    window: int | None = None       # bytes: caps the flow's window (iperf3 -w)
    reverse: bool = False
    group: str = ""                 # e.g. fragile / average / robust
    transport: str = "kernel"
    streams: int = 1                # kernel TCP: parallel connections of one iperf3 (-P)


# Round trips iperf3 spends connecting each stream of a process (SYN, SYN-ACK, its cookie,
# with a margin) before the process's test starts: one stream after the other.
CONNECT_RTTS = 1.25


@dataclass(frozen=True)
class Transfers:
    """Seed 004's clients: every receiver fetches `count` files of `size` bytes, one after
    the other, from a server on sender 0."""

    count: int = 11
    size: int = 100 * 1024


@dataclass(frozen=True)
class RunSpec:
    experiment: str
    label: str
    topology: DumbbellSpec | ParkingLotSpec
    aqm: Aqm
    duration: float
    flows: tuple[Flow, ...] = ()
    transfers: Transfers | None = None
    loop: LoopSpec | None = None
    measure_from: float = 0.0        # metrics skip the warm-up before this time (s)
    telemetry_interval: float = 0.01
    # Repeat k of a configuration runs with seed k: the switch's random stream, the delay
    # lines' losses.
    seed: int = 1
    # experiments/factors.py's changes to the experiment's own run, as (name, value)
    factors: tuple[tuple[str, str], ...] = ()
    # The bottleneck's service rate changes during the run: (seconds into it, fraction of
    # the configured rate); the AQM is not told, as a link that slows down does not say.
    rate_steps: tuple[tuple[float, float], ...] = ()
    # The window's end for the metrics (None: the run's end), e.g. before a rate step.
    measure_until: float | None = None
    # The switches' program: the build profile its plan compiled (factors.program), "all"
    # for a run recorded before profiles.
    program: str = ALL
    # Seconds into the traffic before the bottleneck's AQM is installed; until then the port
    # runs DropTail at the AQM's limit, so the flows connect without the AQM's drops
    # (factors' aqm_from). 0: the AQM from the start.
    aqm_from: float = 0.0
    backend: str = "bmv2"
    # Packets of the bottleneck's egress captured into bottleneck.pcap (0: none), the first
    # so many, 128 bytes of each (headers: codepoints, sequence numbers).
    pcap: int = 0

    @property
    def folder(self) -> str:
        """The run's folder name: one per configuration and repeat."""
        return f"{self.label}.s{self.seed}"

    @property
    def algorithms(self) -> set[str]:
        """What the run's switches run: the bottleneck's AQM, and the other ports'."""
        return {self.aqm.action, OTHER_PORTS.action}

    @property
    def first_aqm(self) -> Aqm:
        """The bottleneck's algorithm as the run starts (the AQM itself from aqm_from)."""
        return DropTail(limit=self.aqm.limit) if self.aqm_from else self.aqm

    def repeat(self, seed: int) -> "RunSpec":
        return replace(self, seed=seed, topology=replace(self.topology, seed=seed))

    def check(self) -> None:
        n_send, n_recv = self.topology.hosts()
        for flow in self.flows:
            if not (0 <= flow.sender < n_send and 0 <= flow.receiver < n_recv):
                raise ValueError(f"{self.label}: flow {flow} names a host the topology lacks")
            end = flow.start + (flow.duration or 0)
            if flow.transport not in TRANSPORTS:
                raise ValueError(f"{self.label}: transport {flow.transport!r} is not one of "
                                 f"{', '.join(TRANSPORTS)}")
            if not 1 <= flow.streams <= 128 or (flow.streams > 1 and flow.transport != "kernel"):
                raise ValueError(f"{self.label}: {flow.streams} streams: iperf3 (kernel TCP) "
                                 "carries 1 to 128 per flow")
            if flow.start < 0 or end > self.duration:
                raise ValueError(f"{self.label}: flow {flow} runs outside [0, {self.duration}] s")
        if isinstance(self.pcap, bool) or not isinstance(self.pcap, int) or not (
                0 <= self.pcap <= PCAP_MAX):
            raise ValueError(f"{self.label}: pcap must be 0 to {PCAP_MAX} packets, got "
                             f"{self.pcap!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"{self.label}: backend {self.backend!r} is not one of "
                             f"{', '.join(BACKENDS)}")
        if not self.flows and self.transfers is None:
            raise ValueError(f"{self.label}: no traffic")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 1:
            raise ValueError(f"{self.label}: seed must be a positive integer, got {self.seed!r}")
        if not 0 <= self.measure_from < self.duration:
            raise ValueError(f"{self.label}: measure_from must be inside the run")
        if self.measure_until is not None and not (
                self.measure_from < self.measure_until <= self.duration):
            raise ValueError(f"{self.label}: measure_until must be after measure_from and "
                             "inside the run")
        if self.aqm_from:
            self._check_aqm_from()
        times = [t for t, _ in self.rate_steps]
        if times != sorted(times) or any(
                not (0 < t < self.duration and 0 < f <= 10) for t, f in self.rate_steps):
            raise ValueError(f"{self.label}: rate steps must be in time order inside the run, "
                             f"each a fraction in (0, 10] of the rate, got {self.rate_steps}")

    def _check_aqm_from(self) -> None:
        """The AQM held back while the flows connect: every flow started before it, the
        metrics' window after it, an AQM to hold back and no loop adapting it or rate step
        re-queueing it meanwhile."""
        at = f"{self.label}: aqm_from {self.aqm_from:g} s"
        if not 0 < self.aqm_from < self.duration:
            raise ValueError(f"{at} is outside the {self.duration:g} s run")
        if isinstance(self.aqm, (DropTail, NoAqm)):
            raise ValueError(f"{at}: its bottleneck runs {self.aqm.action}, no AQM to hold back")
        if self.loop is not None:
            raise ValueError(f"{at}: its {self.loop.kind} loop adapts the AQM from the start")
        if self.transfers is not None:
            raise ValueError(f"{at}: its short transfers connect throughout the run")
        if self.aqm_from > self.measure_from:
            raise ValueError(f"{at} is after measure_from ({self.measure_from:g} s): the "
                             "metrics would measure DropTail")
        early = [t for t, _ in self.rate_steps if t <= self.aqm_from]
        if early:
            raise ValueError(f"{at}: its bottleneck's rate steps at {early[0]:g} s, before "
                             "the AQM is installed for the link's full rate")
        last = max(flow.start for flow in self.flows)
        if last >= self.aqm_from:
            raise ValueError(f"{at}: a flow starts at {last:g} s, when the AQM is already "
                             "installed")


def jsonable(value):
    """A RunSpec (any dataclass, tuple, path) as JSON data: what config.json holds, each
    dataclass with its type's name."""
    if is_dataclass(value):
        out = {f.name: jsonable(getattr(value, f.name)) for f in fields(value)}
        out["type"] = type(value).__name__
        return out
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
