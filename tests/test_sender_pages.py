"""The sender's pages (--sender-pages), a setting of the whole host: held for a sweep and put back after, refused
where it cannot be set or while another sweep holds the other value, and said before a sweep whose receiver cannot
map what its senders send."""

from __future__ import annotations

import csv
import os
import shutil
import signal

import pytest

from copylab.declarations import config
from copylab.declarations.namespace_pair import NamespacePair
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.planning.schedule import mapping_note
from copylab.paths import ROOT
from copylab.record.store import SweepStore
from copylab.testbeds import sender_pages
from copylab.testbeds.userns import UserNamespaces
from tests.conftest import needs_root
from tests.test_robustness import wait_for
from tests.test_sweep import cli, read_rows

TAG = os.getpid() % 100000


@pytest.fixture
def fake_host(tmp_path, monkeypatch):
    """The sysctl and the lock as files of the test's own, the host at large pages."""
    sysctl = tmp_path / "high_order_alloc_disable"
    sysctl.write_text("0\n")
    monkeypatch.setattr(sender_pages, "SYSCTL", sysctl)
    monkeypatch.setattr(sender_pages, "LOCK", tmp_path / "sender-pages.lock")
    monkeypatch.setattr(sender_pages, "LEFT", tmp_path / "sender-pages.json")
    return sysctl


def test_a_sweep_holds_its_pages_and_puts_the_old_value_back(fake_host):
    with sender_pages.held("small"):
        assert fake_host.read_text() == "1" and sender_pages.current() == "small"
        assert sender_pages.LEFT.exists()  # what ./inv netns-down restores from if the sweep is killed here
    assert fake_host.read_text() == "0" and not sender_pages.LEFT.exists()
    fake_host.write_text("0\n")
    with sender_pages.held("large"):  # already the host's: nothing is written
        assert fake_host.read_text() == "0\n"


def test_a_failing_sweep_puts_the_value_back_too(fake_host):
    with pytest.raises(RuntimeError), sender_pages.held("small"):
        raise RuntimeError("a trial broke")
    assert fake_host.read_text() == "0"


def test_a_sweep_wanting_the_other_value_is_refused_while_one_runs(fake_host):
    with sender_pages.held("large"):
        with pytest.raises(CopylabError, match="another sweep of this machine holds"), sender_pages.held("small"):
            pass
        with sender_pages.held("large"):  # the same value: both may run
            pass
    with sender_pages.held("small"), pytest.raises(CopylabError, match="another sweep"), sender_pages.held("large"):
        pass
    assert fake_host.read_text() == "0"


def test_netns_down_restores_what_a_killed_sweep_left(fake_host):
    assert sender_pages.restore_left() is None
    fake_host.write_text("1")
    sender_pages.LEFT.write_text('{"restore": "large"}')
    assert sender_pages.restore_left() == f"{sender_pages.SYSCTL_NAME}=0 (large pages)"
    assert fake_host.read_text() == "0" and not sender_pages.LEFT.exists()


def mapped_sweep(**changes):
    given = dict(implementations=["two_copy", "zero_copy"], receive=["copy", "mmap"], calibrate=False)
    given.update(changes)
    return config.make_config("m", "quick", **given)


def test_a_sweep_that_cannot_map_says_so_before_it_runs():
    note = mapping_note(mapped_sweep())
    assert note is not None and "two_copy copies its bytes into large pages" in note and "zero_copy" not in note
    assert "one_copy, two_copy copy their bytes" in (
        mapping_note(mapped_sweep(implementations=["one_copy", "two_copy"])) or ""
    )
    assert mapping_note(mapped_sweep(sender_pages="small")) is None
    assert mapping_note(mapped_sweep(receive=["copy"])) is None
    assert mapping_note(mapped_sweep(implementations=["zero_copy"])) is None


def two_hosts(**changes):
    return mapped_sweep(
        server_host="root@192.0.2.1", client_host="root@192.0.2.2", server_address="192.0.2.1", **changes
    )


def test_two_hosts_are_told_when_their_mtu_fills_no_whole_page():
    note = mapping_note(two_hosts(tune_remote=True, mtu=9000))
    assert note is not None and "at MTU 9000 a TCP segment carries 8948 bytes" in note and "61492" in note
    assert mapping_note(two_hosts(tune_remote=True, mtu=61492)) is None
    assert mapping_note(two_hosts()) is None  # the hosts' own MTU, unknown before the sweep


def test_small_pages_are_refused_for_two_hosts_and_without_root(monkeypatch):
    with pytest.raises(CopylabError, match="sender-pages: small is for one host only"):
        two_hosts(sender_pages="small")
    monkeypatch.setattr(sender_pages, "current", lambda: "large")
    monkeypatch.setattr(UserNamespaces, "_require", lambda self: None)
    monkeypatch.setattr("copylab.testbeds.userns.UserNamespace.check_enabled", staticmethod(lambda: None))
    small = mapped_sweep(sender_pages="small")
    bed = UserNamespaces(NamespacePair(*small.namespaces), "m", small)
    with pytest.raises(CopylabError, match="sender-pages: small needs root"), bed.prepared():
        pass


@needs_root
@pytest.mark.serial  # it changes a setting of the whole host, which another test's sweep would run under
def test_small_pages_let_a_copying_senders_bytes_map(tmp_path):
    before = sender_pages.SYSCTL.read_text()
    given = mapped_sweep(
        implementations=["two_copy"],
        workloads=["stream"],
        sizes=[262144],
        threads=[1],
        trials=1,
        duration_s=0.3,
        warmup_s=0.1,
        mtu=61492,
        sender_pages="small",
        namespaces=[f"clpages{TAG}_s", f"clpages{TAG}_c"],
    )
    result = sweep.run(given, SweepStore.under(tmp_path, given.name), progress=False)
    with (tmp_path / "m" / "trials.csv").open(newline="") as stream:
        rows = {row["receive"]: row for row in csv.DictReader(stream)}
    assert result.ok == 2, [row["error"] for row in rows.values()]
    assert int(rows["mmap"]["rx_mapped_bytes"]) > 0  # with large pages: 0 (test_verifiers' mmap sweeps)
    assert sender_pages.SYSCTL.read_text() == before


@needs_root
@pytest.mark.serial  # it changes a setting of the whole host, which another test's sweep would run under
def test_an_interrupted_small_pages_sweep_puts_the_value_back():
    before = sender_pages.SYSCTL.read_text()
    name = f"pages-interrupted-{TAG}"
    data = ROOT / "data" / name
    shutil.rmtree(data, ignore_errors=True)
    try:
        process = cli(
            *("run-sweep", "--name", name, "--profile", "mmap-small", "--trials", "20", "--no-analyze"),
            *("--namespaces", f"clpint{TAG}_s,clpint{TAG}_c"),
        )
        wait_for(lambda: (data / "trials.csv").exists() and read_rows(data / "trials.csv"), 60, 0.05, process)
        assert sender_pages.current() == "small"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130 and "copylab: interrupted" in stderr, stderr[-2000:]
        assert sender_pages.SYSCTL.read_text() == before and not sender_pages.LEFT.exists()
    finally:
        shutil.rmtree(data, ignore_errors=True)
