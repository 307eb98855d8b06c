"""The interactive explorer of notebooks/30_explore.ipynb: its ipywidgets controls and outputs.

``Explorer`` builds the controls and, whenever one changes, redraws through copylab.explore.data (the cached
sweeps), copylab.explore.views (what is shown) and copylab.explore.draw (the figure).
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd
from IPython.display import HTML, Image, clear_output, display
from matplotlib.figure import Figure

from copylab import experiments
from copylab.analysis.stats import IMPRECISE
from copylab.declarations import schema
from copylab.declarations.metrics import METRICS, metrics_for
from copylab.errors import CopylabError
from copylab.explore.data import (
    default_baseline,
    experiment_of,
    find_sweeps,
    implementations,
    load,
    measured_metrics,
    sweep_comparison,
    sweep_profile,
    sweep_summary,
)
from copylab.explore.draw import crossover_text, figure_png, figure_title, make_figure, make_ratio_figure
from copylab.explore.serve import ENV_VAR
from copylab.explore.views import (
    AXES,
    Axis,
    View,
    axis_label,
    axis_values,
    breakdown_table,
    config_table,
    crossover_data,
    experiment_axes,
    plot_data,
    ratio_data,
    raw_points,
    splits_threads,
    tick_label,
    trials_table,
    unstable_flags,
)
from copylab.formatting import fmt_num, fmt_size
from copylab.paths import DATA, REFERENCE_DATA
from copylab.record.manifest import Manifest
from copylab.vocabulary.implementation import RECEIVE_MODES

CONFIDENCES = (0.8, 0.9, 0.95, 0.99)
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
        self._build_selectors(sweep, roots, directories)
        self._build_view_controls()
        self._build_outputs()
        self.widget = self._layout()
        self.data = self.raw = self.crossovers = self.config = self.trials = self.flags = pd.DataFrame()
        self.breakdown: pd.DataFrame | str = pd.DataFrame()
        self.overlaid = pd.DataFrame()  # the overlay sweep's points in the current view
        self.figure: Figure | None = None
        self.png = b""
        self.experiment = experiments.DEFAULT
        self._observe_controls()
        self.update()

    def _build_selectors(self, sweep: Path, roots: Sequence[str | Path], directories: Sequence[Path]) -> None:
        """The controls that choose what is drawn: the sweep, an overlay, and the configuration's settings."""
        self.sweep = widgets.Dropdown(
            options=[(_sweep_label(d, roots), str(d)) for d in directories], value=str(sweep), description="sweep"
        )
        self._directories = [(_sweep_label(d, roots), str(d)) for d in directories]
        # a second sweep of the same experiment, drawn dashed over the first (its means, the same view)
        self.overlay = widgets.Dropdown(options=[("none", "")], value="", description="overlay")
        self.workload = widgets.Dropdown(description="workload")
        self.metric = widgets.Dropdown(description="metric")
        self.pinning = widgets.Dropdown(description="pinning")
        self.receive = widgets.Dropdown(description="receive")
        self.client_threads = widgets.Dropdown(description="client threads")
        self.idle_connections = widgets.Dropdown(description="idle conns")
        self.offered_rate = widgets.Dropdown(description="offered /s")

    def _build_view_controls(self) -> None:
        """The controls of how it is drawn: the axes, the interval, raw trials, the comparison, the inspected point."""
        self.x_axis = widgets.ToggleButtons(
            options=[(AXES[axis], axis) for axis in experiment_axes(experiments.DEFAULT)], style=_TOGGLE_STYLE
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

    def _build_outputs(self) -> None:
        """The implementations' checkboxes and what each redraw fills: status, plot, flags, tables."""
        self.checkboxes: dict[str, widgets.Checkbox] = {}
        self.implementation_box = _row()
        self.status = widgets.HTML()
        self.status.add_class("copylab-status")
        self.plot = widgets.Output()
        self.plot.add_class("copylab-plot")
        self.flag_box = widgets.HTML()
        self.flag_box.add_class("copylab-flags")
        self.tables = widgets.Output()
        self.tables.add_class("copylab-tables")

    def _layout(self) -> widgets.VBox:
        """The controls in rows that wrap to the page's width, then the status, plot, flags and tables."""
        layout = widgets.VBox(
            [
                _row(self.sweep, self.workload, self.metric, self.pinning, self.receive, self.client_threads),
                _row(self.idle_connections, self.offered_rate),
                _row(widgets.Label("x axis"), self.x_axis, self.fixed),
                _row(self.confidence, widgets.Label("y axis"), self.y_scale, self.show_raw, self.overlay),
                _row(widgets.Label("implementations"), self.implementation_box),
                _row(self.compare, self.baseline),
                self.status,
                self.plot,
                self.flag_box,
                self.inspect,
                self.tables,
            ],
            layout=widgets.Layout(width="100%"),
        )
        layout.add_class("copylab-explorer")
        return layout

    def _observe_controls(self) -> None:
        """Every control redraws on change (the implementations' checkboxes are wired as they are made)."""
        for control in (
            self.sweep,
            self.overlay,
            self.workload,
            self.metric,
            self.pinning,
            self.receive,
            self.client_threads,
            self.idle_connections,
            self.offered_rate,
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

    @classmethod
    def from_environment(cls) -> Explorer:
        """The explorer of the sweep named by $COPYLAB_EXPLORE_DATA (default data/reference)."""
        return cls(os.environ.get(ENV_VAR) or REFERENCE_DATA)

    @property
    def view(self) -> View:
        """The workload, pinning and receive mode (servers: and client threads) the controls select."""
        threads = self.client_threads.value if splits_threads(self.experiment) else None
        idle = self.idle_connections.value or 0
        rate = self.offered_rate.value or 0
        return View(self.workload.value, self.pinning.value, self.receive.value, self.experiment, threads, idle, rate)

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
        self.experiment = manifest.parameters.declared
        same_experiment = [
            (label, directory)
            for label, directory in self._directories
            if directory != self.sweep.value and experiment_of(directory) == self.experiment.name
        ]
        _choose(self.overlay, [("none", ""), *same_experiment], "")
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
        metrics = measured_metrics(trials, self.workload.value, self.experiment)
        default_metric = self.experiment.headline.get(self.workload.value) or metrics[0]
        _choose(self.metric, [(f"{m} ({METRICS[m].unit})", m) for m in metrics], default_metric)
        tested = set(trials.loc[trials["workload"] == self.workload.value, "pinning"])
        pinnings = [p for p in schema.PINNINGS if p in tested]
        _choose(self.pinning, [(p, p) for p in pinnings], pinnings[0])
        received = set(trials.loc[trials["workload"] == self.workload.value, "receive"])
        modes = [mode for mode in RECEIVE_MODES if mode in received]
        _choose(self.receive, [(mode, mode) for mode in modes], modes[0])
        counts = sorted(int(t) for t in trials.loc[trials["workload"] == self.workload.value, "threads"].unique())
        _choose(self.client_threads, [(str(t), t) for t in counts], counts[0])
        self.client_threads.layout.display = None if splits_threads(self.experiment) else "none"
        silent = sorted(int(n) for n in trials["idle_connections"].unique())
        _choose(self.idle_connections, [(str(n), n) for n in silent], silent[0])
        self.idle_connections.layout.display = None if len(silent) > 1 else "none"
        rates = sorted(int(n) for n in trials["offered_rate"].unique())
        _choose(self.offered_rate, [(f"{n:,}" if n else "closed loop", n) for n in rates], rates[0])
        self.offered_rate.layout.display = None if len(rates) > 1 or rates[0] else "none"
        axes = experiment_axes(self.experiment)
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
                if x == experiment_axes(view.experiment)[0]
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
            self.overlaid = (
                plot_data(sweep_summary(self.overlay.value, confidence, metric), metric, x, fixed, chosen, view)
                if self.overlay.value
                else pd.DataFrame()
            )
            overlay = (self.overlay.label, self.overlaid) if self.overlay.value else None
            self.figure = make_figure(
                points, metric, x, raw=raw, log_y=log_y, title=title, confidence=confidence, overlay=overlay
            )
        self.png = figure_png(self.figure)
        self.flags = unstable_flags(points)
        point = {x: self.inspect.value, view.other(x): fixed}
        self.config = config_table(summary, metric, view, point, chosen)
        self.trials = trials_table(trials, summary, metric, view, point, chosen)
        profile = sweep_profile(directory)
        self.breakdown = profile if isinstance(profile, str) else breakdown_table(profile, trials, view, point, chosen)
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
            display(HTML("<b>Where the CPU goes (sampled): each category's share of the trials' samples</b>"))
            display(_breakdown(self.breakdown))
        # last, so that a front end seeing the new status has every other output already
        self.status.value = self._status_text(manifest, metric, x, fixed, confidence)

    def _status_text(self, manifest: Manifest, metric: str, x: Axis, fixed: int, confidence: float) -> str:
        spec = METRICS[metric]
        axis = experiment_axes(self.experiment)[0]
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
                    + (f" at {crossover_text(axis, row.crossover_at)}" if row.status == "crossover" else "")
                    for row in self.crossovers.itertuples()
                )
            )
        if self.compare.value and x != axis:
            parts.append(f"crossovers are found along {AXES[axis]}")
        measured = measured_metrics(load(self.sweep.value)[0], self.workload.value, self.experiment)
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


def _breakdown(table: pd.DataFrame | str) -> Any:
    """The breakdown as a table of percentages, or the one line that says why there is none."""
    if isinstance(table, str):
        return HTML(html.escape(table))
    shares = [c for c in table.columns if c not in ("implementation", "side")]
    return table.style.format("{:.1%}", subset=shares).hide(axis="index")


def _row(*children: widgets.Widget) -> widgets.HBox:
    """Controls side by side, wrapping onto a next line where the page is narrower than they are."""
    return widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap", align_items="center"))


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
