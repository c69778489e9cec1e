"""A parking lot: K congested links in a row, each the egress of a p4aqm switch.

    L1..Ln --s1 ==[link 1]== s2 ==[link 2]== ... sK ==[link K]== bx -- long receivers
              |               |                     |
             C1 (cross 1)    C2, RC1             CK, RC(K-1)        RCK at bx

Long flows cross every link; cross flow k enters at s_k and leaves right after link k.
Each switch runs its own BMv2 and P4Runtime server; the congested port of s_k is
UPLINK, its port back toward s_(k-1) is DOWNLINK.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mininet.link import Link
from mininet.node import Host

from topologies.dumbbell import SWITCH_MAC
from topologies.nodes import (Bridge, DelayBox, HostInfo, P4AqmSwitch, RunNet, SwitchPlan,
                             attach_host, configure_hosts, start_boxes, stop_network)
from topologies.specs import Access, ParkingLotSpec

UPLINK, DOWNLINK = 100, 101


@dataclass
class ParkingLot:
    spec: ParkingLotSpec
    workdir: Path
    log_level: str = "off"
    priority_queues: int = 1       # each P4 switch's queues per port (DualPI2: 2)
    net: RunNet | None = field(default=None, init=False)
    # host -> index of the switch it hangs off (len(links) + 1 means the exit bridge)
    attached: dict[str, int] = field(default_factory=dict, init=False)
    hosts: dict[str, HostInfo] = field(default_factory=dict, init=False)
    local_port: dict[str, int] = field(default_factory=dict, init=False)

    @property
    def k(self) -> int:
        return len(self.spec.links)

    def switch(self, index: int) -> P4AqmSwitch:
        return self.net.get(f"s{index}")

    def host(self, host: str | HostInfo) -> Host:
        return self.net.get(host if isinstance(host, str) else host.name)

    @property
    def senders(self) -> list[HostInfo]:
        """Long senders L1..Ln, then cross senders C1..CK (flows index this list)."""
        return [h for n, h in self.hosts.items() if n.startswith("L")] + \
            [h for n, h in self.hosts.items() if n.startswith("C")]

    @property
    def receivers(self) -> list[HostInfo]:
        """RL1..RLn, then RC1..RCK."""
        return [h for n, h in self.hosts.items() if n.startswith("RL")] + \
            [h for n, h in self.hosts.items() if n.startswith("RC")]

    def expected_rtt(self, i: int, j: int) -> float:
        """Propagation RTT from sender i to receiver j: their access delays and every
        congested link between where they attach."""
        src, dst = self.senders[i].name, self.receivers[j].name
        lo, hi = sorted((self.attached[src], self.attached[dst]))
        links = sum(link.delay for link in self.spec.links[lo - 1:hi - 1])
        return 2 * (self._access(src).delay + links + self._access(dst).delay)

    def switch_plans(self) -> list[SwitchPlan]:
        return [SwitchPlan(self.switch(i), self.ports(i), self.routes(i), UPLINK,
                           self.spec.links[i - 1]) for i in range(1, self.k + 1)]

    def start(self) -> "ParkingLot":
        self.workdir.mkdir(parents=True, exist_ok=True)
        net = self.net = RunNet()
        try:
            self._build(net)
            net.build()
            net.start()
            start_boxes(net)
            infos = list(self.hosts.values())
            accesses = [self._access(name) for name in self.hosts]
            # The exit bridge's hosts reach the others through the last switch.
            gateways = [SWITCH_MAC.format(min(self.attached[name], self.k))
                        for name in self.hosts]
            configure_hosts(net, infos, accesses, self.spec.congestion_control, self.spec.ecn,
                            gateways, mtu=self.spec.links[0].packet_bytes)
        except BaseException:
            self.stop()
            raise
        return self

    def _access(self, name: str) -> Access:
        if name.startswith("L"):
            return self.spec.long_senders[int(name[1:]) - 1]
        return self.spec.cross_access if name.startswith("C") else self.spec.receiver_access

    def _add_host(self, net: RunNet, name: str, subnet: int, index: int, at: int, peer,
                  port: int | None) -> None:
        info = HostInfo(name, f"10.0.{subnet}.{index}", f"02:00:00:00:{subnet:02x}:{index:02x}",
                        port=0)
        self.hosts[name] = info
        self.attached[name] = at
        if port is not None:
            self.local_port[name] = port
        attach_host(net, info, self._access(name), peer, port,
                    seed=self.spec.seed * 1000 + subnet * 50 + index, workdir=self.workdir)

    def _build(self, net: RunNet) -> None:
        switches = [net.addSwitch(f"s{i}", cls=P4AqmSwitch, workdir=self.workdir / f"s{i}",
                                  log_level=self.log_level,
                                  priority_queues=self.priority_queues)
                    for i in range(1, self.k + 1)]
        exit_bridge = net.addHost("bx", cls=Bridge)
        for i, link in enumerate(self.spec.links, start=1):
            here = switches[i - 1]
            there = switches[i] if i < self.k else exit_bridge
            there_port = DOWNLINK if i < self.k else None
            if link.delay > 0:
                box = net.addHost(f"dl{i}", cls=DelayBox, delay=link.delay,
                                  seed=self.spec.seed + i, workdir=self.workdir)
                net.addLink(here, box, port1=UPLINK, cls=Link)
                net.addLink(box, there, port2=there_port, cls=Link)
            else:
                net.addLink(here, there, port1=UPLINK, port2=there_port, cls=Link)
        for n in range(1, len(self.spec.long_senders) + 1):
            self._add_host(net, f"L{n}", 1, n, at=1, peer=switches[0], port=n)
            self._add_host(net, f"RL{n}", 2, n, at=self.k + 1, peer=exit_bridge, port=None)
        for i in range(1, self.k + 1):
            self._add_host(net, f"C{i}", 3, i, at=i, peer=switches[i - 1], port=50 + i)
            exit_to = switches[i] if i < self.k else exit_bridge
            self._add_host(net, f"RC{i}", 4, i, at=i + 1, peer=exit_to,
                           port=60 + i if i < self.k else None)

    def routes(self, index: int) -> list[tuple[str, int, str, str]]:
        """Switch s_index's routes: local hosts on their port, the rest up or down the row."""
        routes = []
        for name, info in self.hosts.items():
            at = self.attached[name]
            if at == index:
                port = self.local_port[name]
            else:
                port = UPLINK if at > index else DOWNLINK
            routes.append((f"{info.ip}/32", port, SWITCH_MAC.format(index), info.mac))
        return routes

    def ports(self, index: int) -> list[int]:
        ports = {UPLINK} | ({DOWNLINK} if index > 1 else set())
        ports |= {self.local_port[n] for n, at in self.attached.items() if at == index}
        return sorted(ports)

    def stop(self) -> None:
        """Idempotent, and whole however far start() got."""
        if self.net is not None:
            stop_network(self.net)
            self.net = None
