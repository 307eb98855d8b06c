"""One sweep's whole analysis: load, summarise, compare, find crossovers, draw; or run it as a notebook."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from copylab.analysis import breakdown, plotting
from copylab.analysis.crossover import find_crossovers
from copylab.analysis.stats import compare, curve_keys, summarize
from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics, metrics_for
from copylab.error_catalogue import CONFIDENCE_OUT_OF_RANGE
from copylab.paths import FIGURES, NOTEBOOKS, REPORT, ROOT
from copylab.record.manifest import Manifest
from copylab.record.origin import git_state, png_metadata
from copylab.record.store import SweepStore
from copylab.vocabulary.experiment import Experiment

NOTEBOOK = NOTEBOOKS / "10_analyze_sweep.ipynb"

# Draws a sweep's figures, keyed by file stem, from its trials, summary and crossovers, its manifest and confidence:
# each experiment's are its plug-in's (copylab.report.plugins.draw picks them by the manifest).
DrawFigures = Callable[[pd.DataFrame, pd.DataFrame, pd.DataFrame, Manifest, float], dict[str, Figure]]


@dataclass
class AnalysisResult:
    store: SweepStore
    manifest: Manifest
    trials: pd.DataFrame  # loaded trials plus one column per copylab.declarations.metrics.METRICS entry
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame
    figures: dict[str, Figure] = field(repr=False)
    written: list[Path]


def analyze(
    store: SweepStore,
    draw: DrawFigures,
    confidence: float = 0.95,
    pairs: list[tuple[str, str]] | None = None,
    metrics: Iterable[str] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int | None = None,
    write: bool = True,
) -> AnalysisResult:
    """Analyse the sweep of STORE (trials.csv + manifest.json), its figures drawn by DRAW.

    summary.csv covers every metric (the figures need them); METRICS (default: all) limits
    comparisons.csv and crossovers.csv.  PAIRS are (challenger, baseline) contender labels, checked where they came
    in (copylab.declarations.implementations.contender_pairs), by default every implementation against the baseline
    the registry gives it; pairs whose challenger or baseline has no trials are skipped.  The bootstrap seed defaults
    to the manifest's seed.  With WRITE, the three tables go next to the data and the figures to the store's figures
    directory.
    """
    if not 0 < confidence < 1:
        raise CONFIDENCE_OUT_OF_RANGE.error(confidence=confidence)
    trials, manifest = store.load()
    if pairs is None:
        pairs = implementations.comparison_pairs(set(trials["receive"]))
    seed = manifest.parameters.seed if seed is None else seed
    measured = add_metrics(trials)
    summary = summarize(measured, metrics_for([manifest.parameters.declared]), confidence=confidence)
    comparisons, crossovers = comparison_tables(measured, manifest, pairs, metrics, confidence, n_resamples, seed)
    figures = plotting.literal_text(draw)(trials, summary, crossovers, manifest, confidence)
    figures |= profile_figures(store, trials, manifest)
    written: list[Path] = []
    if write:
        for name, frame in (("summary", summary), ("comparisons", comparisons), ("crossovers", crossovers)):
            written.append(store.write_table(name, frame))
        written += store.save_figures(figures, png_metadata([store.origin(manifest)], git_state()))
    return AnalysisResult(store, manifest, measured, summary, comparisons, crossovers, figures, written)


def sweep_path(manifest: Manifest) -> str:
    """Where a sweep's bytes went: over the veth, into the sink, or over the network between two hosts."""
    return manifest.path if manifest.path == "network" else manifest.parameters.path


def profile_figures(store: SweepStore, trials: pd.DataFrame, manifest: Manifest) -> dict[str, Figure]:
    """Where the CPU goes (copylab.analysis.breakdown), when the sweep sampled its trials."""
    profile = store.read_profile()
    if isinstance(profile, str):
        return {}
    drawn = plotting.literal_text(breakdown.breakdown_figure)(profile, trials, manifest.parameters.side_sizes)
    return {} if drawn is None else {breakdown.figure_name(sweep_path(manifest)): drawn}


def comparison_tables(
    measured: pd.DataFrame,
    manifest: Manifest,
    pairs: Iterable[tuple[str, str]],
    metrics: Iterable[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """comparisons.csv and crossovers.csv of the metric-augmented trials MEASURED of one sweep."""
    pairs = list(pairs)
    axis = manifest.parameters.declared.axis
    # A blocked design's trials pair within their blocks (copylab.measure.planning.schedule): its comparisons are
    # paired.
    paired = manifest.parameters.design == "blocked"
    metrics = metrics_for([manifest.parameters.declared]) if metrics is None else metrics
    comparisons = compare(measured, pairs, metrics, confidence, axis, paired)
    crossovers = find_crossovers(measured, comparisons, pairs, metrics, confidence, n_resamples, seed, axis)
    return comparisons, crossovers


def headline_rows(frame: pd.DataFrame, experiment: Experiment) -> pd.DataFrame:
    """The rows of a summary, comparisons or crossovers table in each workload's headline metric."""
    wanted = [experiment.headline.get(w) == m for w, m in zip(frame["workload"], frame["metric"], strict=True)]
    return frame[pd.Series(wanted, index=frame.index, dtype=bool)]


def headline_table(summary: pd.DataFrame, experiment: Experiment) -> pd.DataFrame:
    """Mean of the headline metric per configuration, the experiment's axis across."""
    axis = experiment.axis
    rows = headline_rows(summary, experiment)
    index = list(dict.fromkeys(["workload", "pinning", "receive", *curve_keys(axis), "implementation"]))
    return rows.pivot_table(index=index, columns=axis, values="mean")


def executed_notebook(store: SweepStore) -> Path:
    """Where ./inv analyze keeps the executed analysis notebook of STORE's sweep: the one that drew its figures."""
    return REPORT / "sweeps" / f"{store.key}.ipynb"


def run_analysis_notebook(
    store: SweepStore,
    confidence: float = 0.95,
    pairs: Iterable[tuple[str, str]] | None = None,
    metrics: Iterable[str] | None = None,
    output: str | Path | None = None,
) -> Path:
    """Execute notebooks/10_analyze_sweep.ipynb on STORE's sweep with papermill; return the executed notebook.

    The output defaults to report/sweeps/KEY.ipynb.  A failing cell raises CopylabError naming the cell
    and the output notebook (papermill still writes it).
    """
    output = executed_notebook(store) if output is None else Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    parameters: dict[str, Any] = {
        # relative when possible, so the executed notebook shows no machine-specific path
        "data_dir": str(store.directory.relative_to(ROOT))
        if store.directory.is_relative_to(ROOT)
        else str(store.directory),
        "figures_root": None if store.figures_root == FIGURES.resolve() else str(store.figures_root),
        "confidence": confidence,
        "pairs": None if pairs is None else [list(pair) for pair in pairs],
        "metrics": None if metrics is None else list(metrics),
    }
    # Imported here: the notebook's own kernel imports this module, and papermill's (nbformat's schemas) would cost
    # it about 2 s of CPU at every analysis for nothing.
    from copylab.analysis.notebooks import execute

    execute(NOTEBOOK, output, parameters, ROOT, "analysis")
    return output
