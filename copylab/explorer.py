"""The interactive explorer of notebooks/30_explore.ipynb.

Pure functions turn a sweep's trials and summaries plus control values into
plot data, figures and tables; ``Explorer`` builds the ipywidgets controls and
redraws through those functions whenever one changes.  Loaded sweeps and
per-(sweep, confidence, metric) summaries and comparisons are cached, keyed by
the size and mtime of trials.csv, so a sweep that is still being recorded is
reloaded once it grows.
"""

from __future__ import annotations

import functools
import html
import io
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import ipywidgets as widgets
import numpy as np
import pandas as pd
from IPython.display import HTML, Image, clear_output, display
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from copylab import implementations as registry
from copylab import schema, tables
from copylab.crossover import find_crossovers
from copylab.errors import CopylabError
from copylab.formatting import fmt_bytes, fmt_num, fmt_size, threads_text
from copylab.manifest import Manifest
from copylab.metrics import HEADLINE_METRICS, METRICS, add_metrics, metrics_for
from copylab.paths import DATA, REFERENCE_DATA
from copylab.stats import IMPRECISE, MIN_TRIALS, compare, summarize
from copylab.store import TRIALS_FILE, SweepStore

Axis = Literal["size_bytes", "threads", "connections"]
AXES: dict[str, str] = {"size_bytes": "message size", "threads": "threads", "connections": "connections"}
# The two x axes each experiment offers, its crossover axis first; the one not plotted is held fixed.
EXPERIMENT_AXES: dict[str, tuple[Axis, Axis]] = {
    "copies": ("size_bytes", "threads"),
    "servers": ("connections", "size_bytes"),
}
CONFIDENCES = (0.8, 0.9, 0.95, 0.99)
ENV_VAR = "COPYLAB_EXPLORE_DATA"
CONFIG_COLUMNS = ("implementation", "n", "n_failed", "mean", "std", "cv", "ci_low", "ci_high", "unstable")
TRIAL_COLUMNS = (
    "implementation",
    "repetition",
    "trial_id",
    "order_index",
    "started_at",
    "status",
    "value",
    "deviation",
    "error",
)


# ------------------------------------------------------------------ cached loading


def _stamp(directory: str | Path) -> tuple[str, int, int]:
    """Cache key of a sweep: its directory plus the mtime and size of trials.csv."""
    path = Path(directory).resolve() / TRIALS_FILE
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise CopylabError(f"{path}: no such file") from None
    return str(path.parent), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=8)
def _loaded(stamp: tuple[str, int, int]) -> tuple[pd.DataFrame, Manifest]:
    trials, manifest = SweepStore(stamp[0]).load()
    return add_metrics(trials), manifest


@functools.lru_cache(maxsize=128)
def _summary(stamp: tuple[str, int, int], confidence: float, metric: str) -> pd.DataFrame:
    # One metric at a time: a cold cache then costs one metric's summary, not all twelve.
    return summarize(_loaded(stamp)[0], [metric], confidence)


@functools.lru_cache(maxsize=64)
def _comparison(
    stamp: tuple[str, int, int], confidence: float, metric: str, baseline: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    trials, manifest = _loaded(stamp)
    axis = registry.experiment(manifest.parameters.experiment).axis
    modes = [mode for mode in registry.RECEIVE_MODES if mode in set(trials["receive"])]
    pairs = [
        (registry.contender(name, mode), registry.contender(baseline, mode))
        for mode in modes
        for name in implementations(trials)
        if name != baseline
    ]
    comparisons = compare(trials, pairs, [metric], confidence, axis, manifest.parameters.design == "blocked")
    return comparisons, find_crossovers(trials, comparisons, pairs, [metric], confidence, axis=axis)


def load(directory: str | Path) -> tuple[pd.DataFrame, Manifest]:
    """The sweep's trials with the METRICS columns added, and its manifest (cached; do not modify)."""
    return _loaded(_stamp(directory))


def sweep_summary(directory: str | Path, confidence: float, metric: str) -> pd.DataFrame:
    """copylab.stats.summarize of one metric of the sweep at CONFIDENCE (cached)."""
    return _summary(_stamp(directory), confidence, metric)


def default_baseline(experiment: str = "copies") -> str:
    """What comparisons are against until the user picks another: the baseline the experiment's implementations
    share (copies: the study's two-copy variant)."""
    return registry.shared_baseline(experiment)


def sweep_comparison(
    directory: str | Path, confidence: float, metric: str, baseline: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """compare and find_crossovers of every implementation against BASELINE for one metric (cached)."""
    stamp = _stamp(directory)
    experiment = _loaded(stamp)[1].parameters.experiment
    return _comparison(stamp, confidence, metric, baseline or default_baseline(experiment))


def find_sweeps(*roots: str | Path) -> list[Path]:
    """Sweep directories (those holding trials.csv) directly under ROOTS."""
    found = {path.parent.resolve() for root in map(Path, roots) for path in root.glob(f"*/{TRIALS_FILE}")}
    return sorted(found)


@dataclass(frozen=True)
class View:
    """What the explorer shows at once: one workload, pinning and receive mode of one experiment (servers: and
    one count of client threads, a setting that is neither of its axes)."""

    workload: str
    pinning: str
    receive: str = registry.BASELINE_RECEIVE
    experiment: str = "copies"
    threads: int | None = None

    def rows(self, frame: pd.DataFrame) -> pd.Series:
        """The rows of FRAME in this view (comparison tables name the receive mode in their contenders)."""
        chosen = (frame["workload"] == self.workload) & (frame["pinning"] == self.pinning)
        if self.threads is not None:
            chosen &= frame["threads"] == self.threads
        return chosen & (frame["receive"] == self.receive) if "receive" in frame else chosen

    def other(self, x: Axis) -> Axis:
        """The axis held fixed when X is plotted."""
        axes = EXPERIMENT_AXES[self.experiment]
        if x not in axes:
            raise CopylabError(f"unknown x axis {x!r} ({' or '.join(axes)})")
        return axes[1] if x == axes[0] else axes[0]

    def contender(self, implementation: str) -> str:
        return registry.contender(implementation, self.receive)

    def label(self) -> str:
        receive = "" if self.receive == registry.BASELINE_RECEIVE else f", receive {self.receive}"
        threads = "" if self.threads is None else f", {axis_label('threads', self.threads)}"
        return f"{self.workload}, pinning {self.pinning}{receive}{threads}"


# ------------------------------------------------------------------ what the data holds


def implementations(trials: pd.DataFrame) -> list[str]:
    """Implementations present in TRIALS, in registry order."""
    return registry.ordered(trials["implementation"])


def measured_metrics(trials: pd.DataFrame, workload: str) -> list[str]:
    """METRICS entries of the trials' experiment some ok trial of WORKLOAD measured, in registry order."""
    rows = trials[(trials["workload"] == workload) & (trials["status"] == "ok")]
    return [name for name in metrics_for(set(trials["experiment"])) if rows[name].notna().any()]


def axis_values(trials: pd.DataFrame, axis: Axis, view: View) -> list[int]:
    """Sorted values of AXIS tested in VIEW."""
    return sorted(int(value) for value in trials.loc[view.rows(trials), axis].unique())


def axis_label(axis: Axis, value: int) -> str:
    """'4 KiB' for a size, '2 threads' for a thread count, '100 connections'."""
    if axis == "size_bytes":
        return fmt_size(value)
    if axis == "threads":
        return threads_text(value)
    return f"{value} connection{'s' if value != 1 else ''}"


def tick_label(axis: Axis, value: int) -> str:
    return fmt_size(value) if axis == "size_bytes" else str(value)


# ------------------------------------------------------------------ plot data and tables


def _curves(frame: pd.DataFrame, x: Axis, fixed: int, view: View) -> pd.DataFrame:
    return frame[view.rows(frame) & (frame[view.other(x)] == fixed)]


def _ordered(frame: pd.DataFrame, column: str, names: Sequence[str], x: Axis) -> pd.DataFrame:
    frame = frame[frame[column].isin(list(names))]
    order = frame[column].map({name: i for i, name in enumerate(names)})
    return frame.assign(_order=order).sort_values(["_order", x]).drop(columns="_order").reset_index(drop=True)


def _by_implementation(frame: pd.DataFrame) -> pd.DataFrame:
    """Comparison rows with their challengers named by implementation (the view says the receive mode)."""
    names = [registry.parse_contender(label)[0].name for label in frame["challenger"]]
    return frame.assign(challenger=pd.Series(names, index=frame.index, dtype="str"))


def plot_data(
    summary: pd.DataFrame, metric: str, x: Axis, fixed: int, implementations: Sequence[str], view: View
) -> pd.DataFrame:
    """The summary rows on the plotted curves: one per implementation and X value, the other axis at FIXED."""
    rows = _curves(summary[summary["metric"] == metric], x, fixed, view)
    return _ordered(rows, "implementation", implementations, x)


def raw_points(
    trials: pd.DataFrame, metric: str, x: Axis, fixed: int, implementations: Sequence[str], view: View
) -> pd.DataFrame:
    """The measured ok trials behind plot_data's points: implementation, X, trial_id and value."""
    rows = _curves(trials[trials["status"] == "ok"], x, fixed, view)
    rows = rows[rows[metric].notna()][["implementation", x, "trial_id", metric]].rename(columns={metric: "value"})
    return _ordered(rows, "implementation", implementations, x)


def ratio_data(
    comparisons: pd.DataFrame,
    metric: str,
    x: Axis,
    fixed: int,
    challengers: Sequence[str],
    baseline: str,
    view: View,
) -> pd.DataFrame:
    """The comparisons rows (challenger/baseline ratios with intervals) on the plotted curves."""
    rows = comparisons[(comparisons["metric"] == metric) & (comparisons["baseline"] == view.contender(baseline))]
    rows = _curves(rows, x, fixed, view)
    return _ordered(
        _by_implementation(rows[rows["challenger"].isin(map(view.contender, challengers))]),
        "challenger",
        challengers,
        x,
    )


def crossover_data(
    crossovers: pd.DataFrame,
    metric: str,
    fixed: int,
    challengers: Sequence[str],
    baseline: str,
    view: View,
) -> pd.DataFrame:
    """The crossovers rows of the curves plotted along the experiment's crossover axis, one per challenger;
    FIXED is the other axis's value."""
    axis = EXPERIMENT_AXES[view.experiment][0]
    chosen = (
        (crossovers["metric"] == metric)
        & (crossovers["baseline"] == view.contender(baseline))
        & view.rows(crossovers)
        & (crossovers[view.other(axis)] == fixed)
        & crossovers["challenger"].isin([view.contender(name) for name in challengers])
    )
    rows = _by_implementation(crossovers[chosen])
    order = {name: i for i, name in enumerate(challengers)}
    return rows.iloc[np.argsort(rows["challenger"].map(order).to_numpy(), kind="stable")].reset_index(drop=True)


Point = dict[str, int]  # both axes' values, e.g. {"size_bytes": 4096, "threads": 1}


def _configuration(frame: pd.DataFrame, view: View, point: Point) -> pd.Series:
    chosen = view.rows(frame)
    for axis, value in point.items():
        chosen &= frame[axis] == value
    return chosen


def config_table(
    summary: pd.DataFrame, metric: str, view: View, point: Point, implementations: Sequence[str]
) -> pd.DataFrame:
    """Statistics of one configuration (the view at POINT) per implementation."""
    rows = summary[(summary["metric"] == metric) & _configuration(summary, view, point)]
    return _ordered(rows, "implementation", implementations, "size_bytes")[list(CONFIG_COLUMNS)]


def trials_table(
    trials: pd.DataFrame,
    summary: pd.DataFrame,
    metric: str,
    view: View,
    point: Point,
    implementations: Sequence[str],
) -> pd.DataFrame:
    """Every trial of one configuration per implementation, failed ones included.

    deviation is value / mean - 1 against the configuration's summary mean, so
    an outlier stands out as the largest |deviation|.
    """
    rows = trials[_configuration(trials, view, point)].rename(columns={metric: "value"})
    config = config_table(summary, metric, view, point, implementations)
    means = config.set_index("implementation")["mean"]
    rows = rows.assign(deviation=rows["value"] / rows["implementation"].map(means) - 1)
    rows = rows[rows["implementation"].isin(list(implementations))]
    order = rows["implementation"].map({name: i for i, name in enumerate(implementations)})
    rows = rows.assign(_order=order).sort_values(["_order", "repetition"])
    return rows[list(TRIAL_COLUMNS)].reset_index(drop=True)


def unstable_flags(data: pd.DataFrame) -> pd.DataFrame:
    """The rows of plot_data's DATA that are unstable or lost trials, each with why it is flagged."""
    rows = data[data["unstable"].astype(bool) | (data["n_failed"] > 0)]
    reasons = []
    for row in rows.itertuples():
        why = []
        half = (row.ci_high - row.ci_low) / 2 / abs(row.mean) if row.mean else float("nan")
        if half > IMPRECISE:
            why.append(f"95% CI +-{half:.0%} > +-{IMPRECISE:.0%}")
        if row.n < MIN_TRIALS:
            why.append(f"n = {row.n} < {MIN_TRIALS}")
        if row.n_failed:
            why.append(f"{row.n_failed} failed trial{'s' if row.n_failed > 1 else ''}")
        reasons.append(", ".join(why))
    columns = [*tables.CONFIG_KEYS, "n", "n_failed", "mean", "cv"]
    return rows[columns].assign(why=reasons).reset_index(drop=True)


# ------------------------------------------------------------------ figures


def figure_title(manifest: Manifest, metric: str, view: View, x: Axis, fixed: int) -> str:
    """Two lines: what is plotted, then the sweep and its system configuration."""
    host = manifest.host
    system = f"{manifest.sweep}: {host.cpu_model}, {host.cores} cores, kernel {host.kernel}, {host.virtualization}"
    return f"{METRICS[metric].label}, {axis_label(view.other(x), fixed)}, {view.label()}\n{system}"


def _x_axis(ax: Axes, x: Axis, values: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ticks = sorted(set(int(v) for v in values))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([tick_label(x, v) for v in ticks])
    if x == "size_bytes":
        ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel({"threads": "threads (connections)"}.get(x, AXES[x]))


def _errors(mean: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    # max(0, ...) only absorbs rounding: every interval here contains its point estimate
    return np.maximum(0, np.vstack([mean - low, high - mean]))


def make_figure(
    data: pd.DataFrame,
    metric: str,
    x: Axis,
    *,
    raw: pd.DataFrame | None = None,
    log_y: bool = False,
    title: str = "",
    confidence: float = 0.95,
) -> Figure:
    """Means with Student-t intervals per implementation (plot_data rows), optional raw trials, unstable rings."""
    fig, ax = _figure()
    for name, rows in data.groupby("implementation", sort=False):
        ax.errorbar(
            rows[x],
            rows["mean"],
            yerr=_errors(rows["mean"], rows["ci_low"], rows["ci_high"]),
            marker="o",
            capsize=3,
            color=registry.get(name).color,
            label=name,
        )
        if raw is not None:
            points = raw[raw["implementation"] == name]
            ax.scatter(points[x], points["value"], s=12, alpha=0.45, color=registry.get(name).color, zorder=3)
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
    ax.set_ylabel(f"{metric} ({spec.unit}), {spec.direction} is better")
    _finish(ax, x, data[x], log_y, title, f"points: means; bars: {confidence:.0%} Student-t intervals")
    return fig


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
    """Challenger/baseline ratios with Fieller intervals (filled: Holm-significant) and detected crossovers."""
    fig, ax = _figure()
    ax.axhline(1.0, color="black", linewidth=1, linestyle=":", label=f"{baseline} (ratio 1)")
    statuses = crossovers.set_index("challenger") if len(crossovers) else None
    for name, rows in ratios.groupby("challenger", sort=False):
        color = registry.get(name).color
        label = name
        if statuses is not None and name in statuses.index:
            found = statuses.loc[name]
            label = f"{name}: {found['status'].replace('_', ' ')}"
            if found["status"] == "crossover":
                label = f"{name}: crossover at {_crossover_text(x, found['crossover_at'])}"
                ax.axvline(found["crossover_at"], color=color, linestyle="--", linewidth=1.2)
                ax.axvspan(found["ci_low"], found["ci_high"], color=color, alpha=0.12)
        ax.errorbar(
            rows[x],
            rows["ratio"],
            yerr=_errors(rows["ratio"], rows["ratio_ci_low"], rows["ratio_ci_high"]),
            color=color,
            capsize=3,
            label=label,
        )
        significant = rows["significant"].astype(bool)
        ax.scatter(rows.loc[significant, x], rows.loc[significant, "ratio"], color=color, zorder=3)
        ax.scatter(
            rows.loc[~significant, x], rows.loc[~significant, "ratio"], facecolors="white", edgecolors=color, zorder=3
        )
    spec = METRICS[metric]
    ax.set_ylabel(f"{metric} ratio to {baseline} ({spec.direction} is better)")
    note = f"bars: {confidence:.0%} Fieller intervals; filled: significant (Holm); shaded: crossover interval"
    _finish(ax, x, ratios[x], log_y, title, note)
    return fig


def _crossover_text(axis: Axis, value: float) -> str:
    return fmt_bytes(value) if axis == "size_bytes" else f"{fmt_num(value)} {AXES[axis]}"


def _figure() -> tuple[Figure, Axes]:
    # fixed margins rather than a layout engine: it would draw every figure twice, doubling redraw time
    fig = Figure(figsize=(8, 4.6))
    fig.subplots_adjust(left=0.1, right=0.98, top=0.87, bottom=0.2)
    return fig, fig.add_subplot()


def _finish(ax: Axes, x: Axis, values: pd.Series, log_y: bool, title: str, note: str) -> None:
    if len(values):
        _x_axis(ax, x, values)
        ax.legend(fontsize="small")
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


# ------------------------------------------------------------------ widgets


_TOGGLE_STYLE = {"button_width": "auto"}


def _styled_config(table: pd.DataFrame) -> Any:
    numbers = {column: fmt_num for column in ("mean", "std", "ci_low", "ci_high")}
    return table.style.format({**numbers, "cv": "{:.1%}"}, na_rep="").hide(axis="index")


def _styled_trials(table: pd.DataFrame) -> Any:
    """Trials further from their configuration's mean than the instability threshold, in red."""

    def mark(value: float) -> str:
        return "color: #c00; font-weight: bold" if abs(value) > IMPRECISE else ""

    formats = {"value": fmt_num, "deviation": "{:+.1%}"}
    return table.style.map(mark, subset=["deviation"]).format(formats, na_rep="").hide(axis="index")


class Explorer:
    """The explorer's controls and outputs, wired to redraw on every change.

    The last redraw is kept for tests: ``data`` (plot_data rows, or ratio_data
    rows in comparison mode), ``raw``, ``crossovers``, ``figure``, ``png``,
    ``config``, ``trials``, ``flags``.
    """

    def __init__(self, sweep: str | Path = REFERENCE_DATA, roots: Sequence[str | Path] | None = None) -> None:
        sweep = Path(sweep).resolve()
        roots = [DATA, sweep.parent] if roots is None else list(roots)
        found = find_sweeps(*roots)
        directories = found if sweep in found else [*found, sweep]
        self._busy = 0
        self.sweep = widgets.Dropdown(
            options=[(_sweep_label(d, roots), str(d)) for d in directories], value=str(sweep), description="sweep"
        )
        self.workload = widgets.Dropdown(description="workload")
        self.metric = widgets.Dropdown(description="metric")
        self.pinning = widgets.Dropdown(description="pinning")
        self.receive = widgets.Dropdown(description="receive")
        self.client_threads = widgets.Dropdown(description="client threads")
        self.x_axis = widgets.ToggleButtons(
            options=[(AXES[axis], axis) for axis in EXPERIMENT_AXES["copies"]], value="size_bytes", style=_TOGGLE_STYLE
        )
        self.fixed = widgets.SelectionSlider(options=[("-", 0)], description="threads", continuous_update=False)
        self.confidence = widgets.Dropdown(
            options=[(f"{c:.0%}", c) for c in CONFIDENCES], value=0.95, description="confidence"
        )
        self.y_scale = widgets.ToggleButtons(options=["linear", "log"], value="linear", style=_TOGGLE_STYLE)
        self.show_raw = widgets.Checkbox(value=False, description="show raw trials")
        self.compare = widgets.Checkbox(value=False, description="compare to baseline")
        self.baseline = widgets.Dropdown(description="baseline")
        self.inspect = widgets.Dropdown(description="inspect at")
        # stable CSS hooks for the browser test, independent of ipywidgets' own markup
        names = ("sweep", "workload", "metric", "pinning", "receive", "client_threads", "x_axis", "fixed", "compare")
        for name in (*names, "inspect"):
            getattr(self, name).add_class(f"copylab-{name.replace('_', '-')}")
        self.checkboxes: dict[str, widgets.Checkbox] = {}
        self.implementation_box = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.status = widgets.HTML()
        self.status.add_class("copylab-status")
        self.plot = widgets.Output()
        self.plot.add_class("copylab-plot")
        self.flag_box = widgets.HTML()
        self.flag_box.add_class("copylab-flags")
        self.tables = widgets.Output()
        self.tables.add_class("copylab-tables")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.sweep, self.workload, self.metric, self.pinning, self.receive, self.client_threads]),
                widgets.HBox([widgets.Label("x axis"), self.x_axis, self.fixed]),
                widgets.HBox([self.confidence, widgets.Label("y axis"), self.y_scale, self.show_raw]),
                widgets.HBox([widgets.Label("implementations"), self.implementation_box]),
                widgets.HBox([self.compare, self.baseline]),
                self.status,
                self.plot,
                self.flag_box,
                self.inspect,
                self.tables,
            ]
        )
        self.data = self.raw = self.crossovers = self.config = self.trials = self.flags = pd.DataFrame()
        self.figure: Figure | None = None
        self.png = b""
        self.experiment = "copies"
        for control in (
            self.sweep,
            self.workload,
            self.metric,
            self.pinning,
            self.receive,
            self.client_threads,
            self.x_axis,
            self.fixed,
            self.confidence,
            self.y_scale,
            self.show_raw,
            self.compare,
            self.baseline,
            self.inspect,
        ):
            control.observe(self._changed, names="value")
        self.update()

    @classmethod
    def from_environment(cls) -> Explorer:
        """The explorer of the sweep named by $COPYLAB_EXPLORE_DATA (default data/reference)."""
        return cls(os.environ.get(ENV_VAR) or REFERENCE_DATA)

    @property
    def view(self) -> View:
        """The workload, pinning and receive mode (servers: and client threads) the controls select."""
        threads = self.client_threads.value if self.experiment == "servers" else None
        return View(self.workload.value, self.pinning.value, self.receive.value, self.experiment, threads)

    @property
    def selected(self) -> list[str]:
        """The checked implementations."""
        return [name for name, box in self.checkboxes.items() if box.value]

    def _changed(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self.update()

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """Option lists being rewritten fire value changes; redraw once afterwards instead."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1

    def update(self) -> None:
        """Bring every option list in line with the data, then redraw; a bad sweep shows its error."""
        try:
            with self._quiet():
                self._refresh_options()
            self.redraw()
        except CopylabError as error:
            self._show_error(error)

    def _refresh_options(self) -> None:
        trials, manifest = load(self.sweep.value)
        self.experiment = manifest.parameters.experiment
        names = implementations(trials)
        if list(self.checkboxes) != names:
            old = self.checkboxes
            self.checkboxes = {
                n: widgets.Checkbox(
                    value=old[n].value if n in old else True,
                    description=n,
                    indent=False,
                    layout=widgets.Layout(width="auto"),
                )
                for n in names
            }
            for box in self.checkboxes.values():
                box.observe(self._changed, names="value")
            self.implementation_box.children = list(self.checkboxes.values())
        _choose(self.baseline, [(n, n) for n in names], default_baseline(self.experiment))
        workloads = [w for w in schema.WORKLOADS if w in set(trials["workload"])]
        _choose(self.workload, [(w, w) for w in workloads], workloads[0])
        metrics = measured_metrics(trials, self.workload.value)
        default_metric = HEADLINE_METRICS.get((self.experiment, self.workload.value), metrics[0])
        _choose(self.metric, [(f"{m} ({METRICS[m].unit})", m) for m in metrics], default_metric)
        tested = set(trials.loc[trials["workload"] == self.workload.value, "pinning"])
        pinnings = [p for p in schema.PINNINGS if p in tested]
        _choose(self.pinning, [(p, p) for p in pinnings], pinnings[0])
        received = set(trials.loc[trials["workload"] == self.workload.value, "receive"])
        modes = [mode for mode in registry.RECEIVE_MODES if mode in received]
        _choose(self.receive, [(mode, mode) for mode in modes], modes[0])
        counts = sorted(int(t) for t in trials.loc[trials["workload"] == self.workload.value, "threads"].unique())
        _choose(self.client_threads, [(str(t), t) for t in counts], counts[0])
        self.client_threads.layout.display = None if self.experiment == "servers" else "none"
        axes = EXPERIMENT_AXES[self.experiment]
        offered = [(AXES[axis], axis) for axis in axes]
        if list(self.x_axis.options) != offered:  # another experiment: start from its crossover axis
            self.x_axis.options = offered
            self.x_axis.value = axes[0]
        x = self.x_axis.value
        other = self.view.other(x)
        values = axis_values(trials, other, self.view)
        self.fixed.description = AXES[other]
        _choose(
            self.fixed,
            [(tick_label(other, v), v) for v in values],
            values[len(values) // 2] if other == "size_bytes" else values[0],
        )
        xs = axis_values(trials, x, self.view)
        _choose(self.inspect, [(axis_label(x, v), v) for v in xs], xs[-1])

    def redraw(self) -> None:
        """Recompute plot data, figure, flags and tables from the current control values."""
        directory = self.sweep.value
        trials, manifest = load(directory)
        metric, view = self.metric.value, self.view
        x, fixed, confidence = self.x_axis.value, self.fixed.value, self.confidence.value
        chosen, log_y = self.selected, self.y_scale.value == "log"
        summary = sweep_summary(directory, confidence, metric)
        points = plot_data(summary, metric, x, fixed, chosen, view)
        title = figure_title(manifest, metric, view, x, fixed)
        self.baseline.disabled = not self.compare.value
        if self.compare.value:
            baseline = self.baseline.value
            comparisons, crossovers = sweep_comparison(directory, confidence, metric, baseline)
            challengers = [name for name in chosen if name != baseline]
            self.data = ratio_data(comparisons, metric, x, fixed, challengers, baseline, view)
            self.crossovers = (
                crossover_data(crossovers, metric, fixed, challengers, baseline, view)
                if x == EXPERIMENT_AXES[view.experiment][0]
                else crossovers.iloc[:0]
            )
            self.raw = pd.DataFrame()
            self.figure = make_ratio_figure(
                self.data, self.crossovers, metric, x, baseline, log_y=log_y, title=title, confidence=confidence
            )
        else:
            self.data = points
            self.crossovers = pd.DataFrame()
            raw = raw_points(trials, metric, x, fixed, chosen, view) if self.show_raw.value else None
            self.raw = pd.DataFrame() if raw is None else raw
            self.figure = make_figure(points, metric, x, raw=raw, log_y=log_y, title=title, confidence=confidence)
        self.png = figure_png(self.figure)
        self.flags = unstable_flags(points)
        point = {x: self.inspect.value, view.other(x): fixed}
        self.config = config_table(summary, metric, view, point, chosen)
        self.trials = trials_table(trials, summary, metric, view, point, chosen)
        self.flag_box.value = _flags_html(self.flags)
        with self.plot:
            clear_output(wait=True)
            display(Image(data=self.png, format="png"))
        with self.tables:
            clear_output(wait=True)
            where = ", ".join([*(axis_label(axis, value) for axis, value in point.items()), view.label()])
            display(HTML(f"<b>{html.escape(metric)} at {html.escape(where)}</b>"))
            display(_styled_config(self.config))
            display(_styled_trials(self.trials))
        # last, so that a front end seeing the new status has every other output already
        self.status.value = self._status_text(manifest, metric, x, fixed, confidence)

    def _status_text(self, manifest: Manifest, metric: str, x: Axis, fixed: int, confidence: float) -> str:
        spec = METRICS[metric]
        axis = EXPERIMENT_AXES[self.experiment][0]
        mode = f"ratio to {self.baseline.value}" if self.compare.value else "means"
        parts = [
            f"<b>{html.escape(manifest.sweep)}</b>{'' if manifest.complete else ' (incomplete)'}",
            f"{html.escape(metric)} ({html.escape(spec.unit)}, {spec.direction} is better)",
            f"{axis_label(self.view.other(x), fixed)}, {self.view.label()}",
            f"{mode}, {confidence:.0%} intervals",
            f"{len(self.data)} points, {len(self.flags)} flagged",
        ]
        if self.compare.value and len(self.crossovers):
            parts.append(
                "; ".join(
                    f"{row.challenger}: {row.status.replace('_', ' ')}"
                    + (f" at {_crossover_text(axis, row.crossover_at)}" if row.status == "crossover" else "")
                    for row in self.crossovers.itertuples()
                )
            )
        if self.compare.value and x != axis:
            parts.append(f"crossovers are found along {AXES[axis]}")
        measured = measured_metrics(load(self.sweep.value)[0], self.workload.value)
        unmeasured = [m for m in metrics_for([self.experiment]) if m not in measured]
        if unmeasured:
            parts.append(f"not measured here: {', '.join(unmeasured)}")
        return '<div class="copylab-summary">' + " · ".join(parts) + "</div>"

    def _show_error(self, error: CopylabError) -> None:
        self.data = self.raw = self.crossovers = self.config = self.trials = self.flags = pd.DataFrame()
        self.figure, self.png = None, b""
        self.status.value = f'<div class="copylab-error" style="color:#b00">{html.escape(str(error))}</div>'
        for output in (self.plot, self.tables):
            with output:
                clear_output()
        self.flag_box.value = ""


def _choose(control: widgets.DOMWidget, options: list[tuple[str, Any]], default: Any) -> None:
    """Give CONTROL these options (when they changed), keeping its value when still offered."""
    current = control.value
    if tuple(control.options) != tuple(options):
        control.options = options
    values = [value for _, value in options]
    control.value = current if current in values else (default if default in values else values[0])


def _sweep_label(directory: Path, roots: Sequence[str | Path]) -> str:
    for root in roots:
        if directory.parent == Path(root).resolve():
            return directory.name
    return str(directory)


def _flags_html(flags: pd.DataFrame) -> str:
    if flags.empty:
        return "<div>No unstable configuration and no failed trial in this view.</div>"
    items = "".join(
        f"<li>{html.escape(row.implementation)}, {fmt_size(row.size_bytes)}, {axis_label('threads', row.threads)}"
        + (f", {axis_label('connections', row.connections)}" if row.connections != row.threads else "")
        + f": {html.escape(row.why)}</li>"
        for row in flags.itertuples()
    )
    return f'<div style="color:#b00"><b>Unstable configurations and failed trials</b><ul>{items}</ul></div>'
