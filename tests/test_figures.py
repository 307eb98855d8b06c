"""Figures: labelled, titled from the manifest, CI shown, crossovers marked, graceful without data."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from PIL import Image

from copylab.analysis.crossover import find_crossovers
from copylab.analysis.stats import compare, summarize
from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics, metrics_for
from copylab.formatting import fmt_size
from copylab.record.store import SweepStore
from copylab.report.experiments.copies.figures import copies_figures
from tests.synthetic import load_sweep, make_trials, write_sweep

SIZES = (256, 1024, 4096, 16384, 65536)
NAMES = {
    "throughput_vs_size",
    "latency_vs_threads",
    "cache_misses_vs_size",
    "cpu_per_byte_vs_size",
    "zerocopy_copied_fraction",
    "retransmits",
    "senders_vs_size",
    "receive_modes",
    "zerocopy_path",  # the annotated diagram (tests/test_diagram.py)
}


def _figures(tmp_path, **kwargs) -> tuple[dict[str, Figure], pd.DataFrame, dict]:
    options = {"sizes": SIZES, "rr_sizes": (64, 1024), "trials": 4, "seed": 1, **kwargs}
    trials, manifest = load_sweep(write_sweep(tmp_path / "fig", make_trials(sweep="fig", **options)))
    measured = add_metrics(trials)
    metrics = metrics_for([manifest.parameters.declared])
    summary = summarize(measured, metrics)
    pairs = implementations.comparison_pairs()
    crossovers = find_crossovers(measured, compare(measured, pairs, metrics), pairs, n_resamples=200)
    return copies_figures(trials, summary, crossovers, manifest), crossovers, manifest


def _texts(figure: Figure) -> str:
    return "\n".join(t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text")))


def _plotted_axes(figure: Figure) -> list:
    return [ax for ax in figure.axes if ax.lines]


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    plt.close("all")  # what another module left open in this worker is not this drawing's
    return _figures(
        tmp_path_factory.mktemp("full"), implementations=("two_copy", "one_copy", "zero_copy", "iperf3"), threads=(1, 2)
    )


def test_every_figure_is_titled_with_host_and_settings_and_labelled_with_units(full):
    figures, _, manifest = full
    assert set(figures) == NAMES
    assert plt.get_fignums() == []  # plain Figures: nothing left open in pyplot
    for name, figure in figures.items():
        if name == "zerocopy_path":
            continue
        title = figure.get_suptitle()
        assert manifest.host.hostname in title and manifest.host.kernel in title, name
        assert "4 trials/config" in title and "95% CI" in title, name  # the successful trials the summary holds
        for ax in _plotted_axes(figure):
            assert "log2" in ax.get_xlabel(), name
            if ax.get_ylabel():
                assert "[" in ax.get_ylabel() and "]" in ax.get_ylabel(), name
        if _plotted_axes(figure):
            assert [t.get_text() for legend in figure.legends for t in legend.get_texts()], name


def test_throughput_has_ci_bands_iperf3_dashed_and_marked_crossovers(full):
    figures, crossovers, _ = full
    figure = figures["throughput_vs_size"]
    axes = _plotted_axes(figure)
    assert len(axes) == 2  # one panel per thread count
    assert all(any(isinstance(c, PolyCollection) for c in ax.collections) for ax in axes)
    legend = {t.get_text() for t in figure.legends[0].get_texts()}
    assert {"two_copy", "one_copy", "zero_copy", "iperf3"} <= legend
    assert any(line.get_linestyle() == "--" for ax in axes for line in ax.lines)
    marked = crossovers[(crossovers["metric"] == "throughput_gbps") & (crossovers["status"] == "crossover")]
    marked = marked[marked["workload"] == "stream"]
    assert len(marked) == 2  # one_copy overtakes two_copy at 4 KiB in both panels
    for ax, (_, row) in zip(axes, marked.sort_values("threads").iterrows(), strict=True):
        verticals = [line.get_xdata()[0] for line in ax.lines if len(set(line.get_xdata())) == 1]
        assert verticals == [pytest.approx(row["crossover_at"])]
        assert fmt_size(row["crossover_at"], approximate=True) in _texts(figure)


def test_unmeasured_hardware_counters_are_said_plainly_and_not_plotted(full):
    figures, _, _ = full
    cache = figures["cache_misses_vs_size"]
    assert "Not measured on this host" in _texts(cache) and "<not supported>" in _texts(cache)
    assert _plotted_axes(cache) == []  # no zeros drawn
    cpu = figures["cpu_per_byte_vs_size"]
    assert "CPU cycles per byte" in cpu.get_suptitle() and "Not measured" in cpu.get_suptitle()
    assert not any("cycles" in ax.get_ylabel() for ax in cpu.axes)
    assert any("ns/B" in ax.get_ylabel() for ax in cpu.axes)


def test_hardware_counters_are_plotted_when_measured(tmp_path):
    figures, _, _ = _figures(tmp_path, threads=(1,), workloads=("stream",), hardware_counters=True)
    cache = figures["cache_misses_vs_size"]
    assert len(_plotted_axes(cache)) == 2  # L1d and LLC
    assert "Not measured" not in _texts(cache)
    assert any("cycles/B" in ax.get_ylabel() for ax in figures["cpu_per_byte_vs_size"].axes)


def test_latency_vs_threads_at_one_size(full):
    figures, _, _ = full
    figure = figures["latency_vs_threads"]
    assert "64 B" in figure.get_suptitle()
    axes = _plotted_axes(figure)
    assert {ax.get_ylabel().split(" [")[0].replace("\n", " ") for ax in axes} == {
        "mean round-trip latency",
        "99th percentile round-trip latency",
    }
    for ax in axes:
        xs = sorted({x for line in ax.lines for x in line.get_xdata()})
        assert xs == [1, 2]


def test_graceful_without_rr_iperf3_zero_copy_and_with_one_thread_count(tmp_path):
    figures, _, _ = _figures(tmp_path, implementations=("two_copy", "one_copy"), workloads=("stream",), threads=(4,))
    assert set(figures) == NAMES
    assert "No request/response (rr) trials" in _texts(figures["latency_vs_threads"])
    assert "no zero-copy trials" in _texts(figures["zerocopy_copied_fraction"])
    assert len(_plotted_axes(figures["throughput_vs_size"])) == 1
    legend = {t.get_text() for t in figures["throughput_vs_size"].legends[0].get_texts()}
    assert "iperf3" not in legend and "zero_copy" not in legend


def test_the_store_saves_figures_as_png_at_200_dpi_under_figures(full, tmp_path):
    figures, _, _ = full
    subset = {name: figures[name] for name in ("throughput_vs_size", "cache_misses_vs_size")}
    store = SweepStore(tmp_path / "data" / "fig", figures_root=tmp_path / "figures", data_root=tmp_path / "data")
    metadata = {"Source": "fig trials.csv sha256 " + "ab" * 32, "Software": "copylab 0123456789ab"}
    paths = store.save_figures(subset, metadata)
    assert paths == [
        tmp_path / "figures" / "fig" / "throughput_vs_size.png",
        tmp_path / "figures" / "fig" / "cache_misses_vs_size.png",
    ]
    for path in paths:
        with Image.open(path) as image:
            assert image.format == "PNG"
            assert np.allclose(image.info["dpi"], (200, 200), atol=0.5)
            assert image.info["Source"] == metadata["Source"] and image.info["Software"] == metadata["Software"]


@pytest.mark.parametrize(("size", "text"), [(64, "64 B"), (4096, "4 KiB"), (5792.6, "5.66 KiB"), (2**20, "1 MiB")])
def test_approximate_sizes(size, text):
    assert fmt_size(size, approximate=True) == text
