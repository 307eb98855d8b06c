"""Where the CPU goes: a sweep's sampled profile (copylab.programs.profile_reader, stored as profile.csv) summed
over trials into shares by category of function.

A share is samples of a category over all samples of its group: the trials of one configuration pooled, so that a
trial counts in proportion to its samples (each window is about as long as the next).  cpu-clock samples at a
fixed rate of CPU time, so samples divided by the rate are CPU seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from copylab.declarations.profiling.categories import CATEGORY_NAMES


def with_trials(profile: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """PROFILE's rows of the trials of TRIALS, with each trial's configuration."""
    keys = ["trial_id", "implementation", "workload", "size_bytes", "threads", "pinning", "receive", "layout"]
    return profile.merge(trials[keys], on="trial_id", how="inner")


def shares(profile: pd.DataFrame, trials: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Samples per group of BY (columns of trials.csv, and "side") and category, and the category's share of the
    group's samples; every category of the declared table in every group, 0 where none was sampled."""
    rows = with_trials(profile, trials)
    groups = list(by)
    counts = rows.groupby([*groups, "category"])["samples"].sum().unstack("category", fill_value=0)
    counts = counts.reindex(columns=list(CATEGORY_NAMES), fill_value=0)
    long = counts.stack().rename("samples").reset_index()
    totals = long.groupby(groups)["samples"].transform("sum")
    long["share"] = long["samples"] / totals.where(totals > 0)
    return long


def share_of(profile: pd.DataFrame, trials: pd.DataFrame, categories: Sequence[str]) -> float:
    """The share of every sample of TRIALS' windows that CATEGORIES took, every side counted; NaN without samples."""
    rows = with_trials(profile, trials)
    total = rows["samples"].sum()
    return float(rows[rows["category"].isin(categories)]["samples"].sum() / total) if total else float("nan")


def unsampled(profile: pd.DataFrame, trials: pd.DataFrame) -> list[str]:
    """The ok trials of TRIALS the profile has no row of."""
    return sorted(set(trials["trial_id"]) - set(profile["trial_id"]))
