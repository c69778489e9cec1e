"""Benchmarks: data-plane forwarding rate per AQM against a trivial program, control-plane
latencies, loop timing, telemetry delivery, golden-model speed (python -m benchmarks)."""

from topologies.cleanup import GUARD


def phase(what: str) -> None:
    """What the benchmark does now: on stdout (progress), and the place an interruption
    names."""
    GUARD.where = what
    print(f"benchmarks: {what}", flush=True)
