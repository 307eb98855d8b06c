"""The explorer's figure: the view's means, or its ratios to a baseline, along one axis, as a PNG.

Curves, interval bands, open markers and the log2 x axis are copylab.analysis.plotting's,
as in the report's figures; what is the explorer's own is the single panel with
its legend inside, the red rings around what the flags below the plot list, and
the crossover drawn as a dashed line.
"""

from __future__ import annotations

import io

import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from copylab.analysis import plotting
from copylab.analysis.stats import IMPRECISE, MIN_TRIALS
from copylab.declarations.metrics import METRICS
from copylab.explore.views import AXES, Axis, View, axis_label, tick_label
from copylab.formatting import fmt_bytes, fmt_num
from copylab.record.manifest import Manifest

_AXIS_TITLES: dict[str, str] = {**AXES, "threads": "threads (connections)"}


def figure_title(manifest: Manifest, metric: str, view: View, x: Axis, fixed: int) -> str:
    """Two lines: what is plotted, then the sweep and its system configuration."""
    host = manifest.host
    system = f"{manifest.sweep}: {host.cpu_model}, {host.cores} cores, kernel {host.kernel}, {host.virtualization}"
    return f"{METRICS[metric].label}, {axis_label(view.other(x), fixed)}, {view.label()}\n{system}"


def crossover_text(axis: Axis, value: float) -> str:
    """Where a crossover lies along AXIS: '5,793 B', '42.5 connections'."""
    return fmt_bytes(value) if axis == "size_bytes" else f"{fmt_num(value)} {AXES[axis]}"


@plotting.literal_text
def make_figure(
    data: pd.DataFrame,
    metric: str,
    x: Axis,
    *,
    raw: pd.DataFrame | None = None,
    log_y: bool = False,
    title: str = "",
    confidence: float = 0.95,
    overlay: tuple[str, pd.DataFrame] | None = None,
) -> Figure:
    """Means with Student-t interval bands per implementation (plot_data rows), optional raw trials, unstable
    rings; OVERLAY, a second sweep's name and plot_data rows, dashed in the same colours."""
    colors = plotting.colors()
    fig, ax = _figure()
    for name, rows in data.groupby("implementation", sort=False):
        color = colors[name]
        plotting.curve(ax, rows, x, color, "-")
        if raw is not None:
            points = raw[raw["implementation"] == name]
            ax.scatter(points[x], points["value"], s=12, alpha=0.45, color=color, zorder=3)
    if overlay is not None:
        for name, rows in overlay[1].groupby("implementation", sort=False):
            plotting.curve(ax, rows, x, colors[name], "--")
    if raw is not None and len(raw):
        ax.scatter([], [], s=12, alpha=0.45, color="black", label="individual trials")
    unstable = data[data["unstable"].astype(bool)]
    if len(unstable):
        ax.scatter(
            unstable[x],
            unstable["mean"],
            s=160,
            facecolors="none",
            edgecolors="red",
            linewidths=1.5,
            zorder=4,
            label=f"unstable (95% CI wider than +-{IMPRECISE:.0%} or n < {MIN_TRIALS})",
        )
    spec = METRICS[metric]
    ax.set_ylabel(f"{metric} ({spec.unit}), {spec.direction} is better", fontsize=8)
    present = pd.concat([data["implementation"], overlay[1]["implementation"]]) if overlay else data["implementation"]
    handles = [*plotting.implementation_handles(present, colors), *ax.get_legend_handles_labels()[0]]
    if overlay is not None:
        handles.append(Line2D([], [], color="0.3", linestyle="--", label=f"dashed: {overlay[0]}"))
    note = f"points: means; bands: {confidence:.0%} Student-t intervals; open: unstable"
    _finish(ax, x, data[x], handles, log_y, title, note)
    return fig


@plotting.literal_text
def make_ratio_figure(
    ratios: pd.DataFrame,
    crossovers: pd.DataFrame,
    metric: str,
    x: Axis,
    baseline: str,
    *,
    log_y: bool = False,
    title: str = "",
    confidence: float = 0.95,
) -> Figure:
    """Challenger/baseline ratios with their interval bands (filled: Holm-significant) and detected crossovers."""
    colors = plotting.colors()
    fig, ax = _figure()
    ax.axhline(1.0, color="black", linewidth=1, linestyle=":", label=f"{baseline} (ratio 1)")
    statuses = crossovers.set_index("challenger") if len(crossovers) else None
    labels: dict[str, str] = {}
    for name, rows in ratios.groupby("challenger", sort=False):
        color = colors[name]
        labels[name] = name
        if statuses is not None and name in statuses.index:
            found = statuses.loc[name]
            labels[name] = f"{name}: {found['status'].replace('_', ' ')}"
            if found["status"] == "crossover":
                labels[name] = f"{name}: crossover at {crossover_text(x, found['crossover_at'])}"
                ax.axvline(found["crossover_at"], color=color, linestyle="--", linewidth=1.2)
                ax.axvspan(found["ci_low"], found["ci_high"], color=color, alpha=0.12)
        plotting.curve(ax, _ratio_curve(rows), x, color, "-")
    handles = plotting.implementation_handles(ratios["challenger"], colors)
    for handle in handles:
        handle.set_label(labels[handle.get_label()])
    spec = METRICS[metric]
    ax.set_ylabel(f"{metric} ratio to {baseline} ({spec.direction} is better)", fontsize=8)
    methods = {"paired": "paired within blocks", "unpaired": "Fieller"}
    how = " or ".join(methods[m] for m in methods if m in set(ratios.get("method", ())))
    note = f"bands: {confidence:.0%} intervals ({how}); filled: significant (Holm); shaded column: crossover interval"
    _finish(ax, x, ratios[x], [*ax.get_legend_handles_labels()[0], *handles], log_y, title, note)
    return fig


def _ratio_curve(rows: pd.DataFrame) -> pd.DataFrame:
    """Comparison rows in the columns plotting.curve draws; its open markers then say "not significant"."""
    return rows.rename(columns={"ratio": "mean", "ratio_ci_low": "ci_low", "ratio_ci_high": "ci_high"}).assign(
        unstable=~rows["significant"].astype(bool)
    )


def _figure() -> tuple[Figure, Axes]:
    # fixed margins rather than a layout engine: it would draw every figure twice, doubling redraw time
    fig = Figure(figsize=(8, 4.6))
    fig.subplots_adjust(left=0.1, right=0.98, top=0.87, bottom=0.2)
    return fig, fig.add_subplot()


def _finish(ax: Axes, x: Axis, values: pd.Series, handles: list[Artist], log_y: bool, title: str, note: str) -> None:
    if len(values):
        rotation = 45 if x == "size_bytes" else 0
        plotting.log2_axis(ax, values, lambda value: tick_label(x, int(value)), _AXIS_TITLES[x], rotation)
        ax.legend(handles=handles, fontsize="small")
    else:
        ax.text(0.5, 0.5, "no data for this selection", ha="center", va="center", transform=ax.transAxes)
    if log_y:
        ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title, fontsize="medium")
    ax.annotate(
        note, (0.99, 0.01), xycoords="figure fraction", ha="right", va="bottom", fontsize="x-small", color="dimgray"
    )


def figure_png(fig: Figure) -> bytes:
    """FIG rendered as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()
