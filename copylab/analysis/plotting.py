"""Drawing helpers shared by every experiment's figures: curves with intervals, log2 axes, panels, legends."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import matplotlib
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
from matplotlib.typing import LineStyleType

from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS

if TYPE_CHECKING:
    from copylab.record.manifest import Manifest

Drawn = TypeVar("Drawn", bound=Callable[..., Any])


def literal_text(function: Drawn) -> Drawn:
    """FUNCTION, drawing with its text printed as it is: a sweep's strings (host, CPU, sweep name) reach titles
    and labels, and a '$' in one must print, not start matplotlib's mathtext."""
    return matplotlib.rc_context({"text.parse_math": False})(function)


# only used when a sweep has several
PINNING_STYLES: dict[str, LineStyleType] = {"none": "-", "same_cpu": "--", "split_cpu": ":"}
NO_DATA_COLOR = "0.35"


def curve(
    ax: Axes,
    rows: pd.DataFrame,
    x: str,
    color: Any,
    style: LineStyleType,
    grid: Iterable[float] | None = None,
    floor: float | None = None,
) -> None:
    """Mean line with a CI band; filled markers, open ones where the configuration is unstable.  With GRID (every
    x the figure measured), no line or band crosses an x the series skipped: its points there stand alone.  With
    FLOOR (a count's zero), the band stops there."""
    rows = rows.dropna(subset=["mean"]).sort_values(x)
    if rows.empty:
        return
    for run in measured_runs(rows, x, grid):
        low = run["ci_low"] if floor is None else run["ci_low"].clip(lower=floor)
        ax.plot(run[x], run["mean"], color=color, linestyle=style, linewidth=1.4)
        ax.fill_between(run[x], low, run["ci_high"], color=color, alpha=0.2, linewidth=0)
    stable = ~rows["unstable"].astype(bool)
    ax.scatter(rows.loc[stable, x], rows.loc[stable, "mean"], color=color, s=14, zorder=3)
    ax.scatter(rows.loc[~stable, x], rows.loc[~stable, "mean"], facecolors="white", edgecolors=color, s=14, zorder=3)


def measured_runs(rows: pd.DataFrame, x: str, grid: Iterable[float] | None) -> list[pd.DataFrame]:
    """ROWS (sorted by X) split where the series skips a value of GRID: each run is a stretch of neighbouring
    values it measured."""
    if grid is None:
        return [rows]
    position = rows[x].map({value: index for index, value in enumerate(sorted(set(grid)))})
    breaks = (position.diff() != 1).cumsum()
    return [run for _, run in rows.groupby(breaks)]


# How far down the panel each further crossover's label starts (axes fraction): a label is three lines of 6 pt, so
# two crossovers near each other no longer print their labels on top of each other.
LABEL_STEP = 0.17


def mark_crossovers(
    ax: Axes, crossovers: pd.DataFrame, label: Callable[[float], str], colors: Mapping[str, str]
) -> None:
    """Each crossover's interval and estimate, in its challenger's colour of COLORS."""
    for step, (_, row) in enumerate(crossovers.sort_values("crossover_at").iterrows()):
        color = colors[row["challenger"]]
        ax.axvspan(row["ci_low"], row["ci_high"], color=color, alpha=0.12, linewidth=0)
        ax.axvline(row["crossover_at"], color=color, linestyle=":", linewidth=1.2)
        ax.text(
            row["crossover_at"],
            0.98 - step * LABEL_STEP,
            f" {row['challenger']} > {row['baseline']}\n from {label(row['crossover_at'])}\n"
            f" [{label(row['ci_low'])}, {label(row['ci_high'])}]",
            transform=ax.get_xaxis_transform(),
            va="top",
            fontsize=6,
            color=color,
        )


def plain_log_y(ax: Axes) -> None:
    """A log y axis labelled in plain numbers: figures print text literally (literal_text), so the log scale's own
    labels, written for mathtext, printed as '$\\mathdefault{10^{-1}}$'.  Between the powers of ten only 2 and 5
    are labelled: every minor tick's label ran into the next."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda value, _: f"{value:g}" if f"{value:.0e}"[0] in "25" else ""))


def log2_axis(ax: Axes, values: pd.Series, label: Any, title: str, rotation: int) -> None:
    ticks = sorted(values.unique())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    step = max(1, int(np.ceil(len(ticks) / 7)))
    ax.set_xticklabels([label(t) if i % step == 0 else "" for i, t in enumerate(ticks)], fontsize=7, rotation=rotation)
    ax.set_xlabel(title, fontsize=8)
    ax.tick_params(axis="y", labelsize=7)


def ylabel(metric: str) -> str:
    return textwrap.fill(f"{METRICS[metric].label} [{METRICS[metric].unit}]", 32)


def present_in_order(values: pd.Series, order: Iterable[Any]) -> list[Any]:
    present = set(values)
    return [v for v in order if v in present]


def grid(title: str, setup: str, nrows: int, ncols: int) -> tuple[Figure, list[list[Axes]]]:
    with sns.axes_style("whitegrid"):
        # Never narrower than the title and setup lines above the panels.
        figure = Figure(figsize=(max(7.0, 1.2 + 3.3 * ncols), 1.6 + 2.7 * nrows), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False, sharey="row")
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    return figure, [list(row) for row in axes]


def empty_figure(title: str, setup: str, message: str) -> Figure:
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    figure.suptitle(f"{title}\n{setup}", fontsize=9)
    ax = figure.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(message, 90), ha="center", va="center", fontsize=10, color=NO_DATA_COLOR)
    return figure


def colors() -> dict[str, str]:
    """Every implementation's colour in the figures, as its declaration gives it."""
    return {name: implementation.color for name, implementation in implementations.registry().items()}


def implementation_handles(present: pd.Series, colors: Mapping[str, str], dashed: Iterable[str] = ()) -> list[Any]:
    """A legend entry for each implementation PRESENT, in its colour of COLORS."""
    dashed = set(dashed)
    return [
        Line2D([], [], color=colors[i], marker="o", linestyle="--" if i in dashed else "-", label=i)
        for i in implementations.ordered(present)
    ]


def pinning_styles(pinnings: list[str]) -> dict[str, LineStyleType]:
    return {p: PINNING_STYLES[p] if len(pinnings) > 1 else "-" for p in pinnings}


def pinning_handles(pinnings: list[str]) -> list[Any]:
    if len(pinnings) < 2:
        return []
    return [Line2D([], [], color="0.3", linestyle=PINNING_STYLES[p], label=f"pinning {p}") for p in pinnings]


def legend(figure: Figure, handles: list[Any]) -> None:
    unstable = Line2D(
        [],
        [],
        color="0.4",
        marker="o",
        markerfacecolor="white",
        linestyle="",
        label="unstable (95% CI wider than ±10% or n < 3)",
    )
    handles = [*handles, unstable]
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=8)


def describe_setup(manifest: Manifest, summary: pd.DataFrame) -> str:
    """Two title lines: the host and the sweep's settings, from the manifest, with the successful trials per
    configuration the SUMMARY holds (a blocked sweep adds trials where a comparison was undecided, so the manifest's
    --trials is only the least)."""
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
        _trials_per_config(summary, parameters.trials),
        f"{parameters.duration_s:g} s each after {parameters.warmup_s:g} s warm-up",
        f"MTU {parameters.mtu}" if manifest.path == "veth" else "between two hosts",
        None if manifest.complete else "INCOMPLETE sweep",
    ]
    return machine + "\n" + ", ".join(s for s in settings if s)


def _trials_per_config(summary: pd.DataFrame, planned: int) -> str:
    counts = summary["n"][summary["n"] > 0] if "n" in summary else pd.Series(dtype=float)
    if counts.empty:
        return f"{planned} trials/config planned"
    low, high = int(counts.min()), int(counts.max())
    return f"{low} trials/config" if low == high else f"{low}–{high} trials/config"
