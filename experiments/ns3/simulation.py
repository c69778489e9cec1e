"""One RunSpec in ns-3: the twin of experiments/runner.py's Run, writing the same run folder.

The network is the run's topology as point-to-point links (the dumbbell, the parking lot):
each access link at its rate and delay (a veth without a rate is a 10 Gb/s link), its
egress queue what tbf gives the testbed's host (100 ms at its rate), random loss both ways
where the plan asks (E7's access links); each congested link's egress is TwinQueueDisc
(twin.cc) with the run's AQM as its golden model (bottleneck.py), paced at the link's
rate, the buffer BMv2's queue depth. The flows: Linux TCP as ns-3's (Reno: NewReno, CUBIC,
BBR; the scalable sender as DCTCP on ECT(1)), set as the testbed's hosts are (segments
filling the hosts' MTU with timestamps, 10 segments' initial window, 200 ms minimum RTO,
40 ms delayed ACKs, SACK, ECN as the plan says, buffers up to Linux's 6 MB or the flow's
window); the userspace MECN and RFC 3168 senders as transport/'s own state machines over
ns-3 UDP sockets; seed 004's serial transfers; the rate steps at their times.

What the folder gets, in the runner's shapes (analysis/results.py reads both alike):
config.json (with `backend`), versions.json (ns-3's, the machine's), telemetry.csv and
counters.csv per bottleneck, events.json, flows/ (iperf3's shape, and the userspace
transport's), connections.json (every TCP connection's bytes at both ends, each second
and at the window's bounds), transfers/ with tcp.json and minimum.json (seed 004's
calibration: one transfer alone, in a simulation of its own), rate_steps.json,
aqm_from.json, and twin.json: simulated and wall-clock seconds, packets decided.
"""

from __future__ import annotations

import csv
import ipaddress
import json
import logging
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from control_plane.algorithms.base import FiveTuple
from control_plane.aqm import PortConfig
from experiments.ns3.bottleneck import TwinPort
from experiments.ns3.native import NativePort
from experiments.ns3.native import attributes as native_attributes
from experiments.ns3.loader import NS3_VERSION, load
from experiments.spec import (IPERF_BASE_PORT, PCAP_SNAPLEN, TRANSFER_PORT, WIDE_QUEUE, Flow,
                              RunSpec, jsonable)
from experiments.versions import machine, package_versions, project_version
from topologies.specs import Access, Bottleneck, DumbbellSpec
from transport import wire
from transport.reno import Reassembly
from transport.session import ReceiverSilent, SendSession, config_for

LOG = logging.getLogger("p4aqm.ns3")
SOURCE = Path(__file__).with_name("twin.cc")
UNSHAPED = 10e9                 # bps of an access link without a rate (a veth)
HOST_QUEUE_S = 0.1              # tbf's latency on the testbed's hosts
LINUX_BUFFER = 6 * 1024 * 1024  # tcp_rmem's and tcp_wmem's maximum
CONGESTION = {"reno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr"}
SCALABLE = "ns3::TcpDctcp"
# Seconds past the run's end for the last packets to drain (flows), or for the transfers
# to finish (the testbed's grace before it interrupts late clients).
DRAIN, GRACE = 1.0, 20.0
FIN_TRIES = 5
# A simulation has none of the testbed's timing noise: each repeat's flows start up to this
# much later than planned (uniform, from the run's seed), or every repeat would be the same.
START_JITTER = 0.01


class TwinError(RuntimeError):
    """A run the twin cannot simulate as planned, or a hook that failed inside ns-3."""


@dataclass(frozen=True)
class Behaviour:
    """What the twin does as the papers' simulators do, and what as the switch does: the
    run's ns-3 factors (experiments/factors.py)."""

    decide_at: str = "paper"
    bmv2_drop: bool = False
    scalable: str = "dctcp"
    aqm_impl: str = "model"
    jitter: float = 0.0     # s a delay line's packet is late on average (0: never)

    @classmethod
    def of(cls, spec: RunSpec) -> "Behaviour":
        f = dict(spec.factors)
        return cls(f.get("decide_at", cls.decide_at), f.get("bmv2_drop", "0") == "1",
                   f.get("scalable", cls.scalable), f.get("aqm_impl", cls.aqm_impl),
                   float(f.get("jitter", 0)) / 1000)


@dataclass
class Host:
    name: str
    node: int
    ip: str         # the testbed's address of the host (AECN's rules name them)


@dataclass
class Port:
    """A congested port: its model side, its queue disc, its link, its files' suffix."""

    twin: TwinPort | NativePort
    disc: object
    link: Bottleneck
    suffix: str


@dataclass
class TcpFlow:
    """A flow of kernel TCP: its server, its streams' senders, and what they had sent at
    each whole second (t, bytes, retransmitted segments): iperf3's intervals."""

    k: int
    port: int
    dst: Host
    sink: object
    streams: list[tuple[Host, object]]
    seconds: list[tuple[float, int, int]] = field(default_factory=list)

    def sample(self, now: float) -> None:
        self.seconds.append((now, sum(int(source.highest) for _, source in self.streams),
                             sum(int(source.retransmits) for _, source in self.streams)))

    def intervals(self, start: float) -> list[dict]:
        """iperf3's per-second intervals, times from the flow's start."""
        out, last = [], (start, 0, 0)
        for t, sent, resent in self.seconds:
            if t <= last[0]:
                continue
            seconds = t - last[0]
            nbytes = sent - last[1]
            out.append({"sum": {"start": last[0] - start, "end": t - start,
                                "seconds": seconds, "bytes": nbytes,
                                "bits_per_second": 8 * nbytes / seconds,
                                "retransmits": resent - last[2]}})
            last = (t, sent, resent)
        return out


def queue_packets(access: Access, mtu: int) -> int:
    """The testbed host's tbf queue on its link (100 ms at the access rate), packets."""
    if not access.mbps:
        return WIDE_QUEUE
    return max(2, round(access.mbps * 1e6 * HOST_QUEUE_S / (8 * mtu)))


def link_bps(link: Bottleneck) -> float:
    """The rate at which packets of the link's own size leave at its packets/s."""
    return link.pps * link.packet_bytes * 8


class Twin:
    """The run's network in ns-3, its ports' AQMs, its traffic; run() simulates it."""

    def __init__(self, spec: RunSpec, folder: Path):
        spec.check()
        self.spec, self.folder = spec, folder
        self.behaviour = Behaviour.of(spec)
        self.g = load(SOURCE)
        self.ns = self.g.ns3
        self.hooks: list = []       # Python callables C++ holds: kept alive here
        self.events: list = []      # what each timed event calls (_at)
        # the userspace transport's ends, by the flow's tag: (sender's hook, receiver's)
        self.udp: dict[int, tuple] = {}
        self.failure: BaseException | None = None
        self.ports: list[Port] = []
        self.tcp: list[TcpFlow] = []
        self.sessions: dict[int, dict] = {}   # userspace flows: their session and ends
        # What a FlowTag names: a TCP stream's (source, dport) or a userspace flow's
        # (None, dport), with its hosts: for the algorithms that classify flows (AECN).
        self.tagged: dict[int, tuple[Host, Host, object, int]] = {}
        self.clients: list = []
        self.server = None

    # ----- building ---------------------------------------------------------------------

    def _mtu(self) -> int:
        topo = self.spec.topology
        links = [topo.bottleneck] if isinstance(topo, DumbbellSpec) else list(topo.links)
        return links[0].packet_bytes

    def _tcp_defaults(self) -> None:
        d, ns = self.ns.Config.SetDefault, self.ns
        # DCTCP marks its data ECT(1), the L4S identifier, as the scalable sender does.
        d("ns3::TcpDctcp::UseEct0", ns.BooleanValue(False))

    def attributes(self, flow: Flow | None = None, scalable: bool = False) -> dict[str, str]:
        """A socket's attributes, as the testbed's hosts set theirs."""
        mss = self._mtu() - 52          # IPv4, TCP, timestamps: Linux's payload per segment
        buffer = flow.window if flow is not None and flow.window else LINUX_BUFFER
        return {"SegmentSize": str(mss), "InitialCwnd": "10", "SndBufSize": str(buffer),
                "RcvBufSize": str(buffer), "DelAckTimeout": "40ms", "MinRto": "200ms",
                "UseEcn": "On" if self.spec.topology.ecn or scalable else "Off"}

    def build(self, net) -> tuple[list[Host], list[Host]]:
        """The topology's nodes and links; (senders, receivers) as flows index them."""
        topo, mtu = self.spec.topology, self._mtu()

        def host(name: str, ip: str, access: Access, router: int, outward: bool) -> Host:
            node = net.AddNode()
            bps = access.mbps * 1e6 if access.mbps else UNSHAPED
            queue = queue_packets(access, mtu)
            # Where the testbed has a delay line (a delay or a loss), its lateness.
            jitter = self.behaviour.jitter if access.delay > 0 or access.loss > 0 else 0.0
            if outward:      # the host sends into the network
                net.AddLink(node, router, bps, access.delay, queue, access.loss, access.loss,
                            jitter)
            else:
                net.AddLink(router, node, bps, access.delay, WIDE_QUEUE, access.loss,
                            access.loss, jitter)
            return Host(name, node, ip)

        if isinstance(topo, DumbbellSpec):
            s1, b1 = net.AddNode(), net.AddNode()
            senders = [host(f"h{i}", f"10.0.0.{i}", a, s1, True)
                       for i, a in enumerate(topo.senders, 1)]
            receivers = [host(f"r{j}", f"10.0.1.{j}", a, b1, False)
                         for j, a in enumerate(topo.receivers, 1)]
            self._bottleneck(net, s1, b1, topo.bottleneck, len(topo.senders) + 1, "s1", "")
            return senders, receivers
        switches = [net.AddNode() for _ in topo.links]
        exit_bridge = net.AddNode()
        for i, link in enumerate(topo.links, start=1):
            there = switches[i] if i < len(topo.links) else exit_bridge
            # The parking lot's congested ports are each switch's UPLINK (100).
            self._bottleneck(net, switches[i - 1], there, link, 100, f"s{i}", f"-s{i}")
        long_senders = [host(f"L{n}", f"10.0.1.{n}", a, switches[0], True)
                        for n, a in enumerate(topo.long_senders, 1)]
        cross = [host(f"C{i}", f"10.0.3.{i}", topo.cross_access, switches[i - 1], True)
                 for i in range(1, len(topo.links) + 1)]
        long_receivers = [host(f"RL{n}", f"10.0.2.{n}", topo.receiver_access, exit_bridge,
                               False) for n in range(1, len(topo.long_senders) + 1)]
        cross_receivers = [host(f"RC{i}", f"10.0.4.{i}", topo.receiver_access,
                                switches[i] if i < len(topo.links) else exit_bridge, False)
                           for i in range(1, len(topo.links) + 1)]
        return long_senders + cross, long_receivers + cross_receivers

    def _bottleneck(self, net, a: int, b: int, link: Bottleneck, port: int, switch: str,
                    suffix: str) -> None:
        spec = self.spec
        # The link's other direction (the ACKs, a reverse flow's data) at the same rate, a
        # DropTail queue of the same buffer: ns-2's duplex link.
        disc = net.AddBottleneck(a, b, link_bps(link), link.delay, link.buffer,
                                 len(self.ports))
        config = PortConfig(port=port, aqm=spec.first_aqm, link_pps=link.pps, seed=spec.seed,
                            telemetry_interval=spec.telemetry_interval)
        if self.behaviour.aqm_impl == "ns3":
            native = NativePort(config, switch)
            native.disc = disc
            kind, attrs = native_attributes(spec.aqm, link.pps, link.packet_bytes, spec.loop)
            net.UseChild(disc, kind, list(attrs), list(attrs.values()))
            self.ports.append(Port(native, disc, link, suffix))
        else:
            twin = TwinPort(config, spec.loop, self.behaviour.decide_at, switch, self.flow_of)
            self.ports.append(Port(twin, disc, link, suffix))
        self._configure(self.ports[-1])

    def _configure(self, port: Port) -> None:
        """The disc's queues (DualPI2: two) and where the port's algorithm decides (both
        follow the algorithm, which aqm_from changes)."""
        queues = port.twin.config.aqm.queues(port.link.pps, port.link.buffer)
        interval = self.spec.telemetry_interval
        at_arrival = isinstance(port.twin, TwinPort) and port.twin.at_arrival
        port.disc.Configure(link_bps(port.link), queues[0].depth, queues[-1].depth,
                            len(queues) > 1, at_arrival, self.behaviour.bmv2_drop,
                            -1.0 if interval is None else interval)

    def flow_of(self, tag: int) -> tuple[FiveTuple | None, int]:
        """A packet's flow as the switch's tables see it (the testbed's addresses), and the
        round-trip time its sender measures (us; 0 before a sample, or for the userspace
        transport): what seed 002's senders write into their packets for AECN."""
        if tag not in self.tagged:
            return None, 0
        src, dst, source, dport = self.tagged[tag]
        ip = lambda text: int(ipaddress.IPv4Address(text))     # noqa: E731
        if source is None:
            return FiveTuple(ip(src.ip), ip(dst.ip), 17, 0, dport), 0
        return FiveTuple(ip(src.ip), ip(dst.ip), 6, source.localPort, dport), source.SrttUs()

    def network(self, seed_run: int):
        """A new ns-3 network with Python's hooks: each ns-3 calls with the port's, the
        flow's or the event's number, and is converted once."""
        net = self.g.p4aqm_twin.Network(self.spec.seed, seed_run)
        net.SetHooks(
            self._guarded(lambda port, *a: self.ports[port].twin.decide(*a), 0),
            self._guarded(lambda port, *a: self.ports[port].twin.departed(*a), None),
            self._guarded(lambda port, *a: self.ports[port].twin.telemetry(*a), None),
            self._guarded(lambda flow, *a: self.udp[flow][0](*a), None),
            self._guarded(lambda flow, *a: self.udp[flow][1](*a), None),
            self._guarded(lambda event: self.events[event](), None))
        return net

    def _guarded(self, hook, failed):
        """A Python hook ns-3 calls: an exception would end Simulator::Run for good, so it
        is kept, the simulation stopped, and raised once Run returns."""
        def call(*args):
            if self.failure is not None:
                return failed
            try:
                return hook(*args)
            except BaseException as err:
                self.failure = err
                self.ns.Simulator.Stop()
                return failed
        self.hooks.append(call)
        return call

    def _at(self, net, t: float, hook) -> None:
        """`hook` at t s of simulated time (through the network's one timer hook)."""
        self.events.append(hook)
        net.At(t, len(self.events) - 1)

    # ----- traffic ------------------------------------------------------------------------

    def traffic(self, net, senders: list[Host], receivers: list[Host]) -> None:
        spec = self.spec
        jitter = random.Random(spec.seed)
        for k, flow in enumerate(spec.flows):
            flow = replace(flow, start=flow.start + jitter.uniform(0, START_JITTER))
            src = receivers[flow.receiver] if flow.reverse else senders[flow.sender]
            dst = senders[flow.sender] if flow.reverse else receivers[flow.receiver]
            port = IPERF_BASE_PORT + k
            end = flow.start + (flow.duration or spec.duration - flow.start)
            if flow.transport == "kernel" or (flow.transport == "scalable"
                                              and self.behaviour.scalable == "dctcp"):
                self._tcp_flow(net, k, flow, src, dst, port, end)
            else:
                self._userspace_flow(net, k, flow, src, dst, port, end)
        if spec.transfers:
            server = senders[0]
            cc = CONGESTION[spec.topology.congestion_control]
            self.server = (server, net.AddTransferServer(
                server.node, TRANSFER_PORT, spec.transfers.size, cc, self.attributes()))
            self.clients = [(r, net.AddTransferClient(
                r.node, server.node, TRANSFER_PORT, spec.transfers.count, spec.transfers.size,
                0.0, cc, self.attributes())) for r in receivers]

    def _tcp_flow(self, net, k: int, flow: Flow, src: Host, dst: Host, port: int,
                  end: float) -> None:
        scalable = flow.transport == "scalable"
        cc = SCALABLE if scalable else CONGESTION[self.spec.topology.congestion_control]
        attributes = self.attributes(flow, scalable)
        sink = net.AddSink(dst.node, port, cc, attributes)
        streams = []
        for s in range(flow.streams):
            tag = len(self.tagged) + 1
            # iperf3 connects its streams one after the other: a millisecond apart here.
            source = net.AddSource(src.node, dst.node, port, cc, tag, flow.start + 0.001 * s,
                                   end, attributes)
            self.tagged[tag] = (src, dst, source, port)
            streams.append((src, source))
        self.tcp.append(TcpFlow(k, port, dst, sink, streams))

    def _userspace_flow(self, net, k: int, flow: Flow, src: Host, dst: Host, port: int,
                        end: float) -> None:
        # The transport's header (12 bytes) in UDP in IPv4: its segments fill the MTU.
        payload = self._mtu() - 40
        config = config_for(flow.transport, flow.window or 0, payload)
        state: dict = {"src": src, "dst": dst, "reassembly": Reassembly(), "error": None,
                       "fin": None, "fin_acked": False, "closed_at": None, "first": None,
                       "last": None, "not_ect": 0, "seconds": end - flow.start, "port": port}
        self.sessions[k] = state
        give_up = self.spec.duration + GRACE

        def sender_hook(kind: int, now: float, ack: int, level: int, echo: int, ce: int):
            if state["closed_at"] is not None:
                return
            if kind == 0:
                state["session"] = SendSession(config, state["seconds"], give_up, now,
                                               payload)
            session: SendSession = state["session"]
            if state["fin"] is not None:          # closing: the FIN's ACK or a retry
                if kind == 1 and ack > state["fin"]:
                    state["fin_acked"], state["closed_at"] = True, now
                    sender.Arm(-1.0)
                elif kind == 2:
                    self._fin(state, sender, now)
                return
            if kind == 1:
                session.acks(now, [(ack, wire.Level(level), echo, ce)])
            try:
                session.tick(now)
            except ReceiverSilent as err:
                state["error"], state["closed_at"] = str(err), now
                sender.Arm(-1.0)
                return
            for seq in session.poll(now):
                sender.Send(seq, False)
            if session.done:
                state["fin"], state["tries"] = session.sender.snd_una, 0
                self._fin(state, sender, now)
                return
            wake = session.wake()
            sender.Arm(-1.0 if wake is None else wake)

        def receiver_hook(seq: int, payload: int, ecn: int, fin: bool, now: float) -> None:
            reassembly: Reassembly = state["reassembly"]
            state["first"] = now if state["first"] is None else state["first"]
            state["last"] = now
            state["not_ect"] += ecn == 0
            level = wire.level_of_ecn(ecn)
            ack = reassembly.on_segment(seq, payload, level, fin)
            receiver.Ack(ack, seq, int(level), reassembly.stats.ce_packets)

        tag = len(self.tagged) + 1
        self.tagged[tag] = (src, dst, None, port)
        self.udp[tag] = (sender_hook, receiver_hook)
        receiver = net.AddUdpReceiver(dst.node, port, tag)
        tos = wire.ECT1 if flow.transport == "scalable" else wire.ECT0
        sender = net.AddUdpSender(src.node, dst.node, port, tag, self._mtu(), tos, flow.start)
        state["ends"] = (sender, receiver)

    def _fin(self, state: dict, sender, now: float) -> None:
        """endpoint._close's FIN, resent each RTO within [0.5, 1] s, FIN_TRIES times."""
        if state["tries"] >= FIN_TRIES:
            state["closed_at"] = now
            sender.Arm(-1.0)
            return
        state["tries"] += 1
        sender.Send(state["fin"], True)
        rto = state["session"].sender.rto
        sender.Arm(now + min(max(rto, 0.5), 1.0))

    # ----- the run --------------------------------------------------------------------------

    def schedule(self, net) -> None:
        spec = self.spec
        for t in range(int(self.end()) + 1):
            self._at(net, float(t), self._sample)
        for port in self.ports:
            if spec.loop is not None:
                interval = spec.loop.interval
                for n in range(1, int(self.end() / interval) + 1):
                    self._at(net, n * interval,
                             lambda t=n * interval, twin=port.twin: twin.adapt(t))
        for k, (at, fraction) in enumerate(spec.rate_steps):
            self._at(net, at, lambda fraction=fraction, at=at: self._rate_step(at, fraction))
        if spec.aqm_from:
            self._at(net, spec.aqm_from, self._install_aqm)
        if spec.transfers:
            for t in range(1, int(self.end()) + 1):
                self._at(net, float(t), self._transfers_done)

    def end(self) -> float:
        return self.spec.duration + (GRACE if self.spec.transfers else DRAIN)

    def _sample(self) -> None:
        now = self.ns.Simulator.Now().GetSeconds()
        for port in self.ports:
            port.twin.sample(now, port.disc.enqueued, port.disc.servedBytes)
        for flow in self.tcp:
            flow.sample(now)
        self._sample_connections(now)

    def _rate_step(self, at: float, fraction: float) -> None:
        """The testbed's step: set_queue_rate to the nearest whole packets/s."""
        for port in self.ports:
            link = port.link
            port.disc.SetRate(link_bps(link) * max(1, round(link.pps * fraction)) / link.pps)
        self.steps.append({"planned": at, "fraction": fraction, "at": at})

    def _install_aqm(self) -> None:
        now = self.ns.Simulator.Now().GetSeconds()
        for port in self.ports:
            port.twin.install(replace(port.twin.config, aqm=self.spec.aqm), "run",
                              f"{self.spec.aqm.action} in place of droptail, "
                              f"{self.spec.aqm_from:g} s into the run (aqm_from)", now)
            self._configure(port)
        self.installed = [{"switch": port.twin.switch, "planned": self.spec.aqm_from,
                           "at": now} for port in self.ports]

    def _transfers_done(self) -> None:
        if all(client.Done() for _, client in self.clients):
            self.ns.Simulator.Stop()

    # ----- connections (the ConnectionSampler's document) -----------------------------------

    def _sample_connections(self, now: float) -> None:
        for flow in self.tcp:
            for src, source in flow.streams:
                if source.localPort == 0:
                    continue
                key = f"{flow.port}/{source.localPort}"
                self._point("receiver", key, flow.dst.name, now,
                            bytes=flow.sink.ReceivedFrom(source.localPort))
                self._point("sender", key, src.name, now, bytes=source.wire,
                            retrans=source.retransmits)
                for name in (src.name, flow.dst.name):
                    rounds = self.rounds.setdefault(name, [])
                    if not rounds or rounds[-1] != now:
                        rounds.append(now)

    def _point(self, role: str, key: str, host: str, now: float, **counters) -> None:
        entry = self.series[role].setdefault(key, {"host": host, "t": [],
                                                   **{name: [] for name in counters}})
        entry["t"].append(now)
        for name, value in counters.items():
            entry[name].append(int(value))

    # ----- running and writing ---------------------------------------------------------------

    def run(self) -> dict:
        """Simulate the run; returns twin.json's figures."""
        spec = self.spec
        self.rounds: dict[str, list[float]] = {}
        self.series: dict[str, dict] = {"receiver": {}, "sender": {}}
        self.steps: list[dict] = []
        self.installed: list[dict] = []
        self._tcp_defaults()
        minimum = self.calibrate() if spec.transfers else None
        net = self.network(1)
        senders, receivers = self.build(net)
        net.AssignAddresses()
        self.traffic(net, senders, receivers)
        if spec.pcap:
            for k, port in enumerate(self.ports):
                net.Capture(k, str(self.folder / f"bottleneck{port.suffix}.pcap"), spec.pcap,
                            PCAP_SNAPLEN)
        self.schedule(net)
        window = (spec.measure_from, spec.measure_until or spec.duration)
        for t in window:
            self._at(net, t, lambda: self._sample_connections(
                self.ns.Simulator.Now().GetSeconds()))
        began = time.monotonic()
        wall = net.Run(self.end())
        simulated = net.Now()
        if self.failure is not None:
            raise TwinError(f"{spec.label}: a hook failed in ns-3 at "
                            f"{simulated:.3f} s: {type(self.failure).__name__}: "
                            f"{self.failure}") from self.failure
        self._sample()
        self.write(net, senders, receivers, minimum)
        decided = sum(port.twin.decided for port in self.ports)
        return {"simulated_s": simulated, "wall_s": wall,
                "setup_s": time.monotonic() - began - wall, "packets_decided": decided,
                "ns3": NS3_VERSION}

    def calibrate(self) -> dict:
        """Segments one transfer takes alone (the testbed's calibration), in a simulation
        of its own on the same network."""
        spec = self.spec
        net = self.network(2)
        senders, receivers = self.build(net)
        net.AssignAddresses()
        cc = CONGESTION[spec.topology.congestion_control]
        server = net.AddTransferServer(senders[0].node, TRANSFER_PORT, spec.transfers.size, cc,
                                       self.attributes())
        client = net.AddTransferClient(receivers[0].node, senders[0].node, TRANSFER_PORT, 1,
                                       spec.transfers.size, 0.0, cc, self.attributes())
        net.Run(60.0)
        if not client.Done():
            raise TwinError(f"{spec.label}: the calibration transfer did not finish in 60 s")
        out = net.Segments(senders[0].node).out
        got = getattr(net.Segments(receivers[0].node), "in")
        self.ports.clear()    # the calibration's bottlenecks are not the run's
        del net
        return {"server_out_segs": int(out - server.retransmits),
                "server_retransmitted": int(server.retransmits), "client_in_segs": int(got)}

    def write(self, net, senders: list[Host], receivers: list[Host],
              minimum: dict | None) -> None:
        folder = self.folder
        for port in self.ports:
            recorded = port.twin.recorded
            for name, rows in ((f"telemetry{port.suffix}.csv", recorded.telemetry),
                               (f"counters{port.suffix}.csv", recorded.counters)):
                if rows:
                    with open(folder / name, "w", newline="") as out:
                        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
                        writer.writeheader()
                        writer.writerows(rows)
        for port in self.ports:
            if port.twin.groups:
                (folder / f"groups{port.suffix}.json").write_text(json.dumps(
                    port.twin.groups, indent=1))
        (folder / "events.json").write_text(json.dumps(
            [e for port in self.ports for e in port.twin.recorded.events], indent=1))
        if self.steps:
            (folder / "rate_steps.json").write_text(json.dumps(self.steps, indent=1))
        if self.installed:
            (folder / "aqm_from.json").write_text(json.dumps(self.installed, indent=1))
        flows = folder / "flows"
        flows.mkdir(exist_ok=True)
        tcp = {flow.k: flow for flow in self.tcp}
        for k, flow in enumerate(self.spec.flows):
            if k in self.sessions:
                client, server = self._userspace_docs(k)
            else:
                client, server = self._iperf3_docs(flow, tcp[k])
            (flows / f"flow{k:03d}.json").write_text(json.dumps(client, indent=1))
            (flows / f"flow{k:03d}-receiver.json").write_text(json.dumps(server, indent=1))
        if self.tcp:
            (folder / "connections.json").write_text(json.dumps(
                {"period": 1.0, "started": 0.0, "rounds": self.rounds, **self.series}))
        if self.spec.transfers:
            self._write_transfers(net, senders, receivers, minimum)

    def _iperf3_docs(self, flow: Flow, tcp: TcpFlow) -> tuple[dict, dict]:
        """iperf3's client and server reports of a flow of kernel TCP."""
        sink, streams, port = tcp.sink, tcp.streams, tcp.port
        end = flow.start + (flow.duration or self.spec.duration - flow.start)
        connected = [(s, src, source) for s, (src, source) in enumerate(streams)
                     if source.localPort]
        client_streams, server_streams = [], []
        for s, src, source in connected:
            seconds = end - source.connectedAt
            got = sink.ReceivedFrom(source.localPort)
            client_streams.append({
                "sender": {"socket": s + 5, "bytes": int(source.highest),
                           "retransmits": int(source.retransmits), "seconds": seconds},
                "receiver": {"socket": s + 5, "bytes": int(got), "seconds": seconds}})
            server_streams.append({"receiver": {"socket": s + 5, "bytes": int(got),
                                                "seconds": seconds}})

        def total(role: str, key: str) -> float:
            return sum(stream[role][key] for stream in client_streams)
        seconds = max((st["sender"]["seconds"] for st in client_streams), default=0.0)
        start = {"connected": [{"socket": s + 5, "local_port": source.localPort,
                                "remote_port": port} for s, _, source in connected]}
        if len(connected) == flow.streams:
            start["test_start"] = {"protocol": "TCP", "num_streams": flow.streams}
        client = {"start": start, "intervals": tcp.intervals(flow.start), "end": {
            "streams": client_streams,
            "sum_sent": {"bytes": total("sender", "bytes"),
                         "retransmits": total("sender", "retransmits"), "seconds": seconds},
            "sum_received": {"bytes": total("receiver", "bytes"), "seconds": seconds}}}
        if not connected:
            client["error"] = "no stream connected"
        server = {"start": {"connected": [{"socket": s + 5, "remote_port": source.localPort}
                                          for s, _, source in connected]},
                  "end": {"streams": server_streams}}
        return client, server

    def _userspace_docs(self, k: int) -> tuple[dict, dict]:
        state = self.sessions[k]
        session: SendSession | None = state.get("session")
        if session is None:
            return {"error": "never started"}, {}
        closed = state["closed_at"] if state["closed_at"] is not None else self.end()
        client = session.result(seconds=closed - session.t0, started=session.t0,
                                host=state["dst"].name, port=state["port"],
                                error=state["error"], fin_acked=state["fin_acked"],
                                extra={"malformed_acks": 0, "socket_errors": {}})
        reassembly: Reassembly = state["reassembly"]
        first, last = state["first"], state["last"]
        server = {"peer": [state["src"].name, 0], "flow": k + 1,
                  "seconds": (last - first) if first is not None else 0.0,
                  "complete": reassembly.complete, "malformed": 0,
                  "not_ect": state["not_ect"], "socket_errors": {}, "error": None,
                  **vars(reassembly.stats)}
        return client, server

    def _write_transfers(self, net, senders: list[Host], receivers: list[Host],
                         minimum: dict) -> None:
        out = self.folder / "transfers"
        out.mkdir(exist_ok=True)
        size = self.spec.transfers.size
        for j, (_, client) in enumerate(self.clients):
            transfers = [{"bytes": int(b), "seconds": float(s) if s >= 0 else None}
                         for s, b in zip(client.seconds, client.bytes)]
            for t in transfers:
                if t["seconds"] is None:
                    t["error"] = "interrupted at the run's end"
            (out / f"client{j:02d}.json").write_text(json.dumps(
                {"size": size, "count": self.spec.transfers.count, "transfers": transfers}))
        server_host, server = self.server
        counts = {}
        for h in [server_host, *receivers]:
            seg = net.Segments(h.node)
            resent = int(server.retransmits) if h is server_host else 0
            counts[h.name] = {"OutSegs": int(seg.out) - resent, "RetransSegs": resent,
                              "InSegs": int(getattr(seg, "in"))}
        (out / "tcp.json").write_text(json.dumps(counts, indent=1))
        (out / "minimum.json").write_text(json.dumps(minimum))


def execute(spec: RunSpec, folder: Path) -> Path:
    """One run of the plan in ns-3 into `folder` (metrics are the caller's, as for the
    switch's runs)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(jsonable(spec), indent=1))
    (folder / "versions.json").write_text(json.dumps(
        {"p4aqm": project_version(), "backend": "ns3", **package_versions(),
         "ns3": NS3_VERSION, "machine": machine()}, indent=1))
    twin = Twin(spec, folder)
    figures = twin.run()
    (folder / "twin.json").write_text(json.dumps(figures, indent=1))
    return folder
