"""A port's AQM configuration in physical units, validated, and what the switch is given.

The algorithms themselves are in control_plane/algorithms/ (one module each). This
module holds what is the same for every port: its service rate, the run's seed, the
telemetry interval, the encoding into a PortProgram (the exact integers the controller
writes and the golden model executes), and `change()`, which applies parameter changes
typed as text (the CLI, TOML files).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import ClassVar, Union

from control_plane import fixedpoint as fp
from control_plane.adaptation import auto_thresholds
from control_plane.dataplane import MAX_DATA_PORT
from control_plane import algorithms
from control_plane.algorithms import *  # noqa: F403 (every algorithm's class, by its name)
from control_plane.algorithms import ALGORITHMS
from control_plane.algorithms.base import (DEFAULT_LIMIT, Aqm, ConfigError, Encoded, Link,
                                           TableAction, checked)
from control_plane.algorithms.red import DEFAULT_WQ
from control_plane.lookup import TABLE_ENTRIES, TableRows
from control_plane.values import parse_value, shown_input

__all__ = [*algorithms.__all__, "ConfigError", "DEFAULT_LIMIT", "DEFAULT_WQ", "NoAqm",
           "PARAMETERS", "PortConfig", "PortProgram", "TABLE_ENTRIES", "TableAction", "change",
           "parse_value", "port_seed", "shown_input"]

AnyAqm = Union[tuple(ALGORITHMS.values())]


def port_seed(run_seed: int, port: int) -> int:
    """A non-zero 32-bit xorshift seed for one port, derived from the run's seed."""
    x = (run_seed * 0x9E3779B97F4A7C15 + port * 0xBF58476D1CE4E5B9) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & 0xFFFF_FFFF_FFFF_FFFF
    x ^= x >> 31
    return (x & 0xFFFF_FFFF) or 1


@dataclass(frozen=True, kw_only=True)
class NoAqm:
    """No AQM: the port has no aqm_config entry and takes the program's default, which
    forwards without marking, dropping or telemetry (only BMv2's own queue limits it); the
    port's `enqueued` and `seen` counters still count."""

    action: ClassVar[str] = "none"
    family: ClassVar[str] = ""
    generic: ClassVar[tuple[str, ...]] = ()
    ect1: ClassVar[str] = "not read (no AQM)"
    group_names: ClassVar[tuple[str, ...]] = ()
    queues = Aqm.queues

    def encode(self, link: Link) -> None:
        return None


@dataclass(frozen=True)
class PortProgram:
    """Everything written to the switch for one port, as data-plane integers (encoded is
    None for a port without AQM)."""

    port: int
    encoded: Encoded | None
    seed: int               # the port's xorshift32 seed (port_seed): never 0, where it stays
    bmv2_random: bool
    telemetry_interval_us: int | None

    def __post_init__(self) -> None:
        if not 0 < self.seed <= 0xFFFF_FFFF:
            raise ValueError(f"a port's seed is a non-zero 32-bit number, not {self.seed}")

    @property
    def prng_seed(self) -> int:
        """The aqm_config action's seed: the stream's, or 0 for BMv2's random()."""
        return 0 if self.bmv2_random else self.seed

    @property
    def aqm(self) -> TableAction | None:
        return self.encoded.action if self.encoded else None

    @property
    def tables(self) -> tuple[TableRows, ...]:
        return self.encoded.tables if self.encoded else ()


@dataclass(frozen=True, kw_only=True)
class PortConfig:
    """One egress port's AQM.

    link_pps: the port's service rate in packets/s (what set_queue_rate is given); RED's
    "typical transmission time" is 1 / link_pps, NEWQUE's and REM's capacity default to it.
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
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= MAX_DATA_PORT:
            raise ConfigError(f"port must be a data port number in [0, {MAX_DATA_PORT}], got "
                              f"{self.port!r}")
        if not isinstance(self.aqm, (NoAqm, *ALGORITHMS.values())):
            raise ConfigError(f"unknown AQM {self.aqm!r}")
        if not (isinstance(self.link_pps, (int, float)) and not isinstance(self.link_pps, bool)
                and 0 < self.link_pps < float("inf")):
            raise ConfigError(f"link_pps must be > 0 packets/s, got {self.link_pps!r}")
        encoded = self.aqm.encode(Link(float(self.link_pps)))
        interval = None
        if self.telemetry_interval is not None:
            interval = checked(fp.to_usec, self.telemetry_interval, "telemetry_interval")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not isinstance(self.bmv2_random, bool):
            raise ConfigError(f"bmv2_random must be true or false, got {self.bmv2_random!r}")
        return PortProgram(port=self.port, encoded=encoded, seed=port_seed(self.seed, self.port),
                           bmv2_random=self.bmv2_random, telemetry_interval_us=interval)


# ----- changes typed as text ---------------------------------------------------------------

PORT_FIELDS = ("link_pps", "seed", "bmv2_random", "telemetry_interval")
# Every name a change may give: a `set` whose first word is one of these lacks its value.
PARAMETERS = frozenset({f.name for cls in ALGORITHMS.values() for f in fields(cls)}
                       | {f.name for f in fields(PortConfig)} | {"target_delay"})


def _automatic(cls: type[Aqm], values: dict[str, str], link_pps: float) -> dict[str, str]:
    """ARED / AMECN automatic mode: the parameters the class derives from target_delay (s)
    and the link rate (thresholds, wq; values pops target_delay)."""
    derived = set(cls.target_delay_sets)
    if not derived:
        takers = [name for name, c in ALGORITHMS.items() if c.target_delay_sets]
        raise ConfigError(f"target_delay applies to {', '.join(takers[:-1])} and "
                          f"{takers[-1]}, not {cls.action}")
    clash = sorted(derived & set(values))
    if clash:
        raise ConfigError(f"target_delay sets {', '.join(sorted(derived))}; do not also give "
                          f"{', '.join(clash)}")
    text = values.pop("target_delay")
    delay = parse_value("target_delay", "float", text)
    rate = link_pps
    if "link_pps" in values:
        rate = parse_value("link_pps", "float", values["link_pps"])
    try:
        auto = auto_thresholds(delay, rate)
    except ValueError as err:
        raise ConfigError(f"target_delay {shown_input(text)}: {err}") from None
    return {name: repr(getattr(auto, name)) for name in cls.target_delay_sets}


def change(config: PortConfig, algorithm: str | None = None,
           values: dict[str, str] | None = None) -> PortConfig:
    """A new, validated PortConfig: the algorithm (kept if None) and parameter changes given
    as text in physical units (packets, probabilities, seconds). Within a family (the
    classes' `family`: the RED family, PI2 and DualPI2) every shared parameter carries
    over; to another algorithm only the limit and the ECN mode do (the same name can mean
    different things: NEWQUE's and REM's alpha).
    Unknown names are refused."""
    values = dict(values or {})
    cls = type(config.aqm)
    if algorithm is not None:
        if algorithm not in ALGORITHMS and algorithm != NoAqm.action:
            raise ConfigError(f"unknown algorithm {shown_input(algorithm)}; known: "
                              f"{', '.join(ALGORITHMS)}, {NoAqm.action}")
        cls = ALGORITHMS.get(algorithm, NoAqm)
    aqm_fields = {f.name: f for f in fields(cls)}
    if "target_delay" in values:
        values.update(_automatic(cls, values, config.link_pps))
    unknown = sorted(set(values) - set(aqm_fields) - set(PORT_FIELDS))
    if unknown:
        raise ConfigError(f"unknown parameter {shown_input(unknown[0])} for {cls.action}; known: "
                          f"{', '.join(sorted(aqm_fields) + sorted(PORT_FIELDS))}")
    old = config.aqm
    same_family = type(old) is cls or (cls.family and cls.family == old.family)
    kwargs = {name: getattr(old, name) for name in aqm_fields
              if name in {f.name for f in fields(old)}
              and (same_family or name in cls.generic)}
    port_kinds = {f.name: str(f.type) for f in fields(PortConfig)}
    port_kwargs = {}
    for name, text in values.items():
        if name in aqm_fields:
            kwargs[name] = parse_value(name, str(aqm_fields[name].type), text)
        else:
            port_kwargs[name] = parse_value(name, port_kinds[name], text)
    new = replace(config, aqm=cls(**kwargs), **port_kwargs)
    new.encode()
    return new
