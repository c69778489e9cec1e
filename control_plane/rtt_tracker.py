"""Golden model of the ingress RTT tracker (p4src/include/control/rtt_tracker.p4).

Per-flow RTTs from TCP timestamps, in the spirit of Dart (Kagan et al., SIGCOMM 2022): a
packet A -> B with TSval x is remembered when it passes; the packet B -> A that echoes x
in TSecr gives one sample of the leg switch -> B -> switch (the echoing packet's sender's
side); a flow's RTT is the sum of its two smoothed legs. The model follows the P4 control
operation by operation, with the same hash, slot sizes, timeouts and 32-bit wrapping
times, so conformance tests compare it with the switch packet by packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

U32 = 0xFFFF_FFFF
PT_SLOTS = 65536
FT_SLOTS = 65536
PT_TIMEOUT = 4_000_000    # USEC
FT_TIMEOUT = 10_000_000   # USEC
FLOW_SALT = 0x5BD1E995


class RttEvent(IntEnum):
    """rtt_events counter indexes."""

    SAMPLE = 0
    PT_COLLISION = 1
    PT_STALE = 2
    FLOW_NEW = 3
    FLOW_COLLISION = 4


def rtt_hash(a: int, b: int, c: int) -> int:
    """rtt_tracker.p4's RTT_HASH: a multiplicative hash of three 32-bit words."""
    h = ((a * 0x9E3779B1) & U32) ^ ((b * 0x85EBCA6B) & U32) ^ ((c * 0xC2B2AE35) & U32)
    return h ^ (h >> 15)


@dataclass(frozen=True)
class TcpSegment:
    """What the tracker reads of a TCP packet with the timestamps option."""

    src: int      # IPv4 addresses as integers
    dst: int
    sport: int
    dport: int
    tsval: int
    tsecr: int


@dataclass
class RttTrackerModel:
    """The tracker's registers (sparse) and event counters."""

    pt_sig: dict[int, int] = field(default_factory=dict)
    pt_time: dict[int, int] = field(default_factory=dict)
    ft_sig: dict[int, int] = field(default_factory=dict)
    ft_seen: dict[int, int] = field(default_factory=dict)
    ft_leg: dict[int, int] = field(default_factory=dict)
    events: dict[RttEvent, int] = field(default_factory=lambda: dict.fromkeys(RttEvent, 0))

    def process(self, seg: TcpSegment, now48: int) -> int:
        """One tracked packet at ingress time now48 (USEC48); returns the flow's RTT in
        microseconds, or 0 if it is not measured yet."""
        now = now48 & U32
        hosts = seg.src ^ seg.dst

        h = rtt_hash(hosts, (seg.sport << 16) | seg.dport, seg.tsval)
        slot = h & (PT_SLOTS - 1)
        sig, then = self.pt_sig.get(slot, 0), self.pt_time.get(slot, 0)
        if sig == 0 or ((now - then) & U32) > PT_TIMEOUT:
            if sig != 0:
                self.events[RttEvent.PT_STALE] += 1
            self.pt_sig[slot], self.pt_time[slot] = h | 1, now
        elif sig != h | 1:
            self.events[RttEvent.PT_COLLISION] += 1

        sample = 0
        if seg.tsecr != 0:
            e = rtt_hash(hosts, (seg.dport << 16) | seg.sport, seg.tsecr)
            eslot = e & (PT_SLOTS - 1)
            sig, then = self.pt_sig.get(eslot, 0), self.pt_time.get(eslot, 0)
            if sig == e | 1 and ((now - then) & U32) <= PT_TIMEOUT:
                sample = (now - then) & U32
                self.pt_sig[eslot] = 0
                self.events[RttEvent.SAMPLE] += 1

        ports = ((((seg.sport + seg.dport) & 0xFFFF) << 16) | (seg.sport ^ seg.dport))
        f = rtt_hash(hosts, ports, FLOW_SALT)
        fslot = f & (FT_SLOTS - 1)
        owner, seen = self.ft_sig.get(fslot, 0), self.ft_seen.get(fslot, 0)
        side = 0 if (seg.src < seg.dst or (seg.src == seg.dst and seg.sport < seg.dport)) else 1
        mine, other = fslot * 2 + side, fslot * 2 + 1 - side
        leg = far = 0
        if owner != f | 1:
            if owner == 0 or ((now - seen) & U32) > FT_TIMEOUT:
                owner = self.ft_sig[fslot] = f | 1
                self.ft_leg[mine] = self.ft_leg[other] = 0
                self.events[RttEvent.FLOW_NEW] += 1
            else:
                self.events[RttEvent.FLOW_COLLISION] += 1
        else:
            leg, far = self.ft_leg.get(mine, 0), self.ft_leg.get(other, 0)
        if owner != f | 1:
            return 0
        if sample:
            if leg == 0:
                leg = sample
            elif sample >= leg:
                leg += (sample - leg) >> 3
            else:
                leg -= (leg - sample) >> 3
            self.ft_leg[mine] = leg
        self.ft_seen[fslot] = now
        return (leg + far) & U32 if leg and far else 0
