"""Benchmarks: data-plane forwarding rate per AQM against a trivial program, control-plane
latencies, loop timing, telemetry delivery, golden-model speed (python -m benchmarks)."""
