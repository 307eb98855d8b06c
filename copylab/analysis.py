"""One sweep's whole analysis: load, summarise, compare, find crossovers, draw; or run it as a notebook."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from copylab import implementations
from copylab.crossover import find_crossovers
from copylab.errors import CopylabError
from copylab.figures import format_size, make_figures, zerocopy_path_diagram
from copylab.manifest import Manifest
from copylab.metrics import METRICS, add_metrics
from copylab.notebook_runner import execute
from copylab.paths import FIGURES, NOTEBOOKS, REPORT, ROOT
from copylab.stats import compare, summarize
from copylab.store import SweepStore

NOTEBOOK = NOTEBOOKS / "10_analyze_sweep.ipynb"


@dataclass
class AnalysisResult:
    store: SweepStore
    manifest: Manifest
    trials: pd.DataFrame  # loaded trials plus one column per copylab.metrics.METRICS entry
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame
    figures: dict[str, Figure] = field(repr=False)
    written: list[Path]


def analyze(
    store: SweepStore,
    confidence: float = 0.95,
    pairs: Iterable[tuple[str, str]] | None = None,
    metrics: Iterable[str] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int | None = None,
    write: bool = True,
) -> AnalysisResult:
    """Analyse the sweep of STORE (trials.csv + manifest.json).

    summary.csv covers every metric (the figures need them); METRICS (default: all) limits
    comparisons.csv and crossovers.csv.  PAIRS are (challenger, baseline) implementations, by default
    every implementation against the baseline the registry gives it; pairs whose challenger or baseline
    has no trials are skipped.  The bootstrap seed defaults to the manifest's seed.  With WRITE, the three
    tables go next to the data and the figures to the store's figures directory.
    """
    if not 0 < confidence < 1:
        raise CopylabError(f"confidence must be between 0 and 1, not {confidence}")
    pairs = implementations.comparison_pairs() if pairs is None else [tuple(pair) for pair in pairs]
    if any(len(pair) != 2 for pair in pairs):
        raise CopylabError("pairs must be (challenger, baseline) implementations")
    for name in {name for pair in pairs for name in pair}:
        implementations.get(name)
    trials, manifest = store.load()
    seed = manifest.parameters.seed if seed is None else seed
    measured = add_metrics(trials)
    summary = summarize(measured, confidence=confidence)
    comparisons = compare(measured, pairs, metrics, confidence)
    crossovers = find_crossovers(measured, comparisons, pairs, metrics, confidence, n_resamples, seed)
    figures = {
        "zerocopy_path": zerocopy_path_diagram(trials),
        **make_figures(trials, summary, crossovers, manifest, confidence),
    }
    written: list[Path] = []
    if write:
        for name, frame in (("summary", summary), ("comparisons", comparisons), ("crossovers", crossovers)):
            written.append(store.write_table(name, frame))
        written += store.save_figures(figures)
    return AnalysisResult(store, manifest, measured, summary, comparisons, crossovers, figures, written)


def crossover_sentences(crossovers: pd.DataFrame) -> list[str]:
    """One plain sentence per crossovers.csv row, every number taken from the row."""
    sentences = []
    for row in crossovers.itertuples(index=False):
        threads = f"{row.threads} thread" + ("s" if row.threads != 1 else "")
        where = f"{row.workload}, {threads}, pinning {row.pinning}, {METRICS[row.metric].label}"
        head = f"{row.challenger} vs {row.baseline} ({where}): "
        if row.status == "crossover":
            body = (
                f"better from about {format_size(row.crossover_size)} "
                f"(CI {format_size(row.ci_low)} to {format_size(row.ci_high)})"
            )
        else:
            body = row.status.replace("_", " ")
        if not pd.isna(row.first_significant_size):
            body += f"; significantly better at every size from {format_size(row.first_significant_size)}"
        sentences.append(head + body + ".")
    return sentences


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
    output = REPORT / "sweeps" / f"{store.key}.ipynb" if output is None else Path(output)
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
    execute(NOTEBOOK, output, parameters, ROOT, "analysis")
    return output
