"""What the publish commands share (`python -m experiments publish`, `python -m benchmarks
publish`): a published file's name, Markdown tables of rows, and the block a page carries
between the markers below, generated from the published files; the tests regenerate the
blocks and fail if a page differs."""

from __future__ import annotations

from pathlib import Path

END = "<!-- published: end -->"


class PublishError(Exception):
    """What cannot be published or shown: one line saying why."""


def begin(command: str) -> str:
    """The marker that opens a page's generated block, naming the command that writes it."""
    return f"<!-- published: begin ({command} writes this block) -->"


def valid_name(name: str) -> bool:
    """A published name, which makes a file's name and a page's heading: letters, digits,
    - and _ only."""
    return name.isascii() and name.replace("-", "").replace("_", "").isalnum()


def cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def blocks(rows: list[dict]) -> list[list[dict]]:
    """Consecutive rows with the same columns: one table each (E5's RTT rows differ)."""
    out: list[list[dict]] = []
    for row in rows:
        if out and list(out[-1][0]) == list(row):
            out[-1].append(row)
        else:
            out.append([row])
    return out


def table(rows: list[dict]) -> list[str]:
    """Markdown: one table per block of rows with the same columns, a blank line between."""
    lines: list[str] = []
    for block in blocks(rows):
        lines += ([""] if lines else []) + [
            "| " + " | ".join(block[0]) + " |", "|" + "---|" * len(block[0]),
            *["| " + " | ".join(cell(v) for v in row.values()) + " |" for row in block]]
    return lines


def replaced(text: str, block: list[str], opening: str) -> str:
    """The page with its generated block (opened by `opening`, a begin() marker) replaced;
    it must have the markers."""
    if opening not in text or END not in text:
        raise PublishError(f"the page has no block to generate (add {opening} and {END})")
    head, rest = text.split(opening, 1)
    _, tail = rest.split(END, 1)
    return head + opening + "\n\n" + "\n".join(block) + ("\n" if block else "") + END + tail


def rewrite(pages: dict[Path, str]) -> list[Path]:
    """Write each page as it must read; the pages that changed."""
    changed = []
    for page, text in pages.items():
        if page.read_text() != text:
            page.write_text(text)
            changed.append(page)
    return changed
