"""Kernel copy accounting: the bytes the kernel copies to user space, counted with BPF in each window."""

from __future__ import annotations

import os

import pytest

from copylab import config, kernel_copies, sweep
from copylab.testbed import Completed, NamespaceEnd
from tests.conftest import needs_root
from tests.test_sweep import read_rows

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
    )
    settings.update(changes)
    return config.make_config(name, "quick", **settings)


@needs_root
def test_the_receivers_copy_is_counted_in_the_window_and_truncate_removes_it(tmp_path):
    result = sweep.run(_small("kc"), data_root=tmp_path, progress=False)
    rows = read_rows(tmp_path / "kc" / "trials.csv")
    assert result.failed == 0, result.failures
    for row in rows:
        copied, delivered = int(row["rcv_kernel_copy_bytes"]), int(row["bytes"])
        if row["receive"] == "copy":
            # Every delivered byte is copied to user space once; the window's two edge milliseconds count whole.
            assert 0.98 <= copied / delivered <= 1.03, row
        else:
            assert copied == 0, row  # MSG_TRUNC: the kernel consumes the bytes without copying them
        assert row["snd_kernel_copy_bytes"] == row["zc_deferred_copy_bytes"] == ""
        assert "snd_kernel_copy_bytes: " in row["kernel_copy_missing"], row["kernel_copy_missing"]
        assert "rcv_kernel_copy_bytes" not in row["kernel_copy_missing"]
    assert not list(tmp_path.glob("copylab-kcopy-*"))


@needs_root
def test_accounting_off_leaves_the_columns_empty_with_the_reason(tmp_path):
    sweep.run(_small("off", receive=["copy"], kernel_copies=False), data_root=tmp_path, progress=False)
    for row in read_rows(tmp_path / "off" / "trials.csv"):
        assert row["rcv_kernel_copy_bytes"] == "" and "off (--no-kernel-copies)" in row["kernel_copy_missing"]


class _WithoutBpftrace(NamespaceEnd):
    def run(self, command: list[str], timeout: float = 30) -> Completed:
        if command[0] == "bpftrace":
            raise FileNotFoundError(command[0])
        return super().run(command, timeout)


def test_a_host_without_bpftrace_gets_empty_columns_with_the_reason(tmp_path):
    counts = kernel_copies.Accounting(_WithoutBpftrace("client", "nowhere"))
    counts.start(str(tmp_path))
    values, missing = counts.columns((1, 2))
    assert all(value != value for value in values.values()), "empty (NaN), never 0"
    assert missing.count("bpftrace is not installed on the client namespace nowhere") == 3


@pytest.mark.parametrize(
    ("buckets", "window", "expected"),
    [({5: 10, 6: 20, 7: 30, 9: 40}, (5_500_000, 7_200_000), 60), ({1: 5}, (2_000_000, 3_000_000), 0)],
)
def test_a_window_sums_the_milliseconds_it_touches(tmp_path, buckets, window, expected):
    output = tmp_path / "counts.json"
    lines = ['{"type": "attached_probes", "data": {"probes": 2}}']
    lines += [f'{{"type": "map", "data": {{"@even": {{"{ms}": {n}}}}}}}' for ms, n in buckets.items()]
    lines.append('{"type": "printf", "data": "flushed 99000000\\n"}')
    output.write_text("\n".join(lines) + "\n")
    counts = kernel_copies.Accounting(NamespaceEnd("client", "nowhere"))
    counts.output, counts.receive_reason = str(output), None
    counts.process = object()  # type: ignore[assignment]
    values, _ = counts.columns(window)
    assert values[kernel_copies.RECEIVE_COLUMN] == expected
