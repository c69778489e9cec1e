"""Network namespaces and veth pairs made with iproute2, and raw packet ports in them.

The namespaces this process made and has not deleted are in MADE (made and recorded
together, a signal waiting until both are done): an interrupted command deletes what is
left of them (delete_left), and deleting one first ends whatever still runs in it.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from topologies.cleanup import GUARD, stop_namespaces

T = TypeVar("T")
# Named namespaces this process made and has not deleted yet.
MADE: set[str] = set()
CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {result.stderr.strip()}")


@dataclass(frozen=True)
class NetNS:
    """A named network namespace (ip netns) this process created and will delete."""

    name: str

    @classmethod
    def create(cls, name: str) -> "NetNS":
        with GUARD.deferred():
            ip("netns", "add", name)
            MADE.add(name)
        ns = cls(name)
        ns.exec("ip", "link", "set", "lo", "up")
        for scope in ("all", "default"):
            ns.exec("sysctl", "-qw", f"net.ipv6.conf.{scope}.disable_ipv6=1")
        return ns

    def delete(self) -> None:
        """End whatever still runs inside (SIGTERM, then SIGKILL), then delete the
        namespace, and with it the interfaces inside it."""
        with GUARD.deferred():
            try:
                identity = f"net:[{os.stat(f'/var/run/netns/{self.name}').st_ino}]"
            except FileNotFoundError:
                MADE.discard(self.name)
                return
            stop_namespaces({identity})
            ip("netns", "delete", self.name)
            MADE.discard(self.name)

    def exec(self, *args: str) -> str:
        result = subprocess.run(["ip", "netns", "exec", self.name, *args],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise OSError(f"[{self.name}] {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def call(self, fn: Callable[[], T]) -> T:
        """Run fn in a thread that has entered this namespace (sockets it opens stay there)."""
        box: dict[str, object] = {}

        def enter_and_run() -> None:
            fd = os.open(f"/var/run/netns/{self.name}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({self.name})")
                box["result"] = fn()
            except BaseException as err:  # re-raised in the caller's thread
                box["error"] = err
            finally:
                os.close(fd)

        thread = threading.Thread(target=enter_and_run, name=f"netns-{self.name}")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["result"]  # type: ignore[return-value]


def delete_left() -> list[str]:
    """Delete the namespaces this process made and has not deleted (an interrupted
    command's leftovers); their names."""
    left = sorted(MADE)
    for name in left:
        NetNS(name).delete()
    return left


def veth_pair(a: str, ns_a: NetNS, b: str, ns_b: NetNS, mtu: int = 1500) -> None:
    """A veth pair with end a in ns_a and end b in ns_b, both up and without IPv6. Made
    and moved in one go: a signal in between would leave it in our namespace."""
    with GUARD.deferred():
        ip("link", "add", a, "type", "veth", "peer", "name", b)
        for end, ns in ((a, ns_a), (b, ns_b)):
            ip("link", "set", end, "netns", ns.name)
    for end, ns in ((a, ns_a), (b, ns_b)):
        ns.exec("sysctl", "-qw", f"net.ipv6.conf.{end}.disable_ipv6=1")
        ns.exec("ip", "link", "set", end, "mtu", str(mtu), "up")


class PacketPort:
    """Raw Ethernet frames in and out of one interface (AF_PACKET), inside a namespace."""

    def __init__(self, ns: NetNS, iface: str):
        self.iface = iface

        def open_socket() -> socket.socket:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            sock.bind((iface, 0))
            return sock

        self.sock = ns.call(open_socket)

    def send(self, frame: bytes) -> None:
        self.sock.send(frame)

    def receive(self, *, quiet: float = 0.5, limit: float = 30.0,
                expect: int | None = None) -> list[bytes]:
        """Frames that arrive until none has for `quiet` seconds, `expect` frames have come,
        or `limit` seconds have passed; frames this port sent are left out."""
        frames: list[bytes] = []
        deadline = time.monotonic() + limit
        last = time.monotonic()
        while time.monotonic() < deadline and (expect is None or len(frames) < expect):
            self.sock.settimeout(max(0.01, min(quiet - (time.monotonic() - last),
                                               deadline - time.monotonic())))
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                if time.monotonic() - last >= quiet:
                    break
                continue
            if addr[2] == PACKET_OUTGOING:
                continue
            frames.append(data)
            last = time.monotonic()
        return frames

    def drain(self) -> None:
        """Discard whatever is queued on the socket."""
        self.sock.setblocking(False)
        try:
            while True:
                self.sock.recv(65535)
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def close(self) -> None:
        self.sock.close()
