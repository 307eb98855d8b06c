"""Two runs of one experiment compared: what changed between sweep A and sweep B, and whether the change is real.

Per configuration both sweeps hold and per metric the experiment compares runs by (Experiment.compared): the
ratio of the means B/A with Fieller's interval and Welch's t-test.  Two runs share no blocks: the host's state
that a block shares between its trials is not shared between runs, so nothing pairs a trial of A with one of B,
and the unpaired analysis is the honest one.  The p-values are Holm-corrected over every configuration of one
metric (the family a reader scans when asking "did anything change?"), and the verdict is:

    higher / lower              B's mean is significantly above / below A's
    no significant change       the data cannot tell them apart
    not compared                a side has fewer than two measured trials there
    only in A / only in B       the configuration was run in one sweep only (listed, never dropped)

Crossovers are compared curve by curve: moved when both are crossovers whose intervals do not overlap, within
their intervals when they do, status changed when one run finds another kind of curve.  The manifests are
compared field by field where they describe the measurement (host, kernel, CPU, toolchain, settings,
calibration, code, path, privilege).  A trials.csv that no longer matches its manifest is used and said to be
modified (copylab.record.origin).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from copylab.analysis.analyze_sweep import comparison_tables
from copylab.analysis.stats import describe, fieller, holm
from copylab.calibration.record import Calibration, region_costs
from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS, add_metrics
from copylab.error_catalogue import CONFIDENCE_OUT_OF_RANGE, NOTHING_SHARED, OTHER_EXPERIMENTS
from copylab.record import tables
from copylab.record.manifest import Manifest
from copylab.record.origin import ModifiedData, Origin
from copylab.record.store import SweepStore
from copylab.record.tables import CONFIG_KEYS, RUN_COMPARISON
from copylab.vocabulary.experiment import Experiment

HIGHER, LOWER, SAME, NOT_COMPARED, ONLY_A, ONLY_B = (
    "higher",
    "lower",
    "no significant change",
    "not compared",
    "only in A",
    "only in B",
)
VERDICTS = (HIGHER, LOWER, SAME, NOT_COMPARED, ONLY_A, ONLY_B)
MOVED, WITHIN, STATUS_CHANGED, SAME_STATUS = "moved", "within intervals", "status changed", "same"

# The manifest's parts that describe a measurement (the rest says when it ran and how long it took).
_MANIFEST_PARTS = ("profile", "host", "toolchain", "git", "parameters", "perf", "path", "ends", "privilege")
_MANIFEST_PARTS_OPTIONAL = ("unavailable", "restrictions")


@dataclass(frozen=True)
class Run:
    """One sweep as a comparison sees it."""

    store: SweepStore
    manifest: Manifest
    trials: pd.DataFrame  # with one column per copylab.declarations.metrics.METRICS entry
    crossovers: pd.DataFrame
    origin: Origin


@dataclass(frozen=True)
class TwoRuns:
    a: Run
    b: Run
    experiment: Experiment  # the experiment both sweeps ran
    confidence: float
    comparison: pd.DataFrame  # comparison.csv (tables.RUN_COMPARISON)
    crossovers: pd.DataFrame  # per curve of the compared metrics, its crossover in A and in B (moved_crossovers)
    differences: list[tuple[str, str, str]]  # manifest field, its value in A, in B

    def only_in(self, side: str) -> pd.DataFrame:
        """The configurations run in one sweep only (SIDE "A" or "B")."""
        rows = self.comparison[self.comparison["verdict"] == (ONLY_A if side == "A" else ONLY_B)]
        return rows[list(CONFIG_KEYS)].drop_duplicates().reset_index(drop=True)

    def warnings(self) -> list[str]:
        """Each side's trials.csv changed since its sweep ended, named by its directory."""
        return [f"{run.store.directory}: {run.origin.warning()}" for run in (self.a, self.b) if run.origin.modified]


def load_run(store: SweepStore, confidence: float = 0.95) -> Run:
    """A sweep's trials with their metrics, and its crossovers: the analysis's table when it is current, else
    worked out here from the trials (a modified trials.csv makes the table stale)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModifiedData)  # said once, by whoever shows the comparison
        trials, manifest = store.load()
    measured = add_metrics(trials)
    if store.missing_tables():
        pairs = implementations.comparison_pairs(set(trials["receive"]))
        _, crossovers = comparison_tables(
            measured, manifest, pairs, manifest.parameters.declared.compared, confidence, seed=manifest.parameters.seed
        )
    else:
        crossovers = store.read_table("crossovers")
    return Run(store, manifest, measured, crossovers, store.origin(manifest))


def compare_runs(a: SweepStore, b: SweepStore, confidence: float = 0.95) -> TwoRuns:
    """Sweep B against sweep A (module docstring); CopylabError, in one line, for sweeps of different experiments
    or without a configuration in common."""
    if not 0 < confidence < 1:
        raise CONFIDENCE_OUT_OF_RANGE.error(confidence=confidence)
    experiment_a, experiment_b = (store.read_manifest().parameters.experiment for store in (a, b))
    if experiment_a != experiment_b:
        raise OTHER_EXPERIMENTS.error(
            a=a.directory, experiment_a=experiment_a, b=b.directory, experiment_b=experiment_b
        )
    run_a, run_b = load_run(a, confidence), load_run(b, confidence)
    experiment = run_a.manifest.parameters.declared
    comparison = run_ratios(run_a.trials, run_b.trials, list(experiment.compared), confidence)
    if not (~comparison["verdict"].isin([ONLY_A, ONLY_B])).any():
        raise NOTHING_SHARED.error(a=a.directory, b=b.directory)
    crossovers = moved_crossovers(run_a.crossovers, run_b.crossovers, experiment.compared)
    differences = manifest_differences(run_a.manifest, run_b.manifest)
    return TwoRuns(run_a, run_b, experiment, confidence, comparison, crossovers, differences)


def run_ratios(a: pd.DataFrame, b: pd.DataFrame, metrics: list[str], confidence: float = 0.95) -> pd.DataFrame:
    """comparison.csv: per configuration either of the metric-augmented trials A and B holds, and per metric
    measured there, the verdict on B against A (module docstring)."""
    keys = [*CONFIG_KEYS, "metric"]
    present = [m for m in metrics if m in a.columns and m in b.columns]
    stats_a, stats_b = (describe(side, present) for side in (a, b))
    merged = stats_a.merge(stats_b, on=keys, how="outer", suffixes=("_a", "_b"))
    # a configuration with trials but no measured value of a metric is still in the sweep: not "only in"
    in_a, in_b = _holds(merged, _configs(a)), _holds(merged, _configs(b))
    for side in ("a", "b"):
        merged[f"n_{side}"] = merged[f"n_{side}"].fillna(0).astype("int64")
    m_a, s_a, n_a = (merged[f"{c}_a"].to_numpy(dtype=float) for c in ("mean", "std", "n"))
    m_b, s_b, n_b = (merged[f"{c}_b"].to_numpy(dtype=float) for c in ("mean", "std", "n"))
    comparable = (n_a >= 2) & (n_b >= 2)
    ratio, low, high = fieller(m_b, s_b**2, n_b, m_a, s_a**2, n_a, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = st.ttest_ind_from_stats(m_b, s_b, n_b, m_a, s_a, n_a, equal_var=False).pvalue
    # no spread on either side: the means are what they are, equal or not
    p = np.where((s_a == 0) & (s_b == 0), np.where(m_a == m_b, 1.0, 0.0), p)
    merged["ratio"] = np.where(comparable, ratio, np.nan)
    merged["ratio_ci_low"] = np.where(comparable, low, np.nan)
    merged["ratio_ci_high"] = np.where(comparable, high, np.nan)
    merged["p_value"] = np.where(comparable, p, np.nan)
    merged["p_holm"] = merged.groupby("metric")["p_value"].transform(holm)
    significant = merged["p_holm"] < 1 - confidence
    verdict = np.where(significant & (merged["mean_b"] > merged["mean_a"]), HIGHER, SAME)
    verdict = np.where(significant & (merged["mean_b"] < merged["mean_a"]), LOWER, verdict)
    verdict = np.where(comparable, verdict, NOT_COMPARED)
    verdict = np.where(in_a & ~in_b, ONLY_A, np.where(in_b & ~in_a, ONLY_B, verdict))
    merged["verdict"] = verdict
    order = {m: i for i, m in enumerate(present)}
    merged = merged.sort_values(keys, key=lambda s: s.map(order) if s.name == "metric" else s)
    return tables.typed_as(RUN_COMPARISON, merged)


def _configs(trials: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(trials[list(CONFIG_KEYS)].itertuples(index=False, name=None))


def _holds(frame: pd.DataFrame, configs: set[tuple[Any, ...]]) -> np.ndarray:
    rows = frame[list(CONFIG_KEYS)].itertuples(index=False, name=None)
    return np.array([row in configs for row in rows], dtype=bool)


def moved_crossovers(a: pd.DataFrame, b: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """Per curve of METRICS in either crossovers table: its status and crossover with interval in A and in B, and
    the change: moved, within intervals, status changed, same, or only in A / only in B."""
    curve = ["axis", *tables.POINT_KEYS, "metric", "challenger", "baseline"]
    measured = ["status", "crossover_at", "ci_low", "ci_high"]
    sides = [frame[frame["metric"].isin(metrics)][[*curve, *measured]] for frame in (a, b)]
    both = sides[0].merge(sides[1], on=curve, how="outer", suffixes=("_a", "_b"), indicator="presence")
    change = []
    for row in both.itertuples(index=False):
        record = row._asdict()
        if record["presence"] != "both":
            change.append(ONLY_A if record["presence"] == "left_only" else ONLY_B)
        elif record["status_a"] != record["status_b"]:
            change.append(STATUS_CHANGED)
        elif record["status_a"] != "crossover":
            change.append(SAME_STATUS)
        else:
            overlap = record["ci_low_a"] <= record["ci_high_b"] and record["ci_low_b"] <= record["ci_high_a"]
            change.append(WITHIN if overlap else MOVED)
    both["change"] = change
    return both.drop(columns="presence").reset_index(drop=True)


def manifest_differences(a: Manifest, b: Manifest) -> list[tuple[str, str, str]]:
    """Every field of the manifests' measurement-describing parts that differs: (field, value in A, in B), with
    the calibration summed up (memcpy bandwidth, cost per level, consistency, findings)."""
    flat_a, flat_b = (_described(manifest) for manifest in (a, b))
    return [
        (name, flat_a.get(name, "—"), flat_b.get(name, "—"))
        for name in sorted(set(flat_a) | set(flat_b))
        if flat_a.get(name) != flat_b.get(name)
    ]


def _described(manifest: Manifest) -> dict[str, str]:
    record = manifest.to_dict()
    flat: dict[str, str] = {}
    for part in (*_MANIFEST_PARTS, *_MANIFEST_PARTS_OPTIONAL):
        _flatten(part, record.get(part), flat)
    _flatten("calibration", _calibration_summary(manifest.calibration), flat)
    return flat


def _calibration_summary(calibration: Calibration | None) -> dict[str, Any] | None:
    if calibration is None:
        return None
    return {
        "memcpy_gbps": round(calibration.memcpy_gbps, 2),
        **{f"ns_per_byte.{level}": round(cost, 4) for level, cost in region_costs(calibration).items()},
        "consistent": "no: " + calibration.inconsistent if calibration.inconsistent else "yes",
        "findings": ", ".join(sorted({finding.kind for finding in calibration.findings})) or "none",
    }


def _flatten(prefix: str, value: Any, into: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, into)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            _flatten(f"{prefix}[{index}]", item, into)
    elif isinstance(value, list):
        into[prefix] = ", ".join(map(str, value))
    elif value is not None:
        into[prefix] = str(value)


def direction_word(metric: str, verdict: str) -> str:
    """ "better" or "worse" for a significant change of METRIC, by its direction; "" otherwise."""
    if verdict not in (HIGHER, LOWER):
        return ""
    return "better" if (verdict == HIGHER) == (METRICS[metric].direction == "higher") else "worse"
