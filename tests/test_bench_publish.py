"""Published benchmark runs: the results page's generated block is what the committed
docs/results/bench/ files give, and `python -m benchmarks publish JSON` takes a run's JSON
there (or refuses it in one line)."""

from __future__ import annotations

import json
import shutil

import pytest

from analysis.markdown import END
from benchmarks import publish
from benchmarks.__main__ import main


def test_the_results_block_is_what_the_published_files_give():
    """A typed number in the block, or a file published without regenerating the page,
    fails here."""
    stale = [str(page.relative_to(publish.DOCS.parent)) for page, text in publish.pages().items()
             if page.read_text() != text]
    assert not stale, (f"the published block differs from docs/results/bench/ in {stale}: run "
                       "`python -c 'from benchmarks import publish; publish.regenerate()'`")


def test_every_published_run_has_its_counts():
    runs = publish.published()
    assert runs, "no benchmark run published"
    for doc in runs:
        assert (publish.DOCS / publish.FOLDER / f"{doc['name']}.json").is_file()
        assert "capacity" in doc or \
            doc["instructions"]["trivial-64B"]["ratio_to_trivial"] == 1.0
        assert doc["versions"]["p4aqm"] and "machine" not in doc["versions"]


@pytest.fixture
def docs(tmp_path, monkeypatch):
    """A copy of the benchmarks' pages, nothing published."""
    shutil.copytree(publish.DOCS / "benchmarks", tmp_path / "docs" / "benchmarks")
    monkeypatch.setattr(publish, "DOCS", tmp_path / "docs")
    return tmp_path / "docs"


def parts(total: float) -> dict:
    return {"zero_metadata": 12000.0, "parser": 1200.0, "rest": total - 13200.0}


def bench_json(**changed) -> dict:
    """A benchmark JSON as `python -m benchmarks --compare abc^ --peers P` writes it (CPU
    time, control plane and trace profile too, which the summary leaves out)."""
    machine = {"cpu": "Xeon", "cores": 2, "kernel": "6.1", "host": "somebody's"}
    doc = {"machine": machine,
           "versions": {"p4aqm": "abc123def456", "p4c": "p4c 1.2.4", "machine": machine,
                        "simple_switch_grpc": "1.15.0"},
           "bmv2": {"binary": "/opt/p4-perf/bin/simple_switch_grpc", "logging_macros": False,
                    "log_level": "off"},
           "method": {"trial_seconds": 1.5, "loss_free": 0.999, "source": "tcpreplay --pps"},
           "elapsed_s": 601.2,
           "instructions": {
               "trivial-64B": {"instructions_per_packet": 45000.4, "ratio_to_trivial": 1.0,
                               "forwarded": 300, "parts_per_packet": parts(45000.4),
                               "steps_per_packet": {"conditions": 0.0, "field_writes": 24910.0}},
               "red-64B": {"instructions_per_packet": 180001.6, "ratio_to_trivial": 0.25,
                           "forwarded": 300, "parts_per_packet": parts(180001.6)}},
           "compare": {"revision": "abc^", "instructions": {
               "trivial-64B": {"instructions_per_packet": 45500.0, "ratio_to_trivial": 1.0}}},
           "head_to_head": [{"algorithm": "codel", "peer": "p4codel", "ours_all": 160000.0,
                             "ours_profile": None, "peer_instructions": 100000.0,
                             "profile_vs_peer": None}],
           "dataplane": [{"case": "trivial-64B", "cpu_us_per_packet": 10.04,
                          "spread_percent": 2.2, "ratio_to_trivial": 1.0, "pps": 30000}],
           "control": {"golden_model": {"packets_per_s": 190000}},
           "profile": {"cases": {}}, **changed}
    return doc


def written(tmp_path, doc, name: str = "bench-20260101-000000.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def block(docs) -> str:
    page = (docs / publish.PAGE).read_text()
    return page.split(publish.BEGIN)[1].split(END)[0]


def test_publish_writes_the_summary_and_the_page(tmp_path, docs, capsys):
    publish.regenerate(docs)
    assert "Nothing published yet" in block(docs)
    path = written(tmp_path, bench_json())
    assert main(["publish", str(path), "--as", "red-change"]) == 0
    assert capsys.readouterr().out.split() == ["docs/results/bench/red-change.json",
                                               "docs/benchmarks/results.md"]
    doc = json.loads((docs / "results" / "bench" / "red-change.json").read_text())
    assert doc["name"] == "red-change" and doc["from"] == path.name
    assert "host" not in doc["machine"] and "machine" not in doc["versions"]
    assert "control" not in doc and "profile" not in doc
    assert "forwarded" not in doc["instructions"]["red-64B"]
    assert doc["instructions"]["red-64B"]["instructions_per_packet"] == 180001.6   # unrounded
    shown = block(docs)
    assert "### red-change" in shown
    assert ("this tree at commit abc123def456 against revision `abc^`. BMv2 1.15.0 without "
            "logging macros") in shown
    for row in ("| trivial-64B | 45 000 | 1.00 | 45 500 | −1.1 % |",      # before and after
                "| red-64B | 180 002 | 0.25 | - | - |",                   # not in abc^
                "| trivial-64B | 12 000 | 1 200 | 31 800 | 45 000 |",     # its parts
                "| trivial-64B | 0 | 24 910 |",                            # its steps
                "| codel | p4codel | our defaults | 160 000 | - | 100 000 | - |",         # head to head
                "| trivial-64B | 10.0 | ±2 % | 1.00 |"):                  # CPU time
        assert row in shown.splitlines(), row
    assert publish.regenerate(docs) == []
    # Without a compare, peers or CPU time: only the instruction tables, without the
    # revision's columns; the runs in name order.
    bare = {k: v for k, v in bench_json().items()
            if k not in ("compare", "head_to_head", "dataplane")}
    assert main(["publish", str(written(tmp_path, bare, "bench-20260102-000000.json"))]) == 0
    shown = block(docs)
    assert shown.index("### bench-20260102-000000") < shown.index("### red-change")
    alone = shown.split("### red-change")[0]
    assert "| case | instructions per packet | capacity vs trivial |" in alone
    assert "at abc^" not in alone and "p4codel" not in alone and "CPU" not in alone
    # A figure changed in a published file: the page no longer is what the files give.
    published = docs / "results" / "bench" / "red-change.json"
    changed = json.loads(published.read_text())
    changed["instructions"]["red-64B"]["instructions_per_packet"] = 181000.0
    published.write_text(json.dumps(changed))
    assert publish.pages(docs)[docs / publish.PAGE] != (docs / publish.PAGE).read_text()


MALFORMED = {
    "not JSON": ("{", "Expecting property name"),
    "not an object": ([1, 2], "not an object"),
    "no instructions": ({"instructions": None}, "instructions is missing"),
    "a count as text": ({"instructions": {"red-64B": {"instructions_per_packet": "many",
                                                       "ratio_to_trivial": 1.0}}},
                        "instructions.red-64B.instructions_per_packet is str"),
    "a compare without its revision": ({"compare": {"instructions": {}}},
                                       "compare.revision is missing"),
    "a part as a boolean": ({"instructions": {"red-64B": {
        "instructions_per_packet": 1.0, "ratio_to_trivial": 1.0,
        "parts_per_packet": {"parser": True}}}}, "parts_per_packet.parser is bool"),
    "a CPU row without its case": ({"dataplane": [{"cpu_us_per_packet": 1.0}]},
                                   "dataplane[0].case is missing"),
}


@pytest.mark.parametrize("malformed", MALFORMED)
def test_publish_refuses_a_malformed_json_in_one_line(malformed, tmp_path, docs, capsys):
    content, said = MALFORMED[malformed]
    path = tmp_path / "bench-20260101-000000.json"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, dict):
        path.write_text(json.dumps({**bench_json(), **content}))
    else:
        path.write_text(json.dumps(content))
    page = (docs / publish.PAGE).read_text()
    assert main(["publish", str(path), "--as", "bad"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"benchmarks: {path}: ") and said in err[0], err
    assert not (docs / "results").exists() and (docs / publish.PAGE).read_text() == page


def test_publish_refuses_a_name_that_is_no_file_name(tmp_path, docs, capsys):
    path = written(tmp_path, bench_json())
    assert main(["publish", str(path), "--as", "../escape"]) == 2
    assert capsys.readouterr().err == ("benchmarks: --as '../escape': letters, digits, - and _ "
                                       "only\n")
    assert main(["publish", str(tmp_path / "absent.json")]) == 2
    assert "absent.json: [Errno 2]" in capsys.readouterr().err
    assert not (docs / "results").exists()


def capacity_json() -> dict:
    """What `python -m benchmarks --capacity trivial,all` writes (two searches, the second
    of which found no rate)."""
    doc = bench_json()
    for key in ("method", "instructions", "compare", "head_to_head", "dataplane"):
        doc.pop(key, None)
    step = {"mbps": 134.6, "kept": 0.9, "lost": {"switch": 463},
            "usage": {"switch": {"cores": 0.5, "thread": 0.1, "us_per_packet": 50.7},
                      "delay line dh1": {"cores": 0.2, "thread": 0.1, "us_per_packet": 23.0},
                      "delay line dbn": {"cores": 0.3, "thread": 0.1, "us_per_packet": 32.0}},
            "machine_busy": 1.0, "load": 4.87}
    doc["capacity"] = {"method": {"keep": 0.95, "flows": 4}, "results": [
        {"program": "trivial", "packet_bytes": 1500, "path": "delay-lines", "flows": 4,
         "capacity_mbps": 123.4, "failing_mbps": 134.6, "limit": "switch",
         "steps": [{**step, "mbps": 123.4, "kept": 0.97}, step]},
        {"program": "trivial", "packet_bytes": 1500, "path": "direct", "flows": 4,
         "capacity_mbps": 246.8, "failing_mbps": None, "limit": None, "steps": []},
        {"program": "all", "packet_bytes": 1000, "path": "direct", "flows": 4,
         "capacity_mbps": None, "failing_mbps": None, "limit": None, "steps": []}]}
    return doc


def test_a_capacity_run_is_published_with_what_limits_each_program(docs, tmp_path):
    """The capacity table: the rate kept, the first that failed, what the delay lines leave
    of the switch alone's rate, and at the failing rate the switch's and the busiest delay
    line's cores and how busy the machine was; a search that found no rate shows dashes."""
    source = tmp_path / "bench-cap.json"
    source.write_text(json.dumps(capacity_json()))
    publish.publish(source, "capacity", docs)
    page = (docs / publish.PAGE).read_text()
    assert "the testbed's capacity; this tree at commit abc123def456" in page
    assert ("| trivial | 1500 B | delay-lines | 123 | 135 | 0.50 | switch | 0.50 | 0.30 | "
            "100 %, 4.9 |" in page)
    assert "| trivial | 1500 B | direct | 247 | - | - | - | - | - | - |" in page
    assert "| all | 1000 B | direct | - | - | - | - | - | - | - |" in page


def test_a_head_to_head_row_says_which_parameters_ours_ran():
    """A peer's own parameters (`# algorithm: pi2 target=0.02`) travel into the published
    row; a value that is not text is refused naming where it is."""
    row = {"algorithm": "pi2", "peer": "pi2forp4", "peer_instructions": 100.0,
           "ours_all": 150.0, "ours_profile": 120.0, "profile_vs_peer": 1.2,
           "parameters": {"target": "0.02", "tupdate": "0.032768"}}
    kept = publish.met(0, row)
    assert kept["parameters"] == {"target": "0.02", "tupdate": "0.032768"}
    shown = publish.head_to_head_rows({"head_to_head": [kept]})
    assert shown[0]["ours configured as"] == "target=0.02 tupdate=0.032768"
    assert publish.head_to_head_rows({"head_to_head": [publish.met(0, row | {"parameters": {}})]}
                                     )[0]["ours configured as"] == "our defaults"
    with pytest.raises(publish.PublishError, match=r"head_to_head\[0\]\.parameters\.target is float"):
        publish.met(0, row | {"parameters": {"target": 0.02}})


def test_a_run_with_parts_publishes_what_each_part_costs():
    counted = {"red_ecn-64B@red_ecn": 150000.0, "red_ecn-64B@red_ecn+no-telemetry": 144000.4,
               "red_ecn-64B@red_ecn+lean": 126000.0}
    rows = publish.part_cost_rows({"instructions": {
        k: {"instructions_per_packet": v} for k, v in counted.items()}})
    assert rows == [{"case": "red_ecn-64B@red_ecn", "profile": "150 000", "telemetry": "6 000",
                     "seeded prng": "-", "reason counters": "-", "input checks": "-",
                     "all of them (lean)": "24 000", "constants (after lean)": "-"}]
