"""The rule that picks the study's "unexpected result" (Part E, question 6) from a sweep's stream throughput.

Three kinds of expectation are checked: the study's variants rank by the copies they make at send time
(fewer copies, more throughput) in the upper half of the tested sizes; throughput does not fall as messages
grow; throughput does not fall as threads are added.  Each broken expectation is scored by how far apart
the two 95% intervals are, and the highest score wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from copylab.declarations import implementations
from copylab.report.results import THROUGHPUT, Results, declared, metric_rows


@dataclass(frozen=True)
class Anomaly:
    """A result that contradicts an expectation, scored by how far apart the two 95% intervals are."""

    kind: str  # ordering_reversal | non_monotonic | thread_scaling
    score: float  # lower CI bound of the surprising side / upper bound of the expected side - 1
    implementation: str
    threads: int
    pinning: str
    expected: tuple[str | int, float, float, float]  # (label, mean, ci_low, ci_high) expected to be higher
    observed: tuple[str | int, float, float, float]  # (label, mean, ci_low, ci_high) that came out higher
    size: int


def expected_order() -> list[str]:
    """The study's variants, most throughput expected first: fewest copies at send time."""
    variants = [impl for impl in implementations.registry().values() if impl.role]
    return [impl.name for impl in sorted(variants, key=lambda impl: impl.copies.at_send)]


def _ordering_candidates(summary: pd.DataFrame, large: list[int], order: list[str]) -> list[Anomaly]:
    found = []
    for (workload, threads, pinning, size), group in summary.groupby(["workload", "threads", "pinning", "size_bytes"]):
        if workload != "stream" or size not in large:
            continue
        by_impl = group.set_index("implementation")
        for i, high in enumerate(order):
            for low in order[i + 1 :]:
                if high in by_impl.index and low in by_impl.index:
                    h, lo = by_impl.loc[high], by_impl.loc[low]
                    found.append(
                        Anomaly(
                            "ordering_reversal",
                            lo["ci_low"] / h["ci_high"] - 1,
                            high,
                            int(threads),
                            str(pinning),
                            (high, h["mean"], h["ci_low"], h["ci_high"]),
                            (low, lo["mean"], lo["ci_low"], lo["ci_high"]),
                            int(size),
                        )
                    )
    return found


def _curve_candidates(summary: pd.DataFrame) -> list[Anomaly]:
    found = []
    for (impl, threads, pinning), group in summary.groupby(["implementation", "threads", "pinning"]):
        group = group.sort_values("size_bytes")
        for (_, small), (_, big) in zip(group.iloc[:-1].iterrows(), group.iloc[1:].iterrows(), strict=True):
            found.append(
                Anomaly(
                    "non_monotonic",
                    small["ci_low"] / big["ci_high"] - 1,
                    str(impl),
                    int(threads),
                    str(pinning),
                    (int(big["size_bytes"]), big["mean"], big["ci_low"], big["ci_high"]),
                    (int(small["size_bytes"]), small["mean"], small["ci_low"], small["ci_high"]),
                    int(big["size_bytes"]),
                )
            )
    for (impl, size, pinning), group in summary.groupby(["implementation", "size_bytes", "pinning"]):
        group = group.sort_values("threads")
        if len(group) > 1:
            one, many = group.iloc[0], group.iloc[-1]
            found.append(
                Anomaly(
                    "thread_scaling",
                    one["ci_low"] / many["ci_high"] - 1,
                    str(impl),
                    int(many["threads"]),
                    str(pinning),
                    (int(many["threads"]), many["mean"], many["ci_low"], many["ci_high"]),
                    (int(one["threads"]), one["mean"], one["ci_low"], one["ci_high"]),
                    int(size),
                )
            )
    return found


def answered_by_q1(results: Results, anomaly: Anomaly) -> bool:
    """Whether ANOMALY of RESULTS is zero-copy losing to a copying sender: question 1's subject, so question 6 looks
    further."""
    return anomaly.kind == "ordering_reversal" and declared(results, anomaly.implementation).zero_copy


def find_anomaly(results: Results, beyond_q1: bool = False) -> Anomaly | None:
    """The most surprising stream-throughput result of the study's variants (see the module docstring); BEYOND_Q1,
    the most surprising one that question 1 does not already explain.

    The score is the lower 95% bound of the side that came out higher over the upper bound of the side
    expected higher, minus one, so it is positive only when the intervals do not overlap.
    """
    order = expected_order()
    stream = metric_rows(results, THROUGHPUT, workload="stream")
    stream = stream[stream["implementation"].isin(order)]
    sizes = sorted(int(s) for s in stream["size_bytes"].unique())
    if not sizes:
        return None
    middle = (math.log2(sizes[0]) + math.log2(sizes[-1])) / 2
    large = [s for s in sizes if math.log2(s) >= middle]
    candidates = _ordering_candidates(stream, large, order) + _curve_candidates(stream)
    candidates = [c for c in candidates if math.isfinite(c.score) and not (beyond_q1 and answered_by_q1(results, c))]
    return max(candidates, key=lambda c: c.score) if candidates else None
