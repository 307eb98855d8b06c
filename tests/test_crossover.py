"""Crossover detection along message size, against synthetic sweeps with a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from copylab.analysis.crossover import (
    classify,
    crossover_interval,
    find_crossovers,
    first_significant_point,
    last_upcrossing,
)
from copylab.analysis.stats import compare
from copylab.declarations.metrics import add_metrics
from copylab.record import tables
from tests.synthetic import SIZES, make_trials

PAIR = [("one_copy", "two_copy")]


def _crossover(shape: float | str, seed: int, metric: str = "throughput_gbps", **kwargs) -> pd.Series:
    frame = add_metrics(
        make_trials(
            implementations=("two_copy", "one_copy"),
            workloads=("stream",),
            threads=(1,),
            shapes={"one_copy": shape},
            seed=seed,
            **kwargs,
        )
    )
    if metric == "latency_mean_us":  # a "lower is better" view of the same curves: equal exactly where throughput is
        frame[metric] = 100 / frame["throughput_gbps"]
    comparisons = compare(frame, PAIR, [metric])
    crossovers = find_crossovers(frame, comparisons, PAIR, [metric], n_resamples=1000, seed=seed)
    assert tuple(crossovers.columns) == tuple(tables.CROSSOVERS) and len(crossovers) == 1
    return crossovers.iloc[0]


def test_interval_covers_a_known_crossover_in_at_least_90_percent_of_replications():
    truth = 2**12.5  # between the tested 4 KiB and 8 KiB
    rows = [_crossover(truth, seed) for seed in range(50)]
    assert all(row["status"] == "crossover" for row in rows)
    covered = sum(row["ci_low"] <= truth <= row["ci_high"] for row in rows)
    assert covered >= 45, f"nominal 95% interval covered the truth in {covered}/50 replications"
    widths = [np.log2(row["ci_high"] / row["ci_low"]) for row in rows]
    assert np.median(widths) < 1.0  # informative: narrower than one doubling of the size
    errors = [abs(np.log2(row["crossover_at"] / truth)) for row in rows]
    assert np.median(errors) < 0.15


def test_crossover_of_a_lower_is_better_metric():
    truth = 2**12.5
    row = _crossover(truth, seed=3, metric="latency_mean_us")
    assert row["status"] == "crossover"
    assert row["ci_low"] <= truth <= row["ci_high"]
    assert truth < row["first_significant_at"] <= 32768


def test_never_overtakes():
    row = _crossover("worse", seed=1)
    assert row["status"] == "challenger_never_better"
    assert row[["crossover_at", "ci_low", "ci_high"]].isna().all() and pd.isna(row["first_significant_at"])


def test_always_better():
    row = _crossover("better", seed=1)
    assert row["status"] == "challenger_always_better"
    assert row["first_significant_at"] == SIZES[0]
    assert pd.isna(row["crossover_at"])


def test_identical_noisy_curves_are_indistinguishable():
    statuses = [_crossover("same", seed, noise_cv=0.05)["status"] for seed in range(10)]
    # Holm keeps the family-wise error of one curve at 5%, so at most a rare replication may differ
    assert statuses.count("indistinguishable") >= 9, statuses


def test_crossovers_are_reproducible_with_a_seed():
    first, second = _crossover(2**11.3, seed=7), _crossover(2**11.3, seed=7)
    pd.testing.assert_series_equal(first, second)


@pytest.mark.parametrize(
    ("labels", "status"),
    [
        ("000", "indistinguishable"),
        ("W0W", "challenger_never_better"),
        ("0BB", "challenger_always_better"),
        ("WW00BB", "crossover"),
        ("WBW", "multiple_crossings"),
        ("BBW", "multiple_crossings"),  # better only at small sizes is not a worse-to-better crossover
        ("W0B0W0B", "multiple_crossings"),
    ],
)
def test_classify(labels, status):
    assert classify(list(labels)) == status


def test_first_significant_point():
    sizes = np.array([64, 128, 256, 512, 1024])
    assert first_significant_point(sizes, list("WB0BB")) == 512
    assert first_significant_point(sizes, list("BBBBB")) == 64
    assert np.isnan(first_significant_point(sizes, list("BBBB0")))


def test_last_upcrossing_interpolates_on_the_log_axis_and_flags_the_rest():
    x = np.array([10.0, 11.0, 12.0, 13.0])
    roots = last_upcrossing(x, np.array([[-1.0, 3.0, 4.0, 5.0], [-1, 1, -1, 3], [1, 2, 3, 4], [-1, -2, 1, -1]]))
    assert roots[0] == 10.25  # -1 -> 3: a quarter of the way
    assert roots[1] == 12.25  # the last of several up-crossings
    assert roots[2] == -np.inf  # better everywhere: the change lies below the first size
    assert roots[3] == pytest.approx(11 + 2 / 3)  # the up-crossing, although it falls back again


def test_interval_is_censored_at_the_bracket_never_outside_the_tested_sizes():
    rng = np.random.default_rng(0)
    sizes = np.array([1024, 2048])
    # at 1 KiB the challenger is barely worse with a lot of spread: many resamples see it better already
    challenger = [np.array([8.0, 12.0, 9.5, 10.3]), np.array([12.1, 12.0, 11.9, 12.2])]
    baseline = [np.array([10.0, 10.1, 9.9, 10.0]), np.array([10.0, 10.1, 9.9, 10.0])]
    size, low, high = crossover_interval(challenger, baseline, sizes, 1.0, 0.95, 2000, rng)
    assert low == 1024 and 1024 < size < high < 2048
