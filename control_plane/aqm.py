"""AQM configurations in physical units, validated, and their data-plane encoding.

Each algorithm is a frozen dataclass whose fields are the paper's parameters (packets,
probabilities, EWMA weight). ``encode()`` checks every value and turns it into the exact
integers of one aqm_config table action (p4src/include/control/aqm_config.p4); the
controller writes those integers and the golden model executes them, so both always
agree on what the switch runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar, Union

from control_plane import fixedpoint as fp
from control_plane.adaptation import auto_thresholds

# Linux red.h, Floyd 1993 and seed 004 use wq = 0.002.
DEFAULT_WQ = 0.002
# BMv2's default queue depth.
DEFAULT_LIMIT = 64
# Buckets in a port's idle-decay table, and in the table for all ports (defines.p4).
IDLE_BUCKETS = 1024
IDLE_DECAY_ENTRIES = 65536


class ConfigError(ValueError):
    """A configuration that must not reach the switch; the message says which value and why."""


@dataclass(frozen=True)
class TableAction:
    """One table action with its parameters as data-plane integers."""

    name: str
    params: dict[str, int] = field(default_factory=dict)


def _checked(convert, value, name):
    try:
        return convert(value, name)
    except fp.FixedPointError as err:
        raise ConfigError(str(err)) from None


@dataclass(frozen=True, kw_only=True)
class _Aqm:
    """Parameters every algorithm has: the hard limit and the EWMA weight of the average."""

    action: ClassVar[str]
    limit: int = DEFAULT_LIMIT
    wq: float = DEFAULT_WQ

    def _common(self) -> dict[str, int]:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise ConfigError(f"limit must be a whole number of packets >= 1, got {self.limit!r}")
        if not (isinstance(self.wq, (int, float)) and 0.0 < self.wq < 1.0):
            raise ConfigError(f"wq must be in (0, 1), got {self.wq!r}")
        wq = _checked(fp.to_frac32, self.wq, "wq")
        if wq == 0:
            raise ConfigError(f"wq {self.wq} is below the data plane's resolution 2^-32")
        return {"limit": _checked(fp.to_pkts, self.limit, "limit"), "wq": wq}

    def encode(self) -> TableAction:
        """Validated aqm_config action, without idle_shift (see PortConfig.encode)."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class DropTail(_Aqm):
    """Only the hard limit; the average is still kept (for telemetry)."""

    action: ClassVar[str] = "droptail"

    def encode(self) -> TableAction:
        return TableAction(self.action, self._common())


@dataclass(frozen=True, kw_only=True)
class Red(_Aqm):
    """RED (Floyd & Jacobson 1993): drop with pb = maxp (avg - minth) / (maxth - minth).

    gentle: between maxth and 2 maxth the probability rises from maxp to 1 instead of
    jumping to 1 at maxth.
    """

    action: ClassVar[str] = "red"
    minth: float = 5.0
    maxth: float = 15.0
    maxp: float = 0.1
    gentle: bool = False

    def encode(self) -> TableAction:
        params = self._common()
        minth = _checked(fp.to_qpkt, self.minth, "minth")
        maxth = _checked(fp.to_qpkt, self.maxth, "maxth")
        if minth >= maxth:
            raise ConfigError(f"minth ({self.minth}) must be below maxth ({self.maxth})")
        if not (isinstance(self.maxp, (int, float)) and 0.0 < self.maxp <= 1.0):
            raise ConfigError(f"maxp must be in (0, 1], got {self.maxp!r}")
        if not isinstance(self.gentle, bool):
            raise ConfigError(f"gentle must be true or false, got {self.gentle!r}")
        span = self.maxth - self.minth
        if self.maxp / span >= 1.0:
            raise ConfigError(
                f"maxp / (maxth - minth) = {self.maxp / span:g} per packet must be below 1: "
                "widen the thresholds or lower maxp")
        hardth = maxth
        gentle_slope = 0
        if self.gentle:
            hardth = _checked(fp.to_qpkt, 2 * self.maxth, "2 * maxth (gentle)")
            if (1.0 - self.maxp) / self.maxth >= 1.0:
                raise ConfigError(
                    f"gentle: (1 - maxp) / maxth = {(1.0 - self.maxp) / self.maxth:g} per packet "
                    "must be below 1: raise maxth or maxp")
            gentle_slope = _checked(fp.to_slope, (1.0 - self.maxp) / self.maxth, "gentle slope")
        params.update(
            minth=minth,
            maxth=maxth,
            hardth=hardth,
            slope=_checked(fp.to_slope, self.maxp / span, "slope"),
            maxp=_checked(fp.to_frac32, self.maxp, "maxp"),
            gentle_slope=gentle_slope,
        )
        return TableAction(self.action, params)


@dataclass(frozen=True, kw_only=True)
class RedEcn(Red):
    """RED with ECN (RFC 3168): ECT packets are marked CE where RED would drop them;
    Not-ECT packets are dropped; above maxth (2 maxth if gentle) everything is dropped."""

    action: ClassVar[str] = "red_ecn"


@dataclass(frozen=True, kw_only=True)
class Ecnm(Red):
    """ECNM (seed 002): like RedEcn, but ECT packets are marked above maxth too; drops
    happen only to Not-ECT packets and at the hard limit."""

    action: ClassVar[str] = "ecnm"


@dataclass(frozen=True, kw_only=True)
class Mecn(_Aqm):
    """MECN (seed 001): incipient marks (ECT(1)) with p1 = p1max (avg - minth)/(midth - minth)
    in [minth, midth); moderate marks (CE) with p2 = p2max (avg - midth)/(maxth - midth) in
    [midth, maxth); drop at avg >= maxth. Thresholds 5/10/15 and wq 0.0027 are seed 001's
    simulation values; p1max = p2max = 0.1 is our default (the seed does not give one)."""

    action: ClassVar[str] = "mecn"
    wq: float = 0.0027
    minth: float = 5.0
    midth: float = 10.0
    maxth: float = 15.0
    p1max: float = 0.1
    p2max: float = 0.1

    def encode(self) -> TableAction:
        params = self._common()
        minth = _checked(fp.to_qpkt, self.minth, "minth")
        midth = _checked(fp.to_qpkt, self.midth, "midth")
        maxth = _checked(fp.to_qpkt, self.maxth, "maxth")
        if not minth < midth < maxth:
            raise ConfigError(
                f"thresholds must satisfy minth < midth < maxth, got "
                f"{self.minth} / {self.midth} / {self.maxth}")
        for name in ("p1max", "p2max"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ConfigError(f"{name} must be in [0, 1], got {value!r}")
        slopes = {}
        for name, pmax, lo, hi in (("slope1", self.p1max, self.minth, self.midth),
                                   ("slope2", self.p2max, self.midth, self.maxth)):
            if pmax / (hi - lo) >= 1.0:
                raise ConfigError(
                    f"{name} = {pmax / (hi - lo):g} per packet must be below 1: widen the "
                    "thresholds or lower the probability")
            slopes[name] = _checked(fp.to_slope, pmax / (hi - lo), name)
        params.update(minth=minth, midth=midth, maxth=maxth, **slopes)
        return TableAction(self.action, params)


Aqm = Union[DropTail, Red, RedEcn, Ecnm, Mecn]
ALGORITHMS: dict[str, type[_Aqm]] = {
    cls.action: cls for cls in (DropTail, Red, RedEcn, Ecnm, Mecn)
}


@dataclass(frozen=True)
class IdleDecay:
    """Idle-time decay (1 - wq)^m, m = idle / packet_time, as a lookup table.

    Bucket b covers idle times [b, b + 1) * 2^shift microseconds and holds the FRAC32
    factor at its start and how much it falls across the bucket; the data plane
    interpolates linearly between them. The buckets (at most 1024, a power of two wide)
    reach until the factor rounds to 0; past the last one the average resets to 0. Each
    bucket spans at most 2 * 33 ln 2 / 1024 = 0.045 of log-decay, so the interpolation is
    within 0.045^2 / 8 = 2.5e-4 (relative) of the exact factor, and exact at idle 0.
    """

    shift: int
    buckets: tuple[tuple[int, int], ...]   # (start factor, drop across the bucket)

    @classmethod
    def plan(cls, wq: float, packet_time: float, buckets: int = IDLE_BUCKETS) -> "IdleDecay":
        if not packet_time > 0:
            raise ConfigError(f"packet time must be > 0 s, got {packet_time!r}")
        decay_per_us = -math.log1p(-wq) / (packet_time * 1e6)
        horizon_us = 33 * math.log(2) / decay_per_us
        shift = max(0, math.ceil(math.log2(horizon_us / buckets)))
        if shift > 31:
            raise ConfigError(
                f"idle decay for wq={wq} and packet time {packet_time} s spans more than "
                "2^31 microseconds per bucket")
        width = 1 << shift
        table = []
        for bucket in range(buckets):
            start = fp.to_frac32(math.exp(-decay_per_us * bucket * width))
            if start == 0:
                break
            end = fp.to_frac32(math.exp(-decay_per_us * (bucket + 1) * width))
            table.append((start, start - end))
        return cls(shift, tuple(table))


def port_seed(run_seed: int, port: int) -> int:
    """A non-zero 32-bit xorshift seed for one port, derived from the run's seed."""
    x = (run_seed * 0x9E3779B97F4A7C15 + port * 0xBF58476D1CE4E5B9) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 31
    return (x & 0xFFFF_FFFF) or 1


@dataclass(frozen=True)
class PortProgram:
    """Everything written to the switch for one port, as data-plane integers."""

    port: int
    aqm: TableAction
    decay: IdleDecay
    seed: int
    bmv2_random: bool
    telemetry_interval_us: int | None


@dataclass(frozen=True, kw_only=True)
class PortConfig:
    """One egress port's AQM.

    link_pps: the port's service rate in packets/s (what set_queue_rate is given); RED's
    "typical transmission time" for idle decay is 1 / link_pps.
    seed: the run's seed; each port's xorshift stream is derived from it.
    bmv2_random: use BMv2's unseedable random() instead of the seeded stream.
    telemetry_interval: seconds between telemetry records (0: every packet; None: off).
    """

    port: int
    aqm: Aqm
    link_pps: float
    seed: int = 1
    bmv2_random: bool = False
    telemetry_interval: float | None = None

    def encode(self) -> PortProgram:
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port < 510:
            raise ConfigError(f"port must be a data port number in [0, 509], got {self.port!r}")
        if not isinstance(self.aqm, tuple(ALGORITHMS.values())):
            raise ConfigError(f"unknown AQM {self.aqm!r}")
        if not (isinstance(self.link_pps, (int, float)) and self.link_pps > 0):
            raise ConfigError(f"link_pps must be > 0 packets/s, got {self.link_pps!r}")
        action = self.aqm.encode()
        decay = IdleDecay.plan(self.aqm.wq, 1.0 / self.link_pps)
        interval = None
        if self.telemetry_interval is not None:
            interval = _checked(fp.to_usec, self.telemetry_interval, "telemetry_interval")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        params = {**action.params, "idle_shift": decay.shift}
        return PortProgram(
            port=self.port,
            aqm=TableAction(action.name, params),
            decay=decay,
            seed=port_seed(self.seed, self.port),
            bmv2_random=bool(self.bmv2_random),
            telemetry_interval_us=interval,
        )


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _automatic(cls: type[_Aqm], values: dict[str, str], link_pps: float) -> dict[str, str]:
    """ARED / AMECN automatic mode: thresholds and wq from target_delay (s) and the link
    rate (values pops target_delay)."""
    derived = {"minth", "maxth", "wq"} | ({"midth"} if cls is Mecn else set())
    clash = sorted(derived & set(values))
    if clash:
        raise ConfigError(f"target_delay sets {', '.join(sorted(derived))}; do not also give "
                          f"{', '.join(clash)}")
    if cls not in (Red, RedEcn, Ecnm, Mecn):
        raise ConfigError(f"target_delay applies to red, red_ecn, ecnm and mecn, not {cls.action}")
    text = values.pop("target_delay")
    try:
        rate = float(values.get("link_pps", link_pps))
        auto = auto_thresholds(float(text), rate)
    except ValueError as err:
        raise ConfigError(f"target_delay {text!r}: {err}") from None
    out = {"minth": repr(auto.minth), "maxth": repr(auto.maxth), "wq": repr(auto.wq)}
    if cls is Mecn:
        out["midth"] = repr(auto.midth)
    return out


def _parse(name: str, text: str, current: object) -> object:
    """A CLI value for the field `name`, typed after the field's current value."""
    try:
        if name == "telemetry_interval":
            return None if text.lower() in ("off", "none") else float(text)
        if isinstance(current, bool):
            if text.lower() not in _TRUE | _FALSE:
                raise ValueError
            return text.lower() in _TRUE
        if isinstance(current, int) and name in ("limit", "seed", "port"):
            return int(text)
        return float(text)
    except ValueError:
        raise ConfigError(f"{name}: cannot read {text!r} as a value of this parameter") from None


def change(config: PortConfig, algorithm: str | None = None,
           values: dict[str, str] | None = None) -> PortConfig:
    """A new, validated PortConfig: the algorithm (kept if None) and parameter changes given
    as text in physical units (packets, probabilities, seconds). Parameters the new
    algorithm shares with the old one carry over; unknown names are refused."""
    values = dict(values or {})
    cls = type(config.aqm)
    if algorithm is not None:
        if algorithm not in ALGORITHMS:
            raise ConfigError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        cls = ALGORITHMS[algorithm]
    aqm_fields = {f.name: f for f in fields(cls)}
    port_fields = {"link_pps", "seed", "bmv2_random", "telemetry_interval"}
    if "target_delay" in values:
        values.update(_automatic(cls, values, config.link_pps))
    unknown = sorted(set(values) - set(aqm_fields) - port_fields)
    if unknown:
        raise ConfigError(f"unknown parameter {unknown[0]!r} for {cls.action}; known: "
                          f"{', '.join(sorted(aqm_fields) + sorted(port_fields))}")
    old = config.aqm
    kwargs = {name: getattr(old, name) for name in aqm_fields if hasattr(old, name)}
    defaults = cls()
    for name, text in values.items():
        if name in aqm_fields:
            kwargs[name] = _parse(name, text, getattr(defaults, name))
    port_kwargs = {name: _parse(name, text, getattr(config, name))
                   for name, text in values.items() if name in port_fields}
    new = replace(config, aqm=cls(**kwargs), **port_kwargs)
    new.encode()
    return new
