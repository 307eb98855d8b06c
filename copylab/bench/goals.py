"""`invoke bench`: every figure of the bench, measured when it runs (each module of copylab.bench measures one
concern: the comparisons with iperf3, the harness's cost, the spread of a measurement, the study's times and the
reference sweep's figures)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from copylab.bench.comparisons import goal_comparisons
from copylab.bench.figure import BenchFigure
from copylab.bench.harness import harness_cost
from copylab.bench.reference_sweep import adaptive_saving, copy_limit
from copylab.bench.sampling_cost import sampler_cost
from copylab.bench.spread import design_comparison, transport_spread, window_spread
from copylab.bench.timing import analysis_and_report_time, explorer_redraw_time, report_time
from copylab.declarations import implementations
from copylab.error_catalogue import BENCH_NO_REFERENCE
from copylab.paths import REFERENCE_DATA
from copylab.programs.build import require_programs
from copylab.testbeds import netns


def run_bench(
    pairs: int = 5, duration_s: float = 2.0, rows: int = 100_000, smoke: bool = False, reference: Path = REFERENCE_DATA
) -> list[BenchFigure]:
    """All figures; smoke=True runs each part as briefly as possible (for CI)."""
    netns.require_root("bench")
    if not (reference / "trials.csv").exists():
        raise BENCH_NO_REFERENCE.error(reference=reference)
    require_programs(implementations.programs(implementations.registry().values()))
    with tempfile.TemporaryDirectory(prefix="copylab-bench-") as scratch:
        figures = (
            goal_comparisons(1, 1.0, beside=False, sizes=(65536,)) if smoke else goal_comparisons(pairs, duration_s)
        )
        figures += harness_cost(Path(scratch), smoke)
        figures += design_comparison(Path(scratch), smoke)
        figures += window_spread(Path(scratch), smoke)
        figures += transport_spread(Path(scratch), smoke)
        figures += analysis_and_report_time(reference, 500 if smoke else rows, Path(scratch), smoke)
        figures += explorer_redraw_time(reference)
        figures += adaptive_saving(reference)
        figures += copy_limit(reference)
    figures += report_time(smoke)
    figures.append(BenchFigure(*sampler_cost(1 if smoke else pairs, 1.0 if smoke else duration_s)))
    return figures
