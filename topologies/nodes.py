"""Mininet nodes: the p4aqm switch (BMv2), a delay line, an L2 bridge, and host set-up.

Every node lives in its own network namespace (BMv2's Thrift server binds every address
of its namespace) and every process a node starts is stopped by its own PID. A network
is stopped whole however far it got and wherever a signal cut it (`stop_network`).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from dataclasses import dataclass

from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Host, Node, Switch

from control_plane.bmv2 import Bmv2Config, Bmv2Switch, end_group
from topologies.cleanup import GUARD, netns_of, stop_namespaces
from topologies.specs import Access, Bottleneck

# Importing Mininet made every logger created afterwards a MininetLogger with a stderr
# handler of its own; ours stay plain, under the program's logging set-up.
logging.setLoggerClass(logging.Logger)
LOG = logging.getLogger("p4aqm.topology")


@dataclass(frozen=True)
class HostInfo:
    name: str
    ip: str
    mac: str
    port: int          # switch port the host's traffic leaves s1 on


@dataclass(frozen=True)
class SwitchPlan:
    """What a topology asks of one p4aqm switch: its ports, routes and congested port."""

    node: "P4AqmSwitch"
    ports: list[int]
    routes: list[tuple[str, int, str, str]]   # (prefix, port, src_mac, dst_mac)
    bottleneck_port: int
    bottleneck: Bottleneck


class P4AqmSwitch(Switch):
    """simple_switch_grpc with Thrift, P4Runtime on a Unix socket in the run's folder.

    The pipeline is pushed by the controller over P4Runtime (the switch starts with
    --no-p4). BMv2 port numbers are Mininet's port numbers.
    """

    def __init__(self, name: str, workdir: Path, log_level: str = "off",
                 priority_queues: int = 1, **params):
        params["inNamespace"] = True
        super().__init__(name, **params)
        self.workdir = Path(workdir)
        self.log_level = log_level
        self.priority_queues = priority_queues   # BMv2's queues per port (DualPI2: 2)
        self.bmv2: Bmv2Switch | None = None

    def start(self, controllers) -> None:
        self.cmd("ip link set lo up")  # simple_switch_CLI reaches Thrift on 127.0.0.1
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        interfaces = {port: intf.name for intf, port in self.ports.items()
                      if intf.name != "lo"}
        self.bmv2 = Bmv2Switch(Bmv2Config(
            enter_netns=("mnexec", "-a", str(self.pid)), workdir=self.workdir,
            interfaces=interfaces, log_level=self.log_level,
            priority_queues=self.priority_queues))
        self.bmv2.start()

    @property
    def grpc_address(self) -> str:
        return self.bmv2.config.grpc_address

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.bmv2 is not None:
            self.bmv2.stop()
        super().stop(deleteIntfs)

    def terminate(self) -> None:
        """Also the end of a switch whose interfaces could not be deleted first."""
        if self.bmv2 is not None:
            self.bmv2.stop()
        super().terminate()


class DelayBox(Node):
    """A bump in the wire between its two interfaces: topologies.delayline."""

    def __init__(self, name: str, delay: float, loss: float = 0.0, seed: int = 1,
                 workdir: Path | None = None, **params):
        params["inNamespace"] = True
        super().__init__(name, **params)
        self.delay, self.loss, self.seed = delay, loss, seed
        self.workdir = Path(workdir) if workdir else None
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        a, b = [intf.name for intf in self.intfList() if intf.name != "lo"]
        for intf in (a, b):
            self.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=1")
            self.cmd(f"ethtool -K {intf} rx off tx off tso off gso off gro off 2>/dev/null")
        stats = ["--stats", str(self.workdir / f"{self.name}.json")] if self.workdir else []
        with GUARD.deferred():
            self.process = self.popen(
                [sys.executable, "-m", "topologies.delayline", a, b, "--delay", str(self.delay),
                 "--loss", str(self.loss), "--seed", str(self.seed), *stats],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"delay line {self.name} failed: {line}{self.process.stdout.read()}")

    def terminate(self) -> None:
        """Mininet ends hosts with terminate(), not stop(): end our process by its PID."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
        super().terminate()


class Bridge(Node):
    """A plain learning L2 bridge (Linux bridge in its own namespace), STP off. br0 goes
    with the namespace."""

    def __init__(self, name: str, **params):
        params["inNamespace"] = True
        super().__init__(name, **params)

    def start(self) -> None:
        self.cmd("ip link add br0 type bridge stp_state 0 forward_delay 0")
        self.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        for intf in self.intfList():
            if intf.name != "lo":
                self.cmd(f"ip link set {intf.name} master br0 up")
        self.cmd("ip link set br0 up")


class RunNet(Mininet):
    """Mininet whose nodes and links are made whole or not at all (a signal waits until the
    node's shell or the veth pair is recorded), and which remembers the network namespace
    of every node, so that stop_network finds whatever is left in them."""

    def __init__(self) -> None:
        self.namespaces: set[str] = set()
        super().__init__(topo=None, build=False, controller=None, autoSetMacs=False,
                         autoStaticArp=False, waitConnected=False)

    def addHost(self, name: str, cls=None, **params) -> Node:
        with GUARD.deferred():
            node = super().addHost(name, cls=cls, **params)
            self._record(node)
        return node

    def addSwitch(self, name: str, cls=None, **params) -> Switch:
        with GUARD.deferred():
            node = super().addSwitch(name, cls=cls, **params)
            self._record(node)
        return node

    def _record(self, node: Node) -> None:
        """The node's namespace, to be emptied at the end: never ours (a node left in the
        root namespace would have every process of the machine ended)."""
        namespace = netns_of(node.pid)
        if namespace == netns_of(os.getpid()):
            raise RuntimeError(f"{node.name} is not in a network namespace of its own")
        self.namespaces.add(namespace)

    def addLink(self, node1, node2, port1=None, port2=None, cls=None, **params) -> Link:
        with GUARD.deferred():
            return super().addLink(node1, node2, port1, port2, cls, **params)


def end_node(node: Node, timeout: float = 5.0) -> None:
    """Mininet's terminate (each class ends its own processes by PID), after hanging up
    the node's shell and its commands without Mininet's unbounded wait. Idempotent."""
    if node.shell is not None:
        end_group(node.shell, signal.SIGHUP, timeout)
    node.terminate()


def stop_network(net: RunNet) -> None:
    """The end of a network built whole or in part, cut anywhere by a signal: Mininet's
    stop if every node's shell can still take a command (one cut mid-command cannot, and
    Mininet's link clean-up would fail on it), then every node ended by PID, then
    whatever is left in the nodes' namespaces; their interfaces go with them."""
    with GUARD.deferred():
        nodes = net.switches + net.hosts
        if all(n.shell is not None and n.shell.poll() is None and not n.waiting for n in nodes):
            try:
                net.stop()
            except Exception as err:
                LOG.info("Mininet's stop failed (%s: %s); ending the nodes by PID",
                         type(err).__name__, err)
        else:
            LOG.info("a node's shell was cut mid-command or has ended: ending the nodes by PID")
        for node in nodes:
            end_node(node)
        stop_namespaces(net.namespaces)


def configure_host(host: Host, congestion_control: str, ecn: bool, mbps: float | None,
                   sack: bool = True, mtu: int = 1500) -> None:
    """Real packets (no TSO/GSO/GRO, checksums in software) of at most `mtu` bytes, the
    TCP the run asks for, no IPv6 chatter, no metrics carried over between connections,
    and the host's sending rate shaped by tbf (mbps None: unshaped)."""
    for intf in host.intfList():
        if intf.name == "lo":
            continue
        host.cmd(f"ethtool -K {intf.name} rx off tx off tso off gso off gro off 2>/dev/null")
        out = host.cmd(f"ip link set dev {intf.name} mtu {mtu}")
        if out.strip():
            raise RuntimeError(f"{host.name}: mtu {mtu} on {intf.name}: {out.strip()}")
        host.cmd(f"sysctl -qw net.ipv6.conf.{intf.name}.disable_ipv6=1")
        if mbps:
            # Two frames of burst; 100 ms of queue (TCP small queues keep it short).
            out = host.cmd(f"tc qdisc replace dev {intf.name} root tbf rate {mbps}mbit "
                           f"burst 3028 latency 100ms")
            if out.strip():
                raise RuntimeError(f"{host.name}: tbf on {intf.name}: {out.strip()}")
    for key, value in (("net.ipv4.tcp_ecn", 1 if ecn else 0),
                       ("net.ipv4.tcp_sack", 1 if sack else 0),
                       ("net.ipv4.tcp_no_metrics_save", 1)):
        out = host.cmd(f"sysctl -w {key}={value}")
        if f"{key} = {value}" not in out:
            raise RuntimeError(f"{host.name}: sysctl {key}={value} failed: {out.strip()}")
    # A namespace may only default to the congestion controls in the machine-wide allowed
    # list (here reno and bbr); others are still available per socket to root, which is
    # how the traffic tools select them (iperf3 -C, transfer --cc).
    available = host.cmd("cat /proc/sys/net/ipv4/tcp_available_congestion_control").split()
    if congestion_control not in available:
        raise RuntimeError(f"{host.name}: congestion control {congestion_control} is not "
                           f"available (this kernel offers {' '.join(available)})")
    allowed = host.cmd("cat /proc/sys/net/ipv4/tcp_allowed_congestion_control").split()
    if congestion_control in allowed:
        host.cmd(f"sysctl -qw net.ipv4.tcp_congestion_control={congestion_control}")
        got = host.cmd("sysctl -n net.ipv4.tcp_congestion_control").strip()
        if got != congestion_control:
            raise RuntimeError(f"{host.name}: congestion control is {got}, "
                               f"not {congestion_control}")


def attach_host(net: Mininet, info: HostInfo, access: Access, peer: Node, port: int | None,
                seed: int, workdir: Path) -> Host:
    """A host linked to peer (at `port` there), through a delay line if the access link
    has a delay or a loss."""
    host = net.addHost(info.name, ip=f"{info.ip}/16", mac=info.mac)
    if access.delay > 0 or access.loss > 0:
        box = net.addHost(f"d{info.name}", cls=DelayBox, delay=access.delay, loss=access.loss,
                          seed=seed, workdir=workdir)
        net.addLink(host, box, cls=Link)
        net.addLink(box, peer, port2=port, cls=Link)
    else:
        net.addLink(host, peer, port2=port, cls=Link)
    return host


def configure_hosts(net: Mininet, hosts: list[HostInfo], accesses: list[Access],
                    congestion_control: str, ecn: bool, gateways: list[str],
                    mtu: int = 1500) -> None:
    """configure_host on each, and static ARP for every other host (one /16) to the host's
    gateway: the MAC of the P4 switch it reaches the others through. Every other host is
    behind that switch, which rewrites source MACs; a bridge in front of it learns the
    switch's MAC, never the far hosts', and would flood frames addressed to those."""
    for info, access, gateway in zip(hosts, accesses, gateways, strict=True):
        host = net.get(info.name)
        configure_host(host, congestion_control, ecn, access.mbps, mtu=mtu)
        intf = host.defaultIntf().name
        for other in hosts:
            if other is not info:
                host.cmd(f"ip neigh replace {other.ip} lladdr {gateway} dev {intf} "
                         "nud permanent")


def start_boxes(net: Mininet) -> None:
    """Delay lines and bridges are Mininet hosts: Mininet does not start them."""
    for node in net.hosts:
        if isinstance(node, (DelayBox, Bridge)):
            node.start()
