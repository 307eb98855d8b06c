"""analyze() end to end, and the analysis notebook under papermill."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from copylab.analysis import NOTEBOOK, analyze, crossover_sentences, run_analysis_notebook
from copylab.crossover import CROSSOVER_COLUMNS, STATUSES
from copylab.errors import CopylabError
from copylab.stats import COMPARISON_COLUMNS, SUMMARY_COLUMNS
from tests.synthetic import make_trials, write_sweep

PROJECT = Path(__file__).resolve().parents[1]
FIGURES = {
    "throughput_vs_size.png",
    "latency_vs_threads.png",
    "cache_misses_vs_size.png",
    "cpu_per_byte_vs_size.png",
    "zerocopy_copied_fraction.png",
    "retransmits.png",
}


def _sweep(root: Path, name: str) -> Path:
    trials = make_trials(sweep=name, sizes=(512, 2048, 8192, 32768), rr_sizes=(64,), threads=(1,), trials=3, seed=4)
    return write_sweep(root / "data" / name, trials)


def test_notebook_is_committed_clean_with_a_parameters_cell():
    notebook = nbformat.read(PROJECT / NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)
    tagged = [cell for cell in code if "parameters" in cell.metadata.get("tags", [])]
    assert len(tagged) == 1
    for name in ("data_dir", "confidence", "pairs", "metrics"):
        assert f"{name} = " in tagged[0].source


def test_analyze_writes_the_three_tables_and_the_figures(tmp_path):
    data_dir = _sweep(tmp_path, "unit")
    result = analyze(data_dir, n_resamples=300)
    tables = {name: pd.read_csv(data_dir / f"{name}.csv") for name in ("summary", "comparisons", "crossovers")}
    assert tuple(tables["summary"].columns) == SUMMARY_COLUMNS
    assert tuple(tables["comparisons"].columns) == COMPARISON_COLUMNS
    assert tuple(tables["crossovers"].columns) == CROSSOVER_COLUMNS
    assert set(tables["crossovers"]["status"]) <= set(STATUSES)
    assert len(tables["summary"]) == len(result.summary)
    assert {p.name for p in (tmp_path / "figures" / "unit").iterdir()} == FIGURES
    assert len(result.written) == 3 + len(FIGURES)
    throughput = result.crossovers[result.crossovers["metric"] == "throughput_gbps"]
    assert len(crossover_sentences(throughput)) == len(throughput)


def test_analyze_rejects_bad_arguments(tmp_path):
    data_dir = _sweep(tmp_path, "args")
    with pytest.raises(CopylabError, match="confidence"):
        analyze(data_dir, confidence=95)
    with pytest.raises(CopylabError, match="unknown: four_copy"):
        analyze(data_dir, pairs=[("four_copy", "two_copy")])
    with pytest.raises(CopylabError, match="no such sweep directory"):
        analyze(tmp_path / "data" / "missing")


def test_notebook_runs_under_papermill_and_writes_everything(tmp_path, capfd):
    data_dir = _sweep(tmp_path, "nb")
    output = tmp_path / "report" / "sweeps" / "nb.ipynb"
    options = dict(confidence=0.9, pairs=[("one_copy", "two_copy")], metrics=["throughput_gbps"])
    started = time.monotonic()
    analyze(data_dir, **options)
    in_process = time.monotonic() - started
    started = time.monotonic()
    written = run_analysis_notebook(data_dir, PROJECT, output=output, **options)
    # The notebook is thin: beyond the functions it calls it adds kernel start-up, imports and display
    # (about 8x the in-process analysis of this small fixture here; seconds are timed by `invoke bench`).
    assert time.monotonic() - started < 20 * in_process
    assert written == output and output.exists()
    for name in ("summary", "comparisons", "crossovers"):
        assert (data_dir / f"{name}.csv").exists()
    assert {p.name for p in (tmp_path / "figures" / "nb").iterdir()} == FIGURES
    comparisons = pd.read_csv(data_dir / "comparisons.csv")
    assert set(comparisons["metric"]) == {"throughput_gbps"} and set(comparisons["challenger"]) == {"one_copy"}

    executed = nbformat.read(output, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert 'pairs = [["one_copy", "two_copy"]]' in injected[0].source  # a real list, not a string
    assert "confidence = 0.9" in injected[0].source
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == len(FIGURES)
    assert not any(o.get("output_type") == "error" for o in outputs)
    # the kernel ran on a private socket (no TCP warning) and was stopped, not left to its parent's exit
    assert "IPKernelApp" not in capfd.readouterr().err
    kernels = subprocess.run(["pgrep", "-P", str(os.getpid()), "-f", "ipykernel"], capture_output=True, text=True)
    assert kernels.stdout == ""


def test_failing_notebook_raises_and_names_the_output(tmp_path):
    data_dir = _sweep(tmp_path, "broken")
    trials = data_dir / "trials.csv"
    trials.write_text(trials.read_text()[:-30])  # cut mid-row, as a crashed writer would
    output = tmp_path / "broken.ipynb"
    with pytest.raises(CopylabError, match=r"notebook failed in cell \d+: CopylabError: .*truncated.*broken\.ipynb"):
        run_analysis_notebook(data_dir, PROJECT, output=output)
    assert output.exists()
