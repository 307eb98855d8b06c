"""What the copies experiment asks of an analysed sweep beyond what every report asks (copylab.report.results):
the study's variants and which implementation plays each, the configuration the prose focuses on, and the
zero-copy senders' completion counts."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from copylab.declarations import implementations
from copylab.error_catalogue import NO_STREAM_THROUGHPUT
from copylab.report.results import THROUGHPUT, Results, declared, metric_rows, present
from copylab.roles import Role


@dataclass(frozen=True)
class Focus:
    """The slice most statements describe: one pinning, a fixed thread count and a fixed stream size."""

    pinning: str
    threads: int
    size: int


def study(results: Results) -> list[str]:
    """The study's variants and the reference tools the sweep measured: what Part D and Part E are about."""
    return [name for name in present(results) if declared(results, name).in_study]


def other_senders(results: Results) -> list[str]:
    """Implementations the sweep measured beyond the study's variants and the reference tools."""
    return [name for name in present(results) if name not in study(results)]


def role(results: Results, name: Role) -> str | None:
    """The implementation playing the study's variant NAME (A1, A2, A3), if the sweep measured it."""
    found = implementations.by_role(name)
    return found.name if found and found.name in present(results) else None


def choose_focus(results: Results) -> Focus:
    """The pinning listed first in the manifest, the fewest threads, and the largest of the stream sizes with the
    most results (every implementation at every thread count, in a complete sweep)."""
    stream = metric_rows(results, THROUGHPUT, workload="stream")
    if stream.empty:
        raise NO_STREAM_THROUGHPUT.error(name=results.name)
    listed = [p for p in results.manifest.parameters.pinning if p in set(stream["pinning"])]
    pinning = listed[0] if listed else str(stream["pinning"].mode().iloc[0])
    stream = stream[stream["pinning"] == pinning]
    counts = stream.groupby("size_bytes").size()
    size = max(counts[counts == counts.max()].index)
    return Focus(pinning, int(stream["threads"].min()), int(size))


def zero_copy_counts(trials: pd.DataFrame, implementation: str) -> dict[str, float] | None:
    """Pooled zero-copy counters of all ok TRIALS of IMPLEMENTATION, or None when it recorded no completion."""
    zc = trials[(trials["implementation"] == implementation) & (trials["status"] == "ok")]
    columns = ("zc_sends", "zc_completed", "zc_copied", "zc_notifications")
    totals = {column: float(zc[column].sum(min_count=1)) for column in columns}
    if zc.empty or not totals["zc_completed"] > 0:
        return None
    return {
        **totals,
        "trials": float(len(zc)),
        "copied_fraction": totals["zc_copied"] / totals["zc_completed"],
        "notifications_per_send": totals["zc_notifications"] / totals["zc_sends"] if totals["zc_sends"] else math.nan,
    }


def copied_fraction_range(results: Results, implementation: str) -> tuple[float, float] | None:
    """Smallest and largest per-configuration mean COPIED fraction of IMPLEMENTATION, from the summary."""
    found = metric_rows(results, "zc_copied_fraction", implementation=implementation)
    return None if found.empty else (float(found["mean"].min()), float(found["mean"].max()))
