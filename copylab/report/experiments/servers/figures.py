"""The servers experiment's figures: every model against the number of concurrent connections, or, for a sweep
under open load, against the rate offered.

Drawn from summary.csv / crossovers.csv rows like every figure (copylab.report.experiments.copies.figures draws the
copies experiment's); a panel per metric (rows) and response size and pinning (columns), a line per model.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from copylab.analysis import plotting
from copylab.declarations import implementations, schema
from copylab.formatting import fmt_size
from copylab.record.manifest import Manifest

# File stem -> (title, metrics drawn one per row, metrics drawn on a log scale).
FIGURES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "requests_vs_connections": (
        "Requests per second and tail latency vs concurrent connections",
        ("requests_per_s", "latency_p99_us"),
        ("latency_p99_us",),
    ),
    "cost_per_request": (
        "What a request costs the server, and how busy each side was",
        ("snd_cpu_us_per_request", "snd_ctx_per_request", "snd_busy", "rcv_busy"),
        (),
    ),
    "fairness_vs_connections": (
        "Which connections got served",
        ("served_fraction", "fairness"),
        (),
    ),
}

# Under open load (file stem -> the same): the latency each model gives at each rate offered.
OPEN_FIGURES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "latency_vs_offered_rate": (
        "Tail latency and requests served vs the rate offered",
        ("latency_p99_us", "latency_p999_us", "requests_per_s"),
        ("latency_p99_us", "latency_p999_us", "requests_per_s"),
    ),
}
# The 99th percentile a model must keep to serve a rate (copylab.report.experiments.servers.open_load): 1 ms.
LATENCY_TARGET_US = 1000.0


def connections_label(count: float) -> str:
    return f"{count:.3g}"


def servers_figures(
    trials: pd.DataFrame,
    summary: pd.DataFrame,
    crossovers: pd.DataFrame,
    manifest: Manifest,
    confidence: float = 0.95,
) -> dict[str, Figure]:
    """All plots of one servers sweep, keyed by file stem, in the report's order: along busy connections, with
    the fewest idle connections of the sweep (copylab.report.experiments.servers.waiting draws the idle connections'
    effect)."""
    setup = plotting.describe_setup(manifest, summary)
    if manifest.parameters.load == "open":
        return {
            name: _against_rate(summary, metrics, f"{title} (mean, {confidence:.0%} CI)", setup, logs)
            for name, (title, metrics, logs) in OPEN_FIGURES.items()
        }
    least = summary["idle_connections"].min() if len(summary) else 0
    summary = summary[summary["idle_connections"] == least]
    crossovers = crossovers[crossovers["idle_connections"] == least]
    return {
        name: _against_connections(summary, crossovers, metrics, f"{title} (mean, {confidence:.0%} CI)", setup, logs)
        for name, (title, metrics, logs) in FIGURES.items()
    }


def _against_connections(
    summary: pd.DataFrame,
    crossovers: pd.DataFrame,
    metrics: tuple[str, ...],
    title: str,
    setup: str,
    log_metrics: tuple[str, ...],
) -> Figure:
    data = summary[summary["metric"].isin(metrics)].dropna(subset=["mean"])
    if data.empty:
        return plotting.empty_figure(title, setup, "No measurements of these metrics in this sweep.")
    rows = [metric for metric in metrics if metric in set(data["metric"])]
    columns = data[["size_bytes", "pinning"]].drop_duplicates()
    columns = columns.sort_values(
        ["size_bytes", "pinning"], key=lambda s: s.map(_pinning_order) if s.name == "pinning" else s
    )
    figure, axes = plotting.grid(title, setup, len(rows), len(columns))
    crossing = crossovers[(crossovers["status"] == "crossover") & (crossovers["axis"] == "connections")]
    for r, metric in enumerate(rows):
        for c, (size, pinning) in enumerate(columns.itertuples(index=False)):
            ax = axes[r][c]
            panel = data[(data["metric"] == metric) & (data["size_bytes"] == size) & (data["pinning"] == pinning)]
            for model in implementations.ordered(panel["implementation"]):
                plotting.curve(
                    ax, panel[panel["implementation"] == model], "connections", plotting.colors()[model], "-"
                )
            marked = crossing[
                (crossing["metric"] == metric) & (crossing["size_bytes"] == size) & (crossing["pinning"] == pinning)
            ]
            plotting.mark_crossovers(ax, marked, connections_label, plotting.colors())
            plotting.log2_axis(
                ax, data["connections"], connections_label, "concurrent connections, log scale", rotation=0
            )
            if metric in log_metrics:
                plotting.plain_log_y(ax)
            ax.set_title(f"{fmt_size(size, approximate=True)} responses, CPU pinning {pinning}", fontsize=9)
            ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    plotting.legend(figure, plotting.implementation_handles(data["implementation"], plotting.colors()))
    return figure


def _against_rate(
    summary: pd.DataFrame, metrics: tuple[str, ...], title: str, setup: str, log_metrics: tuple[str, ...]
) -> Figure:
    """A panel per metric (rows) and busy/idle connections (columns), a line per model along the rate offered."""
    data = summary[summary["metric"].isin(metrics)].dropna(subset=["mean"])
    if data.empty:
        return plotting.empty_figure(title, setup, "No trial of this sweep completed at any rate offered.")
    rows = [metric for metric in metrics if metric in set(data["metric"])]
    columns = (
        data[["connections", "idle_connections"]].drop_duplicates().sort_values(["connections", "idle_connections"])
    )
    figure, axes = plotting.grid(title, setup, len(rows), len(columns))
    for r, metric in enumerate(rows):
        for c, (busy, idle) in enumerate(columns.itertuples(index=False)):
            ax = axes[r][c]
            panel = data[
                (data["metric"] == metric) & (data["connections"] == busy) & (data["idle_connections"] == idle)
            ]
            for model in implementations.ordered(panel["implementation"]):
                plotting.curve(
                    ax, panel[panel["implementation"] == model], "offered_rate", plotting.colors()[model], "-"
                )
            if metric == "latency_p99_us":
                ax.axhline(LATENCY_TARGET_US, color="black", linestyle="--", linewidth=0.8)
            if metric == "requests_per_s":  # served as offered lies on the diagonal
                offered = sorted(data["offered_rate"].unique())
                ax.plot(offered, offered, color="grey", linestyle=":", linewidth=0.8)
            plotting.log2_axis(ax, data["offered_rate"], fmt_rate, "requests/s offered, log scale", rotation=30)
            if metric in log_metrics:
                plotting.plain_log_y(ax)
                # a t interval of few trials may reach below zero: the means, not the bands, set a log axis's range
                means = data.loc[data["metric"] == metric, "mean"]
                ax.set_ylim(means.min() / 3, means.max() * 3)
            idle_text = f" + {idle} idle" if idle else ""
            ax.set_title(f"{busy} busy connections{idle_text}", fontsize=9)
            ax.set_ylabel(plotting.ylabel(metric) if c == 0 else "")
    plotting.legend(figure, plotting.implementation_handles(data["implementation"], plotting.colors()))
    return figure


def fmt_rate(rate: float) -> str:
    return f"{rate / 1000:.3g}k" if rate >= 1000 else f"{rate:.3g}"


def _pinning_order(pinning: str) -> int:
    return schema.PINNINGS.index(pinning)
