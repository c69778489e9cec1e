"""The published results: the pages' generated blocks are what the committed
docs/results/ files give, and `python -m experiments publish` takes a run folder there."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from analysis import stats
from analysis.stats import Estimate
from experiments import publish
from experiments.cli import main
from experiments.spec import jsonable


def test_every_generated_block_is_what_the_published_files_give():
    """Regenerates each experiment's block and the reproductions table from docs/results/
    and compares with the pages as committed: a typed number, or a page not regenerated
    after a publish, fails here."""
    stale = [str(page.relative_to(publish.DOCS.parent)) for page, text in publish.pages().items()
             if page.read_text() != text]
    assert not stale, (f"generated blocks differ from docs/results/ in {stale}: run "
                       "`python -c 'from experiments import publish; publish.regenerate()'`")


def test_every_published_file_names_its_runs():
    for experiment, docs in publish.published().items():
        for doc in docs:
            assert doc["experiment"] == experiment and doc["runs"] >= doc["configurations"] > 0
            assert doc["commits"] and doc["rows"], doc["name"]
            for name in doc["figures"]:
                folder = publish.DOCS / "figures" / experiment
                assert (folder / ("" if doc["name"] == publish.MAIN else doc["name"]) /
                        name).is_file(), name


@pytest.fixture
def docs(tmp_path):
    """A copy of the documentation to publish into."""
    shutil.copytree(publish.DOCS / "experiments", tmp_path / "docs" / "experiments")
    return tmp_path / "docs"


def e8_folder(tmp_path, name: str = "results"):
    """Finished E8 runs (two configurations, three repeats) as a run folder holds them:
    configuration (on the plan's build profile), versions, counters and telemetry (a delay
    that doubles at the step)."""
    folder = tmp_path / name
    plan = {s.label: s for s in publish.EXPERIMENTS["e8"].runs(publish.PlanOptions())}
    for seed in (1, 2, 3):
        for name, delay in (("codel", 6.0), ("droptail", 150.0)):
            label = f"{name}-reno-16f"
            run = folder / f"{label}.s{seed}"
            run.mkdir(parents=True)
            (run / "config.json").write_text(json.dumps(jsonable(plan[label].repeat(seed))))
            (run / "versions.json").write_text(json.dumps({"p4aqm": "abc123def456"}))
            (run / "metrics.json").write_text("{}")
            with open(run / "counters.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["t", "enqueued", "seen_packets", "seen_bytes", "prob_drops",
                                 "forced_drops", "overflow_drops", "notect_drops",
                                 "marks_incipient", "marks_ce"])
                writer.writerow([15, 0, 0, 0, 0, 0, 0, 0, 0, 0])
                writer.writerow([40, 30000 + seed, 30000 + seed, 0, 0, 0, 0, 0, 0, 10 * seed])
            with open(run / "telemetry.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["t", "avg", "qdepth", "prob", "sojourn_ms", "pmax", "group",
                                 "rtt_ms"])
                for i in range(4500):
                    t = 15 + i / 100
                    ms = (delay + seed / 10) * (2 if 40 <= t < 41 else 1)
                    writer.writerow([t, 0, round(ms * 1.25), 0, ms, "", 0, 0])
    (folder / "summary.md").write_text("# E8\n\nTime: 6 runs in 7.5 min (75 s per run).\n")
    return folder


def test_the_time_of_runs_from_several_folders_names_each_folders_part(tmp_path):
    for name, line in (("a", "Time: 12 runs in 27.1 min (136 s per run)."),
                       ("b", "Time: 12 runs in 27.3 min (137 s per run)."), ("c", None)):
        (tmp_path / name).mkdir()
        if line:
            (tmp_path / name / "summary.md").write_text(f"# E3\n\n{line}\n")
    assert publish.timing([tmp_path / n for n in "abc"]) == \
        "Time: 12 runs in 27.1 min (136 s per run); 12 runs in 27.3 min (137 s per run)."
    assert publish.timing([tmp_path / "c"]) == ""


def test_publish_writes_the_summary_the_figures_and_the_pages(tmp_path, docs, monkeypatch):
    monkeypatch.setattr(publish, "DOCS", docs)
    folder = e8_folder(tmp_path)
    written = publish.publish([folder], docs=docs)
    doc = json.loads((docs / "results" / "e8" / "main.json").read_text())
    assert doc["commits"] == ["abc123def456"] and doc["runs"] == 6
    assert doc["program"] == "droptail-red_ecn-mecn-newque-blue-pi-rem-codel-pie"
    assert doc["configurations"] == 2 and doc["repeats"] == 3
    assert doc["time"] == "Time: 6 runs in 7.5 min (75 s per run)."
    assert {row["run"] for row in doc["rows"]} == {"codel-reno-16f", "droptail-reno-16f"}
    assert doc["claims"] and all(c["verdict"] for c in doc["claims"])
    page = (docs / "experiments" / "e8.md").read_text()
    block = page.split(publish.BEGIN)[1].split(publish.END)[0]
    assert "### As planned" in block and "abc123def456" in block and "codel-reno-16f" in block
    assert "on build profile `droptail-red_ecn-mecn-newque-blue-pi-rem-codel-pie`" in block
    overview = (docs / "experiments" / "reproductions.md").read_text()
    assert "[E8](e8.md)" in overview.split(publish.BEGIN)[1]
    assert docs / "experiments" / "e8.md" in written
    assert all((docs / "figures" / "e8" / name).is_file() for name in doc["figures"])
    # Published again: the same pages; as a controlled run: its own heading and figures.
    assert publish.regenerate(docs) == []
    publish.publish([folder], "again", docs=docs)
    page = (docs / "experiments" / "e8.md").read_text()
    assert page.index("### As planned") < page.index("### Also run: again")   # no factor
    assert "[again](e8.md#also-run-again)" in (docs / "experiments" / "reproductions.md").read_text()
    assert (docs / "figures" / "e8" / "again").is_dir()


def test_controlled_runs_are_published_beside_the_plan_s_others(tmp_path, docs, monkeypatch):
    """`--only 'codel-*' --factor aqm_from=9` judged beside the plan's DropTail runs (a
    factor refused for DropTail leaves it alone): the claims need both; the page says which
    runs changed and where the others came from. A CoDel run of the baseline is never taken,
    not even at a load the controlled runs lack."""
    monkeypatch.setattr(publish, "DOCS", docs)
    baseline = e8_folder(tmp_path)
    for seed in (1, 2, 3):      # the baseline's CoDel at 4 flows too
        run = baseline / f"codel-reno-4f.s{seed}"
        shutil.copytree(baseline / f"codel-reno-16f.s{seed}", run)
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(json.dumps({**config, "label": "codel-reno-4f"}))
    controlled = e8_folder(tmp_path, "controlled")
    for run in controlled.glob("*/config.json"):
        if run.parent.name.startswith("droptail-"):
            shutil.rmtree(run.parent)
        else:
            run.write_text(json.dumps({**json.loads(run.read_text()),
                                       "factors": [["aqm_from", "9"]]}))
            (run.parent / "versions.json").write_text(json.dumps({"p4aqm": "fedcba654321"}))
    assert main(["publish", str(controlled), "--as", "held", "--beside", str(baseline)]) == 0
    doc = json.loads((docs / "results" / "e8" / "held.json").read_text())
    assert doc["runs"] == 6 and doc["own_runs"] == 3 and doc["beside"]["runs"] == 3
    assert doc["commits"] == ["fedcba654321"] and doc["beside"]["commits"] == ["abc123def456"]
    assert {row["run"] for row in doc["rows"]} == {"codel-reno-16f", "droptail-reno-16f"}
    assert doc["claims"] and doc["factors"] == [["aqm_from", "9"]]
    assert doc["beside"]["factors"] == []
    block = (docs / "experiments" / "e8.md").read_text().split("### Controlled: held")[1]
    assert ("3 at commit fedcba654321, changed: aqm_from=9" in block
            and "the other configurations' 3 runs at commit abc123def456, unchanged" in block)
    # Alone, the controlled runs hold no DropTail row.
    publish.publish([controlled], "alone", docs=docs)
    alone = json.loads((docs / "results" / "e8" / "alone.json").read_text())
    assert [row["run"] for row in alone["rows"]] == ["codel-reno-16f"] and "beside" not in alone
    # ... so CoDel against DropTail is not measured alone, PIE's claim in neither (no PIE
    # run), and the overview leaves out what was not measured.
    def unmeasured(doc):
        return [c["claim"] for c in doc["claims"] if c["verdict"] == stats.NOT_MEASURED]
    claims = publish.EXPERIMENTS["e8"].claims
    assert unmeasured(doc) == [claims[1]] and unmeasured(alone) == [claims[1], claims[3]]
    overview = (docs / "experiments" / "reproductions.md").read_text().split(publish.BEGIN)[1]
    e8_rows = [line for line in overview.split(publish.END)[0].splitlines() if "[E8]" in line]
    assert len(e8_rows) == (len(doc["claims"]) - 1) + (len(alone["claims"]) - 2)
    assert stats.NOT_MEASURED not in overview
    assert "| [held](e8.md#controlled-held): aqm_from=9 |" in overview
    # DropTail's runs alone measure no claim: the page says so instead of a table of them.
    only = e8_folder(tmp_path, "droptail-only")
    for run in only.glob("codel-*"):
        shutil.rmtree(run)
    publish.publish([only], "droptail", docs=docs)
    block = (docs / "experiments" / "e8.md").read_text().split("### Also run: droptail")[1]
    block = block.split("### ")[0]
    assert "3 runs (1 configuration, up to 3 repeats each)" in block
    assert "These runs alone measure none of the paper's claims." in block
    assert "| claim |" not in block and "| droptail-reno-16f |" in block
    with pytest.raises(publish.PublishError, match="concern every configuration beside "
                                                   r"\(no factor\): nothing to add"):
        publish.publish([baseline], "same", docs=docs, beside=[baseline])
    with pytest.raises(publish.PublishError, match="controlled run: name it with --as"):
        publish.publish([controlled], docs=docs, beside=[baseline])
    for path in baseline.glob("droptail-*/config.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "program": "droptail"}))
    def figures():
        return {f.name: f.stat().st_mtime_ns for f in (docs / "figures" / "e8" / "held").iterdir()}
    before = figures()
    with pytest.raises(publish.PublishError, match="report them apart .*program=plan"):
        publish.publish([controlled], "held", docs=docs, beside=[baseline])
    assert figures() == before      # a refused publish leaves the published figures alone


def test_rows_are_published_as_the_summary_prints_them():
    """An Estimate left in a row is a float to JSON: published as its text; rows of other
    columns (E5's RTT runs) make a table of their own."""
    rows = [publish.shown(row) for row in (
        {"run": "ecn-60f", "lockout": Estimate([0, 1, 1])},
        {"run": "aecn-60f", "lockout": Estimate([2, 0, 1])},
        {"run": "rtt-fragile.s1", "group": "fragile", "error_ms": "0.64"})]
    assert rows[0]["lockout"] == str(Estimate([0, 1, 1])) == "0.667 ± 1.43 (n=3)"
    json.loads(json.dumps(rows))
    assert publish.table(rows) == [
        "| run | lockout |", "|---|---|", "| ecn-60f | 0.667 ± 1.43 (n=3) |",
        "| aecn-60f | 1.00 ± 2.48 (n=3) |", "",
        "| run | group | error_ms |", "|---|---|---|", "| rtt-fragile.s1 | fragile | 0.64 |"]


def test_publish_refuses_what_it_cannot_take(tmp_path, capsys, monkeypatch, docs):
    monkeypatch.setattr(publish, "DOCS", docs)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["publish", str(empty)]) == 2
    assert "no runs" in capsys.readouterr().err
    assert main(["publish", str(e8_folder(tmp_path)), "--as", "../escape"]) == 2
    assert "letters, digits" in capsys.readouterr().err
    # Runs made on two programs (a sweep's machines at two revisions) are reported apart.
    mixed = e8_folder(tmp_path, "mixed")
    for path in mixed.glob("codel-*/config.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "program": "all"}))
    with pytest.raises(publish.PublishError, match="programs all, .*report them apart"):
        publish.publish([mixed], docs=docs)
    with pytest.raises(publish.PublishError, match="no block to generate"):
        publish.replaced("a page without markers", [], publish.BEGIN)


def test_the_overview_says_where_each_switch_verdict_comes_from():
    """A claim that differs on the switch, point by point: the paper's where the twin
    misses too, the switch's where the twin holds (with the controlled twin run that gives
    the switch's verdict, when there is one); the headline counts the claims."""
    H, D, U = stats.HOLDS, stats.DIFFERS, stats.UNCLEAR

    def claim(text, points):
        return stats.claim_row(text, [(f"{where}: x", v) for where, v in points.items()])

    def doc(name, claims, backend="bmv2", changed=()):
        return {"name": name, "backend": backend, "factors": [list(f) for f in changed],
                "claims": claims}
    c = publish.EXPERIMENTS["e8"].claims
    switch = [claim(c[0], {"1f": D, "16f": D, "64f": D}), claim(c[1], {"1f": D, "16f": H}),
              claim(c[2], {"1f": H}), claim(c[3], {"1f": D})]
    twin = [claim(c[0], {"1f": D, "16f": H, "64f": D}), claim(c[1], {"1f": H, "16f": H}),
            claim(c[2], {"1f": U})]
    controlled = [claim(c[1], {"1f": D, "16f": H})]
    everything = {"e8": [doc(publish.MAIN, switch), doc(publish.TWIN, twin, "ns3"),
                         doc("ns3-departure", controlled, "ns3", [("decide_at", "departure")]),
                         # ns-3's own discs check the model: no cause, whatever their verdict
                         doc("ns3-native", controlled, "ns3", [("aqm_impl", "ns3")])]}
    rows = [line for line in publish.reproductions_block(everything) if line.startswith("| [E8]")]
    assert [row.rsplit("|", 2)[1].strip() for row in rows[:4]] == [
        "the paper as we read it at 1f, 64f; the switch at 16f",
        "the switch at 1f (the twin with `decide_at=departure` gives the switch's verdict "
        "([ns3-departure](e8.md#controlled-in-ns-3-ns3-departure)))",
        "undecided: not distinguishable in the twin", "the twin has not judged it yet"]
    assert publish.headline(everything) == [
        "- On the switch: of the 4 claims judged as planned, 1 holds, 3 differ, "
        "0 not distinguishable.",
        "- In the ns-3 twin: of the 3 claims judged as planned, 1 holds, 1 differs, "
        "1 not distinguishable.",
        "- Of the 2 claims that differ on the switch and were judged in the twin: 1 differs "
        "in the twin too (the paper as we read it is a cause, the table says where), 1 holds "
        "there (the switch is the cause), 0 not distinguishable there."]


def test_an_experiment_page_sets_each_claim_on_both_backends_side_by_side():
    """Where both the switch and the twin have judged the plan, the page's block opens with
    each claim's two verdicts and the cause, as the overview gives them; with one backend
    only, no such table."""
    H, D = stats.HOLDS, stats.DIFFERS
    c = publish.EXPERIMENTS["e8"].claims

    def doc(name, verdict, backend):
        return {"name": name, "backend": backend, "factors": [], "claims": [
            stats.claim_row(c[0], [("16f: x", verdict)])], "rows": [], "figures": [],
            "runs": 1, "configurations": 1, "repeats": 1, "commits": ["abc"], "time": "",
            "program": "all", "experiment": "e8", "title": "E8"}
    both = [doc(publish.MAIN, D, "bmv2"), doc(publish.TWIN, H, "ns3")]
    block = publish.experiment_block("e8", both)
    assert block[0] == "### Each claim on both backends"
    row = next(line for line in block if line.startswith("| CoDel holds"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1].startswith("**holds**: 16f: x") and cells[2].startswith("**differs**")
    assert cells[3] == "the switch (not explained yet)"
    overview = publish.reproductions_block({"e8": both})
    assert any(line.endswith(row[1:]) for line in overview)     # the overview's row, as is
    assert "### Each claim on both backends" not in publish.experiment_block("e8", both[:1])


def test_a_twin_run_s_provenance_says_what_decided():
    """The golden models by default; ns-3's own queue discs under aqm_impl=ns3."""
    doc = {"name": "ns3-native", "backend": "ns3", "factors": [["aqm_impl", "ns3"]],
           "runs": 2, "configurations": 1, "repeats": 2, "commits": ["abc"], "time": "",
           "program": "-"}
    assert "in the ns-3 twin (ns-3's own queue discs)" in publish.provenance(doc)
    assert "in the ns-3 twin (the golden models of its algorithms)" in publish.provenance(
        {**doc, "name": publish.TWIN, "factors": []})


def test_a_claim_is_one_row_though_each_backend_says_what_it_measured():
    """E7's loss claim says how many clients ran ("(here: 10 clients)" on the switch, 25
    in the twin at the paper's scale): still one claim, one row, both verdicts."""
    base = publish.EXPERIMENTS["e7"].claims[2]

    def doc(name, backend, clients, verdict):
        return {"name": name, "backend": backend, "factors": [], "experiment": "e7",
                "claims": [stats.claim_row(f"{base} (here: {clients} clients)",
                                           [("q128-loss1: x", verdict)])]}
    rows = publish.both_backends("e7", [doc(publish.MAIN, "bmv2", 10, stats.UNCLEAR),
                                        doc(publish.TWIN, "ns3", 25, stats.HOLDS)])
    assert len(rows) == 1
    assert rows[0]["claim (the paper's value)"] == f"{base} (here: 10 clients)"
    assert rows[0]["switch"].startswith("**not distinguishable**")
    assert rows[0]["ns-3 twin"].startswith("**holds**")
