"""MECN-aware end hosts (seed 001): a userspace TCP Reno over UDP whose sender reacts to
the incipient and moderate congestion levels the switch marks, and whose receiver echoes
them; and a scalable (L4S) sender on the same Reno. Linux's TCP ignores ECT(1) and offers
no way to change its ECN response here (no modules, no AccECN, no DCTCP or Prague), so
the endpoints live in userspace as seed 001 modified ns-2's Reno.

- wire.py      the datagrams and the codepoint/level encodings (seed Tables 1 and 2), the
               receiver's count of CE marks
- reno.py      the sender's congestion control and the receiver's reassembly, without I/O
- scalable.py  the scalable response (ECT(1), alpha, cwnd (1 - alpha / 2)), without I/O
- endpoint.py  both ends on UDP sockets, writing iperf3-shaped JSON
"""
