"""Per-configuration summaries (summary.csv) and challenger-vs-baseline comparisons (comparisons.csv)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as st

from copylab.declarations.implementations import contender
from copylab.declarations.metrics import METRICS
from copylab.error_catalogue import METRICS_NOT_ADDED, UNKNOWN_CI_METHOD, UNKNOWN_METRICS
from copylab.record import tables
from copylab.record.tables import CONFIG_KEYS, CONTENDER_KEYS, POINT_KEYS

# A configuration whose mean is not known to within this share (95% interval's half-width) is flagged unstable.
IMPRECISE = 0.10
MIN_TRIALS = 3
# The settings a curve runs along: the experiments' axes (copylab.vocabulary.experiment.Experiment.axis).
AXES = ("size_bytes", "connections")


def curve_keys(axis: str) -> list[str]:
    """The settings that stay fixed along one curve of AXIS: a curve is every point that differs only there."""
    if axis not in AXES:
        raise ValueError(f"unknown axis {axis!r}")
    return [key for key in POINT_KEYS if key != axis]


def bootstrap_interval(
    values: np.ndarray, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """BCa bootstrap confidence interval of the mean (scipy.stats.bootstrap); NaN with fewer than two values."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return np.nan, np.nan
    if np.ptp(values) == 0:
        return float(values[0]), float(values[0])
    result = st.bootstrap(
        (values,), np.mean, confidence_level=confidence, n_resamples=n_resamples, rng=np.random.default_rng(seed)
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values; NaN entries stay NaN and do not count as tests."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    m = len(order)
    scaled = p[order] * (m - np.arange(m))
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def fieller(
    mean_c: np.ndarray,
    var_c: np.ndarray,
    n_c: np.ndarray,
    mean_b: np.ndarray,
    var_b: np.ndarray,
    n_b: np.ndarray,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratio of independent means mean_c/mean_b with Fieller's confidence interval (arrays; var = sample variance).

    The interval is the set of rho with |m_c - rho m_b| <= t sqrt(v_c + rho^2 v_b),
    v = var/n, t taken at the Welch-Satterthwaite degrees of freedom evaluated
    at the point estimate.  When the baseline mean is not clearly away from
    zero the set is unbounded and both bounds are NaN; a zero baseline mean
    makes the ratio NaN too.
    """
    m_c, m_b = np.asarray(mean_c, dtype=float), np.asarray(mean_b, dtype=float)
    v_c, v_b = np.asarray(var_c, dtype=float) / n_c, np.asarray(var_b, dtype=float) / n_b
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(m_b != 0, m_c / m_b, np.nan)
        v_b_scaled = ratio**2 * v_b
        dof = (v_c + v_b_scaled) ** 2 / (v_c**2 / (np.asarray(n_c) - 1) + v_b_scaled**2 / (np.asarray(n_b) - 1))
        t = st.t.ppf((1 + confidence) / 2, dof)
        a = m_b**2 - t**2 * v_b
        half = np.sqrt((m_c * m_b) ** 2 - a * (m_c**2 - t**2 * v_c))
        low, high = (m_c * m_b - half) / a, (m_c * m_b + half) / a
    exact = (v_c + v_b_scaled) == 0
    low = np.where(exact, ratio, np.where(a > 0, low, np.nan))
    high = np.where(exact, ratio, np.where(a > 0, high, np.nan))
    return ratio, low, high


def describe(trials: pd.DataFrame, metrics: Iterable[str]) -> pd.DataFrame:
    """n, mean and sample std of every measured metric of the ok trials, per configuration and metric."""
    grouped = _long(trials, _metrics(trials, metrics)).groupby([*CONFIG_KEYS, "metric"], sort=True)["value"]
    return grouped.agg(n="count", mean="mean", std="std").reset_index()


def summarize(
    trials: pd.DataFrame,
    metrics: Iterable[str],
    confidence: float = 0.95,
    ci: str = "t",
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One summary.csv row per configuration and metric.

    TRIALS must carry the METRICS columns (copylab.declarations.metrics.add_metrics).  Only
    ok trials with a measured value count in n; failed trials of the
    configuration are counted in n_failed (and excluded).  A metric gets rows
    only for the implementation/workload pairs where some ok trial measured
    it, so an unmeasured counter yields no rows rather than zeros, while a
    configuration whose trials all failed still gets its rows (n = 0).  ci is
    "t" (Student-t) or "bootstrap" (BCa, seeded).  cv = std/|mean| (0 when
    std is 0); unstable means the interval's half-width exceeds IMPRECISE of |mean|, or n < 3: its mean is not
    known well enough yet, which more trials mend (a spread between trials that more trials would not shrink
    is what cv says).
    """
    if ci not in ("t", "bootstrap"):
        raise UNKNOWN_CI_METHOD.error(method=ci)
    metrics = _metrics(trials, metrics)
    stats = describe(trials, metrics)
    configs = trials[list(CONFIG_KEYS)].drop_duplicates()
    measured = stats[["implementation", "workload", "metric"]].drop_duplicates()
    failed = trials[trials["status"] != "ok"].groupby(list(CONFIG_KEYS)).size().rename("n_failed").reset_index()
    summary = (
        configs.merge(measured, on=["implementation", "workload"])
        .merge(stats, on=[*CONFIG_KEYS, "metric"], how="left")
        .merge(failed, on=list(CONFIG_KEYS), how="left")
    )
    summary["n"] = summary["n"].fillna(0).astype("int64")
    summary["n_failed"] = summary["n_failed"].fillna(0).astype("int64")
    with np.errstate(divide="ignore", invalid="ignore"):
        summary["cv"] = np.where(summary["std"] == 0, 0.0, summary["std"] / summary["mean"].abs())
    if ci == "t":
        half = _t_half_width(summary["std"].to_numpy(), summary["n"].to_numpy(), confidence)
        summary["ci_low"], summary["ci_high"] = summary["mean"] - half, summary["mean"] + half
    else:
        groups = _long(trials, metrics).groupby([*CONFIG_KEYS, "metric"])["value"]
        values = {key: group.to_numpy() for key, group in groups}
        keys = summary[[*CONFIG_KEYS, "metric"]].itertuples(index=False, name=None)
        bounds = [bootstrap_interval(values.get(key, []), confidence, n_resamples, seed) for key in keys]
        summary["ci_low"], summary["ci_high"] = [b[0] for b in bounds], [b[1] for b in bounds]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = (summary["ci_high"] - summary["ci_low"]) / 2 / summary["mean"].abs()
    summary["unstable"] = (relative > IMPRECISE) | (summary["n"] < MIN_TRIALS)
    order = {m: i for i, m in enumerate(metrics)}
    summary = summary.sort_values([*CONFIG_KEYS, "metric"], key=lambda s: s.map(order) if s.name == "metric" else s)
    return tables.typed("summary", summary.reset_index(drop=True))


def compare(
    trials: pd.DataFrame,
    pairs: Iterable[tuple[str, str]],
    metrics: Iterable[str],
    confidence: float = 0.95,
    axis: str = "size_bytes",
    paired: bool = False,
) -> pd.DataFrame:
    """One comparisons.csv row per point (workload, size, threads, connections, pinning), metric and
    (challenger, baseline) pair present in the data.

    A point is compared when both sides have at least two measured ok trials
    there.  A curve is every point that differs only along AXIS (size_bytes or
    connections).  Unpaired (a fully randomised design): ratio = challenger
    mean / baseline mean with Fieller's interval (see fieller), p_value from
    Welch's two-sided t-test.  PAIRED (a blocked design, whose trials of one
    block share their repetition number): where both sides have at least two
    blocks in common and every value is positive, the ratio is the geometric
    mean of the within-block ratios with the t interval of their logarithms,
    and p_value the paired t-test's (see paired_ratios); elsewhere the
    unpaired analysis stands, and the method column says which was used.
    p_holm: Holm-adjusted over the points of one curve; significant: p_holm <
    1 - confidence.  challenger_better is the direction-aware point estimate
    (higher for "higher" metrics, lower for "lower"), significant or not.
    """
    metrics = [metric for metric in _metrics(trials, metrics) if METRICS[metric].direction]
    stats = with_contenders(describe(trials, metrics))
    stats = stats[stats["n"] >= 2]
    keys = [*POINT_KEYS, "metric"]
    pairs = list(pairs)
    frames = []
    for challenger, baseline in pairs:
        c = stats[stats["contender"] == challenger].drop(columns=[*CONTENDER_KEYS, "contender"])
        b = stats[stats["contender"] == baseline].drop(columns=[*CONTENDER_KEYS, "contender"])
        frames.append(c.merge(b, on=keys, suffixes=("_c", "_b")).assign(challenger=challenger, baseline=baseline))
    merged = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if merged.empty:
        return tables.empty("comparisons")
    m_c, s_c, n_c = merged["mean_c"].to_numpy(), merged["std_c"].to_numpy(), merged["n_c"].to_numpy()
    m_b, s_b, n_b = merged["mean_b"].to_numpy(), merged["std_b"].to_numpy(), merged["n_b"].to_numpy()
    ratio = fieller(m_c, s_c**2, n_c, m_b, s_b**2, n_b, confidence)
    merged["ratio"], merged["ratio_ci_low"], merged["ratio_ci_high"] = ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        merged["p_value"] = st.ttest_ind_from_stats(m_c, s_c, n_c, m_b, s_b, n_b, equal_var=False).pvalue
    higher = merged["metric"].map(lambda m: METRICS[m].direction == "higher").to_numpy(dtype=bool)
    merged["challenger_better"] = np.where(higher, m_c > m_b, m_c < m_b)
    merged["method"] = "unpaired"
    merged["n_pairs"] = pd.array([pd.NA] * len(merged), dtype="Int64")
    if paired:
        merged = _paired(merged, paired_ratios(trials, pairs, metrics, confidence), keys, higher)
    curve = [*curve_keys(axis), "metric", "challenger", "baseline"]
    merged["p_holm"] = merged.groupby(curve)["p_value"].transform(holm)
    merged["significant"] = merged["p_holm"] < 1 - confidence
    order = {m: i for i, m in enumerate(metrics)}
    merged = merged.sort_values(
        [*curve_keys(axis), "metric", "challenger", "baseline", axis],
        key=lambda s: s.map(order) if s.name == "metric" else s,
    )
    return tables.typed("comparisons", merged.reset_index(drop=True))


def block_ratios(trials: pd.DataFrame, pairs: Iterable[tuple[str, str]], metrics: list[str]) -> pd.DataFrame:
    """Per point, pair, metric and block (repetition) that both contenders ran in: value_c and value_b."""
    ok = with_contenders(trials[trials["status"] == "ok"])
    long = ok.melt(id_vars=[*POINT_KEYS, "contender", "repetition"], value_vars=metrics, var_name="metric")
    long = long.dropna(subset=["value"])
    frames = []
    for challenger, baseline in pairs:
        c = long[long["contender"] == challenger].drop(columns="contender")
        b = long[long["contender"] == baseline].drop(columns="contender")
        both = c.merge(b, on=[*POINT_KEYS, "repetition", "metric"], suffixes=("_c", "_b"))
        frames.append(both.assign(challenger=challenger, baseline=baseline))
    columns = [*POINT_KEYS, "repetition", "metric", "value_c", "value_b", "challenger", "baseline"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def paired_ratios(
    trials: pd.DataFrame, pairs: Iterable[tuple[str, str]], metrics: list[str], confidence: float = 0.95
) -> pd.DataFrame:
    """The paired analysis of a blocked design, per point, metric and pair with two blocks or more in common and
    only positive values: the geometric mean ratio of the within-block ratios, the t interval of their mean
    logarithm, and the paired t-test's p-value.

    Why the logarithm of within-block ratios: what varies between blocks on these hosts (the speed the host
    gives the guest, the cache and memory it leaves it) scales a trial's result, so a block multiplies both
    contenders by the same factor and their ratio cancels it.  On the log scale that is a random block effect
    added to both; for two contenders the mixed model with the block as a random effect then estimates the
    contender effect by the mean within-block log ratio with exactly this t interval (the paired t-test).  A
    bootstrap over blocks would need more blocks than a sweep runs (its percentile interval is too narrow with
    fewer than about ten).
    """
    blocks = block_ratios(trials, pairs, metrics)
    keys = [*POINT_KEYS, "metric", "challenger", "baseline"]
    if blocks.empty:
        return pd.DataFrame(columns=[*keys, "n_pairs", "ratio", "ratio_ci_low", "ratio_ci_high", "p_value"])
    blocks["positive"] = (blocks["value_c"] > 0) & (blocks["value_b"] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        blocks["log_ratio"] = np.log(blocks["value_c"] / blocks["value_b"])
    grouped = blocks.groupby(keys, sort=False).agg(
        n_pairs=("log_ratio", "size"), positive=("positive", "all"), mean=("log_ratio", "mean"), sd=("log_ratio", "std")
    )
    grouped = grouped[(grouped["n_pairs"] >= 2) & grouped["positive"]].reset_index()
    n = grouped["n_pairs"].to_numpy(dtype=float)
    mean, sd = grouped["mean"].to_numpy(), grouped["sd"].to_numpy()
    se = sd / np.sqrt(n)
    half = st.t.ppf((1 + confidence) / 2, n - 1) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(se > 0, 2 * st.t.sf(np.abs(mean / se), n - 1), np.where(mean == 0, 1.0, 0.0))
    return grouped.assign(
        ratio=np.exp(mean), ratio_ci_low=np.exp(mean - half), ratio_ci_high=np.exp(mean + half), p_value=p
    )[[*keys, "n_pairs", "ratio", "ratio_ci_low", "ratio_ci_high", "p_value"]]


def _paired(merged: pd.DataFrame, paired: pd.DataFrame, keys: list[str], higher: np.ndarray) -> pd.DataFrame:
    """MERGED with the paired estimates where PAIRED has them."""
    on = [*keys, "challenger", "baseline"]
    joined = merged.merge(paired, on=on, how="left", suffixes=("", "_paired"))
    use = joined["n_pairs_paired"].notna().to_numpy()
    for column in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value"):
        joined[column] = np.where(use, joined[f"{column}_paired"], joined[column])
    joined["n_pairs"] = joined["n_pairs_paired"].astype("Int64")
    joined["method"] = np.where(use, "paired", "unpaired")
    better = np.where(higher, joined["ratio"] > 1, joined["ratio"] < 1)
    joined["challenger_better"] = np.where(use, better, joined["challenger_better"])
    return joined.drop(columns=[c for c in joined.columns if c.endswith("_paired")])


def with_contenders(frame: pd.DataFrame) -> pd.DataFrame:
    """FRAME with a column naming each row's contender: its implementation with its receive mode and layout."""
    names = [contender(*keys) for keys in zip(*(frame[key] for key in CONTENDER_KEYS), strict=True)]
    return frame.assign(contender=pd.Series(names, index=frame.index, dtype="str"))


def trials_for_precision(cv: float, target: float = IMPRECISE, confidence: float = 0.95, cap: int = 1000) -> int:
    """How many trials a configuration whose trials spread by CV (std/|mean|) needs for its interval's half-width
    to be within TARGET of its mean (at least MIN_TRIALS; CAP where even that many would not do)."""
    counts = np.arange(MIN_TRIALS, cap)
    enough = _t_half_width(np.full(len(counts), cv), counts, confidence) <= target
    return int(counts[enough.argmax()]) if enough.any() else cap


def _t_half_width(std: np.ndarray, n: np.ndarray, confidence: float) -> np.ndarray:
    """Half width of the Student-t interval of a mean: 0 when std is 0, NaN when n < 2."""
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = st.t.ppf((1 + confidence) / 2, n - 1) * std / np.sqrt(n)
    return np.where(n < 2, np.nan, np.where(std == 0, 0.0, half))


def _long(trials: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    """Measured values of the ok trials, one row per configuration, metric and trial."""
    ok = trials[trials["status"] == "ok"]
    return ok.melt(id_vars=list(CONFIG_KEYS), value_vars=metrics, var_name="metric").dropna(subset=["value"])


def _metrics(trials: pd.DataFrame, metrics: Iterable[str]) -> list[str]:
    """METRICS as a list; an unknown or uncomputed one is an error."""
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise UNKNOWN_METRICS.error(names=", ".join(unknown), known=", ".join(METRICS))
    absent = [m for m in metrics if m not in trials.columns]
    if absent:
        raise METRICS_NOT_ADDED.error(names=", ".join(absent))
    return metrics
