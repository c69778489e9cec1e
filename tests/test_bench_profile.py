"""The benchmark's trace profile counts each kind per packet from BMv2's log lines."""

from __future__ import annotations

import pytest

from benchmarks.profile import per_packet

TRACE = """\
[17:02:15.849] [bmv2] [D] [thread 1] [0.0] [cxt 0] Processing packet received on port 1
[17:02:15.849] [bmv2] [T] [thread 1] [0.0] [cxt 0] Applying table 'IngressPipe.ipv4_lpm'
[17:02:15.899] [bmv2] [D] [thread 1] [1.0] [cxt 0] Extracting header 'ethernet'
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] Applying table 'IngressPipe.ipv4_lpm'
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] p4src/x.p4(12) Primitive enqueued.count
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] p4src/x.p4(30) Condition "a == b" is true
[17:02:15.899] [bmv2] [T] [thread 1] [1.1] [cxt 0] Read register 'arrivals' at index 2
[17:02:15.949] [bmv2] [D] [thread 1] [2.0] [cxt 0] Extracting header 'ethernet'
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] Wrote register 'arrivals' at index 2
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] p4src/x.p4(12) Primitive enqueued.count
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] p4src/x.p4(13) Primitive x = y
"""


def test_counts_per_packet_with_clones_and_without_the_first():
    counts = per_packet(TRACE, skip=1)
    assert counts == {"tables": 0.5, "primitives": 1.5, "conditions": 0.5,
                      "register_reads": 0.5, "register_writes": 0.5, "headers_extracted": 1.0}


def test_a_trace_without_packets_is_an_error():
    with pytest.raises(RuntimeError, match="no packet"):
        per_packet("[bmv2] [I] nothing traced\n")
