"""The capacity benchmark (benchmarks/capacity.py): its search finds the highest rate that
passes within its resolution and stops within its bounds of steps and seconds, the limit
is where most packets were lost, the counters it reads are parsed as the kernel writes
them, its programs are the trivial one and build profiles by name; and, with root and the
P4 toolchain, one real step on the trivial program keeps a low rate and says what ran."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import capacity
from benchmarks.capacity import Bounds, Sample, Step, Timing, search
from control_plane.algorithms.codel import Codel
from control_plane.algorithms.red import Red
from control_plane.aqm import NoAqm
from control_plane.profiles import Profile
from control_plane.values import ConfigError


class Link:
    """A fake testbed that keeps every rate up to `capacity` Mb/s; each step takes
    `seconds` of a fake clock."""

    def __init__(self, capacity: float, seconds: float = 10.0):
        self.capacity, self.seconds = capacity, seconds
        self.now = 0.0
        self.tried: list[float] = []

    def clock(self) -> float:
        return self.now

    def measure(self, mbps: float) -> Step:
        self.tried.append(mbps)
        self.now += self.seconds
        return Step(mbps, 1.0 if mbps <= self.capacity else 0.7)


@pytest.mark.parametrize("true", [137.0, 3.0, 20.0, 1999.0])
def test_the_search_brackets_the_capacity_within_its_resolution(true):
    link, bounds = Link(true), Bounds()
    found = search(link.measure, bounds, link.clock)
    assert found.stopped == "resolution"
    assert found.capacity_mbps <= true < found.failing_mbps
    assert found.failing_mbps / found.capacity_mbps <= bounds.resolution
    assert len(found.steps) == len(link.tried) <= bounds.steps
    assert [s.mbps for s in found.steps] == link.tried


def test_coarse_steps_go_up_by_the_factor_until_one_fails_then_bisect():
    link = Link(137.0)
    search(link.measure, Bounds(start=20, factor=2), link.clock)
    assert link.tried[:4] == [20, 40, 80, 160]
    assert all(80 < rate < 160 for rate in link.tried[4:])


def test_nothing_passes_down_to_the_lowest_rate():
    link, bounds = Link(0.5), Bounds(start=8, lowest=1)
    found = search(link.measure, bounds, link.clock)
    assert (found.capacity_mbps, found.failing_mbps, found.stopped) == (None, 1, "lowest")
    assert link.tried == [8, 4, 2, 1]


def test_everything_passes_up_to_the_highest_rate():
    link, bounds = Link(10_000), Bounds(start=500, highest=1500)
    found = search(link.measure, bounds, link.clock)
    assert (found.capacity_mbps, found.failing_mbps, found.stopped) == (1500, None, "highest")
    assert link.tried == [500, 1000, 1500]


def test_the_search_stops_at_its_count_of_steps():
    link = Link(137.0)
    found = search(link.measure, Bounds(start=20, steps=3), link.clock)
    assert (len(link.tried), found.stopped) == (3, "steps")
    assert (found.capacity_mbps, found.failing_mbps) == (80, None)


def test_the_search_starts_no_step_that_would_end_past_its_seconds():
    link = Link(137.0, seconds=10.0)
    found = search(link.measure, Bounds(seconds=35.0), link.clock)
    assert (len(link.tried), found.stopped) == (3, "time")
    assert link.now <= 35.0


def test_the_limit_is_where_most_packets_were_lost():
    def failed(**lost: int) -> Step:
        return Step(100.0, 0.8, {name.replace("_", " "): n for name, n in lost.items()})
    assert capacity.limit(failed(switch=10, delay_line_dbn=30, delay_line_dh1=5)) == \
        "delay line"
    assert capacity.limit(failed(switch=400, delay_line_dbn=30)) == "switch"
    assert capacity.limit(failed(switch=0, delay_line_dbn=0)) == "senders"


def test_the_summary_names_the_limit_at_the_first_failing_rate():
    steps = [Step(20, 1.0, {"switch": 3}), Step(40, 0.6, {"switch": 0, "delay line dbn": 900}),
             Step(28.3, 0.99, {"switch": 8})]
    found = capacity.Found(28.3, 40, steps, "resolution")
    result = capacity.summary("trivial", 1500, "delay-lines", 4, found)
    assert (result["capacity_mbps"], result["failing_mbps"], result["limit"]) == \
        (28.3, 40, "delay line")
    assert [s["mbps"] for s in result["steps"]] == [20, 40, 28.3]


NET_DEV = """\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     840      12    0    0    0     0          0         0      840      12    0    0    0     0       0          0
s1-eth1: 1514000    1000    0    0    0     0          0         0    66000     999    0    0    0     0       0          0
s1-eth2:   66000     999    0    0    0     0          0         0  1500000     990    0    0    0     0       0          0
"""


def test_interface_counters_are_read_from_proc_net_dev_without_lo():
    assert capacity.interface_packets(NET_DEV) == {"s1-eth1": (1000, 999),
                                                    "s1-eth2": (999, 990)}


def test_cores_packets_and_losses_between_two_samples():
    tick = capacity.CLOCK_TICKS
    before = Sample(10.0, 1000, {"switch": (1000, 999)}, {"switch": (0, {1: 0, 2: 0})},
                    (0, 0))
    after = Sample(12.0, 3000, {"switch": (3100, 3000)},
                   {"switch": (3 * tick, {1: 2 * tick, 2: tick})}, (3 * tick, 4 * tick))
    step = capacity.step_of(8.0, 1000, before, after, seconds=5.0)
    assert step.kept == pytest.approx(1.0)                # 2000 packets in 2 s at 1000/s
    assert step.lost == {"switch": 99}
    assert step.usage["switch"] == pytest.approx(
        {"cores": 1.5, "thread": 1.0, "us_per_packet": 1500.0})
    assert step.machine_busy == pytest.approx(0.75)


def test_this_process_cpu_time_is_read_with_its_threads():
    total, threads = capacity.ticks(os.getpid())
    sum(i * i for i in range(3_000_000))       # some CPU time of our own
    after, _ = capacity.ticks(os.getpid())
    assert os.getpid() in threads and after > total
    assert capacity.ticks(2 ** 22 + 1) == (0, {})       # beyond pid_max: gone
    busy, all_ticks = capacity.machine_ticks(Path("/proc/stat").read_text())
    assert 0 < busy < all_ticks


def test_programs_are_trivial_or_build_profiles_by_name():
    assert capacity.program_list("trivial, all,codel") == ["trivial", "all", "codel"]
    assert capacity.program_list("pie-red") == ["red-pie"]
    with pytest.raises(ConfigError, match="unknown algorithm"):
        capacity.program_list("trivial,nonsense")
    with pytest.raises(ConfigError, match=r"^codel\+lean\+constants: a program built with "
                                          "constants is built for one configuration's file"):
        capacity.program_list("codel,codel+lean+constants")
    limit = 10_000
    assert isinstance(capacity.bottleneck_aqm(Profile.named("all"), limit), Codel)
    assert isinstance(capacity.bottleneck_aqm(Profile.named("red"), limit), Red)
    assert isinstance(capacity.bottleneck_aqm(Profile.named("none"), limit), NoAqm)


def test_the_command_line_refuses_what_it_cannot_run():
    from benchmarks.__main__ import arguments
    parser = arguments()
    args = parser.parse_args(["--capacity"])
    assert (args.capacity, args.capacity_sizes, args.capacity_flows, args.capacity_paths) == (
        ["trivial", "all", "codel"], [1000, 1500], 4, ["delay-lines", "direct"])
    for wrong in (["--capacity", "nonsense"], ["--capacity", "--instructions-only"],
                  ["--capacity", "--capacity-sizes", "9000"],
                  ["--capacity", "--capacity-paths", "netem"],
                  ["--capacity", "--capacity-flows", "0"]):
        with pytest.raises(SystemExit):
            parser.parse_args(wrong)


@pytest.mark.p4
@pytest.mark.root
def test_one_step_on_the_trivial_program_keeps_a_low_rate(can_run, event_loop_kept, tmp_path):
    """A dumbbell on the trivial program, delay lines on its path, one step at 10 Mb/s:
    kept, measured in every part, and everything stopped afterwards."""
    from benchmarks.dataplane import compile_trivial
    from topologies.nodes import DelayBox
    bench = capacity.Bench(capacity.TRIVIAL, compile_trivial(tmp_path / "trivial"), 1500,
                           "delay-lines", 2, Timing(warm_up=1.0, window=2.0), tmp_path)
    try:
        bench.start(10.0)
        step = bench.measure(10.0)
        started = [bench.topo.switch.bmv2.pid, *(node.process.pid for node in bench.topo.net.hosts
                                                 if isinstance(node, DelayBox))]
    finally:
        bench.stop()
    assert step.passed, step
    assert set(step.usage) == {"switch", "sender", "receiver", "controller",
                               "delay line dh1", "delay line dbn"}
    assert step.usage["switch"]["cores"] > 0 and step.usage["delay line dbn"]["cores"] > 0
    assert set(step.lost) == {"switch", "delay line dh1", "delay line dbn"}
    assert 0 < step.machine_busy <= 1
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_benchmarks_page_gives_the_method_the_code_has():
    """docs/benchmarks/index.md's section quotes the search's bounds and the steps' timing."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "index.md")
    text = " ".join(page.read_text().split())
    (full, timing), (quick, quick_timing) = capacity.FULL, capacity.QUICK
    for quoted in (f"from {full.start:g} Mb/s up (or down) by a factor of {full.factor:g}",
                   f"within {round(100 * (full.resolution - 1))} % of the passing one",
                   f"at most {full.steps} steps and {full.seconds:g} s per search",
                   f"{timing.warm_up:g} s of warm-up and a {timing.window:g} s window",
                   f"at most {quick.steps} steps and {quick.seconds:g} s, "
                   f"{quick_timing.warm_up:g} s and {quick_timing.window:g} s, within "
                   f"{round(100 * (quick.resolution - 1))} %",
                   f"keeps at least {capacity.KEEP:.0%}".replace("%", " %"),
                   f"is {1000 * capacity.BUFFER_SECONDS:g} ms at the rate",
                   f"RTT {2000 * sum(capacity.PATHS['delay-lines']):g} ms"):
        assert quoted in text, quoted
