"""Comments name only what the code has: where a comment names a symbol in a form that can be
checked (P4 macros, constants, controls, tables, actions and files; Python names a
comment places in a module), the symbol exists. The one description of each algorithm is
its module's docstring (docs/contributing/algorithm.md); what the P4 and the docs say
about the code must not drift from it either."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from control_plane.algorithms import ALGORITHMS
from control_plane.profiles import ALL_PROFILE, Profile
from tooling.generate import profile_header

REPO = Path(__file__).resolve().parent.parent
P4SRC = REPO / "p4src"
P4INCLUDE = Path("/opt/p4/share/p4c/p4include")
# Words in P4 comments that look like code but name things outside it: algorithms (their
# prose names), standards and BMv2's own classes.
PROSE = {cls.prose_name for cls in ALGORITHMS.values()} | {"PacketIn", "QueueingLogicPriRL"}
# A macro or constant, or a pattern of them (`P4AQM_WITH_<PART>`, `ECN_MODE_*`).
UPPER = re.compile(r"(?<![\w<.])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*(?:_(?=[<*]))?)"
                   r"((?:<[^>]*>|\*)\w*)?")
CAMEL = re.compile(r"\b([A-Z][a-z0-9]*[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)\b")
CALLED = re.compile(r"\b([A-Za-z_]\w*)\(\)")
KIND = re.compile(r"\b([a-z]\w*_\w+) (?:table|register|action|control|counter|header)\b")
P4_FILE = re.compile(r"\b([\w-]+\.p4)\b")
OF_P4 = re.compile(r"\b([\w-]+\.p4)'s (\w+)")
OF_PY = re.compile(r"\b(\w+)\.py's (\w+)")
# A Python module's name in a P4 comment: profiles.SHARED_PARTS.
QUALIFIED = re.compile(r"\b([a-z_]\w*)\.([A-Za-z_]\w*)\b")


def comments(text: str) -> list[tuple[int, str]]:
    return [(text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(r"//([^\n]*)", text)]


def code(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


@cache
def p4_files() -> dict[str, Path]:
    return {p.name: p for p in P4SRC.rglob("*.p4")}


@cache
def p4_names() -> frozenset[str]:
    """Every identifier of the P4 source's code, of p4c's core.p4 and v1model.p4, and every
    symbol the build generates (for "all", "none" and the drop-at-enqueue program)."""
    names = set()
    for path in p4_files().values():
        names |= set(re.findall(r"\b[A-Za-z_]\w*\b", code(path.read_text())))
    for lib in ("core.p4", "v1model.p4"):
        if (P4INCLUDE / lib).is_file():
            names |= set(re.findall(r"\b[A-Za-z_]\w*\b", (P4INCLUDE / lib).read_text()))
    for profile, enqueue in ((ALL_PROFILE, False), (ALL_PROFILE, True),
                             (Profile.parse("none"), False)):
        names |= set(re.findall(r"#define (\w+)", profile_header(profile, enqueue)))
    return frozenset(names)


def placeholder_matches(head: str, tail: str) -> bool:
    """`P4AQM_WITH_<PART>`-style names: some known name fits the pattern."""
    rest = re.escape(re.sub(r"<[^>]*>|\*", "", tail))
    pattern = re.compile(re.escape(head) + r"\w+" + rest)
    return any(pattern.fullmatch(name) for name in p4_names())


def unknown_in_p4_comment(text: str) -> set[str]:
    found = set()
    for m in UPPER.finditer(text):
        name, tail = m.group(1), m.group(2)
        if tail:
            if not placeholder_matches(name, tail):
                found.add(name + tail)
        elif "_" in name and name not in p4_names():
            found.add(name)
    for module, name in QUALIFIED.findall(text):
        names = py_module_names(module) if name not in ("p4", "py", "md", "json") else None
        if names is not None and name not in names:
            found.add(f"{module}.{name}")
    found |= {n for n in CAMEL.findall(text) if n not in p4_names() and n not in PROSE}
    found |= {f"{n}()" for n in CALLED.findall(text) if n not in p4_names()}
    found |= {n for n in KIND.findall(text) if n not in p4_names()}
    found |= {f for f in P4_FILE.findall(text) if f not in p4_files()
              and not f.startswith("p4aqm_")}
    for file, name in OF_P4.findall(text):
        found |= of_p4(file, name)
    return found


def of_p4(file: str, name: str) -> set[str]:
    """`red.p4's Marker`: the file exists and declares the name, in either case (Python
    cites a macro RTT_HASH as rtt_hash()); a lower-case word after a file is prose ("lib.p4's
    interval clock")."""
    if file not in p4_files():
        return {file}
    if name[0].islower() and "_" not in name:
        return set()
    declared = {n.lower() for n in re.findall(r"\b\w+\b", code(p4_files()[file].read_text()))}
    return set() if name.lower() in declared else {f"{file}'s {name}"}


@cache
def py_module_names(stem: str) -> frozenset[str] | None:
    """The names a Python module of ours defines (top level, and in its classes), or None
    if no module has that name."""
    paths = [p for p in REPO.glob(f"*/**/{stem}.py") if ".venv" not in p.parts]
    if not paths:
        return None
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return frozenset(names)


def unknown_in_python_text(text: str) -> set[str]:
    found = set()
    for file, name in OF_P4.findall(text):
        found |= of_p4(file, name)
    for stem, name in OF_PY.findall(text):
        names = py_module_names(stem)
        if names is None:
            found.add(f"{stem}.py")
        elif (name[0].isupper() or "_" in name or name.endswith("()")) and name not in names:
            found.add(f"{stem}.py's {name}")
    return found


def python_texts(path: Path) -> list[tuple[int, str]]:
    """Docstrings and comments of a Python file, with their line."""
    source = path.read_text()
    texts = [(n, line.split("#", 1)[1]) for n, line in enumerate(source.splitlines(), 1)
             if "#" in line and not line.lstrip().startswith(("'", '"'))]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                texts.append((getattr(node, "lineno", 1), doc))
    return texts


@pytest.mark.parametrize("path", sorted(P4SRC.rglob("*.p4")), ids=lambda p: p.name)
def test_p4_comments_name_only_what_the_code_has(path):
    bad = [f"{path.name}:{line}: {sorted(names)}" for line, text in comments(path.read_text())
           if (names := unknown_in_p4_comment(text))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", sorted((REPO / "control_plane").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_python_comments_name_only_what_the_code_has(path):
    bad = [f"{path.name}:{line}: {sorted(names)}" for line, text in python_texts(path)
           if (names := unknown_in_python_text(text))]
    assert not bad, "\n".join(bad)


@cache
def control_plane_names() -> frozenset[str]:
    """The names control_plane's modules define."""
    return frozenset().union(*(py_module_names(p.stem) or ()
                               for p in (REPO / "control_plane").rglob("*.py")))


def test_the_algorithm_recipe_names_only_what_the_code_has():
    """docs/contributing/algorithm.md's code names: each P4 or Python name, or pattern of
    names with a `<...>` placeholder, is one the code has."""
    text = (REPO / "docs" / "contributing" / "algorithm.md").read_text()
    inline = re.findall(r"`([^`\n]+)`", text)
    bad = set()
    for snippet in inline:
        for m in UPPER.finditer(snippet):
            name, tail = m.group(1), m.group(2)
            if (tail and not placeholder_matches(name, tail)) or \
                    (not tail and "_" in name and name not in p4_names()
                     and name not in control_plane_names()):
                bad.add(name + (tail or ""))
        lead = re.fullmatch(r"<\w+>(_[A-Z0-9_]+)", snippet.strip())
        if lead and not any(n.endswith(lead.group(1)) for n in p4_names()):
            bad.add(snippet)
    assert not bad, sorted(bad)


@pytest.mark.parametrize("text, found", [
    ("// see the port_epoch table", {"port_epoch"}),
    ("// CODEL_AFTER_NOTHING and NoSuchControl", {"CODEL_AFTER_NOTHING", "NoSuchControl"}),
    ("// P4AQM_WITH_<PART> and P4AQM_NOTHING_<X>", {"P4AQM_NOTHING_<X>"}),
    ("// as elapsed_since() in gone.p4", {"elapsed_since()", "gone.p4"}),
    ("// lib.p4's AT_OR_AFTER, red.p4's Marker and red.p4's Codel", {"red.p4's Codel"}),
], ids=["table", "macro-and-control", "placeholder", "call-and-file", "file-s-name"])
def test_the_p4_check_finds_what_the_code_lacks(text, found):
    assert unknown_in_p4_comment(text) == found


@pytest.mark.parametrize("text, found", [
    ("lib.p4's elapsed_since(): USEC48 b - a", {"lib.p4's elapsed_since"}),
    ("codel.py's NO_SUCH and base.py's at_or_after", {"codel.py's NO_SUCH"}),
    ("nowhere.py's thing", {"nowhere.py"}),
], ids=["p4-name", "python-name", "python-module"])
def test_the_python_check_finds_what_the_code_lacks(text, found):
    assert unknown_in_python_text(text) == found
