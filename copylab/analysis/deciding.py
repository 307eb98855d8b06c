"""What a budgeted sweep's deciding comparisons say so far, read as its allocator needs them
(copylab.measure.planning.allocation): per deciding pair, the points compared and the model of each of its curves.

A deciding comparison is one of the experiment's deciding pairs on its metric and workload, compared paired within
blocks along the experiment's axis (copylab.analysis.stats.compare).  Each curve is assessed as the report assesses it
(copylab.analysis.curve_model.assess), with fewer resamples: the allocator looks again after every round.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from copylab.analysis.crossover import curve_advantages
from copylab.analysis.curve_model import Assessment, assess
from copylab.analysis.stats import compare, curve_keys
from copylab.declarations.metrics import add_metrics
from copylab.vocabulary.experiment import Experiment

# The resamples of the allocator's look at a curve (the report's verdicts take assess's default).
RESAMPLES = 100


class Curve(NamedTuple):
    """One curve: its points along the axis, the model's assessment (None: too little to fit a model to), and at
    each point of the model's fit the half width of the curve's band; FIRST: the comparison row of its first point
    (its settings besides the axis)."""

    points: np.ndarray
    found: Assessment | None
    half_band: np.ndarray
    first: pd.Series | None = None


def curve_of(points: np.ndarray, advantages: list[np.ndarray], seed: int, first: pd.Series | None = None) -> Curve:
    """The curve whose blocks at POINTS[i] have the direction-aware log ratios ADVANTAGES[i], its model drawn from
    SEED."""
    found = assess(points, advantages, seed, n_resamples=RESAMPLES)
    if found is None:
        return Curve(points, None, np.empty(0), first)
    _, half = found.fit.band(np.log2(found.fit.points))
    return Curve(points, found, half, first)


class Deciding(NamedTuple):
    """One deciding pair: its rows of the comparisons (the points compared so far) and its curves."""

    comparisons: pd.DataFrame
    curves: list[Curve]


def deciding(
    ok_rows: pd.DataFrame, experiment: Experiment, pairs: list[tuple[str, str]], confidence: float, seed: int
) -> dict[tuple[str, str], Deciding]:
    """Per (challenger, baseline) of PAIRS, what the trials OK_ROWS say of it on EXPERIMENT's metric, workload and
    axis; every curve's model draws from SEED."""
    comparisons = (
        compare(add_metrics(ok_rows), pairs, [experiment.metric], confidence, experiment.axis, paired=True)
        if len(ok_rows)
        else pd.DataFrame(columns=["workload", "challenger", "baseline"])
    )
    comparisons = comparisons[comparisons["workload"] == experiment.workload]
    keys_of = curve_keys(experiment.axis)
    found = {}
    for challenger, baseline in pairs:
        mine = comparisons[(comparisons["challenger"] == challenger) & (comparisons["baseline"] == baseline)]
        curves = []
        for keys, group in mine.groupby(keys_of):
            group = group.sort_values(experiment.axis)
            trials = add_metrics(ok_rows.loc[(ok_rows[keys_of] == list(keys)).all(axis=1)])
            points = group[experiment.axis].to_numpy()
            advantages = curve_advantages(trials, challenger, baseline, experiment.metric, experiment.axis, points)
            curves.append(curve_of(points, advantages, seed, group.iloc[0]))
        found[challenger, baseline] = Deciding(mine, curves)
    return found
