"""Build profiles: one P4 source compiled into programs that carry only some algorithms.

As stratum's fabric-tna builds fabric, fabric-int, fabric-upf ... from one source, a
profile is the program compiled with preprocessor symbols (p4c -D): P4AQM_WITH_<PART> for
each part its algorithms need (p4src/include/profile.p4). A packet in BMv2 pays for every
header, metadata field and parser state of the program, whatever its port runs, so a
profile pays only for its own. The default program is "all", every part.

    python -m tooling.build --algorithms red,mecn     (make build ALGORITHMS=red,mecn)

A profile may also leave out parts every program carries by default (OPTIONAL_PARTS:
telemetry, the seeded PRNG, per-reason counters, RFC 1812's input checks), for the most
packets per second BMv2 can give: `--algorithms codel+lean` leaves out all of them (what
the public P4 AQMs carry), `codel+no-telemetry` one.

A profile of one algorithm may also be built for one configuration (`--algorithms
codel+lean --constants aqm.toml`: Profile.fixed, name "codel+lean+constants"): its
algorithm's parameters, encoded from the file as the controller would, become constants
of the program (p4src/include/lib.p4's PARAM) instead of action data every packet copies,
as P4-CoDel's `#define`s are; profile.json keeps them, and the controller refuses a
configuration whose parameters differ.

The profile's name and algorithms are in its build folder (profile.json) and in its P4Info
(pkg_info: name p4aqm-<profile>, the algorithms as its description); the controller reads
the P4Info it pushes and refuses a port configuration the profile lacks (Profile.check).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import finsy as fy

from control_plane.algorithms import ALGORITHMS
from control_plane.aqm import PortConfig
from control_plane.values import ConfigError, shown_input

ALL = "all"
NO_AQM = "none"      # every profile forwards a port without AQM (control_plane/aqm.py's NoAqm)
PROFILE_FILE = "profile.json"
# The part whose egress clones to DualPI2's charge sessions (the switch installs them only
# for a program that has it).
PRIORITY_QUEUES = "PRIORITY_QUEUES"

# The parts of the program algorithms share (each a P4AQM_WITH_<PART> symbol) and what each
# brings into it; an algorithm names those it needs (its class's `parts`).
SHARED_PARTS = {
    "MECN_LEVELS": "the verdict's incipient level in region A (`level_a`, the "
                   "`marks_incipient` counter, control/verdict.p4); without it a mark sets CE",
    "ARRIVALS": "ingress's arrival number per port (forwarding.p4's `arrivals` register, "
                "`arr_seq` in metadata)",
    "RTT_TRACKER": "ingress's RTT tracker (control/rtt_tracker.p4: `rtt_config`, "
                   "`rtt_events`, `rtt_us` in metadata) and TCP's timestamps option in the "
                   "parser",
    "GROUP_INDEX": "the packet's group's counter and register index in metadata "
                   "(`group_index`: port * 4 + group), which the RED family's marker keys "
                   "its count by (aqm/marker.p4), as the reason counters count by group",
    "L4_PORTS": "the TCP and UDP headers and their parser states (AECN's flow "
                "classification and the RTT tracker read them)",
    PRIORITY_QUEUES: "DualPI2's L queue in ingress (`dualpi2_queue`) and its charge clone in "
                     "egress, aqm/dualpi2.p4 (the controller installs the two charge clone "
                     "sessions per port only for a program with this part)",
}
# The parts every program carries unless its profile leaves them out ("+no-<part>", or all
# of them with "+lean"), and what leaving each out costs the user.
OPTIONAL_PARTS = {
    "TELEMETRY": "the PacketIn telemetry records (telemetry.p4: `telemetry_config`, the "
                 "record's clone to the CPU port); without it `aqmctl watch` and the "
                 "packet-by-packet conformance see nothing",
    "SEEDED_PRNG": "the per-port seeded xorshift32 stream the golden model follows draw by "
                   "draw (prologue.p4); without it every draw is BMv2's random(), so "
                   "runs do not repeat and conformance can check draws only statistically",
    "REASON_COUNTERS": "the counters of drops and marks by reason, by group and of ingress "
                       "drops (verdict.p4, forwarding.p4); without them only `seen` and "
                       "`enqueued` count",
    "INPUT_CHECKS": "RFC 1812 5.2.2's input checks in ingress (the IPv4 checksum's "
                    "verification, a malformed header, a length below the header or beyond "
                    "the frame); without them such a packet is forwarded as any other",
}
# Every packet of an algorithm that draws (its class's `draws`) takes one random draw in
# the prologue; a profile of algorithms that never draw (CoDel, DropTail) has no draw.
DRAWS = "DRAWS"
SEEDED_PRNG = "SEEDED_PRNG"     # what it seeds is the draw: only with DRAWS
TELEMETRY = "TELEMETRY"
GROUP_INDEX = "GROUP_INDEX"
REASON_COUNTERS = "REASON_COUNTERS"
LEAN = "lean"
CONSTANTS = "constants"
# The parameters every algorithm's action takes that stay action data in a program built
# with constants: the action's aqm_common() writes them into the record, for the verdict.
SHARED_PARAMS = ("limit", "ecn_mode")
# The record's fields that only some algorithms' controls write (aqm_types.p4's
# aqm_record_h, each a P4AQM_RECORD_<FIELD> symbol): a profile's record has those of its
# algorithms (every field costs every AQM packet a write to zero it), and its telemetry
# exports 0 for the others, as those algorithms leave them.
RECORD_FIELDS = ("deq_qdepth", "arr_seq", "avg", "count", "prob", "state0", "state1", "event",
                 "ingress_ts", "rtt", "group")
# The record fields the program built to drop at enqueue writes itself (queue_at_arrival.p4).
DROP_AT_ENQUEUE_RECORD = ("deq_qdepth",)


def _check_registry() -> tuple[str, ...]:
    """The P4 controls the registry's algorithms run, in its order (each control's number
    is its place, from 1); a class that names a part or a record field the program lacks,
    or a control that is not a P4 identifier, fails the import."""
    for action, cls in ALGORITHMS.items():
        unknown = set(cls.parts) - set(SHARED_PARTS) | set(cls.record) - set(RECORD_FIELDS)
        if unknown or not (cls.control is None or cls.control.isidentifier()) \
                or not action.isidentifier():
            raise TypeError(f"{cls.__name__}: unknown parts or record fields "
                            f"{sorted(unknown)}, or a control or action {cls.control!r}, "
                            f"{action!r} that is not a P4 identifier")
    return tuple(dict.fromkeys(cls.control for cls in ALGORITHMS.values() if cls.control))


CONTROLS = _check_registry()


def _valid_names() -> str:
    return ", ".join([*ALGORITHMS, NO_AQM, ALL])


def build_command(profile: "Profile") -> str:
    """The make command that builds a profile, and where it goes."""
    if profile.name == ALL:
        return "make build (into build/)"
    return f"make build ALGORITHMS={profile.listed} (into build/profiles/{profile.name}/)"


def _option(part: str) -> str:
    """How a profile's name says it leaves a part out: "no-seeded-prng"."""
    return "no-" + part.lower().replace("_", "-")


def _optional_parts(algorithms) -> tuple[str, ...]:
    """The optional parts a program of these algorithms has unless it leaves them out:
    the seeded stream only where one of them draws (it seeds the draw)."""
    draws = any(ALGORITHMS[a].draws for a in algorithms)
    return tuple(p for p in OPTIONAL_PARTS if p != SEEDED_PRNG or draws)


@dataclass(frozen=True)
class Profile:
    """A program's algorithms (in ALGORITHMS' order), the optional parts it leaves out (in
    OPTIONAL_PARTS' order), and its name: "all", "none" (no algorithm: forwarding and
    counters only), or the algorithms joined by '-'; then "+lean" if it leaves out every
    optional part, else "+no-<part>" for each it leaves out ("codel+lean",
    "red-pie+no-telemetry"); then "+constants" if it was built for one configuration, with
    its algorithm's encoded parameters as `constants` (Profile.fixed)."""

    name: str
    algorithms: tuple[str, ...]
    without: tuple[str, ...] = ()
    constants: tuple[tuple[str, int], ...] | None = None

    @classmethod
    def of(cls, algorithms, without=()) -> "Profile":
        chosen, left_out = set(algorithms), set(without)
        ordered = tuple(a for a in ALGORITHMS if a in chosen)
        # Leaving out a part the program would not have changes nothing, nor its name.
        applicable = _optional_parts(ordered)
        omitted = tuple(p for p in applicable if p in left_out)
        if chosen == set(ALGORITHMS) and not omitted:
            return ALL_PROFILE
        name = ALL if chosen == set(ALGORITHMS) else "-".join(ordered) or NO_AQM
        if omitted and omitted == applicable:
            name += f"+{LEAN}"
        else:
            name += "".join(f"+{_option(p)}" for p in omitted)
        return cls(name, ordered, omitted)

    @classmethod
    def named(cls, name: str) -> "Profile":
        """The profile of a name Profile.of or fixed gave ("all", "none", algorithms joined
        by '-', each maybe with its "+" options); "+constants" gives no values (only
        profile.json has them: of_p4info)."""
        listed, *options = name.split("+")
        profile = cls.parse("+".join([listed.replace("-", ","),
                                      *(o for o in options if o != CONSTANTS)]))
        if CONSTANTS in options:
            return replace(profile, name=f"{profile.name}+{CONSTANTS}", constants=())
        return profile

    @classmethod
    def parse(cls, text: str) -> "Profile":
        """--algorithms: comma-separated names, "all", or "none" (the no-AQM path only),
        then optionally "+lean" or any of "+no-<part>" (the optional parts it leaves out)."""
        listed, *options = text.split("+")
        without: list[str] = []
        for option in (o.strip() for o in options):
            parts = [p for p in OPTIONAL_PARTS if option in (LEAN, _option(p))]
            if not parts:
                valid = ", ".join(f"+{o}" for o in (LEAN, *map(_option, OPTIONAL_PARTS)))
                raise ConfigError(f"unknown option {shown_input('+' + option)} in "
                                  f"{shown_input(text)}; valid: {valid}")
            without += parts
        names = [n.strip() for n in listed.split(",")]
        if not any(names):
            raise ConfigError(f"no algorithm in {shown_input(text)}; valid: {_valid_names()}")
        for name in names:
            if name not in ALGORITHMS and name not in (NO_AQM, ALL):
                raise ConfigError(f"unknown algorithm {shown_input(name)} in "
                                  f"{shown_input(text)}; valid: {_valid_names()}")
        if ALL in names:
            return cls.of(ALGORITHMS, without)
        return cls.of((n for n in names if n != NO_AQM), without)

    @property
    def listed(self) -> str:
        """The profile as --algorithms (and Profile.parse) takes it."""
        every = set(self.algorithms) == set(ALGORITHMS)
        algorithms = ALL if every else ",".join(self.algorithms) or NO_AQM
        return "+".join([algorithms, *(o for o in self.name.split("+")[1:] if o != CONSTANTS)])

    @property
    def parts(self) -> tuple[str, ...]:
        """The parts of the program it has: the shared parts its algorithms need (and the
        group index the reason counters need), in SHARED_PARTS' order, the draw if one of
        them draws, and the optional parts it keeps."""
        needed = {p for a in self.algorithms for p in ALGORITHMS[a].parts}
        if self.algorithms and REASON_COUNTERS not in self.without:
            needed.add(GROUP_INDEX)     # the reason counters count by group
        shared = [p for p in SHARED_PARTS if p in needed]
        draws = [DRAWS] if any(ALGORITHMS[a].draws for a in self.algorithms) else []
        kept = [p for p in _optional_parts(self.algorithms) if p not in self.without]
        return (*shared, *draws, *kept)

    def leaving_out(self, part: str) -> "Profile":
        """This profile without one more of its optional parts (a case of --parts)."""
        return Profile.of(self.algorithms, (*self.without, part))

    @property
    def leaves_out_some(self) -> bool:
        """It leaves out some of its optional parts but not all ("+no-telemetry", not
        "+lean")."""
        return bool(self.without) and set(self.without) != set(_optional_parts(self.algorithms))

    def folder(self, root: Path) -> Path:
        """Where the profile builds: the root itself for "all" (build/), else
        <root>/profiles/<name>."""
        return root if self.name == ALL else root / "profiles" / self.name

    def fixed(self, configs: Iterable[PortConfig], source: str) -> "Profile":
        """This profile built for one configuration, `source`'s ports: each AQM port's
        aqm_config action, encoded as the controller would write it, must run the profile's
        one algorithm, which must read its parameters through PARAM (its class's
        `constants`), with the same parameters."""
        ports = {config.port: (action.name, action.params) for config in configs
                 if (action := config.encode().aqm) is not None}
        able = [a for a, cls in ALGORITHMS.items() if cls.constants]
        if len(self.algorithms) != 1 or self.algorithms[0] not in able:
            raise ConfigError(f"--constants builds a profile of one of {', '.join(able)} "
                              f"(--algorithms codel, or codel+lean), not {self.name}")
        algorithm = self.algorithms[0]
        for port, (action, _) in sorted(ports.items()):
            if action != algorithm:
                raise ConfigError(f"{source}: port {port} runs {action}; a program built "
                                  f"with {algorithm}'s constants runs only {algorithm}")
        if not ports:
            raise ConfigError(f"{source} configures no port with {algorithm}")
        values = {port: {k: v for k, v in params.items() if k not in SHARED_PARAMS}
                  for port, (_, params) in sorted(ports.items())}
        first_port, first = next(iter(values.items()))
        for port, theirs in values.items():
            differ = [k for k in first if theirs[k] != first[k]]
            if differ:
                raise ConfigError(f"{source}: ports {first_port} and {port} differ in "
                                  f"{', '.join(differ)} (encoded); a program built with "
                                  "constants has one value of each")
        return self.with_constants(first)

    def with_constants(self, values: Mapping[str, int]) -> "Profile":
        """This profile with these encoded parameters as constants (fixed checks them)."""
        return replace(self, name=f"{self.name}+{CONSTANTS}",
                       constants=tuple(sorted(values.items())))

    def check_constants(self, params: Mapping[str, int]) -> None:
        """Refuse a port configuration whose parameters differ from those the program
        was built with (nothing to check in a program without constants)."""
        differ = [f"{name} {params.get(name)} where it has {value}"
                  for name, value in self.constants or () if params.get(name) != value]
        if differ:
            runtime = Profile.of(self.algorithms, self.without)
            raise ConfigError(
                f"profile {self.name} was built with its parameters as "
                f"constants (--constants), and this configuration encodes "
                f"{'; '.join(differ)}: configure those values, or "
                f"{build_command(runtime)} builds one that takes them at run time")

    def write(self, folder: Path) -> None:
        constants = {} if self.constants is None else {"constants": dict(self.constants)}
        (folder / PROFILE_FILE).write_text(json.dumps(
            {"name": self.name, "algorithms": list(self.algorithms), "parts": list(self.parts),
             "without": list(self.without), **constants},
            indent=2) + "\n")

    @classmethod
    def of_p4info(cls, p4info: Path) -> "Profile":
        """The profile a P4Info describes: its algorithms are the aqm_config actions it has
        (so a program built before profiles is "all"), its name and the parts it leaves
        out are pkg_info's."""
        schema = fy.P4Schema(p4info)
        table = schema.tables.get("aqm_config")
        if table is None:
            raise ConfigError(f"{p4info} has no aqm_config table: not a p4aqm program")
        actions = {a.alias for a in table.actions}
        found = cls.of(a for a in ALGORITHMS if a in actions)
        name = schema.pkg_info.name.removeprefix("p4aqm-") or found.name
        named = cls.named(name) if "+" in name else found
        profile = cls(name, found.algorithms, named.without)
        if named.constants is None:
            return profile
        # Only the build's profile.json holds the values the program was built with.
        saved = p4info.parent / PROFILE_FILE
        try:
            constants = json.loads(saved.read_text())["constants"]
            return replace(profile, constants=tuple(sorted(
                (str(k), int(v)) for k, v in constants.items())))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ConfigError(f"{p4info} is profile {name}, built with constants, but "
                              f"{saved} beside it, which holds them, cannot be read: "
                              f"{err}") from None

    def check(self, action: str) -> None:
        """Refuse an algorithm the program does not carry, naming what it does and the
        build command that adds it."""
        if action == NO_AQM or action in self.algorithms:
            return
        wanted = Profile.of((*self.algorithms, action), self.without)
        raise ConfigError(
            f"{action} is not in this switch's program: profile {self.name} has "
            f"{', '.join((*self.algorithms, NO_AQM))}; {build_command(wanted)} builds one "
            f"with {action}")

    def check_kept(self, part: str, needed_by: str) -> None:
        """Refuse what needs an optional part the profile leaves out, naming the build
        that keeps it."""
        if part in self.without:
            wanted = Profile.of(self.algorithms, (p for p in self.without if p != part))
            raise ConfigError(f"{needed_by} needs the program's {_option(part)[3:]}, which "
                              f"profile {self.name} leaves out; {build_command(wanted)} "
                              f"builds one with it")


ALL_PROFILE = Profile(ALL, tuple(ALGORITHMS))
