"""The controller's TOML file: what it configures, and every bad value refused with one
message naming the file (no switch needed)."""

from __future__ import annotations

import pytest

from control_plane.algorithms.base import QueueSetting
from control_plane.aqm import ConfigError, DualPi2, Mecn, NoAqm
from control_plane.config_file import load_controller
from support.programs import stub_build

BASE = 'switch = "127.0.0.1:9559"\nbuild = "."\n[[port]]\nport = 2\nlink_pps = 100\n'
ROUTE = ('[[route]]\nprefix = "10.0.0.0/24"\nport = 2\nsrc_mac = "02:00:00:00:00:01"\n'
         'dst_mac = "02:00:00:00:00:02"\n')


@pytest.fixture
def write(tmp_path):
    stub_build(tmp_path)

    def write(text: str):
        path = tmp_path / "aqm.toml"
        path.write_text(text)
        return path
    return write


def test_the_readme_defaults(write):
    """device_id 0 (simple_switch_grpc's default), MECN's documented wq, queues managed
    through Thrift at 127.0.0.1:9090 with the depth from the algorithm's limit."""
    ctl = load_controller(write(BASE.replace("link_pps = 100\n",
                                             'link_pps = 100\nalgorithm = "mecn"\n')))
    assert ctl.device_id == 0
    assert ctl.ports[2].config.aqm == Mecn() and ctl.ports[2].config.aqm.wq == 0.0027
    assert (ctl.queues.thrift_ip, ctl.queues.thrift_port, ctl.queues.enter_netns) == \
        ("127.0.0.1", 9090, ())
    assert ctl.ports[2].queues() == (QueueSetting(None, 100, 64),)
    assert ctl.priority_queues == 1 and ctl.switch.priority_queues == 1
    waiting = load_controller(write(BASE.replace(
        "link_pps = 100\n", 'link_pps = 100\nalgorithm = "red_ecn"\nwait = true\n')))
    assert waiting.ports[2].config.aqm.wait


def test_l2_entries_queues_and_ports_without_aqm(write):
    ctl = load_controller(write(
        BASE + 'queue_depth = 500\n[[port]]\nport = 3\nlink_pps = 1000.6\nalgorithm = "none"\n'
        '[[l2]]\nmac = "02:AA:00:00:00:01"\nport = 3\n' + ROUTE.replace("port = 2", "port = 3")))
    assert ctl.l2 == {"02:aa:00:00:00:01": 3}
    assert isinstance(ctl.ports[3].config.aqm, NoAqm) and ctl.routes[0].port == 3
    assert ctl.ports[2].queues() == (QueueSetting(None, 100, 500),)
    assert ctl.ports[3].queues() == (QueueSetting(None, 1001, 64),)
    ctl = load_controller(write('netns = "sw"\nthrift = "10.0.0.1:9091"\n' + BASE))
    assert ctl.queues.enter_netns == ("ip", "netns", "exec", "sw")
    assert (ctl.queues.thrift_ip, ctl.queues.thrift_port) == ("10.0.0.1", 9091)
    assert load_controller(write("manage_queues = false\n" + BASE)).queues is None


def test_dualpi2_sets_both_priority_queues(write):
    """The classic queue at the port's rate and depth, the L queue at l_rate of the rate
    and its own depth; the switch's priority queues come from the file."""
    ctl = load_controller(write("priority_queues = 2\n" + BASE + 'algorithm = "dualpi2"\n'
                                "queue_depth = 200\nl_rate = 0.75\nl_depth = 30\n"))
    assert ctl.ports[2].config.aqm == DualPi2(l_rate=0.75, l_depth=30)
    assert ctl.ports[2].queues() == (QueueSetting(0, 100, 200), QueueSetting(1, 75, 30))
    assert ctl.switch.priority_queues == 2


@pytest.mark.parametrize("text, message", [
    pytest.param(BASE + 'algorithm = "dualpi2"\n', "needs a switch started with "
                 "--priority-queues 2: set priority_queues = 2", id="dualpi2-one-queue"),
    pytest.param("priority_queues = 9\n" + BASE, "priority_queues must be in [1, 8]",
                 id="priority-queues-9"),
    pytest.param("priority_queues = 2\n" + BASE + 'algorithm = "dualpi2"\nl_rate = 0\n',
                 "l_rate must be in (0, 1]", id="l-rate-0"),
    pytest.param(BASE + ROUTE.replace("port = 2", "port = 1"),
                 "port 1, which has no [[port]] entry", id="route-port"),
    pytest.param(BASE + ROUTE.replace('"02:00:00:00:00:01"', '"zz"'), "'zz' is not a MAC",
                 id="route-mac"),
    pytest.param(BASE + ROUTE.replace("10.0.0.0/24", "10.0.0.300/24"), "10.0.0.300/24",
                 id="route-prefix"),
    pytest.param(BASE + ROUTE + "extra = 1\n", "a [[route]] needs exactly", id="route-key"),
    pytest.param(BASE.replace("port = 2", "port = nan"), "cannot read 'nan'", id="port-nan"),
    pytest.param(BASE.replace("port = 2", "port = 2.5"), "cannot read '2.5'", id="port-float"),
    pytest.param(BASE.replace("port = 2", "port = true"), "cannot read 'true'", id="port-bool"),
    pytest.param(BASE.replace("port = 2", 'port = "５"'), "cannot read '５'", id="port-fullwidth"),
    pytest.param(BASE.replace("port = 2", "port = 510"), "[0, 509]", id="port-cpu"),
    pytest.param(BASE.replace("100", "inf"), "cannot read 'inf'", id="link-inf"),
    pytest.param(BASE.replace("100", "nan"), "cannot read 'nan'", id="link-nan"),
    pytest.param(BASE.replace("100", '"1_00"'), "cannot read '1_00'", id="link-underscore"),
    pytest.param(BASE + 'algorithm = "red"\nmaxp = nan\n', "cannot read 'nan'", id="maxp-nan"),
    pytest.param(BASE + 'algorithm = "red"\nmaxp = 0\n', "maxp must be in (0, 1]", id="maxp-0"),
    pytest.param(BASE + 'algorithm = "red"\nminth = " 5"\n', "cannot read ' 5'",
                 id="minth-space"),
    pytest.param(BASE + 'algorithm = "none"\nlimit = 5\n', "unknown parameter 'limit'",
                 id="none-with-parameter"),
    pytest.param(BASE + "queue_depth = 0\n", "queue_depth must be >= 1", id="depth-0"),
    pytest.param(BASE + 'loop = "pid"\n', "loop must be ared or amecn", id="loop-kind"),
    pytest.param(BASE + BASE.split("\n", 2)[2], "port 2 has two [[port]] entries",
                 id="port-twice"),
    pytest.param("devic_id = 1\n" + BASE, "unknown key 'devic_id'", id="top-level-typo"),
    pytest.param("device_id = -1\n" + BASE, "device_id must be in [0, 2^64)", id="device-id"),
    pytest.param("device_id = 18446744073709551616\n" + BASE, "device_id must be in",
                 id="device-id-64"),
    pytest.param("device_id = " + "9" * 5000 + "\n" + BASE, "xceeds the limit",
                 id="device-id-huge"),
    pytest.param('thrift = "h:0"\n' + BASE, "thrift port must be in [1, 65535]", id="thrift-port"),
    pytest.param('thrift = "9090"\n' + BASE, "thrift must be host:port", id="thrift"),
    pytest.param(BASE + '[[l2]]\nmac = "02:00:00:00:00:01"\nport = 7\n',
                 "L2 entry 02:00:00:00:00:01 leaves by port 7", id="l2-port"),
    pytest.param(BASE + '[[l2]]\nmac = "x"\nport = 2\n', "'x' is not a MAC", id="l2-mac"),
    pytest.param(BASE + '[[l2]]\nmac = "02:00:00:00:00:01"\nport = 2\n' * 2,
                 "has two [[l2]] entries", id="l2-twice"),
    pytest.param(BASE.replace("[[port]]", "[port]"), "array of tables", id="port-table"),
    pytest.param("switch = 1\nbuild = '.'\n[[port]]\nport = 2\nlink_pps = 1\n",
                 "switch must be a string", id="switch-type"),
])
def test_bad_values_are_refused_naming_the_file(write, text, message):
    path = write(text)
    with pytest.raises(ConfigError) as err:
        load_controller(path)
    assert message in str(err.value) and str(err.value).startswith(str(path))
    assert "\n" not in str(err.value)


def test_an_algorithm_the_program_lacks_is_refused_before_connecting(tmp_path):
    """The controller reads the P4Info it will push: a port whose algorithm the build
    profile lacks is refused at start, in one line naming the file, the port, the
    profile's algorithms and the command that builds one with it."""
    stub_build(tmp_path / "profile", ("red_ecn", "pie"), "red_ecn-pie")
    path = tmp_path / "aqm.toml"
    base = BASE.replace('build = "."', 'build = "profile"')
    path.write_text(base + 'algorithm = "codel"\n')
    with pytest.raises(ConfigError) as refused:
        load_controller(path)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"{path}: port 2: codel is not in")
    assert "profile red_ecn-pie has red_ecn, pie, none" in line
    assert "make build ALGORITHMS=red_ecn,codel,pie" in line
    path.write_text(base + 'algorithm = "pie"\n[[port]]\nport = 3\nlink_pps = 10\n'
                    'algorithm = "none"\n')
    assert {p: v.config.aqm.action for p, v in load_controller(path).ports.items()} == \
        {2: "pie", 3: "none"}
