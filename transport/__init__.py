"""MECN-aware end hosts (seed 001): a userspace TCP Reno over UDP whose sender reacts to
the incipient and moderate congestion levels the switch marks, and whose receiver echoes
them. Linux's TCP ignores ECT(1) and offers no way to change its ECN response here (no
modules, no AccECN), so the endpoints live in userspace as seed 001 modified ns-2's Reno.

- wire.py      the datagrams and the codepoint/level encodings (seed Tables 1 and 2)
- reno.py      the sender's congestion control and the receiver's reassembly, without I/O
- endpoint.py  both ends on UDP sockets, writing iperf3-shaped JSON
"""
