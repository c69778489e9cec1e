"""python -m analysis.figures: the documentation's figures, drawn from runs (never by hand).

  queue FOLDER --runs LABEL... --out PNG   queue and average over time of some runs of an
                                           experiment folder (the README's figure)
  experiment FOLDER                        an experiment folder's figures, for its page
                                           (docs/figures/<experiment>/)
  bench JSON                               where a packet's instructions go, per program,
                                           from a `make bench` JSON (docs/figures/bench/)
  head-to-head JSON                        each peer beside our builds of its algorithm,
                                           by part, from a run with --peers and --profiles
                                           (docs/figures/head-to-head/)

Published figures are 100 dpi with a 256-colour palette (Pillow, which matplotlib brings),
a fifth of matplotlib's size, and carry the run they come from as PNG text ("Source"),
which the documentation prints beside them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402
from PIL.PngImagePlugin import PngInfo  # noqa: E402

from analysis import plots  # noqa: E402

DOCS_FIGURES = Path(__file__).resolve().parent.parent / "docs" / "figures"
DPI = 100
RENDERED_DPI = 110      # analysis/plots.py's
MAX_BYTES = 300_000     # a published figure's size at most: dense time series get fewer colours


class FigureError(Exception):
    """Input that gives no figure: one line naming what is missing."""


def publish(rendered: Path, out: Path, source: str, dpi: int = RENDERED_DPI) -> Path:
    """A figure rendered at `dpi`, written at DPI with a palette (small enough to commit)
    and the run it comes from."""
    info = PngInfo()
    info.add_text("Source", source)
    with Image.open(rendered) as image:
        scale = DPI / dpi
        image = image.convert("RGB")
        if scale != 1:
            image = image.resize((round(image.width * scale), round(image.height * scale)),
                                 Image.Resampling.LANCZOS)
        out.parent.mkdir(parents=True, exist_ok=True)
        for colors in (256, 64, 16):
            image.quantize(colors=colors).save(out, optimize=True, pnginfo=info)
            if out.stat().st_size < MAX_BYTES:
                break
    return out


def shown(path: Path) -> str:
    """A path as the pages print it: relative to the current folder when inside it."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def run_folder(folder: Path, label: str) -> Path:
    """The first repeat of a configuration: <label>.s<seed> with the lowest seed."""
    runs = sorted(folder.glob(f"{label}.s*/telemetry.csv"),
                  key=lambda p: int(re.sub(r"\D", "", p.parent.suffix) or 0))
    if not runs:
        there = sorted({p.parent.name.rsplit(".s", 1)[0] for p in folder.glob("*/config.json")})
        raise FigureError(f"{folder} has no run labelled {label!r} with telemetry "
                          f"(there are: {', '.join(there) or 'none'})")
    return runs[0].parent


def queue(folder: Path, labels: list[str], out: Path, title: str = "") -> Path:
    runs = [(label, run_folder(folder, label)) for label in labels]
    with tempfile.TemporaryDirectory() as tmp:
        return publish(plots.queue_over_time(runs, Path(tmp) / "queue.png", title), out,
                       shown(folder))


def summary_figures(folder: Path) -> list[Path]:
    """The figures an experiment folder's summary.md lists (experiments/__main__.py)."""
    summary = folder / "summary.md"
    if not summary.is_file():
        raise FigureError(f"{folder}: no summary.md (not a finished `experiments run` folder; "
                          "`python -m experiments report` writes one)")
    lines = summary.read_text().splitlines()
    listed = lines[lines.index("Figures:") + 1:] if "Figures:" in lines else []
    figures = [folder / line.removeprefix("- ") for line in listed if line.startswith("- ")]
    absent = [p.name for p in figures if not p.is_file()]
    if absent or not figures:
        raise FigureError(f"{summary}: figures missing: {', '.join(absent) or 'none listed'}")
    return figures


def experiment_name(folder: Path) -> str:
    configs = sorted(folder.glob("*/config.json"))
    if not configs:
        raise FigureError(f"{folder}: no runs (folders with config.json)")
    return json.loads(configs[0].read_text())["experiment"]


def emptied(into: Path) -> Path:
    """A page's figure folder without its old figures (one the run no longer draws must
    not stay)."""
    into.mkdir(parents=True, exist_ok=True)
    for old in into.glob("*.png"):
        old.unlink()
    return into


def experiment(folder: Path, docs_figures: Path = DOCS_FIGURES) -> list[Path]:
    figures = summary_figures(folder)
    into = emptied(docs_figures / experiment_name(folder))
    return [publish(png, into / png.name, shown(folder)) for png in figures]


def bench_parts(doc: dict) -> dict[str, dict[str, float]]:
    """Each 64-byte case's instructions per packet by part, in the benchmark's order."""
    parts = {case: r["parts_per_packet"] for case, r in doc.get("instructions", {}).items()
             if r.get("parts_per_packet")}
    if not parts:
        raise FigureError("no instruction counts by part in this JSON (a `make bench` run "
                          "with valgrind writes them under 'instructions')")
    return parts


def stacked_parts(ax, bars: list[tuple[str, dict[str, float]]], names: list[str]) -> None:
    """One horizontal bar per (label, instructions by part), the parts stacked in `names`'
    order, the first bar on top."""
    left = [0.0] * len(bars)
    for k, name in enumerate(names):
        widths = [counted.get(name, 0) / 1000 for _, counted in bars]
        ax.barh(range(len(bars)), widths, left=left, color=f"C{k}", label=name.replace("_", " "))
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(range(len(bars)), [label for label, _ in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("thousand instructions per packet (callgrind, 64-byte packets)")
    ax.grid(axis="x", alpha=0.3)


def saved(fig, out: Path, json_path: Path) -> Path:
    """A bench chart laid out, rendered and published at `out`, naming its JSON."""
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as tmp:
        rendered = Path(tmp) / out.name
        fig.savefig(rendered, dpi=DPI)
        plt.close(fig)
        return publish(rendered, out, shown(json_path), DPI)


def bench(json_path: Path, docs_figures: Path = DOCS_FIGURES) -> Path:
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, ValueError) as err:
        raise FigureError(f"{json_path}: {err}") from None
    parts = bench_parts(doc)
    cases = list(parts)
    names = list(next(iter(parts.values())))
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(cases) + 1.6))
    stacked_parts(ax, [(case, parts[case]) for case in cases], names)
    logging = "with" if doc.get("bmv2", {}).get("logging_macros") else "without"
    ax.set_title(f"Where a packet's instructions go (BMv2 {logging} logging macros)",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper right")    # the trivial program, short, is on top
    return saved(fig, emptied(docs_figures / "bench") / "bench-parts.png", json_path)


# Our builds of a peer's algorithm, as a head-to-head row names them, beside the peer.
HEAD_TO_HEAD_BUILDS = (("the peer", "peer"), ('"all"', "ours_all"), ("profile", "ours_profile"),
                       ("lean", "ours_lean"), ("lean, constants", "ours_constants"))


def head_to_head_bars(doc: dict, source: Path) -> tuple[list[tuple[str, dict[str, float]]],
                                                       list[tuple[int, int, float]]]:
    """The chart's bars, each a label and its instructions by part (the peer's first, then
    ours on each build the run counted), and for each algorithm its first bar, its number
    of bars and the peer's count."""
    rows = doc.get("head_to_head") if isinstance(doc, dict) else None
    if not rows:
        raise FigureError(f"{source}: no head to head (a `make bench` run with --peers whose "
                          "peers name an algorithm, and --profiles)")
    parts = bench_parts(doc)
    bars: list[tuple[str, dict[str, float]]] = []
    groups: list[tuple[int, int, float]] = []
    for row in rows:
        a, peer = row["algorithm"], row["peer"]
        cases = {"peer": f"{peer}-64B", "ours_all": f"{a}-64B", "ours_profile": f"{a}-64B@{a}",
                 "ours_lean": f"{a}-64B@{a}+lean", "ours_constants": f"{a}-64B@{a}+lean+constants"}
        first = len(bars)
        bars += [(f"{a}: {peer}" if key == "peer" else f"{a}: {label}", parts[cases[key]])
                 for label, key in HEAD_TO_HEAD_BUILDS if cases[key] in parts]
        groups.append((first, len(bars) - first, row["peer_instructions"]))
    return bars, groups


def head_to_head(json_path: Path, docs_figures: Path = DOCS_FIGURES) -> Path:
    """Each peer that names an algorithm and our builds of it, stacked by BMv2's parts, with
    the peer's count and 1.15 times it marked on each algorithm's bars."""
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, ValueError) as err:
        raise FigureError(f"{json_path}: {err}") from None
    bars, groups = head_to_head_bars(doc, json_path)
    names = list(bars[0][1])
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(bars) + 2.4))
    stacked_parts(ax, bars, names)
    for first, count, peer in groups:
        span = (first - 0.45, first + count - 0.55)
        ax.vlines(peer / 1000, *span, colors="black", linewidth=1)
        ax.vlines(1.15 * peer / 1000, *span, colors="black", linewidth=1, linestyles="dashed")
    ax.plot([], [], color="black", linewidth=1, label="the peer's count")
    ax.plot([], [], color="black", linewidth=1, linestyle="dashed", label="1.15 times it")
    ax.set_title("Head to head: each peer and our builds of its algorithm, by BMv2's parts",
                 fontsize=10)
    # Below the axes: every algorithm's bars reach the right-hand side somewhere.
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.09))
    return saved(fig, emptied(docs_figures / "head-to-head") / "head-to-head.png", json_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.figures",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("queue", help="queue and average over time of some runs")
    one.add_argument("folder", type=Path, help="an experiment folder, results/<name>/<time>")
    one.add_argument("--runs", nargs="+", required=True, metavar="LABEL",
                     help="the configurations to draw, one panel each (e.g. red red_ecn)")
    one.add_argument("--out", type=Path, required=True, help="the PNG to write")
    one.add_argument("--title", default="")
    every = sub.add_parser("experiment", help="an experiment folder's figures, for its page")
    every.add_argument("folder", type=Path)
    cost = sub.add_parser("bench", help="a `make bench` JSON's instructions by part")
    cost.add_argument("json", type=Path, help="results/bench/latest.json or a dated copy")
    peers = sub.add_parser("head-to-head", help="each peer beside our builds of its algorithm")
    peers.add_argument("json", type=Path, help="a `make bench` JSON, or a published one "
                                               "(docs/results/bench/)")
    args = parser.parse_args(argv)
    try:
        if args.command == "queue":
            written = [queue(args.folder, args.runs, args.out, args.title)]
        elif args.command == "experiment":
            written = experiment(args.folder)
        elif args.command == "head-to-head":
            written = [head_to_head(args.json)]
        else:
            written = [bench(args.json)]
    except FigureError as err:
        print(f"figures: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(f"{shown(path)} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
