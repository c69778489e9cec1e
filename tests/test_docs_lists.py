"""Every list the docs and the README type by hand, checked against the code it lists: the
algorithms (the registry: the README's table, their families, those on RED's average,
where the twin page's prose says they decide; the introductions link to every one),
aqmctl's commands, options and choices (its click group), a port's fields, the factors
and their values, the transports, the experiments (the catalog: their pages, make targets
and repeats), which of them each command-line option changes, and the source build's
steps. A new algorithm without its README row, or factor, transport, experiment or
subcommand without its line in the docs, fails here, and so does a line the code lost; so
does a page naming a run under results/, which is not committed.

Each check is a function returning what is missing or left over, so that the drift tests
below can hand it the code's list with one item too many (or the page with one line too
many) and see it fail: a check that cannot fail would prove nothing.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable
from pathlib import Path

import click
import pytest

from control_plane import cli
from control_plane.adaptation import AlphaVariant
from control_plane.algorithms import ALGORITHMS
from control_plane.aqm import PORT_FIELDS, NoAqm
from control_plane.config_file import PORT_KEYS, TOP_LEVEL
from control_plane.controller import LoopKind
from experiments import factors
from experiments.base import TWIN_REPEAT, PlanOptions
from experiments.catalog import EXPERIMENTS, MODULES
from experiments.spec import TRANSPORTS
from tooling import source_build
from transport.reno import Response

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"

# How prose names each algorithm of the registry: its class's prose_name (one without it
# fails test_every_algorithm_has_its_prose_name).
PROSE_NAMES = {name: cls.prose_name for name, cls in ALGORITHMS.items()
               if hasattr(cls, "prose_name")}


def read(path: str) -> str:
    return (REPO / path).read_text()


def first_paragraph(text: str) -> str:
    """The text between the page's title and its first figure, block or section."""
    body = text.split("\n", 1)[1]
    return re.split(r"\n(?:!\[|```|#)", body, maxsplit=1)[0]


def section(text: str, title: str) -> str:
    """A `## title` section of a page, up to the next one."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert found, f"no section {title!r}"
    return found.group(1)


def names_missing(text: str, names: Iterable[str]) -> list[str]:
    """The names the text does not use as words ("PI" is not in "PI2" or "DualPI2")."""
    return [n for n in names if not re.search(rf"(?<![\w+]){re.escape(n)}(?![\w+])", text)]


def experiments_named(text: str) -> set[str]:
    """The experiments a text names: E5, E2-E4, and the catalog's other modules by name."""
    named = {f"e{i}" for a, b in re.findall(r"\bE(\d+)\s*[-–]\s*E(\d+)\b", text)
             for i in range(int(a), int(b) + 1)}
    named |= {f"e{i}" for i in re.findall(r"\bE(\d+)\b", text)}
    named |= {m for m in MODULES if not re.fullmatch(r"e\d+", m)
              and re.search(rf"\b{m}\b", text)}
    return named


# ----- algorithms ----------------------------------------------------------------------------

def prose_name_problems(algorithms: dict) -> list[str]:
    """Each class names itself (a subclass does not take its parent's name: RED+ECN is not
    RED), and no two alike."""
    problems = [f"{name}: {cls.__name__} has no prose_name of its own"
                for name, cls in algorithms.items() if "prose_name" not in vars(cls)]
    seen: dict[str, str] = {}
    for name, cls in algorithms.items():
        prose = getattr(cls, "prose_name", None)
        if prose in seen:
            problems.append(f"{name}: prose_name {prose!r} is {seen[prose]}'s too")
        seen.setdefault(prose, name)
    return problems


def test_every_algorithm_has_its_prose_name():
    assert prose_name_problems(ALGORITHMS) == []


# The introductions name the algorithms a newcomer has heard of, "among them"; each links to
# the list of every one (the README's table, checked below; the generated algorithms page).
INTRODUCTIONS = {"README.md": "(#the-algorithms)", "docs/index.md": "(algorithms/index.md)"}


def introduction_problems(page: str, link: str) -> list[str]:
    """The first paragraph links to the list of every algorithm."""
    return [] if link in first_paragraph(page) else [
        f"the first paragraph has no link {link} to the list of every algorithm"]


@pytest.mark.parametrize("page", INTRODUCTIONS)
def test_the_introductions_link_to_every_algorithm(page):
    assert introduction_problems(read(page), INTRODUCTIONS[page]) == []


def readme_table_problems(readme: str, names: Iterable[str]) -> list[str]:
    """The README's table of the algorithms: each algorithm's prose name in the first cell
    of a row (a row may name several: RED's family), and each row naming one of them (its
    cells are written by hand, so the table is checked rather than generated)."""
    names = list(names)
    cells = [line.split("|")[1].strip()
             for line in section(readme, "The algorithms").splitlines()
             if line.startswith("| ") and not line.startswith("| algorithm |")]
    problems = [f"{name}: no row in the README's table"
                for name in names_missing(" / ".join(cells), names)]
    problems += [f"the README's row {cell!r} names no algorithm of the registry"
                 for cell in cells if len(names_missing(cell, names)) == len(names)]
    return problems


def test_the_readme_table_has_a_row_for_each_algorithm_and_none_other():
    assert readme_table_problems(read("README.md"), PROSE_NAMES.values()) == []


def example_lists_problems(toml: str, algorithms: Iterable[str],
                           loops: Iterable[str]) -> list[str]:
    """docs/aqm.toml's comments: the algorithm's says where every one is listed (`aqmctl
    set --help`, from the registry) and the loop's lists every loop; each port's algorithm
    is one the file takes."""
    problems = []
    comment = re.search(r"^algorithm = .*?# (.*)$", toml, re.M).group(1)
    if not re.fullmatch(rf"{NoAqm.action}, or an algorithm: aqmctl set --help lists them",
                        comment):
        problems.append(f"the algorithm comment {comment!r} does not send to aqmctl set --help")
    taken = {NoAqm.action, *algorithms}
    problems += [f"algorithm {a}: the file takes none such"
                 for a in re.findall(r'^algorithm = "(\w+)"', toml, re.M) if a not in taken]
    loop = re.search(r"^#? ?loop = .*?# optional: ([\w |]+)", toml, re.M).group(1)
    if [w.strip() for w in loop.split("|")] != list(loops):
        problems.append(f"the loop comment lists {loop}, the controller has {list(loops)}")
    return problems


def test_the_example_configuration_lists_every_algorithm_and_loop():
    assert example_lists_problems(read("docs/aqm.toml"), ALGORITHMS,
                                  typing.get_args(LoopKind)) == []


def configuration_problems(page: str, top_level: Iterable[str], port_keys: Iterable[str],
                           port_fields: Iterable[str], loops: Iterable[str],
                           alphas: Iterable[str]) -> list[str]:
    """docs/controller/configuration.md's table of keys: a row for every key the file takes
    (`[[port]]`-style for the arrays of tables), no other; the `[[port]]` row names every
    key of a port and the values of `loop` and `alpha_variant`."""
    rows = [line.split(" | ") for line in section(page, "Keys").splitlines()
            if line.startswith("| `")]
    keys = {re.fullmatch(r"\| `(?:\[\[)?(\w+)(?:\]\])?`", row[0]).group(1): row[1]
            for row in rows}
    problems = [f"key {k}: no row" for k in top_level if k not in keys]
    problems += [f"key {k}: the file takes none" for k in keys if k not in set(top_level)]
    port_row = keys.get("port", "")
    named = set(re.findall(r"`(\w+)`", port_row))
    problems += [f"[[port]] {k}: not named" for k in (*port_keys, *port_fields, "target_delay")
                 if k not in named]
    problems += [f"[[port]] {v}: not named" for v in (*loops, *alphas) if v not in named]
    return problems


def test_the_configuration_page_has_every_key():
    assert configuration_problems(read("docs/controller/configuration.md"), TOP_LEVEL,
                                  PORT_KEYS, PORT_FIELDS, typing.get_args(LoopKind),
                                  typing.get_args(AlphaVariant)) == []


def prose_named(text: str) -> set[str]:
    """The registry's algorithms a text names by their prose names."""
    return {name for name, prose in PROSE_NAMES.items() if not names_missing(text, [prose])}


def bullet(page: str, start: str) -> str:
    """The list item of a page that begins with `start`, up to the next item or paragraph."""
    found = re.search(rf"^- {re.escape(start)}(.*?)(?=^- |^\n|\Z)", page, re.M | re.S)
    assert found, f"no item {start!r}"
    return found.group(1)


def red_average_problems(page: str, algorithms: dict) -> list[str]:
    """docs/algorithms/index.md: the algorithms deciding on RED's average are those that run
    RED's control."""
    said = prose_named(bullet(page, "The RED family"))
    runs = {name for name, cls in algorithms.items() if cls.control == "Red"}
    return [] if said == runs else [f"the page says {sorted(said)}, RED's control runs "
                                    f"{sorted(runs)}"]


def test_the_algorithms_page_names_those_on_red_s_average():
    assert red_average_problems(read("docs/algorithms/index.md"), ALGORITHMS) == []


def decides_at_problems(page: str, algorithms: dict) -> list[str]:
    """docs/experiments/twin.md: the list of where the twin decides each algorithm by
    default is the generated one ({decides-at}, from the classes' decides_at); the prose on
    deciding on arrival and as the packet leaves names only algorithms that decide there."""
    text = section(page, "Where the AQM decides")
    problems = [] if re.search(r"^```\{decides-at\}\n```", text, re.M) else [
        "no {decides-at} list"]
    for at, start in (("arrival", "On arrival, "), ("departure", "As the packet leaves: ")):
        found = re.search(rf"^{start}(.*?)(?=\n\n|\Z)", text, re.M | re.S)
        if not found:
            problems.append(f"no paragraph {start!r}")
            continue
        named = {name for name in prose_named(found.group(1))
                 if algorithms[name].control is not None}
        problems += [f"{name}: the page says {at}, its class {algorithms[name].decides_at}"
                     for name in sorted(named) if algorithms[name].decides_at != at]
    return problems


def test_the_twin_page_says_where_each_algorithm_decides():
    assert decides_at_problems(read("docs/experiments/twin.md"), ALGORITHMS) == []


def port_field_problems(page: str, port_fields: Iterable[str]) -> list[str]:
    """A page's sentence on what every port takes names every field of a port."""
    sentence = re.search(r"[Ee]very port also takes (.*?)\.\n", page, re.S)
    assert sentence, "no sentence on what every port takes"
    named = set(re.findall(r"`(\w+)`", sentence.group(1)))
    return [f"port field {f} not named" for f in port_fields if f not in named]


def test_the_algorithms_page_names_what_every_port_takes():
    assert port_field_problems(read("docs/algorithms/index.md"), PORT_FIELDS) == []


# ----- aqmctl --------------------------------------------------------------------------------

def command_rows(page: str) -> dict[str, str]:
    """The commands table of docs/controller/aqmctl.md: each command's row(s)."""
    rows: dict[str, str] = {}
    for line in section_before_first(page).splitlines():
        used = re.findall(r"`aqmctl (\w[\w-]*)", line.split(" | ")[0])
        for name in set(used):
            rows[name] = rows.get(name, "") + line
    return rows


def section_before_first(page: str) -> str:
    return page.split("\n## ", 1)[0]


def aqmctl_problems(page: str, group: click.Group) -> list[str]:
    """Every command has a row naming each of its options (by one of its flags) and every
    choice they take; every `--flag` a row names is the command's; the group's own options
    are shown before a command, never after one."""
    rows = command_rows(page)
    problems = [f"no row for `aqmctl {name}`" for name in group.commands if name not in rows]
    problems += [f"`aqmctl {name}`: no such command" for name in rows
                 if name not in group.commands]
    for name, command in group.commands.items():
        row = rows.get(name, "")
        flags = set()
        for param in command.params:
            if isinstance(param, click.Option):
                flags |= set(param.opts)
                if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", row)
                           for o in param.opts):
                    problems.append(f"aqmctl {name}: {'/'.join(param.opts)} not shown")
            if isinstance(param.type, click.Choice):
                problems += [f"aqmctl {name} {'/'.join(param.opts)}: choice {c} not shown"
                             for c in param.type.choices if c not in row]
        problems += [f"aqmctl {name}: no option {flag}" for flag in
                     re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", row.split(" | ")[0])
                     if flag not in flags | {"--help", "-h"}]
    for param in group.params:
        for flag in param.opts:
            if f"aqmctl {flag} " not in page:
                problems.append(f"aqmctl {flag} is not shown before a command")
            if re.search(rf"`aqmctl \w+ [^`]*{flag}\b", page):
                problems.append(f"{flag} shown after a command")
    return problems


def test_the_aqmctl_page_shows_every_command_option_and_choice():
    assert aqmctl_problems(read("docs/controller/aqmctl.md"), cli.main) == []


def set_list_problems(page: str, algorithms: dict, port_fields: Iterable[str]) -> list[str]:
    """The page's list of algorithms and parameters is the generated one ({parameters}, for
    every algorithm); its sentence on what every port takes names the port's fields and the
    algorithms with an automatic mode."""
    problems = [] if re.search(r"^```\{parameters\}\n```", page, re.M) else [
        "no {parameters} table of every algorithm"]
    if f"`{NoAqm.action}`" not in page:
        problems.append(f"{NoAqm.action} not shown")
    problems += port_field_problems(page, port_fields)
    sentence = re.search(r"Every port also takes (.*?)\.\n", page, re.S).group(1)
    named = set(re.findall(r"`(\w+)`", sentence))
    automatic = {name for name, cls in algorithms.items() if cls.target_delay_sets}
    if named & set(algorithms) != automatic:
        problems.append(f"target_delay's algorithms: {sorted(named & set(algorithms))}, "
                        f"not {sorted(automatic)}")
    return problems


def test_the_aqmctl_page_lists_every_algorithm_and_what_every_port_takes():
    assert set_list_problems(read("docs/controller/aqmctl.md"), ALGORITHMS, PORT_FIELDS) == []


def family_problems(page: str, algorithms: dict) -> list[str]:
    """docs/controller/aqmctl.md names each family within which a change of algorithm keeps
    the shared parameters, with all its algorithms (their `family`)."""
    found = re.search(r"shared parameter within a family \((.*?)\) and only",
                      " ".join(page.split()))
    assert found, "no sentence on the families"
    said = sorted(sorted(prose_named(group)) for group in found.group(1).split(";"))
    families: dict[str, list[str]] = {}
    for name, cls in algorithms.items():
        if cls.family:
            families.setdefault(cls.family, []).append(name)
    wanted = sorted(sorted(names) for names in families.values())
    return [] if said == wanted else [f"the page's families {said}, the registry's {wanted}"]


def test_the_aqmctl_page_names_every_family():
    assert family_problems(read("docs/controller/aqmctl.md"), ALGORITHMS) == []


# ----- factors and transports ---------------------------------------------------------------

def choices(factor: factors.Factor) -> list[str] | None:
    """The values a factor takes, as its refusal lists them (None: a number)."""
    try:
        factor.parse("\0")
    except factors.FactorError as err:
        listed = re.search(r"is not one of (.*)$|is not (0 or 1)$", str(err))
        if listed is None:
            return None
        return listed.group(1).split(", ") if listed.group(1) else ["0", "1"]
    raise AssertionError("a factor took NUL")


def factor_problems(page: str, table: dict[str, factors.Factor]) -> list[str]:
    """docs/experiments/factors.md's table: a row naming each factor as `name=...`, the
    values of a factor that takes a few written out as `name=a/b/c`."""
    cells = [line.split(" | ")[0] for line in page.splitlines() if line.startswith("| `")]
    shown = dict(re.findall(r"`(\w+)=([^`]*)`", "\n".join(cells)))
    problems = [f"factor {name}: no row" for name in table if name not in shown]
    problems += [f"factor {name}: no such factor" for name in shown if name not in table]
    for name, factor in table.items():
        values = choices(factor)
        if name in shown and values is not None and shown[name].split("/") != values:
            problems.append(f"factor {name}: the page says {shown[name]}, it takes "
                            f"{'/'.join(values)}")
    return problems


def test_every_factor_and_its_values_have_their_row():
    assert factor_problems(read("docs/experiments/factors.md"), factors.FACTORS) == []


def transport_problems(page: str, transports: Iterable[str],
                       responses: Iterable[str]) -> list[str]:
    """docs/experiments/transport.md names every transport a flow takes and every response
    of the userspace sender."""
    flow = re.search(r'`Flow\(transport=(.*?)\)`', page).group(1)
    listed = re.findall(r'"(\w+)"', flow)
    problems = [] if sorted(listed) == sorted(transports) else [
        f"Flow(transport=...) lists {listed}, a flow takes {sorted(transports)}"]
    problems += [f"--response {r} not shown" for r in responses
                 if f"--response {r}" not in page]
    return problems


def userspace_problems(page: str, experiments: dict) -> list[str]:
    """docs/experiments/transport.md says which experiments run userspace senders."""
    found = re.search(r"By default (.*?) run userspace senders", " ".join(page.split()))
    assert found, "no sentence on which experiments run userspace senders"
    used = {name for name, e in experiments.items()
            if any(f.transport != "kernel" for s in e.plan(PlanOptions()) for f in s.flows)}
    said = experiments_named(found.group(1))
    return [] if said == used else [f"the page says {sorted(said)}, the plans {sorted(used)}"]


def test_the_transport_page_names_the_experiments_with_userspace_senders():
    assert userspace_problems(read("docs/experiments/transport.md"), EXPERIMENTS) == []


def test_the_transport_page_names_every_transport_and_response():
    assert transport_problems(read("docs/experiments/transport.md"), TRANSPORTS,
                              [r.value for r in Response]) == []


# ----- experiments ---------------------------------------------------------------------------

def repeats_problems(page: str, repeats: dict[str, int], twin: int) -> list[str]:
    """docs/experiments/repeats.md's default repeats: `default on the switch: 3 for E1-E9,
    1 for ...; in the [ns-3 twin](twin.md): 10 for every one`."""
    found = re.search(r"default on the switch: (.*?); in the \[ns-3 twin\]\(twin\.md\): "
                      r"(\d+) for every one", " ".join(page.split()))
    assert found, "no sentence on the default repeats"
    said = {int(n): experiments_named(names)
            for n, names in re.findall(r"(\d+) for (.*?)(?=, \d+ for|$)", found.group(1))}
    wanted: dict[int, set[str]] = {}
    for name, n in repeats.items():
        wanted.setdefault(n, set()).add(name)
    problems = [] if said == wanted else [f"the page says {said}, the catalog {wanted}"]
    if int(found.group(2)) != twin:
        problems.append(f"the twin's repeats: the page says {found.group(2)}, not {twin}")
    return problems


def test_the_default_repeats_are_the_catalog_s():
    assert repeats_problems(read("docs/experiments/repeats.md"),
                            {name: e.repeat for name, e in EXPERIMENTS.items()},
                            TWIN_REPEAT) == []


def run_help(capsys) -> str:
    from experiments.cli import main
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    return capsys.readouterr().out


def option_help(help_text: str, option: str) -> str:
    found = re.search(rf"^  {option}(?: [A-Z]+)?\s+(.*?)(?=^  -|\Z)", help_text, re.M | re.S)
    assert found, option
    return " ".join(found.group(1).split())


# Each option that changes some experiments' plans, as PlanOptions takes it.
PLAN_OPTIONS = {"--full": {"full": True}, "--kernel-tcp": {"kernel_tcp": True},
                "--loss": {"loss": 0.01}}


def changed_by(experiments: dict, option: dict) -> set[str]:
    return {name for name, e in experiments.items()
            if e.plan(PlanOptions()) != e.plan(PlanOptions(**option))}


def option_problems(text: str, option: str, experiments: dict) -> list[str]:
    said, changed = experiments_named(text), changed_by(experiments, PLAN_OPTIONS[option])
    return [] if said == changed else [f"{option}'s help names {sorted(said)}, it changes "
                                       f"{sorted(changed)}"]


@pytest.mark.parametrize("option", PLAN_OPTIONS)
def test_an_option_s_help_names_the_experiments_it_changes(option, capsys):
    """`python -m experiments run --help`: --full names E5, E6 and E8, whose plans it
    changes, and no other."""
    assert option_problems(option_help(run_help(capsys), option), option, EXPERIMENTS) == []


def layout_problems(page: str, modules: Iterable[str]) -> list[str]:
    """docs/layout.md's experiments row lists the catalog's modules."""
    row = next(line for line in page.splitlines() if line.startswith("| `experiments/`"))
    listed = re.search(r"one module per experiment \(([^:]*):", row).group(1)
    named = re.findall(r"`(\w+)`", listed)
    return [] if sorted(named) == sorted(modules) else [
        f"the map lists {named}, the catalog {sorted(modules)}"]


def test_the_repository_map_lists_every_experiment():
    assert layout_problems(read("docs/layout.md"), MODULES) == []


# smoke checks the set-up rather than a paper: the experiments' index describes it.
PAGELESS = {"smoke"}


def experiment_page_problems(pages: Iterable[str], index: str, modules: Iterable[str],
                             makefile: str) -> list[str]:
    """Every experiment has its page (its ```{experiment}``` block) or, for one of PAGELESS,
    its paragraph in docs/experiments/index.md; and its make target (`make run` for the
    demo)."""
    shown = {m for page in pages for m in re.findall(r"^```\{experiment\} (\w+)", page, re.M)}
    problems = [f"{m}: no page" for m in modules if m not in shown and m not in PAGELESS]
    problems += [f"{m}: not in the index" for m in PAGELESS
                 if f"python -m experiments run {m}" not in index]
    targets = set(re.search(r"^EXPERIMENTS := (.*)$", makefile, re.M).group(1).split())
    targets |= set(re.search(r"^\$\(EXPERIMENTS\) ([\w ]*):", makefile, re.M).group(1).split())
    targets |= set(re.findall(r"^\t\$\(PY\) -m experiments run (\w+)$", makefile, re.M))
    problems += [f"{m}: no make target" for m in modules if m not in targets]
    return problems


def experiment_pages() -> list[str]:
    return [p.read_text() for p in sorted((DOCS / "experiments").glob("*.md"))]


def test_every_experiment_has_its_page_and_make_target():
    assert experiment_page_problems(experiment_pages(), read("docs/experiments/index.md"),
                                    MODULES, read("Makefile")) == []


# ----- the source build ----------------------------------------------------------------------

def build_step_problems(page: str, plan: Iterable[str]) -> list[str]:
    """docs/install.md's numbered steps of `make setup P4=source`: packages and sources, then
    the plan's steps, in its order."""
    listed = [name for line in page.splitlines() if re.match(r"\d+\. \*\*", line)
              for name in re.findall(r"\*\*([\w-]+)\*\*", line.split(":")[0])]
    wanted = ["packages", "sources", *plan]
    return [] if listed == wanted else [f"the page lists {listed}, the build runs {wanted}"]


def build_plan() -> list[str]:
    """The plan's step names (making the plan writes nothing)."""
    layout = source_build.Layout(REPO / ".toolchain", REPO / ".toolchain" / "work")
    sources = source_build.Sources(source_build.DEFAULT_SOURCES, {}, layout.cache)
    return [step.name for step in source_build.steps(layout, sources)]


def test_the_install_page_lists_the_source_build_s_steps_in_order():
    assert build_step_problems(read("docs/install.md"), build_plan()) == []


# ----- results -------------------------------------------------------------------------------

# A path into results/ that names one run by its time (git ignores results/: a reader
# cannot open it; published runs are under docs/results/).
RUN_PATH = re.compile(r"(?<![\w/])results/[^\s`)\]]*\d{8}-\d{6}[^\s`)\]]*")


def uncommitted_problems(texts: dict[str, str]) -> list[str]:
    return [f"{name}: {path}" for name, text in texts.items() for path in RUN_PATH.findall(text)]


def doc_texts() -> dict[str, str]:
    pages = sorted(p for p in DOCS.rglob("*.md") if "_ext" not in p.parts)
    return {str(p.relative_to(REPO)): p.read_text() for p in [REPO / "README.md", *pages]}


def test_no_page_names_an_uncommitted_run():
    assert uncommitted_problems(doc_texts()) == []


# ----- each check fails when its list drifts -------------------------------------------------

def fake_command() -> click.Group:
    """aqmctl with one subcommand more, and one option more on `events`."""
    group = click.Group("aqmctl", params=cli.main.params)
    for name, command in cli.main.commands.items():
        group.add_command(command, name)
    group.add_command(click.Command("replay", params=[click.Option(["--speed"])]), "replay")
    events = click.Command("events", params=[*cli.main.commands["events"].params,
                                             click.Option(["--follow"], is_flag=True)])
    group.add_command(events, "events")
    return group


DRIFTS = {
    "an algorithm without its README row": lambda: readme_table_problems(
        read("README.md"), [*PROSE_NAMES.values(), "FAKE"]),
    "a README row of no algorithm": lambda: readme_table_problems(
        read("README.md").replace("| DropTail |", "| FAKE | - | - | - | - |\n| DropTail |"),
        PROSE_NAMES.values()),
    "an algorithm the example sets": lambda: example_lists_problems(
        read("docs/aqm.toml").replace('algorithm = "red_ecn"', 'algorithm = "fake"'),
        ALGORITHMS, typing.get_args(LoopKind)),
    "an algorithm listed in the example's comment": lambda: example_lists_problems(
        read("docs/aqm.toml").replace("# none, or an algorithm:", "# none | red | fake:"),
        ALGORITHMS, typing.get_args(LoopKind)),
    "a loop in the example's comment": lambda: example_lists_problems(
        read("docs/aqm.toml"), ALGORITHMS, [*typing.get_args(LoopKind), "fake"]),
    "a configuration key": lambda: configuration_problems(
        read("docs/controller/configuration.md"), [*TOP_LEVEL, "fake"], ["fake_port"],
        PORT_FIELDS, typing.get_args(LoopKind), ["fake_alpha"]),
    "an aqmctl subcommand and option": lambda: aqmctl_problems(
        read("docs/controller/aqmctl.md"), fake_command()),
    "a flag the page invents": lambda: aqmctl_problems(
        read("docs/controller/aqmctl.md").replace("`aqmctl events [--since N]`",
                                                 "`aqmctl events [--since N] [--tail]`"),
        cli.main),
    "--socket after the command": lambda: aqmctl_problems(
        read("docs/controller/aqmctl.md") + "\n`aqmctl show --socket /tmp/s`\n", cli.main),
    "a port field": lambda: set_list_problems(
        read("docs/controller/aqmctl.md"), ALGORITHMS, [*PORT_FIELDS, "fake_field"]),
    "an algorithm with an automatic mode": lambda: set_list_problems(
        read("docs/controller/aqmctl.md"),
        {**ALGORITHMS, "codel": type("Auto", (), {"target_delay_sets": ("target",)})},
        PORT_FIELDS),
    "a factor": lambda: factor_problems(
        read("docs/experiments/factors.md"),
        {**factors.FACTORS, "fake": factors.FACTORS["buffer"]}),
    "a factor's value": lambda: factor_problems(
        read("docs/experiments/factors.md"),
        {**factors.FACTORS, "transport": factors.Factor(
            "", factors._choice((*TRANSPORTS, "fake")), factors._transport)}),
    "a transport": lambda: transport_problems(
        read("docs/experiments/transport.md"), [*TRANSPORTS, "fake"],
        [r.value for r in Response]),
    "a response": lambda: transport_problems(
        read("docs/experiments/transport.md"), TRANSPORTS,
        [*(r.value for r in Response), "fake"]),
    "an experiment with userspace senders": lambda: userspace_problems(
        read("docs/experiments/transport.md"),
        {**EXPERIMENTS, "e10": type("E", (), {"plan": lambda self, o: EXPERIMENTS[
            "e2"].plan(o)})()}),
    "an experiment's repeats": lambda: repeats_problems(
        read("docs/experiments/repeats.md"),
        {**{name: e.repeat for name, e in EXPERIMENTS.items()}, "e10": 3}, TWIN_REPEAT),
    "an experiment in the map": lambda: layout_problems(read("docs/layout.md"),
                                                        [*MODULES, "e10"]),
    "an option's experiments": lambda: option_problems(
        "E5, E6 and E8: the whole plan", "--full",
        {**EXPERIMENTS, "e10": type("E", (), {"plan": lambda self, o: [o.full]})()}),
    "a prose name of its own": lambda: prose_name_problems(
        {**ALGORITHMS, "fake": type("Fake", (ALGORITHMS["red"],), {})}),
    "an introduction without its link": lambda: introduction_problems(
        read("docs/index.md").replace("(algorithms/index.md)", "(fake.md)"),
        "(algorithms/index.md)"),
    "an algorithm on RED's average": lambda: red_average_problems(
        read("docs/algorithms/index.md"),
        {**ALGORITHMS, "codel": type("C", (), {"control": "Red"})}),
    "where an algorithm decides": lambda: decides_at_problems(
        read("docs/experiments/twin.md"),
        {**ALGORITHMS, "codel": type("C", (), {"control": "Codel", "decides_at": "arrival"})}),
    "where an algorithm decides, not generated": lambda: decides_at_problems(
        read("docs/experiments/twin.md").replace("{decides-at}", "{fake}"), ALGORITHMS),
    "a port field on the algorithms' page": lambda: port_field_problems(
        read("docs/algorithms/index.md"), [*PORT_FIELDS, "fake_field"]),
    "a family": lambda: family_problems(
        read("docs/controller/aqmctl.md"), {**ALGORITHMS, "codel": type("C", (), {
            "family": "red"})}),
    "an experiment's page and target": lambda: experiment_page_problems(
        experiment_pages(), read("docs/experiments/index.md"), [*MODULES, "e10"],
        read("Makefile")),
    "a source build's step": lambda: build_step_problems(
        read("docs/install.md"), [*build_plan(), "fake-build"]),
    "an uncommitted run": lambda: uncommitted_problems(
        {"README.md": read("README.md") + "\n`results/fake/20261201-000000/summary.md`\n"}),
}


@pytest.mark.parametrize("drift", DRIFTS)
def test_each_check_fails_when_its_list_drifts(drift):
    problems = DRIFTS[drift]()
    assert problems, f"{drift}: the check found nothing"
    assert all(re.search(r"fake|e10|replay|--speed|--follow|--tail|--socket|FAKE|codel|"
                         r"target_delay|\{decides-at\}|the list of every algorithm", p, re.I)
               for p in problems), problems
