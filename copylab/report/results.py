"""Queries over one analysed sweep: the numbers the report's prose states, never the prose itself.

``load_results`` reads what the analysis wrote (copylab.record.store); every other function takes the loaded
``Results`` and returns rows, values or facts.  The prose modules (answers, captions, sections) build
their sentences from these and import no other prose module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from copylab.analysis.analyze_sweep import executed_notebook
from copylab.declarations import implementations
from copylab.error_catalogue import NOT_ANALYSED
from copylab.formatting import code, md_escape
from copylab.record.manifest import Manifest
from copylab.record.origin import Origin
from copylab.record.store import SweepStore
from copylab.report.blocks import Figure
from copylab.vocabulary.implementation import RECEIVE_MODES, Implementation
from copylab.vocabulary.values import NO_LAYOUT

THROUGHPUT = "throughput_gbps"
# systemd-detect-virt's names of container managers (the rest are hypervisors)
CONTAINERS = {"docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "openvz", "rkt", "wsl", "proot", "pouch"}
CACHE_EVENTS = ("L1-dcache-load-misses", "LLC-load-misses", "cache-misses", "cache-references")


@dataclass(frozen=True)
class Layouts:
    """The rows of a sweep's other message layouts (--layout aligned, contiguous) and the comparisons of each
    layout with the study's: the report's layout section reads them, nothing else does."""

    trials: pd.DataFrame
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame


@dataclass(frozen=True)
class Results:
    """One sweep's provenance, trials and analysis tables, in the study's message layout (every statement but
    the layout section's is about it); the other layouts' rows are in ``layouts``."""

    name: str
    manifest: Manifest
    trials: pd.DataFrame
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame
    store: SweepStore
    origin: Origin  # which data and code its numbers come from
    layouts: Layouts | None = None


def _study_layout(frame: pd.DataFrame) -> pd.Series:
    return frame["layout"].isin([implementations.STUDY_LAYOUT, NO_LAYOUT])


def _between_layouts(frame: pd.DataFrame) -> pd.Series:
    mark = implementations.LAYOUT_MARK
    return frame["challenger"].str.contains(mark, regex=False) | frame["baseline"].str.contains(mark, regex=False)


def every_trial(results: Results) -> pd.DataFrame:
    """Every trial the sweep ran, its other message layouts' included (Results.trials holds the study's)."""
    return results.trials if results.layouts is None else results.layouts.trials


def load_results(store: SweepStore) -> Results:
    """A sweep's validated trials and manifest and the analysis tables next to them.

    The analysis must have run: what it has not written yet is named with the command that writes it.
    """
    missing = store.missing_tables()
    if missing:
        raise NOT_ANALYSED.error(directory=store.directory, tables=", ".join(missing))
    trials, manifest = store.load()
    summary, comparisons, crossovers = (store.read_table(name) for name in ("summary", "comparisons", "crossovers"))
    layouts = Layouts(
        trials,
        summary,
        comparisons[_between_layouts(comparisons)],
        crossovers[_between_layouts(crossovers)],
    )
    return Results(
        manifest.sweep,
        manifest,
        trials[_study_layout(trials)],
        summary[_study_layout(summary)],
        comparisons[~_between_layouts(comparisons)],
        crossovers[~_between_layouts(crossovers)],
        store,
        store.origin(manifest),
        layouts,
    )


def select(frame: pd.DataFrame, **where: object) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    return frame[mask]


def metric_rows(results: Results, metric: str, **where: object) -> pd.DataFrame:
    """Summary rows of one metric with a finite mean, sorted by configuration; receive defaults to copy."""
    where.setdefault("receive", implementations.BASELINE_RECEIVE)
    found = select(results.summary, metric=metric, **where)
    found = found[np.isfinite(found["mean"])]
    return found.sort_values(["implementation", "workload", "pinning", "threads", "connections", "size_bytes"])


def measured(results: Results, metric: str) -> bool:
    """Whether the summary holds at least one finite value of ``metric``."""
    return not metric_rows(results, metric).empty


Value = tuple[float, float, float]  # mean, ci_low, ci_high


def value(
    results: Results, metric: str, implementation: str | None, workload: str, size: int, threads: int, pinning: str
) -> Value | None:
    """(mean, ci_low, ci_high) of one configuration, or None when not measured (or no IMPLEMENTATION plays it)."""
    found = metric_rows(
        results,
        metric,
        implementation=implementation,
        workload=workload,
        size_bytes=size,
        threads=threads,
        pinning=pinning,
    )
    if found.empty:
        return None
    row = found.iloc[0]
    return float(row["mean"]), float(row["ci_low"]), float(row["ci_high"])


def present(results: Results) -> list[str]:
    """Implementations present in the summary, in registry order."""
    return implementations.ordered(results.summary["implementation"])


def declared(results: Results, name: str) -> Implementation:
    """The declaration of the sweep's implementation NAME, as its manifest was read with it."""
    return results.manifest.parameters.members[name]


def receive_modes(results: Results) -> list[str]:
    """Receive modes the sweep measured, copy first."""
    measured = set(results.summary["receive"])
    return [mode for mode in RECEIVE_MODES if mode in measured]


def measured_sizes(results: Results, workload: str = "stream") -> list[int]:
    """Message sizes with results for ``workload``."""
    return sorted(int(s) for s in metric_rows(results, THROUGHPUT, workload=workload)["size_bytes"].unique())


def comparison_rows(
    results: Results, challenger: str, baseline: str | None, metric: str = THROUGHPUT, **where: object
) -> pd.DataFrame:
    """comparisons.csv rows of ``challenger`` against ``baseline``, sorted by size (none without a baseline)."""
    found = select(results.comparisons, challenger=challenger, baseline=baseline, metric=metric, **where)
    return found.sort_values("size_bytes")


def verdict(row: Any) -> str:
    """'faster', 'slower' or 'not significant': a comparisons row (a Series, or a tuple of itertuples) in the
    metric's own direction."""
    if not row.significant:
        return "not significant"
    return "faster" if row.challenger_better else "slower"


def paired(results: Results) -> bool:
    """Whether the sweep's comparisons pair trials within blocks (a blocked design) rather than not."""
    return results.manifest.parameters.design == "blocked"


def between_hosts(results: Results) -> bool:
    """Whether the sweep ran between two hosts (a network path) rather than two namespaces of one host (veth)."""
    return results.manifest.path == "network"


def virtualised(results: Results) -> str | None:
    """The virtualisation the manifest detected (systemd-detect-virt), or None on bare metal."""
    virtualization = results.manifest.host.virtualization.strip() or "none"
    return None if virtualization.lower().startswith("none") else virtualization


def in_container(virtualization: str) -> bool:
    return virtualization.lower() in CONTAINERS


def counters_unavailable_reason(results: Results, events: tuple[str, ...] = CACHE_EVENTS) -> str:
    """Why hardware counters are missing, from the manifest's perf section."""
    perf = results.manifest.perf
    if not perf.available:
        reason = "perf was not available on this host"
    else:
        unsupported = perf.unsupported_events
        listed = [event for event in events if event in unsupported] or sorted(unsupported)
        if listed:
            by_reason: dict[str, list[str]] = {}
            for event in listed:
                by_reason.setdefault(str(unsupported[event]), []).append(event)
            reasons = by_reason.items()
            reason = (
                "the hardware counters are not supported ("
                + "; ".join(f"perf reports {code(why)} for {md_escape(', '.join(names))}" for why, names in reasons)
                + ")"
            )
        else:
            reason = "the counters produced no values in this sweep"
    virtualization = virtualised(results)
    shown = md_escape(virtualization)
    if virtualization and in_container(virtualization):
        reason += (
            f"; systemd-detect-virt names a container manager ({shown}), as it does on some virtual machines too. "
            "Either way, the CPU perf sees has no performance monitoring unit (PMU), as a VM without a virtual PMU"
        )
    elif virtualization:
        reason += f"; the host is a virtual machine ({shown}) whose hypervisor exposes no virtual PMU for these events"
    return reason


def traced(figure: Figure, results: Results) -> Figure:
    """FIGURE, drawn from RESULTS, with its caption naming their data and code and their files to link."""
    store = results.store
    sources = [store.trials_path, store.manifest_path, store.table_path("summary"), executed_notebook(store)]
    found = tuple(path for path in sources if path.is_file())
    return Figure(figure.path, f"{figure.caption} {results.origin.stamp()}", found)
