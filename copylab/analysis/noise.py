"""What explains the spread between identical trials: the covariates each trial records, and its block; and how
far the blocks of a deciding comparison spread (block_spread), which sizes ./inv report's first pass
(copylab.study.sizing) and which the report sets beside what the method was designed for.

Within every configuration with enough trials, the headline metric's logarithm and each covariate's are
centred on the configuration's mean; pooled over configurations, the squared correlation of the two is the
share of the spread between identical trials that the covariate explains (log scales: these effects multiply).
The block's share is the intraclass correlation of those centred values within blocks of contenders run back to
back (a blocked design; one-way random effects, ICC(1)): what pairing within blocks removes from a comparison,
and, by its complement, what it cannot.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from copylab.analysis.stats import block_ratios, curve_keys
from copylab.declarations.metrics import METRICS
from copylab.record.tables import CONFIG_KEYS, POINT_KEYS
from copylab.vocabulary.experiment import Experiment

# What the method was designed for: the per-block spread (standard deviation) of log(one_copy / two_copy) with the
# quick profile's warm-up and window (0.2 s, 0.1 s), lowest and highest over the sizes docs/method.md's table gives
# (AMD EPYC development host, 2026-11-26, one thread, 10 blocks each).  A test holds the table to these two numbers.
DESIGNED_SPREAD = (0.008, 0.017)
# The verdicts' margin of no practical difference on the log scale (about 3% either way): a curve whose mean log
# ratio is known to within it can be told equivalent, better or worse.
MARGIN = 0.03
Z = 1.96  # a 95% interval's half-width in standard errors
FEWEST_BLOCKS = 2  # a point's spread needs two blocks

# Per-trial covariates that may explain the spread, and what each stands for.
COVARIATES: dict[str, str] = {
    "probe_copy_ns": "the host's copy speed around the trial (speed probe, 2 MiB copy)",
    "probe_ns": "the host's CPU speed around the trial (speed probe, dependent multiplications)",
    "rcv_wakeups_per_mb": "the receiver's wake-ups (voluntary context switches) per MB: how the ends shared a CPU",
    "rcv_bytes_per_call": "the bytes the receiver took per receive call",
    "rcv_receive_buffer_bytes": "the receive buffer the kernel had grown the receiver's connection to (a sweep "
    "with --socket-buffer 0; a fixed buffer explains nothing)",
}
MIN_TRIALS = 4


class Explained(NamedTuple):
    covariate: str
    meaning: str
    share: float  # of the within-configuration variance of log(metric)
    configurations: int
    trials: int


def _centred(trials: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The ok trials' logs of COLUMNS minus their configuration's mean, for configurations with MIN_TRIALS."""
    ok = trials[trials["status"] == "ok"].copy()
    for column in columns:
        values = ok[column].astype(float)
        ok[column] = np.log(values.where(values > 0))
    keys = list(CONFIG_KEYS)
    sizes = ok.groupby(keys)[columns[0]].transform("count")
    ok = ok[sizes >= MIN_TRIALS]
    return ok.assign(**{column: ok[column] - ok.groupby(keys)[column].transform("mean") for column in columns})


def spread_explained(trials: pd.DataFrame, experiment: Experiment, workload: str) -> list[Explained]:
    """Per covariate (and the block), the share of the spread of WORKLOAD's headline metric between identical
    trials it explains, largest first.  TRIALS carry copylab.declarations.metrics' columns."""
    metric = experiment.headline.get(workload)
    if (
        metric is None or metric not in trials or "experiment" not in trials
    ):  # trials without copylab.declarations.metrics' columns
        return []
    mine = trials[(trials["workload"] == workload) & (trials["experiment"] == experiment.name)]
    found = []
    for covariate, meaning in COVARIATES.items():
        if covariate not in mine or mine[covariate].notna().sum() < MIN_TRIALS:
            continue
        centred = _centred(mine, [metric, covariate]).dropna(subset=[metric, covariate])
        if len(centred) < MIN_TRIALS or centred[covariate].std() == 0 or centred[metric].std() == 0:
            continue
        share = float(np.corrcoef(centred[metric], centred[covariate])[0, 1] ** 2)
        configurations = centred.groupby(list(CONFIG_KEYS)).ngroups
        found.append(Explained(covariate, meaning, share, configurations, len(centred)))
    block = _block_share(mine, metric)
    if block is not None:
        found.append(block)
    return sorted(found, key=lambda item: -item.share)


def _block_share(trials: pd.DataFrame, metric: str) -> Explained | None:
    """The intraclass correlation of the centred values within blocks of two contenders or more."""
    if "block_position" not in trials or trials["block_position"].isna().all():
        return None
    centred = _centred(trials, [metric]).dropna(subset=[metric])
    block = [*POINT_KEYS, "repetition"]
    centred = centred[centred.groupby(block)[metric].transform("count") >= 2]
    groups = centred.groupby(block)[metric]
    sizes, means = groups.count().to_numpy(dtype=float), groups.mean().to_numpy()
    a, n = len(sizes), sizes.sum()
    if a < 2 or n <= a:
        return None
    grand = centred[metric].mean()
    between = float((sizes * (means - grand) ** 2).sum() / (a - 1))
    within = float(((centred[metric] - groups.transform("mean")) ** 2).sum() / (n - a))
    k0 = (n - (sizes**2).sum() / n) / (a - 1)
    icc = (between - within) / (between + (k0 - 1) * within) if between + (k0 - 1) * within > 0 else 0.0
    meaning = f"the block: what the implementations run back to back share ({METRICS[metric].label})"
    return Explained("block", meaning, float(np.clip(icc, 0, 1)), centred.groupby(list(CONFIG_KEYS)).ngroups, int(n))


class Spread(NamedTuple):
    """The per-block spread of one deciding curve: the standard deviation of the log ratio of challenger to baseline
    within a block, about its point's mean, pooled over the curve's points with two blocks or more."""

    challenger: str
    baseline: str
    curve: tuple[object, ...]  # the curve's keys (curve_keys of the axis), e.g. its threads
    spread: float
    degrees: int  # the pooled estimate's degrees of freedom: blocks less one, summed over the points
    points: int
    blocks: int


def block_spread(trials: pd.DataFrame, pairs: list[tuple[str, str]], metric: str, axis: str) -> list[Spread]:
    """Per pair of PAIRS and curve along AXIS, the per-block spread of log(challenger / baseline) on METRIC."""
    ratios = block_ratios(trials, pairs, [metric])
    ratios = ratios[(ratios["value_c"] > 0) & (ratios["value_b"] > 0)]
    if ratios.empty:
        return []
    ratios = ratios.assign(log_ratio=np.log(ratios["value_c"].astype(float) / ratios["value_b"].astype(float)))
    point = [*POINT_KEYS, "challenger", "baseline"]
    ratios = ratios.assign(
        deviation=ratios["log_ratio"] - ratios.groupby(point)["log_ratio"].transform("mean"),
        count=ratios.groupby(point)["log_ratio"].transform("count"),
    )
    ratios = ratios[ratios["count"] >= 2]
    found = []
    keys = curve_keys(axis)
    for (challenger, baseline, *curve), group in ratios.groupby(["challenger", "baseline", *keys]):
        points = group.groupby(list(POINT_KEYS)).ngroups
        degrees = len(group) - points
        spread = float(np.sqrt((group["deviation"] ** 2).sum() / degrees))
        found.append(Spread(str(challenger), str(baseline), tuple(curve), spread, degrees, points, len(group)))
    return found


def pooled(spreads: list[Spread]) -> tuple[float, int]:
    """SPREADS pooled into one spread and its degrees of freedom; (nan, 0) for none."""
    degrees = sum(item.degrees for item in spreads)
    if not degrees:
        return float("nan"), 0
    return float(np.sqrt(sum(item.spread**2 * item.degrees for item in spreads) / degrees)), degrees


def needed_blocks(spread: float, sizes: int) -> int:
    """The blocks at each of SIZES sizes that put a curve's mean log ratio within MARGIN (95%) when blocks spread by
    SPREAD: (Z x SPREAD / MARGIN)^2 blocks in all, shared by the sizes; at least FEWEST_BLOCKS, and FEWEST_BLOCKS
    where the spread is unknown."""
    if not math.isfinite(spread):
        return FEWEST_BLOCKS
    return max(FEWEST_BLOCKS, math.ceil((Z * spread / MARGIN) ** 2 / sizes))
