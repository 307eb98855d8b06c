"""Two hosts over SSH, for real: two network namespaces joined by a data veth, each running its own sshd
reached from this namespace over a control veth, with throwaway host and client keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from copylab.declarations import config
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.record.store import SweepStore
from copylab.report.blocks import Markdown
from copylab.report.experiments.copies import report as copies_report
from copylab.report.results import load_results
from copylab.testbeds import netns
from tests.conftest import needs_root, path_without
from tests.robustness_table import Looked, rows_due, rows_lost_from, trial_rows
from tests.ssh_hosts import (
    TAG,
    HostPair,
    command_of,
    control,
    host_pairs,
    leftovers,
    namespace_pids,
    pair_namespaces,
    run,
    running_in,
    small_sweep,
)
from tests.test_reference_report import compose
from tests.test_robustness import wait_for
from tests.test_sweep import cli, read_rows

SERVER_NS, CLIENT_NS = pair_namespaces(0)
# Each namespace's control link: (this namespace's side, the namespace's side, where its sshd listens).
CONTROL = {SERVER_NS: control(0, "server"), CLIENT_NS: control(0, "client")}


def remote_leftovers(name: str, settle_s: float = 3.0) -> Looked:
    """What a sweep named NAME left on the controller and on each of the two 'hosts'."""
    return leftovers(name, [SERVER_NS, CLIENT_NS], settle_s)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostPair]:
    if os.geteuid() != 0:
        pytest.skip("two hosts in namespaces need root (ip netns, sshd)")
    with host_pairs(1, tmp_path_factory.mktemp("ssh")) as (bed,):
        yield bed


def _manifest(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "manifest.json").read_text())


@needs_root
def test_copies_sweep_between_two_hosts(hosts, tmp_path):
    name = f"remote-copies-{TAG}"
    settings = small_sweep(
        name,
        hosts.settings(),
        implementations=["two_copy", "zero_copy", "sendfile"],
        workloads=["stream", "rr"],
        sizes=[65536],
        rr_sizes=[64],
        trials=1,
        pinning=["split_cpu"],
        verify=True,
        calibrate=None,
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    rows = read_rows(tmp_path / name / "trials.csv")
    assert result.failed == 0, result.failures
    assert len(rows) == result.planned == 6 and all(row["status"] == "ok" for row in rows)
    zero_copy = [row for row in rows if row["implementation"] == "zero_copy" and row["workload"] == "stream"]
    assert all(int(row["zc_sends"]) > 0 and row["zc_copied"] != "" for row in zero_copy), zero_copy
    manifest = _manifest(tmp_path / name)
    assert manifest["path"] == "network" and manifest["complete"]
    ends = {end["role"]: end for end in manifest["ends"]}
    assert ends["server"]["target"] == hosts.server_host and ends["client"]["target"] == hosts.client_host
    for end in ends.values():
        assert end["host"]["kernel"] == os.uname().release and end["host"]["cores"] >= 1
        assert end["link"]["interface"] == netns.INTERFACE, end  # the data veth, not the control link
        assert end["link"]["driver"] == "veth" and end["link"]["mtu"] == 1500
        assert end["link"]["offloads"]["scatter-gather"].startswith("on"), end["link"]["offloads"]
    assert manifest["calibration"]["memcpy_gbps"] > 0
    # the zero-copy ring from the path, measured between the hosts before the trials, in every row
    chosen = manifest["in_flight"]
    assert chosen["throughput_gbps"] > 0 and chosen["srtt_us"] > 0 and chosen["zc_inflight"] >= 256 << 10
    assert {int(row["zc_inflight_bytes"]) for row in rows} == {chosen["zc_inflight"]}
    assert remote_leftovers(name) == []
    # The report names both hosts and the path, and never assumes local delivery.
    report = compose(tmp_path / "report", tmp_path / name)
    assert "| Path | network: two hosts over SSH |" in report
    assert f"| Server host | {hosts.server_host}: " in report and f"| Client host | {hosts.client_host}: " in report
    link = report[report.find("| Server link |") :].split("\n")[0]
    assert link.startswith(f"| Server link | {netns.INTERFACE} (driver veth), MTU 1500; offloads: ") and (
        "scatter-gather on" in link
    ), link
    assert "local delivery" not in report and "veth pair" not in report
    # The answers (at a glance and in Part E) say they are for a real link and name it: both hosts and the card.
    scratch = tmp_path / "report"  # where compose() analysed a copy of the sweep
    results = load_results(SweepStore(scratch / "data" / name, scratch / "figures", scratch / "data"))
    said = [block.text for block in copies_report.front(results) if isinstance(block, Markdown)]
    said += [block.text for block in copies_report.parts(results) if isinstance(block, Markdown)]
    claims = [text.replace("\\", "") for text in said if text.startswith("These answers are for a real link")]
    assert len(claims) == 2, said[:3]
    link = claims[0]
    assert f"{hosts.server_host} (" in link and f"to {hosts.client_host} (" in link, link
    assert f"over {netns.INTERFACE} (driver veth, MTU 1500; offloads on: " in link, link


@needs_root
def test_servers_sweep_between_two_hosts(hosts, tmp_path):
    name = f"remote-servers-{TAG}"
    settings = config.make_config(
        name,
        "quick",
        experiment="servers",
        **hosts.settings(
            implementations=["thread", "epoll"], connections=[1, 20], rr_sizes=[64], trials=1, duration_s=0.3
        ),
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    rows = read_rows(tmp_path / name / "trials.csv")
    assert result.failed == 0, result.failures
    assert {(row["implementation"], row["connections"]) for row in rows} == {
        (model, str(count)) for model in ("thread", "epoll") for count in (1, 20)
    }
    assert all(float(row["requests_per_s"]) > 0 and row["connections_served"] == row["connections"] for row in rows)
    assert remote_leftovers(name) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"client_host": None}, "client-host: missing"),
        ({"server_host": "10.207.1.2"}, "server-host: '10.207.1.2' is not USER@HOST or USER@HOST:PORT"),
        ({"server_host": "root@h:70000"}, "server-host: port 70000 is not from 1 to 65535"),
        ({"server_address": None}, "server-address: missing"),
        ({"server_address": "server.example"}, "server-address: 'server.example' is not an IPv4 address"),
        ({"ssh_config": "/nonexistent/ssh_config"}, "ssh-config: /nonexistent/ssh_config is not a readable file"),
    ],
)
def test_bad_two_host_settings_are_refused_in_one_line(changes, message, tmp_path):
    given = {"server_host": "root@a", "client_host": "root@b", "server_address": "10.0.0.1", **changes}
    with pytest.raises(CopylabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.make_config("bad", "quick", **given)
    assert not (tmp_path / "bad").exists()


def test_host_settings_without_hosts_are_refused():
    for given in ({"server_address": "10.0.0.1"}, {"tune_remote": True}):
        with pytest.raises(CopylabError, match="only for two hosts"):
            config.make_config("bad", "quick", **given)


def _refused(hosts: HostPair, tmp_path: Path, name: str, **changes: Any) -> str:
    settings = config.make_config(
        name,
        "quick",
        **hosts.settings(
            implementations=["two_copy"], workloads=["stream"], sizes=[4096], threads=[1], trials=1, **changes
        ),
    )
    with pytest.raises(CopylabError) as refused:
        sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    assert not (tmp_path / name).exists(), "a refused sweep writes nothing"
    left = remote_leftovers(name)
    assert left == []
    message = str(refused.value)
    assert "\n" not in message
    return message, left


@needs_root
def test_an_unreachable_host_is_named_in_one_line(hosts, tmp_path, outcome):
    outcome.update(area="two hosts", fault="the client host's SSH port refuses connections")
    message, left = _refused(hosts, tmp_path, f"remote-unreach-{TAG}", client_host=f"root@{CONTROL[CLIENT_NS][1]}:2222")
    outcome.update(behaviour=message, rows_lost=None, leftovers=left)  # refused before any row: n/a
    assert message.startswith(f"client host root@{CONTROL[CLIENT_NS][1]}:2222: cannot connect over SSH"), message


@needs_root
def test_a_refused_key_and_an_unknown_host_key_are_named(hosts, tmp_path, outcome):
    outcome.update(area="two hosts", fault="the server refuses the key offered; then a host key not in known_hosts")
    stranger = hosts.keys / "stranger"
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger))
    refusing = tmp_path / "refusing_config"
    refusing.write_text(hosts.ssh_config.read_text().replace(f"{hosts.keys}/id_ed25519", str(stranger)))
    refused, left = _refused(hosts, tmp_path, f"remote-key-{TAG}", ssh_config=str(refusing))
    (tmp_path / "empty_known_hosts").write_text("")
    unknown_config = tmp_path / "unknown_config"
    unknown_config.write_text(
        hosts.ssh_config.read_text().replace(f"{hosts.keys}/known_hosts", str(tmp_path / "empty_known_hosts"))
    )
    unknown, also_left = _refused(hosts, tmp_path, f"remote-hostkey-{TAG}", ssh_config=str(unknown_config))
    outcome.update(behaviour=f"{refused} | {unknown}", rows_lost=None, leftovers=left + also_left)
    assert "refused every key offered" in refused and "never asks for a password" in refused
    assert "host key is unknown" in unknown


@needs_root
def test_a_host_without_gcc_is_named(hosts, tmp_path, outcome):
    outcome.update(area="two hosts", fault="the server host has no gcc on its PATH")
    bare = path_without(tmp_path / "bin", ("gcc", "cc", "x86_64-linux-gnu-gcc"))
    without_gcc = hosts.sshd_config(SERVER_NS, extra=f"SetEnv PATH={bare}\n")
    hosts.start_sshd(SERVER_NS, without_gcc)
    try:
        message, left = _refused(hosts, tmp_path, f"remote-nogcc-{TAG}")
    finally:
        hosts.start_sshd(SERVER_NS)
    outcome.update(behaviour=message, rows_lost=None, leftovers=left)
    assert message.startswith(f"server host {hosts.server_host}: gcc not found"), message


@needs_root
def test_a_host_lost_mid_sweep_fails_the_trial_and_resume_finishes(hosts, tmp_path, outcome):
    outcome.update(area="two hosts", fault="the client host's sshd and sessions are killed during a trial")
    name = f"remote-lost-{TAG}"
    settings = small_sweep(name, hosts.settings(), trials=2, duration_s=0.5, receive=None)
    trials_csv = tmp_path / name / "trials.csv"
    lost: list[threading.Thread] = []

    def go_away() -> None:
        wait_for(lambda: running_in(CLIENT_NS, "two_copy_client"), 30, 0.01)
        time.sleep(0.3)
        hosts.stop_sshd(CLIENT_NS)

    def lose_the_client(row: dict[str, Any]) -> None:
        # Once the first row is written, the client host goes away during the next trial.
        if not lost:
            lost.append(threading.Thread(target=go_away))
            lost[0].start()

    with pytest.raises(CopylabError, match="finish with --resume") as stopped:
        sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False, on_row=lose_the_client)
    lost[0].join()
    rows = read_rows(trials_csv)
    failed = [row for row in rows if row["status"] == "failed"]
    hosts.start_sshd(CLIENT_NS)
    resumed = sweep.run(settings, SweepStore.under(tmp_path, settings.name), resume=True, progress=False)
    after = read_rows(trials_csv)
    ok = {row["trial_id"] for row in after if row["status"] == "ok"}
    left = remote_leftovers(name)
    outcome.update(
        behaviour=f"failed row: {failed[0]['error'] if failed else 'none'}; sweep stopped: {stopped.value}; "
        f"--resume ran {resumed.ran} trials",
        # The rows written before the host went away kept, and every trial due run to an ok row.
        rows_lost=rows_lost_from(rows, after)
        + rows_due([spec.trial_id for spec in schedule.plan(settings)], after, status="ok"),
        leftovers=left,
    )
    assert rows[0]["status"] == "ok" and len(failed) == 1, rows
    assert "SSH" in failed[0]["error"] or "client" in failed[0]["error"], failed[0]
    assert ok == {spec.trial_id for spec in schedule.plan(settings)} and resumed.failed == 0
    assert SweepStore(tmp_path / name).read_manifest().complete
    assert outcome["rows_lost"].lost == 0 and left == []


@needs_root
def test_ctrl_c_during_a_remote_trial_leaves_nothing_on_either_host(hosts, outcome):
    outcome.update(area="two hosts", fault="Ctrl-C (SIGINT to the process group) during a remote trial")
    name = f"remote-int-{TAG}"
    data = Path(__file__).resolve().parents[1] / "data" / name
    args = [f"--{key.replace('_', '-')}={value}" for key, value in hosts.settings().items()]
    process = cli(
        "run-sweep",
        "--name",
        name,
        "--implementations=two_copy",
        "--workloads=stream",
        "--sizes=4K",
        "--threads=1",
        "--trials=3",
        "--duration=2",
        "--no-analyze",
        "--no-calibrate",
        *args,
    )
    try:
        # Once the first trial's row is written, the signal lands in the second trial's measured window.
        wait_for(lambda: trial_rows(data), 120, 0.02, process)
        wait_for(
            lambda: any("two_copy_client" in command_of(pid) for pid in namespace_pids(CLIENT_NS)), 60, 0.02, process
        )
        time.sleep(0.5)
        before = trial_rows(data)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=90)
        left = remote_leftovers(name)
        outcome.update(
            behaviour=f"exit {process.returncode} with {len(before)} rows written: {stderr.strip()[-200:]}",
            rows_lost=rows_lost_from(before, data),
            leftovers=left,
        )
        assert process.returncode == 130 and "copylab: interrupted" in stderr, stderr[-2000:]
        assert before and outcome["rows_lost"].lost == 0 and left == []
    finally:
        if process.poll() is None:
            process.kill()
        subprocess.run(["rm", "-rf", str(data)], check=False)


@needs_root
def test_tune_remote_sets_and_restores_mtu_and_optmem_max(hosts, tmp_path):
    name = f"remote-tune-{TAG}"

    def state() -> list[str]:
        return [
            run(
                *netns.exec_prefix(ns),
                "sh",
                "-c",
                f"cat /sys/class/net/{netns.INTERFACE}/mtu; sysctl -n net.core.optmem_max",
            ).stdout
            for ns in (SERVER_NS, CLIENT_NS)
        ]

    before = state()
    settings = small_sweep(
        name,
        hosts.settings(),
        sizes=[65536],
        trials=1,
        duration_s=0.2,
        warmup_s=None,
        receive=None,
        mtu=4000,
        optmem_max=1048576,
        tune_remote=True,
    )
    seen: list[list[str]] = []
    result = sweep.run(
        settings, SweepStore.under(tmp_path, settings.name), progress=False, on_row=lambda row: seen.append(state())
    )
    manifest = _manifest(tmp_path / name)
    assert result.failed == 0, result.failures
    assert seen[0] == ["4000\n1048576\n"] * 2, seen
    assert state() == before
    assert all(end["tuned"] == {"net.core.optmem_max": "1048576", "mtu": "4000"} for end in manifest["ends"])
    assert remote_leftovers(name) == []


@needs_root
def test_bpftrace_on_a_host_whose_controller_is_gone_ends_within_its_lease(hosts, outcome):
    """The controller's SSH connection is lost without a word: nobody renews bpftrace's lease on the client host,
    and it ends by itself within the lease (a trial's bound in a sweep; 3 s here)."""
    from copylab.measure.running import kernel_copies
    from copylab.testbeds.remote import RemoteEnd

    outcome.update(area="two hosts", fault="the controller vanishes while bpftrace counts on the client host")
    end = RemoteEnd("client", hosts.client_host, str(hosts.ssh_config))
    end.connect()
    end.create_work(f"lease-{TAG}", "pytest")
    try:
        counts = kernel_copies.Accounting(end, lease_s=3)
        with end.scratch("copylab-kcopy-lease-") as directory:
            counts.start(directory)
            assert counts.receive_reason is None, counts.receive_reason
            assert running_in(CLIENT_NS, "bpftrace")
            assert end.connection is not None
            end.connection.close()  # gone: no kill, no clean-up, no renewal
            lost = time.monotonic()
            wait_for(lambda: not running_in(CLIENT_NS, "bpftrace"), 15, 0.2)
            lived = time.monotonic() - lost
    finally:
        end.connect()
        end.remove_work()
    bpftrace = [
        f"process {pid} ({command_of(pid)[:60]})" for pid in namespace_pids(CLIENT_NS) if "bpftrace" in command_of(pid)
    ]
    left = Looked(bpftrace, "bpftrace processes on the client host") + remote_leftovers(f"lease-{TAG}")
    behaviour = f"bpftrace ended by itself {lived:.1f} s after the connection was lost"
    outcome.update(behaviour=behaviour, rows_lost=None, leftovers=left)
    assert lived <= 3 + 3 and not left
