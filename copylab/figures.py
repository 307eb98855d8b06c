"""The sweep's figures, drawn from summary.csv / crossovers.csv rows (never from typed-in numbers).

Figures are plain matplotlib Figure objects (not pyplot-managed), so they work
under any backend, show inline in a notebook via display(fig), and never leak.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator

from copylab import implementations, schema
from copylab.diagram import zerocopy_path_figure
from copylab.manifest import Manifest
from copylab.metrics import METRICS
from copylab.results import zero_copy_counts

PINNING_STYLES = {"none": "-", "same_cpu": "--", "split_cpu": ":"}  # only used when a sweep has several
NO_DATA_COLOR = "0.35"


def _color(implementation: str) -> str:
    return implementations.get(implementation).color


def _reference_tools() -> list[str]:
    """Implementations drawn dashed: external tools measured for reference."""
    return [impl.name for impl in implementations.IMPLEMENTATIONS.values() if impl.reference]


def _zero_copy_implementations() -> list[str]:
    return [name for name in implementations.names() if implementations.uses_zero_copy(name)]


def make_figures(
    trials: pd.DataFrame,
    summary: pd.DataFrame,
    crossovers: pd.DataFrame,
    manifest: Manifest,
    confidence: float = 0.95,
    latency_size: int | None = None,
) -> dict[str, Figure]:
    """All plots of one sweep, keyed by file stem, in the report's order.

    TRIALS are the loaded trials (used for what was attempted), SUMMARY and
    CROSSOVERS the frames of copylab.stats / copylab.crossover at CONFIDENCE.
    LATENCY_SIZE picks the rr message size of the latency figure (default:
    the smallest rr size measured).
    """
    setup = describe_setup(manifest)
    return {
        "throughput_vs_size": throughput_figure(summary, crossovers, setup, confidence),
        "latency_vs_threads": latency_figure(summary, setup, confidence, latency_size),
        "cache_misses_vs_size": cache_figure(summary, manifest, setup, confidence),
        "cpu_per_byte_vs_size": cpu_figure(summary, manifest, setup, confidence),
        "zerocopy_copied_fraction": copied_fraction_figure(summary, trials, setup, confidence),
        "retransmits": retransmits_figure(summary, setup, confidence),
    }


def zerocopy_path_diagram(trials: pd.DataFrame) -> Figure:
    """The zero-copy send path, annotated with the COPIED share the study's zero-copy variant measured."""
    zero_copy = implementations.by_role("A3")
    counts = zero_copy_counts(trials, zero_copy.name) if zero_copy else None
    return zerocopy_path_figure(counts["copied_fraction"] if counts else None)


def describe_setup(manifest: Manifest) -> str:
    """Two title lines: the host and the sweep's settings, from the manifest."""
    host, parameters = manifest.host, manifest.parameters
    machine = ", ".join(
        str(part)
        for part in (
            host.hostname,
            host.cpu_model,
            f"{host.cores} cores",
            f"{host.memory_gib:g} GiB",
            f"kernel {host.kernel}",
            host.virtualization,
        )
        if part
    )
    settings = [
        f"sweep {manifest.sweep}",
        f"{parameters.trials} trials/config",
        f"{parameters.duration_s:g} s each after {parameters.warmup_s:g} s warm-up",
        f"MTU {parameters.mtu}",
        None if manifest.complete else "INCOMPLETE sweep",
    ]
    return machine + "\n" + ", ".join(s for s in settings if s)


def format_size(size: float) -> str:
    """64 -> '64 B', 4096 -> '4 KiB', 5792.6 -> '5.66 KiB'."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.3g} B"


def throughput_figure(summary: pd.DataFrame, crossovers: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """Stream throughput vs message size: one panel per thread count (rows: pinning), crossovers marked."""
    data = _rows(summary, "throughput_gbps", "stream")
    title = f"Throughput vs message size (mean, {confidence:.0%} CI)"
    if data.empty:
        return _empty_figure(title, setup, "No stream throughput measurements in this sweep.")
    pinnings, threads = _ordered(data["pinning"], schema.PINNINGS), sorted(data["threads"].unique())
    figure, axes = _grid(title, setup, len(pinnings), len(threads))
    marked = crossovers[(crossovers["workload"] == "stream") & (crossovers["metric"] == "throughput_gbps")]
    for r, pinning in enumerate(pinnings):
        for c, n_threads in enumerate(threads):
            ax = axes[r][c]
            panel = data[(data["pinning"] == pinning) & (data["threads"] == n_threads)]
            for implementation in implementations.ordered(panel["implementation"]):
                rows = panel[panel["implementation"] == implementation]
                style = "--" if implementation in _reference_tools() else "-"
                _curve(ax, rows, "size_bytes", _color(implementation), style)
            here = marked[(marked["pinning"] == pinning) & (marked["threads"] == n_threads)]
            _mark_crossovers(ax, here[here["status"] == "crossover"])
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{_threads(n_threads)}, pinning {pinning}", fontsize=9)
            ax.set_ylabel(_ylabel("throughput_gbps") if c == 0 else "")
    handles = _implementation_handles(data["implementation"], dashed=_reference_tools())
    if (marked["status"] == "crossover").any():
        handles.append(Patch(color="0.5", alpha=0.25, label=f"crossover size, {confidence:.0%} CI (dotted: estimate)"))
    _legend(figure, handles)
    return figure


def latency_figure(summary: pd.DataFrame, setup: str, confidence: float, size: int | None = None) -> Figure:
    """rr latency (mean and p99) vs thread count at one message size; rows: pinning."""
    data = summary[(summary["workload"] == "rr") & summary["metric"].isin(["latency_mean_us", "latency_p99_us"])]
    title = f"Round-trip latency vs threads (mean, {confidence:.0%} CI)"
    if data.empty:
        return _empty_figure(title, setup, "No request/response (rr) trials in this sweep: no latency to plot.")
    size = int(data["size_bytes"].min()) if size is None else size
    data = data[data["size_bytes"] == size]
    if data.empty:
        return _empty_figure(title, setup, f"No rr trials at {format_size(size)} in this sweep.")
    pinnings = _ordered(data["pinning"], schema.PINNINGS)
    metrics = ["latency_mean_us", "latency_p99_us"]
    figure, axes = _grid(f"{title}, message size {format_size(size)}", setup, len(pinnings), len(metrics))
    for r, pinning in enumerate(pinnings):
        for c, metric in enumerate(metrics):
            ax = axes[r][c]
            panel = data[(data["pinning"] == pinning) & (data["metric"] == metric)]
            for implementation in implementations.ordered(panel["implementation"]):
                _curve(ax, panel[panel["implementation"] == implementation], "threads", _color(implementation), "-")
            _log2_axis(ax, data["threads"], str, "client threads (= connections), log2 scale", rotation=0)
            ax.set_title(f"{METRICS[metric].label}, pinning {pinning}", fontsize=9)
            ax.set_ylabel(_ylabel(metric))
    _legend(figure, _implementation_handles(data["implementation"]))
    return figure


def cache_figure(summary: pd.DataFrame, manifest: Manifest, setup: str, confidence: float) -> Figure:
    """Sender L1d and LLC load misses per KiB vs message size, or a plain note when not measured."""
    metrics = ["snd_l1d_misses_per_kib", "snd_llc_misses_per_kib"]
    title = f"Sender cache misses vs message size (mean, {confidence:.0%} CI)"
    return _size_panels(summary, metrics, manifest, title, setup, "cache miss counters")


def cpu_figure(summary: pd.DataFrame, manifest: Manifest, setup: str, confidence: float) -> Figure:
    """CPU cost per byte vs message size: cycles/byte where measured, CPU time per byte from getrusage always."""
    metrics = ["cycles_per_byte", "cpu_ns_per_byte", "snd_cpu_ns_per_byte"]
    title = f"CPU cost per byte vs message size (mean, {confidence:.0%} CI)"
    return _size_panels(summary, metrics, manifest, title, setup, "CPU cycles")


def copied_fraction_figure(summary: pd.DataFrame, trials: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """Fraction of zero-copy sends the kernel copied anyway, per configuration."""
    zero_copy = _zero_copy_implementations()
    data = summary[(summary["metric"] == "zc_copied_fraction") & summary["implementation"].isin(zero_copy)]
    title = f"MSG_ZEROCOPY sends completed as copied (mean, {confidence:.0%} CI)"
    if data.empty:
        attempted = trials["implementation"].isin(zero_copy).any()
        why = "no completion counts were recorded" if attempted else "no zero-copy trials in this sweep"
        return _empty_figure(title, setup, f"Nothing to plot: {why}.")
    return _per_threads_panels(data, "workload", schema.WORKLOADS, "zc_copied_fraction", title, setup, (-0.05, 1.05))


def retransmits_figure(summary: pd.DataFrame, setup: str, confidence: float) -> Figure:
    """TCP retransmits per stream trial, one panel per implementation."""
    data = _rows(summary, "retransmits", "stream")
    title = f"TCP retransmits per stream trial (mean, {confidence:.0%} CI)"
    if data.empty:
        return _empty_figure(title, setup, "No retransmit counts in this sweep.")
    return _per_threads_panels(data, "implementation", implementations.names(), "retransmits", title, setup, None)


def _size_panels(
    summary: pd.DataFrame, metrics: list[str], manifest: Manifest, title: str, setup: str, what: str
) -> Figure:
    """Rows: METRICS, columns: thread counts, lines: implementation (style: pinning); unmeasured rows get a note."""
    data = summary[(summary["workload"] == "stream") & summary["metric"].isin(metrics)]
    measured = [m for m in metrics if (data["metric"] == m).any()]
    missing = [m for m in metrics if m not in measured]
    note = _unmeasured_note(missing, manifest, what) if missing else ""
    if not measured:
        return _empty_figure(title, setup, note)
    threads = sorted(data["threads"].unique())
    figure, axes = _grid(title, setup + (f"\n{textwrap.fill(note, 120)}" if note else ""), len(measured), len(threads))
    pinnings = _ordered(data["pinning"], schema.PINNINGS)
    styles = _pinning_styles(pinnings)
    for r, metric in enumerate(measured):
        for c, n_threads in enumerate(threads):
            ax = axes[r][c]
            panel = data[(data["metric"] == metric) & (data["threads"] == n_threads)]
            for implementation in implementations.ordered(panel["implementation"]):
                for pinning in pinnings:
                    rows = panel[(panel["implementation"] == implementation) & (panel["pinning"] == pinning)]
                    _curve(ax, rows, "size_bytes", _color(implementation), styles[pinning])
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{METRICS[metric].label}\n{_threads(n_threads)}", fontsize=8)
            ax.set_ylabel(_ylabel(metric) if c == 0 else "")
    _legend(figure, _implementation_handles(data["implementation"]) + _pinning_handles(pinnings))
    return figure


def _per_threads_panels(
    data: pd.DataFrame,
    facet: str,
    order: Iterable[str],
    metric: str,
    title: str,
    setup: str,
    ylim: tuple[float, float] | None,
) -> Figure:
    """One panel per value of FACET; lines: thread count (colour) and pinning (style) vs message size."""
    facets = _ordered(data[facet], order)
    threads = sorted(data["threads"].unique())
    palette = dict(zip(threads, sns.color_palette("viridis", len(threads)), strict=True))
    pinnings = _ordered(data["pinning"], schema.PINNINGS)
    styles = _pinning_styles(pinnings)
    figure, axes = _grid(title, setup, 1, len(facets))
    for c, value in enumerate(facets):
        ax = axes[0][c]
        panel = data[data[facet] == value]
        for n_threads in threads:
            for pinning in pinnings:
                rows = panel[(panel["threads"] == n_threads) & (panel["pinning"] == pinning)]
                _curve(ax, rows, "size_bytes", palette[n_threads], styles[pinning])
        _size_axis(ax, panel["size_bytes"])
        if ylim:
            ax.set_ylim(*ylim)
        ax.set_title(str(value), fontsize=9)
        ax.set_ylabel(_ylabel(metric) if c == 0 else "")
    handles = [Line2D([], [], color=palette[t], marker="o", label=_threads(t)) for t in threads]
    _legend(figure, handles + _pinning_handles(pinnings))
    return figure


def _curve(ax: Axes, rows: pd.DataFrame, x: str, color: Any, style: str) -> None:
    """Mean line with a CI band; filled markers, open ones where the configuration is unstable."""
    rows = rows.dropna(subset=["mean"]).sort_values(x)
    if rows.empty:
        return
    ax.plot(rows[x], rows["mean"], color=color, linestyle=style, linewidth=1.4)
    ax.fill_between(rows[x], rows["ci_low"], rows["ci_high"], color=color, alpha=0.2, linewidth=0)
    stable = ~rows["unstable"].astype(bool)
    ax.scatter(rows.loc[stable, x], rows.loc[stable, "mean"], color=color, s=14, zorder=3)
    ax.scatter(rows.loc[~stable, x], rows.loc[~stable, "mean"], facecolors="white", edgecolors=color, s=14, zorder=3)


def _mark_crossovers(ax: Axes, crossovers: pd.DataFrame) -> None:
    for _, row in crossovers.iterrows():
        color = _color(row["challenger"])
        ax.axvspan(row["ci_low"], row["ci_high"], color=color, alpha=0.12, linewidth=0)
        ax.axvline(row["crossover_size"], color=color, linestyle=":", linewidth=1.2)
        ax.text(
            row["crossover_size"],
            0.98,
            f" {row['challenger']} > {row['baseline']}\n from {format_size(row['crossover_size'])}\n"
            f" [{format_size(row['ci_low'])}, {format_size(row['ci_high'])}]",
            transform=ax.get_xaxis_transform(),
            va="top",
            fontsize=6,
            color=color,
        )


def _size_axis(ax: Axes, sizes: pd.Series) -> None:
    _log2_axis(ax, sizes, format_size, "message size [bytes], log2 scale", rotation=45)


def _log2_axis(ax: Axes, values: pd.Series, label: Any, title: str, rotation: int) -> None:
    ticks = sorted(values.unique())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    step = max(1, int(np.ceil(len(ticks) / 7)))
    ax.set_xticklabels([label(t) if i % step == 0 else "" for i, t in enumerate(ticks)], fontsize=7, rotation=rotation)
    ax.set_xlabel(title, fontsize=8)
    ax.tick_params(axis="y", labelsize=7)


def _threads(count: int) -> str:
    return f"{count} thread" if count == 1 else f"{count} threads"


def _ylabel(metric: str) -> str:
    return textwrap.fill(f"{METRICS[metric].label} [{METRICS[metric].unit}]", 32)


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


def _ordered(values: pd.Series, order: Iterable[Any]) -> list[Any]:
    present = set(values)
    return [v for v in order if v in present]


def _grid(title: str, setup: str, nrows: int, ncols: int) -> tuple[Figure, list[list[Axes]]]:
    with sns.axes_style("whitegrid"):
        figure = Figure(figsize=(1.2 + 3.3 * ncols, 1.6 + 2.7 * nrows), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False, sharey="row")
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    return figure, [list(row) for row in axes]


def _empty_figure(title: str, setup: str, message: str) -> Figure:
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    ax = figure.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(message, 90), ha="center", va="center", fontsize=10, color=NO_DATA_COLOR)
    return figure


def _implementation_handles(present: pd.Series, dashed: Iterable[str] = ()) -> list[Any]:
    dashed = set(dashed)
    return [
        Line2D([], [], color=_color(i), marker="o", linestyle="--" if i in dashed else "-", label=i)
        for i in implementations.ordered(present)
    ]


def _pinning_styles(pinnings: list[str]) -> dict[str, str]:
    return {p: PINNING_STYLES[p] if len(pinnings) > 1 else "-" for p in pinnings}


def _pinning_handles(pinnings: list[str]) -> list[Any]:
    if len(pinnings) < 2:
        return []
    return [Line2D([], [], color="0.3", linestyle=PINNING_STYLES[p], label=f"pinning {p}") for p in pinnings]


def _legend(figure: Figure, handles: list[Any]) -> None:
    unstable = Line2D(
        [], [], color="0.4", marker="o", markerfacecolor="white", linestyle="", label="unstable (CV > 10% or n < 3)"
    )
    handles = [*handles, unstable]
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=8)
