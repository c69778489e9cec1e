"""python -m analysis.figures: a run's figures for the documentation, small, each carrying
the run it comes from. The README's figure from a real demo run is drawn in
tests/test_readme.py; here, folders and JSON written by the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from analysis import figures
from benchmarks import instructions


def png(path: Path, size: tuple[int, int] = (330, 220)) -> Path:
    Image.new("RGB", size, (250, 250, 250)).save(path)
    return path


def experiment_folder(tmp_path: Path, listed: list[str], present: list[str]) -> Path:
    """An `experiments run` folder as it ends: runs with config.json, figures, summary.md."""
    folder = tmp_path / "results" / "e5" / "20260101-000000"
    (folder / "red-15.s1").mkdir(parents=True)
    (folder / "red-15.s1" / "config.json").write_text(json.dumps({"experiment": "e5"}))
    for name in present:
        png(folder / name)
    (folder / "summary.md").write_text("# E5\n\n| a |\n|---|\n| 1 |\n\nFigures:\n"
                                       + "".join(f"- {name}\n" for name in listed))
    return folder


def test_an_experiment_s_figures_replace_its_page_s_and_name_the_run(tmp_path):
    folder = experiment_folder(tmp_path, ["e5-goodput.png", "e5-rtt.png"],
                               ["e5-goodput.png", "e5-rtt.png"])
    docs = tmp_path / "docs" / "figures"
    (docs / "e5").mkdir(parents=True)
    png(docs / "e5" / "e5-no-longer-drawn.png")
    written = figures.experiment(folder, docs)
    assert sorted(p.name for p in (docs / "e5").glob("*.png")) == ["e5-goodput.png",
                                                                  "e5-rtt.png"]
    for path in written:
        with Image.open(path) as image:
            assert image.text["Source"] == str(folder)
            assert image.mode == "P"                                   # a palette
            assert image.size == (300, 200)                            # 110 -> 100 dpi


def test_a_figure_the_summary_lists_but_the_folder_lacks_is_named(tmp_path):
    folder = experiment_folder(tmp_path, ["e5-goodput.png", "e5-rtt.png"], ["e5-goodput.png"])
    with pytest.raises(figures.FigureError, match="figures missing: e5-rtt.png"):
        figures.experiment(folder, tmp_path / "docs")
    (folder / "summary.md").unlink()
    with pytest.raises(figures.FigureError, match="no summary.md"):
        figures.experiment(folder, tmp_path / "docs")


def test_a_run_label_the_folder_lacks_is_named_with_those_it_has(tmp_path):
    folder = experiment_folder(tmp_path, [], [])
    with pytest.raises(figures.FigureError, match=r"no run labelled 'red_ecn' .*there are: "
                                                  r"red-15"):
        figures.run_folder(folder, "red_ecn")


def bench_json(tmp_path: Path, cases: dict[str, int]) -> Path:
    """A `make bench` document's instruction counts, split into the benchmark's parts."""
    names = [*instructions.PARTS, "rest"]
    doc = {"bmv2": {"logging_macros": False}, "instructions": {
        case: {"instructions_per_packet": total,
               "parts_per_packet": {name: total / len(names) for name in names}}
        for case, total in cases.items()}}
    path = tmp_path / "latest.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_bench_chart_has_every_case_s_parts_and_names_its_json(tmp_path):
    path = bench_json(tmp_path, {"trivial-64B": 45_000, "red-64B": 197_000})
    assert list(figures.bench_parts(json.loads(path.read_text()))) == ["trivial-64B", "red-64B"]
    chart = figures.bench(path, tmp_path / "figures")
    assert chart == tmp_path / "figures" / "bench" / "bench-parts.png"
    with Image.open(chart) as image:
        assert image.text["Source"] == str(path)
        assert image.mode == "P" and image.width == 900


def test_a_bench_json_without_instruction_parts_is_refused(tmp_path):
    path = tmp_path / "latest.json"
    path.write_text(json.dumps({"dataplane": []}))
    assert figures.main(["bench", str(path)]) == 2
    with pytest.raises(figures.FigureError, match="no instruction counts by part"):
        figures.bench(path, tmp_path / "figures")


def test_the_head_to_head_chart_sets_each_peer_beside_our_builds_of_its_algorithm(tmp_path):
    """One group per head-to-head row: the peer, then ours on each build the run counted
    (no constants for PI2 here), each with its parts; the peer's count marks the group."""
    path = bench_json(tmp_path, {"p4codel-64B": 100_000, "codel-64B": 160_000,
                                 "codel-64B@codel": 120_000, "codel-64B@codel+lean": 110_000,
                                 "codel-64B@codel+lean+constants": 98_000,
                                 "pi2forp4-64B": 130_000, "pi2-64B": 200_000,
                                 "pi2-64B@pi2": 170_000})
    doc = json.loads(path.read_text())
    doc["head_to_head"] = [{"algorithm": "codel", "peer": "p4codel", "peer_instructions": 100_000},
                           {"algorithm": "pi2", "peer": "pi2forp4", "peer_instructions": 130_000}]
    path.write_text(json.dumps(doc))
    bars, groups = figures.head_to_head_bars(doc, path)
    assert [label for label, _ in bars] == [
        "codel: p4codel", 'codel: "all"', "codel: profile", "codel: lean",
        "codel: lean, constants", "pi2: pi2forp4", 'pi2: "all"', "pi2: profile"]
    assert sum(bars[4][1].values()) == pytest.approx(98_000)
    assert groups == [(0, 5, 100_000), (5, 3, 130_000)]
    chart = figures.head_to_head(path, tmp_path / "figures")
    assert chart == tmp_path / "figures" / "head-to-head" / "head-to-head.png"
    with Image.open(chart) as image:
        assert image.text["Source"] == str(path) and image.mode == "P"


def test_a_bench_json_without_a_head_to_head_gives_no_such_chart(tmp_path):
    path = bench_json(tmp_path, {"trivial-64B": 45_000})
    assert figures.main(["head-to-head", str(path)]) == 2
    with pytest.raises(figures.FigureError, match="no head to head"):
        figures.head_to_head(path, tmp_path / "figures")


def test_the_published_head_to_head_chart_comes_from_a_published_run():
    chart = Path(figures.DOCS_FIGURES) / "head-to-head" / "head-to-head.png"
    with Image.open(chart) as image:
        source = Path(image.text["Source"])
    assert source.parent == Path("docs/results/bench") and source.is_absolute() is False
    assert (Path(figures.DOCS_FIGURES).parent.parent / source).is_file()
