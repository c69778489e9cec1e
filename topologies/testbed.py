"""A BMv2 switch in its own namespace, each port wired by a veth to an interface in a
second ("tester") namespace where the test sends and captures raw frames."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.bmv2 import Bmv2Config, Bmv2Switch
from topologies.netns import NetNS, PacketPort, veth_pair


@dataclass
class Testbed:
    workdir: Path
    ports: tuple[int, ...] = (1, 2)
    log_level: str = "warn"
    wrapper: tuple[str, ...] = ()
    binary: Path | None = None
    ready_timeout: float = 15.0
    priority_queues: int = 1      # BMv2's queues per port (DualPI2 needs 2)
    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    switch_ns: NetNS | None = field(default=None, init=False)
    tester_ns: NetNS | None = field(default=None, init=False)
    switch: Bmv2Switch | None = field(default=None, init=False)
    _io: dict[int, PacketPort] = field(default_factory=dict, init=False)

    def iface(self, side: str, port: int) -> str:
        return f"aq{self.tag}{side}{port}"

    def start(self) -> "Testbed":
        try:
            self.switch_ns = NetNS.create(f"p4aqm-{self.tag}-sw")
            self.tester_ns = NetNS.create(f"p4aqm-{self.tag}-tx")
            for port in self.ports:
                veth_pair(self.iface("s", port), self.switch_ns,
                          self.iface("h", port), self.tester_ns)
            self.switch = Bmv2Switch(Bmv2Config(
                enter_netns=("ip", "netns", "exec", self.switch_ns.name),
                workdir=self.workdir, log_level=self.log_level, wrapper=self.wrapper,
                binary=self.binary, priority_queues=self.priority_queues,
                interfaces={port: self.iface("s", port) for port in self.ports}))
            self.switch.start(self.ready_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def port(self, port: int) -> PacketPort:
        """The tester's end of a switch port."""
        if port not in self._io:
            self._io[port] = PacketPort(self.tester_ns, self.iface("h", port))
        return self._io[port]

    def stop(self) -> None:
        for io in self._io.values():
            io.close()
        self._io.clear()
        if self.switch is not None:
            self.switch.stop()
        for ns in (self.switch_ns, self.tester_ns):
            if ns is not None:
                ns.delete()
        self.switch_ns = self.tester_ns = None

    def __enter__(self) -> "Testbed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
