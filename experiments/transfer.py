"""Seed 004's short transfers: a server that sends N bytes per request, and a client that
fetches files one after the other (a new TCP connection, handshake included, for each)
and records each transfer time.

    python -m experiments.transfer serve --port 8000
    python -m experiments.transfer fetch --server 10.0.0.1 --port 8000 --count 11 \
        --size 102400 --out client.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import socketserver
import sys
import time

CHUNK = 64 * 1024


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(64).decode(errors="replace").strip()
        try:
            size = int(line.removeprefix("GET "))
        except ValueError:
            return
        payload = bytes(min(size, CHUNK))
        left = size
        while left > 0:
            n = min(left, CHUNK)
            self.wfile.write(payload[:n])
            left -= n


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    congestion_control = ""

    def server_bind(self) -> None:
        if self.congestion_control:  # accepted connections inherit it
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                                   self.congestion_control.encode())
        super().server_bind()


def fetch(server: str, port: int, size: int, timeout: float, congestion_control: str,
          progress: dict) -> None:
    """One transfer; `progress` holds its bytes so far, and its time once complete."""
    start = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
        sock.settimeout(timeout)
        sock.connect((server, port))
        sock.sendall(f"GET {size}\n".encode())
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            progress["bytes"] += len(data)
    progress["seconds"] = time.monotonic() - start


def save(path: str, record: dict) -> None:
    """Whole or not at all: the run may be stopped while this is written."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as out:
        json.dump(record, out)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--cc", default="reno", help="TCP congestion control")
    get = sub.add_parser("fetch")
    get.add_argument("--server", required=True)
    get.add_argument("--port", type=int, default=8000)
    get.add_argument("--count", type=int, default=11)
    get.add_argument("--size", type=int, default=100 * 1024)
    get.add_argument("--timeout", type=float, default=60.0)
    get.add_argument("--out", required=True)
    get.add_argument("--cc", default="reno", help="TCP congestion control")
    args = parser.parse_args(argv)

    if args.command == "serve":
        Server.congestion_control = args.cc
        with Server(("0.0.0.0", args.port), Handler) as server:
            print("ready", flush=True)
            server.serve_forever()
        return 0

    # Every transfer is tried and recorded, a failed one too (the load stays the same), and
    # the file is rewritten after each, so a client stopped at the run's end (SIGINT) keeps
    # what it did; transfers never begun show as missing from `count`.
    record = {"size": args.size, "count": args.count, "transfers": []}
    save(args.out, record)
    under_way = None
    try:
        for _ in range(args.count):
            under_way = {"bytes": 0, "seconds": None}
            record["transfers"].append(under_way)
            try:
                fetch(args.server, args.port, args.size, args.timeout, args.cc, under_way)
            except OSError as err:
                under_way["error"] = str(err)
            under_way = None
            save(args.out, record)
    except KeyboardInterrupt:
        if under_way is not None:
            under_way["error"] = "interrupted at the run's end"
        save(args.out, record)
        return 1
    return 0 if all(t["bytes"] == args.size for t in record["transfers"]) else 1


if __name__ == "__main__":
    sys.exit(main())
