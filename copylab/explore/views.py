"""What the explorer shows, cut out of a sweep's trials, summaries and comparisons by pure functions.

``View`` is the slice of a sweep the controls select; the functions here turn
it and the other control values into the rows of the plotted curves, the
crossovers, the unstable flags and the tables of one configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from copylab import experiments
from copylab.analysis import breakdown
from copylab.analysis.stats import IMPRECISE, MIN_TRIALS
from copylab.declarations import implementations as registry
from copylab.errors import BrokenInvariant
from copylab.formatting import fmt_size, threads_text
from copylab.record import tables
from copylab.vocabulary.experiment import Experiment

Axis = Literal["size_bytes", "threads", "connections"]
AXES: dict[str, str] = {"size_bytes": "message size", "threads": "threads", "connections": "connections"}


def experiment_axes(experiment: Experiment) -> tuple[Axis, ...]:
    """The x axes an experiment offers (its declaration), its crossover axis first; the other is held fixed."""
    return experiment.explorer_axes  # type: ignore[return-value]


def splits_threads(experiment: Experiment) -> bool:
    """Whether an experiment's views pick one count of client threads (neither of its axes)."""
    return "threads" not in experiment_axes(experiment)


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


@dataclass(frozen=True)
class View:
    """What the explorer shows at once: one workload, pinning and receive mode of one experiment (servers: and
    one count of client threads, a setting that is neither of its axes)."""

    workload: str
    pinning: str
    receive: str = registry.BASELINE_RECEIVE
    experiment: Experiment = experiments.DEFAULT
    threads: int | None = None
    idle_connections: int = 0
    offered_rate: int = 0  # servers, open load: requests per second offered (0: closed loop)

    def rows(self, frame: pd.DataFrame) -> pd.Series:
        """The rows of FRAME in this view (comparison tables name the receive mode in their contenders)."""
        chosen = (frame["workload"] == self.workload) & (frame["pinning"] == self.pinning)
        if self.threads is not None:
            chosen &= frame["threads"] == self.threads
        if "idle_connections" in frame:
            chosen &= frame["idle_connections"] == self.idle_connections
        if "offered_rate" in frame:
            chosen &= frame["offered_rate"] == self.offered_rate
        return chosen & (frame["receive"] == self.receive) if "receive" in frame else chosen

    def other(self, x: Axis) -> Axis:
        """The axis held fixed when X is plotted."""
        axes = experiment_axes(self.experiment)
        if x not in axes:
            raise BrokenInvariant(f"unknown x axis {x!r} ({' or '.join(axes)})")
        return axes[1] if x == axes[0] else axes[0]

    def contender(self, implementation: str) -> str:
        return registry.contender(implementation, self.receive)

    def label(self) -> str:
        receive = "" if self.receive == registry.BASELINE_RECEIVE else f", receive {self.receive}"
        threads = "" if self.threads is None else f", {axis_label('threads', self.threads)}"
        idle = f", {self.idle_connections} idle connections" if self.idle_connections else ""
        rate = f", {self.offered_rate} requests/s offered" if self.offered_rate else ""
        return f"{self.workload}, pinning {self.pinning}{receive}{threads}{idle}{rate}"


# ------------------------------------------------------------------ axes


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
    names = [registry.contender_name(label) for label in frame["challenger"]]
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
    axis = experiment_axes(view.experiment)[0]
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


def breakdown_table(
    profile: pd.DataFrame, trials: pd.DataFrame, view: View, point: Point, implementations: Sequence[str]
) -> pd.DataFrame:
    """Where the CPU goes in one configuration: per implementation and side, each category's share of all the
    samples of its trials' windows (copylab.analysis.breakdown), categories with no sample left out."""
    rows = trials[_configuration(trials, view, point) & (trials["status"] == "ok")]
    rows = rows[rows["implementation"].isin(list(implementations))]
    found = breakdown.shares(profile, rows, ["implementation", "side"])
    if found.empty:
        return pd.DataFrame(columns=["implementation", "side"])
    totals = found.groupby("implementation")["samples"].transform("sum")
    found = found.assign(share=found["samples"] / totals.where(totals > 0))
    table = found.pivot_table(index=["implementation", "side"], columns="category", values="share", fill_value=0.0)
    table = table.loc[:, (table > 0).any()]
    order = {name: i for i, name in enumerate(implementations)}
    table = table.reset_index().sort_values(
        ["implementation", "side"], key=lambda c: c.map(order) if c.name == "implementation" else c
    )
    return table.reset_index(drop=True)


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
