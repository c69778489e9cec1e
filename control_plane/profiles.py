"""Build profiles: one P4 source compiled into programs that carry only some algorithms.

As stratum's fabric-tna builds fabric, fabric-int, fabric-upf ... from one source, a
profile is the program compiled with preprocessor symbols (p4c -D): P4AQM_WITH_<PART> for
each part its algorithms need (p4src/include/profile.p4). A packet in BMv2 pays for every
header, metadata field and parser state of the program, whatever its port runs, so a
profile pays only for its own. The default program is "all", every part.

    python -m control_plane.build --algorithms red,mecn     (make build ALGORITHMS=red,mecn)

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

# The parts algorithms share (each a P4AQM_WITH_<PART> symbol) and what each brings into the
# program. An algorithm's own part, named like it, is its aqm_config action and its control.
SHARED_PARTS = {
    "RED_RAMP": "the RED family's control: RED's average queue and marker (aqm/red.p4, "
                "queue_avg.p4, marker.p4), red_ramp and red_h",
    "MECN_LEVELS": "the verdict's incipient level for marks in region A (aqm_common_h.level_a, "
                   "control/verdict.p4); without it a mark sets CE",
    "ARRIVALS": "ingress's arrival number per port (forwarding.p4's arrivals register, "
                "meta.arr_seq)",
    "RTT_TRACKER": "ingress's RTT tracker (control/rtt_tracker.p4, meta.rtt_us) and TCP's "
                   "timestamps option in the parser",
    "L4_PORTS": "TCP and UDP headers in the parser (AECN's flow classification and the RTT "
                "tracker read them)",
    "PI2_CONTROL": "PI2's control, pi2_core and pi2_h (aqm/pi2.p4)",
    PRIORITY_QUEUES: "DualPI2's L queue in ingress and its charge clone in egress "
                     "(aqm/dualpi2.p4)",
}

# The one table of what each algorithm needs: its own part, then shared ones.
NEEDS: dict[str, tuple[str, ...]] = {
    "droptail": ("DROPTAIL",),
    "red": ("RED", "RED_RAMP"),
    "red_ecn": ("RED_ECN", "RED_RAMP"),
    "ecnm": ("ECNM", "RED_RAMP"),
    "mecn": ("MECN", "RED_RAMP", "MECN_LEVELS"),
    "newque": ("NEWQUE", "ARRIVALS"),
    "blue": ("BLUE", "ARRIVALS"),
    "pi": ("PI",),
    "rem": ("REM", "ARRIVALS"),
    "aecn": ("AECN", "RED_RAMP", "RTT_TRACKER", "L4_PORTS"),
    "codel": ("CODEL",),
    "pie": ("PIE",),
    "pi2": ("PI2", "PI2_CONTROL"),
    "dualpi2": ("DUALPI2", "PI2_CONTROL", "PRIORITY_QUEUES"),
}
assert list(NEEDS) == list(ALGORITHMS), "one NEEDS line per algorithm, in ALGORITHMS' order"


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
        return tuple(dict.fromkeys(p for a in self.algorithms for p in NEEDS[a]))

    def symbols(self) -> tuple[str, ...]:
        """p4c's -D symbols; none for "all" (profile.p4's default)."""
        if self.name == ALL:
            return ()
        return (f"P4AQM_PROFILE={self.name}", f"P4AQM_ALGORITHMS={','.join(self.algorithms)}",
                *(f"P4AQM_WITH_{part}" for part in self.parts))

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
