"""The sweep's figures, drawn from summary.csv / crossovers.csv rows (never from typed-in numbers).

Figures are plain matplotlib Figure objects (not pyplot-managed), so they work
under any backend, show inline in a notebook via display(fig), and never leak.
"""

from __future__ import annotations

import dataclasses
import functools
import textwrap
from collections.abc import Iterable

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter
from matplotlib.typing import LineStyleType

from copylab.analysis import plotting
from copylab.calibration.record import MEMCPY, PATH_LABELS, READ, VECTOR, CacheLevel, Calibration
from copylab.declarations import implementations, schema
from copylab.declarations.implementation import RECEIVE_MODES
from copylab.declarations.metrics import METRICS
from copylab.declarations.vocabulary import NO_LAYOUT
from copylab.experiments.copies import cachesim
from copylab.experiments.copies.answers import caches, paired, threads
from copylab.experiments.copies.diagram import zerocopy_path_figure
from copylab.experiments.copies.presentation import COLORS, RECEIVE_COLORS
from copylab.experiments.copies.queries import zero_copy_counts
from copylab.formatting import fmt_size
from copylab.record.manifest import Manifest
from copylab.roles import Role

# Sizes on axes and at crossovers: whole units, else three significant digits.
SIZE_LABEL = functools.partial(fmt_size, approximate=True)


def _reference_tools() -> list[str]:
    """Implementations drawn dashed: external tools measured for reference."""
    return [impl.name for impl in implementations.registry().values() if impl.reference]


def _zero_copy_implementations() -> list[str]:
    return [name for name in implementations.names() if implementations.uses_zero_copy(name)]


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
    study = by_copy[by_copy["implementation"].map(implementations.in_study)]
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
                plotting.curve(ax, rows, "size_bytes", COLORS[implementation], style, grid=data["size_bytes"])
            here = marked[(marked["pinning"] == pinning) & (marked["threads"] == n_threads)]
            plotting.mark_crossovers(ax, here[here["status"] == "crossover"], SIZE_LABEL, COLORS)
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{_threads(n_threads)}, CPU pinning {pinning}", fontsize=9)
            ax.set_ylabel(plotting.ylabel("throughput_gbps") if c == 0 else "")
    handles = plotting.implementation_handles(data["implementation"], COLORS, dashed=_reference_tools())
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
                    COLORS[implementation],
                    "-",
                )
            plotting.log2_axis(ax, data["threads"], str, "client threads (= connections), log2 scale", rotation=0)
            ax.set_title(f"{METRICS[metric].label}, CPU pinning {pinning}", fontsize=9)
            ax.set_ylabel(plotting.ylabel(metric))
    plotting.legend(figure, plotting.implementation_handles(data["implementation"], COLORS))
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


def copies_and_cost_figure(
    copies: pd.DataFrame, calibration: Calibration | None, sizes: list[int], setup: str
) -> Figure:
    """Without miss counters: the kernel's measured copies per byte delivered against message size, and the
    calibrated cost of copying a byte by working set, with the cache sizes marked (a message and its copy
    occupy twice its size)."""
    title = "Copies counted by the kernel, and what a copy costs by cache level (this host has no miss counters)"
    panels = [kind for kind, present in (("counted", not copies.empty), ("cost", bool(calibration))) if present]
    figure = Figure(figsize=(max(7.0, 4.6 * len(panels)), 6.4), layout="constrained")  # room for the legends below
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    axes = dict(zip(panels, figure.subplots(1, len(panels), squeeze=False)[0], strict=True))
    caches = calibration.caches if calibration else []
    if "counted" in axes:
        ax = axes["counted"]
        for (name, mode), rows in copies.groupby(["implementation", "receive"], sort=False):
            rows = rows.groupby("size_bytes", as_index=False)["mean"].mean()
            ax.plot(
                rows["size_bytes"],
                rows["mean"],
                marker="o",
                color=COLORS[name],
                linestyle="-" if mode == "copy" else "--",
                label=f"{name}, receive {mode}",
            )
        for level in caches:  # the message size whose working set (twice it) fills the level
            _mark(ax, level.size_bytes / 2, f"leaves {level.name}")
        _size_axis(ax, copies["size_bytes"])
        # from zero, with one copy per byte marked: a few percent of headers and retransmissions do not look like
        # structure
        ax.axhline(1.0, color="0.6", linewidth=0.8, linestyle=":")
        ax.set_ylim(0, max(1.2, 1.1 * float(copies["mean"].max())))
        ax.set_ylabel("kernel bytes copied to user space per byte delivered", fontsize=7)
        ax.set_title("measured (BPF, skb_copy_datagram_iovec)", fontsize=8)
        # below the panel, as the cost panel's: inside it the legend covered a line
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1)
    if calibration is not None and "cost" in axes:
        _cost_panel(axes["cost"], calibration, sizes, caches)
    return figure


# How each calibration path and placement is drawn: colour by path, line style by placement.  No implementation has
# these colours, so the cost panel's colours cannot be read as the senders' of the panel beside it.
PATH_COLORS = {MEMCPY: ("#000000", "black"), VECTOR: ("#6a3d9a", "purple"), READ: ("#808000", "olive")}
_PATH_COLORS = {path: color for path, (color, _) in PATH_COLORS.items()}
_OFFSET_STYLES = {0: "-", 16: "--"}


def _cost_panel(ax: Axes, calibration: Calibration, sizes: list[int], caches: list[CacheLevel]) -> None:
    """The calibrated cost per byte by working set: every path at every placement where the calibration kept its
    samples (else the costs by level), the findings shaded, cache sizes and the sweep's messages marked."""
    if calibration.copy_points:
        points = sorted(calibration.copy_points, key=lambda p: (p.path, p.offset, p.working_set_bytes))
        for (path, offset), group in pd.DataFrame(
            [(p.path, p.offset, p.working_set_bytes, p.median) for p in points],
            columns=["path", "offset", "working_set", "median"],
        ).groupby(["path", "offset"], sort=False):
            ax.plot(
                group["working_set"],
                group["median"],
                marker="o",
                markersize=3,
                color=_PATH_COLORS.get(path, "#555555"),
                linestyle=_OFFSET_STYLES.get(offset, ":"),
                label=f"{PATH_LABELS.get(path, path)}, {'same page offset' if offset == 0 else f'dst +{offset} B'}",
            )
        for finding in calibration.findings:
            ax.axvspan(
                2 * finding.from_bytes, 2 * finding.to_bytes, color=_PATH_COLORS.get(finding.path), alpha=0.08, lw=0
            )
        if calibration.findings:
            ax.plot([], [], color="#999999", linewidth=6, alpha=0.3, label="finding: not a cache level")
    else:
        costs = pd.DataFrame([dataclasses.asdict(cost) for cost in calibration.copy_cost])
        for region, rows in costs.groupby("region", sort=False):
            ax.plot(rows["working_set_bytes"], rows["ns_per_byte"], marker="o", label=f"inside {region}")
    for level in caches:
        _mark(ax, level.size_bytes, f"{level.name} {fmt_size(level.size_bytes)}")
    for size in sizes:
        ax.axvline(2 * size, color="#c0392b", linestyle=":", linewidth=0.8)
    ax.plot([], [], color="#c0392b", linestyle=":", label="sweep's messages (2 × size)")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: SIZE_LABEL(value)))
    ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    plotting.plain_log_y(ax)
    ax.set_xlabel("working set (source + destination bytes), log2 scale")
    ax.set_ylabel("ns per byte copied (median)")
    if calibration.inconsistent:
        ax.set_title(textwrap.fill(f"inconsistent: {calibration.inconsistent}", 70), fontsize=7)
    else:
        ax.set_title("calibrated on the sending CPU", fontsize=8)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1)


def _mark(ax: Axes, x: float, label: str) -> None:
    """A labelled vertical line at X (a cache size)."""
    ax.axvline(x, color="#888888", linestyle="--", linewidth=0.8)
    ax.annotate(
        label,
        (x, 1.0),
        xycoords=("data", "axes fraction"),
        rotation=90,
        va="top",
        ha="right",
        fontsize=7,
        color="#555555",
    )


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
                        ax, rows, "size_bytes", COLORS[implementation], styles[pinning], grid=data["size_bytes"]
                    )
            _size_axis(ax, data["size_bytes"])
            ax.set_title(f"{METRICS[metric].label}\n{_threads(n_threads)}", fontsize=8)
            ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    plotting.legend(
        figure, plotting.implementation_handles(data["implementation"], COLORS) + plotting.pinning_handles(pinnings)
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


def saving_figure(trials: pd.DataFrame, manifest: Manifest, setup: str) -> Figure:
    """Question 2's grid: the eliminated copy's measured saving per byte (two_copy minus one_copy sender user CPU,
    paired by block) and the packing copy's simulated misses per KiB, against the working set (twice the message),
    with the cache sizes of the sweep's calibration marked."""
    two, one = (implementations.by_role(role) for role in (Role.TWO_COPY, Role.ONE_COPY))
    assert two is not None and one is not None  # the copies experiment declares both roles
    blocks = paired.by_block(trials, caches.SAVING, ["size_bytes", "implementation"])
    saving = (blocks[two.name] - blocks[one.name]).groupby(level="size_bytes").agg(list)
    found = {int(size): paired.interval(values) for size, values in saving.items()}
    points = pd.DataFrame(
        [(2 * size, v.mean, v.low, v.high) for size, v in sorted(found.items()) if v is not None],
        columns=["working_set", "mean", "ci_low", "ci_high"],
    )
    levels = manifest.calibration.caches if manifest.calibration else []
    figure, axes = _own_axes("The eliminated copy by cache level", setup)
    ax = axes[0][0]
    ax.errorbar(
        points["working_set"],
        points["mean"],
        yerr=[points["mean"] - points["ci_low"], points["ci_high"] - points["mean"]],
        marker="o",
        color=COLORS[two.name],
        capsize=3,
        label=f"{two.name} minus {one.name}, sender user CPU",
    )
    ax.axhline(0, color="0.5", linewidth=0.8)
    ax.set_ylabel("saving, ns per byte (mean, 95% CI)", fontsize=8)
    ax.set_title("measured", fontsize=8)
    ax.legend(fontsize=6, loc="lower right")
    simulated = (
        cachesim.simulate(tuple(int(ws) // 2 for ws in points["working_set"]), levels[0], levels[-1])
        if levels
        else "no calibration gives this host's caches"
    )
    right = axes[0][1]
    if isinstance(simulated, str):
        right.text(0.5, 0.5, textwrap.fill(f"Not simulated: {simulated}.", 40), ha="center", va="center", fontsize=8)
    else:
        for attribute, level, style in (("first_per_kib", levels[0], "-"), ("last_per_kib", levels[-1], "--")):
            right.plot(
                [2 * row.message_bytes for row in simulated],
                [getattr(row, attribute) for row in simulated],
                marker="o",
                linestyle=style,
                color="#555555",
                label=f"{level.name} misses (cachegrind)",
            )
        right.legend(fontsize=6, loc="center left")
    right.set_ylabel("simulated misses per KiB copied (user space only)", fontsize=8)
    right.set_title("simulated: the packing copy alone", fontsize=8)
    for ax in (axes[0][0], right):
        plotting.log2_axis(ax, points["working_set"], SIZE_LABEL, "working set (message and its copy), log2 scale", 45)
        for level in levels:
            _mark(ax, level.size_bytes, f"{level.name} {fmt_size(level.size_bytes)}")
    return figure


def threads_figure(summary: pd.DataFrame, setup: str) -> Figure:
    """Question 3's experiment: CPU per byte and context switches per message against the thread count of each
    end, one line per pinning, the threads' combined working set on the axis."""
    stream = summary[summary["workload"] == "stream"]
    size = int(stream["size_bytes"].max())
    stream = stream[stream["size_bytes"] == size]
    metrics = ["cpu_ns_per_byte", "ctx_switches_per_msg"]
    figure, axes = _own_axes(f"CPU per byte against threads, {fmt_size(size)} messages", setup)
    pinnings = list(dict.fromkeys(stream["pinning"]))
    for c, metric in enumerate(metrics):
        ax = axes[0][c]
        rows = stream[stream["metric"] == metric]
        for pinning in pinnings:
            color = _PINNING_COLORS.get(pinning, "#555555")
            plotting.curve(ax, rows[rows["pinning"] == pinning], "threads", color, plotting.PINNING_STYLES[pinning])
        counts = sorted(int(t) for t in rows["threads"].unique())
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts)
        ax.set_xticklabels([f"{t}\n{fmt_size(2 * size * t)}" for t in counts], fontsize=7)
        ax.set_xlabel("threads at each end\n(their messages and copies together)", fontsize=8)
        ax.set_ylabel(plotting.ylabel(metric))
    handles = [
        Line2D([], [], color=_PINNING_COLORS.get(p, "#555555"), linestyle=plotting.PINNING_STYLES[p], label=p)
        for p in pinnings
    ]
    plotting.legend(figure, handles)
    return figure


# Question 3's pinnings: both ends on one CPU, the two ends on two CPUs.
_PINNING_COLORS = {"same_cpu": "#d55e00", "split_cpu": "#0173b2", "none": "#029e73"}


def _own_axes(title: str, setup: str) -> tuple[Figure, list[list[Axes]]]:
    """Two panels side by side, each with its own y axis (plotting.grid shares one)."""
    with sns.axes_style("whitegrid"):
        figure = Figure(figsize=(9.0, 4.6), layout="constrained")
        axes = figure.subplots(1, 2, squeeze=False)
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    return figure, [list(axes[0])]
