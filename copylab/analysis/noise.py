"""What explains the spread between identical trials: the covariates each trial records, and its block.

Within every configuration with enough trials, the headline metric's logarithm and each covariate's are
centred on the configuration's mean; pooled over configurations, the squared correlation of the two is the
share of the spread between identical trials that the covariate explains (log scales: these effects multiply).
The block's share is the intraclass correlation of those centred values within blocks of contenders run back to
back (a blocked design; one-way random effects, ICC(1)): what pairing within blocks removes from a comparison,
and, by its complement, what it cannot.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from copylab.declarations.metrics import METRICS, headline
from copylab.record.tables import CONFIG_KEYS, POINT_KEYS

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


def spread_explained(trials: pd.DataFrame, experiment: str, workload: str) -> list[Explained]:
    """Per covariate (and the block), the share of the spread of WORKLOAD's headline metric between identical
    trials it explains, largest first.  TRIALS carry copylab.declarations.metrics' columns."""
    metric = headline(experiment, workload)
    if (
        metric is None or metric not in trials or "experiment" not in trials
    ):  # trials without copylab.declarations.metrics' columns
        return []
    mine = trials[(trials["workload"] == workload) & (trials["experiment"] == experiment)]
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
