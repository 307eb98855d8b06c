"""One sweep's whole analysis: load, summarise, compare, find crossovers, draw; or run it as a notebook."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from copylab.crossover import find_crossovers
from copylab.errors import CopylabError
from copylab.figures import IMPLEMENTATION_ORDER, format_size, make_figures, save_figures
from copylab.metrics import METRICS, add_metrics
from copylab.notebook_runner import execute
from copylab.stats import DEFAULT_PAIRS, compare, summarize
from copylab.trials import load_manifest, load_sweep

NOTEBOOK = Path("notebooks") / "10_analyze_sweep.ipynb"


@dataclass
class AnalysisResult:
    data_dir: Path
    manifest: dict[str, Any]
    trials: pd.DataFrame  # loaded trials plus one column per copylab.metrics.METRICS entry
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame
    figures: dict[str, Figure] = field(repr=False)
    written: list[Path]


def analyze(
    data_dir: str | Path,
    confidence: float = 0.95,
    pairs: Iterable[tuple[str, str]] = DEFAULT_PAIRS,
    metrics: Iterable[str] | None = None,
    *,
    n_resamples: int = 2000,
    seed: int | None = None,
    figures_dir: str | Path | None = None,
    write: bool = True,
) -> AnalysisResult:
    """Analyse the sweep in DATA_DIR (trials.csv + manifest.json).

    summary.csv covers every metric (the figures need them); METRICS (default:
    all) limits comparisons.csv and crossovers.csv.  Pairs whose challenger or
    baseline has no trials are skipped.  The bootstrap seed defaults to the
    manifest's parameters.seed.  With WRITE, the three CSVs go next to the
    data and the figures to FIGURES_DIR (default: ../../figures/SWEEP from
    DATA_DIR, i.e. figures/SWEEP of the project).
    """
    data_dir = Path(data_dir)
    if not 0 < confidence < 1:
        raise CopylabError(f"confidence must be between 0 and 1, not {confidence}")
    pairs = [tuple(pair) for pair in pairs]
    unknown = sorted({name for pair in pairs for name in pair} - set(IMPLEMENTATION_ORDER))
    if unknown or any(len(pair) != 2 for pair in pairs):
        raise CopylabError(f"pairs must be (challenger, baseline) implementations; unknown: {', '.join(unknown)}")
    trials, manifest = load_sweep(data_dir)
    seed = int(manifest["parameters"].get("seed", 0)) if seed is None else seed
    measured = add_metrics(trials)
    summary = summarize(measured, confidence=confidence)
    comparisons = compare(measured, pairs, metrics, confidence)
    crossovers = find_crossovers(measured, comparisons, pairs, metrics, confidence, n_resamples, seed)
    figures = make_figures(trials, summary, crossovers, manifest, confidence)
    written: list[Path] = []
    if write:
        for name, frame in (("summary", summary), ("comparisons", comparisons), ("crossovers", crossovers)):
            path = data_dir / f"{name}.csv"
            frame.to_csv(path, index=False, lineterminator="\n")
            written.append(path)
        if figures_dir is None:
            figures_dir = data_dir.resolve().parent.parent / "figures" / manifest["sweep"]
            if not data_dir.is_absolute():
                figures_dir = Path(os.path.relpath(figures_dir))
        written += save_figures(figures, figures_dir)
    return AnalysisResult(data_dir, manifest, measured, summary, comparisons, crossovers, figures, written)


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
    data_dir: str | Path,
    project_root: str | Path,
    confidence: float = 0.95,
    pairs: Iterable[tuple[str, str]] = DEFAULT_PAIRS,
    metrics: Iterable[str] | None = None,
    output: str | Path | None = None,
) -> Path:
    """Execute notebooks/10_analyze_sweep.ipynb on DATA_DIR with papermill; return the executed notebook.

    The kernel runs in PROJECT_ROOT; the output defaults to
    report/sweeps/SWEEP.ipynb there.  A failing cell raises CopylabError
    naming the cell and the output notebook (papermill still writes it).
    """
    project_root = Path(project_root).resolve()
    data_dir = Path(data_dir).resolve()
    sweep = load_manifest(data_dir)["sweep"]
    output = project_root / "report" / "sweeps" / f"{sweep}.ipynb" if output is None else Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    inside = data_dir.is_relative_to(project_root)
    parameters = {
        # relative when possible, so the executed notebook shows no machine-specific path
        "data_dir": os.path.relpath(data_dir, project_root) if inside else str(data_dir),
        "confidence": confidence,
        "pairs": [list(pair) for pair in pairs],
        "metrics": None if metrics is None else list(metrics),
    }
    execute(project_root / NOTEBOOK, output, parameters, project_root, "analysis")
    return output
