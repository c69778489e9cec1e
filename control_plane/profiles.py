"""Build profiles: one P4 source compiled into programs that carry only some algorithms.

As stratum's fabric-tna builds fabric, fabric-int, fabric-upf ... from one source, a
profile is the program compiled with preprocessor symbols (p4c -D): P4AQM_WITH_<PART> for
each part its algorithms need (p4src/include/profile.p4). A packet in BMv2 pays for every
header, metadata field and parser state of the program, whatever its port runs, so a
profile pays only for its own. The default program is "all", every part.

    python -m tooling.build --algorithms red,mecn     (make build ALGORITHMS=red,mecn)

The profile's name and algorithms are in its build folder (profile.json) and in its P4Info
(pkg_info: name p4aqm-<profile>, the algorithms as its description); the controller reads
the P4Info it pushes and refuses a port configuration the profile lacks (Profile.check).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import finsy as fy

from control_plane.algorithms import ALGORITHMS
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
    "L4_PORTS": "the TCP and UDP headers and their parser states (AECN's flow "
                "classification and the RTT tracker read them)",
    PRIORITY_QUEUES: "DualPI2's L queue in ingress (`dualpi2_queue`) and its charge clone in "
                     "egress, aqm/dualpi2.p4 (the controller installs the two charge clone "
                     "sessions per port only for a program with this part)",
}
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


@dataclass(frozen=True)
class Profile:
    """A program's algorithms (in ALGORITHMS' order), and its name: "all", "none" (no
    algorithm: forwarding and counters only), or the algorithms joined by '-'."""

    name: str
    algorithms: tuple[str, ...]

    @classmethod
    def of(cls, algorithms) -> "Profile":
        chosen = set(algorithms)
        if chosen == set(ALGORITHMS):
            return ALL_PROFILE
        ordered = tuple(a for a in ALGORITHMS if a in chosen)
        return cls("-".join(ordered) or NO_AQM, ordered)

    @classmethod
    def named(cls, name: str) -> "Profile":
        """The profile of a name Profile.of gave ("all", "none", algorithms joined by '-')."""
        return cls.parse(name.replace("-", ","))

    @classmethod
    def parse(cls, text: str) -> "Profile":
        """--algorithms: comma-separated names, "all", or "none" (the no-AQM path only)."""
        names = [n.strip() for n in text.split(",")]
        if not any(names):
            raise ConfigError(f"no algorithm in {shown_input(text)}; valid: {_valid_names()}")
        for name in names:
            if name not in ALGORITHMS and name not in (NO_AQM, ALL):
                raise ConfigError(f"unknown algorithm {shown_input(name)} in "
                                  f"{shown_input(text)}; valid: {_valid_names()}")
        if ALL in names:
            return ALL_PROFILE
        return cls.of(n for n in names if n != NO_AQM)

    @property
    def listed(self) -> str:
        """The algorithms as --algorithms (and Profile.parse) takes them."""
        if self.name == ALL:
            return ALL
        return ",".join(self.algorithms) or NO_AQM

    @property
    def parts(self) -> tuple[str, ...]:
        """The shared parts its algorithms need, in the registry's order."""
        return tuple(dict.fromkeys(p for a in self.algorithms for p in ALGORITHMS[a].parts))

    def folder(self, root: Path) -> Path:
        """Where the profile builds: the root itself for "all" (build/), else
        <root>/profiles/<name>."""
        return root if self.name == ALL else root / "profiles" / self.name

    def write(self, folder: Path) -> None:
        (folder / PROFILE_FILE).write_text(json.dumps(
            {"name": self.name, "algorithms": list(self.algorithms), "parts": list(self.parts)},
            indent=2) + "\n")

    @classmethod
    def of_p4info(cls, p4info: Path) -> "Profile":
        """The profile a P4Info describes: its algorithms are the aqm_config actions it has
        (so a program built before profiles is "all"), its name is pkg_info's."""
        schema = fy.P4Schema(p4info)
        table = schema.tables.get("aqm_config")
        if table is None:
            raise ConfigError(f"{p4info} has no aqm_config table: not a p4aqm program")
        actions = {a.alias for a in table.actions}
        found = cls.of(a for a in ALGORITHMS if a in actions)
        name = schema.pkg_info.name.removeprefix("p4aqm-") or found.name
        return cls(name, found.algorithms)

    def check(self, action: str) -> None:
        """Refuse an algorithm the program does not carry, naming what it does and the
        build command that adds it."""
        if action == NO_AQM or action in self.algorithms:
            return
        wanted = Profile.of((*self.algorithms, action))
        raise ConfigError(
            f"{action} is not in this switch's program: profile {self.name} has "
            f"{', '.join((*self.algorithms, NO_AQM))}; {build_command(wanted)} builds one "
            f"with {action}")


ALL_PROFILE = Profile(ALL, tuple(ALGORITHMS))
