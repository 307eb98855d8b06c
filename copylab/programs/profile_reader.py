"""The sampler's samples, read back with perf script and charged to a trial, a side and a category.

A sample belongs to the trial whose measured window (CLOCK_MONOTONIC, as its client reported it) holds its time,
when it was taken on one of the trial's CPUs; the others (the harness between windows, a warm-up) are dropped.
Its side and category follow copylab.declarations.profiling.categories.  perf script prints a header line per
sample (command, thread, [CPU], seconds.nanoseconds:) and then its call chain, a frame a line (address and
function), leaf first, and a blank line.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pandas as pd

from copylab.declarations.profiling.categories import (
    CATEGORIES,
    OTHER,
    SOFTIRQ_FRAMES,
    SOFTIRQ_THREAD,
    Category,
)

# The kernel keeps a thread's name to 15 characters (TASK_COMM_LEN less its terminating zero).
COMM_LENGTH = 15
_HEADER = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<seconds>\d+)\.(?P<fraction>\d+):")
UNKNOWN = "[unknown]"


def comm_of(program: str) -> str:
    """The name the kernel gives the threads of PROGRAM (a path)."""
    return program.rsplit("/", 1)[-1][:COMM_LENGTH]


@dataclass(frozen=True)
class TrialWindow:
    """Where and when one trial's samples are taken, and whose they are."""

    trial_id: str
    begin_ns: int  # CLOCK_MONOTONIC
    end_ns: int
    sender: str  # the sending end's thread name (comm_of its program)
    receiver: str
    cpus: frozenset[int] | None  # None: every CPU


@dataclass(frozen=True)
class Sample:
    comm: str
    cpu: int
    time_ns: int
    frames: tuple[tuple[bool, str], ...]  # (in the kernel, function), leaf first


def samples(lines: Iterable[str]) -> Iterator[Sample]:
    """perf script's output as samples."""
    header: re.Match[str] | None = None
    frames: list[tuple[bool, str]] = []
    for line in lines:
        if line.strip() == "":
            if header is not None:
                yield _sample(header, frames)
            header, frames = None, []
        elif line[0] in " \t" and header is not None:
            address, _, function = line.strip().partition(" ")
            frames.append((len(address) == 16 and address.startswith("ffff"), function.strip() or UNKNOWN))
        else:
            match = _HEADER.match(line)
            if match is not None:
                if header is not None:
                    yield _sample(header, frames)
                header, frames = match, []
    if header is not None:
        yield _sample(header, frames)


def _sample(header: re.Match[str], frames: list[tuple[bool, str]]) -> Sample:
    nanoseconds = int(header["seconds"]) * 1_000_000_000 + int(header["fraction"].ljust(9, "0")[:9])
    return Sample(header["comm"], int(header["cpu"]), nanoseconds, tuple(frames))


class Classifier:
    """Charges a sample to a side and a category; remembers what it decided per function."""

    def __init__(self, categories: tuple[Category, ...] = CATEGORIES) -> None:
        self.categories = categories
        self._callers: dict[str, int | None] = {}
        self._leaves: dict[tuple[bool, str], str] = {}

    def _caller(self, function: str) -> int | None:
        if function not in self._callers:
            self._callers[function] = next(
                (i for i, c in enumerate(self.categories) if any(fnmatch.fnmatchcase(function, p) for p in c.callers)),
                None,
            )
        return self._callers[function]

    def _leaf(self, kernel: bool, function: str) -> str:
        key = (kernel, function)
        if key not in self._leaves:
            space = "kernel" if kernel else "user"
            self._leaves[key] = next(
                (
                    c.name
                    for c in self.categories
                    if c.space == space and any(fnmatch.fnmatchcase(function, p) for p in c.leaves)
                ),
                OTHER.name,
            )
        return self._leaves[key]

    def category(self, sample: Sample) -> str:
        kernel_frames = [function for kernel, function in sample.frames if kernel]
        claimed = [index for function in kernel_frames if (index := self._caller(function)) is not None]
        if claimed:
            return self.categories[min(claimed)].name
        kernel, leaf = sample.frames[0] if sample.frames else (False, UNKNOWN)
        return self._leaf(kernel, leaf)

    @staticmethod
    def side(sample: Sample, window: TrialWindow) -> str:
        softirq = sample.comm.startswith(SOFTIRQ_THREAD) or any(
            kernel and function in SOFTIRQ_FRAMES for kernel, function in sample.frames
        )
        if softirq:
            return "softirq"
        if sample.comm == window.sender != window.receiver:
            return "sender"
        if sample.comm == window.receiver != window.sender:
            return "receiver"
        return "other"


@dataclass
class Profile:
    """Samples per trial, side and category, and the kernel functions no category claimed."""

    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    unclaimed: Counter[str] = field(default_factory=Counter)
    trials: list[str] = field(default_factory=list)  # every trial sampled, in the order of their windows

    def table(self) -> pd.DataFrame:
        """One row per trial, side and category it has samples in: samples, the share of the trial's samples, and
        the trial's samples; a trial without one sample in its window gets one row of 0 samples."""
        rows = [
            {"trial_id": trial, "side": side, "category": category, "samples": n}
            for (trial, side, category), n in sorted(self.counts.items())
        ]
        empty = set(self.trials) - {trial for trial, _, _ in self.counts}
        rows += [{"trial_id": t, "side": "other", "category": OTHER.name, "samples": 0} for t in sorted(empty)]
        frame = pd.DataFrame(rows, columns=["trial_id", "side", "category", "samples"])
        totals = frame.groupby("trial_id")["samples"].transform("sum")
        frame["share"] = (frame["samples"] / totals.where(totals > 0)).astype("float64")
        frame["trial_samples"] = totals.astype("int64")
        return frame

    def symbols(self) -> pd.DataFrame:
        """The kernel functions no category claimed, most sampled first."""
        return pd.DataFrame(self.unclaimed.most_common(), columns=["function", "samples"]).astype(
            {"function": "str", "samples": "int64"}
        )


def attribute(lines: Iterable[str], windows: list[TrialWindow], classifier: Classifier | None = None) -> Profile:
    """Charges every sample of perf script's LINES that falls in one of WINDOWS (disjoint) to its trial."""
    classifier = classifier or Classifier()
    ordered = sorted(windows, key=lambda w: w.begin_ns)
    begins = [w.begin_ns for w in ordered]
    profile = Profile(trials=[w.trial_id for w in ordered])
    for sample in samples(lines):
        at = bisect.bisect_right(begins, sample.time_ns) - 1
        if at < 0:
            continue
        window = ordered[at]
        if sample.time_ns > window.end_ns or (window.cpus is not None and sample.cpu not in window.cpus):
            continue
        category = classifier.category(sample)
        profile.counts[(window.trial_id, classifier.side(sample, window), category)] += 1
        if category == OTHER.name and sample.frames:
            profile.unclaimed[sample.frames[0][1]] += 1
    return profile
