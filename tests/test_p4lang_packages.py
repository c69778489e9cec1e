"""make setup P4LANG=1: which distribution, which tools are there, which commands it runs.

Nothing here installs or downloads anything: the runner is a fake that records commands, the
toolchain is temporary executables, and `make` only prints its recipe (-n).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.make import SETUP_VARIABLES, make_dry_run
from tooling import toolchain
from tooling.p4lang_packages import (
    CommandFailed, Distribution, OsReleaseError, main, parse_os_release, plan, read_distribution,
    run,
)

REPO = Path(__file__).resolve().parent.parent
TOOLS = ("p4c", "simple_switch_grpc", "simple_switch_CLI")
NOTHING_FOUND = {tool: None for tool in TOOLS}

UBUNTU_2204 = '''PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
'''
UBUNTU_2404 = '''PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
ID=ubuntu
ID_LIKE=debian
'''
DEBIAN_12 = '''PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
VERSION_ID="12"
VERSION_CODENAME=bookworm
ID=debian
'''
UBUNTU_1804 = '''NAME="Ubuntu"
VERSION="18.04.6 LTS (Bionic Beaver)"
ID=ubuntu
ID_LIKE=debian
VERSION_ID="18.04"
'''
MINT_213 = '''NAME="Linux Mint"
VERSION="21.3 (Virginia)"
ID=linuxmint
ID_LIKE="ubuntu debian"
VERSION_ID="21.3"
UBUNTU_CODENAME=jammy
'''
ODD_QUOTING = '''# comments, blank lines, single quotes and escapes are os-release(5)
\t
ID='ubuntu'
VERSION_ID=20.04
PRETTY_NAME="say \\"hi\\" for \\$5"
'''

ENTRY = "deb http://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/ /\n"
KEY_URL = "https://download.opensuse.org/repositories/home:p4lang/xUbuntu_22.04/Release.key"


def os_release(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "os-release"
    path.write_text(text)
    return path


@dataclass
class FakeRunner:
    """Records each command; the key download returns fake bytes; `fail` names a command
    (argv without sudo) that exits 100; `on_install` runs in place of apt-get install."""
    fail: tuple[str, ...] | None = None
    on_install: Callable[[Sequence[str]], None] = lambda argv: None
    calls: list[tuple[tuple[str, ...], bytes | None, bool]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], stdin: bytes | None, capture: bool) -> bytes:
        self.calls.append((tuple(argv), stdin, capture))
        command = tuple(argv[1:] if argv[0] == "sudo" else argv)
        if command == self.fail:
            raise CommandFailed(argv, "exited with status 100")
        if command[:2] == ("apt-get", "install"):
            self.on_install(command)
        if command[0] == "curl":
            return b"ARMORED KEY"
        if command[0] == "gpg":
            return b"KEYRING from " + (stdin or b"")
        return b""


def forbidden_runner(argv: Sequence[str], stdin: bytes | None, capture: bool) -> bytes:
    raise AssertionError(f"nothing may run, yet {argv} did")


@pytest.fixture
def bins(tmp_path, monkeypatch):
    """No P4 tool anywhere: no P4AQM_* variable, no source build, an empty /opt/p4/bin
    stand-in, a PATH of one empty folder. Returns that folder, where a test may put
    executables."""
    for variable in (*toolchain.TOOL_ENV.values(), toolchain.PREFIX_ENV):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(toolchain, "REPO_PREFIX", tmp_path / "no-source-build")
    monkeypatch.setattr(toolchain, "DEFAULT_BIN", tmp_path / "opt-p4-bin")
    path = tmp_path / "usr-bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    return path


def executable(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


# --- the distribution, from os-release ----------------------------------------------------

@pytest.mark.parametrize("text, distribution, action", [
    pytest.param(UBUNTU_2204, Distribution("ubuntu", "22.04", ("debian",)), "install",
                 id="ubuntu-22.04-published"),
    pytest.param(UBUNTU_2404, Distribution("ubuntu", "24.04", ("debian",)), "unsupported",
                 id="ubuntu-24.04-not-published"),
    pytest.param(DEBIAN_12, Distribution("debian", "12"), "unsupported",
                 id="debian-12-not-published"),
    pytest.param(UBUNTU_1804, Distribution("ubuntu", "18.04", ("debian",)), "unsupported",
                 id="ubuntu-18.04-too-old"),
    pytest.param(MINT_213, Distribution("linuxmint", "21.3", ("ubuntu", "debian")),
                 "unsupported", id="linux-mint-derivative-is-unsupported"),
    pytest.param(ODD_QUOTING, Distribution("ubuntu", "20.04"), "install",
                 id="single-quotes-comments-blank-lines"),
    pytest.param("NAME=minimal\n", Distribution("linux", ""), "unsupported",
                 id="no-ID-means-linux"),
])
def test_distribution_decides_whether_p4lang_publishes(tmp_path, text, distribution, action):
    found = read_distribution(os_release(tmp_path, text))
    assert found == distribution
    assert plan(NOTHING_FOUND, found, "x86_64", 0).action == action


def test_p4lang_publishes_for_x86_64_only():
    decided = plan(NOTHING_FOUND, Distribution("ubuntu", "22.04"), "aarch64", 0)
    assert decided.action == "unsupported"
    assert "ubuntu 22.04 on aarch64" in decided.summary
    assert decided.steps == ()


def test_the_unsupported_message_names_the_distribution_and_the_way_out():
    decided = plan(NOTHING_FOUND, Distribution("linuxmint", "21.3", ("ubuntu", "debian")),
                   "x86_64", 1000)
    assert decided.summary.startswith(
        "unsupported distribution linuxmint 21.3 (like ubuntu debian) on x86_64: "
        "p4lang publishes p4c and BMv2 for ubuntu 20.04, ")
    assert decided.summary.endswith("build from sources (docs/install.md, 'Installing p4c and BMv2')")


def test_the_parsed_escapes_are_os_release_ones():
    assert parse_os_release(ODD_QUOTING)["PRETTY_NAME"] == 'say "hi" for $5'


def test_a_missing_os_release_is_one_clear_error(tmp_path):
    with pytest.raises(OsReleaseError, match=r"^cannot read .*/nowhere: No such file"):
        read_distribution(tmp_path / "nowhere")


@pytest.mark.parametrize("line", [
    pytest.param("ID ubuntu", id="no-equals-sign"),
    pytest.param("ID = ubuntu", id="spaces-around-equals"),
    pytest.param("ID=ubuntu linux", id="unquoted-space"),
    pytest.param('VERSION_ID="22.04', id="unbalanced-quote"),
    pytest.param("1D=ubuntu", id="bad-key"),
    pytest.param("ID=$(reboot)", id="shell-expansion"),
])
def test_a_malformed_os_release_names_its_line(tmp_path, line):
    path = os_release(tmp_path, f"NAME=x\n{line}\n")
    with pytest.raises(OsReleaseError, match=rf"^{re.escape(str(path))} line 2: not KEY=VALUE: "):
        read_distribution(path)


@pytest.mark.parametrize("make_bad", [
    pytest.param(lambda tmp_path: tmp_path / "nowhere", id="missing-file"),
    pytest.param(lambda tmp_path: os_release(tmp_path, "ID ubuntu\n"), id="malformed-file"),
])
def test_main_reports_a_bad_os_release_in_one_line(bins, tmp_path, capsys, make_bad):
    status = main(["--os-release", str(make_bad(tmp_path))], runner=forbidden_runner,
                  uid=0, machine="x86_64")
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ")


# --- a toolchain already there is used as it is --------------------------------------------

def test_a_toolchain_named_by_the_variables_is_used_as_it_is(bins, tmp_path, monkeypatch,
                                                              capsys):
    paths = {}
    for tool, variable in toolchain.TOOL_ENV.items():
        paths[tool] = executable(tmp_path / "own", tool)
        monkeypatch.setenv(variable, str(paths[tool]))
    # Even where p4lang publishes nothing, nothing is needed.
    status = main(["--os-release", str(os_release(tmp_path, DEBIAN_12))],
                  runner=forbidden_runner, uid=1000, machine="x86_64")
    assert status == 0
    assert capsys.readouterr().out == (
        f"p4lang packages: nothing to do (found p4c={paths['p4c']}, "
        f"simple_switch_grpc={paths['simple_switch_grpc']}, "
        f"simple_switch_CLI={paths['simple_switch_CLI']})\n")


def test_a_toolchain_on_path_is_used_as_it_is(bins, tmp_path, capsys):
    for tool in TOOLS:
        executable(bins, tool)
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=forbidden_runner, uid=0, machine="x86_64")
    assert status == 0
    assert f"nothing to do (found p4c={bins / 'p4c'}, " in capsys.readouterr().out


def test_a_variable_naming_no_file_is_an_error_not_an_install(bins, tmp_path, monkeypatch,
                                                              capsys):
    monkeypatch.setenv("P4AQM_P4C", str(tmp_path / "typo"))
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=forbidden_runner, uid=0, machine="x86_64")
    assert status == 1
    assert capsys.readouterr().err == (
        f"error: P4AQM_P4C={tmp_path / 'typo'} is not an executable file\n")


# --- the commands ------------------------------------------------------------------------

@pytest.mark.parametrize("uid, sudo", [
    pytest.param(0, (), id="root"),
    pytest.param(1000, ("sudo",), id="user-through-sudo"),
])
def test_the_exact_commands(uid, sudo):
    decided = plan(NOTHING_FOUND, Distribution("ubuntu", "22.04", ("debian",)), "x86_64", uid)
    assert decided.action == "install"
    assert [list(step.commands) for step in decided.steps] == [
        [(*sudo, "tee", "/etc/apt/sources.list.d/home:p4lang.list")],
        [("curl", "-fsSL", KEY_URL), ("gpg", "--dearmor"),
         (*sudo, "tee", "/etc/apt/trusted.gpg.d/home_p4lang.gpg")],
        [(*sudo, "apt-get", "update")],
        [(*sudo, "apt-get", "install", "-y", "p4lang-p4c", "p4lang-bmv2")],
    ]
    assert decided.steps[0].stdin == ENTRY
    assert [step.show_output for step in decided.steps] == [False, False, True, True]


def test_the_commands_read_as_readme_shell_lines():
    decided = plan(NOTHING_FOUND, Distribution("ubuntu", "22.04"), "x86_64", 1000)
    assert [str(step) for step in decided.steps] == [
        "echo 'deb http://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/ /'"
        " | sudo tee /etc/apt/sources.list.d/home:p4lang.list > /dev/null",
        f"curl -fsSL {KEY_URL} | gpg --dearmor"
        " | sudo tee /etc/apt/trusted.gpg.d/home_p4lang.gpg > /dev/null",
        "sudo apt-get update",
        "sudo apt-get install -y p4lang-p4c p4lang-bmv2",
    ]


def test_debian_11_uses_its_own_repository():
    decided = plan(NOTHING_FOUND, Distribution("debian", "11"), "x86_64", 0)
    assert decided.steps[0].stdin == (
        "deb http://download.opensuse.org/repositories/home:/p4lang/Debian_11/ /\n")


@pytest.mark.parametrize("present, packages", [
    pytest.param({"p4c"}, ("p4lang-bmv2",), id="p4c-present-bmv2-missing"),
    pytest.param({"simple_switch_grpc", "simple_switch_CLI"}, ("p4lang-p4c",),
                 id="bmv2-present-p4c-missing"),
    pytest.param({"p4c", "simple_switch_grpc"}, ("p4lang-bmv2",), id="only-the-cli-missing"),
    pytest.param(set(), ("p4lang-p4c", "p4lang-bmv2"), id="nothing-present"),
])
def test_only_the_missing_packages_are_installed(present, packages):
    found = {tool: Path("/opt/p4/bin") / tool if tool in present else None for tool in TOOLS}
    decided = plan(found, Distribution("ubuntu", "22.04"), "x86_64", 0)
    assert decided.steps[-1].commands == (("apt-get", "install", "-y", *packages),)
    for tool in present:
        assert f"{tool}=/opt/p4/bin/{tool}" in decided.summary


def test_dry_run_prints_the_plan_and_runs_nothing(bins, tmp_path, capsys):
    status = main(["--dry-run", "--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=forbidden_runner, uid=1000, machine="x86_64")
    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert lines[0] == (
        "p4lang packages (dry run): installing p4lang-p4c p4lang-bmv2 from "
        "home:p4lang/xUbuntu_22.04 (missing p4c, simple_switch_grpc, simple_switch_CLI)")
    assert lines[1:] == [
        "+ echo 'deb http://download.opensuse.org/repositories/home:/p4lang/xUbuntu_22.04/ /'"
        " | sudo tee /etc/apt/sources.list.d/home:p4lang.list > /dev/null",
        f"+ curl -fsSL {KEY_URL} | gpg --dearmor"
        " | sudo tee /etc/apt/trusted.gpg.d/home_p4lang.gpg > /dev/null",
        "+ sudo apt-get update",
        "+ sudo apt-get install -y p4lang-p4c p4lang-bmv2",
    ]


def test_an_unsupported_distribution_installs_nothing_and_fails(bins, tmp_path, capsys):
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2404))],
                  runner=forbidden_runner, uid=0, machine="x86_64")
    out, err = capsys.readouterr()
    assert status == 1
    assert out == ""
    assert err.startswith("error: unsupported distribution ubuntu 24.04 (like debian) on x86_64")
    assert len(err.splitlines()) == 1


# --- running them (fake runner) -------------------------------------------------------------

def test_install_pipes_like_the_readme_then_finds_the_tools(bins, tmp_path, capsys):
    runner = FakeRunner(on_install=lambda argv: [executable(bins, tool) for tool in TOOLS])
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=runner, uid=1000, machine="x86_64")
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    assert runner.calls == [
        (("sudo", "tee", "/etc/apt/sources.list.d/home:p4lang.list"), ENTRY.encode(), True),
        (("curl", "-fsSL", KEY_URL), None, True),
        (("gpg", "--dearmor"), b"ARMORED KEY", True),
        (("sudo", "tee", "/etc/apt/trusted.gpg.d/home_p4lang.gpg"),
         b"KEYRING from ARMORED KEY", True),
        (("sudo", "apt-get", "update"), None, False),
        (("sudo", "apt-get", "install", "-y", "p4lang-p4c", "p4lang-bmv2"), None, False),
    ]
    assert out.splitlines()[-1] == (
        f"p4lang packages: installed (p4c={bins / 'p4c'}, "
        f"simple_switch_grpc={bins / 'simple_switch_grpc'}, "
        f"simple_switch_CLI={bins / 'simple_switch_CLI'})")


def test_a_partial_install_keeps_the_tool_that_was_there(bins, tmp_path, monkeypatch, capsys):
    own = executable(tmp_path / "own", "p4c")
    monkeypatch.setenv("P4AQM_P4C", str(own))
    runner = FakeRunner(on_install=lambda argv: [
        executable(bins, tool) for tool in ("simple_switch_grpc", "simple_switch_CLI")])
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=runner, uid=0, machine="x86_64")
    assert status == 0
    assert runner.calls[-1][0] == ("apt-get", "install", "-y", "p4lang-bmv2")
    assert f"installed (p4c={own}, " in capsys.readouterr().out


def test_a_failing_command_is_one_line_and_stops(bins, tmp_path, capsys):
    runner = FakeRunner(fail=("apt-get", "update"))
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=runner, uid=1000, machine="x86_64")
    err = capsys.readouterr().err
    assert status == 1
    assert err == "error: `sudo apt-get update` exited with status 100\n"
    assert runner.calls[-1][0] == ("sudo", "apt-get", "update")


def test_tools_still_missing_after_the_install_is_an_error(bins, tmp_path, capsys):
    status = main(["--os-release", str(os_release(tmp_path, UBUNTU_2204))],
                  runner=FakeRunner(), uid=0, machine="x86_64")
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("error: installed, yet p4c not found ($P4AQM_P4C, ")
    assert len(err.splitlines()) == 1


# The real runner, on local commands only.

def test_the_real_runner_pipes_and_captures():
    assert run(["cat"], b"through", True) == b"through"


@pytest.mark.parametrize("argv, why", [
    pytest.param(["false"], "`false` exited with status 1", id="non-zero-exit"),
    pytest.param(["/nonexistent/curl", "-fsSL", "x"],
                 "`/nonexistent/curl -fsSL x` could not start: No such file or directory",
                 id="not-installed"),
])
def test_the_real_runner_turns_failures_into_one_line(argv, why):
    with pytest.raises(CommandFailed) as failed:
        run(argv, None, True)
    assert str(failed.value) == why


# --- the Makefile -----------------------------------------------------------------------------

def test_make_setup_p4lang_1_runs_the_module_between_the_venv_and_the_build():
    made = make_dry_run("setup", "P4LANG=1")
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    module = lines.index(".venv/bin/python -m tooling.p4lang_packages")
    assert lines[module - 1] == ".venv/bin/python -m pip install -q -e '.[test,sweep,docs]'"
    assert "toolchain.find(\"p4c\")" in lines[module + 1]
    assert "ca-certificates curl gnupg" in made.stdout


def test_make_setup_alone_contacts_nothing_of_p4lang():
    made = make_dry_run("setup")
    assert made.returncode == 0, made.stderr
    assert "p4lang" not in made.stdout
    assert "curl" not in made.stdout


def test_make_rejects_another_p4lang_value():
    made = make_dry_run("setup", "P4LANG=yes")
    assert made.returncode != 0
    assert "P4LANG=yes: use P4LANG=1" in made.stderr


def test_make_setup_refuses_a_python_older_than_3_11_before_apt(tmp_path):
    """Ubuntu 22.04's python3 is 3.10: the set-up names the interpreter and the way out
    before it installs anything. Not a dry run: the check runs, and apt-get and sudo are
    stand-ins that leave a trace if anything reaches them."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    reached = tmp_path / "reached"
    for name, script in (
            # Says 3.10 when asked its version, fails the version check otherwise.
            ("python3", '[ "$1" = --version ] && echo "Python 3.10.12" && exit 0\nexit 1'),
            ("apt-get", f"echo apt-get >> {reached}; exit 1"),
            ("sudo", f"echo sudo >> {reached}; exit 1")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / name).chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key not in SETUP_VARIABLES}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
    made = subprocess.run(["make", "setup", "PYTHON=python3"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode != 0
    assert "p4aqm needs Python 3.11+; python3 is Python 3.10.12" in made.stderr
    assert "make setup PYTHON=/usr/bin/python3.11" in made.stderr
    assert not reached.exists()


def test_make_setup_installs_the_interpreter_it_is_given():
    made = make_dry_run("setup", "PYTHON=/usr/bin/python3.11")
    assert "python3.11 python3.11-venv python3.11-dev python3-thrift" in made.stdout
    assert "/usr/bin/python3.11 -m venv --system-site-packages .venv" in made.stdout
    # An interpreter that is not Debian's is the user's own: apt gets python3's packages.
    made = make_dry_run("setup", "PYTHON=/opt/conda/bin/python")
    assert "python3 python3-venv python3-dev python3-thrift" in made.stdout
