"""What every algorithm module builds on: the configuration base class, its encoding into
one aqm_config action (plus lookup tables), and the golden model's per-packet interface.

An algorithm module (one per file in this package, named like its P4 file under
p4src/include/aqm/, listed by one line of the registry, __init__.py) holds:

  - its docstring, the algorithm's one description (its page in docs/algorithms/ shows
    it): what it does, its choices where the paper is ambiguous or BMv2 differs, and which
    telemetry record field holds what;
  - a frozen dataclass of the paper's parameters in physical units, whose encode()
    validates every value and returns the exact integers the switch is given, and whose
    class variables say what the P4 program needs of it (Aqm's `control`, `parts`,
    `record`, `around`: the build generates the program's lists from them);
  - a model class, built from those integers, whose step() mirrors the P4 control
    operation by operation and returns the Decision the control writes;
  - describe(), the live state a telemetry record shows, in physical units.

docs/contributing/algorithm.md walks through adding one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from control_plane import fixedpoint as fp
from control_plane.dataplane import Ecn, EcnMode, Event, Region
from control_plane.lookup import TableRows
from control_plane.values import ConfigError

# BMv2's default queue depth.
DEFAULT_LIMIT = 64
U32 = fp.U32_MAX
U48 = (1 << 48) - 1


@dataclass(frozen=True)
class TableAction:
    """One table action with its parameters as data-plane integers."""

    name: str
    params: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Link:
    """What an encoding needs of the port: its service rate (set_queue_rate), packets/s."""

    pps: float


@dataclass(frozen=True)
class TableRule:
    """One entry of a table the algorithm reads, keyed by the port and these fields
    (AECN's ternary aecn_groups: match fields as (value, mask) pairs, omitted fields are
    wildcards, a larger priority wins; DualPI2's exact dualpi2_queue: no other field,
    priority 0)."""

    table: str
    match: tuple[tuple[str, tuple[int, int]], ...]
    priority: int
    action: str
    params: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Encoded:
    """An algorithm as the switch runs it: the aqm_config action, the lookup tables and
    rules it reads, and (for the verdict) its ECN mode and hard limit."""

    action: TableAction
    ecn_mode: EcnMode
    limit: int
    tables: tuple[TableRows, ...] = ()
    rules: tuple[TableRule, ...] = ()
    measures_rtt: bool = False     # needs the ingress RTT tracker on
    priority_queues: int = 1       # BMv2's queues per port it needs (--priority-queues)


@dataclass(frozen=True)
class FiveTuple:
    """A packet's addresses (as integers), protocol and ports (0 without TCP/UDP)."""

    src: int
    dst: int
    protocol: int
    sport: int = 0
    dport: int = 0


@dataclass(frozen=True)
class Arrival:
    """What BMv2 hands egress for one packet (a packet without IPv4 counts as Not-ECT)."""

    qdepth: int
    enq_ts: int           # USEC
    deq_timedelta: int    # USEC
    ecn: Ecn
    length: int
    ip_id: int = 0
    egress_ts: int | None = None   # USEC48; None: enq_ts + deq_timedelta (hand-made input)
    deq_qdepth: int = 0            # PKTS the packet left behind
    arr_seq: int = 0               # ingress's arrival number for the port
    rtt: int = 0                   # USEC, the flow's RTT the ingress measured (0: none)
    ingress_ts: int = 0            # USEC, low 32 bits of the ingress timestamp
    flow: FiveTuple | None = None  # for classification tables (None: not IPv4)

    @property
    def departure(self) -> int:
        if self.egress_ts is not None:
            return self.egress_ts
        return self.enq_ts + self.deq_timedelta

    @property
    def arrival(self) -> int:
        """USEC48 arrival time as the algorithms compute it (departure - sojourn)."""
        return (self.departure - self.deq_timedelta) & U48

    @classmethod
    def from_record(cls, rec) -> "Arrival":
        """The inputs a telemetry record reports, to replay it through the model."""
        return cls(qdepth=rec.qdepth, enq_ts=rec.enq_ts, deq_timedelta=rec.deq_timedelta,
                   ecn=Ecn(rec.ecn_in), length=rec.pkt_len, ip_id=rec.ip_id,
                   egress_ts=rec.egress_ts, deq_qdepth=rec.deq_qdepth, arr_seq=rec.arr_seq,
                   rtt=rec.rtt, ingress_ts=rec.ingress_ts)


@dataclass
class Decision:
    """What an algorithm's control writes into the record, and what the verdict acts on."""

    fire: bool = False
    level: Ecn = Ecn.CE           # the codepoint a mark sets
    region: Region = Region.NONE
    prob: int = 0                 # FRAC32
    avg: int = 0
    count: int = 0
    event: Event = Event.NONE
    state0: int = 0
    state1: int = 0
    deq_qdepth: int = 0           # recorded by the algorithms that read it (PI, REM)
    arr_seq: int = 0              # recorded by the algorithms that read it (BLUE, REM)
    group: int = 0                # the packet's group (AECN)
    rtt: int = 0                  # recorded by AECN: the tracker's inputs and result
    ingress_ts: int = 0


@dataclass(frozen=True)
class QueueSetting:
    """One of BMv2's queues of a port as the controller sets it over Thrift: priority
    None is every priority queue of the port."""

    priority: int | None
    rate_pps: int
    depth: int


class Model(Protocol):
    """One port's algorithm state; step() is the P4 control for one packet."""

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision: ...


@dataclass(frozen=True, kw_only=True)
class Aqm:
    """Parameters every algorithm has: the hard limit (packets the arriving packet may find
    queued; it is dropped at or above it)."""

    action: ClassVar[str]         # the aqm_config action, also the CLI's name
    prose_name: ClassVar[str]     # how the docs' text names it: "RED+ECN", "DualPI2"
    # What the P4 program needs of it (control_plane/profiles.py generates the program's
    # dispatch, parameters and profile symbols from these at build time): the P4 control
    # it runs, defined in or included by p4src/include/aqm/<its module>.p4 (None: it has
    # none, only the verdict's limit); the shared parts of the program it needs beyond its
    # control (profiles.SHARED_PARTS); the fields of the record its control writes beyond
    # those every algorithm has (profiles.RECORD_FIELDS): a profile's record has only its
    # algorithms' (p4src/include/aqm_types.p4); and whether its file has steps of its own
    # that the dispatch runs around the control (<ACTION>_AROUND: AECN's around RED's).
    control: ClassVar[str | None] = None
    parts: ClassVar[tuple[str, ...]] = ()
    record: ClassVar[tuple[str, ...]] = ()
    around: ClassVar[bool] = False
    # Whether its control reads the packet's random draw (a profile of algorithms that
    # never draw has no draw: profiles.DRAWS).
    draws: ClassVar[bool] = True
    # Whether its control reads its own parameters through PARAM (p4src/include/lib.p4), so
    # a program of it alone can be built with them as constants (`tooling/build.py
    # --constants FILE`: profiles.Profile.fixed).
    constants: ClassVar[bool] = False
    # The parameters that ARED's and AMECN's automatic mode derives from a target delay
    # (`target_delay`, control_plane/adaptation.py's auto_thresholds); none: it has none.
    target_delay_sets: ClassVar[tuple[str, ...]] = ()
    # Algorithms of one family share parameter meanings (the RED family's thresholds):
    # a change between them keeps every shared parameter, others keep only these.
    family: ClassVar[str] = ""
    generic: ClassVar[tuple[str, ...]] = ("limit", "ecn")
    # Acts on the packet's sojourn (deq_timedelta), so only at dequeue (not in the program
    # built to drop at enqueue, --drop-at enqueue).
    reads_sojourn: ClassVar[bool] = False
    # What an ECT(1) packet means to the algorithm (aqmctl show): MECN reads it as
    # incipient congestion (seed 001), PI2 and DualPI2 as L4S (RFC 9331).
    ect1: ClassVar[str] = "ECN-capable (RFC 3168)"
    # Names of the groups the verdict counts marks and drops for (group_marks, group_drops).
    group_names: ClassVar[tuple[str, ...]] = ()
    # The probability ARED's or AMECN's loop adapts (None: no loop adapts it).
    adapted: ClassVar[str | None] = None
    # Where the algorithm's own paper or RFC decides: as a packet arrives, or as it leaves
    # (at dequeue, or at the front of the queue with what the arrivals decided): the ns-3
    # twin decides there unless told otherwise (experiments/ns3/bottleneck.py).
    decides_at: ClassVar[str] = "arrival"
    limit: int = DEFAULT_LIMIT

    def target_delay(self) -> float | None:
        """The queueing delay the algorithm's controller holds, s, whatever the link's rate
        (the delay-based ones' target); None for one that holds a queue in packets or
        aims at neither."""
        return None

    def target_queue(self) -> float | None:
        """The queue the algorithm's controller holds, packets (a delay that grows as the
        rate falls: ARED's band centre, AMECN's target, PI's qref, REM's b*); None for one
        that holds a delay or aims at neither (DropTail, NEWQUE, BLUE)."""
        return None

    @classmethod
    def benchmark(cls, limit: int) -> dict[str, "Aqm"]:
        """The configurations benchmarks/suite.py measures it in, by case name (a name is
        compared across revisions: keep it), each with the hard limit given (one no load
        reaches, so the cost is the decision): its defaults."""
        return {cls.action: cls(limit=limit)}

    def encode(self, link: Link) -> Encoded:
        """Validated action and tables; nothing invalid gets past this."""
        raise NotImplementedError

    @classmethod
    def model(cls, encoded: Encoded) -> Model:
        raise NotImplementedError

    def queues(self, rate_pps: int, depth: int) -> tuple[QueueSetting, ...]:
        """BMv2's queues of a port served at rate_pps with depth packets: one queue."""
        return (QueueSetting(None, rate_pps, depth),)

    @staticmethod
    def describe(record) -> dict[str, float]:
        """Live state in physical units, from one telemetry record."""
        return {"p": fp.from_frac32(record.prob)}

    def _limit(self) -> int:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigError(f"limit must be a whole number of packets >= 1, got {self.limit!r}")
        return checked(fp.to_pkts, self.limit, "limit")


def checked(convert, value, name):
    """A fixed-point conversion whose error is a ConfigError."""
    try:
        return convert(value, name)
    except fp.FixedPointError as err:
        raise ConfigError(str(err)) from None


def number(value, name: str, low: float, high: float, *, low_open: bool = False,
           high_open: bool = False) -> float:
    """A finite real in [low, high] (either end open on request)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and \
             (value < high if high_open else value <= high)
    if not ok:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ConfigError(f"{name} must be in {interval}, got {value!r}")
    return float(value)


def flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    return value


def ecn_mode(ecn: bool) -> EcnMode:
    return EcnMode.MARK if flag(ecn, "ecn") else EcnMode.DROP


def inverse_interval(interval_us: int) -> int:
    """ceil(2^32 / interval): IntervalClock's reciprocal (lib.p4)."""
    return -(-(1 << 32) // interval_us)


def interval_us(seconds: float, name: str) -> int:
    """A periodic update's interval, in whole microseconds (at least 1)."""
    number(seconds, name, 0.0, 3600.0, low_open=True)
    raw = checked(fp.to_usec, seconds, name)
    if raw < 1:
        raise ConfigError(f"{name} must be at least 1 microsecond, got {seconds}")
    return raw


class IntervalClock:
    """lib.p4's IntervalClock: due at the first packet departing at or after the next
    boundary; boundaries that passed without a packet are `missed`."""

    def __init__(self, interval: int, inv_interval: int):
        self.interval, self.inv = interval, inv_interval
        self.next = 0

    def tick(self, fresh: bool, now: int) -> tuple[bool, int]:
        if fresh:
            self.next = (now + self.interval) & U48
        if not at_or_after(now, self.next):
            return False, 0
        missed = (min((now - self.next) & U48, U32) * self.inv) >> 32
        self.next = (self.next + (missed + 1) * self.interval) & U48
        if not at_or_after(self.next, now):
            self.next = (now + self.interval) & U48
        return True, missed


def update_interval(seconds: float, name: str, link: Link) -> int:
    """A delay-based AQM's update interval (PIE, PI2), in whole microseconds: longer than
    one packet's service time at the port's rate, so that an interval without a departure
    means an empty queue."""
    interval = interval_us(seconds, name)
    if seconds <= 1 / link.pps:
        raise ConfigError(
            f"{name} ({seconds} s) must be longer than one packet's service time at the "
            f"port's rate (1 / {link.pps:g} packets/s): an interval without a departure must "
            "mean an empty queue")
    return interval


def negative48(d: int) -> bool:
    """lib.p4's NEGATIVE48: a USEC48 difference t - since (taken modulo 2^48) that says t
    is before since."""
    return d & U48 >= 1 << 47


def at_or_after(t: int, since: int) -> bool:
    """lib.p4's AT_OR_AFTER: USEC48 time t is at or after `since`, across wrap-around."""
    return not negative48(t - since)


def elapsed_since(since: int, t: int) -> int:
    """USEC48 t - since, or 0 if t is before since (lib.p4's NEGATIVE48)."""
    d = (t - since) & U48
    return 0 if negative48(d) else d


def frac32_add(x: int, step: int) -> int:
    return min(x + step, fp.FRAC32_ONE)


def frac32_sub(x: int, step: int) -> int:
    return x - step if step < x else 0
