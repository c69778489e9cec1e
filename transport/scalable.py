"""A scalable congestion response (DCTCP's, RFC 8257, the core of TCP Prague) on the
transport's Reno: the L4S sender. A state machine without I/O, as reno.py's.

- Data goes out ECT(1), RFC 9331's L4S identifier (endpoint.py sets the socket's TOS).
- Feedback: every ACK carries the receiver's count of CE-marked packets so far (wire.py:
  accurate ECN feedback, what AccECN's ACE counter carries); the sender takes the increase.
- alpha is the EWMA (gain g = 1/16) of the fraction of packets marked per round trip: the
  packets acknowledged and the CE marks counted from an ACK until everything sent by then
  is acknowledged, then from the next ACK. alpha starts at 1 (RFC 8257 3.3), so the first
  marks halve as Reno would.
- New CE marks reduce cwnd to cwnd (1 - alpha / 2), at most once per round trip (the
  reduction window of reno.py: nothing sent after the reduction is acknowledged yet), never
  below 2 segments; ssthresh with it, so the first mark ends slow start.
- Loss: Reno's. Three duplicate ACKs halve (fast retransmit, fast recovery), a timeout
  goes back to one segment; a loss in a round trip that already had a CE reduction halves
  from the cwnd that round trip began with, as reno.py's more severe signal does.
- Increase: Reno's, one segment per round trip in congestion avoidance.

RFC 9331 section 4 (the "Prague L4S requirements" on a sender), as we read it:
- met: the ECT(1) identifier (4.1); accurate ECN feedback, the extent of marking and not
  one bit per round trip (4.2); a scalable response to it (4.3: the reduction follows the
  marked fraction, so the marks per round trip stay about the same as the rate grows); a
  Reno-like response to loss (4.3); the marks smoothed in the sender (alpha), the
  network marking immediately (4.3, 4.4);
- not met: detecting a classic ECN (RFC 3168) AQM at the bottleneck and falling back to a
  Reno-friendly response there (4.3: without it a scalable flow can take more than its share
  of a RED+ECN or PIE queue, which E9 shows rather than hides); reducing RTT dependence
  (Prague's RTT independence); a window below one segment at small RTTs (Prague paces
  fractions of a segment; here cwnd >= 2 after a mark, 1 after a timeout); loss detected
  in time units (RACK) rather than by three duplicate ACKs; pacing.
"""

from __future__ import annotations

from transport.reno import RenoConfig, RenoSender, Response, Signal
from transport.wire import Level

ALPHA_GAIN = 1 / 16     # g, RFC 8257's default
ALPHA_START = 1.0


class ScalableSender(RenoSender):
    """RenoSender whose marks are counted CE packets answered by alpha (see above)."""

    def __init__(self, config: RenoConfig = RenoConfig(response=Response.SCALABLE),
                 limit: int | None = None):
        if config.response is not Response.SCALABLE:
            raise ValueError(f"a scalable sender needs response {Response.SCALABLE.value!r}, "
                             f"got {config.response.value!r}")
        super().__init__(config, limit)
        self.alpha = ALPHA_START
        self.ce_seen = 0                  # the receiver's count, as far as ACKs have said
        # The observation window ends when this segment is acknowledged (None: set at the
        # next ACK, to everything sent by then).
        self.observe_end: int | None = None
        self.observed_acked = 0
        self.observed_marked = 0
        self.alpha_log: list[tuple[float, float]] = []

    def on_ack(self, ack: int, level: Level, now: float, echo_seq: int | None = None,
               ce_packets: int = 0) -> None:
        """The level (ECT(1) arrives as seed 001's 'incipient') is not a signal here; the
        count of CE packets is. A reordered ACK with an older count adds nothing; an ACK
        Reno refuses (for segments never sent) counts nothing either."""
        before = self.snd_una
        super().on_ack(ack, Level.NONE, now, echo_seq)
        marked = max(0, ce_packets - self.ce_seen)
        self.ce_seen = max(self.ce_seen, ce_packets)
        if self.observe_end is None:
            self.observe_end = self.high_water
        self.observed_acked += self.snd_una - before
        self.observed_marked += marked
        if marked:
            self.stats.marks["ce"] += marked
            if self.snd_una >= self.window_end:     # one reduction per round trip
                self._reduce(Signal.CE, self.cwnd)
            else:
                self.stats.ignored_signals += 1
        if self.snd_una >= self.observe_end and self.observed_acked:
            fraction = min(1.0, self.observed_marked / self.observed_acked)
            self.alpha += ALPHA_GAIN * (fraction - self.alpha)
            self.alpha_log.append((now, self.alpha))
            self.observed_acked = self.observed_marked = 0
            # The next window: what is in flight at the next ACK (nothing may be yet).
            self.observe_end = None

    def _factor(self, signal: Signal) -> float:
        if signal is Signal.CE:
            return 1.0 - self.alpha / 2
        return super()._factor(signal)


def make_sender(config: RenoConfig, limit: int | None = None) -> RenoSender:
    """The sender a configuration's response asks for."""
    if config.response is Response.SCALABLE:
        return ScalableSender(config, limit)
    return RenoSender(config, limit)
