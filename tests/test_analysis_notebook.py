"""analyze() end to end, and the analysis notebook under papermill."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from copylab.analysis.analyze_sweep import NOTEBOOK, analyze, run_analysis_notebook
from copylab.analysis.crossover import STATUSES
from copylab.declarations.implementations import contender_pairs
from copylab.errors import CopylabError
from copylab.record import tables
from copylab.record.store import SweepStore
from copylab.report import plugins
from copylab.report.prose import crossover_sentences
from tests.synthetic import make_trials, write_sweep

FIGURES = {
    "zerocopy_path.png",
    "throughput_vs_size.png",
    "latency_vs_threads.png",
    "cache_misses_vs_size.png",
    "cpu_per_byte_vs_size.png",
    "zerocopy_copied_fraction.png",
    "retransmits.png",
    "senders_vs_size.png",
    "receive_modes.png",
}


def _sweep(root: Path, name: str) -> SweepStore:
    trials = make_trials(sweep=name, sizes=(512, 2048, 8192, 32768), rr_sizes=(64,), threads=(1,), trials=3, seed=4)
    return SweepStore(write_sweep(root / "data" / name, trials), figures_root=root / "figures")


def test_notebook_is_committed_clean_with_a_parameters_cell():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "copylab"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)
    tagged = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("data_dir", "confidence", "pairs", "metrics"):
        assert f"{name} = " in tagged[0].source


def test_analyze_writes_the_three_tables_and_the_figures(tmp_path):
    store = _sweep(tmp_path, "unit")
    result = analyze(store, plugins.draw, n_resamples=300)
    written = {name: store.read_table(name) for name in tables.TABLES}
    for name, frame in written.items():
        assert dict(frame.dtypes.astype(str)) == tables.TABLES[name], name  # typed after the round trip
    pd.testing.assert_frame_equal(written["summary"], result.summary)
    pd.testing.assert_frame_equal(written["crossovers"], result.crossovers)
    assert set(written["crossovers"]["status"]) <= set(STATUSES)
    assert {p.name for p in (tmp_path / "figures" / "unit").iterdir()} == FIGURES
    assert len(result.written) == 3 + len(FIGURES)
    throughput = result.crossovers[result.crossovers["metric"] == "throughput_gbps"]
    assert len(crossover_sentences(throughput)) == len(throughput)


def test_analyze_rejects_bad_arguments(tmp_path):
    store = _sweep(tmp_path, "args")
    with pytest.raises(CopylabError, match="confidence"):
        analyze(store, plugins.draw, confidence=95)
    with pytest.raises(CopylabError, match="unknown implementation 'four_copy'"):
        contender_pairs([("four_copy", "two_copy")])
    with pytest.raises(CopylabError, match="pairs must be"):
        contender_pairs([("one_copy",)])
    with pytest.raises(CopylabError, match="no such sweep directory"):
        analyze(SweepStore(tmp_path / "data" / "missing"), plugins.draw)


def test_a_nested_sweep_gets_its_figures_under_figures_never_under_data(tmp_path):
    trials = make_trials(sweep="run1", sizes=(512, 2048), workloads=("stream",), threads=(1,), trials=3, seed=4)
    directory = write_sweep(tmp_path / "data" / "study" / "run1", trials)
    store = SweepStore(directory, figures_root=tmp_path / "figures", data_root=tmp_path / "data")
    analyze(store, plugins.draw, n_resamples=100)
    assert {p.name for p in (tmp_path / "figures" / "study" / "run1").iterdir()} == FIGURES
    assert not list((tmp_path / "data").rglob("*.png"))


def test_notebook_runs_under_papermill_and_writes_everything(tmp_path, capfd):
    options = dict(confidence=0.9, pairs=[("one_copy", "two_copy")], metrics=["throughput_gbps"])
    # The in-process analysis, the notebook's time yardstick, runs on a copy of its own: whatever the notebook's
    # sweep holds afterwards, the notebook wrote.
    baseline = _sweep(tmp_path / "baseline", "nb")
    started = time.monotonic()
    analyze(baseline, plugins.draw, **options)
    in_process = time.monotonic() - started
    store = _sweep(tmp_path, "nb")
    data_dir, figures = store.directory, tmp_path / "figures" / "nb"
    output = tmp_path / "report" / "sweeps" / "nb.ipynb"
    tables_written = [data_dir / f"{name}.csv" for name in ("summary", "comparisons", "crossovers")]
    assert not any(path.exists() for path in tables_written) and not figures.exists() and not output.exists()
    started, before = time.monotonic(), time.time()
    written = run_analysis_notebook(store, output=output, **options)
    # The notebook is thin: beyond the functions it calls it adds kernel start-up, imports and display
    # (about 8x the in-process analysis of this small fixture here; seconds are timed by `invoke bench`).
    assert time.monotonic() - started < 20 * in_process
    assert written == output and output.exists()
    assert {p.name for p in figures.iterdir()} == FIGURES
    for path in [*tables_written, *figures.iterdir()]:
        assert path.stat().st_mtime >= before - 1, f"{path.name} not written by this notebook run"
    # The same tables as the analysis run in process on the same data with the same options.
    for path in tables_written:
        pd.testing.assert_frame_equal(pd.read_csv(path), pd.read_csv(baseline.directory / path.name), obj=path.name)
    comparisons = pd.read_csv(data_dir / "comparisons.csv")
    assert set(comparisons["metric"]) == {"throughput_gbps"} and set(comparisons["challenger"]) == {"one_copy"}

    executed = nbformat.read(output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert 'pairs = [["one_copy", "two_copy"]]' in injected[0].source  # a real list, not a string
    assert "confidence = 0.9" in injected[0].source
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(FIGURES)
    assert not any(o.get("output_type") == "error" for o in outputs)
    # the kernel ran on a private socket (ipykernel warns on TCP) and was stopped, not left to its parent's exit
    # (the SIGINT that jupyter_client sends every kernel it stops may be logged: that is not checked)
    assert "running over TCP" not in capfd.readouterr().err
    kernels = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "ipykernel"], capture_output=True, text=True)
    assert kernels.stdout == ""


def test_failing_notebook_raises_and_names_the_output(tmp_path):
    store = _sweep(tmp_path, "broken")
    trials = store.trials_path
    trials.write_text(trials.read_text()[:-30])  # cut mid-row, as a crashed writer would
    output = tmp_path / "broken.ipynb"
    with pytest.raises(CopylabError, match=r"notebook failed in cell \d+: CopylabError: .*truncated.*broken\.ipynb"):
        run_analysis_notebook(store, output=output)
    assert output.exists()
