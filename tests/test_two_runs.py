"""Two runs compared (./inv compare): verdicts on synthetic sweeps with known effects, configurations present in
one sweep only, moved crossovers, manifest differences, a modified trials.csv, and the refusals."""

from __future__ import annotations

import shutil
from datetime import date

import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import analyze
from copylab.analysis.two_runs import HIGHER, LOWER, NOT_COMPARED, ONLY_A, ONLY_B, SAME, compare_runs, run_ratios
from copylab.declarations.metrics import add_metrics
from copylab.errors import CopylabError
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.blocks import Figure, Markdown
from copylab.report.results import load_results
from copylab.report.sections import compose
from tests.synthetic import make_server_trials, make_trials, write_sweep

SIZES = (64, 1024, 16384, 65536)


def _sweep(tmp_path, name: str, trials: pd.DataFrame, **overrides) -> SweepStore:
    return SweepStore(write_sweep(tmp_path / name, trials, overrides or None))


def _scaled(trials: pd.DataFrame, implementation: str, metric: str, factor: float) -> pd.DataFrame:
    changed = trials.copy()
    rows = changed["implementation"] == implementation
    changed.loc[rows, metric] = changed.loc[rows, metric] * factor
    return changed


def _verdicts(comparison: pd.DataFrame, **where: object) -> set[str]:
    rows = comparison
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return set(rows["verdict"])


def test_a_sweep_compared_with_itself_changes_nothing(tmp_path):
    store = _sweep(tmp_path, "a", make_trials(sizes=SIZES))
    result = compare_runs(store, store)
    assert set(result.comparison["verdict"]) == {SAME}
    assert (result.comparison["ratio"] == 1).all()
    assert result.differences == [] and result.warnings() == []
    assert set(result.crossovers["change"]) <= {"same", "within intervals"}
    assert result.only_in("A").empty and result.only_in("B").empty


def test_known_effects_are_found_where_they_are_and_nowhere_else(tmp_path):
    """B repeats A's design with fresh noise; one_copy 30% faster and zero_copy 25% slower in B."""
    a = make_trials(sizes=SIZES, seed=1)
    b = make_trials(sizes=SIZES, seed=2)
    b = _scaled(_scaled(b, "one_copy", "throughput_gbps", 1.3), "zero_copy", "throughput_gbps", 0.75)
    result = compare_runs(_sweep(tmp_path, "a", a), _sweep(tmp_path, "b", b))
    comparison = result.comparison
    throughput = comparison[comparison["metric"] == "throughput_gbps"]
    one_copy = throughput[throughput["implementation"] == "one_copy"]
    assert (one_copy["verdict"] == HIGHER).mean() >= 0.8, one_copy
    assert one_copy["ratio"].between(1.2, 1.4).all()
    zero_copy = throughput[throughput["implementation"] == "zero_copy"]
    assert (zero_copy["verdict"] == LOWER).mean() >= 0.8, zero_copy
    assert ((zero_copy["ratio_ci_low"] <= 0.75) & (zero_copy["ratio_ci_high"] >= 0.75)).mean() >= 0.8
    untouched = comparison[
        ~((comparison["metric"] == "throughput_gbps") & comparison["implementation"].isin(["one_copy", "zero_copy"]))
    ]
    assert set(untouched["verdict"]) == {SAME}, untouched[untouched["verdict"] != SAME]


def test_the_p_values_are_holm_corrected_over_a_metric(tmp_path):
    a, b = make_trials(sizes=SIZES, seed=1), make_trials(sizes=SIZES, seed=2)
    result = compare_runs(_sweep(tmp_path, "a", a), _sweep(tmp_path, "b", b))
    for _, rows in result.comparison.groupby("metric"):
        tested = rows.dropna(subset=["p_value"])
        assert (tested["p_holm"] >= tested["p_value"]).all()
        assert tested["p_holm"].min() == pytest.approx(min(1.0, tested["p_value"].min() * len(tested)))


def test_configurations_in_one_sweep_only_are_listed_not_dropped(tmp_path):
    a = make_trials(sizes=SIZES, threads=(1, 2))
    b = make_trials(sizes=(*SIZES, 262144), threads=(1,), seed=3)
    result = compare_runs(_sweep(tmp_path, "a", a), _sweep(tmp_path, "b", b))
    only_a, only_b = result.only_in("A"), result.only_in("B")
    assert set(only_a["threads"]) == {2} and not only_a.empty
    assert set(only_b["size_bytes"]) == {262144} and set(only_b["threads"]) == {1}
    both = result.comparison[~result.comparison["verdict"].isin([ONLY_A, ONLY_B])]
    assert set(both["threads"]) == {1} and 262144 not in set(both["size_bytes"])


def test_too_few_trials_on_a_side_are_not_compared():
    a = make_trials(sizes=(1024,), implementations=("two_copy",), workloads=("stream",), threads=(1,), trials=1)
    b = make_trials(sizes=(1024,), implementations=("two_copy",), workloads=("stream",), threads=(1,), seed=4)
    comparison = run_ratios(add_metrics(a), add_metrics(b), ["throughput_gbps"])
    assert list(comparison["verdict"]) == [NOT_COMPARED] and comparison["ratio"].isna().all()


def test_the_manifests_differences_are_named(tmp_path):
    trials = make_trials(sizes=SIZES)
    a = _sweep(tmp_path, "a", trials)
    b = _sweep(tmp_path, "b", trials, host={"kernel": "6.19.0"}, git={"commit": "f" * 40, "dirty": True})
    differences = {name: (x, y) for name, x, y in compare_runs(a, b).differences}
    assert differences["host.kernel"][1] == "6.19.0" and differences["host.kernel"][0] != "6.19.0"
    assert differences["git.commit"][1] == "f" * 40 and differences["git.dirty"] == ("False", "True")
    assert not any(name.startswith(("started_at", "ended_at", "harness")) for name in differences)


def test_a_modified_copy_is_compared_and_said_to_be_modified(tmp_path):
    a = _sweep(tmp_path, "a", make_trials(sizes=SIZES))
    copy = tmp_path / "copy"
    shutil.copytree(a.directory, copy)
    trials = pd.read_csv(copy / "trials.csv")
    _scaled(trials, "one_copy", "throughput_gbps", 1.3).to_csv(copy / "trials.csv", index=False, lineterminator="\n")
    result = compare_runs(a, SweepStore(copy))
    assert (
        len(result.warnings()) == 1
        and "copy: trials.csv has changed since sweep synthetic ended" in result.warnings()[0]
    )
    assert result.b.origin.modified and not result.a.origin.modified
    changed = result.comparison[result.comparison["verdict"] != SAME]
    assert set(changed["implementation"]) == {"one_copy"} and set(changed["metric"]) == {"throughput_gbps"}
    assert set(changed["verdict"]) == {HIGHER}


def test_sweeps_of_different_experiments_are_refused_in_one_line(tmp_path):
    copies = _sweep(tmp_path, "copies", make_trials(sizes=SIZES))
    servers = _sweep(tmp_path, "servers", make_server_trials())
    with pytest.raises(CopylabError, match="only two sweeps of one experiment") as error:
        compare_runs(copies, servers)
    assert "\n" not in str(error.value)


def test_sweeps_without_a_configuration_in_common_are_refused(tmp_path):
    a = _sweep(tmp_path, "a", make_trials(sizes=(64,), threads=(1,)))
    b = _sweep(tmp_path, "b", make_trials(sizes=(65536,), rr_sizes=(8192,), threads=(2,)))
    with pytest.raises(CopylabError, match="no configuration in common"):
        compare_runs(a, b)


def test_a_report_of_two_sweeps_of_one_experiment_has_their_comparison(tmp_path):
    stores = []
    for name, seed in (("first", 1), ("second", 2)):
        trials = make_trials(sweep=name, sizes=SIZES, workloads=("stream",), threads=(1,), seed=seed)
        store = SweepStore(write_sweep(tmp_path / "data" / name, trials), figures_root=tmp_path / "figures")
        analyze(store, plugins.draw, n_resamples=200)
        stores.append(store)
    sweeps = compose.arrange([load_results(store) for store in stores])
    content = compose.blocks(sweeps, date(2026, 1, 2))
    texts = [block.text for block in content if isinstance(block, Markdown)]
    assert "## What changed from `first` (A) to `second` (B)" in texts
    figures = [block for block in content if isinstance(block, Figure) and "compare_" in block.path.name]
    assert figures and all(block.path.is_file() for block in figures)
    assert all(stores[1].trials_sha256()[:12] in block.caption for block in figures)
    assert figures[0].path.is_relative_to(tmp_path / "figures" / "comparisons" / "first-vs-second")
