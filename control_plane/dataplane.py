"""Names and constants of the P4 program (p4src/), mirrored once for Python.

Table, action and counter names are P4Info aliases (the shortest unique suffix of the
fully qualified name), which is what the P4Runtime client accepts.
"""

from __future__ import annotations

from enum import IntEnum

CPU_PORT = 510
DROP_PORT = 511
TELEMETRY_SESSION = 500
# DualPI2's charge (dualpi2.p4): clone sessions per port, to the port itself, and to the
# port and the CPU port (the charge of a packet that also exports a record).
CHARGE_SESSIONS = 512
CHARGE_EXPORT_SESSIONS = 1024
# Data ports are 0..509; 510 is the CPU port and 511 BMv2's drop port.
MAX_DATA_PORT = 509


class Ecn(IntEnum):
    NOT_ECT = 0
    ECT1 = 1
    ECT0 = 2
    CE = 3


class EcnMode(IntEnum):
    DROP = 0
    MARK = 1
    MARK_ALWAYS = 2


class Region(IntEnum):
    NONE = 0
    A = 1
    B = 2
    FORCED = 3


class Event(IntEnum):
    """What a packet did to an algorithm's state (defines.p4, EVENT_*)."""

    NONE = 0
    INCREASE = 1
    DECREASE = 2
    HELD = 3
    UPDATE = 4


class Outcome(IntEnum):
    PASS = 0
    MARK = 1
    PROB_DROP = 2
    FORCED_DROP = 3
    OVERFLOW_DROP = 4

    @property
    def is_drop(self) -> bool:
        return self >= Outcome.PROB_DROP


class IngressDrop(IntEnum):
    """Why ingress dropped a packet (defines.p4, DROP_*), the ingress_drops index."""

    NO_ROUTE = 0
    NO_L2_ENTRY = 1
    TTL_EXPIRED = 2
    MALFORMED = 3
    BAD_CHECKSUM = 4
    LENGTH_BELOW_HEADER = 5
    TRUNCATED = 6


# MECN congestion level of each ECN codepoint (seed 001 Table 1); Not-ECT has none.
ECN_LEVEL = {Ecn.ECT0: 0, Ecn.ECT1: 1, Ecn.CE: 2}

# Tables (each algorithm's lookup tables are named in its module, control_plane/algorithms/)
AQM_CONFIG = "aqm_config"
TELEMETRY_CONFIG = "telemetry_config"
RTT_CONFIG = "rtt_config"
IPV4_LPM = "ipv4_lpm"
L2_EXACT = "l2_exact"

# Per-port counters in egress (index = port), and the ingress ones.
EGRESS_COUNTERS = (
    "seen",
    "prob_drops",
    "forced_drops",
    "overflow_drops",
    "notect_drops",
    "marks_incipient",
    "marks_ce",
)
ENQUEUED_COUNTER = "enqueued"
INGRESS_DROPS_COUNTER = "ingress_drops"
RTT_EVENTS_COUNTER = "rtt_events"
