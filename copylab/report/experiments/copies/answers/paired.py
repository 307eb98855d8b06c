"""Differences and ratios paired by block, for the sweeps that answer questions 2 and 3: a blocked design runs the
r-th block of every point in the same round, so two configurations' r-th trials ran minutes apart at most, under
the same state of the host (copylab.measure.planning.schedule), and their difference or ratio cancels what drifted
between rounds (copylab.analysis.stats.paired_ratios argues the same for contenders within a block)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from copylab.declarations.metrics import add_metrics

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean of paired values with its 95% t interval, over N pairs."""

    mean: float
    low: float
    high: float
    n: int

    def above(self, other: Interval) -> bool:
        """Whether this interval lies wholly above OTHER."""
        return self.low > other.high


def interval(values: np.ndarray | pd.Series) -> Interval | None:
    """The mean of VALUES and its t interval; None with fewer than two values."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return None
    mean = float(values.mean())
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values)))
    return Interval(mean, mean - half, mean + half, len(values))


def ok_rows(trials: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The ok stream trials of TRIALS with METRIC computed per trial."""
    ok = trials[(trials["status"] == "ok") & (trials["workload"] == "stream")]
    return add_metrics(ok) if metric not in ok.columns else ok


def by_block(trials: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    """METRIC per trial, one column per value of KEYS' last key, one row per block (the other KEYS and the
    repetition): what a paired comparison lines up."""
    rows = ok_rows(trials, metric)
    return rows.pivot_table(index=[*keys[:-1], "repetition"], columns=keys[-1], values=metric, aggfunc="mean")


def difference(higher: np.ndarray | pd.Series, lower: np.ndarray | pd.Series) -> Interval | None:
    """HIGHER's mean minus LOWER's with Welch's 95% t interval (two independent groups of values); None when either
    has fewer than two values."""
    a, b = (np.asarray(values, dtype=float) for values in (higher, lower))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    mean = float(a.mean() - b.mean())
    if va + vb == 0:
        return Interval(mean, mean, mean, len(a) + len(b))
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, dof) * np.sqrt(va + vb))
    return Interval(mean, mean - half, mean + half, len(a) + len(b))
