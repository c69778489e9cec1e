"""AECN (seed 002, ch. 5; p4src/include/aqm/aecn.p4): ECN with one maximum marking
probability per RTT group, and marks applied to the front.

- Groups by RTT: robust [0.5, 75) ms, average [75, 150) ms, fragile >= 150 ms, unknown
  (no RTT) average; the boundaries are parameters. The RTT is the one the switch measures
  (control_plane/rtt_tracker.py), or the aecn_groups table's (source prefix or 5-tuple ->
  group, from `groups`), or measured with the table when there is no measurement
  (`rtt_source`).
- max_p per group: robust min(maxp b, 1), average maxp, fragile maxp / a. The seed says a
  and b "depend on the average round-trip time of each flow group" but gives no values in
  the text we have (ch. 5 ends at Fig. 5.8); our defaults are the ratios of its group RTTs
  in ch. 5 (200 / 100 / 50 ms): a = 200/100 = 2, b = 100/50 = 2.
- Between the group's minth and maxth a packet decides with its group's slope, uniformised
  as RED with one count per group (with one count for the port, the group with the
  highest max_p takes most marks: 5 times the average group's instead of 2 in
  tests/algorithms/test_aecn.py's setting). A decision is owed by the group and paid by the next
  departing ECT packet of the group not yet marked (the deciding packet itself when it is
  one: egress runs at dequeue, so the departing packet is the front of its group's
  queue). A deciding Not-ECT packet is dropped, as ECN does. A decision on a CE packet is
  owed too (it cannot carry another mark). Debts are at most 255 per group and all end
  when the average falls below the lowest ramp start (minth, or robust_minth when
  lower). avg >= maxth drops; a packet that pays a debt there (or at the limit) is
  dropped, the drop being its group's signal.
- The seed adjusts minth for the robust group and maxth with the number of flows, but the
  text gives no rule (its refinement section is not in the seed): `robust_minth` (default
  minth) and `maxth` are parameters the operator or an experiment sets; nothing adapts
  them automatically.
- wait: ns-2's wait between a group's decisions (red.py), per group count, as RED's.
  Seed 002 simulated AECN in ns-2, whose RED waits by default; AECN's decision is RED's
  marker, so the rule applies as it does to RED (off by default, as RED's).
Defaults: minth 10, maxth 30 (the seed's ch. 5), maxp 0.1 (RED's; the seed sweeps 0.1 to
0.8), wq 0.002; ECN always (AECN is an ECN algorithm).

`groups` is text: rules separated by ';', each `field:value[,field:value...]=group` with
fields src, dst (IPv4 prefixes), protocol, sport, dport; the first rule that matches wins,
e.g. "src:10.0.0.1/32=fragile;src:10.0.0.0/24,dport:5201=robust".

Telemetry: `avg`, `prob` (the group's pb) and `count` as RED; `group`; `rtt` and
`ingress_ts` (the tracker's result and input); `state0` = the debts (robust | average << 8
| fragile << 16); `state1` = 1 when the group came from the measured RTT.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (U32, Aqm, Arrival, ConfigError, Decision, Encoded,
                                           FiveTuple, Link, TableAction, TableRule, checked,
                                           number)
from control_plane.algorithms.red import (DEFAULT_WQ, MarkerModel, QueueAverageModel, Ramp,
                                          common_red, slope)
from control_plane.dataplane import EcnMode

GROUPS = ("robust", "average", "fragile")
ROBUST, AVERAGE, FRAGILE = range(3)
RTT_SOURCES = ("table", "measured", "measured_or_table")
DEBT_MAX = 0xFF
# Fields a rule may name, their widths, and how their values are read.
RULE_FIELDS = {"src": ("src_addr", 32), "dst": ("dst_addr", 32), "protocol": ("protocol", 8),
               "sport": ("src_port", 16), "dport": ("dst_port", 16)}


def parse_rules(text: str) -> list[tuple[dict[str, tuple[int, int]], int]]:
    """`groups` text to (match as field -> (value, mask), group index), in order."""
    rules = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        fields_text, eq, group = part.rpartition("=")
        if not eq or group not in GROUPS:
            raise ConfigError(f"groups: rule {part[:40]!r} must end in '=' and one of "
                              f"{', '.join(GROUPS)}")
        match = {}
        for item in fields_text.split(","):
            name, colon, value = item.strip().partition(":")
            if name not in RULE_FIELDS or not colon or name in match:
                raise ConfigError(f"groups: {item.strip()[:40]!r} must be one of "
                                  f"{', '.join(RULE_FIELDS)} with ':value', each once")
            width = RULE_FIELDS[name][1]
            try:
                if width == 32:
                    net = ipaddress.IPv4Network(value, strict=True)
                    match[name] = (int(net.network_address), int(net.netmask))
                else:
                    if not (value.isascii() and value.isdecimal()):
                        raise ValueError
                    whole = int(value, 10)
                    if not 0 <= whole < 1 << width:
                        raise ValueError
                    match[name] = (whole, (1 << width) - 1)
            except ValueError:
                raise ConfigError(f"groups: {name} {value[:40]!r} is not a valid "
                                  f"{'IPv4 prefix' if width == 32 else f'{width}-bit number'}"
                                  ) from None
        rules.append((match, GROUPS.index(group)))
    return rules


@dataclass(frozen=True, kw_only=True)
class Aecn(Aqm):
    action: ClassVar[str] = "aecn"
    prose_name: ClassVar[str] = "AECN"
    decides_at: ClassVar[str] = "departure"
    family: ClassVar[str] = "red"
    group_names: ClassVar[tuple[str, ...]] = GROUPS
    control: ClassVar[str] = "Red"
    parts: ClassVar[tuple[str, ...]] = ("RTT_TRACKER", "L4_PORTS", "GROUP_INDEX")
    record: ClassVar[tuple[str, ...]] = ("avg", "count", "prob", "state0", "state1",
                                         "ingress_ts", "rtt", "group")
    around: ClassVar[bool] = True
    wq: float = DEFAULT_WQ
    minth: float = 10.0
    maxth: float = 30.0
    maxp: float = 0.1
    a: float = 2.0
    b: float = 2.0
    robust_minth: float | None = None     # packets; None: minth
    robust_from: float = 0.0005           # s: shorter RTTs count as no measurement
    average_from: float = 0.075
    fragile_from: float = 0.150
    rtt_source: str = "measured_or_table"
    groups: str = ""
    wait: bool = False

    @classmethod
    def benchmark(cls, limit: int) -> dict[str, Aqm]:
        """The measured RTT first, the table when there is none: UDP (and TCP until both
        legs are sampled) is classified by the table's rule."""
        return {cls.action: cls(groups="sport:1024=fragile", limit=limit)}

    def encode(self, link: Link) -> Encoded:
        params, decay_table = common_red(self, self.wq, self.wait, link)
        robust_minth = self.minth if self.robust_minth is None else self.robust_minth
        minth = checked(fp.to_qpkt, self.minth, "minth")
        low = checked(fp.to_qpkt, robust_minth, "robust_minth")
        maxth = checked(fp.to_qpkt, self.maxth, "maxth")
        if not (minth < maxth and low < maxth):
            raise ConfigError(f"minth ({self.minth}) and robust_minth ({robust_minth}) must be "
                              f"below maxth ({self.maxth})")
        number(self.maxp, "maxp", 0.0, 1.0, low_open=True)
        number(self.a, "a", 1.0, 1e6)
        number(self.b, "b", 1.0, 1e6)
        maxps = (min(self.maxp * self.b, 1.0), self.maxp, self.maxp / self.a)
        starts = (robust_minth, self.minth, self.minth)
        slopes = [slope(p, start, self.maxth, f"{name} max_p / (maxth - minth)")
                  for p, start, name in zip(maxps, starts, GROUPS)]
        bounds = [checked(fp.to_usec, getattr(self, name), name)
                  for name in ("robust_from", "average_from", "fragile_from")]
        if not 0 < bounds[0] <= bounds[1] <= bounds[2]:
            raise ConfigError("RTT boundaries must satisfy 0 < robust_from <= average_from <= "
                              f"fragile_from, got {self.robust_from} / {self.average_from} / "
                              f"{self.fragile_from} s")
        if self.rtt_source not in RTT_SOURCES:
            raise ConfigError(f"rtt_source must be one of {', '.join(RTT_SOURCES)}, got "
                              f"{str(self.rtt_source)[:40]!r}")
        if not isinstance(self.groups, str):
            raise ConfigError(f"groups must be text, got {self.groups!r}")
        rules = parse_rules(self.groups)
        params.update(minth=minth, robust_minth=low, maxth=maxth, slope_robust=slopes[0],
                      slope_average=slopes[1], slope_fragile=slopes[2],
                      robust_from=bounds[0], average_from=bounds[1], fragile_from=bounds[2],
                      rtt_source=RTT_SOURCES.index(self.rtt_source))
        table_rules = tuple(
            TableRule("aecn_groups", tuple((RULE_FIELDS[name][0], m) for name, m in match.items()),
                      priority=len(rules) - k, action="set_group", params=(("group", group),))
            for k, (match, group) in enumerate(rules))
        return Encoded(TableAction(self.action, params), EcnMode.MARK, params["limit"],
                       (decay_table,), table_rules,
                       measures_rtt=self.rtt_source != "table")

    @classmethod
    def model(cls, encoded: Encoded) -> "AecnModel":
        return AecnModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"avg": fp.from_qpkt(record.avg), "p": fp.from_frac32(record.prob),
                "group": float(record.group), "rtt_ms": record.rtt / 1000,
                **{f"debt_{name}": float((record.state0 >> (8 * k)) & DEBT_MAX)
                   for k, name in enumerate(GROUPS)}}


def matches(rule: TableRule, flow: FiveTuple) -> bool:
    values = {"src_addr": flow.src, "dst_addr": flow.dst, "protocol": flow.protocol,
              "src_port": flow.sport, "dst_port": flow.dport}
    return all(values[name] & mask == value for name, (value, mask) in rule.match)


class AecnModel:
    """aecn.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.average = QueueAverageModel(self.p["wq"], encoded.tables[0].lookup)
        self.marker = MarkerModel()
        self.rules = sorted(encoded.rules, key=lambda r: -r.priority)
        self.debts = 0

    def classify(self, pkt: Arrival) -> tuple[int, int]:
        """(group, 1 if it came from the measured RTT)."""
        p = self.p
        if p["rtt_source"] != RTT_SOURCES.index("table") and pkt.rtt >= p["robust_from"]:
            if pkt.rtt < p["average_from"]:
                return ROBUST, 1
            return (FRAGILE if pkt.rtt >= p["fragile_from"] else AVERAGE), 1
        if p["rtt_source"] != RTT_SOURCES.index("measured") and pkt.flow is not None:
            for rule in self.rules:
                if matches(rule, pkt.flow):
                    return dict(rule.params)["group"], 0
        return AVERAGE, 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        group, measured = self.classify(pkt)
        slope_a = (p["slope_robust"], p["slope_average"], p["slope_fragile"])[group]
        ramp = Ramp(t0=p["robust_minth"] if group == ROBUST else p["minth"], t1=p["maxth"],
                    t2=p["maxth"], slope_a=slope_a, base_b=0, slope_b=0, wait=p["wait"] == 1)
        avg = self.average.update(fresh, pkt)
        region, pb, count, decided = self.marker.step(fresh, ramp, avg, rnd, group)

        if fresh or avg < min(p["minth"], p["robust_minth"]):
            self.debts = 0
        shift = 8 * group
        owed = (self.debts >> shift) & DEBT_MAX
        fire = False
        if decided:
            if pkt.ecn == 0:               # Not-ECT: dropped where it would be marked
                fire = True
            elif owed != DEBT_MAX:
                owed += 1
        if pkt.ecn in (1, 2) and owed:     # ECT(1), ECT(0): not marked yet
            fire, owed = True, owed - 1
        self.debts = (self.debts & ~(DEBT_MAX << shift) & U32) | (owed << shift)
        return Decision(fire=fire, region=region, prob=pb, avg=avg, count=count,
                        state0=self.debts, state1=measured, group=group, rtt=pkt.rtt,
                        ingress_ts=pkt.ingress_ts)
