"""Where along an experiment's axis a challenger starts to beat its baseline (crossovers.csv).

The axis is message size for the copies experiment and the number of connections for the servers experiment; "size"
below is a point on it.  A curve is one challenger against one baseline along the axis, the other settings and the
metric fixed.

Where every point of a curve was compared paired within blocks (a blocked design), its verdict (status) comes from one
model of the whole curve fitted to every block (copylab.analysis.curve_model): crossover, challenger_always_better,
challenger_never_better, equivalent, undecided or multiple_crossings, with the crossover's
interval, how sure the verdict is, and what would decide an open one.

Every curve also gets the per-point check (tested_status): every tested point is labelled from comparisons.csv, B
(challenger significantly better, Holm-corrected), W (significantly worse) or 0 (not significant), and ignoring the
0s, the run-collapsed sequence of labels gives

    no label            indistinguishable
    W                   challenger_never_better   (never significantly better)
    B                   challenger_always_better  (never significantly worse)
    W then B            crossover
    anything else       multiple_crossings        (no single worse-to-better change)

A curve compared unpaired (a randomised design), or with fewer points than a model's fit can be checked on (three
connection counts), has no model: its status is the check's, and a crossover's point lies
inside the bracket from the last W point to the first B point, where the mean difference (of the within-block log
ratios where paired) last changes sign from <= 0 to > 0, linearly interpolated on a log2 axis, with an interval from
resampling the blocks (or trials) within each point.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats as st

from copylab.analysis.curve_model import CHECKED_POINTS, MODEL_STATUSES, assess, last_upcrossing
from copylab.analysis.stats import curve_keys, with_contenders
from copylab.declarations.metrics import METRICS
from copylab.record import tables

# The model's verdicts (copylab.analysis.curve_model), and indistinguishable: the per-point check's only.
STATUSES = (*MODEL_STATUSES, "indistinguishable")


def classify(labels: Iterable[str]) -> str:
    """Status of a curve from its per-size labels "B", "W" or "0" in size order."""
    runs: list[str] = []
    for label in labels:
        if label != "0" and (not runs or runs[-1] != label):
            runs.append(label)
    return {
        (): "indistinguishable",
        ("W",): "challenger_never_better",
        ("B",): "challenger_always_better",
        ("W", "B"): "crossover",
    }.get(tuple(runs), "multiple_crossings")


def first_significant_point(sizes: np.ndarray, labels: list[str]) -> float:
    """Smallest tested point from which the challenger is significantly better at every larger one, else NaN."""
    first = np.nan
    for size, label in zip(sizes[::-1], labels[::-1], strict=True):
        if label != "B":
            break
        first = size
    return first


def crossover_interval(
    challenger: list[np.ndarray],
    baseline: list[np.ndarray],
    sizes: np.ndarray,
    sign: float,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> tuple[float, float, float]:
    """Crossover size and bootstrap percentile interval over one bracket of SIZES.

    CHALLENGER[i] and BASELINE[i] hold the trial values at SIZES[i]; SIGN is +1
    when higher is better, -1 when lower is.  Each resample draws the trials of
    every size and side with replacement and applies last_upcrossing to the
    resampled means.  Resamples without an up-crossing in the bracket are kept,
    counted beyond the bracket end they point to, so the percentiles are
    censored at the bracket (a bound equal to a bracket end means "at or beyond
    this tested size") instead of silently dropping the resamples that disagree.

    A plain percentile bootstrap of means acts like a z-interval with the
    (n-1)/n-biased variance and is too narrow with a handful of trials, so two
    standard small-sample corrections ("expanded percentile", Hesterberg 2015)
    are applied: each side's deviations from its mean are scaled by
    sqrt(n/(n-1)) before resampling, and the percentile levels are the normal
    tail probabilities of Student-t's quantile at the smallest Welch degrees of
    freedom among the bracket's sizes.
    """
    rng = np.random.default_rng() if rng is None else rng
    x = np.log2(sizes.astype(float))
    pairs = list(zip(challenger, baseline, strict=True))
    means = np.array([[c.mean() - b.mean() for c, b in pairs]])
    point = last_upcrossing(x, sign * means)[0]
    resampled = np.column_stack(
        [_resampled_means(c, n_resamples, rng) - _resampled_means(b, n_resamples, rng) for c, b in pairs]
    )
    roots = last_upcrossing(x, sign * resampled)
    dof = np.array([st.ttest_ind(c, b, equal_var=False).df for c, b in pairs])
    return _censored(x, point, roots, dof, confidence)


def paired_crossover_interval(
    advantages: list[np.ndarray],
    sizes: np.ndarray,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> tuple[float, float, float]:
    """crossover_interval for a blocked design: ADVANTAGES[i] holds, per block at SIZES[i], the challenger's
    direction-aware log ratio over the baseline (positive: better).  Each resample draws the blocks of every
    size with replacement; the same corrections apply, at n - 1 degrees of freedom per size."""
    rng = np.random.default_rng() if rng is None else rng
    x = np.log2(sizes.astype(float))
    point = last_upcrossing(x, np.array([[a.mean() for a in advantages]]))[0]
    roots = last_upcrossing(x, np.column_stack([_resampled_means(a, n_resamples, rng) for a in advantages]))
    return _censored(x, point, roots, np.array([len(a) - 1.0 for a in advantages]), confidence)


def _censored(
    x: np.ndarray, point: float, roots: np.ndarray, dof: np.ndarray, confidence: float
) -> tuple[float, float, float]:
    """The crossover and its percentile interval, censored at the bracket's ends, at Student-t's tail levels."""
    dof = dof[np.isfinite(dof) & (dof > 0)]  # constant samples have no df; they add no sampling noise either
    tail = st.norm.sf(st.t.ppf((1 + confidence) / 2, dof.min())) if len(dof) else (1 - confidence) / 2
    low, high = np.quantile(roots, [tail, 1 - tail], method="inverted_cdf")
    low, high, point = np.clip([low, high, point], x[0], x[-1])
    return float(2**point), float(2**low), float(2**high)


def find_crossovers(
    trials: pd.DataFrame,
    comparisons: pd.DataFrame,
    pairs: Iterable[tuple[str, str]],
    metrics: Iterable[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    axis: str = "size_bytes",
) -> pd.DataFrame:
    """One crossovers.csv row per curve of COMPARISONS along AXIS with at least two compared points: the model's
    verdict where every point was compared paired (comparisons.csv's method) and there are enough points to check
    its fit (CHECKED_POINTS), else the per-point check's.

    TRIALS are the metric-augmented trials COMPARISONS came from (copylab.analysis.stats.compare at the same
    confidence and axis).  Every curve draws from its own generator seeded by SEED and the curve's name, so results
    do not depend on which other curves are analysed.
    """
    fixed = curve_keys(axis)
    curve_columns = [*fixed, "metric", "challenger", "baseline"]
    keep = (comparisons["challenger"] + "/" + comparisons["baseline"]).isin([f"{c}/{b}" for c, b in pairs])
    if metrics is not None:
        keep &= comparisons["metric"].isin(list(metrics))
    wanted = comparisons[keep]
    ok = with_contenders(trials[trials["status"] == "ok"])
    rows = []
    for curve, group in wanted.groupby(curve_columns, sort=True):
        if len(group) < 2:
            continue
        group = group.sort_values(axis)
        labels = [
            ("B" if better else "W") if significant else "0"
            for better, significant in zip(group["challenger_better"], group["significant"], strict=True)
        ]
        settings = dict(zip(fixed, curve, strict=False))
        metric, challenger, baseline = curve[len(fixed) :]
        here = ok[(ok[fixed] == pd.Series(settings)).all(axis=1)]
        curve_seed = [seed, zlib.crc32("/".join(map(str, curve)).encode())]
        points = group[axis].to_numpy()
        paired = bool((group["method"] == "paired").all())
        if paired and len(points) >= CHECKED_POINTS:
            advantages = curve_advantages(here, challenger, baseline, metric, axis, points)
            found = _modelled(points, advantages, int(np.random.default_rng(curve_seed).integers(2**31)), n_resamples)
        else:
            rng = np.random.default_rng(curve_seed)
            curve_of = (axis, metric, challenger, baseline)
            found = _tested(here, labels, points, curve_of, confidence, n_resamples, rng, paired)
        rows.append(
            {
                "axis": axis,
                axis: pd.NA,
                **dict(zip(curve_columns, curve, strict=True)),
                **found,
                "first_significant_at": first_significant_point(points, labels),
                "tested_status": classify(labels),
            }
        )
    frame = pd.DataFrame(rows, columns=list(tables.CROSSOVERS))
    return tables.typed("crossovers", frame) if rows else tables.empty("crossovers")


# What a curve without the model leaves empty in crossovers.csv's model columns.
_NO_MODEL = {
    "lack_of_fit_p": np.nan,
    "replication": np.nan,
    "sure": False,
    "largest_difference": np.nan,
    "more_blocks": np.nan,
    "decide_at": np.nan,
}


def _modelled(points: np.ndarray, advantages: list[np.ndarray], seed: int, n_resamples: int) -> dict[str, object]:
    """crossovers.csv's verdict columns from the model of the curve (copylab.analysis.curve_model.assess)."""
    found = assess(points, advantages, seed, n_resamples)
    if found is None:
        return {"status": "undecided", "crossover_at": np.nan, "ci_low": np.nan, "ci_high": np.nan, **_NO_MODEL}
    at, low, high = found.crossover
    return {
        "status": found.status,
        "crossover_at": at,
        "ci_low": low,
        "ci_high": high,
        "lack_of_fit_p": found.fit.lack_of_fit_p,
        "replication": found.replication,
        "sure": found.sure,
        "largest_difference": found.largest_difference,
        "more_blocks": found.more_blocks,
        "decide_at": found.decide_at,
    }


def _tested(
    trials: pd.DataFrame,
    labels: list[str],
    points: np.ndarray,
    curve: tuple[str, str, str, str],
    confidence: float,
    n_resamples: int,
    rng: np.random.Generator,
    paired: bool,
) -> dict[str, object]:
    """crossovers.csv's verdict columns from the per-point labels of a curve without the model: a crossover's point
    inside its bracket, from resampling its blocks (PAIRED: paired_crossover_interval) or its trials
    (crossover_interval).  CURVE: its axis, metric, challenger and baseline."""
    axis, metric, challenger, baseline = curve
    status = classify(labels)
    crossing = (np.nan, np.nan, np.nan)
    if status == "crossover":
        lo = max(i for i, label in enumerate(labels) if label == "W")
        hi = min(i for i, label in enumerate(labels) if label == "B")
        bracket = points[lo : hi + 1]
        if paired:
            advantages = curve_advantages(trials, challenger, baseline, metric, axis, bracket)
            crossing = paired_crossover_interval(advantages, bracket, confidence, n_resamples, rng)
        else:
            sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
            values = {
                name: [_values(trials, name, axis, point, metric) for point in bracket]
                for name in (challenger, baseline)
            }
            crossing = crossover_interval(
                values[challenger], values[baseline], bracket, sign, confidence, n_resamples, rng
            )
    at, low, high = crossing
    return {"status": status, "crossover_at": at, "ci_low": low, "ci_high": high, **_NO_MODEL}


def _values(trials: pd.DataFrame, contender: str, axis: str, point: int, metric: str) -> np.ndarray:
    chosen = (trials["contender"] == contender) & (trials[axis] == point)
    values: np.ndarray = trials.loc[chosen, metric].dropna().to_numpy()
    return values


def _log_ratios(trials: pd.DataFrame, challenger: str, baseline: str, axis: str, point: int, metric: str) -> np.ndarray:
    """log(challenger / baseline) in every block (repetition) of POINT where both ran."""
    here = trials[trials[axis] == point]
    c = here[here["contender"] == challenger].set_index("repetition")[metric].dropna()
    b = here[here["contender"] == baseline].set_index("repetition")[metric].dropna()
    both = c.index.intersection(b.index)
    ratios: np.ndarray = np.log(c[both].to_numpy(dtype=float) / b[both].to_numpy(dtype=float))
    return ratios


def _resampled_means(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = len(values)
    expanded = values.mean() + (values - values.mean()) * np.sqrt(n / (n - 1))
    means: np.ndarray = expanded[rng.integers(0, n, size=(n_resamples, n))].mean(axis=1)
    return means


def curve_advantages(
    trials: pd.DataFrame, challenger: str, baseline: str, metric: str, axis: str, points: Iterable[int]
) -> list[np.ndarray]:
    """Per point of a curve (TRIALS already narrowed to it), the direction-aware log ratios of its blocks."""
    ok = with_contenders(trials[trials["status"] == "ok"])
    sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
    return [sign * _log_ratios(ok, challenger, baseline, axis, point, metric) for point in points]
