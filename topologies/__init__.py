"""Where switches and hosts are wired together: bare network-namespace testbeds
(conformance tests, benchmarks) and Mininet topologies (experiments)."""
