"""Build p4c, BMv2 and PI from p4lang's sources at pinned versions (make setup P4=source).

    python3 -m tooling.source_build [--prefix DIR] [--jobs N] [--sources TEMPLATE]
                                    [--url OWNER/NAME=URL] [--no-packages] [--dry-run]

Into a prefix that tooling.toolchain then finds (default `.toolchain/` in the repository,
or $P4AQM_TOOLCHAIN): PI with P4Runtime, BMv2's simple_switch_grpc with PI and Thrift in
PREFIX/bin, the same BMv2 without logging macros (for benchmarks) in PREFIX/perf/bin, and p4c
(BMv2 back end) in PREFIX/bin. p4lang's own build systems do the work, with the flags that
built /opt/p4 here: autotools for PI and BMv2, cmake for p4c, Debian's or Ubuntu's packages
for the rest (no download during the build: p4c's FetchContent gets its p4runtime from here).

Python rather than a shell script: the plan (pins, steps, their commands) is data that tests
read without compiling anything, and the bookkeeping (which step is done with which inputs,
its time, stopping the child builds on Ctrl-C) is clearer typed than in bash.

Each step's inputs (its commands, pins and the steps it builds on) are hashed into a stamp
when it succeeds; a later run skips every step whose stamp matches and says so, so a second
run does nothing and an interrupted one picks up at the step it stopped (a compile step
resumes in its build tree: make rebuilds only what is missing). The prefix counts as built
(tooling.toolchain looks there) only once PREFIX/p4aqm-toolchain.json is written, after the
last step checked the tools.

Sources: https://github.com/OWNER/NAME.git by default; --sources (or $P4AQM_SOURCES) is a
template with {owner} and {name}, e.g. /srv/mirror/{owner}+{name}/repo, and --url overrides
one repository. A local git directory is read in place; anything else is fetched (shallow,
the pinned tag or commit) into WORK/git. Either way the commit must be the pinned one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tooling import toolchain
from tooling.build_steps import (
    Action, BuildError, Interrupted, Run, Runner, Stamp, Step, Write, duration, interruptible,
    pending, summary,
)
from tooling.p4lang_packages import OS_RELEASE, Distribution, OsReleaseError, read_distribution

DEFAULT_SOURCES = "https://github.com/{owner}/{name}.git"
SOURCES_ENV = "P4AQM_SOURCES"


@dataclass(frozen=True)
class Pin:
    """One repository at one commit: `ref` is what is fetched (a tag, or the commit itself),
    `commit` what it must resolve to."""
    repository: str  # OWNER/NAME on GitHub
    ref: str
    commit: str
    # Paths left out of the source tree: a snapshot may lack large files the build never reads.
    exclude: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return self.commit[:8]


# The versions /opt/p4 was built from here; the submodule commits are the pointers in PI's
# tree at f96af95 and the p4runtime commit p4c's CMakeLists.txt fetches at v1.2.4.8
# (`git ls-tree`, `git show v1.2.4.8:CMakeLists.txt`). docs/install.md's table is tested
# against these.
PINS: Mapping[str, Pin] = {
    "p4c": Pin("p4lang/p4c", "v1.2.4.8", "32893b7e879db9e1c368d3568d41cb3d20c034d0",
               exclude=("docs/compiler-design.pptx",)),
    "p4runtime-p4c": Pin("p4lang/p4runtime", "1e771c4e05c4e7e250df00212b3ca02ee3202d71",
                         "1e771c4e05c4e7e250df00212b3ca02ee3202d71"),
    "bmv2": Pin("p4lang/behavioral-model", "1.15.5", "693e69e634fedf007964a069fdd69acc441a5f80"),
    "PI": Pin("p4lang/PI", "f96af95e090619491e3abf2df69df340c2c9cb46",
              "f96af95e090619491e3abf2df69df340c2c9cb46"),
    "p4runtime-PI": Pin("p4lang/p4runtime", "ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5",
                        "ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5"),
    "gnmi": Pin("openconfig/gnmi", "9c8d9e965b3e854107ea02c12ab11b70717456f2",
                "9c8d9e965b3e854107ea02c12ab11b70717456f2"),
    "uthash": Pin("troydhanson/uthash", "bf15263081be6229be31addd48566df93921cb46",
                  "bf15263081be6229be31addd48566df93921cb46"),
    "googletest": Pin("google/googletest", "f5edb4f542e155c75bc4b516f227911d99ec167c",
                      "f5edb4f542e155c75bc4b516f227911d99ec167c"),
}
# Where PI's submodules go in its tree (its .gitmodules; openconfig/public is only for
# --with-sysrepo, which this build leaves off).
PI_SUBMODULES: Mapping[str, str] = {
    "p4runtime-PI": "proto/p4runtime",
    "gnmi": "proto/openconfig/gnmi",
    "uthash": "third_party/uthash",
    "googletest": "third_party/googletest",
}

# Build dependencies: p4c's README ("Ubuntu dependencies"), BMv2's install_deps.sh and PI's
# README, with the distributions' own protobuf, gRPC and Thrift (no source builds of those).
# The names are the same on the three releases; each release is listed so that a release
# nobody has tried is refused rather than guessed.
BUILD_PACKAGES: tuple[str, ...] = (
    "ca-certificates", "git", "make", "cmake", "g++", "pkg-config", "autoconf", "automake",
    "libtool", "libtool-bin", "bison", "flex", "libfl-dev", "libgc-dev", "llvm", "libboost-dev",
    "libboost-iostreams-dev", "libboost-graph-dev", "libboost-system-dev",
    "libboost-thread-dev", "libboost-filesystem-dev", "libboost-program-options-dev",
    "libboost-test-dev", "libgmp-dev", "libpcap-dev", "libssl-dev", "libnanomsg-dev",
    "libjudy-dev", "libreadline-dev", "libthrift-dev", "thrift-compiler", "python3",
    "python3-thrift", "libprotobuf-dev", "protobuf-compiler", "libprotoc-dev",
    "libgrpc++-dev", "protobuf-compiler-grpc", "libxxhash-dev", "libjsoncpp-dev",
)
PACKAGES: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("debian", "12"): BUILD_PACKAGES,
    ("ubuntu", "22.04"): BUILD_PACKAGES,
    ("ubuntu", "24.04"): BUILD_PACKAGES,
}

# BMv2's CLI scripts take configure's Python in their #! line: the distribution's, which has
# python3-thrift (a python3 earlier on PATH, pyenv's say, may not).
SYSTEM_PYTHON = "/usr/bin/python3"
MANIFEST = toolchain.MANIFEST

CHECK_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> d; bit<48> s; bit<16> t; }
struct h_t { eth_t eth; }
struct m_t { }
parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; } }
control N(inout h_t h, inout m_t m) { apply { } }
control I(inout h_t h, inout m_t m, inout standard_metadata_t s) { apply { s.egress_spec = 2; } }
control E(inout h_t h, inout m_t m, inout standard_metadata_t s) { apply { } }
control D(packet_out p, in h_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), N(), I(), E(), N(), D()) main;
"""


@dataclass(frozen=True)
class Unpack:
    """The pinned tree of one repository into a directory (git archive | tar -x). Where the
    commit is read from is not an input: the same commit from a mirror builds the same."""
    pin: Pin
    into: Path
    sources: Sources = field(repr=False, compare=False)

    def perform(self, runner: Runner, log: TextIO) -> None:
        self.sources.unpack(self.pin, self.into)

    def __str__(self) -> str:
        return f"unpack {self.pin.repository} {self.pin.short} into {self.into}"


@dataclass(frozen=True)
class Layout:
    """Where everything goes. WORK holds the fetched repositories, the build trees, the logs
    and the steps' stamps; deleting it after a build frees the disk and keeps the toolchain."""
    prefix: Path
    work: Path

    @property
    def perf(self) -> Path:
        return self.prefix / "perf"

    @property
    def build(self) -> Path:
        return self.work / "build"

    @property
    def cache(self) -> Path:
        return self.work / "git"


def _autotools(source: Path, configure: Sequence[str]) -> tuple[Action, ...]:
    return (Run(("./autogen.sh",), source), Run(("./configure", *configure), source))


def _make_install(source: Path) -> tuple[Action, ...]:
    return (Run(("make",), source, parallel=True), Run(("make", "install"), source))


def _bmv2(layout: Layout, sources: Sources, name: str, prefix: Path, extra: Sequence[str]
          ) -> tuple[Step, Step]:
    tree = layout.build / name
    lib = layout.prefix / "lib"
    configure = (
        f"--prefix={prefix}", "--with-pi", "--with-thrift", *extra, f"PYTHON={SYSTEM_PYTHON}",
        f"CPPFLAGS=-I{layout.prefix / 'include'}", f"LDFLAGS=-L{lib} -Wl,-rpath,{lib}")
    return (
        Step(f"{name}-configure", f"BMv2 {PINS['bmv2'].ref} {' '.join(extra) or '(logging on)'}:"
             " unpack, autogen, configure",
             (Unpack(PINS["bmv2"], tree, sources),
              # BMv2's version says the commit (as a git checkout's would), not "unknown".
              Write(tree / "VERSION-build", PINS["bmv2"].short + "\n"),
              *_autotools(tree, configure)),
             after=("pi-build",), fresh=tree),
        Step(f"{name}-build", f"BMv2 into {prefix}: make, make install", _make_install(tree),
             after=(f"{name}-configure",)),
    )


def steps(layout: Layout, sources: Sources) -> tuple[Step, ...]:
    """The build, in order: PI, BMv2 on PI, p4c, BMv2 without logging macros, then a
    check of what was built."""
    pi = layout.build / "PI"
    p4c_source = layout.build / "p4c" / "source"
    p4c_tree = layout.build / "p4c" / "build"
    p4runtime = layout.build / "p4c" / "p4runtime"
    p4c = PINS["p4c"]
    check = layout.build / "check"
    bin_ = layout.prefix / "bin"
    return (
        Step("pi-configure", f"PI {PINS['PI'].short} with its submodules: unpack, autogen, "
             "configure",
             (Unpack(PINS["PI"], pi, sources),
              *(Unpack(PINS[key], pi / path, sources) for key, path in PI_SUBMODULES.items()),
              *_autotools(pi, (f"--prefix={layout.prefix}", "--with-proto",
                               "--without-internal-rpc", "--without-cli", "--without-bmv2",
                               "--without-sysrepo"))),
             fresh=pi),
        Step("pi-build", f"PI into {layout.prefix}: make, make install", _make_install(pi),
             after=("pi-configure",)),
        *_bmv2(layout, sources, "bmv2", layout.prefix, ()),
        Step("p4c-configure", f"p4c {p4c.ref}: unpack, cmake (BMv2 back end only)",
             (Unpack(p4c, p4c_source, sources), Unpack(PINS["p4runtime-p4c"], p4runtime, sources),
              Run(("cmake", "-S", str(p4c_source), "-B", str(p4c_tree),
                   "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={layout.prefix}",
                   "-DP4C_USE_PREINSTALLED_PROTOBUF=ON", "-DENABLE_PROTOBUF_STATIC=OFF",
                   "-DENABLE_GTESTS=OFF", "-DENABLE_EBPF=OFF", "-DENABLE_UBPF=OFF",
                   "-DENABLE_DPDK=OFF", "-DENABLE_P4TC=OFF", "-DENABLE_P4TEST=OFF",
                   "-DENABLE_P4C_GRAPHS=OFF", "-DENABLE_TEST_TOOLS=OFF", "-DENABLE_DOCS=OFF",
                   "-DENABLE_LTO=OFF", "-DENABLE_UNIFIED_COMPILATION=ON",
                   "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
                   f"-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME={p4runtime}"),
                  layout.build,
                  # What p4c's CMakeLists.txt reads from git in a checkout.
                  env=(("P4C_VERSION", f"{p4c.ref.lstrip('v')} (SHA: {p4c.commit[:7]} "
                                       "BUILD: Release)"),))),
             fresh=layout.build / "p4c"),
        Step("p4c-build", f"p4c into {layout.prefix}: compile, install",
             (Run(("cmake", "--build", str(p4c_tree)), layout.build, parallel=True),
              Run(("cmake", "--install", str(p4c_tree)), layout.build)),
             after=("p4c-configure",)),
        # Last but the check: what the tests need is there first.
        *_bmv2(layout, sources, "bmv2-perf", layout.perf,
               ("--disable-logging-macros", "--disable-elogger")),
        Step("check", "p4c compiles a v1model program; both simple_switch_grpc start",
             (Write(check / "check.p4", CHECK_PROGRAM),
              Run((str(bin_ / "p4c"), "--target", "bmv2", "--arch", "v1model", "-o",
                   str(check), "check.p4"), check),
              Run((str(bin_ / "simple_switch_grpc"), "--version"), check),
              Run((str(layout.perf / "bin" / "simple_switch_grpc"), "--version"), check),
              Run((SYSTEM_PYTHON, str(bin_ / "simple_switch_CLI"), "--help"), check)),
             after=("pi-build", "bmv2-build", "bmv2-perf-build", "p4c-build"), fresh=check),
    )


# --- sources ---------------------------------------------------------------------------------

def source_url(repository: str, template: str, overrides: Mapping[str, str]) -> str:
    if repository in overrides:
        return overrides[repository]
    owner, name = repository.split("/")
    try:
        return template.format(owner=owner, name=name)
    except (KeyError, IndexError, ValueError) as err:
        raise BuildError(f"sources template {template!r}: only {{owner}} and {{name}} are "
                         f"filled in ({type(err).__name__}: {err})") from None


def _git(git_dir: Path, *argv: str, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={git_dir}", *argv], text=True,
                          capture_output=True, **kwargs)


def _resolves(git_dir: Path, ref: str) -> str | None:
    done = _git(git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 else None


def local_git_dir(url: str) -> Path | None:
    """The git directory a URL names on this machine (a bare repository or a clone's .git),
    or None for a URL to fetch from."""
    path = Path(url)
    if "://" in url or not path.is_dir():
        return None
    for candidate in (path / ".git", path):
        if _git(candidate, "rev-parse", "--git-dir").returncode == 0:
            return candidate
    raise BuildError(f"{url} is a folder but not a git repository")


@dataclass
class Sources:
    """Where each pinned commit is read from: a local git directory in place, or WORK/git's
    shallow fetches."""
    template: str
    overrides: Mapping[str, str]
    cache: Path

    def url(self, pin: Pin) -> str:
        return source_url(pin.repository, self.template, self.overrides)

    def git_dir(self, pin: Pin) -> tuple[Path, bool]:
        """Where the pin's commit is read, and whether that is a local clone (in place)."""
        local = local_git_dir(self.url(pin))
        if local is not None:
            return local, True
        return self.cache / pin.repository.replace("/", "+"), False

    def ensure(self, pin: Pin, log: Callable[[str], None]) -> bool:
        """Make the pin's commit readable; True if it had to be fetched."""
        url = self.url(pin)
        git_dir, local = self.git_dir(pin)
        if local:
            found = _resolves(git_dir, pin.ref)
            if found != pin.commit:
                raise BuildError(f"{pin.repository} at {url}: {pin.ref} is "
                                 f"{found or 'missing'}, pinned {pin.commit}")
            return False
        if _resolves(git_dir, pin.commit) == pin.commit:
            return False
        if not git_dir.is_dir():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
        ref = pin.ref if pin.ref == pin.commit else f"refs/tags/{pin.ref}"
        log(f"  fetching {pin.repository} {pin.ref} from {url}")
        done = _git(git_dir, "fetch", "-q", "--depth", "1", url, ref)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["git failed"])[-1]
            raise BuildError(f"cannot fetch {pin.repository} {pin.ref} from {url}: {why}")
        found = _resolves(git_dir, "FETCH_HEAD")
        if found != pin.commit:
            raise BuildError(f"{pin.repository} {pin.ref} from {url} is {found}, "
                             f"pinned {pin.commit}")
        return True

    def unpack(self, pin: Pin, into: Path) -> None:
        into.mkdir(parents=True, exist_ok=True)
        pathspec = ["--", ".", *(f":!{path}" for path in pin.exclude)] if pin.exclude else []
        archive = subprocess.Popen(
            ["git", f"--git-dir={self.git_dir(pin)[0]}", "archive", "--format=tar", pin.commit,
             *pathspec], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert archive.stdout is not None
        tar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout,
                             capture_output=True, text=True)
        archive.stdout.close()
        error = archive.stderr.read().decode(errors="replace") if archive.stderr else ""
        if archive.wait() != 0 or tar.returncode != 0:
            raise BuildError(f"cannot unpack {pin.repository} {pin.short} into {into}: "
                             f"{(error or tar.stderr).strip()}")


# --- packages -----------------------------------------------------------------------------

def packages_for(distribution: Distribution) -> tuple[str, ...] | None:
    return PACKAGES.get((distribution.id, distribution.version_id))


def missing_packages(packages: Sequence[str]) -> list[str]:
    """Those dpkg does not list as installed."""
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\n",
                           *packages], capture_output=True, text=True)
    installed = {line.split()[0] for line in done.stdout.splitlines()
                 if line.endswith(" installed")}
    return [name for name in packages if name not in installed]


def install_commands(packages: Sequence[str], uid: int) -> list[list[str]]:
    """apt-get update (a fresh system may have no package lists), then the install."""
    sudo = [] if uid == 0 else ["sudo"]
    return [[*sudo, "apt-get", "update"],
            [*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
             "--no-install-recommends", *packages]]


# --- the manifest -------------------------------------------------------------------------

def manifest(layout: Layout, sources: Sources, stamps: Mapping[str, Stamp],
             distribution: Distribution) -> dict[str, object]:
    return {
        "prefix": str(layout.prefix),
        "perf_prefix": str(layout.perf),
        "distribution": str(distribution),
        "pins": {key: {"repository": pin.repository, "ref": pin.ref, "commit": pin.commit,
                       "url": sources.url(pin)} for key, pin in PINS.items()},
        "steps": {name: {"wall_s": round(stamp.wall, 1), "cpu_s": round(stamp.cpu, 1),
                         "finished": stamp.finished} for name, stamp in stamps.items()},
        "wall_s": round(sum(stamp.wall for stamp in stamps.values()), 1),
        "cpu_s": round(sum(stamp.cpu for stamp in stamps.values()), 1),
    }


# --- the command ------------------------------------------------------------------------------

def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    repositories = {pin.repository for pin in PINS.values()}
    out = {}
    for item in items:
        repository, equals, url = item.partition("=")
        if not equals or not url:
            raise BuildError(f"--url {item}: expected OWNER/NAME=URL")
        if repository not in repositories:
            raise BuildError(f"--url {item}: {repository} is not one of the pinned "
                             f"repositories ({', '.join(sorted(repositories))})")
        out[repository] = url
    return out


def parser() -> argparse.ArgumentParser:
    ours = argparse.ArgumentParser(
        prog="python3 -m tooling.source_build", description=__doc__.splitlines()[0])
    ours.add_argument("--prefix", type=Path, default=None,
                      help=f"where the toolchain goes (default ${toolchain.PREFIX_ENV}, "
                           f"else {toolchain.REPO_PREFIX})")
    ours.add_argument("--work", type=Path, default=None,
                      help="sources, build trees, logs and stamps (default PREFIX/work)")
    ours.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                      help="parallel compile jobs (default: the number of CPUs)")
    ours.add_argument("--sources", default=None, metavar="TEMPLATE",
                      help=f"where the repositories are, {{owner}} and {{name}} filled in "
                           f"(default ${SOURCES_ENV}, else {DEFAULT_SOURCES})")
    ours.add_argument("--url", action="append", default=[], metavar="OWNER/NAME=URL",
                      help="one repository's URL or local git directory (repeatable)")
    ours.add_argument("--no-packages", action="store_true",
                      help="install no distribution packages (you installed the build "
                           "dependencies yourself: docs/install.md)")
    ours.add_argument("--os-release", type=Path, default=OS_RELEASE, metavar="PATH",
                      help=argparse.SUPPRESS)
    ours.add_argument("--dry-run", action="store_true",
                      help="print the packages, sources and steps a run would do")
    ours.add_argument("--progress-every", type=float, default=30.0, metavar="SECONDS",
                      help="seconds between progress lines during a command (default 30)")
    return ours


def main(argv: Sequence[str] | None = None, uid: int | None = None,
         out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)
    out = out or sys.stdout
    try:
        if args.jobs < 1:
            raise BuildError(f"--jobs {args.jobs}: at least 1")
        prefix = (args.prefix or toolchain.source_prefix_setting()).resolve()
        layout = Layout(prefix, (args.work or prefix / "work").resolve())
        sources = Sources(args.sources or os.environ.get(SOURCES_ENV) or DEFAULT_SOURCES,
                          parse_overrides(args.url), layout.cache)
        distribution = read_distribution(args.os_release)
        packages = None if args.no_packages else packages_for(distribution)
        if packages is None and not args.no_packages:
            supported = ", ".join(f"{name} {version}" for name, version in PACKAGES)
            raise BuildError(
                f"no build dependencies known for {distribution} (tried on {supported}); "
                "install the equivalents of docs/install.md's list and run again with "
                "--no-packages")
        uid = os.geteuid() if uid is None else uid
        runner = Runner(layout.work, args.jobs, out, args.progress_every)
        plan = steps(layout, sources)
        if args.dry_run:
            dry_run(layout, sources, plan, packages, uid, runner)
            return 0
        return build(layout, sources, plan, packages, distribution, uid, runner)
    except (BuildError, OsReleaseError, toolchain.ToolMissing) as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 1


def dry_run(layout: Layout, sources: Sources, plan: Sequence[Step],
            packages: Sequence[str] | None, uid: int, runner: Runner) -> None:
    say = runner.say
    say(f"source build (dry run) into {layout.prefix}, work in {layout.work}")
    if packages is not None:
        for command in install_commands(packages, uid):
            say(f"+ {shlex.join(command)}")
        say("  (only when some are not installed, and only those)")
    for key, pin in PINS.items():
        say(f"source {key}: {pin.repository} {pin.ref} = {pin.commit} from {sources.url(pin)}")
    todo = set(pending(plan, runner.stamps))
    for number, step in enumerate(plan, 1):
        state = "to do" if step.name in todo else "already done"
        say(f"[{number}/{len(plan)}] {step.name} ({state}): {step.what}")
        for action in step.actions:
            say(f"    {action}")


def install_packages(packages: Sequence[str], uid: int, say: Callable[[str], None]) -> None:
    missing = missing_packages(packages)
    if not missing:
        say(f"packages: all {len(packages)} build dependencies installed")
        return
    say(f"packages: installing {len(missing)} of {len(packages)}: {' '.join(missing)}")
    for command in install_commands(missing, uid):
        if subprocess.run(command).returncode != 0:
            raise BuildError(f"`{shlex.join(command)}` failed")


def build(layout: Layout, sources: Sources, plan: Sequence[Step],
          packages: Sequence[str] | None, distribution: Distribution, uid: int,
          runner: Runner) -> int:
    say = runner.say
    started = time.monotonic()
    finished = layout.prefix / MANIFEST
    say(f"source build into {layout.prefix} ({runner.jobs} jobs; work in {layout.work})")
    with interruptible():
        try:
            # A finished build needs neither the packages nor the sources (nor a network).
            if not pending(plan, runner.stamps) and finished.is_file():
                say(f"nothing to do: the toolchain in {layout.prefix} is built from the "
                    f"pinned sources ({MANIFEST})")
                return 0
            if packages is not None:
                install_packages(packages, uid, say)
            fetched = [key for key, pin in PINS.items() if sources.ensure(pin, say)]
            say(f"sources: {len(PINS)} pinned commits present"
                f"{f' ({len(fetched)} fetched)' if fetched else ''}")
            # Until the check passes again the prefix is not a finished toolchain.
            stamps = runner.build(plan, before_first=lambda: finished.unlink(missing_ok=True))
            written = manifest(layout, sources, stamps, distribution)
            finished.write_text(json.dumps(written, indent=2) + "\n")
        except Interrupted as stop:
            current = pending(plan, runner.stamps)
            print(f"\ninterrupted ({stop}): the child builds are stopped; run the same "
                  f"command again to resume{f' at {current[0]}' if current else ''}",
                  file=sys.stderr)
            return 128 + stop.signum
    say(f"toolchain built in {layout.prefix} ({duration(time.monotonic() - started)} this "
        f"run); per step, over the runs that built it:\n{summary(stamps)}")
    found = ("" if layout.prefix == toolchain.REPO_PREFIX
             else f" with {toolchain.PREFIX_ENV}={layout.prefix}")
    say(f"tooling.toolchain finds it{found}; the BMv2 without logging macros is in "
        f"{layout.perf / 'bin'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
