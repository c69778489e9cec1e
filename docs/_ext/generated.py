"""Sphinx extension: what the pages show from the code and from runs rather than typed
text, so that it cannot drift.

    ```{parameters} red red_ecn
    ```
each algorithm's parameters and defaults, from its configuration class (what
`aqmctl set --help` lists);

    ```{experiment} e5
    ```
the experiment's title, scaling and the paper's claims, from the registry that
`python -m experiments` runs (experiments/catalog.py);

    ```{figures} e5
    ```
every figure under docs/figures/e5/, put there from a run by `python -m analysis.figures`,
with the run it comes from (the PNG's "Source" text); or, before there is one, the command
that puts them there.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from PIL import Image
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class Markdown(SphinxDirective):
    """A directive whose output is Markdown, parsed as the page's own text."""

    required_arguments = 1
    has_content = False

    def render(self, lines: list[str]) -> list[nodes.Node]:
        box = nodes.container()
        self.state.nested_parse(StringList(lines, self.get_source_info()[0]),
                                self.content_offset, box)
        return box.children


class ParametersDirective(Markdown):
    optional_arguments = 20

    def run(self) -> list[nodes.Node]:
        from dataclasses import fields
        from control_plane.algorithms import ALGORITHMS
        from control_plane.cli import shown
        lines = ["| algorithm | parameters (defaults) |", "|---|---|"]
        for name in self.arguments:
            if name not in ALGORITHMS:
                raise self.error(f"no algorithm {name!r} (there are: {', '.join(ALGORITHMS)})")
            cls = ALGORITHMS[name]
            defaults = cls()
            lines.append(f"| `{name}` | " + " ".join(
                f"`{f.name}={shown(getattr(defaults, f.name))}`" for f in fields(cls)) + " |")
        return self.render(lines)


class ExperimentDirective(Markdown):
    def run(self) -> list[nodes.Node]:
        # The registry `python -m experiments list` prints; imported at build time.
        from experiments.catalog import EXPERIMENTS
        name = self.arguments[0]
        if name not in EXPERIMENTS:
            raise self.error(f"no experiment {name!r} (there are: {', '.join(EXPERIMENTS)})")
        e = EXPERIMENTS[name]
        lines = [f"**{e.title}**", "", f"Scaling: {e.scaling}", ""]
        if e.claims:
            lines += ["The paper's claims, as the summary sets them beside ours:", ""]
            lines += [f"- {claim}" for claim in e.claims] + [""]
        lines += [f"Runs per configuration unless `--repeat` says otherwise: {e.repeat}."]
        return self.render(lines)


class FiguresDirective(Markdown):
    option_spec = {"command": str}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        srcdir = Path(self.env.srcdir)
        folder = srcdir / "figures" / name
        command = self.options.get(
            "command", f"python -m analysis.figures experiment results/{name}/<time>")
        pngs = sorted(folder.glob("*.png"))
        if not pngs:
            return self.render([f"No figure of this page's has been published yet: "
                                f"`{command}` puts a run's figures here."])
        lines = []
        for png in pngs:
            self.env.note_dependency(str(png))
            with Image.open(png) as image:
                source = image.text.get("Source")
            if source is None:
                raise self.error(f"{png}: no Source text (publish it with `{command}`)")
            lines += [f"![{png.stem}](/figures/{name}/{png.name})", "",
                      f"*{png.name}, from `{source}`*", ""]
        return self.render(lines + [f"Put here by `{command}`."])


def setup(app: Sphinx) -> dict:
    app.add_directive("parameters", ParametersDirective)
    app.add_directive("experiment", ExperimentDirective)
    app.add_directive("figures", FiguresDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
