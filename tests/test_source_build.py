"""make setup P4=source (tooling/source_build.py): the pins, the plan, where the sources come
from, and the bookkeeping that makes a second run do nothing and an interrupted one resume.

Nothing here compiles p4c or reaches the network: the sources are tiny git repositories made
here, the steps that run are shell one-liners, and `make` only prints its recipe (-n).
"""

from __future__ import annotations

import io
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from support.make import make_dry_run
from tooling import source_build, toolchain
from tooling.build_steps import (
    BuildError, Run, Runner, Step, Write, dependents, fingerprints, pending,
)
from tooling.source_build import (
    PINS, Layout, Pin, Sources, Unpack, main, parse_overrides, source_url, steps,
)

REPO = Path(__file__).resolve().parent.parent
DEBIAN_12 = 'ID=debian\nVERSION_ID="12"\n'
FEDORA_40 = 'ID=fedora\nVERSION_ID=40\n'


def git(*argv: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repository(root: Path, owner_name: str, files: dict[str, str], tag: str | None = None
               ) -> tuple[Path, str]:
    """A one-commit clone at root/OWNER+NAME (the layout of a mirror folder), and its commit."""
    path = root / owner_name.replace("/", "+")
    path.mkdir(parents=True)
    git("init", "-q", "--template=", str(path))
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git("add", ".", cwd=path)
    git("commit", "-q", "-m", "one", cwd=path)
    if tag:
        git("tag", tag, cwd=path)
    return path, git("rev-parse", "HEAD", cwd=path)


@pytest.fixture(scope="module")
def mirror_once(tmp_path_factory) -> tuple[Path, dict[str, Pin]]:
    """Every pinned repository as a tiny local one, and PINS pointing at their commits (p4c's
    by a tag, as the real pin; with a path it excludes)."""
    root = tmp_path_factory.mktemp("mirror")
    pins = {}
    made: dict[str, str] = {}
    for key, pin in PINS.items():
        if pin.repository not in made:
            _, made[pin.repository] = repository(
                root, pin.repository, {"README": f"{pin.repository}\n", "big.pptx": "x"},
                tag="v1" if key == "p4c" else None)
        commit = made[pin.repository]
        pins[key] = replace(pin, ref="v1" if key == "p4c" else commit, commit=commit,
                            exclude=("big.pptx",) if key == "p4c" else ())
    return root, pins


@pytest.fixture
def mirror(mirror_once, tmp_path, monkeypatch) -> tuple[Path, str]:
    """A copy of the tiny repositories (a test may change it) in PINS' place; returns the
    folder and the template that names them."""
    once, pins = mirror_once
    root = tmp_path / "mirror"
    shutil.copytree(once, root, symlinks=True)
    monkeypatch.setattr(source_build, "PINS", pins)
    return root, str(root) + "/{owner}+{name}"


# --- the pins ---------------------------------------------------------------------------------

def test_the_pins_are_full_commits_of_the_versions_the_docs_name():
    for key, pin in PINS.items():
        assert re.fullmatch(r"[0-9a-f]{40}", pin.commit), key
        assert pin.ref == pin.commit or not re.fullmatch(r"[0-9a-f]+", pin.ref), key
    assert (PINS["p4c"].ref, PINS["bmv2"].ref) == ("v1.2.4.8", "1.15.5")


def test_the_docs_table_states_every_pin():
    """docs/install.md's table of pinned sources, row for row."""
    text = (REPO / "docs" / "install.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| \[([\w/-]+)\]\(https://github.com/([\w/-]+)\) \| "
                      r"`([^`]+)` \| `([0-9a-f]{40})` \|$", text, re.M)
    assert {key: Pin(repo, ref, commit) for key, repo, link, ref, commit in rows
            if repo == link} == {key: Pin(pin.repository, pin.ref, pin.commit)
                                 for key, pin in PINS.items()}


def test_the_docs_list_the_build_packages():
    text = (REPO / "docs" / "install.md").read_text()
    listed = re.search(r"```sh\napt-get install (.*?)\n```", text, re.S)
    assert listed, "docs/install.md has no apt-get install block of the build packages"
    assert listed.group(1).replace("\\\n", " ").split() == list(source_build.BUILD_PACKAGES)


# --- the plan ---------------------------------------------------------------------------------

@pytest.fixture
def layout(tmp_path) -> Layout:
    return Layout(tmp_path / "prefix", tmp_path / "prefix" / "work")


def plan_of(layout: Layout) -> tuple[Step, ...]:
    return steps(layout, Sources(source_build.DEFAULT_SOURCES, {}, layout.cache))


def configure_of(plan, name: str) -> tuple[str, ...]:
    step = next(step for step in plan if step.name == name)
    return next(action.argv for action in step.actions
                if isinstance(action, Run) and action.argv[0] in ("./configure", "cmake"))


def test_the_steps_and_what_each_builds_on(layout):
    plan = plan_of(layout)
    assert [(step.name, step.after) for step in plan] == [
        ("pi-configure", ()),
        ("pi-build", ("pi-configure",)),
        ("bmv2-configure", ("pi-build",)),
        ("bmv2-build", ("bmv2-configure",)),
        ("p4c-configure", ()),
        ("p4c-build", ("p4c-configure",)),
        ("bmv2-perf-configure", ("pi-build",)),
        ("bmv2-perf-build", ("bmv2-perf-configure",)),
        ("check", ("pi-build", "bmv2-build", "bmv2-perf-build", "p4c-build")),
    ]


def test_bmv2_has_pi_and_thrift_and_the_perf_build_no_logging_macros(layout):
    plan = plan_of(layout)
    bmv2 = configure_of(plan, "bmv2-configure")
    perf = configure_of(plan, "bmv2-perf-configure")
    for argv in (bmv2, perf):
        assert {"--with-pi", "--with-thrift", "PYTHON=/usr/bin/python3"} <= set(argv)
        assert f"CPPFLAGS=-I{layout.prefix}/include" in argv
        assert f"LDFLAGS=-L{layout.prefix}/lib -Wl,-rpath,{layout.prefix}/lib" in argv
    assert f"--prefix={layout.prefix}" in bmv2 and "--disable-logging-macros" not in bmv2
    assert f"--prefix={layout.prefix}/perf" in perf
    assert {"--disable-logging-macros", "--disable-elogger"} <= set(perf)


def test_pi_gets_its_submodules_in_place_and_p4c_its_p4runtime(layout):
    plan = {step.name: step for step in plan_of(layout)}
    pi = layout.build / "PI"
    assert [(action.pin, action.into) for action in plan["pi-configure"].actions
            if isinstance(action, Unpack)] == [
        (PINS["PI"], pi), (PINS["p4runtime-PI"], pi / "proto/p4runtime"),
        (PINS["gnmi"], pi / "proto/openconfig/gnmi"),
        (PINS["uthash"], pi / "third_party/uthash"),
        (PINS["googletest"], pi / "third_party/googletest")]
    cmake = configure_of(plan.values(), "p4c-configure")
    assert "-DFETCHCONTENT_FULLY_DISCONNECTED=ON" in cmake
    assert f"-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME={layout.build / 'p4c/p4runtime'}" in cmake
    assert [(action.pin, action.into) for action in plan["p4c-configure"].actions
            if isinstance(action, Unpack)] == [
        (PINS["p4c"], layout.build / "p4c/source"),
        (PINS["p4runtime-p4c"], layout.build / "p4c/p4runtime")]
    assert {"-DENABLE_EBPF=OFF", "-DENABLE_DPDK=OFF", "-DP4C_USE_PREINSTALLED_PROTOBUF=ON",
            f"-DCMAKE_INSTALL_PREFIX={layout.prefix}"} <= set(cmake)


def test_versions_say_the_pinned_commits_without_git_metadata(layout):
    """A tree from git archive has no .git: BMv2 reads VERSION-build, p4c P4C_VERSION."""
    plan = {step.name: step for step in plan_of(layout)}
    assert Write(layout.build / "bmv2/VERSION-build", "693e69e6\n") in \
        plan["bmv2-configure"].actions
    cmake = next(action for action in plan["p4c-configure"].actions
                 if isinstance(action, Run))
    assert dict(cmake.env) == {"P4C_VERSION": "1.2.4.8 (SHA: 32893b7 BUILD: Release)"}


def test_a_changed_pin_redoes_its_steps_and_those_after_them_only(layout, monkeypatch):
    before = fingerprints(plan_of(layout))
    monkeypatch.setitem(source_build.PINS, "p4c", replace(PINS["p4c"], commit="0" * 40))
    after = fingerprints(plan_of(layout))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"p4c-configure", "p4c-build", "check"}
    assert dependents(plan_of(layout), "pi-build") == [
        "bmv2-configure", "bmv2-build", "bmv2-perf-configure", "bmv2-perf-build", "check"]


def test_where_the_sources_come_from_is_not_an_input(layout):
    """The same commits from a mirror build the same: switching URLs redoes nothing."""
    mirrored = steps(layout, Sources("/srv/{owner}+{name}", {"p4lang/p4c": "/p4c"},
                                     layout.cache))
    assert fingerprints(mirrored) == fingerprints(plan_of(layout))


def test_the_number_of_jobs_is_not_an_input(layout):
    """-j is added when a command runs: a run with other --jobs resumes, it does not redo."""
    plan = plan_of(layout)
    parallel = [action for step in plan for action in step.actions
                if isinstance(action, Run) and action.parallel]
    assert len(parallel) == 4 and all("-j" not in action.argv for action in parallel)


# --- where the sources come from --------------------------------------------------------------

def test_the_url_template_and_the_overrides():
    assert source_url("p4lang/p4c", source_build.DEFAULT_SOURCES, {}) == \
        "https://github.com/p4lang/p4c.git"
    assert source_url("p4lang/PI", "/m/{owner}+{name}/repo", {}) == "/m/p4lang+PI/repo"
    assert source_url("p4lang/PI", "/m/{owner}+{name}/repo",
                      {"p4lang/PI": "/mine/PI"}) == "/mine/PI"


def test_a_template_with_another_field_is_one_clear_error():
    with pytest.raises(BuildError, match=r"^sources template '/m/\{repo\}': only \{owner\} "
                                         r"and \{name\} are filled in \(KeyError: 'repo'\)$"):
        source_url("p4lang/PI", "/m/{repo}", {})


@pytest.mark.parametrize("item, message", [
    pytest.param("p4lang/PI", "--url p4lang/PI: expected OWNER/NAME=URL", id="no-url"),
    pytest.param("p4lang/pi=/x", "--url p4lang/pi=/x: p4lang/pi is not one of the pinned "
                 "repositories (google/googletest, openconfig/gnmi, p4lang/PI, "
                 "p4lang/behavioral-model, p4lang/p4c, p4lang/p4runtime, "
                 "troydhanson/uthash)", id="unknown-repository"),
])
def test_a_bad_override_is_one_clear_error(item, message):
    with pytest.raises(BuildError) as error:
        parse_overrides([item])
    assert str(error.value) == message


def test_a_local_clone_is_read_in_place_and_checked(mirror, tmp_path):
    root, template = mirror
    sources = Sources(template, {}, tmp_path / "cache")
    assert sources.ensure(source_build.PINS["p4c"], print) is False
    assert sources.git_dir(source_build.PINS["p4c"]) == (root / "p4lang+p4c" / ".git", True)
    assert not (tmp_path / "cache").exists()
    sources.unpack(source_build.PINS["p4c"], tmp_path / "tree")
    # The excluded path (a snapshot may lack it) is left out; the rest is the pinned tree.
    assert sorted(path.name for path in (tmp_path / "tree").iterdir()) == ["README"]


def test_a_local_clone_at_another_commit_is_refused(mirror, tmp_path):
    root, template = mirror
    clone = root / "p4lang+p4c"
    (clone / "README").write_text("moved\n")
    git("commit", "-q", "-am", "two", cwd=clone)
    git("tag", "-f", "v1", cwd=clone)
    with pytest.raises(BuildError, match=rf"^p4lang/p4c at {re.escape(str(clone))}: v1 is "
                                         rf"[0-9a-f]{{40}}, pinned "
                                         rf"{source_build.PINS['p4c'].commit}$"):
        Sources(template, {}, tmp_path / "cache").ensure(source_build.PINS["p4c"], print)


def test_a_remote_is_fetched_once_into_the_cache(mirror, tmp_path):
    """A URL that is not a local folder (file:// here, https:// for real) is fetched shallow,
    by tag or by commit; a second run finds the commit and fetches nothing."""
    root, _ = mirror
    template = f"file://{root}/{{owner}}+{{name}}"
    said: list[str] = []
    sources = Sources(template, {}, tmp_path / "cache")
    pins = source_build.PINS
    assert sources.ensure(pins["p4c"], said.append) is True
    assert sources.ensure(pins["gnmi"], said.append) is True
    assert said == [f"  fetching p4lang/p4c v1 from file://{root}/p4lang+p4c",
                    f"  fetching openconfig/gnmi {source_build.PINS['gnmi'].commit} from "
                    f"file://{root}/openconfig+gnmi"]
    again = Sources(template, {}, tmp_path / "cache")
    assert again.ensure(pins["p4c"], said.append) is False and len(said) == 2
    again.unpack(pins["gnmi"], tmp_path / "gnmi")
    assert (tmp_path / "gnmi" / "README").read_text() == "openconfig/gnmi\n"


def test_a_fetch_that_fails_names_the_repository_and_the_url(mirror, tmp_path):
    sources = Sources("file:///nowhere/{owner}+{name}", {}, tmp_path / "cache")
    with pytest.raises(BuildError, match=r"^cannot fetch p4lang/p4c v1 from "
                                         r"file:///nowhere/p4lang\+p4c: "):
        sources.ensure(source_build.PINS["p4c"], print)


# --- stamps: a second run does nothing, an interrupted one resumes -----------------------------

def shell_step(name: str, script: str, cwd: Path, after: tuple[str, ...] = ()) -> Step:
    return Step(name, name, (Run(("sh", "-c", script), cwd),), after=after)


@pytest.fixture
def tiny(tmp_path, mirror, monkeypatch):
    """A three-step plan in place of the real one: unpack a tiny repository and count each
    step's runs in runs.txt; the middle step fails while a file `fail` exists."""
    _, template = mirror
    layout = Layout(tmp_path / "prefix", tmp_path / "prefix" / "work")
    tree = layout.build / "tree"
    log = tmp_path / "runs.txt"
    sources = Sources(template, {}, layout.cache)
    plan = (
        Step("one", "unpack", (Unpack(source_build.PINS["gnmi"], tree, sources),
                               Run(("sh", "-c", f"echo one >> {log}"), layout.work)),
             fresh=tree),
        shell_step("two", f"test ! -e {tmp_path / 'fail'} && echo two >> {log}", layout.work,
                   after=("one",)),
        shell_step("three", f"echo three >> {log}", layout.work, after=("two",)),
    )
    layout.work.mkdir(parents=True)
    monkeypatch.setattr(source_build, "steps", lambda layout_, sources_: plan)
    args = ["--prefix", str(layout.prefix), "--sources", template, "--no-packages",
            "--os-release", str(write(tmp_path / "os-release", DEBIAN_12))]
    return layout, log, args


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def runs(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_a_second_run_does_nothing_and_says_so(tiny, capsys):
    layout, log, args = tiny
    assert main(args) == 0
    assert runs(log) == ["one", "two", "three"]
    manifest = (layout.prefix / toolchain.MANIFEST).read_text()
    assert '"commit"' in manifest and '"wall_s"' in manifest
    capsys.readouterr()
    assert main(args) == 0
    assert runs(log) == ["one", "two", "three"]
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        f"nothing to do: the toolchain in {layout.prefix} is built from the pinned sources "
        "(p4aqm-toolchain.json)")
    # Nor does it need the sources again: a URL that cannot be reached is not asked.
    assert main([*args, "--sources", "file:///nowhere/{owner}+{name}"]) == 0
    assert "nothing to do" in capsys.readouterr().out


def test_a_failed_run_resumes_at_the_step_that_failed(tiny, tmp_path, capsys):
    layout, log, args = tiny
    (tmp_path / "fail").touch()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: two: `sh -c ")
    assert f"(whole log: {layout.work / 'logs' / 'two.log'})" in err
    assert not (layout.prefix / toolchain.MANIFEST).exists()
    assert pending(source_build.steps(layout, None), layout.work / "stamps") == [
        "two", "three"]
    (tmp_path / "fail").unlink()
    assert main(args) == 0
    assert runs(log) == ["one", "two", "three"]
    out = capsys.readouterr().out
    assert "[1/3] one: already done (" in out
    assert "[2/3] two: two (log: " in out
    assert "two done in 0m00s (CPU 0m00s)" in out


def test_redoing_a_step_redoes_those_after_it_and_starts_fresh(tiny, capsys):
    layout, log, args = tiny
    assert main(args) == 0
    stray = layout.build / "tree" / "stray"
    stray.write_text("left by an earlier build\n")
    (layout.work / "stamps" / "one").unlink()
    assert main(args) == 0
    assert runs(log) == ["one", "two", "three", "one", "two", "three"]
    assert not stray.exists()


def test_dry_run_says_what_is_done_and_what_is_not(tiny, capsys):
    layout, log, args = tiny
    assert main(args) == 0
    (layout.work / "stamps" / "three").unlink()
    capsys.readouterr()
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[2/3] two (already done): two" in out
    assert "[3/3] three (to do): three" in out
    assert runs(log) == ["one", "two", "three"]


def test_progress_shows_the_elapsed_time_and_the_logs_last_line(tmp_path):
    out = io.StringIO()
    runner = Runner(tmp_path / "work", 1, out, every=0.1)
    step = shell_step("compile", "echo 'compiling p4c.cpp'; sleep 0.5", tmp_path)
    runner.build((step,), before_first=lambda: None)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"[1/1] compile: compile (log: {tmp_path / 'work/logs/compile.log'})"
    assert "  0m00s  compiling p4c.cpp" in lines[1:-1]
    assert re.fullmatch(r"  compile done in 0m0\ds \(CPU 0m0\ds\)", lines[-1])


def test_a_steps_cpu_time_counts_its_childrens(tmp_path):
    """CPU time is the step's processes' (make's compilers), not the waiting Python's."""
    runner = Runner(tmp_path / "work", 1, io.StringIO())
    burn = shell_step("burn", f"{sys.executable} -c 'sum(range(10**7))'", tmp_path)
    stamps = runner.build((burn,), before_first=lambda: None)
    assert 0.05 < stamps["burn"].cpu <= stamps["burn"].wall + 0.05


# --- packages per distribution ----------------------------------------------------------------

@pytest.mark.parametrize("release, known", [
    pytest.param(DEBIAN_12, True, id="debian-12"),
    pytest.param('ID=ubuntu\nVERSION_ID="22.04"\n', True, id="ubuntu-22.04"),
    pytest.param('ID=ubuntu\nVERSION_ID="24.04"\n', True, id="ubuntu-24.04"),
    pytest.param('ID=ubuntu\nVERSION_ID="20.04"\n', False, id="ubuntu-20.04"),
    pytest.param(FEDORA_40, False, id="fedora"),
])
def test_which_releases_have_a_package_list(tmp_path, release, known):
    path = write(tmp_path / "os-release", release)
    distribution = source_build.read_distribution(path)
    assert (source_build.packages_for(distribution) is not None) == known


def test_an_unknown_release_stops_before_anything_and_names_the_way_out(tmp_path, capsys):
    status = main(["--prefix", str(tmp_path / "p"), "--os-release",
                   str(write(tmp_path / "os-release", FEDORA_40))])
    err = capsys.readouterr().err
    assert status == 1
    assert err == ("error: no build dependencies known for fedora 40 (tried on debian 12, "
                   "ubuntu 22.04, ubuntu 24.04); install the equivalents of docs/install.md's "
                   "list and run again with --no-packages\n")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("uid, sudo", [pytest.param(0, [], id="root"),
                                       pytest.param(1000, ["sudo"], id="user")])
def test_the_package_commands(uid, sudo):
    assert source_build.install_commands(["bison", "flex"], uid) == [
        [*sudo, "apt-get", "update"],
        [*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
         "--no-install-recommends", "bison", "flex"]]


def test_installed_packages_are_not_installed_again():
    if shutil.which("dpkg-query") is None:
        pytest.skip("needs dpkg-query (a Debian or Ubuntu system)")
    assert source_build.missing_packages(["dpkg", "no-such-package-p4aqm"]) == [
        "no-such-package-p4aqm"]


def test_the_environment_names_the_sources_and_the_prefix(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("P4AQM_SOURCES", "/srv/{owner}/{name}")
    monkeypatch.setenv("P4AQM_TOOLCHAIN", str(tmp_path / "tc"))
    assert main(["--dry-run", "--os-release",
                 str(write(tmp_path / "os-release", DEBIAN_12))], uid=1000) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"source build (dry run) into {tmp_path / 'tc'}, work in "
                      f"{tmp_path / 'tc' / 'work'}")
    assert out[1] == "+ sudo apt-get update"
    assert ("source p4c: p4lang/p4c v1.2.4.8 = 32893b7e879db9e1c368d3568d41cb3d20c034d0 "
            "from /srv/p4lang/p4c") in out
    assert not (tmp_path / "tc").exists()


# --- Ctrl-C and SIGTERM end the child builds ---------------------------------------------------

INTERRUPTIBLE = """
import sys
from pathlib import Path
from tooling import source_build
from tooling.source_build import Run, Step
here = Path(sys.argv[1])
plan = (Step("long", "a compile that takes long",
             (Run(("sh", "-c", f"sleep 300 & echo $! > {here / 'grandchild'}; wait"), here),)),)
source_build.steps = lambda layout, sources: plan
source_build.PINS = {}
sys.exit(source_build.main(["--prefix", str(here / "prefix"), "--no-packages",
                            "--os-release", str(here / "os-release")]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "ctrl-c"])
def test_a_signal_ends_the_child_builds_and_says_how_to_resume(tmp_path, sig):
    write(tmp_path / "os-release", DEBIAN_12)
    tool = subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE, str(tmp_path)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = tmp_path / "grandchild"
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert tool.poll() is None and time.monotonic() < deadline, tool.communicate()
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    tool.send_signal(sig)
    out, err = tool.communicate(timeout=30)
    assert tool.returncode == 128 + sig, (out, err)
    assert err.strip() == (f"interrupted ({signal.Signals(sig).name}): the child builds are "
                           "stopped; run the same command again to resume at long")
    # Exited: gone, or a zombie until init collects it.
    assert process_state(grandchild) in ("gone", "Z")


def process_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


# --- the Makefile -----------------------------------------------------------------------------

def test_make_setup_p4_source_builds_between_the_venv_and_the_p4_build():
    made = make_dry_run("setup", "P4=source")
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    module = lines.index(".venv/bin/python -m tooling.source_build")
    assert lines[module - 1] == ".venv/bin/python -m pip install -q -e '.[test,sweep,docs]'"
    assert "toolchain.find(\"p4c\")" in lines[module + 1]
    assert "p4lang_packages" not in made.stdout


def test_make_setup_alone_builds_no_toolchain():
    made = make_dry_run("setup")
    assert made.returncode == 0, made.stderr
    assert "source_build" not in made.stdout


@pytest.mark.parametrize("arguments, message", [
    pytest.param(("P4=src",), "P4=src: use P4=source to build p4c, BMv2 and PI from p4lang's "
                 "sources, or leave it unset", id="another-value"),
    pytest.param(("P4=source", "P4LANG=1"), "P4=source and P4LANG=1: choose one way to "
                 "install p4c and BMv2", id="both-ways"),
])
def test_make_refuses_a_p4_it_cannot_do(arguments, message):
    made = make_dry_run("setup", *arguments)
    assert made.returncode != 0
    assert message in made.stderr


def test_the_module_runs_with_nothing_but_the_standard_library():
    """`python3 -m tooling.source_build` is named before any venv exists."""
    done = subprocess.run([sys.executable, "-I", "-c", textwrap.dedent("""
        import sys; sys.path.insert(0, '.')
        import tooling.source_build
        print(sorted(name for name in sys.modules if name.split('.')[0] in
                     {'pytest', 'click', 'rich', 'finsy', 'numpy'}))""")],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
