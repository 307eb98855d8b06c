"""Where along an experiment's axis a challenger starts to beat its baseline (crossovers.csv).

The axis is message size for the copies experiment and the number of
connections for the servers experiment; "size" below is a point on it.  For
one curve (the other settings, metric, challenger, baseline) every tested
point is labelled from comparisons.csv: B (challenger significantly better,
Holm-corrected), W (significantly worse) or 0 (not significant).  Ignoring
the 0s, the run-collapsed sequence of labels gives the status:

    no label            indistinguishable
    W                   challenger_never_better   (never significantly better)
    B                   challenger_always_better  (never significantly worse)
    W then B            crossover
    anything else       multiple_crossings        (no single worse-to-better change,
                                                   e.g. better at small sizes only)

Only a crossover gets a point (crossover_at): inside the bracket from the last
W point to the first B point, where the direction-aware difference of means
last changes sign from <= 0 to > 0, linearly interpolated on a log2 axis.  The
bracket lies inside the tested range, so no crossover is ever placed outside it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as st

from copylab.analysis.stats import holm, with_contenders
from copylab.declarations.metrics import METRICS
from copylab.record import tables
from copylab.record.tables import curve_keys

STATUSES = (
    "crossover",
    "challenger_always_better",
    "challenger_never_better",
    "indistinguishable",
    "multiple_crossings",
)


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


def last_upcrossing(log_sizes: np.ndarray, differences: np.ndarray) -> np.ndarray:
    """Log2 size of the last <=0 -> >0 sign change of each row of DIFFERENCES (rows x sizes).

    Linear interpolation between the two bracketing sizes.  A row without such a
    change gives -inf when it is > 0 at every size (the change lies below the
    first size) and +inf otherwise (not better by the last size).
    """
    differences = np.atleast_2d(differences)
    better = differences > 0
    up = ~better[:, :-1] & better[:, 1:]
    found = up.any(axis=1)
    j = up.shape[1] - 1 - np.argmax(up[:, ::-1], axis=1)
    rows = np.arange(len(differences))
    d0, d1 = differences[rows, j], differences[rows, j + 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        root = log_sizes[j] + (0 - d0) * (log_sizes[j + 1] - log_sizes[j]) / (d1 - d0)
    beyond = np.where(better.all(axis=1), -np.inf, np.inf)
    return np.where(found, root, beyond)


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
    """One crossovers.csv row per curve of COMPARISONS along AXIS with at least two compared points.

    Where every point of a crossover's bracket was compared paired (comparisons.csv's method), its interval
    resamples blocks (paired_crossover_interval); otherwise trials (crossover_interval).

    TRIALS are the metric-augmented trials COMPARISONS came from
    (copylab.analysis.stats.compare at the same confidence and axis).  Every curve draws
    from its own generator seeded by SEED and the curve's name, so results do
    not depend on which other curves are analysed.
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
        sizes = group[axis].to_numpy()
        status = classify(labels)
        size = low = high = np.nan
        if status == "crossover":
            lo = max(i for i, label in enumerate(labels) if label == "W")
            hi = min(i for i, label in enumerate(labels) if label == "B")
            bracket = sizes[lo : hi + 1]
            settings = dict(zip(fixed, curve, strict=False))
            metric, challenger, baseline = curve[len(fixed) :]
            here = ok[(ok[fixed] == pd.Series(settings)).all(axis=1)]
            sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
            rng = np.random.default_rng([seed, zlib.crc32("/".join(map(str, curve)).encode())])
            if (group["method"].iloc[lo : hi + 1] == "paired").all():
                advantages = [sign * _log_ratios(here, challenger, baseline, axis, point, metric) for point in bracket]
                size, low, high = paired_crossover_interval(advantages, bracket, confidence, n_resamples, rng)
            else:
                values = {
                    name: [_values(here, name, axis, point, metric) for point in bracket]
                    for name in (challenger, baseline)
                }
                size, low, high = crossover_interval(
                    values[challenger], values[baseline], bracket, sign, confidence, n_resamples, rng
                )
        row = {"axis": axis, axis: pd.NA, **dict(zip(curve_columns, curve, strict=True))}
        rows.append(
            {
                **row,
                "status": status,
                "crossover_at": size,
                "ci_low": low,
                "ci_high": high,
                "first_significant_at": first_significant_point(sizes, labels),
            }
        )
    frame = pd.DataFrame(rows, columns=list(tables.CROSSOVERS))
    return tables.typed("crossovers", frame) if rows else tables.empty("crossovers")


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


# A verdict that a fresh draw of the blocks reproduces less often than this is not settled (the report says so, and a
# budget gives its curve more blocks).
SETTLED = 0.8


def _labels_by_draw(draws: list[np.ndarray], confidence: float) -> list[list[str]]:
    """The curve's labels in each draw of its blocks: DRAWS[i] holds, a row per draw, the log ratios of the blocks of
    its i-th point; a label is B, W or 0 by the paired t-test of those blocks, Holm-corrected over the curve."""
    means, p_values = [], []
    for drawn in draws:
        n = drawn.shape[1]
        mean, sd = drawn.mean(axis=1), drawn.std(axis=1, ddof=1) if n > 1 else np.zeros(len(drawn))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(mean) / (sd / np.sqrt(n))
        means.append(mean)
        p_values.append(np.where(sd > 0, 2 * st.t.sf(t, n - 1), np.where(mean != 0, 0.0, 1.0)))
    return [
        [("B" if m > 0 else "W") if s else "0" for m, s in zip(mean, holm(p) < 1 - confidence, strict=True)]
        for mean, p in zip(np.column_stack(means), np.column_stack(p_values), strict=True)
    ]


def _redrawn(advantages: list[np.ndarray], n_resamples: int, seed: int) -> list[np.ndarray]:
    """N_RESAMPLES redraws of the curve's blocks: every point's drawn anew with replacement."""
    rng = np.random.default_rng(seed)
    return [values[rng.integers(0, len(values), (n_resamples, len(values)))] for values in advantages]


def verdict_stability(
    advantages: list[np.ndarray], status: str, confidence: float = 0.95, n_resamples: int = 400, seed: int = 0
) -> float:
    """How often the curve's status comes out again when its blocks are drawn anew: ADVANTAGES[i] holds the
    direction-aware log ratios of the blocks at the curve's i-th point; each resample draws every point's blocks
    with replacement and repeats the paired t-tests, the Holm correction and classify.  The share of resamples
    with STATUS estimates how likely a second run of the same design is to reach the same verdict."""
    redrawn = _labels_by_draw(_redrawn(advantages, n_resamples, seed), confidence)
    return sum(classify(labels) == status for labels in redrawn) / n_resamples


@dataclass(frozen=True)
class Redraws:
    """What redrawing a curve's blocks says of its measured verdict (see verdict_stability)."""

    status: str  # the measured verdict
    stability: float  # the share of redraws that give it again
    # Per point, the share of the redraws that change the verdict in which that point's label differs from the
    # measured one: where more blocks would most steady the verdict.
    movers: np.ndarray


def redraws(advantages: list[np.ndarray], confidence: float = 0.95, n_resamples: int = 400, seed: int = 0) -> Redraws:
    """The curve's measured verdict, how often redraws of its blocks give it again, and which points move it."""
    (measured,) = _labels_by_draw([values[np.newaxis, :] for values in advantages], confidence)
    status = classify(measured)
    redrawn = _labels_by_draw(_redrawn(advantages, n_resamples, seed), confidence)
    changed = [labels for labels in redrawn if classify(labels) != status]
    differs = np.array([[a != b for a, b in zip(labels, measured, strict=True)] for labels in changed], dtype=float)
    movers = differs.mean(axis=0) if changed else np.zeros(len(advantages))
    return Redraws(status, 1 - len(changed) / n_resamples, movers)


def curve_advantages(
    trials: pd.DataFrame, challenger: str, baseline: str, metric: str, axis: str, points: Iterable[int]
) -> list[np.ndarray]:
    """Per point of a curve (TRIALS already narrowed to it), the direction-aware log ratios of its blocks."""
    ok = with_contenders(trials[trials["status"] == "ok"])
    sign = 1.0 if METRICS[metric].direction == "higher" else -1.0
    return [sign * _log_ratios(ok, challenger, baseline, axis, point, metric) for point in points]


def blocks_to_decide(values: np.ndarray, tests: int, confidence: float = 0.95, power: float = 0.8) -> float:
    """How many blocks a point needs for its paired test to come out significant after Holm's correction over TESTS
    tests (at its strictest step) with probability POWER, if its mean log ratio and spread (VALUES, one per block)
    stay as measured: a normal-approximation sample size, never fewer than it has; infinite when the mean is 0."""
    mean, spread = abs(float(values.mean())), float(values.std(ddof=1)) if len(values) > 1 else np.inf
    if mean == 0 or not np.isfinite(spread):
        return np.inf
    if spread == 0:
        return float(len(values))
    z = st.norm.ppf(1 - (1 - confidence) / (2 * tests)) + st.norm.ppf(power)
    return float(max(len(values), np.ceil((z * spread / mean) ** 2)))
