"""Dumbbell (N senders, N receivers, one bottleneck) and its RTT-group variant (seed 002),
built in Mininet around a p4aqm switch (the parking lot is in parking_lot.py).

    h1 ..hN --[access: bw, delay, loss]-- s1 ==[bottleneck: rate, delay]== b1 --[access]-- r1..rN

s1 is a P4 switch whose port toward b1 is the bottleneck: its queue is slowed with
set_queue_rate (packets/s) and capped with set_queue_depth (the buffer), and its AQM is
the experiment's. b1 is a plain bridge. Delays and losses are delay lines
(topologies.delayline) since this kernel has no netem; access rates are tc tbf on each
host's own interface (which also spaces the frames BMv2's small input ring can take).
Hosts share 10.0.0.0/16 with static ARP; s1 routes each /32 with MAC rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mininet.link import Link
from mininet.node import Host

from topologies.nodes import (Bridge, DelayBox, HostInfo, P4AqmSwitch, RunNet, SwitchPlan,
                             attach_host, configure_hosts, start_boxes, stop_network)
from topologies.specs import DumbbellSpec

SWITCH_MAC = "02:00:00:00:ff:{:02x}"


@dataclass
class Dumbbell:
    spec: DumbbellSpec
    workdir: Path
    log_level: str = "off"
    priority_queues: int = 1       # the P4 switch's queues per port (DualPI2: 2)
    net: RunNet | None = field(default=None, init=False)
    senders: list[HostInfo] = field(default_factory=list, init=False)
    receivers: list[HostInfo] = field(default_factory=list, init=False)

    @property
    def bottleneck_port(self) -> int:
        return len(self.spec.senders) + 1

    @property
    def switch(self) -> P4AqmSwitch:
        return self.net.get("s1")

    def host(self, info: HostInfo) -> Host:
        return self.net.get(info.name)

    def start(self) -> "Dumbbell":
        self.workdir.mkdir(parents=True, exist_ok=True)
        net = self.net = RunNet()
        try:
            self._build(net)
            net.build()
            net.start()
            start_boxes(net)
            self._configure_hosts()
        except BaseException:
            self.stop()
            raise
        return self

    def _build(self, net: RunNet) -> None:
        s1 = net.addSwitch("s1", cls=P4AqmSwitch, workdir=self.workdir / "s1",
                           log_level=self.log_level, priority_queues=self.priority_queues)
        n = len(self.spec.senders)
        for i, access in enumerate(self.spec.senders, start=1):
            info = HostInfo(f"h{i}", f"10.0.0.{i}", f"02:00:00:00:00:{i:02x}", port=i)
            self.senders.append(info)
            attach_host(net, info, access, s1, port=i, seed=self.spec.seed * 1000 + i,
                        workdir=self.workdir)
        bridge = net.addHost("b1", cls=Bridge)
        bn = self.spec.bottleneck
        if bn.delay > 0:
            box = net.addHost("dbn", cls=DelayBox, delay=bn.delay, seed=self.spec.seed,
                              workdir=self.workdir)
            net.addLink(s1, box, port1=n + 1, cls=Link)
            net.addLink(box, bridge, cls=Link)
        else:
            net.addLink(s1, bridge, port1=n + 1, cls=Link)
        for j, access in enumerate(self.spec.receivers, start=1):
            info = HostInfo(f"r{j}", f"10.0.1.{j}", f"02:00:00:00:01:{j:02x}", port=n + 1)
            self.receivers.append(info)
            attach_host(net, info, access, bridge, port=None,
                        seed=self.spec.seed * 1000 + 500 + j, workdir=self.workdir)

    def _configure_hosts(self) -> None:
        hosts = self.senders + self.receivers
        configure_hosts(self.net, hosts, list(self.spec.senders) + list(self.spec.receivers),
                        self.spec.congestion_control, self.spec.ecn,
                        [SWITCH_MAC.format(1)] * len(hosts),
                        mtu=self.spec.bottleneck.packet_bytes)

    def routes(self) -> list[tuple[str, int, str, str]]:
        """(prefix, port, src_mac, dst_mac) for every host."""
        return [(f"{h.ip}/32", h.port, SWITCH_MAC.format(1), h.mac)
                for h in self.senders + self.receivers]

    def ports(self) -> list[int]:
        return [h.port for h in self.senders] + [self.bottleneck_port]

    def switch_plans(self) -> list[SwitchPlan]:
        return [SwitchPlan(self.switch, self.ports(), self.routes(), self.bottleneck_port,
                           self.spec.bottleneck)]

    def expected_rtt(self, i: int, j: int) -> float:
        return self.spec.expected_rtt(i, j)

    def stop(self) -> None:
        """Idempotent, and whole however far start() got."""
        if self.net is not None:
            stop_network(self.net)
            self.net = None
