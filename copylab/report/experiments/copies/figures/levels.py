"""The copies experiment's figures of cache levels: the calibrated cost of a copy by working set beside the kernel's
counted copies (Part D's figure where the host counts no misses), and the figures of the sweeps designed for
questions 2 (the eliminated copy by cache level) and 3 (CPU per byte against threads)."""

from __future__ import annotations

import dataclasses
import functools
import textwrap

import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from copylab.analysis import plotting
from copylab.calibration.record import MEMCPY, PATH_LABELS, READ, VECTOR, CacheLevel, Calibration
from copylab.declarations import implementations
from copylab.formatting import fmt_size
from copylab.record.manifest import Manifest
from copylab.report.experiments.copies.answers import caches, paired
from copylab.report.experiments.copies.basics import cachesim
from copylab.roles import Role

SIZE_LABEL = functools.partial(fmt_size, approximate=True)


def _size_axis(ax: Axes, sizes: pd.Series) -> None:
    plotting.log2_axis(ax, sizes, SIZE_LABEL, "message size [bytes], log2 scale", rotation=45)


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
                color=plotting.colors()[name],
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
        color=plotting.colors()[two.name],
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
