"""The sweep's figures, drawn from summary.csv / crossovers.csv rows (never from typed-in numbers): Part D's and the
other senders' here, the cache levels' and questions 2 and 3's own in levels.py.

Figures are plain matplotlib Figure objects (not pyplot-managed), so they work
under any backend, show inline in a notebook via display(fig), and never leak.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Iterable

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.typing import LineStyleType

from copylab.analysis import plotting
from copylab.declarations import implementations, schema
from copylab.declarations.metrics import METRICS
from copylab.formatting import fmt_size
from copylab.record.manifest import Manifest
from copylab.report.experiments.copies.answers import caches, threads
from copylab.report.experiments.copies.basics.presentation import RECEIVE_COLORS
from copylab.report.experiments.copies.basics.queries import zero_copy_counts
from copylab.report.experiments.copies.figures.diagram import zerocopy_path_figure
from copylab.report.experiments.copies.figures.levels import (
    copies_and_cost_figure,
    saving_figure,
    threads_figure,
)
from copylab.roles import Role
from copylab.vocabulary.implementation import RECEIVE_MODES
from copylab.vocabulary.values import NO_LAYOUT

# Sizes on axes and at crossovers: whole units, else three significant digits.
SIZE_LABEL = functools.partial(fmt_size, approximate=True)


def _reference_tools() -> list[str]:
    """Implementations drawn dashed: external tools measured for reference."""
    return [impl.name for impl in implementations.registry().values() if impl.reference]


def _zero_copy_implementations() -> list[str]:
    return [impl.name for impl in implementations.registry().values() if impl.zero_copy]


def copies_figures(
    trials: pd.DataFrame,
    summary: pd.DataFrame,
    crossovers: pd.DataFrame,
    manifest: Manifest,
    confidence: float = 0.95,
    latency_size: int | None = None,
) -> dict[str, Figure]:
    """All plots of one copies sweep, keyed by file stem, in the report's order.

    TRIALS are the loaded trials (used for what was attempted), SUMMARY and
    CROSSOVERS the frames of copylab.analysis.stats / copylab.analysis.crossover at CONFIDENCE.
    LATENCY_SIZE picks the rr message size of the latency figure (default:
    the smallest rr size measured).
    """
    setup = plotting.describe_setup(manifest, summary)
    # The other message layouts are compared only in the report's section on layouts: drawn into the same lines as
    # the study's, a contiguous point beside a fields point of the same sender makes a zigzag.
    summary = summary[summary["layout"].isin([implementations.STUDY_LAYOUT, NO_LAYOUT])]
    by_copy = summary[summary["receive"] == implementations.BASELINE_RECEIVE]
    # Parts D and E: the study's variants and the reference tools, receiving by copy.
    in_study = [name for name, declared in manifest.parameters.members.items() if declared.in_study]
    study = by_copy[by_copy["implementation"].isin(in_study)]
    study_pairs = crossovers["challenger"].isin(study["implementation"]) & crossovers["baseline"].isin(
        study["implementation"]
    )
    answers_own = {}
    if caches.grid_parameters(manifest.parameters) and {
        impl.name for role in (Role.TWO_COPY, Role.ONE_COPY) if (impl := implementations.by_role(role))
    } <= set(summary["implementation"]):
        answers_own["saving_vs_working_set"] = saving_figure(trials, manifest, setup)
    if threads.thread_parameters(manifest.parameters):
        answers_own["cost_vs_threads"] = threads_figure(by_copy, setup)
    return answers_own | {
        "zerocopy_path": zerocopy_path_diagram(trials, manifest.path == "network"),
        "throughput_vs_size": throughput_figure(study, crossovers[study_pairs], setup, confidence),
        "latency_vs_threads": latency_figure(study, setup, confidence, latency_size),
        "cache_misses_vs_size": cache_figure(study, manifest, setup, confidence),
        "cpu_per_byte_vs_size": cpu_figure(study, manifest, setup, confidence),
        "zerocopy_copied_fraction": copied_fraction_figure(study, trials, setup, confidence),
        "retransmits": retransmits_figure(study, setup, confidence),
        "senders_vs_size": senders_figure(by_copy, manifest, setup, confidence),
        "receive_modes": receive_modes_figure(summary, setup, confidence),
    }


def zerocopy_path_diagram(trials: pd.DataFrame, between_hosts: bool) -> Figure:
    """The zero-copy send path, annotated with the COPIED share the study's zero-copy variant measured."""
    zero_copy = implementations.by_role(Role.ZERO_COPY)
    counts = zero_copy_counts(trials, zero_copy.name) if zero_copy else None
    return zerocopy_path_figure(counts["copied_fraction"] if counts else None, between_hosts)


def throughput_figure(summary: pd.DataFrame, crossovers: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """Stream throughput vs message size: one panel per thread count (rows: pinning), crossovers marked."""
    data = _rows(summary, "throughput_gbps", "stream")
    title = f"Throughput vs message size (mean, {confidence:.0%} CI)"
    if data.empty:
        return plotting.empty_figure(title, setup, "No stream throughput measurements in this sweep.")
    pinnings, threads = plotting.present_in_order(data["pinning"], schema.PINNINGS), sorted(data["threads"].unique())
    figure, axes = plotting.grid(title, setup, len(pinnings), len(threads))
    marked = crossovers[(crossovers["workload"] == "stream") & (crossovers["metric"] == "throughput_gbps")]
    for r, pinning in enumerate(pinnings):
        for c, n_threads in enumerate(threads):
            ax = axes[r][c]
            panel = data[(data["pinning"] == pinning) & (data["threads"] == n_threads)]
            for implementation in implementations.ordered(panel["implementation"]):
                rows = panel[panel["implementation"] == implementation]
                style: LineStyleType = "--" if implementation in _reference_tools() else "-"
                plotting.curve(
                    ax, rows, "size_bytes", plotting.colors()[implementation], style, grid=data["size_bytes"]
                )
            here = marked[(marked["pinning"] == pinning) & (marked["threads"] == n_threads)]
            plotting.mark_crossovers(ax, here[here["status"] == "crossover"], SIZE_LABEL, plotting.colors())
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{_threads(n_threads)}, CPU pinning {pinning}", fontsize=9)
            ax.set_ylabel(plotting.ylabel("throughput_gbps") if c == 0 else "")
    handles = plotting.implementation_handles(data["implementation"], plotting.colors(), dashed=_reference_tools())
    if (marked["status"] == "crossover").any():
        handles.append(Patch(color="0.5", alpha=0.25, label=f"crossover size, {confidence:.0%} CI (dotted: estimate)"))
    plotting.legend(figure, handles)
    return figure


def latency_figure(summary: pd.DataFrame, setup: str, confidence: float, size: int | None = None) -> Figure:
    """rr latency (mean and p99) vs thread count at one message size; rows: pinning."""
    data = summary[(summary["workload"] == "rr") & summary["metric"].isin(["latency_mean_us", "latency_p99_us"])]
    title = f"Round-trip latency vs threads (mean, {confidence:.0%} CI)"
    if data.empty:
        return plotting.empty_figure(title, setup, "No request/response (rr) trials in this sweep: no latency to plot.")
    size = int(data["size_bytes"].min()) if size is None else size
    data = data[data["size_bytes"] == size]
    if data.empty:
        return plotting.empty_figure(title, setup, f"No rr trials at {fmt_size(size, approximate=True)} in this sweep.")
    pinnings = plotting.present_in_order(data["pinning"], schema.PINNINGS)
    metrics = ["latency_mean_us", "latency_p99_us"]
    figure, axes = plotting.grid(
        f"{title}, message size {fmt_size(size, approximate=True)}", setup, len(pinnings), len(metrics)
    )
    for r, pinning in enumerate(pinnings):
        for c, metric in enumerate(metrics):
            ax = axes[r][c]
            panel = data[(data["pinning"] == pinning) & (data["metric"] == metric)]
            for implementation in implementations.ordered(panel["implementation"]):
                plotting.curve(
                    ax,
                    panel[panel["implementation"] == implementation],
                    "threads",
                    plotting.colors()[implementation],
                    "-",
                )
            plotting.log2_axis(ax, data["threads"], str, "client threads (= connections), log2 scale", rotation=0)
            ax.set_title(f"{METRICS[metric].label}, CPU pinning {pinning}", fontsize=9)
            ax.set_ylabel(plotting.ylabel(metric))
    plotting.legend(figure, plotting.implementation_handles(data["implementation"], plotting.colors()))
    return figure


def cache_figure(summary: pd.DataFrame, manifest: Manifest, setup: str, confidence: float) -> Figure:
    """Sender L1d and LLC load misses per KiB vs message size, or a plain note when not measured."""
    metrics = ["snd_l1d_misses_per_kib", "snd_llc_misses_per_kib"]
    counted = summary[summary["metric"].isin(metrics)]["mean"].notna().any()
    copies = summary[(summary["metric"] == "rcv_kernel_copies_per_byte") & (summary["workload"] == "stream")]
    copies = copies[copies["mean"].notna()]
    calibrated = manifest.calibration is not None and bool(manifest.calibration.copy_cost)
    if not counted and (calibrated or not copies.empty):
        return copies_and_cost_figure(copies, manifest.calibration, sorted(summary["size_bytes"].unique()), setup)
    title = f"Sender cache misses vs message size (mean, {confidence:.0%} CI)"
    return _size_panels(summary, metrics, manifest, title, setup, "cache miss counters")


def cpu_figure(summary: pd.DataFrame, manifest: Manifest, setup: str, confidence: float) -> Figure:
    """CPU cost per byte vs message size: cycles/byte where measured, CPU time per byte from getrusage always."""
    metrics = ["cycles_per_byte", "cpu_ns_per_byte", "snd_cpu_ns_per_byte"]
    title = f"CPU cost per byte vs message size (mean, {confidence:.0%} CI)"
    figure = _size_panels(summary, metrics, manifest, title, setup, "CPU cycles")
    for ax in figure.axes:  # the same log axis as the CPU time per byte of the every-sender figure
        if ax.has_data():
            plotting.plain_log_y(ax)
    return figure


def copied_fraction_figure(summary: pd.DataFrame, trials: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """Fraction of zero-copy sends the kernel copied anyway, per configuration."""
    zero_copy = _zero_copy_implementations()
    data = summary[(summary["metric"] == "zc_copied_fraction") & summary["implementation"].isin(zero_copy)]
    title = f"MSG_ZEROCOPY sends completed as copied (mean, {confidence:.0%} CI)"
    if data.empty:
        attempted = trials["implementation"].isin(zero_copy).any()
        why = "no completion counts were recorded" if attempted else "no zero-copy trials in this sweep"
        return plotting.empty_figure(title, setup, f"Nothing to plot: {why}.")
    return _per_threads_panels(data, "workload", schema.WORKLOADS, "zc_copied_fraction", title, setup, (-0.05, 1.05))


def retransmits_figure(summary: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """TCP retransmits per stream trial, one panel per implementation."""
    data = _rows(summary, "retransmits", "stream")
    title = f"TCP retransmits per stream trial (mean, {confidence:.0%} CI)"
    if data.empty:
        return plotting.empty_figure(title, setup, "No retransmit counts in this sweep.")
    return _per_threads_panels(
        data, "implementation", implementations.names(), "retransmits", title, setup, None, floor=0.0
    )


def senders_figure(summary: pd.DataFrame, manifest: Manifest, setup: str, confidence: float) -> Figure:
    """Every sender's stream throughput and CPU time per byte vs message size (receiving by copy)."""
    title = f"Every sender: throughput and CPU cost per byte (mean, {confidence:.0%} CI)"
    figure = _size_panels(summary, ["throughput_gbps", "cpu_ns_per_byte"], manifest, title, setup, "CPU time")
    for ax in figure.axes[len(figure.axes) // 2 :]:
        _per_byte_scale(ax, "cpu_ns_per_byte")
    return figure


def _per_byte_scale(ax: Axes, metric: str) -> None:
    """Costs per byte span orders of magnitude from the smallest message to the largest: a log axis."""
    if METRICS[metric].unit.endswith("/B"):
        plotting.plain_log_y(ax)


def receive_modes_figure(summary: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """Per implementation measured in several receive modes: throughput and receiver CPU per byte by mode."""
    title = f"How the receiver takes the bytes in (mean, {confidence:.0%} CI)"
    stream = summary[summary["workload"] == "stream"]
    modes = stream.groupby("implementation")["receive"].nunique()
    names = implementations.ordered(modes[modes > 1].index)
    if not names:
        return plotting.empty_figure(title, setup, "Every sender was measured receiving by copy only.")
    data = stream[stream["implementation"].isin(names)]
    pinning = plotting.present_in_order(data["pinning"], schema.PINNINGS)[0]
    threads = int(data["threads"].min())
    data = data[(data["pinning"] == pinning) & (data["threads"] == threads)]
    metrics = ["throughput_gbps", "rcv_cpu_ns_per_byte"]
    heading = f"{title}, {_threads(threads)}, CPU pinning {pinning}"
    figure, axes = plotting.grid(heading, setup, len(metrics), len(names))
    for r, metric in enumerate(metrics):
        for c, name in enumerate(names):
            ax = axes[r][c]
            panel = data[(data["metric"] == metric) & (data["implementation"] == name)]
            for mode in plotting.present_in_order(panel["receive"], RECEIVE_MODES):
                plotting.curve(ax, panel[panel["receive"] == mode], "size_bytes", RECEIVE_COLORS[mode], "-")
            _size_axis(ax, data["size_bytes"])
            _per_byte_scale(ax, metric)
            ax.set_title(f"{METRICS[metric].label}\n{name}", fontsize=8)
            ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    handles = [
        Line2D([], [], color=RECEIVE_COLORS[m], marker="o", label=f"receive {m}")
        for m in plotting.present_in_order(data["receive"], RECEIVE_MODES)
    ]
    plotting.legend(figure, handles)
    return figure


def _size_panels(
    summary: pd.DataFrame, metrics: list[str], manifest: Manifest, title: str, setup: str, what: str
) -> Figure:
    """Rows: METRICS, columns: thread counts, lines: implementation (style: pinning); unmeasured rows get a note."""
    data = summary[(summary["workload"] == "stream") & summary["metric"].isin(metrics)]
    measured = [m for m in metrics if (data["metric"] == m).any()]
    missing = [m for m in metrics if m not in measured]
    note = _unmeasured_note(missing, manifest, what) if missing else ""
    if not measured:
        return plotting.empty_figure(title, setup, note)
    threads = sorted(data["threads"].unique())
    figure, axes = plotting.grid(
        title, setup + (f"\n{textwrap.fill(note, 120)}" if note else ""), len(measured), len(threads)
    )
    pinnings = plotting.present_in_order(data["pinning"], schema.PINNINGS)
    styles = plotting.pinning_styles(pinnings)
    for r, metric in enumerate(measured):
        for c, n_threads in enumerate(threads):
            ax = axes[r][c]
            panel = data[(data["metric"] == metric) & (data["threads"] == n_threads)]
            for implementation in implementations.ordered(panel["implementation"]):
                for pinning in pinnings:
                    rows = panel[(panel["implementation"] == implementation) & (panel["pinning"] == pinning)]
                    plotting.curve(
                        ax,
                        rows,
                        "size_bytes",
                        plotting.colors()[implementation],
                        styles[pinning],
                        grid=data["size_bytes"],
                    )
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{METRICS[metric].label}\n{_threads(n_threads)}", fontsize=8)
            ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    plotting.legend(
        figure,
        plotting.implementation_handles(data["implementation"], plotting.colors()) + plotting.pinning_handles(pinnings),
    )
    return figure


def _per_threads_panels(
    data: pd.DataFrame,
    facet: str,
    order: Iterable[str],
    metric: str,
    title: str,
    setup: str,
    ylim: tuple[float, float] | None,
    floor: float | None = None,
) -> Figure:
    """One panel per value of FACET; lines: thread count (colour) and pinning (style) vs message size; a count's
    bands stop at FLOOR."""
    facets = plotting.present_in_order(data[facet], order)
    threads = sorted(data["threads"].unique())
    palette = dict(zip(threads, sns.color_palette("viridis", len(threads)), strict=True))
    pinnings = plotting.present_in_order(data["pinning"], schema.PINNINGS)
    styles = plotting.pinning_styles(pinnings)
    figure, axes = plotting.grid(title, setup, 1, len(facets))
    for c, value in enumerate(facets):
        ax = axes[0][c]
        panel = data[data[facet] == value]
        for n_threads in threads:
            for pinning in pinnings:
                rows = panel[(panel["threads"] == n_threads) & (panel["pinning"] == pinning)]
                plotting.curve(
                    ax, rows, "size_bytes", palette[n_threads], styles[pinning], grid=panel["size_bytes"], floor=floor
                )
        _size_axis(ax, panel["size_bytes"])
        if ylim:
            ax.set_ylim(*ylim)
        elif floor is not None:
            ax.set_ylim(bottom=floor)
        ax.set_title(str(value), fontsize=9)
        ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    handles = [Line2D([], [], color=palette[t], marker="o", label=_threads(t)) for t in threads]
    plotting.legend(figure, handles + plotting.pinning_handles(pinnings))
    return figure


def _size_axis(ax: Axes, sizes: pd.Series) -> None:
    plotting.log2_axis(ax, sizes, SIZE_LABEL, "message size [bytes], log2 scale", rotation=45)


def _threads(count: int) -> str:
    return f"{count} thread" if count == 1 else f"{count} threads"


def _unmeasured_note(missing: list[str], manifest: Manifest, what: str) -> str:
    reasons = sorted(set(manifest.perf.unsupported_events.values()))
    why = f" (perf: {', '.join(reasons)})" if reasons else ""
    names = ", ".join(METRICS[m].label for m in missing)
    return (
        f"Not measured on this host{why}: {names}. "
        f"Hardware {what} are unavailable here; nothing is plotted for them (no zeros)."
    )


def _rows(summary: pd.DataFrame, metric: str, workload: str) -> pd.DataFrame:
    return summary[(summary["metric"] == metric) & (summary["workload"] == workload)]
