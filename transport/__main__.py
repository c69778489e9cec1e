"""python -m transport {send, receive}: the MECN transport's two ends.

    python -m transport receive --port 6001 --out receiver.json
    python -m transport send --to 10.0.1.1 --port 6001 --time 30 --response mecn > flow.json
"""

from __future__ import annotations

import argparse
import signal
import sys

from transport import endpoint, session
from transport.reno import Response


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transport", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    snd = sub.add_parser("send", help="send for a time, print iperf3-shaped JSON")
    snd.add_argument("--to", required=True, help="receiver's IPv4 address")
    snd.add_argument("--port", type=int, required=True)
    snd.add_argument("--time", type=float, default=10.0, help="seconds of new data")
    snd.add_argument("--response", choices=[r.value for r in Response], default="mecn",
                     help="mecn: seed 001 Table 3 (0.8/0.6/0.5); rfc3168: any mark halves; "
                          "scalable: ECT(1), cwnd (1 - alpha/2) once per round trip on CE "
                          "marks (DCTCP, TCP Prague's core), loss as Reno")
    snd.add_argument("--window", type=int, default=0,
                     help="receive window in bytes (iperf3 -w); 0: 1000 segments")
    snd.add_argument("--flow", type=int, default=1, help="flow id carried in every datagram")
    snd.add_argument("--give-up", type=float, default=15.0,
                     help="seconds without an acknowledgement before giving up")
    snd.add_argument("--out", help="write the JSON here instead of stdout")
    rcv = sub.add_parser("receive", help="serve one flow, print its statistics")
    rcv.add_argument("--port", type=int, required=True)
    rcv.add_argument("--first-wait", type=float, default=120.0,
                     help="seconds to wait for the first segment")
    rcv.add_argument("--idle", type=float, default=30.0,
                     help="seconds of silence after which the flow is given up")
    rcv.add_argument("--out", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    # SIGTERM ends like Ctrl-C: the result written with what was measured.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    if args.command == "receive":
        if not 0 < args.port < 65536:
            parser.error(f"port {args.port} outside 1-65535")
        result = endpoint.receive(args.port, args.first_wait, args.idle,
                                  on_ready=lambda: print("ready", file=sys.stderr, flush=True))
        endpoint.dump(result, args.out)
        return 0 if result["error"] is None else 1

    if not 0 < args.port < 65536:
        parser.error(f"port {args.port} outside 1-65535")
    if args.time <= 0 or args.give_up <= 0:
        parser.error("--time and --give-up must be > 0")
    try:
        config = session.config_for(args.response, args.window)
    except ValueError as err:
        parser.error(f"--window: {err}")
    job = endpoint.SendJob(args.to, args.port, args.time, flow=args.flow, give_up=args.give_up)
    result = endpoint.send(job, config)
    endpoint.dump(result, args.out)
    if result["error"]:
        print(f"transport send: {result['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
