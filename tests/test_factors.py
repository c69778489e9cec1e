"""--factor NAME=VALUE: one thing changed in every run of a plan, recorded, refused where it
does not apply."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from control_plane.algorithms.base import Link
from control_plane.algorithms.pi import hollot_gains
from control_plane.aqm import Codel, DropTail, Pi, Pie
from experiments import e5, factors
from experiments.cli import main, resume_command
from experiments.base import PlanOptions
from experiments.catalog import EXPERIMENTS
from experiments.runner import port_views
from experiments.spec import CONNECT_RTTS, OTHER_PORTS
from topologies.nodes import SwitchPlan


def runs(name: str, *texts: str, **opts):
    return EXPERIMENTS[name].runs(PlanOptions(repeat=1, factors=factors.parse(list(texts)),
                                              **opts))


def test_buffer_changes_the_queue_and_the_aqm_s_limit_on_every_link():
    for spec in runs("e1", "buffer=60"):
        assert spec.topology.bottleneck.buffer == 60 and spec.aqm.limit == 60
        assert spec.factors == (("buffer", "60"),)
    for spec in runs("e4", "buffer=120"):
        assert {link.buffer for link in spec.topology.links} == {120}
        assert spec.aqm.limit == 120


def test_packet_size_keeps_the_packet_rate_and_needs_kernel_senders():
    for before, after in zip(runs("e1"), runs("e1", "packet=100")):
        assert after.topology.bottleneck.packet_bytes == 100
        assert after.topology.bottleneck.pps == before.topology.bottleneck.pps == 667
    with pytest.raises(factors.FactorError, match="1500-byte packets"):
        runs("e3", "packet=100")
    # In FACTORS' order, not the command line's: the senders first.
    assert {f.transport for f in runs("e3", "packet=500", "transport=kernel")[0].flows} == {
        "kernel"}


def test_the_transport_keeps_iperf3_s_streams_or_refuses():
    before = {s.label: s for s in runs("e5", only="red-240f")}
    after = runs("e5", "transport=kernel", only="red-240f")[0]
    assert after.flows == before["red-240f"].flows          # already Linux TCP: unchanged
    assert sum(f.streams for f in after.flows) == 240
    with pytest.raises(factors.FactorError, match="a userspace sender carries one"):
        runs("e5", "transport=mecn", only="red-240f")
    with pytest.raises(factors.FactorError, match="senders are userspace Reno"):
        runs("e3", "cc=cubic")


def test_factors_change_only_what_they_name():
    plain = {s.label: s for s in runs("e1")}
    for spec in runs("e1", "gentle=1", "cc=cubic", only="reno-red*"):
        before = plain[spec.label]
        assert spec.aqm.gentle and spec.topology.congestion_control == "cubic"
        assert spec.aqm.maxth == before.aqm.maxth and spec.flows == before.flows
    flows = runs("e3", "transport=kernel", only="ared-20ms")[0].flows
    assert len(flows) == 100 and {f.transport for f in flows} == {"kernel"}


@pytest.mark.parametrize("texts, message", [
    pytest.param(["speed=1"], "a factor is NAME=VALUE, NAME one of streams, transport, buffer",
                 id="unknown"),
    pytest.param(["buffer"], "a factor is NAME=VALUE", id="no-value"),
    pytest.param(["buffer=0"], "0 is outside [1, 100000]", id="out-of-range"),
    pytest.param(["buffer=1.5"], "'1.5' is not an integer", id="not-an-integer"),
    pytest.param(["gentle=yes"], "'yes' is not 0 or 1", id="not-a-flag"),
    pytest.param(["cc=vegas"], "'vegas' is not one of reno, cubic, bbr", id="no-such-cc"),
    pytest.param(["wq=nan"], "nan is outside", id="nan"),
    pytest.param(["buffer=10", "buffer=20"], "factor buffer given twice", id="twice"),
])
def test_a_bad_factor_is_refused_before_anything_runs(texts, message):
    with pytest.raises(factors.FactorError, match=re.escape(message)):
        factors.parse(texts)


def test_wait_is_the_red_family_s_and_refused_elsewhere():
    """The claims whose RED marking rate matters, with ns-2's rule: E1's RED rows, E3's
    ARED side, E7's RED and ECN rows."""
    for name, only, kinds in (("e1", "*-red*", {"Red", "RedEcn"}), ("e3", "ared-*", {"RedEcn"}),
                              ("e7", "[re][ec][dn]-*", {"Red", "RedEcn"})):
        plain = {s.label: s for s in runs(name, only=only)}
        changed = runs(name, "wait=1", only=only)
        assert {type(s.aqm).__name__ for s in changed} == kinds
        for spec in changed:
            assert spec.aqm.wait and not plain[spec.label].aqm.wait
            assert replace(spec.aqm, wait=False) == plain[spec.label].aqm
    assert not any(s.aqm.wait for s in runs("e1", "wait=0", only="*-red*"))
    with pytest.raises(factors.FactorError, match=r"wait=1: reno-droptail: DropTail has no wait"):
        runs("e1", "wait=1")
    with pytest.raises(factors.FactorError, match="'yes' is not 0 or 1"):
        factors.parse(["wait=yes"])


def test_a_factor_the_run_lacks_is_an_error_naming_it():
    with pytest.raises(factors.FactorError, match=r"gentle=1: pi-50f-300b: Pi has no gentle"):
        runs("e6", "gentle=1", only="pi-*")
    with pytest.raises(factors.FactorError, match="no long-lived flows"):
        runs("e7", "transport=mecn")


def test_the_command_line_refuses_in_one_line(capsys):
    assert main(["run", "e1", "--factor", "gentle=1", "--factor", "wq=2"]) == 2
    assert capsys.readouterr().err == "experiments: --factor wq=2: 2.0 is outside [1e-06, 1]\n"
    assert main(["run", "e6", "--factor", "gentle=1"]) == 2
    assert capsys.readouterr().err == ("experiments: --factor gentle=1: newque-50f-300b: Newque "
                                       "has no gentle\n")


def test_resuming_needs_the_same_factors():
    opts = PlanOptions(repeat=2, factors=(("buffer", "40"), ("gentle", "1")))
    assert resume_command("e1", Path("/r"), opts, "local") == (
        "python -m experiments run e1 --repeat 2 --factor buffer=40 --factor gentle=1 "
        "--dask local --resume /r")


def test_the_pmax_policy_needs_an_amecn_loop():
    for spec in runs("e2", "pmax=both", only="amecn-*"):
        assert spec.loop.kind == "amecn" and spec.loop.pmax == "both"
    with pytest.raises(factors.FactorError, match="mecn-up: no AMECN loop"):
        runs("e2", "pmax=both")


def test_clients_set_the_short_transfers_client_count():
    for spec in runs("e7", "clients=25", only="ecn-q64"):
        assert len(spec.topology.receivers) == 25 and spec.topology.receivers[0].delay == 0.0005
        assert spec.topology.bottleneck.pps == 125        # the paper's 1.5 Mb/s
        # 25 x 11 x 100 KiB at 1.5 Mb/s take 154 s at least: the limit grows with the count.
        assert spec.duration == 600
    lossy = runs("e7", "clients=25", loss=0.01, only="dt-q128*")[0]
    assert {r.loss for r in lossy.topology.receivers} == {0.01}
    with pytest.raises(factors.FactorError, match="reno-red: no short-transfer clients"):
        runs("e1", "clients=25", only="reno-red")


def test_access_sets_the_senders_delay_and_keeps_rtt_groups():
    for spec in runs("e4", "access=2", only="ared-40ms"):
        topo = spec.topology
        assert {a.delay for a in topo.long_senders} == {0.002} == {topo.cross_access.delay}
        assert topo.receiver_access.delay == 0.0
    assert {a.delay for a in runs("e1", "access=5")[0].topology.senders} == {0.005}
    with pytest.raises(factors.FactorError, match="delays differ on purpose"):
        runs("e5", "access=5", only="red-15f")


def test_the_drop_point_changes_the_program_not_the_runs():
    plain = runs("e7")
    moved = runs("e7", "drop=enqueue")
    assert [replace(s, factors=()) for s in moved] == plain
    assert moved[0].factors == (("drop", "enqueue"),)
    assert factors.drop_point(moved[0].factors) == "enqueue"
    assert factors.drop_point(plain[0].factors) == "dequeue"
    with pytest.raises(factors.FactorError, match="'egress' is not one of dequeue, enqueue"):
        factors.parse(["drop=egress"])


def test_the_program_factor_changes_the_program_not_the_runs():
    plain = runs("e7")
    everything = runs("e7", "program=all")
    assert [replace(s, factors=(), program=plain[0].program) for s in everything] == plain
    assert {s.program for s in everything} == {"all"} != {s.program for s in plain}
    assert everything[0].factors == (("program", "all"),)
    assert runs("e7", "program=profile")[0].program == plain[0].program
    with pytest.raises(factors.FactorError, match="'every' is not one of profile, plan, all"):
        factors.parse(["program=every"])


def test_a_controlled_run_can_keep_its_baseline_s_program():
    """E6's NEWQUE readings beside the other algorithms' runs of `make e6`: `--only` alone
    compiles a smaller program, `program=plan` the one the whole plan compiled."""
    baseline = runs("e6")[0].program
    alone = runs("e6", "capacity=0.125", only="newque-*")
    kept = runs("e6", "capacity=0.125", "program=plan", only="newque-*")
    assert alone[0].program == "droptail-newque" != baseline
    assert {s.program for s in kept} == {baseline}
    assert [replace(s, program=alone[0].program, factors=alone[0].factors) for s in kept] == alone


@pytest.mark.parametrize("aqm", [Codel(), Pie()], ids=["codel", "pie"])
def test_an_aqm_that_reads_the_sojourn_cannot_drop_at_enqueue(aqm):
    spec = replace(runs("e7")[0], aqm=aqm)
    assert factors.apply(spec, (("drop", "dequeue"),)).aqm == aqm
    with pytest.raises(factors.FactorError, match=f"{aqm.action} acts on each packet's sojourn"):
        factors.apply(spec, (("drop", "enqueue"),))


def test_the_newque_readings_change_newque_only():
    """E6's controlled runs of seed 003's readings: each changes NEWQUE's runs and is
    refused for the others, whose parameters of the same name mean other things."""
    texts = ("capacity=0.125", "alpha=0.02", "beta=0.0001", "min_interval=0", "rate_of=departures")
    for spec in runs("e6", *texts, only="newque-*"):
        assert spec.aqm.capacity == 0.125 * spec.topology.bottleneck.pps
        assert (spec.aqm.alpha, spec.aqm.beta, spec.aqm.min_interval) == (0.02, 0.0001, 0.0)
        assert spec.aqm.rate_of == "departures"
    for text in texts:
        with pytest.raises(factors.FactorError, match="is NEWQUE's, not Rem's"):
            runs("e6", text, only="rem-*")


def test_gains_and_ceiling_change_what_they_name():
    base = {s.label: s for s in runs("e6", only="pi-*")}
    for spec in runs("e6", "gains=10", only="pi-*"):
        assert (spec.aqm.a, spec.aqm.b) == pytest.approx(
            (10 * base[spec.label].aqm.a, 10 * base[spec.label].aqm.b))
    with pytest.raises(factors.FactorError, match="the gains are PI's, not Blue's"):
        runs("e6", "gains=10", only="blue-*")
    assert {s.loop.ceiling for s in runs("e2", "ceiling=1.0", only="amecn-*")} == {1.0}
    with pytest.raises(factors.FactorError, match="no ARED or AMECN loop"):
        runs("e2", "ceiling=1.0", only="mecn-*")


def test_aecn_s_a_and_b_change_aecn_s_group_maxima_only():
    """Issue 25's control of E5's lockout at 240 flows: the robust group's max_p,
    min(maxp b, 1), brought down to the average group's maxp (b = 1); a divides the
    fragile group's. Both are refused for the runs without AECN."""
    link = Link(float(e5.BOTTLENECK.pps))
    plain = {s.label: s for s in runs("e5", only="aecn-*")}
    changed = runs("e5", "aecn_b=1", "aecn_a=4", only="aecn-*")
    assert {s.label for s in changed} == set(plain)
    for spec in changed:
        before = plain[spec.label].aqm
        assert (spec.aqm.a, spec.aqm.b) == (4.0, 1.0) != (before.a, before.b)
        assert replace(spec.aqm, a=before.a, b=before.b) == before
        slopes = spec.aqm.encode(link).action.params
        assert slopes["slope_robust"] == slopes["slope_average"]
        assert slopes["slope_fragile"] == pytest.approx(slopes["slope_average"] / 4, rel=1e-3)
        old = before.encode(link).action.params    # maxp 0.5, b 2: the robust group at 1
        assert old["slope_robust"] == pytest.approx(2 * old["slope_average"], rel=1e-3)
    assert [s.aqm.b for s in runs("e5", "aecn_b=1", only="rtt-*")] == [1.0] * 3
    for name in ("aecn_a", "aecn_b"):
        with pytest.raises(factors.FactorError, match=re.escape(
                f"--factor {name}=1: ecn-240f: {name[-1]} is AECN's, not RedEcn's "
                "(e.g. --only 'aecn-*')")):
            runs("e5", f"{name}=1", only="ecn-240f")
        with pytest.raises(factors.FactorError, match=re.escape("0.5 is outside [1, 1e+06]")):
            factors.parse([f"{name}=0.5"])


def test_streams_splits_the_iperf3_processes_each_part_sending_when_the_whole_would():
    """Issue 25's control of the lockout that one unconnected stream causes: an iperf3
    process starts sending only once its 20 streams have connected, one round trip (and a
    margin, CONNECT_RTTS) each. Split into processes of 8, 8 and 4, each starts as much
    later as the whole spent connecting the other streams: 12, 12 and 16 of them."""
    plain = runs("e5", only="red-240f")[0]
    split = runs("e5", "streams=8", only="red-240f")[0]
    assert sum(f.streams for f in split.flows) == sum(f.streams for f in plain.flows) == 240
    assert len(plain.flows) == 12 and len(split.flows) == 36
    for k, whole in enumerate(plain.flows):
        parts = split.flows[3 * k:3 * k + 3]
        rtt = e5.TOPOLOGY.expected_rtt(whole.sender, whole.receiver)
        assert [p.streams for p in parts] == [8, 8, 4]
        assert [p.start for p in parts] == pytest.approx(
            [whole.start + CONNECT_RTTS * n * rtt for n in (12, 12, 16)])
        assert {replace(p, streams=20, start=whole.start) for p in parts} == {whole}
        # Connected at CONNECT_RTTS a stream, every part sends from the same moment.
        assert {round(p.start + CONNECT_RTTS * p.streams * rtt, 9) for p in parts} == {
            round(whole.start + CONNECT_RTTS * 20 * rtt, 9)}
    # Split first: one stream a process, each can then be a userspace sender.
    mecn = runs("e5", "transport=mecn", "streams=1", only="red-240f")[0]
    assert {(f.transport, f.streams) for f in mecn.flows} == {("mecn", 1)}
    # A timed flow's parts end with it; a part that would start after that is refused.
    timed = replace(plain, flows=(replace(plain.flows[0], duration=30.0),))
    parts = factors.FACTORS["streams"].change(8)(timed).flows
    assert [p.start + p.duration for p in parts] == pytest.approx(
        [plain.flows[0].start + 30.0] * 3)
    with pytest.raises(factors.FactorError, match="would start after its end"):
        factors.FACTORS["streams"].change(1)(replace(timed, flows=(
            replace(plain.flows[0], duration=0.5),)))
    one = runs("e5", "streams=1", only="aecn-15f")[0]
    assert len(one.flows) == 15 and {f.streams for f in one.flows} == {1}
    with pytest.raises(factors.FactorError, match="no iperf3 process has over 20 streams"):
        runs("e5", "streams=20", only="red-240f")
    with pytest.raises(factors.FactorError, match="no iperf3 process has over 1 streams"):
        runs("e1", "streams=1")


def test_the_factors_are_described_in_the_run_command_s_help(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100000")     # argparse's lines unbroken (short-transfer)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for name, factor in factors.FACTORS.items():
        assert f"{name}: {' '.join(factor.what.split())}" in shown


def test_aqm_from_holds_the_aqm_back_while_the_flows_connect():
    """Issue 25's other control of E5's lockout: DropTail at the AQM's limit until every
    flow has started (and, by e5.SETUP, connected), the AQM after, the metrics later still."""
    plain = {s.label: s for s in runs("e5", only="*-240f")}
    held = runs("e5", "aqm_from=9", "buffer=60", only="*-240f")
    assert {s.label for s in held} == set(plain)
    for spec in held:
        assert spec.aqm_from == 9.0 and spec.aqm == replace(plain[spec.label].aqm, limit=60)
        assert spec.first_aqm == DropTail(limit=60)
        assert max(f.start for f in spec.flows) < e5.SETUP < spec.aqm_from <= spec.measure_from
    assert all(s.first_aqm == s.aqm for s in plain.values())


@pytest.mark.parametrize("name, value, only, message", [
    pytest.param("e5", "70", "aecn-240f", "aecn-240f: aqm_from 70 s is outside the 60 s run",
                 id="beyond-the-run"),
    pytest.param("e5", "11", "aecn-240f", "aecn-240f: aqm_from 11 s is after measure_from "
                 "(10 s): the metrics would measure DropTail", id="after-measure-from"),
    pytest.param("e5", "7", "aecn-240f", "aecn-240f: aqm_from 7 s: a flow starts at 7.15 s, "
                 "when the AQM is already installed", id="before-a-flow-starts"),
    pytest.param("e1", "4", "reno-droptail", "reno-droptail: aqm_from 4 s: its bottleneck "
                 "runs droptail, no AQM to hold back", id="droptail"),
    pytest.param("e2", "4", "amecn-up", "amecn-up: aqm_from 4 s: its amecn loop adapts the "
                 "AQM from the start", id="loop"),
    pytest.param("e7", "4", "ecn-q16", "ecn-q16: aqm_from 4 s: its short transfers connect "
                 "throughout the run", id="transfers"),
])
def test_aqm_from_is_refused_where_it_makes_no_sense(name, value, only, message):
    with pytest.raises(factors.FactorError, match=re.escape(f"--factor aqm_from={value}: ")
                       + re.escape(message)):
        runs(name, f"aqm_from={value}", only=only)


def test_aqm_from_comes_before_the_rate_steps():
    """E8's halving at 40 s comes after any aqm_from its 15 s window allows; a step before
    the install would leave the AQM installed for the full rate on a halved link."""
    held = runs("e8", "aqm_from=9", only="codel-reno-1f")[0]
    assert held.aqm_from == 9.0 and held.rate_steps[0][0] == 40.0
    with pytest.raises(ValueError, match=re.escape(
            "codel-reno-1f: aqm_from 9 s: its bottleneck's rate steps at 5 s, before the AQM")):
        replace(held, rate_steps=((5.0, 0.5), (40.0, 1.0))).check()


def test_aqm_from_is_a_time_in_the_run():
    with pytest.raises(factors.FactorError, match=re.escape("-1.0 is outside [0, 3600]")):
        factors.parse(["aqm_from=-1"])
    with pytest.raises(factors.FactorError, match="'soon' is not a number"):
        factors.parse(["aqm_from=soon"])


def test_duration_lengthens_every_run_and_its_measured_window():
    """Issue 25's PI run of 300 s at 150 flows (E6): flows without an end run to the new
    end; a run whose timed flows or measured window would fall outside it is refused."""
    for before, after in zip(runs("e6", only="pi-150f-*"),
                             runs("e6", "duration=300", only="pi-150f-*")):
        assert (before.duration, after.duration) == (100.0, 300.0)
        assert after.measure_from == before.measure_from and after.flows == before.flows
        assert after.factors == (("duration", "300"),)
    with pytest.raises(factors.FactorError, match=re.escape(
            "--factor duration=8: aecn-240f: measure_from must be inside the run")):
        runs("e5", "duration=8", only="aecn-240f")
    with pytest.raises(factors.FactorError, match=re.escape("0.5 is outside [1, 3600]")):
        factors.parse(["duration=0.5"])


def test_the_runner_starts_the_bottleneck_on_droptail_until_aqm_from():
    """The ports the controller is given as the run starts; the install at aqm_from is
    test_mininet.py's test_aqm_from_installs_the_aqm_during_the_run."""
    plan = SwitchPlan(node=None, ports=[1, 2, 3], routes=[], bottleneck_port=3,
                      bottleneck=e5.BOTTLENECK)
    for texts, first in (((), None), (("aqm_from=9",), DropTail(limit=120))):
        spec = runs("e5", *texts, only="aecn-240f")[0]
        views = port_views(spec, plan)
        assert views[3].config.aqm == (first or spec.aqm) and views[3].loop is None
        assert views[3].config.link_pps == e5.BOTTLENECK.pps
        assert views[1].config.aqm == views[2].config.aqm == OTHER_PORTS


def test_hollot_designs_pi_s_gains_for_each_run_s_own_link():
    """E6's PI at buffer 300 and 400: the rule's round trip is the propagation plus qref,
    half the buffer, at the link's packet rate; other algorithms refuse it, and so does
    a second setting of the gains."""
    for buffer in (300, 400):
        spec = runs("e6", f"buffer={buffer}", "hollot=50", only="pi-150f-*")[0]
        link = spec.topology.bottleneck
        assert (link.pps, spec.aqm.limit) == (1202, buffer)
        assert (spec.aqm.a, spec.aqm.b) == pytest.approx(
            hollot_gains(1202, 50, 0.204 + buffer / 2 / 1202), rel=1e-12)
    assert runs("e6", "hollot=50", only="pi-150f-*")[0].aqm.a / Pi().a == pytest.approx(9.19, abs=0.01)
    with pytest.raises(factors.FactorError, match="the design rule is PI's, not Newque's"):
        runs("e6", "hollot=50", only="newque-150f-*")
    with pytest.raises(factors.FactorError, match="gains and hollot both set PI's a and b"):
        factors.parse(["gains=2", "hollot=50"])


def test_every_factor_has_its_row_in_the_docs():
    """docs/experiments/factors.md lists every factor as `name=...` in its table."""
    page = Path(__file__).resolve().parent.parent / "docs" / "experiments" / "factors.md"
    rows = "\n".join(line for line in page.read_text().splitlines() if line.startswith("| `"))
    assert set(re.findall(r"`(\w+)=", rows)) == set(factors.FACTORS)
