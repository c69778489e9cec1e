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
with the run it comes from (the PNG's "Source" text); a folder without a figure fails the
build (a page shows no placeholder);

    ```{docstring} control_plane.algorithms.codel
    ```
a module's docstring as the page's own text: an algorithm's one description;

    ```{algorithms}
    ```
the algorithm registry's pages (a table of contents, and a table of each page's files: P4,
golden model, tests); a module of the registry without its page fails the build;

    ```{shared-parts}
    ```
the program's shared parts (build profiles), what each brings and the algorithms that need
it;

    ```{actions}
    ```
each algorithm's aqm_config action, its parameters and the tables it reads;

    ```{decides-at}
    ```
where the ns-3 twin decides each algorithm by default, by its prose name: its class's
decides_at.
"""

from __future__ import annotations

import importlib
import inspect
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
    """Every algorithm's parameters without an argument."""

    required_arguments = 0
    optional_arguments = 20

    def run(self) -> list[nodes.Node]:
        from dataclasses import fields
        from control_plane.algorithms import ALGORITHMS
        from control_plane.cli import shown
        lines = ["| algorithm | parameters (defaults) |", "|---|---|"]
        for name in self.arguments or ALGORITHMS:
            if name not in ALGORITHMS:
                raise self.error(f"no algorithm {name!r} (there are: {', '.join(ALGORITHMS)})")
            cls = ALGORITHMS[name]
            defaults = cls()
            lines.append(f"| `{name}` | " + " ".join(
                f"`{f.name}={shown(getattr(defaults, f.name))}`" for f in fields(cls)) + " |")
        return self.render(lines)


class DocstringDirective(Markdown):
    def run(self) -> list[nodes.Node]:
        try:
            module = importlib.import_module(self.arguments[0])
        except ImportError as err:
            raise self.error(f"no module {self.arguments[0]!r}: {err}") from None
        self.env.note_dependency(module.__file__)
        text = inspect.getdoc(module)
        if not text:
            raise self.error(f"{self.arguments[0]} has no docstring")
        return self.render(text.splitlines())


def algorithm_pages() -> dict[str, list]:
    """Each page under docs/algorithms/ (named like the module) and its algorithms, in the
    registry's order."""
    from control_plane.algorithms import ALGORITHMS
    pages: dict[str, list] = {}
    for cls in ALGORITHMS.values():
        pages.setdefault(cls.__module__.rsplit(".", 1)[-1], []).append(cls)
    return pages


class AlgorithmsDirective(Markdown):
    required_arguments = 0

    def run(self) -> list[nodes.Node]:
        here = Path(self.env.doc2path(self.env.docname)).parent
        pages = algorithm_pages()
        lines = ["```{toctree}", ":maxdepth: 1", "", *pages, "```", "",
                 "| page | algorithms | P4 | golden model | tests |", "|---|---|---|---|---|"]
        for page, classes in pages.items():
            if not (here / f"{page}.md").is_file():
                raise self.error(f"{page}.md: the page of {classes[0].__module__} is missing")
            p4 = f"p4src/include/aqm/{page}.p4"
            lines.append(
                f"| []({page}.md) | {', '.join(f'`{c.action}`' for c in classes)} | "
                f"`{p4}` | `control_plane/algorithms/{page}.py` | "
                f"`tests/algorithms/test_{page}.py` |")
        return self.render(lines)


class ActionsDirective(Markdown):
    """Each algorithm's aqm_config action and its parameters (with its defaults), the
    tables it reads, and its page."""

    required_arguments = 0

    def run(self) -> list[nodes.Node]:
        from control_plane.algorithms import ALGORITHMS
        from control_plane.algorithms.base import Link
        lines = ["| action | algorithm (file under `p4src/include/aqm/`) |", "|---|---|"]
        for name, cls in ALGORITHMS.items():
            encoded = cls().encode(Link(1000.0))
            page = cls.__module__.rsplit(".", 1)[-1]
            tables = [t.table for t in encoded.tables] + [r.table for r in encoded.rules]
            lines.append(f"| `{name}({', '.join(encoded.action.params)})` | "
                         f"[](../algorithms/{page}.md) (`{page}.p4`)"
                         + (f"; tables {', '.join(f'`{t}`' for t in tables)}" if tables else "")
                         + " |")
        return self.render(lines)


class SharedPartsDirective(Markdown):
    required_arguments = 0

    def run(self) -> list[nodes.Node]:
        from control_plane.algorithms import ALGORITHMS
        from control_plane.profiles import DRAWS, SHARED_PARTS
        lines = ["| part | what it brings | needed by |", "|---|---|---|"]
        for part, brings in SHARED_PARTS.items():
            users = [f"`{name}`" for name, cls in ALGORITHMS.items() if part in cls.parts]
            lines.append(f"| `{part}` | {brings} | {', '.join(users)} |")
        users = [f"`{name}`" for name, cls in ALGORITHMS.items() if cls.draws]
        lines.append(f"| `{DRAWS}` | the prologue's one random draw per packet "
                     f"(control/prologue.p4) | {', '.join(users)} |")
        return self.render(lines)


class OptionalPartsDirective(Markdown):
    required_arguments = 0

    def run(self) -> list[nodes.Node]:
        from control_plane.profiles import OPTIONAL_PARTS, _option
        lines = ["| part | left out by | what it is, and what leaving it out costs |",
                 "|---|---|---|"]
        for part, what in OPTIONAL_PARTS.items():
            lines.append(f"| `{part}` | `+{_option(part)}`, `+lean` | {what} |")
        return self.render(lines)


class DecidesAtDirective(Markdown):
    required_arguments = 0
    # Aqm.decides_at's values, in the order the list shows them.
    PLACES = {"arrival": "on arrival",
              "departure": "as the packet leaves (at dequeue, or at the front of the queue "
                           "with what the arrivals decided)"}

    def run(self) -> list[nodes.Node]:
        from control_plane.algorithms import ALGORITHMS
        names: dict[str, list[str]] = {place: [] for place in self.PLACES}
        without = []
        for cls in ALGORITHMS.values():
            if cls.control is None:
                without.append(cls.prose_name)
            elif cls.decides_at in names:
                names[cls.decides_at].append(cls.prose_name)
            else:
                raise self.error(f"{cls.__name__}.decides_at is {cls.decides_at!r}, not one "
                                 f"of {', '.join(self.PLACES)}")
        lines = [f"- {self.PLACES[place]}: {', '.join(listed)}."
                 for place, listed in names.items() if listed]
        if without:
            lines.append(f"- nowhere (no control, only the hard limit): {', '.join(without)}.")
        return self.render(lines)


class ExperimentDirective(Markdown):
    def run(self) -> list[nodes.Node]:
        # The registry `python -m experiments list` prints; imported at build time.
        from experiments.catalog import EXPERIMENTS
        name = self.arguments[0]
        if name not in EXPERIMENTS:
            raise self.error(f"no experiment {name!r} (there are: {', '.join(EXPERIMENTS)})")
        from experiments.base import TWIN_REPEAT
        e = EXPERIMENTS[name]
        lines = [f"**{e.title}**", "", f"Scaling on the switch: {e.scaling}", ""]
        if e.paper_scaling:
            lines += [f"In the [ns-3 twin](/experiments/twin.md) (`--backend ns3`), the paper's "
                      f"own scale: {e.paper_scaling}", ""]
        else:
            lines += ["In the [ns-3 twin](/experiments/twin.md) (`--backend ns3`): the same "
                      "plan as on the switch.", ""]
        if e.claims:
            lines += ["The paper's claims, as the summary sets them beside ours:", ""]
            lines += [f"- {claim}" for claim in e.claims] + [""]
        lines += [f"Runs per configuration unless `--repeat` says otherwise: {e.repeat} on the "
                  f"switch, {TWIN_REPEAT} in the twin."]
        return self.render(lines)


# The figures not drawn from an experiment's folder, and the command that draws them.
FIGURE_COMMANDS = {
    "head-to-head": "python -m analysis.figures head-to-head docs/results/bench/<run>.json"}


class FiguresDirective(Markdown):
    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        srcdir = Path(self.env.srcdir)
        folder = srcdir / "figures" / name
        command = FIGURE_COMMANDS.get(
            name, f"python -m analysis.figures experiment results/{name}/<time>")
        pngs = sorted(folder.glob("*.png"))
        if not pngs:
            raise self.error(f"no figure in docs/figures/{name}/: publish a run's "
                             f"(`{command}`), or show none")
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
    app.add_directive("docstring", DocstringDirective)
    app.add_directive("algorithms", AlgorithmsDirective)
    app.add_directive("shared-parts", SharedPartsDirective)
    app.add_directive("optional-parts", OptionalPartsDirective)
    app.add_directive("actions", ActionsDirective)
    app.add_directive("decides-at", DecidesAtDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
