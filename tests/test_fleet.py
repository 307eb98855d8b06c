"""./inv report --fleet: the fleet file read and refused in one line before anything starts, pairs sharing no machine
measured at the same time, one comparison report of them; and, for real on two pairs of namespace hosts over SSH,
one pair's host lost mid-run: the other's results kept and the report saying what is missing."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.record.store import SweepStore
from copylab.report.hosts.fleet import differences
from copylab.study import fleet
from copylab.study.link import Link
from copylab.study.pipeline import report_sweeps
from tests.conftest import needs_root
from tests.robustness_table import rows_lost_from
from tests.ssh_hosts import TAG, HostPair, host_pairs, leftovers, running_in, small_sweep
from tests.test_robustness import wait_for
from tests.test_sweep import read_rows

GOOD = """
[[pair]]
name = "old-xeon"
server_host = "root@10.0.0.1"
client_host = "root@10.0.0.2"

[[pair]]
name = "new-epyc"
server_host = "me@10.0.1.1:2222"
client_host = "me@10.0.1.2"
server_address = "192.168.7.1"
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[pair]\nname=", "not TOML"),
        ("title = 'x'\n", "unknown key 'title' (a fleet file holds [[pair]] tables only)"),
        ("", "no [[pair]] table"),
        ("[[pair]]\nserver_host='root@a'\nclient_host='root@b'\n", "pair 1: name is missing"),
        ("[[pair]]\nname='a'\nserver_host='root@a'\nclient_host='root@b'\nport=22\n", "pair 1: unknown key 'port'"),
        ("[[pair]]\nname='a b'\nserver_host='root@a'\nclient_host='root@b'\n", "name 'a b' is not letters"),
        (
            "[[pair]]\nname='a'\nserver_host='a'\nclient_host='root@b'\nserver_address='10.0.0.1'\n",
            "pair a: server-host",
        ),
        ("[[pair]]\nname='a'\nserver_host='root@a'\nclient_host='root@b'\nserver_address='x'\n", "not an IPv4 address"),
        (
            "[[pair]]\nname='a'\nserver_host='root@10.0.0.1'\nclient_host='root@b'\n" * 2,
            "the name 'a' is given to two pairs",
        ),
    ],
)
def test_a_bad_fleet_file_is_refused_in_one_line_before_anything_starts(tmp_path, text, message):
    path = _file(tmp_path, text)
    with pytest.raises(CopylabError) as refused:
        fleet.report_fleet(path, None, fleet.Study(1.0), data_root=tmp_path / "data")
    assert message in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith(f"fleet: {path}")
    assert not (tmp_path / "data").exists(), "nothing created"


def test_pairs_that_share_a_machine_wait_for_each_other(tmp_path):
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("")
    pairs = fleet.read_fleet(_file(tmp_path, GOOD), str(ssh_config))
    assert [(p.name, p.link.server_address, p.link.ssh_config) for p in pairs] == [
        ("old-xeon", "10.0.0.1", str(ssh_config)),
        ("new-epyc", "192.168.7.1", str(ssh_config)),
    ]

    def pair(name: str, server: str, client: str) -> fleet.Pair:
        return fleet.Pair(name, Link(f"root@{server}", f"me@{client}:2200", "10.0.0.1"))

    a, b, c, d = pair("a", "h1", "h2"), pair("b", "h3", "h4"), pair("c", "h2", "h5"), pair("d", "h6", "h1")
    assert [[p.name for p in wave] for wave in fleet.waves([a, b, c, d])] == [["a", "b"], ["c", "d"]]


def test_the_sink_and_small_pages_are_left_out_between_two_hosts():
    from copylab.study.link import NOT_BETWEEN_HOSTS, not_between_hosts

    left_out = {profile: not_between_hosts(experiment, profile) for experiment, profile, _ in report_sweeps("x")}
    assert left_out.pop("sink") == NOT_BETWEEN_HOSTS["sink"]
    assert left_out.pop("mmap-small") == NOT_BETWEEN_HOSTS["small"]
    assert set(left_out.values()) == {None} and "mmap" in left_out


def test_crossovers_differ_only_where_their_intervals_do_not_overlap():
    found = pd.DataFrame(
        [
            ("a", "zero_copy over two_copy", 16384.0, 8192.0, 32768.0),
            ("b", "zero_copy over two_copy", 262144.0, 131072.0, 524288.0),
            ("a", "sendfile over two_copy", 4096.0, 2048.0, 8192.0),
            ("b", "sendfile over two_copy", 6000.0, 4096.0, 16384.0),
            ("c", "one_copy over two_copy", 4096.0, 2048.0, 8192.0),
        ],
        columns=["pair", "curve", "at", "low", "high"],
    )
    said = differences(found, {"a": "Xeon E5, kernel 5.10, eth0 (driver ixgbe)"})
    assert len(said) == 2, said  # one_copy's was found on one pair only
    assert "sendfile over two_copy" in said[0] and "no difference shown" in said[0]
    assert (
        "zero_copy over two_copy" in said[1]
        and "differs (a (Xeon E5, kernel 5.10, eth0 (driver ixgbe)) and b" in said[1]
    )


# ---------------------------------------------------------------- for real: two pairs of hosts over SSH


@dataclass(frozen=True)
class TinyStudy:
    """A study of one small sweep, NAME, between a pair's hosts (the report's own takes minutes): what the fleet runs
    on each pair is its to choose (copylab.study.fleet.Study is the report's).  Run in each pair's own process."""

    name: str

    def __call__(self, link: Link, directory: Path) -> list[SweepStore]:
        settings = small_sweep(
            self.name, link.settings(), implementations=["two_copy", "zero_copy"], sizes=[4096, 262144]
        )
        result = sweep.run(settings, SweepStore.under(directory, settings.name), progress=False)
        return [SweepStore(result.directory)]


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HostPair]]:
    if os.geteuid() != 0:
        pytest.skip("two hosts in namespaces need root (ip netns, sshd)")
    with host_pairs(2, tmp_path_factory.mktemp("ssh")) as beds:
        yield beds


def _rows(root: Path, pair: str) -> list[dict[str, str]]:
    found = list(root.glob(f"fleet-*/{pair}/tiny-{TAG}/trials.csv"))
    return read_rows(found[0]) if found else []


def _started(root: Path, pair: str) -> list[str]:
    """When each of PAIR's trials written so far started (a line caught half-written has a field missing)."""
    return [row["started_at"] for row in _rows(root, pair) if None not in row.values()]


def _overlapping(root: Path) -> bool:
    """Whether each pair has started a trial after the other's first: both ran at the same time.  Rows only grow,
    so once true it stays true of the rows at the end."""
    p0, p1 = _started(root, "p0"), _started(root, "p1")
    return bool(p0 and p1) and max(p1) > min(p0) and max(p0) > min(p1)


@needs_root
def test_a_fleet_of_two_pairs_one_losing_a_host_keeps_the_other_and_says_what_is_missing(pairs, tmp_path, outcome):
    outcome.update(
        area="two hosts",
        fault="a fleet of two pairs: " + "one pair's client host goes away mid-run while the other pair runs",
    )
    kept, lost = pairs
    text = "".join(
        f"[[pair]]\nname = 'p{bed.index}'\nserver_host = '{bed.server_host}'\nclient_host = '{bed.client_host}'\n"
        f"server_address = '{bed.settings()['server_address']}'\n\n"
        for bed in pairs
    )
    path = _file(tmp_path, text)

    written: list[dict[str, str]] = []
    failed: list[AssertionError] = []
    ended = threading.Event()

    def ready() -> bool:
        if ended.is_set():
            raise AssertionError("the fleet ended first")
        return _overlapping(tmp_path) and running_in(lost.client_ns, "two_copy_client")

    def lose_a_host() -> None:
        # Either pair's process may start seconds after the other's under load: the host goes only once the two
        # have run at the same time, else p1 could have run its few trials before p0 began.
        try:
            wait_for(ready, 120, 0.02)
        except AssertionError as error:
            failed.append(error)
            return
        written.extend(_rows(tmp_path, "p1"))
        lost.stop_sshd(lost.client_ns)

    losing = threading.Thread(target=lose_a_host)
    losing.start()
    try:
        pdf = fleet.report_fleet(path, str(kept.ssh_config), TinyStudy(f"tiny-{TAG}"), data_root=tmp_path)
    finally:
        ended.set()
        losing.join()
        lost.start_sshd(lost.client_ns)
    ran, cut = _rows(tmp_path, "p0"), _rows(tmp_path, "p1")
    left = leftovers(f"tiny-{TAG}", [*kept.namespaces, *lost.namespaces])
    outcome.update(
        behaviour=f"p0 ran {len(ran)} trials, p1 {len(cut)} before its host went; the comparison lists p1 as missing",
        rows_lost=rows_lost_from(written, cut),
        leftovers=left,
    )
    assert not failed, f"the two pairs never ran at the same time with p1's client running: {failed[0]}"
    assert len(ran) == 12 and all(row["status"] == "ok" for row in ran), ran
    assert cut and cut[0]["status"] == "ok" and len(cut) < 12
    # the two pairs share no machine: they ran at the same time
    assert min(row["started_at"] for row in cut) < max(row["started_at"] for row in ran)
    assert min(row["started_at"] for row in ran) < max(row["started_at"] for row in cut)
    assert pdf.is_file() and pdf.stat().st_size > 0
    notebook = pdf.with_suffix(".ipynb").read_text()
    assert "# What is missing" in notebook and "- p1: " in notebook and "finish with --resume" in notebook
    assert "what it measured is kept in" in notebook
    assert "# p0: " in notebook and "for a real link" in notebook and "driver veth" in notebook
    assert outcome["rows_lost"].lost == 0 and left == []


def _pair_sweep(tmp_path: Path, pair: str, crossover: float, cpu: str) -> SweepStore:
    """An analysed synthetic sweep 'measured' between two hosts whose server has CPU, one_copy overtaking two_copy
    at CROSSOVER bytes."""
    from copylab.analysis.analyze_sweep import analyze
    from copylab.report import plugins
    from tests.synthetic import make_trials, write_sweep

    trials = make_trials(
        sweep=pair,
        implementations=("two_copy", "one_copy"),
        workloads=("stream",),
        threads=(1,),
        shapes={"one_copy": crossover},
        trials=6,
        seed=len(pair),
    )
    host = {
        "hostname": pair,
        "kernel": "6.1.0-test",
        "cpu_model": cpu,
        "cores": 8,
        "memory_gib": 16.0,
        "virtualization": "none",
    }
    link = {"interface": "eth1", "driver": "ixgbe", "mtu": 9000, "offloads": {"scatter-gather": "on"}}
    ends = [
        {"role": role, "target": f"lab@{pair}-{role}", "host": host, "link": link if role == "server" else None}
        for role in ("server", "client")
    ]
    directory = write_sweep(tmp_path / "data" / pair / "quick", trials, {"path": "network", "ends": ends})
    store = SweepStore(directory, figures_root=tmp_path / "figures", data_root=tmp_path / "data")
    analyze(store, plugins.draw, n_resamples=200)
    return store


def test_the_comparison_puts_the_pairs_side_by_side_and_says_what_is_missing(tmp_path):
    from copylab.report.blocks import Figure, Markdown
    from copylab.report.hosts.fleet import PairStudy, blocks, crossovers, draw, sweeps_of

    studies = [
        PairStudy("xeon", [_pair_sweep(tmp_path, "xeon", 2048.0, "Intel Xeon E5-2680")]),
        PairStudy("epyc", [_pair_sweep(tmp_path, "epyc", 131072.0, "AMD EPYC 7B13")]),
        PairStudy("arm", [], "arm-server: cannot connect over SSH; nothing was measured"),
    ]
    sweeps = sweeps_of(studies)
    found = crossovers(sweeps)
    assert set(found["pair"]) == {"xeon", "epyc"}, found
    figure = tmp_path / "crossovers.png"
    draw(found).savefig(figure)
    content = blocks(studies, sweeps, figure)
    text = "\n\n".join(block.text for block in content if isinstance(block, Markdown))
    assert [block.path for block in content if isinstance(block, Figure)] == [figure]
    assert "eth1 (driver ixgbe, MTU 9000; offloads on: scatter-gather)" in text.replace("\\", "")
    assert "the crossover differs (epyc (AMD EPYC 7B13, kernel 6.1.0-test, eth1" in text.replace("\\", "")
    assert "# xeon: " in text and "# epyc: " in text and "# arm" not in text.replace("# What", "")
    assert "# What is missing" in text and "- arm: arm-server: cannot connect over SSH" in text.replace("\\", "")
    assert "| arm | not measured | missing: " in text.replace("\\", "")
