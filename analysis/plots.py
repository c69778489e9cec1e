"""Figures as PNG (matplotlib, Agg): queue and Pmax over time, metric comparisons,
utilisation vs delay, per-group goodput, metric-vs-parameter sweeps."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis.results import read_csv  # noqa: E402
from analysis.stats import half_width  # noqa: E402


def _errors(values: Sequence[float], axis: str = "yerr") -> dict:
    """Error bars for values that are Estimates of repeated runs; none for single runs."""
    halves = [half_width(v) for v in values]
    return {axis: halves} if any(halves) else {}


def wrapped(title: str, width: int = 60) -> str:
    """A long title on two lines rather than cut at the figure's edge."""
    return textwrap.fill(title, width)


def queue_over_time(runs: Sequence[tuple[str, Path]], out: Path, title: str = "") -> Path:
    """One panel per run: the queue and its EWMA average (packets, if the algorithm keeps
    one); on the right Pmax if it moves (ARED, AMECN), else the marking probability."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 2.3 * len(runs) + 0.6), sharex=True,
                             squeeze=False)
    for ax, (label, folder) in zip(axes[:, 0], runs):
        rows = read_csv(folder / "telemetry.csv")
        t = [r["t"] for r in rows]
        ax.plot(t, [r["qdepth"] for r in rows], lw=0.6, color="0.6", label="queue")
        if any(r["avg"] for r in rows):
            ax.plot(t, [r["avg"] for r in rows], lw=1.6, color="C0", label="EWMA average")
        ax.set_ylabel("packets")
        ax.set_title(label, fontsize=9, loc="left")
        pmax = [r["pmax"] for r in rows]
        prob = [r["prob"] for r in rows]
        if rows and not all(math.isnan(p) for p in pmax) and len(set(pmax)) > 1:
            right = ax.twinx()
            right.plot(t, pmax, color="C3", lw=1.2, label="Pmax")
            right.set_ylabel("Pmax", color="C3")
            right.set_ylim(0, 0.55)
        elif rows and not any(r["avg"] for r in rows) and len(set(prob)) > 1:
            right = ax.twinx()
            right.plot(t, prob, color="C3", lw=1.0, label="p")
            right.set_ylabel("marking probability", color="C3")
            right.set_ylim(0, max(prob) * 1.1)
        ax.legend(loc="upper left", fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def bars(labels: Sequence[str], series: dict[str, Sequence[float]], out: Path,
         title: str = "") -> Path:
    """One panel per metric, one bar per run."""
    fig, axes = plt.subplots(1, len(series), figsize=(3.2 * len(series), 3.2), squeeze=False)
    for ax, (metric, values) in zip(axes[0], series.items()):
        ax.bar(range(len(labels)), values, color=[f"C{i}" for i in range(len(labels))],
               capsize=3, **_errors(values))
        ax.set_xticks(range(len(labels)), labels, rotation=35, ha="right", fontsize=8)
        ax.set_title(metric, fontsize=9)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def lines(x_label: str, curves: dict[str, tuple[Sequence[float], Sequence[float]]],
          y_label: str, out: Path, title: str = "", marker: str = "o",
          x_log: bool = False) -> Path:
    """y against x for several algorithms (sweeps, utilisation vs delay, distributions,
    time series with marker=""); repeated runs' 95 % intervals as error bars, on either
    axis."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    if x_log:
        ax.set_xscale("log")
    for name, (xs, ys) in curves.items():
        ax.errorbar(xs, ys, **_errors(ys, "yerr"), **_errors(xs, "xerr"), marker=marker,
                    label=name, capsize=3)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(wrapped(title), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def grouped_bars(groups: Sequence[str], series: dict[str, Sequence[float]], y_label: str,
                 out: Path, title: str = "") -> Path:
    """Per-group values (e.g. goodput of fragile / average / robust) for several runs."""
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        ax.bar([g + k * width for g in range(len(groups))], values, width, label=name,
               capsize=3, **_errors(values))
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)
    ax.set_ylabel(y_label)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(wrapped(title), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def cwnd_over_time(runs: Sequence[tuple[str, Path]], out: Path, title: str = "") -> Path:
    """One panel per run: each flow's congestion window. The userspace transport logs it
    every 10 ms and at every reduction; iperf3 reports Linux's once a second (dots)."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 2.3 * len(runs) + 0.6), sharex=True,
                             squeeze=False)
    for ax, (label, folder) in zip(axes[:, 0], runs):
        for k, path in enumerate(sorted((folder / "flows").glob("flow[0-9][0-9][0-9].json"))):
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if "mecn" in doc:
                log = doc["mecn"]["cwnd"]
                ax.plot([c[0] for c in log], [c[1] for c in log], lw=0.8, color=f"C{k}",
                        label=f"flow {k} ({doc['start']['response']})")
            else:
                mss = doc.get("start", {}).get("tcp_mss_default", 1448)
                points = [(i["streams"][0]["end"], i["streams"][0]["snd_cwnd"] / mss)
                          for i in doc.get("intervals", []) if "snd_cwnd" in i["streams"][0]]
                if points:
                    ax.plot(*zip(*points), "o", ms=3, color=f"C{k}", label=f"flow {k} (kernel)")
        ax.set_ylabel("cwnd (segments)")
        ax.set_title(label, fontsize=9, loc="left")
        if ax.lines:
            ax.legend(loc="upper right", fontsize=7)
        else:
            ax.text(0.5, 0.5, "no cwnd recorded", ha="center", va="center",
                    transform=ax.transAxes)
    axes[-1, 0].set_xlabel("time (s)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
