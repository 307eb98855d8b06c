"""Robustness: link and process faults, interruption, hostile environments, bad files, stress, security.

Every case records what it tried and what copylab did through the ``outcome`` fixture; after the suite,
./inv test writes test-artifacts/ROBUSTNESS.md from that record and holds the committed ROBUSTNESS.md to it.
Every namespace, sweep and trial directory here carries this run's own tag, so a sweep running beside the suite
is never touched.
"""

from __future__ import annotations

import ast
import csv
import errno
import hashlib
import io
import json
import math
import os
import pwd
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copylab.declarations import config, implementations
from copylab.declarations.config import SweepConfig
from copylab.declarations.schema import COLUMN_NAMES, PERF_EVENTS, SCHEMA_VERSION
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.host.provenance import create
from copylab.measure.planning import schedule
from copylab.measure.running import spec, trial
from copylab.paths import ROOT, program
from copylab.programs import perf
from copylab.record.manifest import Manifest
from copylab.record.store import SweepStore, TrialWriter
from copylab.testbeds import netns, testbed
from tests.conftest import needs_root, path_without, run_in
from tests.robustness_table import (
    Counted,
    Looked,
    look_for_paths,
    rows_due,
    rows_lost_from,
    skip,
    trial_lines,
    trial_rows,
)
from tests.synthetic import HARDWARE_EVENTS, SIDES, load_trials, make_trials, write_sweep
from tests.test_programs import DRIVERS, FILES, VARIANTS, run_pair
from tests.test_sweep import cli, read_rows

TAG = os.getpid() % 100000
PAIR_NAMES = (f"clrob{TAG}_s", f"clrob{TAG}_c")
SLACK_S = 1.5  # "a little" beyond warm-up + duration + GRACE_S


# ---------------------------------------------------------------- helpers


def in_ns(namespace: str, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*netns.exec_prefix(namespace), *command], capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} in {namespace}: {result.stderr.strip()}")
    return result


@contextmanager
def fresh_pair(**changes: Any) -> Iterator[netns.NamespacePair]:
    with netns.namespace_pair(netns.NamespacePair(*PAIR_NAMES, **changes)) as pair:
        yield pair


def wait_for(
    condition: Callable[[], Any], timeout: float, interval: float = 0.01, process: subprocess.Popen[str] | None = None
) -> Any:
    """CONDITION's first true value; fails after TIMEOUT, or at once if PROCESS ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if process is not None and process.poll() is not None:
            raise AssertionError(
                f"the process ended first (exit {process.returncode}): {process.stderr.read()[-2000:]}"
            )
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


def pgrep(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


def leftovers(sweep_name: str | None, namespaces: tuple[str, ...] = PAIR_NAMES, files: tuple[Path, ...] = ()) -> Looked:
    """Namespaces (with their veths and qdiscs), markers, processes, fifos and temporary files left behind."""
    where = [f"namespaces and markers {', '.join(namespaces)}", f"a {netns.INTERFACE} veth in the host namespace"]
    if sweep_name:
        where.append(f"processes and scratch directories of sweep {sweep_name}")
    if files:
        where.append(f"{len(files)} files")
    found = []
    present = netns.existing_namespaces()
    found += [f"namespace {name}" for name in namespaces if name in present]
    found += [f"marker {netns.MARKERS / name}" for name in namespaces if (netns.MARKERS / name).exists()]
    if sweep_name:
        marker = f"copylab-trial-{sweep_name}-"
        found += [f"process {pid}" for pid in pgrep(marker)]
        found += [f"trial directory {path}" for path in Path(tempfile.gettempdir()).glob(f"{marker}*")]
    found += [f"file {path}" for path in files if path.exists()]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    if re.search(rf"^\d+: {netns.INTERFACE}[@:]", links, re.MULTILINE):
        found.append(f"veth {netns.INTERFACE} in the host namespace")
    return Looked(found, "; ".join(where))


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent, start time, state) of a live process; None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[1]), int(fields[19]), fields[0]) if fields[0] != "Z" else None


class Descendants(threading.Thread):
    """Every process below ROOT seen while it runs, so that survivors can be found after it ends."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.seen: dict[int, tuple[int, str]] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error: Exception | None = None

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self._poll()
            except Exception as error:  # surfaced by stop(): a dead watcher must not pass for "no survivors"
                self.error = error
                return
            time.sleep(0.05)

    def _poll(self) -> None:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and (stat := _stat(int(entry.name))):
                children.setdefault(stat[0], []).append(int(entry.name))
        todo = [self.root]
        while todo:
            for pid in children.get(todo.pop(), []):
                todo.append(pid)
                if pid not in self.seen and (stat := _stat(pid)):
                    try:
                        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                    except OSError:
                        continue
                    with self.lock:
                        self.seen[pid] = (stat[1], command.decode(errors="replace").strip())

    def stop(self) -> None:
        self.done.set()
        self.join()
        assert self.error is None, f"the process watcher failed: {self.error!r}"

    def commands(self) -> list[str]:
        with self.lock:
            return [command for _, command in self.seen.values()]

    def survivors(self) -> Looked:
        with self.lock:
            seen = dict(self.seen)
        found = [
            f"process {pid} ({command[:70]})"
            for pid, (start, command) in seen.items()
            if (stat := _stat(pid)) and stat[1] == start
        ]
        return Looked(found, f"the {len(seen)} processes seen below process {self.root}")

    def kernel_files(self) -> list[Path]:
        """Connection files of the notebook kernels it started (temporary files of the analysis)."""
        files = []
        for command in self.commands():
            words = command.split()
            if "ipykernel_launcher" in command and "-f" in words:
                files.append(Path(words[words.index("-f") + 1]))
        return files


def settings_for(
    sweep_name: str, pair: netns.NamespacePair, support: perf.PerfSupport, duration: float = 0.4, warmup: float = 0.1
) -> spec.TrialSettings:
    return spec.TrialSettings(sweep_name, testbed.Namespaces(pair, sweep_name), support, duration, warmup)


def spec_for(
    workload: str = "stream", size: int = 16384, implementation: str = "two_copy", threads: int = 1
) -> spec.TrialSpec:
    return spec.TrialSpec(
        f"{implementation}-{workload}-{size}-{threads}-same_cpu-r1",
        0,
        implementations.get(implementation),
        workload,
        size,
        threads,
        "same_cpu",
        1,
    )


def bound_s(settings: spec.TrialSettings) -> float:
    return settings.warmup_s + settings.duration_s + trial.GRACE_S + SLACK_S


def describe(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        return f"{row['workload']}: failed ({row['error']}) after {row['trial_wall_s']:.1f} s"
    measured = (
        f"mean latency {row['latency_mean_us']:.0f} us"
        if row["workload"] == "rr" and row["latency_mean_us"]
        else f"{row['throughput_gbps']:.3g} Gbit/s"
    )
    return f"{row['workload']}: ok, {measured}, {row['retransmits']} retransmits, {row['trial_wall_s']:.1f} s"


def lost(rows: list[dict[str, Any]], directory: Path) -> Counted:
    """Of the rows due (one per trial run), written to DIRECTORY/trials.csv as a sweep writes them and read back,
    those missing there or carrying neither a measurement nor the cause of their failure."""
    writer = TrialWriter(directory / "trials.csv")
    for row in rows:
        writer.write(row)
    writer.close()
    on_disk = {row["trial_id"]: row for row in trial_rows(directory)}

    def carried(row: dict[str, str] | None) -> bool:
        if row is None:
            return False
        if row["status"] == "failed":
            return bool(row["error"].strip())
        return row["status"] == "ok" and row["throughput_gbps"] != "" and math.isfinite(float(row["throughput_gbps"]))

    return Counted(len(rows), sum(not carried(on_disk.get(row["trial_id"])) for row in rows))


def check_recorded(row: dict[str, Any], settings: spec.TrialSettings) -> None:
    """Ended within the bound, and either measured or failed with its cause: never a silent half row."""
    assert row["trial_wall_s"] <= bound_s(settings), describe(row)
    if row["status"] == "ok":
        assert row["error"] == ""
        assert row["measured_s"] > 0 and row["bytes"] >= 0
        assert row["throughput_gbps"] == pytest.approx(row["bytes"] * 8 / row["measured_s"] / 1e9, rel=1e-6)
    else:
        assert row["status"] == "failed" and row["error"].strip(), row
        assert row.get("throughput_gbps") is None and row.get("bytes") is None


def tcp_counters(namespace: str) -> dict[str, int]:
    """The namespace's TCP counters (/proc/net/snmp and /proc/net/netstat, per namespace)."""
    counters = {}
    for table in ("snmp", "netstat"):
        lines = in_ns(namespace, "cat", f"/proc/net/{table}").stdout.splitlines()
        for names, values in zip(lines[::2], lines[1::2], strict=True):
            if names.startswith("Tcp"):
                counters.update(zip(names.split()[1:], map(int, values.split()[1:]), strict=True))
    return counters


@pytest.fixture(scope="module")
def support() -> perf.PerfSupport:
    return perf.detect()


# ---------------------------------------------------------------- link faults

# Classic BPF for cls_bpf: A = a random u32 (SKF_AD_OFF + SKF_AD_RANDOM); A <= T takes the second return.
_RANDOM_SPLIT = "4,32 0 0 4294963256,37 0 1 {threshold},6 0 0 {above},6 0 0 {below}"


def _random_split(probability: float, below: int, above: int) -> str:
    return _RANDOM_SPLIT.format(threshold=int(probability * 2**32), above=above, below=below)


@dataclass(frozen=True)
class LinkFault:
    id: str
    description: str
    namespace: str  # "server" or "client"
    commands: tuple[tuple[str, ...], ...]
    evidence: str  # retransmits | reordering | latency
    netem: bool = False


TC = ("tc", "qdisc", "add", "dev", netns.INTERFACE)
LINK_FAULTS = [
    LinkFault(
        "netem-loss-1",
        "1% packet loss (netem)",
        "server",
        ((*TC, "root", "netem", "loss", "1%"),),
        "retransmits",
        netem=True,
    ),
    LinkFault(
        "netem-loss-5",
        "5% packet loss (netem)",
        "server",
        ((*TC, "root", "netem", "loss", "5%"),),
        "retransmits",
        netem=True,
    ),
    LinkFault(
        "netem-delay",
        "10 ms delay (netem)",
        "server",
        ((*TC, "root", "netem", "delay", "10ms"),),
        "latency",
        netem=True,
    ),
    LinkFault(
        "netem-reorder",
        "reordering: 25% of packets sent 10 ms early (netem)",
        "server",
        ((*TC, "root", "netem", "delay", "10ms", "reorder", "25%", "50%"),),
        "reordering",
        netem=True,
    ),
    # Dropped on the receiver's ingress, i.e. after leaving the sender: a drop on the sender's own
    # egress is local back-pressure that TCP just retries, not loss.
    LinkFault(
        "bpf-loss-1",
        "1% packet loss (tc bpf random drop on the receiver's ingress)",
        "client",
        (
            (*TC, "clsact"),
            (
                "tc",
                "filter",
                "add",
                "dev",
                netns.INTERFACE,
                "ingress",
                "bpf",
                "da",
                "bytecode",
                _random_split(0.01, below=2, above=0),
            ),
        ),
        "retransmits",
    ),
    LinkFault(
        "bpf-loss-5",
        "5% packet loss (tc bpf random drop on the receiver's ingress)",
        "client",
        (
            (*TC, "clsact"),
            (
                "tc",
                "filter",
                "add",
                "dev",
                netns.INTERFACE,
                "ingress",
                "bpf",
                "da",
                "bytecode",
                _random_split(0.05, below=2, above=0),
            ),
        ),
        "retransmits",
    ),
    # 25% of packets at random through a slow HTB class: they arrive after later ones.
    LinkFault(
        "htb-reorder",
        "reordering: 25% of packets at random through a 200 Mbit/s class (tc htb + bpf)",
        "server",
        (
            (*TC, "root", "handle", "1:", "htb", "default", "10"),
            (
                "tc",
                "class",
                "add",
                "dev",
                netns.INTERFACE,
                "parent",
                "1:",
                "classid",
                "1:10",
                "htb",
                "rate",
                "20gbit",
                "burst",
                "256kb",
            ),
            ("tc", "class", "add", "dev", netns.INTERFACE, "parent", "1:", "classid", "1:20", "htb", "rate", "200mbit"),
            (
                "tc",
                "filter",
                "add",
                "dev",
                netns.INTERFACE,
                "parent",
                "1:",
                "bpf",
                "bytecode",
                _random_split(0.25, below=0x10020, above=0x10010),
            ),
        ),
        "reordering",
    ),
    LinkFault(
        "tbf-slow",
        "a 2 Mbit/s link with a 100 ms queue (tc tbf)",
        "server",
        ((*TC, "root", "tbf", "rate", "2mbit", "burst", "16kb", "latency", "100ms"),),
        "latency",
    ),
]


@needs_root
@pytest.mark.parametrize("fault", LINK_FAULTS, ids=[fault.id for fault in LINK_FAULTS])
def test_link_fault(support, outcome, fault, tmp_path):
    outcome.update(area="link", fault=fault.description, rows_lost=None)
    name = f"rob-link-{TAG}"
    with fresh_pair() as pair:
        namespace = pair.server if fault.namespace == "server" else pair.client
        for command in fault.commands:
            applied = in_ns(namespace, *command, check=not fault.netem)
            if applied.returncode != 0:
                outcome["leftovers"] = None
                skip(outcome, f"this kernel has no netem (tc: {applied.stderr.strip().rstrip('.')})")
        settings = settings_for(name, pair, support)
        before = tcp_counters(pair.client)
        rows = [
            trial.run_trial(spec_for(workload, size), settings) for workload, size in (("stream", 16384), ("rr", 4096))
        ]
        reordered = tcp_counters(pair.client)["TCPOFOQueue"] - before["TCPOFOQueue"]
        qdiscs = in_ns(namespace, "tc", "-s", "qdisc", "show", "dev", netns.INTERFACE).stdout
    dropped = sum(map(int, re.findall(r"dropped (\d+)", qdiscs)))
    outcome["behaviour"] = "; ".join(describe(row) for row in rows) + (
        f"; {dropped} packets dropped by the fault"
        if fault.evidence == "retransmits"
        else f"; {reordered} out-of-order arrivals at the receiver"
        if fault.evidence == "reordering"
        else ""
    )
    outcome.update(leftovers=leftovers(name), rows_lost=lost(rows, tmp_path))
    for row in rows:
        check_recorded(row, settings)
    stream, rr = rows
    # The fault really acted on the link, and the rows show it.
    if fault.evidence == "retransmits":
        assert stream["status"] != "ok" or stream["retransmits"] > 0, describe(stream)
    elif fault.evidence == "reordering":
        assert reordered > 0
    else:
        assert rr["status"] != "ok" or rr["latency_mean_us"] >= 10_000, describe(rr)
    assert outcome["rows_lost"] == Counted(2, 0) and outcome["leftovers"] == []


@needs_root
@pytest.mark.parametrize("flap", [False, True], ids=["down", "down-0.3s-then-up"])
def test_link_goes_down_mid_trial(support, outcome, flap, tmp_path):
    fault = "the link goes down inside the measured window" + (" and comes back 0.3 s later" if flap else "")
    outcome.update(area="link", fault=f"{fault} (ip link set {netns.INTERFACE} down)", rows_lost=None)
    name = f"rob-down-{TAG}"
    with fresh_pair() as pair:
        settings = settings_for(name, pair, support, duration=0.5)
        cuts: list[float] = []

        def cut() -> None:
            wait_for(lambda: pgrep(f"^{program('two_copy_client')} .*copylab-trial-{name}-"), 10)
            time.sleep(settings.warmup_s + 0.15)
            in_ns(pair.server, "ip", "link", "set", netns.INTERFACE, "down")
            cuts.append(time.monotonic())
            if flap:
                time.sleep(0.3)
                in_ns(pair.server, "ip", "link", "set", netns.INTERFACE, "up")

        cutter = threading.Thread(target=cut)
        cutter.start()
        row = trial.run_trial(spec_for(), settings)
        cutter.join()
    outcome.update(behaviour=describe(row), leftovers=leftovers(name), rows_lost=lost([row], tmp_path))
    assert cuts, "the link really went down during the trial"
    check_recorded(row, settings)
    assert outcome["rows_lost"] == Counted(1, 0) and outcome["leftovers"] == []


# ---------------------------------------------------------------- process faults

FAIL_NOW = 'echo "copylab: error: injected failure" >&2; exit 3'
PYTHON_HANG = "import time; time.sleep(600)"
PYTHON_MUTE_SERVER = (
    "import socket, sys, time; a = sys.argv; s = socket.socket(); "
    "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
    "s.bind((a[a.index('--bind') + 1], int(a[a.index('--port') + 1]))); s.listen(64); "
    "time.sleep(600)"
)
PROCESS_FAULTS = {
    # id: (what, role whose program is replaced once, shell snippet it runs instead, expected error)
    "client-killed": ("the client is killed (SIGKILL) inside its measured window", None, None, "client: "),
    "server-exits": ("the server exits 3 at once with an error line", "server", FAIL_NOW, "server: injected failure"),
    "client-exits": ("the client exits 3 at once with an error line", "client", FAIL_NOW, "client: injected failure"),
    "client-hangs": (
        "the client hangs (never ends)",
        "client",
        f'exec python3 -c "{PYTHON_HANG}" "$@"',
        "timed out after",
    ),
    "server-hangs": (
        "the server accepts connections but never serves them",
        "server",
        f'exec python3 -c "{PYTHON_MUTE_SERVER}" "$@"',
        "timed out",  # the client waits 10 s for the server to get ready; this test cuts the trial at 4 s
    ),
}


def small_config(name: str, **changes: Any) -> SweepConfig:
    settings = dict(
        implementations=["two_copy"],
        workloads=["stream"],
        sizes=[4096],
        threads=[1],
        trials=3,
        duration_s=0.3,
        warmup_s=0.05,
        pinning=["same_cpu"],
        namespaces=list(PAIR_NAMES),
        receive=["copy"],
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
    )
    settings.update(changes)
    return config.make_config(name, "quick", **settings)


def replace_once(monkeypatch: pytest.MonkeyPatch, directory: Path, role: str, snippet: str) -> None:
    """The first trial runs SNIPPET instead of the two_copy program of ROLE; later ones (and the sweep's
    availability probe before any trial) the real program."""
    real = program(f"two_copy_{role}")
    wrapper = directory / f"fake_two_copy_{role}"
    wrapper.write_text(
        f'#!/bin/sh\n[ "$1" = --probe ] && exec \'{real}\' "$@"\n'
        f"if mkdir '{directory / 'used'}' 2>/dev/null; then\n{snippet}\nfi\nexec '{real}' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(
        testbed, "program", lambda name, sanitize=None: wrapper if name == real.name else program(name, sanitize)
    )


@needs_root
@pytest.mark.parametrize("fault", list(PROCESS_FAULTS))
def test_process_fault_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch, outcome, fault):
    what, role, snippet, expected = PROCESS_FAULTS[fault]
    outcome.update(area="process", fault=what)
    # The bound under test, shortened to keep the suite fast (still above the client's 3 s connect timeout).
    monkeypatch.setattr(trial, "GRACE_S", 4.0)
    name = f"rob-{fault}-{TAG}"
    config = small_config(name)
    killed: list[str] = []
    if role:
        replace_once(monkeypatch, tmp_path, role, snippet)
    else:

        def kill_first_client() -> None:
            pids = wait_for(lambda: pgrep(f"^{program('two_copy_client')} .*copylab-trial-{name}-"), 20)
            time.sleep(config.warmup_s + 0.1)
            os.kill(int(pids[0]), signal.SIGKILL)
            killed.append(pids[0])

        killer = threading.Thread(target=kill_first_client)
        killer.start()
    result = sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    if not role:
        killer.join()
    trials_csv = tmp_path / name / "trials.csv"
    rows = read_rows(trials_csv)
    failed = [row for row in rows if row["status"] == "failed"]
    before = trials_csv.read_bytes()
    written = trial_lines(trials_csv)
    complete_before = SweepStore(tmp_path / name).read_manifest().complete
    outcome["leftovers"] = leftovers(name)
    # Resume re-runs exactly the failed trial; nothing written before changes.
    resumed = sweep.run(config, SweepStore.under(tmp_path, config.name), resume=True, progress=False)
    after = trials_csv.read_bytes()
    outcome["leftovers"] += leftovers(name)
    ok_ids = {row["trial_id"] for row in read_rows(trials_csv) if row["status"] == "ok"}
    outcome["rows_lost"] = rows_lost_from(written, trials_csv)
    try:
        load_trials(trials_csv)
        loadable = "the resumed file loads"
    except CopylabError as error:
        loadable = f"the loader refuses the resumed file ({str(error).split(': ', 1)[1]})"
    wall = float(failed[0]["trial_wall_s"]) if failed else math.nan
    outcome["behaviour"] = (
        f"row failed after {wall:.1f} s: {failed[0]['error'] if failed else '?'}; the other "
        f"{result.ok} trials ok; --resume re-ran {resumed.ran} and completed the sweep; {loadable}"
    )

    assert len(rows) == result.planned == 3, "every trial has its row"
    assert len(failed) == 1 and result.failed == 1 and result.ok == 2, [r["error"] for r in rows]
    assert failed[0]["order_index"] == "0", "the fault hit the first trial"
    assert expected in failed[0]["error"], failed[0]["error"]
    assert failed[0]["throughput_gbps"] == failed[0]["bytes"] == "", "a failed row carries no measurement"
    assert wall <= config.warmup_s + config.duration_s + trial.GRACE_S + SLACK_S
    if fault == "client-hangs":
        assert wall >= config.warmup_s + config.duration_s + trial.GRACE_S, "killed at the bound, not before"
    if not role:
        assert killed and ("Killed" in failed[0]["error"] or "signal 9" in failed[0]["error"])
    assert not complete_before, "a sweep with a failed trial is not complete"
    assert after.startswith(before) and resumed.ran == 1 and resumed.ok == 1
    assert ok_ids == {spec.trial_id for spec in schedule.plan(config)}
    assert SweepStore(tmp_path / name).read_manifest().complete
    assert outcome["rows_lost"] == Counted(3, 0) and outcome["leftovers"] == []


@needs_root
def test_a_message_file_that_cannot_be_written_fails_its_trials_with_the_cause(tmp_path, monkeypatch, outcome):
    outcome.update(area="environment", fault="the tmpfs for sendfile's message file is full (a 1 MiB tmpfs)")
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], check=True)

    @contextmanager
    def tiny_tmpfs(name: str) -> Iterator[Path]:
        yield full

    monkeypatch.setattr(testbed, "message_files", tiny_tmpfs)
    name = f"rob-fullfs-{TAG}"
    config = small_config(name, implementations=["two_copy", "sendfile"], trials=1)
    try:
        result = sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
        rows = {row["implementation"]: row for row in read_rows(tmp_path / name / "trials.csv")}
        left = Looked([path.name for path in full.iterdir()], "files in the full tmpfs")
    finally:
        subprocess.run(["umount", str(full)], check=True)
    error = rows["sendfile"]["error"]
    outcome.update(
        behaviour=f"sendfile row failed: {error}; two_copy row {rows['two_copy']['status']}; files left in "
        f"the tmpfs: {left or 'none'}",
        rows_lost=rows_due([spec.trial_id for spec in schedule.plan(config)], tmp_path / name),
        leftovers=leftovers(name) + left,
    )
    assert rows["sendfile"]["status"] == "failed" and rows["two_copy"]["status"] == "ok"
    assert "cannot write the message file" in error and "No space left on device" in error, error
    assert outcome["rows_lost"] == Counted(result.planned, 0) and outcome["leftovers"] == []


def test_resumed_failed_trial_leaves_a_loadable_file(tmp_path, outcome):
    outcome.update(
        area="data",
        fault="trials.csv of a sweep resumed after a failed trial (a failed row, then "
        "an ok row with the same trial_id)",
        leftovers=None,
    )
    trials = make_trials(sizes=(1024, 4096), rr_sizes=(64,), threads=(1,), trials=3, seed=3)
    path = write_sweep(tmp_path / "retried", trials) / "trials.csv"
    header, first, *rest = path.read_text().splitlines(keepends=True)
    failed = dict(zip(COLUMN_NAMES, next(csv.reader([first])), strict=True))
    failed.update(
        status="failed", error="server: killed by signal 9", measured_s="", bytes="", messages="", throughput_gbps=""
    )
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(failed.values())
    path.write_text(header + buffer.getvalue() + first + "".join(rest))
    loaded = load_trials(path)
    attempts = lambda rows: [{"trial_id": str(t), "status": str(s)} for t, s in rows]  # noqa: E731
    written = attempts((row["trial_id"], row["status"]) for row in read_rows(path))
    outcome.update(
        behaviour=f"loads all {len(loaded)} rows; the failed attempt is kept and excluded from statistics",
        rows_lost=rows_lost_from(written, attempts(loaded[["trial_id", "status"]].itertuples(index=False))),
    )
    assert outcome["rows_lost"] == Counted(len(trials) + 1, 0)
    assert len(loaded) == len(trials) + 1
    assert (loaded["status"] == "ok").sum() == len(trials)


# ---------------------------------------------------------------- interruption

INTERRUPT_ARGS = (
    "--receive",
    "copy",
    "--implementations",
    "two_copy,zero_copy",
    "--workloads",
    "stream",
    "--sizes",
    "1K,16K",
    "--threads",
    "1",
    "--trials",
    "2",
    "--duration",
    "0.15",
    "--warmup",
    "0.05",
    "--no-calibrate",  # the calibration is not under test here: it costs each sweep about 10 s
)


def _complete_lines(path: Path) -> bytes:
    data = path.read_bytes() if path.exists() else b""
    return data[: data.rfind(b"\n") + 1]


@needs_root
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["namespace-setup", "mid-trial", "analysis"])
def test_interrupted_sweep_leaves_nothing_and_resumes(outcome, moment, signum):
    how = "Ctrl-C (SIGINT to the process group)" if signum == signal.SIGINT else "SIGTERM to run-sweep"
    during = {"namespace-setup": "namespace set-up", "mid-trial": "a trial", "analysis": "the analysis"}[moment]
    outcome.update(area="interruption", fault=f"{how} during {during}, at a seeded random moment")
    rng = random.Random(f"copylab-robustness-{moment}-{signum.name}")
    name = f"rob-int-{moment}-{signum.name.lower()}-{TAG}"
    data = ROOT / "data" / name
    trials_csv = data / "trials.csv"
    outputs = (ROOT / "figures" / name, ROOT / "report" / "sweeps" / f"{name}.ipynb")
    args = (
        "run-sweep",
        "--name",
        name,
        *INTERRUPT_ARGS,
        "--namespaces",
        ",".join(PAIR_NAMES),
        *(() if moment == "analysis" else ("--no-analyze",)),
    )
    shutil.rmtree(data, ignore_errors=True)
    try:
        process = cli(*args)
        watcher = Descendants(process.pid)
        watcher.start()
        if moment == "namespace-setup":
            wait_for(lambda: (netns.MARKERS / PAIR_NAMES[0]).exists(), 60, 0.002, process)
            delay = rng.uniform(0, 0.05)
            phase = f"{delay * 1000:.0f} ms after namespace creation began"
            time.sleep(delay)
        elif moment == "mid-trial":
            rows_first = rng.randrange(0, 6)
            wait_for(lambda: trials_csv.exists() and len(read_rows(trials_csv)) >= rows_first, 60, 0.01, process)
            wait_for(lambda: list(Path(tempfile.gettempdir()).glob(f"copylab-trial-{name}-*")), 30, 0.002, process)
            delay = rng.uniform(0.0, 0.2)  # warm-up + measured window
            phase = f"{delay * 1000:.0f} ms into trial {rows_first + 1}"
            time.sleep(delay)
        else:
            wait_for(lambda: any("ipykernel_launcher" in c for c in watcher.commands()), 120, 0.05, process)
            delay = rng.uniform(0.2, 1.5)  # the analysis of 8 trials can end within 4 s of its start
            phase = f"{delay:.1f} s after the analysis kernel started"
            time.sleep(delay)
        written = _complete_lines(trials_csv)
        os.killpg(process.pid, signum) if signum == signal.SIGINT else process.send_signal(signum)
        _, stderr = process.communicate(timeout=90)
        watcher.stop()
        left = leftovers(name, files=(data / "manifest.json.tmp", *watcher.kernel_files())) + watcher.survivors()
        after = trials_csv.read_bytes() if trials_csv.exists() else b""
        rows = read_rows(trials_csv) if trials_csv.exists() else []
        outcome["leftovers"] = left
        before = written.decode(errors="replace").splitlines()
        outcome["rows_lost"] = rows_lost_from(before[1:], trials_csv)  # the rows written before the signal
        kept = _complete_lines(trials_csv).decode(errors="replace").splitlines()[1:]
        loaded = len(load_trials(trials_csv)) if any(row["status"] == "ok" for row in rows) else None

        assert process.returncode == 130 and "copylab: interrupted" in stderr, stderr[-2000:]
        assert left == [], left
        # Interrupted before its first trial, a new sweep has written nothing (its manifest comes as the trials start).
        nothing_yet = written == after == b""
        assert after.startswith(written) and (nothing_yet or after.endswith(b"\n")), "rows written before are intact"
        assert all(row["status"] in ("ok", "failed") and row["trial_id"] for row in rows)
        assert loaded in (None, len(rows)), "the loader reads every row written before"
        crash = moment == "mid-trial" and signum == signal.SIGTERM and rows
        if crash:
            # A power cut could still leave half a line: the loader names it, --resume cuts it.
            with trials_csv.open("ab") as stream:
                stream.write(after.splitlines(keepends=True)[-1][:40])
            with pytest.raises(CopylabError, match="truncated"):
                load_trials(trials_csv)

        # Interrupted before its first trial, the sweep left nothing to resume (--resume says so): it is run again.
        resumed = data.exists()
        resume = cli(*args, "--resume") if resumed else cli(*args)
        watcher = Descendants(resume.pid)
        watcher.start()
        _, stderr = resume.communicate(timeout=300)
        watcher.stop()
        final = read_rows(trials_csv)
        ok = [row["trial_id"] for row in final if row["status"] == "ok"]
        outcome["leftovers"] += leftovers(name, files=(data / "manifest.json.tmp", *watcher.kernel_files()))
        outcome["leftovers"] += watcher.survivors()
        # Every row written before the signal or by the interrupted run, unchanged after --resume, and a row ok of
        # every trial the sweep plans (interrupted before its first row, the first figure alone would count none).
        planned = [due.trial_id for due in schedule.plan(SweepStore(data).read_manifest().parameters)]
        outcome["rows_lost"] = rows_lost_from(
            [*before[1:], *(line for line in kept if line not in before)], trials_csv
        ) + rows_due(planned, trials_csv, status="ok")
        outcome["behaviour"] = (
            f"signal {phase}: exit {process.returncode}, 'interrupted'; {len(rows)} rows kept intact"
            f"{' (then half a line appended, which the loader named and --resume cut)' if crash else ''}; "
            f"{'--resume' if resumed else 'nothing left, rerun:'} exit {resume.returncode}: {len(ok)} of 8 trials ok"
            f"{', analysis written' if (data / 'crossovers.csv').exists() else ''}"
        )
        assert resume.returncode == 0, stderr[-2000:]
        assert len(ok) == len(set(ok)) == 8, "resume runs exactly the missing trials"
        assert SweepStore(data).read_manifest().complete
        assert load_trials(trials_csv)["trial_id"].is_unique
        if moment == "analysis":
            assert (data / "crossovers.csv").exists() and outputs[1].exists(), "--resume ran the analysis"
        assert outcome["rows_lost"] == Counted(len(rows) + len(planned), 0) and outcome["leftovers"] == []
    finally:
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(outputs[0], ignore_errors=True)
        outputs[1].unlink(missing_ok=True)


# ---------------------------------------------------------------- environment


@needs_root
def test_perf_missing_rows_still_measured(tmp_path, monkeypatch, outcome):
    outcome.update(area="environment", fault="perf is not installed (not on PATH)")
    monkeypatch.setenv("PATH", str(path_without(tmp_path / "bin", ("perf",))))
    name = f"rob-noperf-{TAG}"
    config = small_config(name, implementations=["two_copy", "zero_copy"], trials=1)
    result = sweep.run(config, SweepStore.under(tmp_path, config.name), progress=False)
    rows = read_rows(tmp_path / name / "trials.csv")
    stored = SweepStore(tmp_path / name).read_manifest()
    perf_columns = [f"{side}_{suffix}" for side in SIDES for suffix in PERF_EVENTS.values()]
    outcome.update(
        rows_lost=rows_due([spec.trial_id for spec in schedule.plan(config)], tmp_path / name),
        leftovers=leftovers(name),
        behaviour=(
            f"{result.ok} of {result.planned} rows ok with throughput and CPU times; perf columns empty; "
            f"perf_missing: '{rows[0]['perf_missing']}'; manifest perf.available={stored.perf.available}"
        ),
    )
    assert result.ok == result.planned == len(rows) == 2
    for row in rows:
        assert float(row["throughput_gbps"]) > 0 and float(row["snd_cpu_sys_s"]) + float(row["snd_cpu_user_s"]) > 0
        assert all(row[column] == "" for column in perf_columns), "unmeasured, so empty: never 0"
        assert row["perf_missing"] == "all: perf is not installed"
    assert stored.perf.available is False and stored.toolchain.programs["perf"] is None
    assert set(stored.perf.unsupported_events.values()) == {"perf is not installed"}
    assert outcome["leftovers"] == []


@needs_root
def test_unsupported_hardware_events_are_missing_not_zero(tmp_path, support, outcome):
    outcome.update(area="environment", fault="perf present, hardware events <not supported> (this VM)")
    if not set(HARDWARE_EVENTS) <= set(support.unsupported):
        skip(outcome, f"this host counts hardware events ({', '.join(support.supported)})")
    name = f"rob-hw-{TAG}"
    with fresh_pair() as pair:
        row = trial.run_trial(spec_for(), settings_for(name, pair, support, duration=0.3))
    writer = TrialWriter(tmp_path / "trials.csv")
    writer.write(row)
    writer.close()
    written = read_rows(tmp_path / "trials.csv")[0]
    hardware = [f"{side}_{PERF_EVENTS[event]}" for side in SIDES for event in HARDWARE_EVENTS]
    software = [
        f"{side}_{PERF_EVENTS[event]}" for side in SIDES for event in PERF_EVENTS if event not in HARDWARE_EVENTS
    ]
    outcome.update(
        rows_lost=rows_due([row["trial_id"]], tmp_path / "trials.csv"),
        leftovers=leftovers(name),
        behaviour=(
            f"row {row['status']}; {len(hardware)} hardware columns empty, each named in perf_missing with perf's "
            f"reason ('{support.unsupported[HARDWARE_EVENTS[0]]}'); task-clock {row['snd_task_clock_ms']:.1f} ms "
            "and the other software counters filled"
        ),
    )
    assert row["status"] == "ok", row["error"]
    for column in hardware:
        assert math.isnan(row[column]) and written[column] == "", f"{column} must be missing, never 0"
        assert f"{column}: {support.unsupported[_event_of(column)]}" in row["perf_missing"]
    for column in software:
        assert written[column] != "" and math.isfinite(float(written[column]))
    assert row["snd_task_clock_ms"] > 0 and row["rcv_task_clock_ms"] > 0
    assert outcome["leftovers"] == []


def _event_of(column: str) -> str:
    suffix = column.split("_", 1)[1]
    return next(event for event, name in PERF_EVENTS.items() if name == suffix)


def as_nobody(*command: str, home: str = "/nonexistent", **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "LANG": "C.UTF-8",
        "MPLCONFIGDIR": str(Path(home) / "mpl"),
    }
    return subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        **kwargs,
    )


NOT_ROOT_TASKS = {
    "run-sweep": ("run-sweep", "--name", f"rob-nobody-{TAG}", "--namespaces", ",".join(PAIR_NAMES), "--no-analyze"),
    "netns-up": ("netns-up", "--server", PAIR_NAMES[0], "--client", PAIR_NAMES[1]),
    "netns-down": ("netns-down",),
}


@needs_root  # to drop it
@pytest.mark.parametrize("task", list(NOT_ROOT_TASKS))
def test_not_root_is_refused_in_one_line_before_touching_anything(outcome, task):
    outcome.update(area="environment", fault=f"./inv {task} run by an unprivileged user (nobody)", rows_lost=None)
    # A pair of this test's own stands witness: other tests' namespaces come and go meanwhile, by their owners.
    witness = netns.NamespacePair(f"clwit{os.getpid()}_s", f"clwit{os.getpid()}_c", "10.209.0.1", "10.209.0.2")
    netns.up(witness)
    try:
        result = as_nobody(sys.executable, "-m", "invoke", *NOT_ROOT_TASKS[task], cwd=ROOT)
        survived = {witness.server, witness.client} <= set(netns.owned_namespaces())
    finally:
        netns.down(witness)
    data = ROOT / "data" / f"rob-nobody-{TAG}"
    outcome.update(
        behaviour=f"exit {result.returncode}: {result.stderr.strip()}",
        leftovers=leftovers(None) + look_for_paths(data),
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("copylab: error: "), result.stderr
    # A sweep runs without root (in a user namespace: tests/test_rootless.py), but not into root's data/.
    assert ("is not writable by this user" if task == "run-sweep" else "needs root") in result.stderr
    assert survived, "nothing of anyone's was removed"
    assert outcome["leftovers"] == []


@needs_root
def test_foreign_namespace_of_the_same_name_is_not_clobbered(outcome):
    foreign = PAIR_NAMES[0]
    outcome.update(
        area="environment", fault=f"a namespace named {foreign} exists, made with plain 'ip netns add'", rows_lost=None
    )
    name = f"rob-foreign-{TAG}"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        in_ns(foreign, "ip", "link", "set", "lo", "up")
        identity = os.stat(f"/run/netns/{foreign}").st_ino
        process = cli("run-sweep", "--name", name, "--namespaces", ",".join(PAIR_NAMES), "--no-analyze")
        _, stderr = process.communicate(timeout=60)
        with pytest.raises(CopylabError, match="not created by copylab"):
            netns.up(netns.NamespacePair(*PAIR_NAMES))
        still_there = os.stat(f"/run/netns/{foreign}").st_ino == identity
        lo_up = "UP" in in_ns(foreign, "ip", "-o", "link", "show", "lo").stdout
        outcome.update(
            behaviour=f"exit {process.returncode}: {stderr.strip()}; the namespace left as it was",
            leftovers=leftovers(name, namespaces=(PAIR_NAMES[1],))
            + look_for_paths(netns.MARKERS / foreign, ROOT / "data" / name),
        )
        assert process.returncode == 2 and stderr.count("\n") == 1, stderr
        assert f"namespace {foreign} exists and was not created by copylab" in stderr
        assert still_there and lo_up, "the foreign namespace was not recreated or changed"
        assert outcome["leftovers"] == []
    finally:
        subprocess.run(["ip", "netns", "delete", foreign], check=True)
        shutil.rmtree(ROOT / "data" / name, ignore_errors=True)


@needs_root
def test_namespaces_of_a_running_sweep_are_not_taken_over(outcome):
    outcome.update(area="environment", fault="a second run-sweep names the namespaces a running sweep is using")
    first, second = f"rob-busy-a-{TAG}", f"rob-busy-b-{TAG}"
    common = (
        "--receive",
        "copy",
        "--implementations",
        "two_copy",
        "--workloads",
        "stream",
        "--sizes",
        "4K,16K",
        "--threads",
        "1",
        "--trials",
        "2",
        "--warmup",
        "0.05",
        "--namespaces",
        ",".join(PAIR_NAMES),
        "--no-analyze",
        "--no-calibrate",
    )
    try:
        # Long enough that the second one starts (a Python process) while it still runs.
        running = cli("run-sweep", "--name", first, *common, "--duration", "2")
        wait_for(
            lambda: (
                (ROOT / "data" / first / "trials.csv").exists()
                and len(read_rows(ROOT / "data" / first / "trials.csv")) >= 1
            ),
            60,
        )
        before = trial_lines(ROOT / "data" / first)
        intruder = cli("run-sweep", "--name", second, *common, "--duration", "0.3")
        _, intruder_err = intruder.communicate(timeout=60)
        _, running_err = running.communicate(timeout=120)
        rows = read_rows(ROOT / "data" / first / "trials.csv")
        due = [spec.trial_id for spec in schedule.plan(SweepStore(ROOT / "data" / first).read_manifest().parameters)]
        outcome.update(
            # The rows written before the intrusion kept, and every trial due run to an ok row.
            rows_lost=rows_lost_from(before, ROOT / "data" / first) + rows_due(due, rows, status="ok"),
            leftovers=leftovers(first) + leftovers(second) + look_for_paths(ROOT / "data" / second),
            behaviour=f"second sweep exit {intruder.returncode}: {intruder_err.strip()}; the running "
            f"sweep finished with {len(rows)} rows, exit {running.returncode}",
        )
        assert intruder.returncode == 2 and intruder_err.count("\n") == 1, intruder_err
        assert "is in use by copylab process" in intruder_err
        assert running.returncode == 0, running_err
        assert len(due) == 4 and outcome["rows_lost"].lost == 0 and outcome["leftovers"] == []
    finally:
        shutil.rmtree(ROOT / "data" / first, ignore_errors=True)
        shutil.rmtree(ROOT / "data" / second, ignore_errors=True)


@needs_root
def test_sweeps_setting_up_the_same_namespaces_at_once_leave_one_owner(outcome):
    outcome.update(
        area="environment",
        fault="four processes set up the same namespaces at the same instant (two sweeps started together)",
        rows_lost=None,
    )
    # Each sets the pair up the moment the go file appears, holds it a moment, then takes it down.
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from copylab.testbeds import netns\n"
        "from copylab.errors import CopylabError\n"
        "while not Path(sys.argv[1]).exists(): time.sleep(0.001)\n"
        f"pair = netns.NamespacePair(*{PAIR_NAMES!r})\n"
        "try:\n"
        "    netns.up(pair)\n"
        "except CopylabError as error:\n"
        "    print(error); sys.exit(2)\n"
        "time.sleep(1.0); netns.down(pair)\n"
    )
    go = Path(tempfile.mkdtemp()) / "go"
    racers = [
        subprocess.Popen([sys.executable, "-c", script, str(go)], stdout=subprocess.PIPE, text=True) for _ in range(4)
    ]
    time.sleep(1.0)  # every racer waits for the go file
    go.touch()
    results = [(racer.wait(timeout=60), racer.stdout.read()) for racer in racers]
    shutil.rmtree(go.parent)
    refused = [out for status, out in results if status == 2]
    outcome.update(
        behaviour=f"{sum(status == 0 for status, _ in results)} set the pair up and took it down; "
        f"{len(refused)} refused: {refused[0].strip() if refused else ''}",
        leftovers=leftovers(None),
    )
    assert sorted(status for status, _ in results) == [0, 2, 2, 2], results
    assert all("is in use by copylab process" in out for out in refused), refused
    assert outcome["leftovers"] == []


@needs_root
def test_port_already_taken(support, outcome, tmp_path):
    outcome.update(
        area="environment",
        fault=f"port {spec.PORT} already taken by another listener in the server namespace",
        rows_lost=None,
    )
    name = f"rob-port-{TAG}"
    with fresh_pair() as pair:
        listener = subprocess.Popen(
            [
                *netns.exec_prefix(pair.server),
                sys.executable,
                "-c",
                "import socket, sys, time; s = socket.socket(); s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(128);"
                " print('ready', flush=True); time.sleep(120)",
                pair.server_address,
                str(spec.PORT),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert listener.stdout.readline().strip() == "ready"
            settings = settings_for(name, pair, support, duration=0.2)
            row = trial.run_trial(spec_for(), settings)
        finally:
            listener.kill()
            listener.wait()
    outcome.update(behaviour=describe(row), leftovers=leftovers(name), rows_lost=lost([row], tmp_path))
    check_recorded(row, settings)
    assert row["status"] == "failed" and "Address already in use" in row["error"], row["error"]
    assert row["error"].startswith("server: cannot bind")
    assert outcome["rows_lost"] == Counted(1, 0) and outcome["leftovers"] == []


@needs_root
def test_finished_sweep_is_not_overwritten_without_resume(outcome):
    name = f"rob-finished-{TAG}"
    outcome.update(area="environment", fault=f"data/{name} already holds a finished sweep; run-sweep without --resume")
    directory = ROOT / "data" / name
    try:
        trials = make_trials(sweep=name, sizes=(1024, 4096), rr_sizes=(64,), threads=(1,), trials=3, seed=7)
        write_sweep(directory, trials, {"parameters": {"namespaces": list(PAIR_NAMES)}})
        digests = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in directory.iterdir()}
        before = trial_lines(directory)
        process = cli("run-sweep", "--name", name, "--namespaces", ",".join(PAIR_NAMES), "--no-analyze")
        _, stderr = process.communicate(timeout=60)
        after = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in directory.iterdir()}
        outcome.update(
            behaviour=f"exit {process.returncode}: {stderr.strip()}",
            rows_lost=rows_lost_from(before, directory),
            leftovers=leftovers(name),
        )
        assert process.returncode == 2 and stderr.count("\n") == 1, stderr
        assert "already holds a sweep: pass --resume" in stderr
        assert after == digests, "both files byte for byte as they were"
        assert outcome["rows_lost"] == Counted(len(trials), 0) and outcome["leftovers"] == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# ---------------------------------------------------------------- data files


BAD_MANIFESTS = {
    "not JSON": "{not json",
    "no parameters": '{"sweep": "x", "profile": "quick"}',
    "a foreign setting": json.dumps(
        {"sweep": "x", "profile": "quick", "parameters": {"warp": 9, "namespaces": list(PAIR_NAMES)}}
    ),
    "a list, not an object": "[1, 2]",
}


@needs_root
@pytest.mark.parametrize("damage", list(BAD_MANIFESTS))
def test_resume_with_a_damaged_manifest(outcome, damage):
    name = f"rob-badmanifest-{TAG}"
    outcome.update(area="data", fault=f"run-sweep --resume where manifest.json is {damage}")
    directory = ROOT / "data" / name
    try:
        directory.mkdir(parents=True)
        (directory / "manifest.json").write_text(BAD_MANIFESTS[damage].replace('"x"', json.dumps(name)))
        trials = make_trials(sweep=name, sizes=(1024,), workloads=("stream",), threads=(1,), trials=2, seed=1)
        trials.to_csv(directory / "trials.csv", index=False, lineterminator="\n")
        before = trial_lines(directory)
        process = cli("run-sweep", "--name", name, "--resume", "--no-analyze")
        _, stderr = process.communicate(timeout=60)
        outcome.update(
            behaviour=f"exit {process.returncode}: {stderr.strip()}",
            rows_lost=rows_lost_from(before, directory),
            leftovers=leftovers(name),
        )
        assert process.returncode == 2, stderr
        assert stderr.count("\n") == 1 and stderr.startswith("copylab: error: "), stderr
        assert outcome["rows_lost"] == Counted(len(trials), 0) and outcome["leftovers"] == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@needs_root
def test_resume_refuses_to_append_to_foreign_columns(tmp_path, outcome):
    outcome.update(area="data", fault="run-sweep --resume onto a trials.csv with a foreign column set")
    name = f"rob-foreigncols-{TAG}"
    config = small_config(name)
    directory = tmp_path / name
    directory.mkdir()
    SweepStore(directory).write_manifest(create(config, perf.PerfSupport(False, None), SCHEMA_VERSION))
    trials = make_trials(
        sweep=name, sizes=(4096,), workloads=("stream",), implementations=("two_copy",), threads=(1,), trials=2, seed=2
    ).rename(columns={"throughput_gbps": "goodput_gbps"})
    trials.to_csv(directory / "trials.csv", index=False, lineterminator="\n")
    before = trial_lines(directory)
    with pytest.raises(CopylabError, match="refusing to append") as refused:
        sweep.run(config, SweepStore.under(tmp_path, config.name), resume=True, progress=False)
    with pytest.raises(CopylabError, match=r"(missing|unknown) column") as loader:
        load_trials(directory / "trials.csv")
    outcome.update(
        behaviour=f"resume: {refused.value}; loader: {str(loader.value).split(': ', 1)[1]}",
        rows_lost=rows_lost_from(before, directory),
        leftovers=leftovers(name),
    )
    assert outcome["rows_lost"] == Counted(len(trials), 0) and outcome["leftovers"] == []


@needs_root
def test_resume_refuses_a_sweep_of_an_older_schema(tmp_path, outcome):
    outcome.update(area="data", fault="run-sweep --resume onto a sweep written by an older copylab (schema 1)")
    name = f"rob-oldschema-{TAG}"
    config = small_config(name)
    directory = tmp_path / name
    directory.mkdir()
    SweepStore(directory).write_manifest(create(config, perf.PerfSupport(False, None), 1))
    trials = make_trials(
        sweep=name, sizes=(4096,), workloads=("stream",), implementations=("two_copy",), threads=(1,), trials=2, seed=2
    )
    trials.to_csv(directory / "trials.csv", index=False, lineterminator="\n")
    before = trial_lines(directory)
    with pytest.raises(CopylabError, match="schema version 1 \\(this one writes") as refused:
        sweep.run(config, SweepStore.under(tmp_path, config.name), resume=True, progress=False)
    outcome.update(
        behaviour=f"resume refused: {refused.value}",
        rows_lost=rows_lost_from(before, directory),
        leftovers=leftovers(name),
    )
    assert outcome["rows_lost"] == Counted(len(trials), 0) and outcome["leftovers"] == []


# ---------------------------------------------------------------- correctness under stress

FULL_SIZES = config.profile_settings("copies", "full")["sizes"]


@needs_root
@pytest.mark.parametrize("variant", VARIANTS)
def test_verified_at_every_full_profile_size_with_8_threads(bin_dir, pair, outcome, variant):
    outcome.update(
        area="stress",
        fault=f"{variant} --verify, 8 threads, every full-profile size "
        f"({FULL_SIZES[0]} B to {FULL_SIZES[-1] >> 10} KiB), stream and rr",
        rows_lost=None,
        leftovers=None,
    )
    verified = 0
    cases = [("stream", size) for size in FULL_SIZES] + [("rr", size) for size in (64, 4096, FULL_SIZES[-1])]
    for mode, size in cases:
        server, client = run_pair(bin_dir, pair, variant, mode, size, threads=8, duration=0.15)
        assert client["bytes"] > 0, (mode, size)  # run_pair passes --verify and checks the exit status
        if variant == "zero_copy":
            assert server["zc_completed"] == server["zc_sends"] > 0, (mode, size)
        verified += client["bytes"]
    outcome["behaviour"] = (
        f"{len(cases)} runs with --verify, every client exit 0: "
        f"{verified / 2**20:.0f} MiB in the measured windows checked, 0 bytes differ"
    )


@needs_root
def test_zero_copy_verified_under_enobufs(bin_dir, outcome):
    outcome.update(
        area="stress",
        fault="zero_copy --verify under ENOBUFS pressure (optmem_max 2048), 8 threads, every full-profile size",
        rows_lost=None,
    )
    tight = netns.NamespacePair(f"clrob{TAG}_es", f"clrob{TAG}_ec", optmem_max=2048)
    enobufs, verified = 0, 0
    with netns.namespace_pair(tight):
        for size in FULL_SIZES:
            server, client = run_pair(bin_dir, tight, "zero_copy", "stream", size, threads=8, duration=0.15)
            assert server["zc_completed"] == server["zc_sends"], size
            enobufs += server["zc_enobufs"]
            verified += client["bytes"]
    outcome.update(
        leftovers=leftovers(None, (tight.server, tight.client)),
        behaviour=(
            f"{len(FULL_SIZES)} runs verified ({verified / 2**20:.0f} MiB checked, 0 bytes differ) through "
            f"{enobufs} ENOBUFS retries; every send completed"
        ),
    )
    assert enobufs > 0, "the pressure must be real"
    assert outcome["leftovers"] == []


# ---------------------------------------------------------------- security

SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("c", "run"),
    ("c", "sudo"),
    ("ctx", "run"),
}


def shell_uses(source: str, filename: str) -> list[str]:
    """Calls that hand a command line to a shell: shell=<anything but False>, os.system and relatives."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            literal_false = isinstance(keyword.value, ast.Constant) and keyword.value.value is False
            if keyword.arg == "shell" and not literal_false:
                found.append(f"{filename}:{node.lineno}: shell={ast.unparse(keyword.value)}")
        function = node.func
        if (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and (function.value.id, function.attr) in SHELL_CALLS
        ):
            found.append(f"{filename}:{node.lineno}: {function.value.id}.{function.attr}()")
    return found


def test_no_shell_anywhere(outcome):
    sources = [*sorted((ROOT / "copylab").rglob("*.py")), ROOT / "tasks.py"]
    outcome.update(
        area="security",
        fault="shell=True, os.system, os.popen or invoke's c.run in copylab/ or tasks.py",
        rows_lost=None,
        leftovers=None,
    )
    planted = shell_uses(
        "import os, subprocess\nsubprocess.run('ls', shell=True)\nsubprocess.run(['ls'], "
        "shell=False)\nos.system('ls')\nc.run('make')\n",
        "planted.py",
    )
    found = [hit for path in sources for hit in shell_uses(path.read_text(), str(path.relative_to(ROOT)))]
    outcome["behaviour"] = f"{len(sources)} files scanned: {len(found)} shell calls" + (f" ({found})" if found else "")
    assert planted == ["planted.py:2: shell=True", "planted.py:4: os.system()", "planted.py:5: c.run()"]
    assert found == []


HOSTILE_NAMES = ["-n", "--all", "a;id", "$(id)", "a`id`", "a b", "a\nb", "../x", "x/y", "a|b", ""]


def test_hostile_names_are_rejected(outcome):
    outcome.update(
        area="security",
        fault="namespace and sweep names built to inject options, commands or paths "
        f"({', '.join(map(repr, HOSTILE_NAMES))}), also via a tampered manifest",
        rows_lost=None,
        leftovers=None,
    )
    accepted = []
    for name in HOSTILE_NAMES:
        for attempt in (
            lambda name=name: netns.NamespacePair(name, "ok_c"),
            lambda name=name: netns.NamespacePair("ok_s", name),
            lambda name=name: small_config(name),
            lambda name=name: small_config("ok", namespaces=[name, "ok_c"]),
        ):
            try:
                attempt()
                accepted.append(name)
            except CopylabError:
                pass
    stored = create(small_config("ok"), perf.PerfSupport(False, None), 1).to_dict()
    tampered = [
        dict(stored, sweep="../../etc"),
        dict(stored, parameters=dict(stored["parameters"], namespaces=["$(reboot)", "ok_c"])),
    ]
    for manifest in tampered:
        with pytest.raises(CopylabError):
            Manifest.from_dict(manifest)
    outcome["behaviour"] = (
        f"{len(HOSTILE_NAMES) * 4 + len(tampered)} attempts, "
        f"{len(accepted)} accepted; each refused with a one-line CopylabError"
    )
    assert accepted == []
    assert netns.NamespacePair("a" * 31, "b_1").server == "a" * 31, "the rule still lets ordinary names through"


@needs_root
def test_servers_listen_only_on_the_given_address(bin_dir, pair, outcome):
    outcome.update(
        area="security",
        fault="a waiting server must listen on --bind ADDR only, not 0.0.0.0 / ::",
        rows_lost=None,
        leftovers=None,
    )
    port = 5431
    seen = []
    for variant in VARIANTS:
        server = subprocess.Popen(
            [
                *netns.exec_prefix(pair.server),
                str(bin_dir / f"{variant}_server"),
                "--bind",
                pair.server_address,
                "--port",
                str(port),
                "--size",
                "64",
                "--timeout",
                "10",
                *(["--file", str(FILES / "messages-64.bin")] if DRIVERS[variant].from_file else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # ss names the owner once it has scanned the process's descriptors: wait for that too.
            lines = wait_for(
                lambda: [
                    line
                    for line in run_in(pair.server, ["ss", "-ltnpH", f"sport = :{port}"]).stdout.splitlines()
                    if "users:" in line
                ],
                5,
            )
            refused = run_in(
                pair.server,
                [
                    sys.executable,
                    "-c",
                    "import socket, sys; s = socket.socket(); "
                    "s.settimeout(2); print(s.connect_ex(('127.0.0.1', int(sys.argv[1]))))",
                    str(port),
                ],
            ).stdout.strip()
        finally:
            server.kill()
            server.wait()
        local = [line.split()[3] for line in lines]
        seen.append(f"{variant}: {', '.join(local)}")
        assert local == [f"{pair.server_address}:{port}"], lines
        assert f"pid={server.pid}," in lines[0], "the listener is the server ('ip netns exec' execs it)"
        assert refused == str(errno.ECONNREFUSED), "127.0.0.1 in the namespace must be refused"
    outcome["behaviour"] = "listening sockets (ss -ltnp): " + "; ".join(seen) + "; 127.0.0.1 refused"


NOBODY_ANALYSIS = """
import json, os, sys
from copylab.analysis import analyze_sweep
from copylab.report import plugins
from copylab.explore import explorer
from copylab.record.store import SweepStore
directory = sys.argv[1]
store = SweepStore(directory, figures_root=os.path.join(directory, "figures"))
result = analyze_sweep.analyze(store, plugins.draw, n_resamples=200)
table = explorer.sweep_summary(directory, 0.95, "throughput_gbps")
print(json.dumps({"euid": os.geteuid(), "trials": len(result.trials), "summary": len(result.summary),
                  "crossovers": len(result.crossovers), "written": len(result.written), "explorer": len(table)}))
"""


@needs_root  # to drop it
def test_analysis_and_explorer_need_no_root(outcome):
    outcome.update(
        area="security",
        fault="the analysis (load, statistics, crossovers, figures) and the explorer's tables run as nobody",
        rows_lost=None,
    )
    home = Path(tempfile.mkdtemp(prefix="copylab-rob-nobody-"))
    nobody = pwd.getpwnam("nobody")
    try:
        trials = make_trials(sizes=(1024, 4096, 16384), rr_sizes=(64,), threads=(1,), trials=3, seed=11)
        directory = write_sweep(home / "synthetic", trials)
        for path in (home, *home.rglob("*")):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        result = as_nobody(sys.executable, "-c", NOBODY_ANALYSIS, str(directory), home=str(home), cwd=ROOT)
        assert result.returncode == 0, result.stderr[-3000:]
        report = json.loads(result.stdout.strip().splitlines()[-1])
        outcome.update(
            behaviour=f"as uid {report['euid']}: {report['trials']} trials loaded, {report['summary']} "
            f"summary rows, {report['crossovers']} crossover rows, {report['written']} files "
            f"written, explorer table of {report['explorer']} rows",
            leftovers=Looked([f"process {pid}" for pid in pgrep(str(directory))], f"processes naming {directory}"),
        )
        assert report["euid"] == nobody.pw_uid != 0
        assert report["trials"] == len(trials) and report["summary"] > 0 and report["written"] > 3
        assert report["explorer"] > 0 and outcome["leftovers"] == []
    finally:
        shutil.rmtree(home, ignore_errors=True)
