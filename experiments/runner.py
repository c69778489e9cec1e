"""Running one experiment: topology up, controller on, delay checked, traffic, raw data
saved, everything stopped (also on error, and on SIGINT or SIGTERM wherever it lands: see
topologies/cleanup.py), metrics computed.

A run's folder holds:
  config.json      the RunSpec, as run
  versions.json    p4c, BMv2, iperf3, Python packages, the machine (experiments/versions.py)
  rtt.json         measured ping RTT per sender/receiver pair against the configured one
  telemetry.csv    bottleneck telemetry: time, average, depth, probability, sojourn, Pmax,
                   group, the RTT the switch measured (AECN) and the codepoint on arrival
  counters.csv     bottleneck counters once a second
  groups.json      marks and drops per group (AECN's RTT groups, PI2's classes); AECN:
                   the RTT tracker's events
  flows/*.json     iperf3 output of every flow (client side), or the userspace
                   transport's in the same shape; flowNNN-receiver.json its receiver's
                   (the iperf3 server's JSON, the bytes it got even when the client was
                   interrupted)
  transfers/*.json short-transfer client results; tcp.json per-host TCP segment counts
  s1/              the switch's log; d*.json the delay lines' counters
  aqm_from.json    when each bottleneck's AQM replaced DropTail (RunSpec.aqm_from)
  connections.json every iperf3 connection's byte counters at both ends over time
                   (experiments/connections.py): the flows' rates within the window
  metrics.json     computed metrics (see analysis/metrics.py); flows.csv per flow (per
                   stream of an iperf3 that carries several)
  controller_restarts.json  (a run told to restart its controller, controller_restart_at)
                   when each controller was killed and came back, and whether it adopted
                   the switch (counters and AQM state carried on) or had to push the
                   program (the run is then disturbed, and says so)
"""

from __future__ import annotations

import asyncio
import csv
import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.aqm import Aqm, PortConfig
from control_plane.program import Artifacts
from tooling.build import REPO
from control_plane.controller import Controller, PortView, Route
from control_plane.state import StateFile
from experiments.connections import ConnectionSampler
from experiments.phase import phase
from experiments.spec import (IPERF_BASE_PORT, OTHER_PORTS, PCAP_SNAPLEN, TRANSFER_PORT,
                              WIDE_QUEUE, RunSpec, jsonable)
from experiments.versions import tool_versions
from topologies.cleanup import GUARD
from topologies.dumbbell import Dumbbell, DumbbellSpec
from topologies.nodes import SwitchPlan
from topologies.parking_lot import ParkingLot

LOG = logging.getLogger("p4aqm.run")
# Seconds past the run's end before late traffic processes are interrupted.
GRACE = 20.0
READY_TIMEOUT = 15.0   # s for a server to say it listens


class DelayNotDelivered(RuntimeError):
    """The measured RTT is not the configured one: the run would measure something else."""


class ControllerThread:
    """The asyncio controller in a thread of its own, beside Mininet's blocking calls."""

    def __init__(self, ctl: Controller):
        self.ctl = ctl
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name="controller")
        self.thread.start()

    def call(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def spawn(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        if not self.thread.is_alive():     # crashed (crash())
            return
        try:
            self.call(self.ctl.stop(), timeout=15)
            self.call(self._cancel_rest(), timeout=15)
        finally:
            self._end()

    def crash(self) -> None:
        """The controller ended as a kill ends it: every task of its loop cancelled (its
        P4Runtime stream closes, so the switch sees it gone), nothing saved or tidied, its
        state file's lock freed as the kernel frees a dead process's."""
        try:
            self.call(self._cancel_rest(), timeout=15)
        finally:
            self._end()
            if self.ctl.state is not None:
                self.ctl.state.unlock()

    @staticmethod
    async def _cancel_rest() -> None:
        """Every other task cancelled, and those their cancellation started (a save of
        the change log's last event) too."""
        for _ in range(10):
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if not rest:
                return
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

    def _end(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Recorder:
    """Telemetry and counters of the bottleneck, timestamped from the run's start."""

    def __init__(self, ctl: Controller, port: int, t0: float):
        self.ctl, self.port, self.t0 = ctl, port, t0
        self.telemetry: list[dict] = []
        self.counters: list[dict] = []
        self.groups: dict = {}      # marks and drops per group; AECN: the tracker's events
        self.running = True

    def pmax(self) -> float | None:
        """The probability the port's loop adapts, as it stands (None: no loop adapts it)."""
        aqm = self.ctl.ports[self.port].config.aqm
        return getattr(aqm, type(aqm).adapted) if type(aqm).adapted else None

    async def record_telemetry(self) -> None:
        async for rec in self.ctl.switch.telemetry():
            if not self.running:
                return
            if rec.port != self.port:
                continue
            self.telemetry.append({
                "t": time.monotonic() - self.t0, "avg": rec.avg_packets, "qdepth": rec.qdepth,
                "prob": fp.from_frac32(rec.prob), "sojourn_ms": rec.deq_timedelta / 1000,
                "pmax": self.pmax(), "group": rec.group, "rtt_ms": rec.rtt / 1000,
                "ecn": rec.ecn_in})

    async def sample(self) -> None:
        try:
            c = await self.ctl.switch.read_counters(self.port)
            enqueued = await self.ctl.switch.read_enqueued(self.port)
            self.counters.append({"t": time.monotonic() - self.t0, "enqueued": enqueued,
                                  **asdict(c)})
            aqm = self.ctl.ports[self.port].config.aqm
            if type(aqm).group_names:
                self.groups = {"names": list(type(aqm).group_names),
                               **await self.ctl.switch.read_group_counters(self.port)}
            if "RTT_TRACKER" in type(aqm).parts:
                self.groups["rtt_events"] = await self.ctl.switch.read_rtt_events()
        except Exception as err:  # a sample lost to a reconnect is not fatal
            LOG.debug("counter sample failed: %s", err)

    def follow(self, controller: ControllerThread) -> None:
        """Record what this controller receives and reads (again, after a restart)."""
        self.ctl = controller.ctl
        controller.spawn(self.record_telemetry())
        controller.spawn(self.sample_counters())

    async def sample_counters(self, period: float = 1.0) -> None:
        while self.running:
            await self.sample()
            await asyncio.sleep(period)

    def write(self, folder: Path, suffix: str = "") -> None:
        for name, rows in ((f"telemetry{suffix}.csv", self.telemetry),
                           (f"counters{suffix}.csv", self.counters)):
            if rows:
                with open(folder / name, "w", newline="") as out:
                    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
                    writer.writeheader()
                    writer.writerows(rows)
        if self.groups:
            (folder / f"groups{suffix}.json").write_text(json.dumps(self.groups, indent=1))


def tcp_counters(host) -> dict[str, int]:
    """The host namespace's TCP segment counters (/proc/net/snmp)."""
    lines = [line.split() for line in host.cmd("cat /proc/net/snmp").splitlines()
             if line.startswith("Tcp:")]
    return {k: int(v) for k, v in zip(lines[0][1:], lines[1][1:])}


def priority_queues(aqm: Aqm, pps: int) -> int:
    """BMv2's queues per port the bottleneck's AQM needs (DualPI2: 2)."""
    return aqm.encode(Link(float(pps))).priority_queues


def build_topology(spec: RunSpec, folder: Path, log_level: str):
    """A Dumbbell or a ParkingLot, from the run's topology specification, its switches
    with the queues per port the AQM needs."""
    if isinstance(spec.topology, DumbbellSpec):
        queues = priority_queues(spec.aqm, spec.topology.bottleneck.pps)
        return Dumbbell(spec.topology, folder, log_level, priority_queues=queues)
    queues = max(priority_queues(spec.aqm, link.pps) for link in spec.topology.links)
    return ParkingLot(spec.topology, folder, log_level, priority_queues=queues)


def port_views(spec: RunSpec, plan: SwitchPlan) -> dict[int, PortView]:
    """A switch's ports as the run starts: the bottleneck's AQM (DropTail at its limit
    until aqm_from), the other ports DropTail at WIDE_QUEUE."""
    bn, views = plan.bottleneck, {}
    for port in plan.ports:
        if port == plan.bottleneck_port:
            config = PortConfig(port=port, aqm=spec.first_aqm, link_pps=bn.pps, seed=spec.seed,
                                telemetry_interval=spec.telemetry_interval)
            views[port] = PortView(config, loop=spec.loop)
        else:
            views[port] = PortView(PortConfig(port=port, aqm=OTHER_PORTS, link_pps=10 * bn.pps))
    return views


def rtt_bounds(expected_ms: float) -> tuple[float, float]:
    """The ping RTT (ms) a run accepts for a path configured at `expected_ms`: the delay
    must be there, and delay lines and switches add processing on top
    (docs/experiments/testbed.md: a few ms, up to ~2 ms a delay line on busy cores, more
    with many hops)."""
    return 0.95 * expected_ms - 0.5, expected_ms + max(5.0, 0.3 * expected_ms)


# Pings of a path whose RTT came out above its bound: a busy machine's scheduler can hold
# every packet of one round (seen: 26.3 ms for 20 with a benchmark on both cores).
PING_ROUNDS = 3


def checked_rtt(ping: Callable[[], str], expected_ms: float, path: str) -> dict[str, float]:
    """A path's RTT from `ping`'s output (five pings: their minimum, since one ping delayed
    by the scheduler says nothing of the path), within rtt_bounds or DelayNotDelivered.
    Above the bound it pings again, up to PING_ROUNDS rounds; below it, or with no reply,
    it refuses at once (no load makes a path shorter)."""
    low, high = rtt_bounds(expected_ms)
    for _ in range(PING_ROUNDS):
        out = ping()
        match = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", out)
        if match is None:
            raise DelayNotDelivered(f"{path}: no reply to ping: {out.strip()}")
        measured = float(match.group(1))
        if measured < low:
            break
        if measured <= high:
            return {"expected_ms": expected_ms, "min_ms": measured,
                    "avg_ms": float(match.group(2)), "max_ms": float(match.group(3))}
    raise DelayNotDelivered(f"{path}: ping RTT {measured:.1f} ms, configured "
                            f"{expected_ms:.1f} ms" + (f" ({PING_ROUNDS} rounds of pings)"
                                                       if measured > high else ""))


class Run:
    """One run. controller_restart_at: seconds into the traffic at which each switch's
    controller is killed and started again (from its state file, in the run's folder), as
    a crash and a supervisor's restart would: the test that a run is not disturbed by it
    (tests/test_restart.py)."""

    def __init__(self, spec: RunSpec, folder: Path, artifacts: Artifacts,
                 on_progress=None, log_level: str = "off",
                 controller_restart_at: float | None = None):
        spec.check()
        self.spec, self.folder, self.artifacts = spec, folder, artifacts
        self.on_progress = on_progress or (lambda done, total, what: None)
        self.log_level = log_level
        self.processes: list[subprocess.Popen] = []
        self.controller_restart_at = controller_restart_at

    def _phase(self, what: str) -> None:
        phase(f"run {self.spec.label} ({what})")

    def execute(self) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._phase("recording its configuration")
        (self.folder / "config.json").write_text(json.dumps(jsonable(self.spec), indent=1))
        (self.folder / "versions.json").write_text(json.dumps(tool_versions(), indent=1))
        # The teardown is deferred from before the first process starts: a signal landing
        # as the measurement ends cannot skip it, nor a second one cut it short.
        with GUARD.deferred():
            topo = build_topology(self.spec, self.folder, self.log_level)
            controllers: list[ControllerThread] = []
            try:
                with GUARD.interruptible():
                    self._measure(topo, controllers)
            finally:
                self._phase("stopping")
                with ExitStack() as stack:   # every step, even after one that failed
                    stack.callback(topo.stop)
                    for controller in controllers:
                        stack.callback(controller.close)
                    stack.callback(self._stop_processes)
        return self.folder

    def _measure(self, topo, controllers: list[ControllerThread]) -> None:
        self._phase("starting the topology")
        self.on_progress(0, self.spec.duration, "starting the topology")
        topo.start()
        plans = topo.switch_plans()
        self._phase("starting the controller")
        for plan in plans:
            self._start_controller(plan, controllers)
        self._phase("checking the delay")
        self._check_delay(topo)
        if self.spec.pcap:
            self._capture(plans)
        recorders = []
        for plan, controller in zip(plans, controllers):
            recorder = Recorder(controller.ctl, plan.bottleneck_port, time.monotonic())
            recorder.follow(controller)
            recorders.append(recorder)
        minimum = None
        if self.spec.transfers:
            self._phase("calibrating")
            minimum = self._calibrate(topo)
        self._phase("traffic")
        self._recorders = recorders
        self._traffic(topo, recorders, plans, controllers)
        self._phase("saving its results")
        for recorder in recorders:
            recorder.running = False
        time.sleep(1.2)
        # The last periodic sample may be up to a second old: totals end after the drain.
        for controller, recorder in zip(controllers, recorders):
            controller.call(recorder.sample())
        for plan, recorder in zip(plans, recorders):
            recorder.write(self.folder, "" if len(plans) == 1 else f"-{plan.node.name}")
        (self.folder / "events.json").write_text(json.dumps(
            [{"switch": plan.node.name, **asdict(e)}
             for plan, c in zip(plans, controllers) for e in c.ctl.events], indent=1))
        if minimum is not None:
            (self.folder / "transfers" / "minimum.json").write_text(json.dumps(minimum))

    def _stop_processes(self) -> None:
        """Traffic and servers, each by its PID: SIGTERM, SIGKILL a few seconds later."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 5
        for proc in self.processes:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def _popen(self, host, argv: list[str], **params) -> subprocess.Popen:
        """A process in a host's namespace, recorded for _stop_processes (a signal waits
        until it is)."""
        with GUARD.deferred():
            proc = host.popen(argv, cwd=str(REPO), **params)
            self.processes.append(proc)
        return proc

    def _start_controller(self, plan: SwitchPlan, controllers: list[ControllerThread]) -> None:
        spec, bn = self.spec, plan.bottleneck
        with GUARD.deferred():   # its thread, recorded for the teardown to close
            controllers.append(self._controller(plan))
        self._connect(controllers[-1])
        for port in plan.ports:
            if port == plan.bottleneck_port:
                for queue in spec.aqm.queues(bn.pps, bn.buffer):   # DualPI2: two
                    plan.node.bmv2.set_queue(port, rate_pps=queue.rate_pps, depth=queue.depth,
                                             priority=queue.priority)
            else:
                plan.node.bmv2.set_queue(port, depth=WIDE_QUEUE)

    def _controller(self, plan: SwitchPlan) -> ControllerThread:
        """A controller of the switch as the run starts it, in a thread of its own; with a
        state file (in the run's folder) when the run restarts its controllers."""
        ctl = Controller(plan.node.grpc_address, self.artifacts, port_views(self.spec, plan),
                         [Route(*route) for route in plan.routes],
                         priority_queues=plan.node.priority_queues)
        if self.controller_restart_at is not None:
            ctl.resume(StateFile(self.folder / f"controller-{plan.node.name}.state.json"),
                       source="the run's plan")
        return ControllerThread(ctl)

    @staticmethod
    def _connect(controller: ControllerThread) -> None:
        controller.call(controller.ctl.start())
        controller.call(asyncio.wait_for(controller.ctl.ready.wait(), 30))

    def _restart_controllers(self, plans: list[SwitchPlan], controllers: list[ControllerThread],
                             start: float) -> None:
        """Each controller killed and started again from its state file; the recorders
        follow the new one. Said in controller_restarts.json: a controller that had to
        push the program (counters and AQM state from zero) disturbed the run."""
        restarts = []
        for k, plan in enumerate(plans):
            killed = time.monotonic() - start
            with GUARD.deferred():
                controllers[k].crash()
                controllers[k] = self._controller(plan)
            self._connect(controllers[k])
            self._recorders[k].follow(controllers[k])
            connection = [e.message for e in controllers[k].ctl.events
                          if e.source == "switch" and "connected to " in e.message][-1]
            restarts.append({"switch": plan.node.name, "killed": killed,
                             "back": time.monotonic() - start,
                             "adopted": "adopted the program it runs" in connection,
                             "connection": connection})
            if not restarts[-1]["adopted"]:
                LOG.warning("%s's controller came back at %.2f s without the switch's state "
                            "(%s): this run is disturbed", plan.node.name,
                            restarts[-1]["back"], connection)
        (self.folder / "controller_restarts.json").write_text(json.dumps(restarts, indent=1))
        LOG.info("controllers restarted at %.2f s: %s", restarts[0]["killed"],
                 "adopted" if all(r["adopted"] for r in restarts) else "DISTURBED")

    def _check_delay(self, topo) -> None:
        """Ping senders to receivers; refuse to run when the RTT is below the configured one
        (the delay is not there) or far above it (something else queues)."""
        results = []
        for i, s in enumerate(topo.senders):
            for j, r in enumerate(topo.receivers):
                if j not in (0, i % len(topo.receivers)):
                    continue
                results.append({"from": s.name, "to": r.name, **checked_rtt(
                    lambda: topo.host(s).cmd(f"ping -c 5 -i 0.2 -W 2 {r.ip}"),
                    topo.expected_rtt(i, j) * 1000, f"{s.name} -> {r.name}")})
        (self.folder / "rtt.json").write_text(json.dumps(results, indent=1))

    def _capture(self, plans: list[SwitchPlan]) -> None:
        """tcpdump on each bottleneck port, what the switch sends out of it: the run's
        bottleneck.pcap (bottleneck-sN.pcap on a parking lot), its first `pcap` packets."""
        for plan in plans:
            interface = plan.node.intfs[plan.bottleneck_port].name
            suffix = "" if len(plans) == 1 else f"-{plan.node.name}"
            self._popen(plan.node, ["tcpdump", "-i", interface, "-Q", "out", "-U", "-n",
                                    "-s", str(PCAP_SNAPLEN), "-c", str(self.spec.pcap), "-w",
                                    str(self.folder / f"bottleneck{suffix}.pcap")],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _calibrate(self, topo) -> dict:
        """Segments one transfer takes alone (seed 004's minimum "in an uncongested
        network"). It crosses the run's own bottleneck, whose smallest buffers (16 packets)
        slow start overflows; so the minimum counts each segment once (Linux's OutSegs
        leaves out retransmissions), and the calibration's retransmissions are kept apart."""
        server, client = topo.host(topo.senders[0]), topo.host(topo.receivers[0])
        cc = self.spec.topology.congestion_control
        self._start(server, [sys.executable, "-m", "experiments.transfer", "serve", "--port",
                             str(TRANSFER_PORT), "--cc", cc])
        before_s, before_c = tcp_counters(server), tcp_counters(client)
        out = self.folder / "transfers"
        out.mkdir(exist_ok=True)
        result = self._popen(client, [sys.executable, "-m", "experiments.transfer", "fetch",
                                      "--server", topo.senders[0].ip, "--port",
                                      str(TRANSFER_PORT), "--count", "1", "--size",
                                      str(self.spec.transfers.size), "--cc", cc,
                                      "--out", str(out / "calibration.json")])
        if result.wait(120) != 0:
            raise RuntimeError("calibration transfer failed")
        time.sleep(0.5)
        after_s, after_c = tcp_counters(server), tcp_counters(client)
        sent = {k: after_s[k] - before_s[k] for k in ("OutSegs", "RetransSegs")}
        return {"server_out_segs": sent["OutSegs"], "server_retransmitted": sent["RetransSegs"],
                "client_in_segs": after_c["InSegs"] - before_c["InSegs"]}

    def _start(self, host, argv: list[str]) -> subprocess.Popen:
        """A server that prints "ready" once it listens; waits for that line."""
        proc = self._popen(host, argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        line = ""
        if select.select([proc.stdout], [], [], READY_TIMEOUT)[0]:
            line = proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"{' '.join(argv)} on {host.name} did not get ready in "
                               f"{READY_TIMEOUT:g} s: {line.strip() or 'no output'}")
        return proc

    def _install_aqm(self, plans: list[SwitchPlan], controllers: list[ControllerThread],
                     start: float) -> None:
        """The plan's AQM in place of DropTail on every bottleneck, aqm_from seconds in."""
        spec, installed = self.spec, []
        for plan, controller in zip(plans, controllers):
            controller.call(controller.ctl.install(
                plan.bottleneck_port, spec.aqm, "run",
                f"{spec.aqm.action} in place of droptail, {spec.aqm_from:g} s into the run "
                "(aqm_from)"))
            # When the switch took it (a P4Runtime write takes a moment).
            installed.append({"switch": plan.node.name, "planned": spec.aqm_from,
                              "at": time.monotonic() - start})
        (self.folder / "aqm_from.json").write_text(json.dumps(installed, indent=1))
        LOG.info("%s installed at %.2f s", spec.aqm.action, installed[-1]["at"])

    def _traffic(self, topo, recorders: list[Recorder], plans: list[SwitchPlan],
                 controllers: list[ControllerThread]) -> None:
        spec = self.spec
        flows_dir = self.folder / "flows"
        flows_dir.mkdir(exist_ok=True)
        pending = []
        kernel_hosts = {}   # where iperf3's ends run, for the connection sampler
        for k, flow in enumerate(spec.flows):
            data_src = topo.receivers[flow.receiver] if flow.reverse else topo.senders[flow.sender]
            data_dst = topo.senders[flow.sender] if flow.reverse else topo.receivers[flow.receiver]
            port = IPERF_BASE_PORT + k
            duration = flow.duration or spec.duration - flow.start
            if flow.transport == "kernel":
                server = ["iperf3", "-s", "-1", "-p", str(port), "--json"]
                argv = ["iperf3", "-c", data_dst.ip, "-p", str(port), "-t", f"{duration:.2f}",
                        "-C", spec.topology.congestion_control, "--json", "-i", "1",
                        "-P", str(flow.streams)]
                window = ["-w", str(flow.window)] if flow.window else []
            else:   # the userspace MECN/RFC 3168 Reno over UDP
                # Neither end abandons a flow in a long backoff before the run ends: ns-2's
                # and Linux's senders keep retrying far longer than a run.
                server = [sys.executable, "-m", "transport", "receive", "--port", str(port),
                          "--first-wait", str(spec.duration + GRACE),
                          "--idle", str(spec.duration + GRACE),
                          "--out", str(flows_dir / f"flow{k:03d}-receiver.json")]
                argv = [sys.executable, "-m", "transport", "send", "--to", data_dst.ip,
                        "--port", str(port), "--time", f"{duration:.2f}", "--flow", str(k),
                        "--give-up", f"{spec.duration + GRACE:.0f}",
                        "--response", flow.transport]
                window = ["--window", str(flow.window)] if flow.window else []
            if flow.transport == "kernel":
                for end in (data_src, data_dst):
                    kernel_hosts[end.name] = topo.host(end)
                with open(flows_dir / f"flow{k:03d}-receiver.json", "w") as report:
                    self._popen(topo.host(data_dst), server, stdout=report,
                                stderr=subprocess.DEVNULL)
            else:   # says "ready" once its socket is bound
                self._start(topo.host(data_dst), server)
            argv += window
            pending.append((flow.start, topo.host(data_src), argv, flows_dir / f"flow{k:03d}.json"))
        if spec.transfers:
            (self.folder / "transfers").mkdir(exist_ok=True)
            before = {h.name: tcp_counters(topo.host(h)) for h in topo.senders[:1] + topo.receivers}
            for j, r in enumerate(topo.receivers):
                argv = [sys.executable, "-m", "experiments.transfer", "fetch", "--server",
                        topo.senders[0].ip, "--port", str(TRANSFER_PORT),
                        "--count", str(spec.transfers.count), "--size", str(spec.transfers.size),
                        "--cc", spec.topology.congestion_control,
                        # A stalled transfer is measured to the run's end, not cut short.
                        "--timeout", f"{spec.duration + GRACE:.0f}",
                        "--out", str(self.folder / "transfers" / f"client{j:02d}.json")]
                pending.append((0.0, topo.host(r), argv, None))
        time.sleep(0.5)  # servers listening
        start = time.monotonic()
        for recorder in recorders:
            recorder.t0 = start
        sampler = ConnectionSampler(
            list(kernel_hosts.values()), range(IPERF_BASE_PORT, IPERF_BASE_PORT + len(spec.flows)),
            start, (spec.measure_from, spec.measure_until or spec.duration))
        sampler.start()
        try:
            self._run_traffic(pending, plans, controllers, start)
        finally:
            sampler.stop()
        sampler.write(self.folder)
        if spec.transfers:
            after = {h.name: tcp_counters(topo.host(h)) for h in topo.senders[:1] + topo.receivers}
            (self.folder / "transfers" / "tcp.json").write_text(json.dumps(
                {name: {k: after[name][k] - before[name][k] for k in after[name]}
                 for name in after}, indent=1))
        self.on_progress(spec.duration, spec.duration, "done")

    def _run_traffic(self, pending: list, plans: list[SwitchPlan],
                     controllers: list[ControllerThread], start: float) -> None:
        """The clients started at their times, the rate steps and the AQM's installation
        made at theirs, until every client has ended."""
        spec = self.spec
        clients = []
        stopped_late = False
        pending.sort(key=lambda p: p[0])
        steps, stepped = list(spec.rate_steps), []
        aqm_pending = spec.aqm_from > 0
        restart_pending = self.controller_restart_at is not None
        while pending or any(c.poll() is None for c in clients):
            now = time.monotonic() - start
            while pending and pending[0][0] <= now:
                _, host, argv, out = pending.pop(0)
                with open(out or os.devnull, "w") as stdout:
                    clients.append(self._popen(host, argv, stdout=stdout,
                                               stderr=subprocess.DEVNULL))
            while steps and steps[0][0] <= now:
                planned, fraction = steps.pop(0)
                for plan in plans:
                    rate = max(1, round(plan.bottleneck.pps * fraction))
                    for queue in spec.aqm.queues(rate, plan.bottleneck.buffer):
                        plan.node.bmv2.set_queue(plan.bottleneck_port, rate_pps=queue.rate_pps,
                                                 priority=queue.priority)
                # When the switches took it (the CLI takes a moment), for the step's metrics.
                stepped.append({"planned": planned, "fraction": fraction,
                                "at": time.monotonic() - start})
                (self.folder / "rate_steps.json").write_text(json.dumps(stepped, indent=1))
                LOG.info("bottleneck rate x%g at %.2f s", fraction, stepped[-1]["at"])
            if aqm_pending and spec.aqm_from <= now:
                self._install_aqm(plans, controllers, start)
                aqm_pending = False
            if restart_pending and self.controller_restart_at <= now:
                self._restart_controllers(plans, controllers, start)
                restart_pending = False
            if now > spec.duration + GRACE and not stopped_late:
                # iperf3 needs its control connection to end a test; across a congested
                # link that can take long. Interrupted, it still writes what it measured.
                late = [c for c in clients if c.poll() is None]
                LOG.warning("%d traffic processes still running %.0f s into a %.0f s run; "
                            "interrupting them", len(late), now, spec.duration)
                for proc in late:
                    proc.send_signal(signal.SIGINT)
                stopped_late = True
            if now > spec.duration + 2 * GRACE:
                raise TimeoutError(f"traffic still running {now:.0f} s into a "
                                   f"{spec.duration:.0f} s run")
            self.on_progress(min(now, spec.duration), spec.duration, "traffic")
            time.sleep(0.05 if pending else 0.25)

