"""One factor changed at a time: the controlled runs that explain why a claim does not hold.

`--factor NAME=VALUE` (repeatable) changes every run of a plan the same way before it runs;
the run's config.json records the changed run, the summary names the factors, and
`--resume` needs the same ones. A factor that does not apply to a run (gentle for a PI
queue, a transport for short transfers) is an error, not silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Callable, Iterable, Sequence

from control_plane.aqm import Aecn, Aqm, Newque, Pi
from control_plane.algorithms.pi import hollot_gains
from tooling.build import DROP_AT
from control_plane.profiles import ALL, ALL_PROFILE, Profile
from experiments.ns3.native import has_native
from experiments.spec import CONNECT_RTTS, TRANSPORTS, RunSpec
from topologies.specs import DumbbellSpec

CONGESTION_CONTROLS = ("reno", "cubic", "bbr")
DROP_POINTS = tuple(DROP_AT)
SMALLEST, PLAN = "profile", "plan"
PROGRAMS = (SMALLEST, PLAN, ALL)
# The ns-3 twin's scale: the paper's own (its default), or the testbed's.
PAPER, TESTBED = "paper", "testbed"
# Where the twin's AQM decides: as its paper does, on every arrival, or on every departure
# (the switch's egress).
DECIDE_POINTS = ("paper", "arrival", "departure")
# The twin's scalable sender: ns-3's DCTCP, or the testbed's own (transport/scalable.py).
SCALABLE_SENDERS = ("dctcp", "transport")
# The twin's AQM: our golden model, or ns-3's own queue disc where it has one.
AQM_IMPLS = ("model", "ns3")


class FactorError(ValueError):
    """An unknown factor, a bad value, or one the run has nothing to apply it to."""


def _aqm_field(name: str, value) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if name not in {f.name for f in fields(spec.aqm)}:
            raise FactorError(f"{spec.label}: {type(spec.aqm).__name__} has no {name}")
        return replace(spec, aqm=replace(spec.aqm, **{name: value}))
    return apply


def _bottlenecks(spec: RunSpec) -> list:
    topo = spec.topology
    return [topo.bottleneck] if isinstance(topo, DumbbellSpec) else list(topo.links)


def _links(spec: RunSpec, change) -> RunSpec:
    topo = spec.topology
    if isinstance(topo, DumbbellSpec):
        return replace(spec, topology=replace(topo, bottleneck=change(topo.bottleneck)))
    return replace(spec, topology=replace(topo, links=tuple(change(link) for link in topo.links)))


def _buffer(value: int) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        spec = _links(spec, lambda link: replace(link, buffer=value))
        return _aqm_field("limit", value)(spec)
    return apply


def _rate(value: float) -> Callable[[RunSpec], RunSpec]:
    return lambda spec: _links(spec, lambda link: replace(link, mbps=value))


def _packet(value: int) -> Callable[[RunSpec], RunSpec]:
    """Packets of `value` bytes at the same packet rate (the hosts' MTU follows); the
    userspace senders' segments are fixed at 1500 bytes."""
    def apply(spec: RunSpec) -> RunSpec:
        if any(f.transport != "kernel" for f in spec.flows):
            raise FactorError(f"{spec.label}: the userspace senders send 1500-byte packets "
                              "(add --factor transport=kernel)")
        return _links(spec, lambda link: replace(
            link, packet_bytes=value, mbps=link.mbps * value / link.packet_bytes))
    return apply


def _cc(value: str) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if spec.flows and all(f.transport != "kernel" for f in spec.flows):
            raise FactorError(f"{spec.label}: its senders are userspace Reno, not Linux's "
                              "(add --factor transport=kernel)")
        return replace(spec, topology=replace(spec.topology, congestion_control=value))
    return apply


def _transport(value: str) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if not spec.flows:
            raise FactorError(f"{spec.label}: no long-lived flows to change the transport of")
        if value != "kernel" and any(f.streams > 1 for f in spec.flows):
            raise FactorError(f"{spec.label}: its flows are iperf3 processes of several "
                              "streams; a userspace sender carries one")
        return replace(spec, flows=tuple(replace(f, transport=value) for f in spec.flows))
    return apply


def _access(value: float) -> Callable[[RunSpec], RunSpec]:
    """The senders' one-way access delay (ms), for a paper that does not give it."""
    def apply(spec: RunSpec) -> RunSpec:
        topo, delay = spec.topology, value / 1000
        dumbbell = isinstance(topo, DumbbellSpec)
        senders = topo.senders if dumbbell else topo.long_senders
        if len({a.delay for a in senders}) > 1:
            raise FactorError(f"{spec.label}: its senders' delays differ on purpose "
                              "(RTT groups)")
        moved = tuple(replace(a, delay=delay) for a in senders)
        topo = (replace(topo, senders=moved) if dumbbell else replace(
            topo, long_senders=moved, cross_access=replace(topo.cross_access, delay=delay)))
        return replace(spec, topology=topo)
    return apply


def _clients(value: int) -> Callable[[RunSpec], RunSpec]:
    """Seed 004's client count: each receiver is one client of the short transfers. The
    run's time limit grows with the count (the run ends when the clients are done)."""
    def apply(spec: RunSpec) -> RunSpec:
        if spec.transfers is None:
            raise FactorError(f"{spec.label}: no short-transfer clients")
        receivers = spec.topology.receivers
        if len(set(receivers)) > 1:
            raise FactorError(f"{spec.label}: its clients' links differ")
        return replace(spec, topology=replace(spec.topology, receivers=receivers[:1] * value),
                       duration=spec.duration * max(1.0, value / len(receivers)))
    return apply


def _streams(value: int) -> Callable[[RunSpec], RunSpec]:
    """iperf3 processes of at most `value` streams. iperf3 starts a process's test only
    once its server has every stream (connected one after the other, each opening with a
    cookie), so one stream whose handshake or cookie is lost again and again holds the
    others back, connected and idle. Each part starts as much later as its whole spent
    connecting the streams it no longer has, so that every part begins sending when the
    whole would have."""
    def apply(spec: RunSpec) -> RunSpec:
        flows, split = [], False
        for flow in spec.flows:
            if flow.transport != "kernel" or flow.streams <= value:
                flows.append(flow)
                continue
            if not isinstance(spec.topology, DumbbellSpec):
                raise FactorError(f"{spec.label}: streams splits a dumbbell's flows only")
            split = True
            rtt = spec.topology.expected_rtt(flow.sender, flow.receiver)
            sizes = [value] * (flow.streams // value) + (
                [flow.streams % value] if flow.streams % value else [])
            for size in sizes:
                later = CONNECT_RTTS * (flow.streams - size) * rtt
                if flow.duration is not None and later >= flow.duration:
                    raise FactorError(f"{spec.label}: a part of a {flow.duration:g}-s flow "
                                      f"would start after its end")
                flows.append(replace(flow, streams=size, start=flow.start + later,
                                     duration=None if flow.duration is None
                                     else flow.duration - later))
        if not split:
            raise FactorError(f"{spec.label}: no iperf3 process has over {value} streams")
        return replace(spec, flows=tuple(flows))
    return apply


def _ecn(value: bool) -> Callable[[RunSpec], RunSpec]:
    return lambda spec: replace(spec, topology=replace(spec.topology, ecn=value))


def _pmax(value: str) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if spec.loop is None or spec.loop.kind != "amecn":
            raise FactorError(f"{spec.label}: no AMECN loop (e.g. --only 'amecn-*')")
        return replace(spec, loop=replace(spec.loop, pmax=value))
    return apply


def _field_of(kind: type[Aqm], name: str, value) -> Callable[[RunSpec], RunSpec]:
    """A parameter of one algorithm only (others have parameters of the same name that mean
    other things: REM's alpha and capacity, PIE's alpha and beta, PI's a and b)."""
    def apply(spec: RunSpec) -> RunSpec:
        if not isinstance(spec.aqm, kind):
            raise FactorError(f"{spec.label}: {name} is {kind.action.upper()}'s, not "
                              f"{type(spec.aqm).__name__}'s (e.g. --only '{kind.action}-*')")
        return replace(spec, aqm=replace(spec.aqm, **{name: value}))
    return apply


def _ceiling(value: float) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if spec.loop is None:
            raise FactorError(f"{spec.label}: no ARED or AMECN loop to raise the ceiling of")
        return replace(spec, loop=replace(spec.loop, ceiling=value))
    return apply


def _capacity(value: float) -> Callable[[RunSpec], RunSpec]:
    """NEWQUE's C as a fraction of the bottleneck's packet rate."""
    def apply(spec: RunSpec) -> RunSpec:
        slowest = min(link.pps for link in _bottlenecks(spec))
        return _field_of(Newque, "capacity", value * slowest)(spec)
    return apply


def _gains(value: float) -> Callable[[RunSpec], RunSpec]:
    """PI's a and b, both multiplied."""
    def apply(spec: RunSpec) -> RunSpec:
        if not isinstance(spec.aqm, Pi):
            raise FactorError(f"{spec.label}: the gains are PI's, not "
                              f"{type(spec.aqm).__name__}'s (e.g. --only 'pi-*')")
        return replace(spec, aqm=replace(spec.aqm, a=spec.aqm.a * value,
                                         b=spec.aqm.b * value))
    return apply


def _hollot(flows: int) -> Callable[[RunSpec], RunSpec]:
    """PI's a and b by Hollot et al.'s rule for the run's own link: its packet rate, its
    round trip at qref (propagation + qref at that rate), at least `flows` flows."""
    def apply(spec: RunSpec) -> RunSpec:
        if not isinstance(spec.aqm, Pi):
            raise FactorError(f"{spec.label}: the design rule is PI's, not "
                              f"{type(spec.aqm).__name__}'s (e.g. --only 'pi-*')")
        pps = min(link.pps for link in _bottlenecks(spec))
        rtt = spec.topology.expected_rtt(0, 0) + spec.aqm.reference() / pps
        a, b = hollot_gains(pps, flows, rtt, spec.aqm.interval)
        return replace(spec, aqm=replace(spec.aqm, a=a, b=b))
    return apply


def _run_field(name: str, value) -> Callable[[RunSpec], RunSpec]:
    """One of the run's own fields (aqm_from, duration), where the run allows the value
    (RunSpec.check says why not)."""
    def apply(spec: RunSpec) -> RunSpec:
        changed = replace(spec, **{name: value})
        try:
            changed.check()
        except ValueError as err:
            raise FactorError(str(err)) from None
        return changed
    return apply


def _drop(value: str) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if value == "enqueue" and getattr(type(spec.aqm), "reads_sojourn", False):
            raise FactorError(f"{spec.label}: {type(spec.aqm).action} acts on each packet's "
                              "sojourn, which a packet has not yet at enqueue")
        return spec     # the program is the change (drop_point)
    return apply


def _program(value: str) -> Callable[[RunSpec], RunSpec]:
    return lambda spec: spec    # the program is the change (program(), Experiment.runs)


def drop_point(factors: tuple[tuple[str, str], ...]) -> str:
    """Where the plan's program drops (tooling.build's --drop-at): a factor that
    changes the compiled program rather than the runs."""
    return dict(factors).get("drop", "dequeue")


def program(factors: tuple[tuple[str, str], ...], specs: Iterable[RunSpec],
            planned: Iterable[RunSpec] = ()) -> Profile:
    """The plan's program (tooling.build's --algorithms): the smallest build profile
    that holds every run's algorithms; with --factor program=plan, every planned run's,
    `--only` leaving none out (a controlled run on its baseline's program); or "all"
    (--factor program=all). The other factor that changes the program, not the runs."""
    chosen = dict(factors).get("program", SMALLEST)
    if chosen == ALL:
        return ALL_PROFILE
    specs = [*specs, *(planned if chosen == PLAN else ())]
    return Profile.of(a for spec in specs for a in spec.algorithms)


def _number(low: float, high: float, kind=float):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise FactorError(f"{text[:40]!r} is not a{'n integer' if kind is int else ' number'}")
        if not low <= value <= high:
            raise FactorError(f"{value} is outside [{low:g}, {high:g}]")
        return value
    return parse


def _choice(options: tuple[str, ...]):
    def parse(text: str) -> str:
        if text not in options:
            raise FactorError(f"{text[:40]!r} is not one of {', '.join(options)}")
        return text
    return parse


def _flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise FactorError(f"{text[:40]!r} is not 0 or 1")
    return text == "1"


def _twin(spec: RunSpec) -> RunSpec:
    """A factor of the ns-3 twin's behaviour: the twin reads it from the run's factors."""
    return spec


def ns3_discs(changed) -> bool:
    """Whether ns-3's own queue discs decided in a twin run with these factors (pairs, as a
    run's config.json and a published file hold them), not the golden models."""
    return ("aqm_impl", "ns3") in {tuple(f) for f in changed}


def _aqm_impl(value: str) -> Callable[[RunSpec], RunSpec]:
    def apply(spec: RunSpec) -> RunSpec:
        if value == "ns3":
            if not has_native(spec.aqm):
                raise FactorError(f"{spec.label}: ns-3 has no queue disc of {spec.aqm.action} "
                                  "(it has RED, RED+ECN, CoDel, PIE and DropTail's; e.g. "
                                  "--only 'codel-*,pie-*')")
            if spec.aqm_from or (spec.loop is not None and spec.loop.kind != "ared"):
                raise FactorError(f"{spec.label}: ns-3's queue disc runs from the start, "
                                  "adapting only as its own ARED")
        return spec
    return apply


@dataclass(frozen=True)
class Factor:
    what: str
    parse: Callable[[str], object]
    change: Callable[[object], Callable[[RunSpec], RunSpec]]
    backends: tuple[str, ...] = ("bmv2", "ns3")    # where it means something


FACTORS: dict[str, Factor] = {
    "streams": Factor("the most streams (TCP connections) per iperf3 process: larger ones "
                      "split, each part starting when the whole would have sent",
                      _number(1, 128, int), _streams),
    "transport": Factor("every long-lived flow's sender (kernel: Linux TCP)",
                        _choice(TRANSPORTS), _transport),
    "buffer": Factor("packets of the bottleneck queue(s), and the AQM's limit",
                     _number(1, 100_000, int), _buffer),
    "rate": Factor("Mb/s of the bottleneck link(s), at their packet size",
                   _number(0.01, 1000), _rate),
    "packet": Factor("bytes per packet (the hosts' MTU), at the same packets/s",
                     _number(100, 1500, int), _packet),
    "gentle": Factor("RED's gentle region, 0 or 1", _flag, lambda v: _aqm_field("gentle", v)),
    "wait": Factor("the RED family's wait between marks (ns-2's wait_, the seeds' simulator), "
                   "0 or 1", _flag, lambda v: _aqm_field("wait", v)),
    "wq": Factor("the AQM's EWMA weight", _number(1e-6, 1), lambda v: _aqm_field("wq", v)),
    "maxp": Factor("RED's maxp", _number(1e-6, 1), lambda v: _aqm_field("maxp", v)),
    "p2max": Factor("MECN's P2max", _number(0, 1), lambda v: _aqm_field("p2max", v)),
    "pmax": Factor("which maximum AMECN adapts: p1 (P1max only), both (P2max follows)",
                   _choice(("p1", "both")), _pmax),
    "ceiling": Factor("the most ARED and AMECN raise their probability to (the papers' 0.5)",
                      _number(0.02, 1), _ceiling),
    "alpha": Factor("NEWQUE's increase step", _number(0, 1),
                    lambda v: _field_of(Newque, "alpha", v)),
    "beta": Factor("NEWQUE's decrease step", _number(0, 1), lambda v: _field_of(Newque, "beta", v)),
    "min_interval": Factor("NEWQUE's pacing of its changes, s (0: every qualifying packet)",
                           _number(0, 10),
                           lambda v: _field_of(Newque, "min_interval", v)),
    "capacity": Factor("NEWQUE's C, as a fraction of the bottleneck's packet rate",
                       _number(1e-3, 10), _capacity),
    "rate_of": Factor("what NEWQUE's rate estimate counts: arrivals (the seed's) or "
                      "departures", _choice(("arrivals", "departures")),
                      lambda v: _field_of(Newque, "rate_of", v)),
    "aecn_a": Factor("AECN's a: the fragile group's max_p is maxp / a (default 2)",
                     _number(1, 1e6), lambda v: _field_of(Aecn, "a", v)),
    "aecn_b": Factor("AECN's b: the robust group's max_p is min(maxp b, 1) (default 2; 1: "
                     "the average group's maxp)",
                     _number(1, 1e6), lambda v: _field_of(Aecn, "b", v)),
    "gains": Factor("PI's gains a and b, both multiplied by this", _number(1e-3, 1e4), _gains),
    "hollot": Factor("PI's a and b by Hollot et al.'s design rule for the run's own link (its "
                     "packet rate, its round trip at qref) and at least this many flows",
                     _number(1, 100000, int), _hollot),
    "cc": Factor("Linux congestion control of kernel TCP flows",
                 _choice(CONGESTION_CONTROLS), _cc),
    "ecn": Factor("the hosts' ECN (tcp_ecn), 0 or 1", _flag, _ecn),
    "access": Factor("the senders' one-way access delay in ms (E4: long and cross senders)",
                     _number(0, 1000), _access),
    "clients": Factor("short-transfer clients (E7)", _number(1, 50, int), _clients),
    "aqm_from": Factor("seconds into the run before the bottleneck's AQM is installed: until "
                       "then DropTail at the AQM's limit, so the flows connect without the "
                       "AQM's drops (a full queue still drops SYNs; retransmissions after it "
                       "meet the AQM); after every flow's start, at most measure_from",
                       _number(0, 3600), lambda v: _run_field("aqm_from", v)),
    "duration": Factor("seconds each run lasts (its flows without an end run to it; the "
                       "metrics' window from measure_from to the end)",
                       _number(1, 3600), lambda v: _run_field("duration", v)),
    "drop": Factor("where the AQM drops: dequeue (egress, BMv2's service slot spent) or "
                   "enqueue (ingress, before the queue, as Linux and ns-2)",
                   _choice(DROP_POINTS), _drop, ("bmv2",)),
    "program": Factor("the switches' program: profile (the smallest build profile for the "
                      "runs made, the default), plan (for every planned run, as the "
                      "baseline's) or all (every algorithm's, as before profiles)",
                      _choice(PROGRAMS), _program, ("bmv2",)),
    "scale": Factor("the ns-3 twin's scale: paper (the paper's own link rates, packet "
                    "sizes, flows and buffers, where it gives them; the default) or testbed "
                    "(the switch's scaled plan)", _choice((PAPER, TESTBED)),
                    lambda v: _twin, ("ns3",)),
    "decide_at": Factor("where the twin's AQM decides: paper (as its paper or RFC: on "
                        "arrival, CoDel, PI2 and DualPI2 at dequeue; the default), arrival, "
                        "or departure (the switch's egress)", _choice(DECIDE_POINTS),
                        lambda v: _twin, ("ns3",)),
    "bmv2_drop": Factor("the twin's drops at departure keep the packet's service slot, as "
                        "BMv2's egress drops do (0: the link is free at once, as in ns-2 "
                        "and ns-3; the default)", _flag, lambda v: _twin, ("ns3",)),
    "jitter": Factor("ms the twin's delay lines hold a packet late on average (exponential, "
                     "in order: one late packet holds up those behind it), on each access "
                     "link with a delay or a loss, at both ends, as the testbed's userspace "
                     "delay lines on busy cores (0: never late; the default)",
                     _number(0, 100), lambda v: _twin, ("ns3",)),
    "scalable": Factor("the twin's scalable sender: dctcp (ns-3's DCTCP on ECT(1), the "
                       "default) or transport (the testbed's, transport/scalable.py)",
                       _choice(SCALABLE_SENDERS), lambda v: _twin, ("ns3",)),
    "aqm_impl": Factor("the twin's AQM: model (our golden model, the default) or ns3 "
                       "(ns-3's own RED, CoDel, PIE or FIFO queue disc, with its own ARED)",
                       _choice(AQM_IMPLS), _aqm_impl, ("ns3",)),
}


def parse(texts: list[str], backend: str = "bmv2") -> tuple[tuple[str, str], ...]:
    """NAME=VALUE strings, checked, for runs on `backend`; each name at most once."""
    out: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or name not in FACTORS:
            raise FactorError(f"{text[:60]!r}: a factor is NAME=VALUE, NAME one of "
                              f"{', '.join(FACTORS)}")
        if name in out:
            raise FactorError(f"factor {name} given twice")
        if backend not in FACTORS[name].backends:
            raise FactorError(f"--factor {name} is the {FACTORS[name].backends[0]} "
                              f"backend's, not {backend}'s (--backend "
                              f"{FACTORS[name].backends[0]})")
        try:
            FACTORS[name].parse(value)
        except FactorError as err:
            raise FactorError(f"--factor {text[:60]}: {err}") from None
        out[name] = value
    if {"gains", "hollot"} <= set(out):
        raise FactorError("gains and hollot both set PI's a and b: give one")
    return tuple(out.items())


def apply(spec: RunSpec, factors: tuple[tuple[str, str], ...]) -> RunSpec:
    """In FACTORS' order, whatever the command line's: the senders before what they need."""
    order = list(FACTORS)
    for name, value in sorted(factors, key=lambda f: order.index(f[0])):
        try:
            spec = FACTORS[name].change(FACTORS[name].parse(value))(spec)
        except FactorError as err:
            raise FactorError(f"--factor {name}={value}: {err}") from None
    return replace(spec, factors=factors) if factors else spec


def describe(factors: Iterable[Sequence[str]], meanings: bool = True) -> str:
    """NAME=VALUE of each factor (as a plan holds them, or a config.json as lists), with what
    it changes (for a summary) or without (for a one-line message)."""
    return ", ".join(f"{name}={value}" + (f" ({FACTORS[name].what})" if meanings else "")
                     for name, value in factors)
