"""The one place where physical values become the data plane's fixed point, and back.

Formats (p4src/include/defines.p4 holds the same table):

=======  =============================  ========  ==========================================
name     value                          P4 type   used for
=======  =============================  ========  ==========================================
QAVG     packets * 2^32                 bit<64>   the average's register (QPKT = QAVG >> 16)
QPKT     packets * 2^16                 bit<32>   average as the pipeline reads it, thresholds
FRAC32   fraction * 2^32, 1.0 -> 2^32-1 bit<32>   wq, probabilities, decay factors, draws
SLOPE    probability/packet * 2^32      bit<32>   pb = (slope * (avg - threshold)) >> 16
P48      probability * 2^48             bit<64>   PI's probability (1.0 is exactly 2^48)
GAIN48   probability/packet * 2^48      bit<64>   PI's gains a and b
PGAIN    probability/us * 2^48          bit<64>   PIE's alpha and beta (Hz)
PRICE    price * 2^32                   bit<64>   REM's link price
RATE     packets/s * 2^16               bit<32>   NEWQUE's arrival rate and capacity
USEC     microseconds                   bit<32>   enq_timestamp, sojourn, intervals
USEC48   microseconds                   bit<48>   egress_global_timestamp, times of events
PKTS     packets                        bit<32>   limit, count, thresholds of events
=======  =============================  ========  ==========================================

Conversions round to nearest and raise FixedPointError for values the format cannot hold,
so a bad parameter is refused before anything reaches the switch.
"""

from __future__ import annotations

import math

U32_MAX = 0xFFFF_FFFF
QPKT_SHIFT = 16
QPKT_ONE = 1 << QPKT_SHIFT
QPKT_MAX = U32_MAX
QAVG_SHIFT = 32
FRAC32_SCALE = 1 << 32
FRAC32_ONE = U32_MAX
# The data plane saturates the queue depth here before scaling it to QPKT.
QDEPTH_MAX = 0xFFFF
P48_SHIFT = 48
P48_ONE = 1 << P48_SHIFT
PRICE_SHIFT = 32
RATE_SHIFT = 16
U64_MAX = (1 << 64) - 1


class FixedPointError(ValueError):
    """A physical value that has no representation in its fixed-point format."""


def _check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise FixedPointError(f"{name} must be a finite number, got {value!r}")


def to_qpkt(packets: float, name: str = "value") -> int:
    """Packets (may be fractional) to QPKT."""
    _check_finite(name, packets)
    if packets < 0:
        raise FixedPointError(f"{name} must be >= 0 packets, got {packets}")
    raw = round(packets * QPKT_ONE)
    if raw > QDEPTH_MAX * QPKT_ONE:
        raise FixedPointError(f"{name} must be <= {QDEPTH_MAX} packets, got {packets}")
    return raw


def from_qpkt(raw: int) -> float:
    return raw / QPKT_ONE


def from_qavg(raw: int) -> float:
    return raw / (1 << QAVG_SHIFT)


def qavg_to_qpkt(raw: int) -> int:
    return raw >> (QAVG_SHIFT - QPKT_SHIFT)


def to_frac32(fraction: float, name: str = "value") -> int:
    """A fraction in [0, 1] to FRAC32; 1.0 saturates to 2^32 - 1."""
    _check_finite(name, fraction)
    if not 0.0 <= fraction <= 1.0:
        raise FixedPointError(f"{name} must be in [0, 1], got {fraction}")
    return min(round(fraction * FRAC32_SCALE), FRAC32_ONE)


def from_frac32(raw: int) -> float:
    return raw / FRAC32_SCALE


def to_slope(prob_per_packet: float, name: str = "slope") -> int:
    """A probability gradient (per packet of average queue) to SLOPE, saturated at 2^32 - 1."""
    _check_finite(name, prob_per_packet)
    if prob_per_packet < 0:
        raise FixedPointError(f"{name} must be >= 0, got {prob_per_packet}")
    return min(round(prob_per_packet * FRAC32_SCALE), U32_MAX)


def to_p48(probability: float, name: str = "value") -> int:
    """A probability in [0, 1] to P48 (1.0 is exactly 2^48)."""
    _check_finite(name, probability)
    if not 0.0 <= probability <= 1.0:
        raise FixedPointError(f"{name} must be in [0, 1], got {probability}")
    return round(probability * P48_ONE)


def from_p48(raw: int) -> float:
    return raw / P48_ONE


def to_gain48(prob_per_packet: float, name: str = "gain", limit: float = 2**-8) -> int:
    """A probability per packet to GAIN48; below `limit` so products stay in 64 bits."""
    _check_finite(name, prob_per_packet)
    if not 0.0 <= prob_per_packet < limit:
        raise FixedPointError(f"{name} must be in [0, {limit:g}) per packet, got {prob_per_packet}")
    return round(prob_per_packet * P48_ONE)


def to_pgain(hertz: float, name: str = "gain", limit: float = 100.0) -> int:
    """A gain in Hz (probability per second of delay) to PGAIN (per microsecond * 2^48),
    at most `limit` Hz so that gain * delay stays inside 96 bits."""
    _check_finite(name, hertz)
    if not 0.0 <= hertz <= limit:
        raise FixedPointError(f"{name} must be in [0, {limit:g}] Hz, got {hertz}")
    return round(hertz * 1e-6 * P48_ONE)


def to_price(price: float, name: str = "value", limit: float = 0.5) -> int:
    """A REM price (or a price step) to PRICE; steps stay below `limit` so sums stay in
    64 bits."""
    _check_finite(name, price)
    if not 0.0 <= price <= limit:
        raise FixedPointError(f"{name} must be in [0, {limit:g}], got {price}")
    return round(price * (1 << PRICE_SHIFT))


def from_price(raw: int) -> float:
    return raw / (1 << PRICE_SHIFT)


def to_rate(packets_per_s: float, name: str = "rate") -> int:
    """Packets/s to RATE (packets/s * 2^16), at most 65535.99 packets/s."""
    _check_finite(name, packets_per_s)
    raw = round(packets_per_s * (1 << RATE_SHIFT))
    if not 0 <= raw <= U32_MAX:
        raise FixedPointError(f"{name} must be in [0, 65535] packets/s, got {packets_per_s}")
    return raw


def from_rate(raw: int) -> float:
    return raw / (1 << RATE_SHIFT)


def to_usec(seconds: float, name: str = "value") -> int:
    _check_finite(name, seconds)
    if seconds < 0:
        raise FixedPointError(f"{name} must be >= 0 s, got {seconds}")
    raw = round(seconds * 1e6)
    if raw > U32_MAX:
        raise FixedPointError(f"{name} must be < {U32_MAX / 1e6:.0f} s, got {seconds}")
    return raw


def to_pkts(packets: int, name: str = "value") -> int:
    if isinstance(packets, bool) or not isinstance(packets, int):
        raise FixedPointError(f"{name} must be a whole number of packets, got {packets!r}")
    if not 0 <= packets <= U32_MAX:
        raise FixedPointError(f"{name} must be in [0, {U32_MAX}] packets, got {packets}")
    return packets
