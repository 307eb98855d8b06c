"""The explorer's widgets and handlers on synthetic sweeps, without a browser."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from copylab.analysis.crossover import find_crossovers
from copylab.analysis.stats import compare, summarize
from copylab.declarations.metrics import add_metrics
from copylab.errors import BrokenInvariant
from copylab.explore import data, explorer, views
from copylab.explore.explorer import Explorer
from copylab.paths import ROOT
from tests.synthetic import load_trials, make_trials, write_sweep

OUTLIER = {"implementation": "one_copy", "workload": "stream", "size_bytes": 4096, "threads": 1, "repetition": 3}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """data/ with a clean sweep, one with an outlier trial and failures, and one with a single thread count."""
    root = tmp_path_factory.mktemp("explorer") / "data"
    write_sweep(root / "synthetic", make_trials(seed=1))
    noisy = make_trials(sweep="noisy", seed=2, failed=4)
    outlier = np.logical_and.reduce([noisy[column] == value for column, value in OUTLIER.items()])
    noisy.loc[outlier, "throughput_gbps"] *= 1.6
    write_sweep(root / "noisy", noisy)
    write_sweep(
        root / "small",
        make_trials(
            sweep="small", implementations=("two_copy", "one_copy"), threads=(4,), workloads=("stream",), seed=3
        ),
    )
    return root


@pytest.fixture
def ex(data_root: Path) -> Explorer:
    return Explorer(data_root / "synthetic", roots=[data_root])


def _trials(directory: Path) -> pd.DataFrame:
    return add_metrics(load_trials(directory / "trials.csv"))


def _legend(ex: Explorer) -> list[str]:
    return [text.get_text() for text in ex.figure.axes[0].get_legend().get_texts()]


def test_sweep_dropdown_lists_every_sweep_and_switching_rebuilds_controls(ex: Explorer, data_root: Path) -> None:
    assert [label for label, _ in ex.sweep.options] == ["noisy", "small", "synthetic"]
    assert ex.selected == ["two_copy", "one_copy", "zero_copy"]
    assert [value for _, value in ex.fixed.options] == [1, 2]

    ex.sweep.value = str(data_root / "small")

    assert ex.selected == ["two_copy", "one_copy"]
    assert [value for _, value in ex.fixed.options] == [4]
    assert [value for _, value in ex.workload.options] == ["stream"]
    assert set(ex.data["threads"]) == {4} and set(ex.data["implementation"]) == {"two_copy", "one_copy"}
    assert "small" in ex.status.value


def test_plotted_points_are_the_stats_summary(ex: Explorer, data_root: Path) -> None:
    expected = summarize(_trials(data_root / "synthetic"), ["throughput_gbps"], 0.95)
    expected = expected[(expected["workload"] == "stream") & (expected["threads"] == 1)]

    merged = ex.data.merge(expected, on=["implementation", "size_bytes"], suffixes=("", "_stats"))

    assert len(merged) == len(ex.data) == 3 * 13
    np.testing.assert_allclose(merged["mean"], merged["mean_stats"])
    np.testing.assert_allclose(merged["ci_low"], merged["ci_low_stats"])
    assert list(ex.data.drop_duplicates("implementation")["implementation"]) == ex.selected


def test_slider_changes_the_plotted_thread_count(ex: Explorer) -> None:
    before, png = ex.data.copy(), ex.png
    ex.fixed.value = 2

    assert set(ex.data["threads"]) == {2}
    assert not np.allclose(ex.data["mean"], before["mean"])
    assert ex.png != png
    assert "2 threads" in ex.status.value and "2 threads" in ex.figure.axes[0].get_title()


def test_threads_on_x_makes_the_slider_a_size(ex: Explorer) -> None:
    ex.x_axis.value = "threads"

    assert ex.fixed.description == "message size"
    assert [value for _, value in ex.fixed.options] == [2**k for k in range(6, 19)]
    ex.fixed.value = 1024
    assert set(ex.data["size_bytes"]) == {1024}
    assert sorted(set(ex.data["threads"])) == [1, 2]
    assert [value for _, value in ex.inspect.options] == [1, 2]


def test_unchecking_an_implementation_removes_its_line(ex: Explorer) -> None:
    assert "zero_copy" in _legend(ex)
    ex.checkboxes["zero_copy"].value = False

    assert set(ex.data["implementation"]) == {"two_copy", "one_copy"}
    assert "zero_copy" not in _legend(ex)
    assert set(ex.config["implementation"]) == {"two_copy", "one_copy"}
    assert set(ex.trials["implementation"]) == {"two_copy", "one_copy"}


def test_metric_workload_and_scale_controls(ex: Explorer) -> None:
    png = ex.png
    ex.metric.value = "cpu_ns_per_byte"
    assert set(ex.data["metric"]) == {"cpu_ns_per_byte"} and ex.png != png
    assert "cpu_ns_per_byte (ns/B" in ex.figure.axes[0].get_ylabel()

    ex.workload.value = "rr"
    assert [value for _, value in ex.fixed.options] == [1, 2]
    assert sorted(set(ex.data["size_bytes"])) == [64, 1024, 16384]
    assert "latency_mean_us" in [value for _, value in ex.metric.options]
    assert ex.metric.value == "cpu_ns_per_byte"  # kept: it is measured for rr too

    ex.y_scale.value = "log"
    assert ex.figure.axes[0].get_yscale() == "log"


def test_confidence_level_recomputes_intervals(ex: Explorer, data_root: Path) -> None:
    width95 = (ex.data["ci_high"] - ex.data["ci_low"]).to_numpy()
    ex.confidence.value = 0.99

    expected = summarize(_trials(data_root / "synthetic"), ["throughput_gbps"], 0.99)
    expected = expected[(expected["workload"] == "stream") & (expected["threads"] == 1)]
    merged = ex.data.merge(expected, on=["implementation", "size_bytes"], suffixes=("", "_stats"))
    np.testing.assert_allclose(merged["ci_high"], merged["ci_high_stats"])
    assert np.all(ex.data["ci_high"] - ex.data["ci_low"] > width95)
    assert "99% intervals" in ex.status.value


def test_comparison_mode_plots_the_stats_ratios_and_crossover(ex: Explorer, data_root: Path) -> None:
    ex.compare.value = True

    trials = _trials(data_root / "synthetic")
    pairs = [("one_copy", "two_copy"), ("zero_copy", "two_copy")]
    expected = compare(trials, pairs, ["throughput_gbps"], 0.95)
    crossovers = find_crossovers(trials, expected, pairs, ["throughput_gbps"], 0.95)
    expected = expected[(expected["workload"] == "stream") & (expected["threads"] == 1)]
    merged = ex.data.merge(expected, on=["challenger", "size_bytes"], suffixes=("", "_stats"))
    assert len(merged) == len(ex.data) == 2 * 13
    for column in ("ratio", "ratio_ci_low", "ratio_ci_high", "p_holm"):
        np.testing.assert_allclose(merged[column], merged[f"{column}_stats"])

    found = ex.crossovers.set_index("challenger")
    truth = crossovers[(crossovers["workload"] == "stream") & (crossovers["threads"] == 1)].set_index("challenger")
    assert found.loc["one_copy", "status"] == truth.loc["one_copy", "status"] == "crossover"
    assert found.loc["one_copy", "crossover_at"] == pytest.approx(truth.loc["one_copy", "crossover_at"])
    assert 2048 < found.loc["one_copy", "crossover_at"] < 8192  # synthetic truth: 4096
    assert found.loc["zero_copy", "status"] == "challenger_never_better"
    assert any(label.startswith("one_copy: crossover at") for label in _legend(ex))
    vertical = [line.get_xdata()[0] for line in ex.figure.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert vertical == [pytest.approx(found.loc["one_copy", "crossover_at"])]
    assert "one_copy: crossover at" in ex.status.value

    ex.baseline.value = "one_copy"
    assert set(ex.data["challenger"]) == {"two_copy", "zero_copy"} and set(ex.data["baseline"]) == {"one_copy"}


def test_comparison_mode_along_threads_has_no_crossover(ex: Explorer) -> None:
    ex.compare.value = True
    ex.x_axis.value = "threads"

    assert sorted(set(ex.data["threads"])) == [1, 2] and ex.crossovers.empty
    assert "crossovers are found along message size" in ex.status.value


def test_raw_trials_toggle_adds_one_point_per_trial(ex: Explorer) -> None:
    def scattered() -> int:
        return sum(len(c.get_offsets()) for c in ex.figure.axes[0].collections if isinstance(c, PathCollection))

    without = scattered()
    ex.show_raw.value = True

    assert len(ex.raw) == 3 * 13 * 5
    assert scattered() == without + len(ex.raw)
    assert "individual trials" in _legend(ex)
    ex.show_raw.value = False
    assert ex.raw.empty and scattered() == without


def test_noisy_configuration_is_flagged_and_its_outlier_listed(data_root: Path) -> None:
    ex = Explorer(data_root / "noisy", roots=[data_root])

    flagged = ex.flags[ex.flags["why"].str.contains("95% CI")]
    assert flagged[["implementation", "size_bytes", "threads"]].to_dict("records") == [
        {"implementation": "one_copy", "size_bytes": 4096, "threads": 1}
    ]
    assert f"{len(ex.flags)} flagged" in ex.status.value
    assert "Unstable configurations and failed trials" in ex.flag_box.value
    assert "one_copy, 4 KiB, 1 thread: 95% CI" in ex.flag_box.value
    rings = [c for c in ex.figure.axes[0].collections if "unstable" in str(c.get_label())]
    assert len(rings) == 1 and len(rings[0].get_offsets()) == ex.data["unstable"].sum() >= 1

    ex.inspect.value = 4096
    one_copy = ex.trials[ex.trials["implementation"] == "one_copy"]
    worst = one_copy.loc[one_copy["deviation"].abs().idxmax()]
    assert worst["repetition"] == OUTLIER["repetition"] and worst["deviation"] > 0.3
    assert bool(ex.config.set_index("implementation").loc["one_copy", "unstable"])


def test_failed_trials_appear_in_tables(data_root: Path) -> None:
    ex = Explorer(data_root / "noisy", roots=[data_root])
    trials = load_trials(data_root / "noisy" / "trials.csv")
    failed = trials[trials["status"] == "failed"].iloc[0]
    ex.workload.value = failed["workload"]
    ex.pinning.value = failed["pinning"]
    ex.fixed.value = int(failed["threads"])
    ex.inspect.value = int(failed["size_bytes"])

    row = ex.trials[ex.trials["trial_id"] == failed["trial_id"]].iloc[0]
    assert row["status"] == "failed" and row["error"] == "synthetic failure" and np.isnan(row["value"])
    assert ex.config.set_index("implementation").loc[failed["implementation"], "n_failed"] >= 1
    assert failed["implementation"] in set(ex.flags["implementation"])


def test_growing_sweep_is_reloaded(tmp_path: Path) -> None:
    directory = write_sweep(tmp_path / "data" / "live", make_trials(sweep="live", threads=(1,), workloads=("stream",)))
    ex = Explorer(directory, roots=[tmp_path / "data"])
    assert [value for _, value in ex.fixed.options] == [1]

    write_sweep(directory, make_trials(sweep="live", threads=(1, 2), workloads=("stream",)))
    ex.confidence.value = 0.9

    assert [value for _, value in ex.fixed.options] == [1, 2]


def test_unreadable_sweep_shows_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = write_sweep(tmp_path / "data" / "cut", make_trials(sweep="cut", threads=(1,)))
    text = (directory / "trials.csv").read_text()
    (directory / "trials.csv").write_text(text[: len(text) - 40])
    monkeypatch.setenv(explorer.ENV_VAR, str(directory))

    ex = Explorer.from_environment()

    assert ex.sweep.value == str(directory.resolve())
    assert "copylab-error" in ex.status.value and "truncated" in ex.status.value
    assert ex.data.empty and ex.figure is None


def test_switching_to_a_broken_sweep_and_back(ex: Explorer, data_root: Path, tmp_path: Path) -> None:
    broken = write_sweep(tmp_path / "cut", make_trials(sweep="cut", threads=(1,)))
    (broken / "manifest.json").unlink()
    ex.sweep.options = [*ex.sweep.options, ("cut", str(broken))]

    ex.sweep.value = str(broken)
    assert "no manifest" in ex.status.value and ex.data.empty and ex.figure is None

    ex.sweep.value = str((data_root / "synthetic").resolve())
    assert "copylab-error" not in ex.status.value and len(ex.data) == 3 * 13


def test_caches_hold_sweeps_and_summaries(data_root: Path) -> None:
    directory = data_root / "synthetic"
    assert data.load(directory) is data.load(directory)
    at95 = data.sweep_summary(directory, 0.95, "throughput_gbps")
    assert data.sweep_summary(directory, 0.95, "throughput_gbps") is at95
    assert data.sweep_summary(directory, 0.9, "throughput_gbps") is not at95


def test_slider_redraws_from_the_caches_without_reloading(tmp_path: Path) -> None:
    """What keeps a redraw fast (timed by `invoke bench`): moving a slider reads no file and summarises nothing."""
    df = make_trials(implementations=("two_copy", "one_copy", "zero_copy", "iperf3"), threads=(1, 2, 4, 8))
    assert len(df) >= 1100
    ex = Explorer(write_sweep(tmp_path / "data" / "big", df), roots=[tmp_path / "data"])
    ex.show_raw.value = True
    loads, summaries = data._loaded.cache_info().misses, data._summary.cache_info().misses
    for threads in (2, 4, 8, 1):
        ex.fixed.value = threads
        assert set(ex.data["threads"]) == {threads}
    assert data._loaded.cache_info().misses == loads
    assert data._summary.cache_info().misses == summaries


def test_pure_functions_follow_the_requested_order() -> None:
    summary = summarize(
        add_metrics(make_trials(threads=(1,), workloads=("stream",), sizes=(64, 1024))), ["throughput_gbps"]
    )
    chosen = ["zero_copy", "two_copy"]
    data = views.plot_data(summary, "throughput_gbps", "size_bytes", 1, chosen, views.View("stream", "same_cpu"))
    assert list(data["implementation"]) == ["zero_copy", "zero_copy", "two_copy", "two_copy"]
    assert list(data["size_bytes"]) == [64, 1024, 64, 1024]
    view = views.View("stream", "same_cpu")
    assert views.plot_data(summary, "throughput_gbps", "size_bytes", 2, ["two_copy"], view).empty
    with pytest.raises(BrokenInvariant, match="unknown x axis"):
        view.other("pinning")  # type: ignore[arg-type]


def test_notebook_is_committed_clean_and_only_calls_the_explorer() -> None:
    notebook = json.loads((ROOT / "notebooks" / "30_explore.ipynb").read_text())
    assert notebook["metadata"]["kernelspec"]["name"] == "copylab"
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["execution_count"] is None and cell["outputs"] == [] for cell in code)
    source = "".join("".join(cell["source"]) for cell in code)
    assert "Explorer.from_environment()" in source and "import pandas" not in source


def test_the_receive_mode_is_selectable_and_compared_within_itself(tmp_path: Path) -> None:
    trials = make_trials(
        sweep="receive",
        sizes=(1024, 4096, 16384),
        workloads=("stream",),
        threads=(1,),
        receives=("copy", "truncate"),
        seed=6,
    )
    directory = write_sweep(tmp_path / "data" / "receive", trials)
    ex = Explorer(directory, roots=[tmp_path / "data"])
    assert [value for _, value in ex.receive.options] == ["copy", "truncate"]
    copy_points = ex.data.copy()
    ex.receive.value = "truncate"
    assert "receive truncate" in ex.status.value
    assert not ex.data["mean"].equals(copy_points["mean"]), "the truncate trials, not the copy ones"
    ex.compare.value = True
    assert (
        set(ex.data["challenger"]) == {"one_copy", "zero_copy"} and (ex.data["baseline"] == "two_copy/truncate").all()
    )


def test_a_second_sweep_of_the_experiment_is_overlaid_dashed(ex: Explorer, data_root: Path) -> None:
    assert [label for label, _ in ex.overlay.options] == ["none", "noisy", "small"]
    assert ex.overlaid.empty
    solid = len(ex.figure.axes[0].get_lines())

    ex.overlay.value = str(data_root / "noisy")

    expected = summarize(_trials(data_root / "noisy"), ["throughput_gbps"], 0.95)
    expected = expected[(expected["workload"] == "stream") & (expected["threads"] == 1)]
    merged = ex.overlaid.merge(expected, on=["implementation", "size_bytes"], suffixes=("", "_noisy"))
    assert len(merged) == len(ex.overlaid) == 3 * 13
    np.testing.assert_allclose(merged["mean"], merged["mean_noisy"])
    dashed = [line for line in ex.figure.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 3 and len(ex.figure.axes[0].get_lines()) > solid
    assert "dashed: noisy" in _legend(ex)


def test_a_sweep_with_other_message_layouts_shows_the_studys_one_row_per_implementation() -> None:
    trials = pd.DataFrame(
        {
            "implementation": ["one_copy", "one_copy", "zero_copy", "sendfile", "uring_send"],
            "layout": ["fields", "contiguous", "contiguous", "none", "aligned"],
        }
    )
    kept = data.one_layout(trials)
    # the study's layout where measured; an implementation measured in other layouts only keeps one of them
    assert list(zip(kept["implementation"], kept["layout"], strict=True)) == [
        ("one_copy", "fields"),
        ("zero_copy", "contiguous"),
        ("sendfile", "none"),
        ("uring_send", "aligned"),
    ]
