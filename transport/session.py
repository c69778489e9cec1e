"""One flow's send side without I/O: the sender (reno.py, scalable.py) with its clock, the
bookkeeping iperf3's report needs (per-second intervals, cwnd over time) and the result
document. endpoint.py drives it from a UDP socket and the wall clock; the ns-3 twin
(experiments/ns3/) from simulated sockets and simulated time: the same sender either way.

A driver calls, at any moment `now` (s, its own clock):
  poll(now)        the segments to put on the wire now (stops new data after `seconds`);
  acks(now, acks)  ACKs read, each (ack, level, echo_seq, ce_packets);
  tick(now)        the timer, the give-up check and the samples (raises ReceiverSilent);
and at the end result(...) for the document. wake() is when the session next needs a call
without an ACK (its timer, or the end of new data).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from transport import wire
from transport.reno import RenoConfig, Response
from transport.scalable import ScalableSender, make_sender

CWND_SAMPLE_PERIOD = 0.01     # s between cwnd samples (a sample also on every reduction)


class ReceiverSilent(RuntimeError):
    """No ACK has moved the flow forward for the give-up time."""


def interval(start: float, end: float, nbytes: int, retransmits: int, cwnd: float) -> dict:
    seconds = end - start
    return {"sum": {"start": start, "end": end, "seconds": seconds, "bytes": nbytes,
                    "bits_per_second": 8 * nbytes / seconds if seconds > 0 else 0.0,
                    "retransmits": retransmits, "snd_cwnd_segments": cwnd}}


class SendSession:
    """payload: bytes per segment (wire.PAYLOAD fills a 1500-byte packet)."""

    def __init__(self, config: RenoConfig, seconds: float, give_up: float, now: float,
                 payload: int = wire.PAYLOAD):
        self.config, self.seconds, self.give_up = config, seconds, give_up
        self.payload = payload
        self.sender = make_sender(config)
        self.t0 = self.last_progress = now
        self.cwnd_log: list[list[float | None]] = []
        self.intervals: list[dict] = []
        self._interval = (0.0, 0, 0)      # start, snd_una, retransmits at its start
        self.stopping = False             # no new data from now on

    @property
    def tos(self) -> int:
        """The data's codepoint: ECT(1) for the scalable response, else ECT(0)."""
        return wire.ECT1 if self.config.response is Response.SCALABLE else wire.ECT0

    @property
    def done(self) -> bool:
        return self.sender.done

    def stop(self) -> None:
        """No new data: drain what was sent."""
        if self.sender.limit is None:
            self.sender.limit = self.sender.high_water
        self.stopping = True

    def poll(self, now: float) -> list[int]:
        if self.sender.limit is None and now - self.t0 >= self.seconds:
            self.stop()
        return self.sender.transmit(now)

    def acks(self, now: float, acks: list[tuple[int, wire.Level, int, int]]) -> None:
        una, reductions = self.sender.snd_una, sum(self.sender.stats.reductions.values())
        for ack, level, echo_seq, ce_packets in acks:
            self.sender.on_ack(ack, level, now, echo_seq, ce_packets)
        if self.sender.snd_una > una:
            self.last_progress = now
        if sum(self.sender.stats.reductions.values()) != reductions:
            self._log_cwnd(now - self.t0)

    def tick(self, now: float, silence: str = "") -> None:
        if self.sender.timer is not None and now >= self.sender.timer:
            self.sender.on_timeout(now)
            self._log_cwnd(now - self.t0)
        if now - self.last_progress > self.give_up:
            raise ReceiverSilent(silence or f"nothing acknowledged for {self.give_up:g} s; "
                                 "giving up")
        t = now - self.t0
        if not self.cwnd_log or t - self.cwnd_log[-1][0] >= CWND_SAMPLE_PERIOD:
            self._log_cwnd(t)
        start, una, retx = self._interval
        if t - start >= 1.0:
            self.intervals.append(interval(start, t, (self.sender.snd_una - una) * self.payload,
                                           self.sender.stats.retransmits - retx,
                                           self.sender.cwnd))
            self._interval = (t, self.sender.snd_una, self.sender.stats.retransmits)

    def wake(self) -> float | None:
        """When to call tick() and poll() without an ACK (None: only on ACKs)."""
        times = [t for t in (self.sender.timer,
                             None if self.sender.limit is not None else self.t0 + self.seconds)
                 if t is not None]
        return min(times) if times else None

    def _log_cwnd(self, t: float) -> None:
        ssthresh = None if math.isinf(self.sender.ssthresh) else self.sender.ssthresh
        self.cwnd_log.append([t, self.sender.cwnd, ssthresh])

    def result(self, *, seconds: float, started: float, host: str, port: int,
               error: str | None, fin_acked: bool, extra: dict | None = None) -> dict:
        """The document iperf3's client would write (plus the `mecn` section). started:
        the Unix time (or the run's clock) of the intervals' 0."""
        sender, config = self.sender, self.config
        sent_bytes = sender.high_water * self.payload
        acked_bytes = sender.snd_una * self.payload
        return {
            "start": {"transport": "p4aqm-mecn", "response": config.response.value,
                      "started": started, "connecting_to": {"host": host, "port": port},
                      "mss": self.payload,
                      "config": {k: (v.value if hasattr(v, "value") else v)
                                 for k, v in asdict(config).items()}},
            "intervals": self.intervals,
            "end": {"sum_sent": {"start": 0.0, "end": seconds, "seconds": seconds,
                                 "bytes": sent_bytes,
                                 "bits_per_second": 8 * sent_bytes / seconds if seconds else 0.0,
                                 "retransmits": sender.stats.retransmits},
                    "sum_received": {"start": 0.0, "end": seconds, "seconds": seconds,
                                     "bytes": acked_bytes,
                                     "bits_per_second": 8 * acked_bytes / seconds
                                     if seconds else 0.0}},
            "mecn": {**asdict(sender.stats), **(extra or {}), "fin_acked": fin_acked,
                     "srtt_ms": None if sender.srtt is None else sender.srtt * 1000,
                     "cwnd": self.cwnd_log,
                     **({"alpha": [[t - self.t0, a] for t, a in sender.alpha_log]}
                        if isinstance(sender, ScalableSender) else {})},
            "error": error,
        }


def config_for(response: str, window_bytes: int = 0, payload: int = wire.PAYLOAD
               ) -> RenoConfig:
    """The sender's configuration for a response and a receive window in bytes (iperf3 -w;
    0: 1000 segments), segments of `payload` bytes."""
    window = window_bytes // payload if window_bytes else 1000
    if window < 1:
        raise ValueError(f"window {window_bytes} is less than one segment ({payload} bytes)")
    return RenoConfig(response=Response(response), max_window=window,
                      initial_cwnd=min(10.0, window))
