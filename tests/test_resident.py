"""The resident runner on a host (copylab.testbeds.resident_runner), run here as the SSH server would run it: what it
starts it ends, and its directory goes, when its stdin closes, when its lease runs out, and, when it is killed
outright, at the start of the next runner of the same owner.  Then for real between two hosts over SSH: a runner
killed and a connection dropped in the middle of a sweep, and nothing left on either end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from copylab.measure import sweep
from copylab.record.store import SweepStore
from copylab.testbeds import resident
from tests.conftest import needs_root
from tests.robustness_table import rows_lost_from
from tests.ssh_hosts import TAG, HostPair, command_of, exited, host_pairs, leftovers, namespace_pids, small_sweep
from tests.test_robustness import wait_for
from tests.test_sweep import read_rows


class LocalRunner:
    """The runner script in a child process, spoken to over its stdin and stdout."""

    def __init__(self, sweep_name: str, owner: str, lease_s: float = 30.0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-c", resident.SCRIPT, sweep_name, owner, str(lease_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.work = self.next()["work"]
        self.number = 0

    def next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        message: dict[str, Any] = json.loads(self.process.stdout.readline())
        return message

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.number += 1
        self.process.stdin.write(json.dumps({"id": self.number, "op": op, **fields}) + "\n")
        self.process.stdin.flush()
        while "id" not in (answer := self.next()):
            pass
        return answer

    def start_sleep(self, key: str) -> int:
        pid: int = self.ask("start", key=key, argv=["sleep", "300"], deadline_s=600)["pid"]
        wait_for(lambda: any("sleep 300" in command_of(p) for p in _session(pid)), 10)
        return pid


def _session(session: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.fixture
def runners() -> Iterator[list[LocalRunner]]:
    started: list[LocalRunner] = []
    yield started
    for runner in started:
        if runner.process.stdin is not None and not runner.process.stdin.closed:
            runner.process.stdin.close()  # it ends what it started and removes its directory
        try:
            runner.process.wait(10)
        except subprocess.TimeoutExpired:
            runner.process.kill()
            runner.process.wait(10)
    for runner in started:
        assert not Path(runner.work).exists(), f"{runner.work} left behind"


def test_a_runner_answers_and_ends_everything_when_its_stdin_closes(runners):
    runner = LocalRunner(f"resident-eof-{TAG}", "pytest:eof")
    runners.append(runner)
    assert Path(runner.work).is_dir() and runner.work.startswith(f"/tmp/copylab-remote-resident-eof-{TAG}-")
    ran = runner.ask("run", argv=["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
    assert (ran["returncode"], ran["stdout"], ran["stderr"]) == (3, "out\n", "err\n")
    assert runner.ask("run", argv=["sleep", "5"], timeout_s=0.2)["timeout"] is True
    assert runner.ask("run", argv=["no-such-program-here"], timeout_s=5)["returncode"] == 127
    session = runner.start_sleep("k1")
    assert Path(f"{runner.work}/k1.pid").read_text() == str(session)
    assert runner.process.stdin is not None
    runner.process.stdin.close()
    assert runner.process.wait(10) == 0
    wait_for(lambda: not _session(session), 10)
    assert not Path(runner.work).exists()


def test_a_killed_process_comes_back_as_an_exit_by_its_signal(runners):
    runner = LocalRunner(f"resident-kill-{TAG}", "pytest:kill")
    runners.append(runner)
    runner.start_sleep("k1")
    runner.ask("kill", key="k1")
    while (ended := runner.next()).get("event") != "exited":
        pass
    assert ended["key"] == "k1" and ended["returncode"] == -signal.SIGKILL
    assert not Path(f"{runner.work}/k1.pid").exists()


def test_a_silent_controller_ends_the_runner_within_its_lease(runners):
    runner = LocalRunner(f"resident-lease-{TAG}", "pytest:lease", lease_s=1.0)
    runners.append(runner)
    session = runner.start_sleep("k1")
    started = time.monotonic()
    runner.process.wait(10)
    assert time.monotonic() - started < 5
    wait_for(lambda: not _session(session), 10)
    assert not Path(runner.work).exists()


def test_a_runner_killed_outright_is_cleaned_up_by_the_next_of_its_owner(runners):
    name = f"resident-killed-{TAG}"
    first = LocalRunner(name, "pytest:killed")
    runners.append(first)
    session = first.start_sleep("k1")
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait(10)
    # its program dies with it (setpriv's death signal, through timeout's)
    wait_for(lambda: not _session(session), 10)
    stranger = LocalRunner(name, "pytest:someone-else")
    runners.append(stranger)
    assert Path(first.work).is_dir(), "another owner's runner leaves it alone"
    second = LocalRunner(name, "pytest:killed")
    runners.append(second)
    assert not Path(first.work).exists() and Path(second.work).is_dir() and Path(stranger.work).is_dir()
    for runner in (stranger, second):
        assert runner.process.stdin is not None
        runner.process.stdin.close()
        runner.process.wait(10)
    assert not Path(second.work).exists() and not Path(stranger.work).exists()


# ---------------------------------------------------------------- for real, between two hosts over SSH


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostPair]:
    if os.geteuid() != 0:
        pytest.skip("two hosts in namespaces need root (ip netns, sshd)")
    with host_pairs(1, tmp_path_factory.mktemp("ssh")) as (bed,):
        yield bed


def _runner_pid(namespace: str) -> int:
    found = [pid for pid in namespace_pids(namespace) if "python3 -u -c" in command_of(pid) and not exited(pid)]
    assert len(found) == 1, found
    return found[0]


def _connection_sessions(bed: HostPair, namespace: str) -> list[int]:
    """The sshd processes serving the controller's connections (not the listener)."""
    listener = bed.sshd[namespace].pid
    return [pid for pid in namespace_pids(namespace) if "sshd" in command_of(pid) and pid != listener]


@needs_root
def test_a_killed_runner_and_a_dropped_connection_mid_sweep_leave_nothing_behind(hosts, tmp_path, outcome):
    outcome.update(area="two hosts", fault="the server's runner killed, then the client's connection dropped")
    name = f"resident-fault-{TAG}"
    settings = small_sweep(name, hosts.settings())
    namespaces_before = _own_namespaces(hosts)
    faults: list[str] = []
    before: list[dict[str, str]] = []

    def fault(row: dict[str, Any]) -> None:
        # after the first row the server's runner is killed outright; after the third the client's connection drops
        if len(faults) == 0:
            os.kill(_runner_pid(hosts.server_ns), signal.SIGKILL)
            faults.append("runner")
        elif len(faults) == 1 and row["order_index"] >= 2 and row["status"] == "ok":
            before.extend(read_rows(tmp_path / name / "trials.csv"))
            for pid in _connection_sessions(hosts, hosts.client_ns):
                os.kill(pid, signal.SIGKILL)
            faults.append("connection")

    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False, on_row=fault)
    rows = read_rows(tmp_path / name / "trials.csv")
    failed = [row for row in rows if row["status"] == "failed"]
    left = leftovers(name, list(hosts.namespaces))
    namespaces_after = _own_namespaces(hosts)
    outcome.update(
        behaviour=f"{len(failed)} trials failed ({'; '.join(row['error'] for row in failed)}), the sweep went on",
        rows_lost=rows_lost_from(before, rows),
        leftovers=left,
    )
    assert faults == ["runner", "connection"]
    assert len(rows) == result.planned == 6 and 1 <= len(failed) <= 2, rows
    assert any("server host" in row["error"] and "its runner ended" in row["error"] for row in failed), failed
    assert any("client host" in row["error"] and "SSH connection dropped" in row["error"] for row in failed), failed
    assert rows[-1]["status"] == "ok", "both ends came back: the sweep went on after the faults"
    assert outcome["rows_lost"].lost == 0 and left == [] and namespaces_after == namespaces_before


def _own_namespaces(hosts: Any) -> list[str]:
    """The namespaces named as this test's hosts are: tests in other workers make and remove their own meanwhile."""
    prefix = hosts.server_ns.partition("_")[0] + "_"  # clrmTAG_: every pair of this test run
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    return sorted(line.split()[0] for line in listed if line.startswith(prefix) and line.strip())
