"""perf stat around one program, counting only the measured window.

perf starts with its counters disabled (-D -1); the program itself enables
them after its warm-up and disables them when its window ends, through the
control fifo (--control fifo:CTL,ACK).  Events the host cannot count are
reported as missing with perf's own reason, never as zero.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from copylab.declarations.schema import PERF_EVENTS


@dataclass(frozen=True)
class PerfSupport:
    """What perf can count on this host."""

    available: bool
    version: str | None
    supported: tuple[str, ...] = ()
    unsupported: dict[str, str] = field(default_factory=dict)

    def unused_reason(self, unprofiled_reason: str | None) -> str:
        """A trial's perf_missing when perf counts nothing in it: its program's own UNPROFILED_REASON where perf
        runs here, else why perf does not."""
        if unprofiled_reason and self.available:
            return f"all: {unprofiled_reason}"
        return "all: " + next(iter(self.unsupported.values()), "perf unavailable")


# Runs a command where perf will run and returns what has returncode, stdout and stderr.
Runner = Callable[[list[str]], Any]


def run_here(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True)


def detect(run: Runner = run_here, events: tuple[str, ...] = tuple(PERF_EVENTS)) -> PerfSupport:
    """Asks perf once, on a trivial program, which events the host RUN runs on supports."""
    try:
        answer = run(["perf", "--version"])
    except FileNotFoundError:
        answer = None
    # 127: a shell's "command not found" (a remote host); Debian's perf wrapper exits 1 without a matching kernel.
    if answer is None or answer.returncode != 0 or not answer.stdout.strip():
        return PerfSupport(False, None, (), {event: "perf is not installed" for event in events})
    version = answer.stdout.strip()
    result = run(["perf", "stat", "-x,", "-e", ",".join(events), "--", "true"])
    if result.returncode != 0 and not result.stderr:
        return PerfSupport(False, version, (), {event: f"perf stat exited {result.returncode}" for event in events})
    values = parse_output(result.stderr)
    reasons = {event: values[event][1] for event in events if event in values and values[event][1]}
    for event in events:
        if event not in values:
            reasons[event] = "perf did not report it"
    if len(reasons) == len(events):
        first = result.stderr.strip().splitlines()
        return PerfSupport(False, version, (), {e: first[-1] if first else "perf stat failed" for e in events})
    supported = tuple(event for event in events if event not in reasons)
    return PerfSupport(True, version, supported, reasons)


def combined(first: PerfSupport, second: PerfSupport, labels: tuple[str, str]) -> PerfSupport:
    """What both of two hosts support; a reason names the host it comes from when they differ."""
    if first == second:
        return first
    events = [*first.supported, *first.unsupported]
    supported = tuple(event for event in events if event in first.supported and event in second.supported)
    reasons = {}
    for event in events:
        if event in supported:
            continue
        why = [
            (label, s.unsupported[event])
            for label, s in zip(labels, (first, second), strict=True)
            if event in s.unsupported
        ]
        reasons[event] = (
            why[0][1]
            if len({w for _, w in why}) == 1 and len(why) == 2
            else "; ".join(f"{label}: {w}" for label, w in why)
        )
    versions = {first.version, second.version} - {None}
    version = (
        versions.pop()
        if len(versions) == 1
        else "; ".join(f"{label}: {s.version}" for label, s in zip(labels, (first, second), strict=True))
    )
    return PerfSupport(first.available and second.available, version, supported, reasons)


# perf counts only user mode (it appends ":u") for a user without CAP_PERFMON when perf_event_paranoid is 2:
# the kernel's part, where copies and context switches happen, is missing from those counts.
USER_MODE_ONLY = "perf could count user mode only (perf_event_paranoid 2 without root): the kernel's part is missing"
# Clock events measure the task's whole CPU time whatever the mode filter.
WHOLE_IN_USER_MODE = frozenset({"task-clock"})


def parse_output(text: str) -> dict[str, tuple[float, str]]:
    """perf stat -x, output -> {event: (value, reason-if-missing)}; value is NaN when missing."""
    values: dict[str, tuple[float, str]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3:
            continue
        raw, event = fields[0], fields[2]
        # perf may append a modifier (":u") or a PMU prefix ("cpu/cycles/"): keep the event's name.
        event, _, modifier = event.partition(":")
        try:
            values[event] = (float(raw), "")
        except ValueError:
            values[event] = (math.nan, raw.strip() or "no value")
        if modifier == "u" and event not in WHOLE_IN_USER_MODE and not math.isnan(values[event][0]):
            values[event] = (math.nan, USER_MODE_ONLY)
    return values


@dataclass(frozen=True)
class PerfRun:
    """The files of one perf-wrapped program."""

    output: str
    control: str
    ack: str

    def command(self, support: PerfSupport) -> list[str]:
        return [
            "perf",
            "stat",
            "-D",
            "-1",
            f"--control=fifo:{self.control},{self.ack}",
            "-x,",
            "-o",
            str(self.output),
            "-e",
            ",".join(support.supported),
            "--",
        ]

    def program_options(self) -> list[str]:
        return ["--perf-ctl", str(self.control), "--perf-ack", str(self.ack)]

    def counters(self, support: PerfSupport, written: str) -> dict[str, tuple[float, str]]:
        """Every event of PERF_EVENTS with its value (from WRITTEN, what perf wrote to the output file) or the
        reason it is missing."""
        measured = parse_output(written)
        result = {}
        for event in PERF_EVENTS:
            if event in support.unsupported:
                result[event] = (math.nan, support.unsupported[event])
            elif event in measured:
                result[event] = measured[event]
            else:
                result[event] = (math.nan, "perf wrote no value")
        return result
