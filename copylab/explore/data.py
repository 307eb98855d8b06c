"""The sweeps the explorer reads: found, loaded, summarised and compared once per state of their trials.csv.

Loaded sweeps and per-(sweep, confidence, metric) summaries and comparisons are
cached, keyed by the size and mtime of trials.csv, so a sweep that is still
being recorded is reloaded once it grows.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from copylab import experiments
from copylab.analysis.crossover import find_crossovers
from copylab.analysis.stats import compare, summarize
from copylab.declarations import implementations as registry
from copylab.declarations.metrics import add_metrics, metrics_for
from copylab.error_catalogue import NO_SUCH_FILE
from copylab.errors import CopylabError
from copylab.record.manifest import Manifest
from copylab.record.store import TRIALS_FILE, SweepStore
from copylab.vocabulary.experiment import Experiment
from copylab.vocabulary.implementation import RECEIVE_MODES


def _stamp(directory: str | Path) -> tuple[str, int, int]:
    """Cache key of a sweep: its directory plus the mtime and size of trials.csv."""
    path = Path(directory).resolve() / TRIALS_FILE
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise NO_SUCH_FILE.error(path=path) from None
    return str(path.parent), stat.st_mtime_ns, stat.st_size


def one_layout(trials: pd.DataFrame) -> pd.DataFrame:
    """Each implementation's trials in one message layout: the study's where it was measured, as in the report's
    sections, else the first it was.  The explorer has no layout menu: a configuration then has one row per
    implementation (the report's section on message layouts compares the others)."""
    chosen = trials.groupby("implementation")["layout"].agg(
        lambda layouts: registry.STUDY_LAYOUT if registry.STUDY_LAYOUT in set(layouts) else min(layouts)
    )
    return trials[trials["layout"] == trials["implementation"].map(chosen)]


@functools.lru_cache(maxsize=8)
def _loaded(stamp: tuple[str, int, int]) -> tuple[pd.DataFrame, Manifest]:
    trials, manifest = SweepStore(stamp[0]).load()
    return add_metrics(one_layout(trials)), manifest


@functools.lru_cache(maxsize=128)
def _summary(stamp: tuple[str, int, int], confidence: float, metric: str) -> pd.DataFrame:
    # One metric at a time: a cold cache then costs one metric's summary, not all twelve.
    return summarize(_loaded(stamp)[0], [metric], confidence)


@functools.lru_cache(maxsize=64)
def _comparison(
    stamp: tuple[str, int, int], confidence: float, metric: str, baseline: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    trials, manifest = _loaded(stamp)
    axis = manifest.parameters.declared.axis
    modes = [mode for mode in RECEIVE_MODES if mode in set(trials["receive"])]
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
    """copylab.analysis.stats.summarize of one metric of the sweep at CONFIDENCE (cached)."""
    return _summary(_stamp(directory), confidence, metric)


def default_baseline(experiment: Experiment = experiments.DEFAULT) -> str:
    """What comparisons are against until the user picks another: the baseline the experiment's implementations
    share (copies: the study's two-copy variant)."""
    return registry.baseline_of(experiment).name


def sweep_comparison(
    directory: str | Path, confidence: float, metric: str, baseline: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """compare and find_crossovers of every implementation against BASELINE for one metric (cached)."""
    stamp = _stamp(directory)
    experiment = _loaded(stamp)[1].parameters.declared
    return _comparison(stamp, confidence, metric, baseline or default_baseline(experiment))


def experiment_of(directory: str | Path) -> str | None:
    """The experiment a sweep ran, from its manifest alone (its trials stay unread); None when it is unreadable."""
    try:
        return SweepStore(directory).read_manifest().parameters.experiment
    except CopylabError:
        return None


def find_sweeps(*roots: str | Path) -> list[Path]:
    """Sweep directories (those holding trials.csv) directly under ROOTS."""
    found = {path.parent.resolve() for root in map(Path, roots) for path in root.glob(f"*/{TRIALS_FILE}")}
    return sorted(found)


def implementations(trials: pd.DataFrame) -> list[str]:
    """Implementations present in TRIALS, in registry order."""
    return registry.ordered(trials["implementation"])


def measured_metrics(trials: pd.DataFrame, workload: str, experiment: Experiment) -> list[str]:
    """METRICS entries of EXPERIMENT, the trials' experiment, some ok trial of WORKLOAD measured, in registry
    order."""
    rows = trials[(trials["workload"] == workload) & (trials["status"] == "ok")]
    return [name for name in metrics_for([experiment]) if rows[name].notna().any()]


def sweep_profile(directory: str | Path) -> pd.DataFrame | str:
    """The sweep's sampled profile (copylab.record.store), or in one line why it has none."""
    return SweepStore(Path(directory).resolve()).read_profile()
