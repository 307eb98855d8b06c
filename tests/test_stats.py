"""Summaries, intervals, Welch tests, Holm correction and comparisons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from copylab import experiments
from copylab.analysis.stats import bootstrap_interval, compare, fieller, holm, summarize, trials_for_precision
from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics, metrics_for
from copylab.errors import CopylabError
from copylab.record import tables
from tests.synthetic import make_trials

SUMMARY_COLUMNS = tuple(tables.SUMMARY)
COMPARISON_COLUMNS = tuple(tables.COMPARISONS)
PAIRS = implementations.comparison_pairs()
# What the analysis of a sweep of the main experiment summarizes and compares.
MAIN_METRICS = metrics_for([experiments.main()])


def ratio_interval(challenger: list[float], baseline: list[float]) -> tuple[float, float, float]:
    """fieller() on two samples of trial values."""
    c, b = np.asarray(challenger), np.asarray(baseline)
    ratio, low, high = fieller(c.mean(), c.var(ddof=1), len(c), b.mean(), b.var(ddof=1), len(b))
    return float(ratio), float(low), float(high)


CONFIG = {"implementation": "two_copy", "workload": "stream", "size_bytes": 1024, "threads": 1, "pinning": "same_cpu"}


@pytest.fixture(scope="module")
def measured() -> pd.DataFrame:
    return add_metrics(make_trials(sizes=(256, 1024, 16384), rr_sizes=(64, 1024), threads=(1, 2), trials=4, seed=2))


def _select(frame: pd.DataFrame, **where) -> pd.Series:
    return np.logical_and.reduce([frame[key] == value for key, value in where.items()])


def test_holm_reference():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    # NaN is not a test: m = 2
    np.testing.assert_allclose(holm([0.01, np.nan, 0.04]), [0.02, np.nan, 0.04])
    assert holm([0.6, 0.7]).max() == 1.0  # capped at 1


def test_fieller_ratio_hand_reference():
    # m_c = 10, m_b = 5, v_c = v_b = 1/3, ratio 2; Welch df at ratio 2: (1/3 + 4/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 50/17
    # t(0.975, 50/17) = 3.218759; a = 25 - t^2/3 = 21.546531; half = sqrt(50^2 - a (100 - t^2/3)) = 20.487976
    # bounds (50 -+ half) / a = 1.369688, 3.271430
    ratio, low, high = ratio_interval([9.0, 10.0, 11.0], [4.0, 5.0, 6.0])
    assert ratio == 2.0
    assert low == pytest.approx(1.369688, abs=1e-6) and high == pytest.approx(3.271430, abs=1e-6)
    # the bounds satisfy Fieller's defining equality |m_c - rho m_b| = t sqrt(v_c + rho^2 v_b)
    t = st.t.ppf(0.975, 50 / 17)
    for rho in (low, high):
        assert abs(10 - 5 * rho) == pytest.approx(t * np.sqrt(1 / 3 + rho**2 / 3))


def test_fieller_unbounded_when_baseline_mean_is_not_away_from_zero():
    ratio, low, high = ratio_interval([1.0, 2.0, 3.0], [-1.0, 0.5, 2.0])
    assert ratio == pytest.approx(4.0) and np.isnan(low) and np.isnan(high)


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = np.array([9.0, 10.5, 10.0, 11.0, 9.5])
    first = bootstrap_interval(values, 0.95, 500, seed=1)
    assert first == bootstrap_interval(values, 0.95, 500, seed=1)
    assert first[0] < values.mean() < first[1]
    t_low, t_high = st.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=st.sem(values))
    assert first[1] - first[0] < (t_high - t_low) * 1.5


def test_summary_columns_and_hand_checked_row(measured):
    frame = measured.copy()
    rows = _select(frame, status="ok", **CONFIG)
    frame.loc[rows, "throughput_gbps"] = [10.0, 12.0, 14.0, np.nan]  # one unmeasured value is not counted
    summary = summarize(frame, MAIN_METRICS, confidence=0.95)
    assert tuple(summary.columns) == SUMMARY_COLUMNS
    row = summary[_select(summary, metric="throughput_gbps", **CONFIG)].iloc[0]
    assert (row["n"], row["mean"], row["std"]) == (3, 12.0, 2.0)
    assert row["cv"] == pytest.approx(2 / 12) and row["unstable"]  # cv 0.167 > 0.10
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((7.031725, 16.968275), abs=1e-6)


def test_summary_counts_failed_trials_and_omits_unmeasured_metrics():
    frame = add_metrics(make_trials(sizes=(1024,), workloads=("stream",), threads=(1,), trials=4, failed=3, seed=9))
    summary = summarize(frame, MAIN_METRICS)
    throughput = summary[summary["metric"] == "throughput_gbps"]
    assert throughput["n_failed"].sum() == 3
    assert (throughput["n"] + throughput["n_failed"] == 4).all()
    assert throughput.loc[throughput["n"] < 3, "unstable"].all()
    assert "cycles_per_byte" not in set(summary["metric"])  # no hardware counters: no rows, no zeros
    assert set(summary.loc[summary["metric"] == "zc_copied_fraction", "implementation"]) == {"zero_copy"}


def test_summary_keeps_a_configuration_whose_trials_all_failed(measured):
    frame = measured.copy()
    rows = _select(frame, **CONFIG)
    frame.loc[rows, "status"] = "failed"
    frame.loc[rows, "throughput_gbps"] = np.nan
    row = summarize(frame, metrics=["throughput_gbps"])
    row = row[_select(row, **CONFIG)].iloc[0]
    assert row["n"] == 0 and row["n_failed"] == 4 and np.isnan(row["mean"]) and row["unstable"]


def test_summary_bootstrap_intervals(measured):
    summary = summarize(measured, metrics=["throughput_gbps"], ci="bootstrap", n_resamples=300)
    measured_rows = summary[summary["n"] >= 2]
    assert (measured_rows["ci_low"] <= measured_rows["mean"]).all()
    assert (measured_rows["mean"] <= measured_rows["ci_high"]).all()
    with pytest.raises(CopylabError, match="unknown confidence interval method"):
        summarize(measured, MAIN_METRICS, ci="jackknife")


def test_unknown_or_missing_metric_is_an_error(measured):
    with pytest.raises(CopylabError, match="unknown metric"):
        summarize(measured, metrics=["goodput"])
    with pytest.raises(CopylabError, match="add_metrics"):
        compare(make_trials(sizes=(64,), threads=(1,), trials=2), PAIRS, metrics=["cpu_ns_per_byte"])


def test_comparisons_welch_holm_and_direction(measured):
    comparisons = compare(measured, PAIRS, metrics=["throughput_gbps", "latency_mean_us"])
    assert tuple(comparisons.columns) == COMPARISON_COLUMNS
    assert set(comparisons["challenger"]) == {"one_copy", "zero_copy"}  # no iperf3 in the data: pair skipped

    row = comparisons[
        _select(
            comparisons, workload="stream", threads=1, metric="throughput_gbps", size_bytes=1024, challenger="one_copy"
        )
    ].iloc[0]
    ok = measured[_select(measured, status="ok", workload="stream", threads=1, size_bytes=1024)]
    c = ok.loc[ok["implementation"] == "one_copy", "throughput_gbps"]
    b = ok.loc[ok["implementation"] == "two_copy", "throughput_gbps"]
    assert row["p_value"] == pytest.approx(st.ttest_ind(c, b, equal_var=False).pvalue)
    assert row["ratio"] == pytest.approx(c.mean() / b.mean())
    assert row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"]

    curve = comparisons[
        _select(comparisons, workload="stream", threads=1, metric="throughput_gbps", challenger="one_copy")
    ]
    np.testing.assert_allclose(curve["p_holm"], holm(curve["p_value"].to_numpy()))
    assert (curve["significant"] == (curve["p_holm"] < 0.05)).all()

    latency = comparisons[comparisons["metric"] == "latency_mean_us"]
    # lower is better: zero_copy (1.3 x the baseline latency) is never better, its ratio is above 1
    zero = latency[latency["challenger"] == "zero_copy"]
    assert not zero["challenger_better"].any() and (zero["ratio"] > 1).all() and zero["significant"].all()


def test_challenger_better_follows_the_metric_direction():
    frame = add_metrics(
        make_trials(
            sizes=(16384,), workloads=("stream",), threads=(1,), trials=4, seed=4, shapes={"one_copy": "better"}
        )
    )
    comparisons = compare(frame, pairs=[("one_copy", "two_copy")], metrics=["throughput_gbps", "cpu_ns_per_byte"])
    better = comparisons.set_index("metric")["challenger_better"]
    assert better["throughput_gbps"]  # higher is better, one_copy is 1.25 x
    assert better["cpu_ns_per_byte"]  # lower is better, one_copy spends fewer ns per byte


def test_compare_without_any_pair_present_is_empty_with_columns(measured):
    comparisons = compare(measured, pairs=[("iperf3", "two_copy")], metrics=MAIN_METRICS)
    assert comparisons.empty and tuple(comparisons.columns) == COMPARISON_COLUMNS


@pytest.mark.parametrize("cv", [0.0, 0.03, 0.08, 0.2, 0.5])
def test_trials_for_precision_are_the_fewest_whose_interval_is_within_the_target(cv):
    n = trials_for_precision(cv)
    assert n >= 3
    half_width = st.t.ppf(0.975, n - 1) * cv / np.sqrt(n)
    assert half_width <= 0.10
    if n > 3:
        assert st.t.ppf(0.975, n - 2) * cv / np.sqrt(n - 1) > 0.10
    assert trials_for_precision(cv * 1.5 + 0.01) >= n
    assert trials_for_precision(10.0, cap=50) == 50  # a spread no affordable number of trials settles
