"""The bench runs end to end (a smoke run: CI checks that it works, not how fast anything is, so it runs beside
other tests)."""

from __future__ import annotations

import pandas as pd
import pytest

from copylab.bench.figure import BenchFigure, table
from copylab.bench.goals import run_bench
from copylab.bench.reference_sweep import replay_adaptive
from copylab.bench.timing import grown_sweep
from copylab.paths import REFERENCE_DATA
from tests.conftest import needs_root


def test_table_marks_goals():
    figures = [
        BenchFigure("a", ">= 1", "1.2x", True),
        BenchFigure("b", "<= 2", "3", False),
        BenchFigure("c", "report", "x", None),
    ]
    lines = table(figures).splitlines()
    assert lines[2].endswith("| pass |") and lines[3].endswith("| FAIL |") and lines[4].endswith("| - |")


def test_adaptive_replay_of_recorded_trials():
    rows = []
    for threads, values in ((1, [10.0, 10.1, 9.9, 10.0, 10.0]), (2, [5.0, 9.0, 2.0, 8.0, 4.0])):
        for repetition, value in enumerate(values, start=1):
            rows.append(
                {
                    "status": "ok",
                    "order_index": len(rows),
                    "workload": "stream",
                    "implementation": "one_copy",
                    "size_bytes": 1024,
                    "threads": threads,
                    "pinning": "same_cpu",
                    "repetition": repetition,
                    "throughput_gbps": value,
                    "latency_mean_us": None,
                    "trial_wall_s": 1.5,
                }
            )
    fixed, adaptive, fixed_precise, adaptive_precise = replay_adaptive(pd.DataFrame(rows), target=0.05)
    # the stable configuration stops at 3 trials, the noisy one runs all 5: 8 instead of 10
    assert (fixed, adaptive) == (10, 8)
    assert (fixed_precise, adaptive_precise) == (1, 1)


@needs_root
@pytest.mark.skipif(not (REFERENCE_DATA / "trials.csv").exists(), reason="needs the committed reference sweep")
def test_bench_smoke_runs_every_part():
    figures = run_bench(smoke=True)
    names = " ".join(figure.name for figure in figures)
    for part in (
        "one_copy --layout contiguous / iperf3",
        "zero_copy --layout contiguous / zc_contiguous",
        "full profile of the copies study",
        "outside measured windows",
        "analysis notebook",
        "report rendered",
        "explorer redraw",
        "adaptive repetition",
        "copy bound",
        "memcpy",
        "sampled (cpu-clock",
    ):
        assert part in names
    assert all(figure.measured for figure in figures)


def test_a_sweep_grown_far_past_the_reference_loads(tmp_path):
    """The full bench grows the reference to 100,000 rows, about 150 copies of its blocks: the grown sweep's manifest
    must allow every block it holds (its first full run stopped there: 'trials allow 5 repetitions but trials.csv
    has 758')."""
    reference = len(pd.read_csv(REFERENCE_DATA / "trials.csv"))
    rows = reference * 20 + 7
    store = grown_sweep(REFERENCE_DATA, rows, tmp_path)
    trials, manifest = store.load()
    assert len(trials) == rows and manifest.parameters.trials == int(trials["repetition"].max()) > 20
    assert (tmp_path / "data" / "bench-analysis" / "trials.csv").exists()
