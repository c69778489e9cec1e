"""TCP Reno's congestion control with seed 001's multi-level ECN response, and the
receiver's reassembly: pure state machines driven by events and a clock, so tests script
them ACK by ACK.

Sender (RFC 5681 Reno, RFC 6298 timer, in segments as ns-2 counts them):
- slow start cwnd += min(segments acknowledged, 2) per ACK below ssthresh (RFC 3465,
  L = 2), congestion avoidance cwnd += 1/cwnd per segment acknowledged above it;
- three duplicate ACKs: fast retransmit, ssthresh = cwnd·0.5, cwnd = ssthresh + 3,
  inflated by one per further duplicate, back to ssthresh on the first new ACK (Reno, not
  NewReno);
- timeout: ssthresh = (segments sent - acknowledged)/2, at least 2, and held for every
  further timeout before everything sent before the first one is acknowledged; cwnd = 1,
  go back to the first unacknowledged segment, timer doubled; duplicate ACKs answering
  data sent before the timeout (the ACK echoes the segment it answers) start no fast
  retransmit (RFC 6582's `recover`);
  Jacobson/Karels RTT estimate with Karn's rule (no sample from an ACK that covers a
  retransmitted segment);
- marks (seed 001 Table 3): incipient cwnd·0.8, moderate cwnd·0.6, loss cwnd·0.5; or,
  `Response.RFC3168`, any mark halves. At most one reduction per round trip: the first
  signal opens a window that ends when everything sent before it is acknowledged; a more
  severe signal inside the window lowers cwnd to its factor of the cwnd the window began
  with, a signal no more severe is ignored.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from transport.wire import Level


class Response(enum.Enum):
    MECN = "mecn"         # seed 001 Table 3
    RFC3168 = "rfc3168"   # any mark halves, as standard ECN TCP
    SCALABLE = "scalable"  # ECT(1), cwnd (1 - alpha / 2) per round trip (scalable.py)


class Signal(enum.Enum):
    INCIPIENT = "incipient"
    MODERATE = "moderate"
    CE = "ce"              # new CE marks counted by the receiver (the scalable response)
    LOSS = "loss"          # three duplicate ACKs
    TIMEOUT = "timeout"


# The scalable response's CE factor depends on its alpha (scalable.py); its loss is Reno's.
FACTORS = {Response.MECN: {Signal.INCIPIENT: 0.8, Signal.MODERATE: 0.6, Signal.LOSS: 0.5},
           Response.RFC3168: {Signal.INCIPIENT: 0.5, Signal.MODERATE: 0.5, Signal.LOSS: 0.5},
           Response.SCALABLE: {Signal.LOSS: 0.5}}
_SIGNAL_OF_LEVEL = {Level.INCIPIENT: Signal.INCIPIENT, Level.MODERATE: Signal.MODERATE}


@dataclass(frozen=True)
class RenoConfig:
    response: Response = Response.MECN
    initial_cwnd: float = 10.0      # segments, as Linux (RFC 6928)
    max_window: int = 1000          # segments: the receive window (iperf3 -w caps it)
    dupack_threshold: int = 3
    initial_rto: float = 1.0        # s, RFC 6298
    min_rto: float = 0.2            # s, as Linux
    max_rto: float = 60.0
    clock_granularity: float = 0.001

    def __post_init__(self) -> None:
        if not 1 <= self.initial_cwnd <= self.max_window:
            raise ValueError("initial_cwnd must be in [1, max_window]")
        if not 0 < self.min_rto <= self.initial_rto <= self.max_rto:
            raise ValueError("need 0 < min_rto <= initial_rto <= max_rto")
        if self.dupack_threshold < 1:
            raise ValueError("dupack_threshold must be >= 1")


@dataclass
class SenderStats:
    marks: dict[str, int] = field(default_factory=lambda: {"incipient": 0, "moderate": 0,
                                                           "ce": 0})
    reductions: dict[str, int] = field(
        default_factory=lambda: {s.value: 0 for s in Signal})
    ignored_signals: int = 0        # inside a reduction window, not more severe
    backoffs: int = 0               # further timeouts in the same loss episode
    retransmits: int = 0
    rtt_samples: int = 0


class RenoSender:
    """Segments are numbered 0, 1, 2, ...; `limit` (None: unbounded) is how many the
    application has to send."""

    def __init__(self, config: RenoConfig = RenoConfig(), limit: int | None = None):
        self.config = config
        self.limit = limit
        self.cwnd = float(config.initial_cwnd)
        self.ssthresh = math.inf
        self.snd_una = 0
        self.snd_nxt = 0
        self.high_water = 0             # first segment never sent
        self.dupacks = 0
        self.in_recovery = False
        self.retransmit_pending = False
        # high_water at the last timeout: below it, a loss episode is still being repaired
        # (no new timeout reduction, no fast retransmit for segments sent before it).
        self.recover = 0
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto = config.initial_rto
        self.timer: float | None = None  # RTO deadline (monotonic s)
        self.sent_at: dict[int, float] = {}
        self.retransmitted: set[int] = set()
        # Reduction window: until snd_una reaches window_end, signals no more severe than
        # window_factor are ignored.
        self.window_end = 0
        self.window_factor = 1.0
        self.window_cwnd = self.cwnd
        self.stats = SenderStats()

    # ---- events -------------------------------------------------------------------------

    def on_ack(self, ack: int, level: Level, now: float, echo_seq: int | None = None,
               ce_packets: int = 0) -> None:
        """`echo_seq`: the segment whose arrival sent this ACK (None: not known). Reno
        answers the level; `ce_packets`, the receiver's count of CE marks, is the scalable
        response's (scalable.py)."""
        if ack > self.high_water:
            raise ValueError(f"ACK {ack} for segments never sent (highest {self.high_water})")
        if ack > self.snd_una:
            self._new_ack(ack, now)
        elif ack == self.snd_una and self.snd_nxt > self.snd_una:
            # A resent segment the receiver already held says nothing about a new loss.
            if echo_seq is None or echo_seq >= self.recover:
                self._duplicate_ack(now)
        signal = _SIGNAL_OF_LEVEL.get(level)
        if signal is not None:
            self.stats.marks[signal.value] += 1
            self._reduce(signal, self.cwnd)

    def on_timeout(self, now: float) -> None:
        """The RTO timer expired (the caller checks `timer`)."""
        if self.snd_una < self.recover:      # the same loss episode
            self.stats.backoffs += 1
        else:
            self.stats.reductions[Signal.TIMEOUT.value] += 1
            self.ssthresh = max((self.high_water - self.snd_una) / 2, 2.0)
        self.cwnd = 1.0
        self.in_recovery = False
        self.retransmit_pending = False
        self.recover = self.high_water
        self.dupacks = 0
        self._open_window(0.5, self.high_water)
        self.snd_nxt = self.snd_una          # go back N
        self.rto = min(2 * self.rto, self.config.max_rto)
        self.timer = now + self.rto

    def transmit(self, now: float) -> list[int]:
        """Segments to put on the wire now, in order (retransmissions first)."""
        out = []
        if self.retransmit_pending:
            self.retransmit_pending = False
            out.append(self._send(self.snd_una, now))
        window = min(math.floor(self.cwnd), self.config.max_window)
        while self.snd_nxt < self.snd_una + window and (self.limit is None
                                                         or self.snd_nxt < self.limit):
            out.append(self._send(self.snd_nxt, now))
            self.snd_nxt += 1
        if out and self.timer is None:
            self.timer = now + self.rto
        return out

    # ---- helpers ------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.limit is not None and self.snd_una >= self.limit

    def _send(self, seq: int, now: float) -> int:
        if seq < self.high_water:
            self.retransmitted.add(seq)
            self.stats.retransmits += 1
        else:
            self.high_water = seq + 1
        self.sent_at[seq] = now
        return seq

    def _new_ack(self, ack: int, now: float) -> None:
        newest = ack - 1
        ambiguous = any(seq in self.retransmitted for seq in range(self.snd_una, ack))
        if not ambiguous and newest in self.sent_at:   # Karn
            self._rtt_sample(now - self.sent_at[newest])
        acked = ack - self.snd_una
        for seq in range(self.snd_una, ack):
            self.sent_at.pop(seq, None)
            self.retransmitted.discard(seq)
        self.snd_una = ack
        self.snd_nxt = max(self.snd_nxt, ack)
        self.dupacks = 0
        if self.in_recovery:
            self.in_recovery = False
            self.cwnd = self.ssthresh        # deflate: Reno leaves recovery here
        elif self.cwnd < self.ssthresh:      # slow start up to ssthresh, the rest as CA
            slow = min(acked, 2, self.ssthresh - self.cwnd)
            self.cwnd += slow
            if self.cwnd >= self.ssthresh:
                self.cwnd += (acked - slow) / self.cwnd
        else:
            self.cwnd += acked / self.cwnd
        self.cwnd = min(self.cwnd, float(self.config.max_window))
        self.timer = now + self.rto if self.snd_una < self.snd_nxt else None

    def _duplicate_ack(self, now: float) -> None:
        self.dupacks += 1
        if self.in_recovery:
            self.cwnd += 1.0
        elif self.dupacks == self.config.dupack_threshold and self.snd_una >= self.recover:
            self.retransmit_pending = True
            if self._reduce(Signal.LOSS, self.cwnd):
                self.in_recovery = True
                self.cwnd = self.ssthresh + self.config.dupack_threshold
            self.timer = now + self.rto

    def _factor(self, signal: Signal) -> float:
        """What a signal multiplies cwnd by."""
        return FACTORS[self.config.response][signal]

    def _reduce(self, signal: Signal, cwnd: float) -> bool:
        """Apply a congestion signal; False when the round trip's window already holds an
        equal or more severe reduction."""
        factor = self._factor(signal)
        if self.snd_una < self.window_end:
            if factor >= self.window_factor:
                self.stats.ignored_signals += 1
                return False
            base = self.window_cwnd
        else:
            base = cwnd
        self._open_window(factor, self.high_water, base)
        floor = 2.0 if signal in (Signal.LOSS, Signal.CE) else 1.0   # CE: DCTCP's floor
        self.ssthresh = max(base * factor, floor)
        self.cwnd = self.ssthresh
        self.stats.reductions[signal.value] += 1
        return True

    def _open_window(self, factor: float, end: int, base: float | None = None) -> None:
        self.window_factor = factor
        self.window_end = max(end, self.snd_una + 1)
        self.window_cwnd = self.cwnd if base is None else base

    def _rtt_sample(self, rtt: float) -> None:
        self.stats.rtt_samples += 1
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        rto = self.srtt + max(self.config.clock_granularity, 4 * self.rttvar)
        self.rto = min(max(rto, self.config.min_rto), self.config.max_rto)


@dataclass
class ReceiverStats:
    segments: int = 0
    bytes: int = 0                  # delivered in order (goodput)
    duplicates: int = 0
    out_of_order: int = 0
    too_far_ahead: int = 0          # beyond the receive window: dropped
    refused_fins: int = 0           # a FIN below data already held: not the stream's end
    levels: dict[str, int] = field(
        default_factory=lambda: {"none": 0, "incipient": 0, "moderate": 0})
    ce_packets: int = 0             # CE-marked segments, as the ACKs count them


class Reassembly:
    """In-order delivery of numbered segments; the cumulative ACK is `rcv_nxt`. The window
    (4096 segments) is wider than any sender's (`RenoConfig.max_window` <= 1000 in use), so
    it only bounds what a misbehaving peer can make the receiver hold."""

    def __init__(self, window: int = 4096):
        self.window = window
        self.rcv_nxt = 0
        self.pending: dict[int, int] = {}   # seq -> payload length, beyond rcv_nxt
        self.fin_seq: int | None = None
        self.stats = ReceiverStats()

    @property
    def complete(self) -> bool:
        return self.fin_seq is not None and self.rcv_nxt > self.fin_seq

    def on_segment(self, seq: int, payload_len: int, level: Level, fin: bool) -> int:
        """Take one segment; returns the cumulative ACK to send. Every segment counts in
        its level (and a CE one in ce_packets), duplicates included, as AccECN counts
        every CE packet."""
        self.stats.segments += 1
        self.stats.levels[level.name.lower()] += 1
        if level is Level.MODERATE:
            self.stats.ce_packets += 1
        if seq < self.rcv_nxt or seq in self.pending:
            self.stats.duplicates += 1
        elif seq >= self.rcv_nxt + self.window:
            self.stats.too_far_ahead += 1
        elif fin and any(held > seq for held in self.pending):
            self.stats.refused_fins += 1
        else:
            if seq > self.rcv_nxt:
                self.stats.out_of_order += 1
            self.pending[seq] = payload_len
            if fin:
                self.fin_seq = seq
            while self.rcv_nxt in self.pending:
                self.stats.bytes += self.pending.pop(self.rcv_nxt)
                self.rcv_nxt += 1
        return self.rcv_nxt
