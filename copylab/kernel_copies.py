"""The bytes the kernel copies in each trial's measured window, counted with BPF (bpftrace).

One bpftrace runs on the client's end for the whole sweep (starting it takes about half a second, too long
to pay per trial). It counts, per millisecond, what the tracepoint skb:skb_copy_datagram_iovec reports
copied to user space by receivers in the client's network namespace only, and flushes the counts every few
milliseconds into a file; a trial's row gets the sum over the milliseconds of its window, whose ends the
client prints (CLOCK_MONOTONIC, the clock of BPF's nsecs). The two millisecond buckets at the window's ends
are counted whole: at most 2 ms of traffic more than the window. The send side's copies are only visible to
function probes (kprobe/fentry); where the kernel refuses them, those columns are empty with the reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from copylab.testbed import End, Started

FLUSH_MS = 20
# How long a trial waits for the flush that covers its window's end.
FLUSH_WAIT_S = 1.0
ATTACH_WAIT_S = 20.0
# Alive for the whole sweep; the testbed kills it when the sweep ends however it ends.
SWEEP_DEADLINE_S = 7 * 24 * 3600
RECEIVE_COLUMN = "rcv_kernel_copy_bytes"
SEND_COLUMNS = ("snd_kernel_copy_bytes", "zc_deferred_copy_bytes")
COLUMNS = (RECEIVE_COLUMN, *SEND_COLUMNS)

# Two maps take turns: the tracepoint adds to the one of the current turn while bpftrace's user space prints and
# clears the other (print and clear run there later, so clearing the map still being added to would lose counts).
_PROGRAM = """
tracepoint:skb:skb_copy_datagram_iovec /curtask->nsproxy->net_ns->ns.inum == {namespace}/ {{
    if (@turn % 2 == 0) {{ @even[nsecs / 1000000] = sum(args->len); }}
    else {{ @odd[nsecs / 1000000] = sum(args->len); }}
}}
interval:ms:{flush} {{
    $until = nsecs;
    @turn = @turn + 1;
    if (@turn % 2 == 1) {{ print(@even); clear(@even); }} else {{ print(@odd); clear(@odd); }}
    printf("flushed %llu\\n", $until);
}}
"""
# bpftrace reads tracepoints through tracefs; a private mount namespace mounts it where it is not mounted.
_WITH_TRACEFS = 'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; exec "$@"'


def _last_line(text: str, fallback: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("WARNING")]
    return lines[-1] if lines else fallback


class Accounting:
    """Kernel copy counts for the trials of one sweep, or the reason there are none."""

    def __init__(self, end: End, unavailable: str = "not started") -> None:
        self.end = end
        self.output = ""
        self.process: Started | None = None
        self.receive_reason: str | None = unavailable
        self.send_reason = unavailable if unavailable != "not started" else "needs kprobe or fentry probes"
        self._offset = 0
        self._buckets: dict[int, int] = {}
        self._flushed_ns = 0

    def start(self, directory: str) -> None:
        try:
            version = self.end.run(["bpftrace", "--version"])
        except FileNotFoundError:
            version = None
        if version is None or version.returncode != 0:
            self.receive_reason = self.send_reason = f"bpftrace is not installed on the {self.end.label}"
            return
        namespace = self.end.run(["stat", "-L", "-c", "%i", "/proc/self/ns/net"]).stdout.strip()
        self.output = f"{directory}/kernel-copies.json"
        program = _PROGRAM.format(namespace=namespace, flush=FLUSH_MS)
        bpftrace = ["bpftrace", "-f", "json", "-o", self.output, "-e", program]
        self.process = self.end.start(["unshare", "-m", "sh", "-c", _WITH_TRACEFS, "sh", *bpftrace], SWEEP_DEADLINE_S)
        ends = time.monotonic() + ATTACH_WAIT_S
        while '"attached_probes"' not in self.end.read(self.output):
            if self.process.returncode is not None or time.monotonic() > ends:
                self.process.kill()
                stdout, stderr = self._ended()
                self.receive_reason = f"bpftrace could not attach: {_last_line(stderr + stdout, 'no reason given')}"
                self.process = None
                return
            time.sleep(0.02)
        self.receive_reason = None
        probe = self.end.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                _WITH_TRACEFS,
                "sh",
                "bpftrace",
                "-e",
                "kprobe:skb_copy_ubufs { exit(); } BEGIN { exit(); }",
            ],
        )
        self.send_reason = (
            f"needs kprobe or fentry, which this kernel refuses ({_last_line(probe.stderr, 'no reason given')})"
            if probe.returncode != 0 or "ERROR" in probe.stderr
            else "send-side accounting (kprobes) is not implemented yet"
        )

    def _ended(self) -> tuple[str, str]:
        assert self.process is not None
        try:
            return self.process.wait(5)
        except Exception:  # the reason is best effort; the caller says it could not attach either way
            return "", ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def _read(self) -> None:
        text = self.end.read(self.output, self._offset)
        complete = text[: text.rfind("\n") + 1]
        for line in complete.splitlines():
            try:
                entry: dict[str, Any] = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("type") == "map":
                for counts in entry["data"].values():
                    for bucket, count in counts.items():
                        self._buckets[int(bucket)] = self._buckets.get(int(bucket), 0) + int(count)
            elif entry.get("type") == "printf" and str(entry.get("data", "")).startswith("flushed "):
                self._flushed_ns = int(entry["data"].split()[1])
        self._offset += len(complete.encode())

    def columns(self, window: tuple[int, int] | None) -> tuple[dict[str, float | int], str]:
        """The trial's kernel copy columns for WINDOW (begin, end ns), and why any is empty."""
        values: dict[str, float | int] = {column: float("nan") for column in COLUMNS}
        reasons = {column: self.send_reason for column in SEND_COLUMNS}
        if self.receive_reason is not None or self.process is None:
            reasons[RECEIVE_COLUMN] = self.receive_reason or "bpftrace ended during the sweep"
        elif window is None:
            reasons[RECEIVE_COLUMN] = "the implementation does not report its measured window"
        else:
            begin, end = window
            waits_until = time.monotonic() + FLUSH_WAIT_S
            self._read()
            while self._flushed_ns <= end and time.monotonic() < waits_until:
                time.sleep(FLUSH_MS / 1000)
                self._read()
            if self._flushed_ns <= end:
                reasons[RECEIVE_COLUMN] = "bpftrace did not flush its counts in time"
            else:
                first, last = begin // 1_000_000, end // 1_000_000
                values[RECEIVE_COLUMN] = sum(n for ms, n in self._buckets.items() if first <= ms <= last)
                self._buckets = {ms: n for ms, n in self._buckets.items() if ms > last}
        missing = "; ".join(f"{column}: {why}" for column, why in reasons.items() if why)
        return values, missing


@contextmanager
def accounting(end: End, sweep: str) -> Iterator[Accounting]:
    """Kernel copy accounting on END for a sweep, stopped after the block."""
    counts = Accounting(end)
    with ExitStack() as stack:
        directory = stack.enter_context(end.scratch(f"copylab-kcopy-{sweep}-"))
        stack.callback(counts.stop)
        counts.start(directory)
        yield counts
