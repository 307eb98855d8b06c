"""The model of a whole curve (copylab.analysis.curve_model) and the allocator that spends blocks on its answers
(copylab.measure.planning.allocation), on synthetic blocks with a known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from copylab.analysis import curve_model
from copylab.analysis.crossover import classify, find_crossovers
from copylab.analysis.curve_model import EQUIVALENCE_MARGIN, assess, fit_curve, status_of
from copylab.analysis.deciding import curve_of
from copylab.analysis.stats import compare
from copylab.declarations.metrics import add_metrics
from copylab.measure.planning import allocation
from copylab.record import tables
from copylab.report import prose
from tests.synthetic import SIZES, block_log_ratios, crossing_log_ratio
from tests.test_paired import PAIR, _complete, blocks, tiny

POINTS = np.array(SIZES, dtype=float)


def _curve(truth, spread: float, n: int, seed: int, points: np.ndarray = POINTS) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [block_log_ratios(truth(size), spread, n, rng) for size in points]


def test_the_fit_is_statsmodels_wls_weighted_by_shrunk_spreads_and_the_batch_fit_agrees():
    advantages = _curve(lambda size: 0.1 * np.sin(np.log2(size) / 2), 0.02, 3, seed=1)
    advantages[4] = advantages[4][:1]  # a point of one block takes the pooled spread
    fit = fit_curve(POINTS, advantages)
    assert fit is not None and fit.degree == curve_model.MAX_DEGREE and not fit.through_means
    squares = [((a - a.mean()) ** 2).sum() for a in advantages]
    pooled = sum(squares) / sum(len(a) - 1 for a in advantages)
    shrunk = [
        np.sqrt((sq + curve_model.PRIOR_BLOCKS * pooled) / (len(a) - 1 + curve_model.PRIOR_BLOCKS))
        for sq, a in zip(squares, advantages, strict=True)
    ]
    np.testing.assert_allclose(fit.spreads, shrunk, rtol=1e-12)
    design = fit.basis(fit.x)
    weights = np.repeat(1 / fit.spreads**2, fit.blocks)
    reference = sm.WLS(fit.y, design, weights=weights).fit(cov_type="fixed scale", cov_kwds={"scale": 1.0})
    coefficients, covariances = curve_model._weighted_fits(design, fit.y[np.newaxis, :], fit.blocks)
    np.testing.assert_allclose(coefficients[0], reference.params, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(covariances[0], reference.cov_params(), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(fit.covariance, reference.cov_params(), rtol=1e-12)


def test_the_band_names_its_labels_as_the_per_point_classification_does():
    rng = np.random.default_rng(2)
    labels = rng.choice(np.array(["B", "W", "0"]), size=(500, 7), p=[0.2, 0.2, 0.6])
    curve = np.where(labels == "B", 0.2, np.where(labels == "W", -0.2, 0.0))
    # a margin of e^0.2 - 1: wider than any 0's band (0.1), narrower than any B's or W's (0.3)
    statuses = curve_model._band_status(curve, np.full(curve.shape, 0.1), margin=float(np.expm1(0.2)))
    for row, status in zip(labels, statuses, strict=True):
        expected = classify(list(row))
        # no label at all: every 0's band lies inside the margin, so equivalent
        assert status == {"indistinguishable": "equivalent"}.get(expected, expected), row


def test_a_clear_crossover_is_found_with_an_interval_that_covers_it():
    truth = 16384.0
    found = assess(POINTS, _curve(lambda size: crossing_log_ratio(size, truth, 0.1), 0.02, 4, seed=3), seed=3)
    assert found is not None and found.status == "crossover"
    at, low, high = found.crossover
    assert low <= truth <= high and np.log2(high / low) < 1.5 and abs(np.log2(at / truth)) < 0.5
    assert found.sure and found.replication >= curve_model.SURE


def _flat_then_steep(size: float) -> float:
    """A curve shaped as measured (one_copy against two_copy): steep and far below 0 up to 1 KiB, nearly flat just
    below 0 up to 16 KiB, then rising steeply through 0 at about 19.5 KiB."""
    x = np.log2(size)
    if x <= 10:
        return -0.05 - 0.06 * (10 - x)
    return -0.05 + 0.0075 * (x - 10) if x <= 14 else -0.02 + 0.08 * (x - 14)


def test_a_crossover_is_read_from_the_sizes_beside_it_not_from_the_far_ends_of_the_range():
    """The report's grid, 4x apart, in 20 runs: the crossover lies between the sizes whose means change sign, and
    its interval holds the true crossing.  A polynomial over the whole range crossed where the steep small sizes
    tilted it, below 16 KiB, in a quarter of these runs."""
    points = np.array([64, 256, 1024, 4096, 16384, 65536, 262144], dtype=float)
    for seed in range(20):
        found = assess(points, _curve(_flat_then_steep, 0.01, 3, seed=seed, points=points), seed=seed)
        assert found is not None and found.status == "crossover", seed
        at, low, high = found.crossover
        assert 16384 < at < 65536 and 4096 <= low <= 19500 <= high <= 65536, (seed, found.crossover)


def test_noise_beyond_a_crossover_adds_no_later_crossing():
    """Means that dip below 0 once past the crossing (noise) do not move it there: the means are read as rising."""
    points = POINTS[6:]  # 4 KiB .. 256 KiB
    advantages = _curve(lambda size: crossing_log_ratio(size, 16384.0, 0.1), 0.005, 3, seed=9, points=points)
    advantages[-2] = advantages[-2] - 0.12  # 128 KiB dips below 0
    found = assess(points, advantages, seed=9)
    assert found is not None
    at, _, high = curve_model.crossover_of(found.fit, rng=np.random.default_rng(9))
    assert 8192 < at < 32768 and high < 131072


def test_no_difference_measured_finely_is_equivalent_and_said_within_the_margin():
    found = assess(POINTS, _curve(lambda size: 0.0, 0.01, 6, seed=4))
    assert found is not None and found.status == "equivalent"
    assert found.largest_difference < EQUIVALENCE_MARGIN


def test_no_difference_measured_coarsely_is_undecided_with_what_would_decide_it():
    found = assess(POINTS, _curve(lambda size: 0.0, 0.15, 3, seed=5))
    assert found is not None and found.status == "undecided" and not found.sure
    assert 0 < found.more_blocks < np.inf and found.decide_at in POINTS
    finer = assess(POINTS, _curve(lambda size: 0.0, 0.05, 3, seed=5))
    assert finer is not None and finer.more_blocks < found.more_blocks  # less spread, fewer blocks to decide


def test_a_better_curve_that_might_still_be_worse_by_more_than_the_margin_is_not_called_always_better():
    """Better at the large sizes, and the band at the small ones still reaches far below the margin: undecided."""
    advantages = _curve(lambda size: 0.15 if size >= 65536 else 0.0, 0.2, 3, seed=6)
    fit = fit_curve(POINTS, advantages)
    assert fit is not None
    curve, half = fit.band(fit.grid)
    if np.any(curve - half > 0) and not np.any(curve + half < 0):
        assert status_of(fit) == "undecided"
    assert status_of(fit) != "challenger_always_better" or np.all(curve - half > -np.log1p(EQUIVALENCE_MARGIN))


def test_a_curve_no_polynomial_follows_is_read_from_each_points_own_mean_never_forced_onto_one():
    zigzag = [np.full(8, 0.08 if index % 2 else -0.08) + np.linspace(-0.01, 0.01, 8) for index in range(len(POINTS))]
    found = assess(POINTS, zigzag)
    assert found is not None and found.fit.lack_of_fit_p < curve_model.FIT_LEVEL and found.fit.through_means
    np.testing.assert_allclose(found.fit.curve(np.log2(POINTS)), found.fit.means, atol=1e-12)
    assert found.status == "multiple_crossings"
    rows = [pd.Series({"lack_of_fit_p": p, "threads": t}) for p, t in [(found.fit.lack_of_fit_p, 8), (0.004, 1)]]
    said = prose.fit_note(rows)
    assert said.startswith("With 1 and 8 threads, no smooth curve fits") and "p = 0.00400 at most" in said
    assert prose.fit_note(rows[:1]).startswith("With 8 threads, no smooth curve fits the point means (p < 0.001),")
    smooth = assess(POINTS, _curve(lambda size: 0.01 * np.log2(size), 0.02, 3, seed=8))
    assert smooth is not None and not smooth.fit.through_means
    assert prose.fit_note([pd.Series({"lack_of_fit_p": smooth.fit.lack_of_fit_p, "threads": 1})]) == ""


def test_the_degree_is_the_lowest_that_fits_mostly_a_line_for_a_straight_truth_more_for_a_bent_one():
    x = np.repeat(np.log2(POINTS), 3)

    def degrees(truth) -> list[int]:
        return [
            curve_model.chosen_degree(x, np.concatenate(_curve(truth, 0.03, 3, seed)), POINTS) for seed in range(40)
        ]

    straight = degrees(lambda size: 0.01 * np.log2(size))
    assert straight.count(1) >= 0.75 * len(straight)  # a line passes its check at 0.1 but for chance
    bent = degrees(lambda size: crossing_log_ratio(size, 16384.0, 0.1, width=0.7))
    assert all(degree > 1 for degree in bent)


def test_few_points_are_fitted_exactly_without_a_test_of_fit():
    assert [curve_model.degree_for(n) for n in (2, 3, 4, 5, 13)] == [1, 2, 2, 3, 4]
    counts = np.array([1.0, 10.0, 100.0])
    found = assess(counts, _curve(lambda c: 0.2 * np.log10(c) - 0.2, 0.02, 5, 7, counts))
    assert found is not None and np.isnan(found.fit.lack_of_fit_p) and found.status == "crossover"


def test_crossovers_csv_keeps_its_columns_and_adds_the_models():
    sizes = [1024, 4096, 16384, 65536, 262144]
    effects = [0.7, 0.8, 1.0, 1.25, 1.4]
    frames = [blocks(effect, 6, [size], seed=i) for i, (size, effect) in enumerate(zip(sizes, effects, strict=True))]
    measured = add_metrics(_complete(pd.concat(frames, ignore_index=True)))
    comparisons = compare(measured, PAIR, ["throughput_gbps"], paired=True)
    found = find_crossovers(measured, comparisons, PAIR, ["throughput_gbps"], n_resamples=300, seed=1)
    assert list(found.columns) == list(tables.CROSSOVERS)
    row = found.iloc[0]
    assert row["status"] == "crossover" and row["tested_status"] == "crossover"
    assert 4096 <= row["ci_low"] <= row["crossover_at"] <= row["ci_high"] <= 65536
    assert 0 <= row["replication"] <= 1 and row["lack_of_fit_p"] >= 0


@pytest.mark.parametrize(
    ("low", "high", "middle"), [(8192, 16384, 12288), (8192, 12288, 10240), (64, 128, 96), (10, 100, 32)]
)
def test_a_new_point_splits_a_bracket_near_its_geometric_middle(low, high, middle):
    assert allocation.midpoint(low, high) == middle
    assert allocation.midpoint(1024, 1100) is None  # narrower than a quarter of a doubling


def test_the_allocator_adds_a_size_inside_a_crossovers_bracket_and_nothing_to_a_sure_verdict():
    crossing = _curve(lambda size: crossing_log_ratio(size, 11000.0, 0.05), 0.05, 3, seed=8)
    wanted = [point for _, point in allocation.wanted_points(curve_of(POINTS, crossing, 0), most_blocks=20)]
    found = assess(POINTS, crossing)
    assert found is not None
    if found.status == "crossover":
        assert any(point not in POINTS for point in wanted), wanted  # a size the grid does not have
    else:
        assert wanted  # open: blocks where its band is widest
    clear = _curve(lambda size: 0.3, 0.02, 4, seed=9)
    assert allocation.wanted_points(curve_of(POINTS, clear, 0), most_blocks=20) == []


def test_undecided_hands_the_schedule_a_point_at_a_new_size_for_a_crossover():
    sizes = [1024, 4096, 16384, 65536, 262144]
    settings = tiny(implementations=["two_copy", "one_copy"], threads=[1], sizes=sizes)
    effects = [0.8, 0.88, 0.97, 1.12, 1.2]
    frames = [
        # noisy enough that the crossover is not yet sure: a narrow sure one wants nothing more
        blocks(effect, 3, [size], seed=20 + i, noise=0.06)
        for i, (size, effect) in enumerate(zip(sizes, effects, strict=True))
    ]
    trials = _complete(pd.concat(frames, ignore_index=True))
    wanted = allocation.undecided(trials, settings)
    new = [point for point in wanted if point.size_bytes not in sizes]
    assert new and all(
        point._replace(size_bytes=1024) in {p._replace(size_bytes=1024) for p in wanted} for point in new
    )
    assert wanted[new[0]] == {("one_copy", "copy", "fields"), ("two_copy", "copy", "fields")}


def test_a_curve_of_three_points_keeps_the_per_point_verdict():
    sizes = [1024, 16384, 262144]
    effects = [0.7, 1.0, 1.4]
    pairs = enumerate(zip(sizes, effects, strict=True))
    frames = [blocks(effect, 5, [size], seed=30 + i) for i, (size, effect) in pairs]
    measured = add_metrics(_complete(pd.concat(frames, ignore_index=True)))
    comparisons = compare(measured, PAIR, ["throughput_gbps"], paired=True)
    row = find_crossovers(measured, comparisons, PAIR, ["throughput_gbps"], n_resamples=300, seed=1).iloc[0]
    assert row["status"] == row["tested_status"] == "crossover" and np.isnan(row["replication"])
    assert 1024 <= row["ci_low"] <= row["crossover_at"] <= row["ci_high"] <= 262144
