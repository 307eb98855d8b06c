"""Kernel copy accounting: the bytes the kernel copies to user space, counted with BPF in each window, written
only when the window was counted whole."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from copylab.declarations import config
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.measure.running import kernel_copies
from copylab.measure.running.window import Window
from copylab.record.store import SweepStore
from copylab.testbeds.testbed import Completed, NamespaceEnd
from tests.conftest import needs_root
from tests.robustness_table import Counted, Looked, rows_due
from tests.test_robustness import leftovers, pgrep
from tests.test_sweep import read_rows

# Counts taken in measured windows: another test loading the CPUs would stretch the windows' timing.
pytestmark = pytest.mark.serial

TAG = os.getpid() % 100000


def _small(name: str, **changes: object) -> config.SweepConfig:
    settings: dict[str, object] = dict(
        implementations=["two_copy", "zero_copy"],
        workloads=["stream"],
        sizes=[65536],
        threads=[1],
        trials=1,
        duration_s=0.3,
        warmup_s=0.05,
        pinning=["same_cpu"],
        receive=["copy", "truncate"],
        namespaces=[f"clkc{TAG}_s", f"clkc{TAG}_c"],
        calibrate=False,  # the calibration is not under test here: it costs each sweep about 10 s
        kernel_copies=True,  # asked for: the quick profile runs without the counts
    )
    settings.update(changes)
    return config.make_config(name, "quick", **settings)


@needs_root
def test_every_window_is_counted_whole_and_a_zero_is_a_measured_zero(tmp_path):
    """Three senders, 4 and 64 KiB, 12 trials receiving by copy and 8 by MSG_TRUNC: every copy row's count is
    within 0.9-1.1 of the bytes delivered (or empty with the reason), and a truncate row's 0 comes with the
    kernel's own count of the bytes that arrived."""
    # 2 blocks: each row is held on its own, and the serial part waits for every trial of this sweep
    settings = _small(
        "kc",
        implementations=["two_copy", "one_copy", "zero_copy"],
        sizes=[4096, 65536],
        trials=2,
        receive_for=["two_copy", "zero_copy"],
    )
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False)
    rows = read_rows(tmp_path / "kc" / "trials.csv")
    assert result.failed == 0, result.failures
    assert sum(row["receive"] == "copy" for row in rows) == 12 and len(rows) == 20
    for row in rows:
        delivered = int(row["bytes"])
        if row["rcv_kernel_copy_bytes"] == "":
            assert "rcv_kernel_copy_bytes: " in row["kernel_copy_missing"], row
            continue
        copied, received = int(row["rcv_kernel_copy_bytes"]), int(row["rcv_kernel_received_bytes"])
        assert 0.9 <= received / delivered <= 1.1, row
        if row["receive"] == "copy":
            assert 0.9 <= copied / delivered <= 1.1, row
        else:
            assert copied == 0, row  # MSG_TRUNC: the bytes arrived and the kernel copied none to user space
        assert row["snd_kernel_copy_bytes"] == row["zc_deferred_copy_bytes"] == ""
        assert "snd_kernel_copy_bytes: " in row["kernel_copy_missing"], row["kernel_copy_missing"]
        skbs, segments = int(row["snd_skbs"]), int(row["snd_skb_segments"])
        assert 0 < skbs <= segments and segments * 1448 >= 0.9 * delivered, row  # MSS 1448 at MTU 1500
    assert sum(row["rcv_kernel_copy_bytes"] != "" for row in rows) >= 18, "nearly every window is counted"
    # 8 fields from malloc are 8 pieces of pages: zero_copy's 4 KiB skbs carry them as 8 fragments or more, while
    # the copying senders' bytes land in the socket's own pages, a fragment or two per skb.
    fragments = {
        name: sum(int(r["snd_skb_frags"]) for r in mine) / sum(int(r["snd_skbs"]) for r in mine)
        for name in ("zero_copy", "one_copy")
        if (mine := [r for r in rows if r["implementation"] == name and r["size_bytes"] == "4096" and r["snd_skbs"]])
    }
    assert fragments["zero_copy"] >= 8 > fragments["one_copy"], fragments
    assert not list(tmp_path.glob("copylab-kcopy-*"))


@needs_root
def test_accounting_off_leaves_the_columns_empty_with_the_reason(tmp_path):
    result = sweep.run(
        _small("off", receive=["copy"], kernel_copies=False), SweepStore.under(tmp_path, "off"), progress=False
    )
    rows = read_rows(tmp_path / "off" / "trials.csv")
    assert len(rows) == result.planned > 0, "a row for every trial planned"
    for row in rows:
        assert row["rcv_kernel_copy_bytes"] == "" and "off (no --kernel-copies)" in row["kernel_copy_missing"]


class _WithoutBpftrace(NamespaceEnd):
    def run(self, command: list[str], timeout: float = 30) -> Completed:
        if command[0] == "bpftrace":
            raise FileNotFoundError(command[0])
        return super().run(command, timeout)


def test_a_host_without_bpftrace_gets_empty_columns_with_the_reason(tmp_path):
    counts = kernel_copies.Accounting(_WithoutBpftrace("client", "nowhere"))
    counts.start(str(tmp_path))
    values, missing = counts.columns(Window(1, 2, 7, 100))
    assert all(value != value for value in values.values()), "empty (NaN), never 0"
    assert missing.count("bpftrace is not installed on the client namespace nowhere") == 4


class _Running:
    returncode = None

    def kill(self) -> None:
        """Nothing to end: no process was started."""


def _accounting(output: Path, lines: list[str]) -> kernel_copies.Accounting:
    output.write_text("\n".join(['{"type": "attached_probes", "data": {"probes": 3}}', *lines]) + "\n")
    counts = kernel_copies.Accounting(NamespaceEnd("client", "nowhere"))
    counts.output, counts.receive_reason = str(output), None
    counts.process = _Running()  # type: ignore[assignment]
    return counts


def _map(name: str, counts: dict[tuple[int, int], int]) -> str:
    entries = ", ".join(f'"{pid},{ms}": {n}' for (pid, ms), n in counts.items())
    return f'{{"type": "map", "data": {{"@{name}": {{{entries}}}}}}}'


def _flushed(ms: int) -> str:
    return f'{{"type": "printf", "data": "flushed {ms * 1_000_000}\\n"}}'


@pytest.mark.parametrize(
    ("buckets", "window", "expected"),
    [({5: 10, 6: 20, 7: 30, 9: 40}, (5_500_000, 7_200_000), 60), ({1: 5}, (2_000_000, 3_000_000), 0)],
)
def test_a_window_sums_the_milliseconds_it_touches_for_its_own_process(tmp_path, buckets, window, expected):
    other_process = {(99, ms): 1000 for ms in buckets}
    lines = [
        _map("copied_even", {**{(7, ms): n for ms, n in buckets.items()}, **other_process}),
        _map("received_even", {(7, ms): n for ms, n in buckets.items()}),
        _flushed(20),
    ]
    counts = _accounting(tmp_path / "counts.json", lines)
    values, missing = counts.columns(Window(*window, pid=7, expected_bytes=expected))
    assert values[kernel_copies.COPIED_COLUMN] == expected, "another process's copies never count"
    assert values[kernel_copies.RECEIVED_COLUMN] == expected
    assert "rcv_kernel" not in missing


def test_the_senders_transmits_count_for_the_whole_namespace_in_the_window(tmp_path):
    """Transmits run in whichever process's context an ACK or a send found: they are counted by millisecond, for
    the sender's network namespace (key 0), beside the receiver's copies of its own process."""
    lines = [
        _map("copied_even", {(7, 5): 1000}),
        _map("received_even", {(7, 5): 1000}),
        _map("skbs_even", {(0, 5): 3, (0, 9): 50}),
        _map("segments_even", {(0, 5): 60, (0, 9): 500}),
        _map("frags_even", {(0, 5): 24, (0, 9): 500}),
        _flushed(20),
    ]
    counts = _accounting(tmp_path / "skbs.json", lines)
    counts.sender = NamespaceEnd("server", "nowhere")  # a sender on the traced kernel
    values, missing = counts.columns(Window(5_000_000, 6_000_000, 7, 1000))
    assert (values["snd_skbs"], values["snd_skb_segments"], values["snd_skb_frags"]) == (3, 60, 24)
    assert "snd_skb" not in missing


def test_a_sender_on_another_host_leaves_its_transmits_empty_with_the_reason(tmp_path):
    lines = [_map("copied_even", {(7, 5): 1000}), _map("received_even", {(7, 5): 1000}), _flushed(20)]
    values, missing = _accounting(tmp_path / "remote.json", lines).columns(Window(5_000_000, 6_000_000, 7, 1000))
    assert values[kernel_copies.COPIED_COLUMN] == 1000
    assert values["snd_skbs"] != values["snd_skbs"]
    assert "snd_skbs: the sender runs on another host, whose kernel is not traced" in missing


def test_a_window_the_kernel_counted_short_is_empty_with_the_reason(tmp_path):
    lines = [_map("copied_even", {(7, 5): 500}), _map("received_even", {(7, 5): 500}), _flushed(20)]
    values, missing = _accounting(tmp_path / "c.json", lines).columns(Window(5_000_000, 6_000_000, 7, 1000))
    assert values[kernel_copies.COPIED_COLUMN] != values[kernel_copies.COPIED_COLUMN]
    assert "incomplete: the kernel counted 500 bytes received where the client received 1,000" in missing


def test_a_late_print_empties_the_windows_it_may_have_cut(tmp_path, outcome):
    """A turn's maps printed with keys a whole turn newer than its flush: the clear that followed may have dropped
    counts, so the windows there are empty with the reason; a window before it is counted."""
    outcome.update(area="kernel copies", fault="bpftrace's user space prints a turn's maps a whole turn late")
    late = {(7, ms): 100 for ms in (10, 45)}  # printed with the flush of ms 20, but holding ms 45 > 20 + 20
    lines = [_map("copied_even", late), _map("received_even", late), _flushed(20), _flushed(60)]
    counts = _accounting(tmp_path / "late.json", lines)
    values, missing = counts.columns(Window(9_000_000, 11_000_000, 7, 100))
    assert values[kernel_copies.COPIED_COLUMN] == 100 and "rcv_kernel" not in missing
    values, missing = counts.columns(Window(40_000_000, 50_000_000, 7, 100))
    assert "bpftrace printed its counts late" in missing and values[kernel_copies.COPIED_COLUMN] != 100
    # Parses a file of made-up output: no row is written and nothing is created outside tmp_path.
    behaviour = f"the window before it counted; the window it touches empty: {missing}"
    outcome.update(behaviour=behaviour, rows_lost=None, leftovers=None)


def test_a_flush_that_never_comes_empties_the_window_and_stops_waiting(tmp_path, outcome):
    outcome.update(area="kernel copies", fault="bpftrace stops flushing its counts (a lost map)")
    counts = _accounting(tmp_path / "stalled.json", [_flushed(20)])
    _, missing = counts.columns(Window(30_000_000, 40_000_000, 7, 100))
    assert "bpftrace did not flush its counts" in missing
    started = time.monotonic()
    _, missing = counts.columns(Window(50_000_000, 60_000_000, 7, 100))
    assert "bpftrace stopped flushing its counts" in missing and time.monotonic() - started < 0.5
    behaviour = f"that window empty with the reason; later ones too, without waiting: {missing}"
    outcome.update(behaviour=behaviour, rows_lost=None, leftovers=None)  # no row written, nothing created


@needs_root
def test_bpftrace_killed_mid_sweep_leaves_later_windows_empty_with_the_reason(tmp_path, outcome):
    outcome.update(area="kernel copies", fault="bpftrace is killed (SIGKILL) after the first trial of a sweep")
    killed: list[int] = []

    def kill_bpftrace(row: dict) -> None:
        if not killed:
            os.system(f"pkill -KILL -f 'copylab-kcopy-bpfkill{TAG}'")
            killed.append(1)

    settings = _small(f"bpfkill{TAG}", receive=["copy"], trials=3, implementations=["two_copy"])
    result = sweep.run(settings, SweepStore.under(tmp_path, settings.name), progress=False, on_row=kill_bpftrace)
    rows = sorted(read_rows(tmp_path / f"bpfkill{TAG}" / "trials.csv"), key=lambda row: int(row["order_index"]))
    assert result.failed == 0
    assert rows[0]["rcv_kernel_copy_bytes"] != ""
    for row in rows[1:]:
        assert row["rcv_kernel_copy_bytes"] == "" and "bpftrace" in row["kernel_copy_missing"], row
    reason = rows[1]["kernel_copy_missing"].split("; ")[0]
    outcome.update(
        behaviour=f"{len(rows)} trials ok; the first counted, the {len(rows) - 1} after it empty with '{reason}'",
        rows_lost=rows_due([spec.trial_id for spec in schedule.plan(settings)], tmp_path / f"bpfkill{TAG}"),
        leftovers=_left(f"bpfkill{TAG}", settings.namespaces),
    )
    assert outcome["rows_lost"] == Counted(3, 0) and outcome["leftovers"] == []


@needs_root
def test_bpftrace_ends_itself_once_its_lease_is_not_renewed(tmp_path, outcome):
    """What happens on a host whose controller is gone: nobody renews the lease, and bpftrace ends within it."""
    from copylab.testbeds import netns

    outcome.update(area="kernel copies", fault="the controller is gone: nobody renews bpftrace's lease (3 s)")

    pair = netns.NamespacePair(f"clks{TAG}", f"clkl{TAG}")
    with netns.namespace_pair(pair):
        end = NamespaceEnd("client", pair.client)
        with kernel_copies.accounting(end, f"lease{TAG}", lease_s=3) as counts:
            assert counts.receive_reason is None and counts.process is not None
            started = time.monotonic()
            while counts.process.returncode is None and time.monotonic() < started + 12:
                time.sleep(0.2)
            assert counts.process.returncode is not None, "bpftrace outlived its lease"
            lived = time.monotonic() - started
            _, missing = counts.columns(Window(1, 2, 7, 100))
            assert "bpftrace ended during the sweep" in missing
    outcome.update(
        behaviour=f"bpftrace ended itself {lived:.1f} s after its last renewal; windows after it empty with the reason",
        rows_lost=None,  # no sweep: no row written
        leftovers=_left(f"lease{TAG}", (pair.server, pair.client)),
    )
    # The same bound as its two-host twin (tests/test_remote.py): the 3 s lease, plus up to 3 s for bpftrace to
    # notice at its next poll and exit.
    assert lived <= 3 + 3, f"bpftrace lived {lived:.1f} s past its last renewal, beyond its 3 s lease"
    assert outcome["leftovers"] == []


def _left(sweep_name: str, namespaces: tuple[str, ...]) -> Looked:
    """What a kernel copy count of sweep SWEEP_NAME left: its namespaces, scratch directories and processes
    (the sweep's own and bpftrace's)."""
    kcopy = f"copylab-kcopy-{sweep_name}-"
    found = [f"directory {path}" for path in Path(tempfile.gettempdir()).glob(f"{kcopy}*")]
    found += [f"process {pid}" for pid in pgrep(kcopy)]
    return Looked(found, f"{tempfile.gettempdir()}/{kcopy}* and its processes") + leftovers(sweep_name, namespaces)
