"""`invoke bench`: copylab against iperf3 on the same link, the harness's own cost, and the copy limit.

Every figure is measured when the bench runs; comparisons are interleaved
pairs on one namespace pair, summarised by the median of the per-pair ratios,
so drift of a shared machine cancels out instead of biasing one side.
"""

from __future__ import annotations

import contextlib
import io
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import netns, perf, sweep
from copylab.build import require_programs
from copylab.calibrate import copy_limit_rows, measure_memcpy
from copylab.errors import CopylabError
from copylab.paths import REFERENCE_DATA, ROOT
from copylab.trial import TrialSettings, TrialSpec, run_trial


@dataclass(frozen=True)
class Figure:
    name: str
    goal: str
    measured: str
    passed: bool | None  # None: a figure to report, not a goal


@dataclass(frozen=True)
class Contender:
    label: str  # names its trials; unique within a comparison
    implementation: str
    settings: TrialSettings  # with or without perf


def _pair_ratios(challenger: Contender, baseline: Contender, size: int, pairs: int) -> list[float]:
    """challenger/baseline throughput ratio per interleaved pair, alternating which runs first."""
    ratios = []
    for repetition in range(1, pairs + 1):
        throughput = {}
        for contender in (challenger, baseline) if repetition % 2 else (baseline, challenger):
            spec = TrialSpec(f"bench-{contender.label}-{size}-r{repetition}", repetition, contender.implementation,
                             "stream", size, 1, "same_cpu", repetition)
            row = run_trial(spec, contender.settings)
            if row["status"] != "ok":
                raise CopylabError(f"bench trial {spec.trial_id} failed: {row['error']}")
            throughput[contender.label] = row["throughput_gbps"]
        ratios.append(throughput[challenger.label] / throughput[baseline.label])
    return ratios


def _ratio_text(ratios: list[float]) -> str:
    return (f"{statistics.median(ratios):.2f}x (median of {len(ratios)} pairs, range {min(ratios):.2f}-"
            f"{max(ratios):.2f})")


def iperf3_comparison(pairs: int, duration_s: float) -> list[Figure]:
    """The programs against iperf3, both unprofiled (iperf3 cannot run under perf's window control), and what
    profiling costs copylab in a sweep."""
    goals = {"one_copy": 1.0, "two_copy": 0.9}
    pair = netns.NamespacePair("copylab_bsrv", "copylab_bcli")
    # iperf3 takes whole seconds: give copylab the same warm-up and window.
    duration_s = float(math.ceil(duration_s))
    unprofiled = TrialSettings("bench", pair, perf.PerfSupport(available=False, version=None), duration_s, 1.0)
    profiled = TrialSettings("bench", pair, perf.detect(), duration_s, 1.0)
    iperf3 = Contender("iperf3", "iperf3", unprofiled)
    figures = []
    with netns.namespace_pair(pair):
        for size in (65536, 1024):
            for implementation, goal in goals.items():
                ratios = _pair_ratios(Contender(implementation, implementation, unprofiled), iperf3, size, pairs)
                figures.append(Figure(
                    f"{implementation} / iperf3 throughput, {size // 1024} KiB, 1 thread, same CPU", f">= {goal:.1f}x",
                    _ratio_text(ratios), statistics.median(ratios) >= goal))
        ratios = _pair_ratios(Contender("one_copy-perf", "one_copy", profiled),
                              Contender("one_copy", "one_copy", unprofiled), 65536, pairs)
        figures.append(Figure("one_copy throughput under perf stat / without, 64 KiB, 1 thread", "report",
                              _ratio_text(ratios), None))
    return figures


def harness_cost(data_root: Path, smoke: bool) -> list[Figure]:
    """A reduced quick sweep: how much of its wall time is not warm-up or measured window."""
    config = sweep.make_config("bench-harness", "quick", sizes=[64, 65536], threads=[1] if smoke else [1, 4],
                               trials=1 if smoke else 2, namespaces=["copylab_bsrv", "copylab_bcli"])
    result = sweep.run(config, data_root=data_root, progress=False)
    ratio = result.wall_s / result.window_s
    overhead = result.median_overhead_s()
    return [
        Figure("time outside measured windows per trial (median)", "<= 0.30 s",
               f"{overhead:.3f} s over {result.ran} trials", overhead <= 0.3),
        Figure("sweep wall time / (warm-up + measured windows)", "<= 1.20", f"{ratio:.3f}", ratio <= 1.2),
    ]


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def analysis_and_report_time(reference: Path, rows: int, scratch: Path) -> list[Figure]:
    from copylab import manifest
    from copylab.analysis import run_analysis_notebook
    from copylab.report import render_report

    trials = pd.read_csv(reference / "trials.csv")
    big = trials.sample(n=rows, replace=True, random_state=1).reset_index(drop=True)
    big["trial_id"] = [f"{tid}-b{i}" for i, tid in enumerate(big["trial_id"])]
    big["order_index"] = range(rows)
    big["sweep"] = "bench-analysis"
    # Figures go beside data/ (data/NAME/../../figures): keep both inside the scratch directory.
    directory = scratch / "data" / "bench-analysis"
    directory.mkdir(parents=True)
    big.to_csv(directory / "trials.csv", index=False)
    record = manifest.read(reference / "manifest.json")
    record.update(sweep="bench-analysis", complete=False, trials_sha256=None)
    manifest.write(directory / "manifest.json", record)
    analysis_s = _timed(lambda: run_analysis_notebook(directory, ROOT, output=scratch / "bench-analysis.ipynb"))
    report_s = _timed(lambda: render_report([reference], scratch / "report.pdf", ROOT))
    return [
        Figure(f"analysis notebook on a {rows:,}-row trials.csv", "<= 20 s", f"{analysis_s:.1f} s", analysis_s <= 20),
        Figure("report rendered from existing data", "<= 60 s", f"{report_s:.1f} s", report_s <= 60),
    ]


def explorer_redraw_time(reference: Path, changes: int = 7) -> list[Figure]:
    """Median time from moving the explorer's slider to a finished redraw, on the reference sweep."""
    from copylab.explorer import Explorer

    with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel, the widgets' display() prints reprs
        explorer = Explorer(reference, roots=[reference.parent])
        values = [value for _, value in explorer.fixed.options]
        if len(values) < 2:
            raise CopylabError(f"{reference.name} has one {explorer.fixed.description} value: no slider to move")
        explorer.fixed.value = values[0]
        # Cycling through the values: every change differs from the value before it, so each one redraws.
        times = [_timed(lambda value=value: setattr(explorer.fixed, "value", value))
                 for value in (values * changes)[1:changes + 1]]
    median = statistics.median(times)
    return [Figure(f"explorer redraw after a slider change ({reference.name}, median of {len(times)})", "<= 0.5 s",
                   f"{median:.2f} s", median <= 0.5)]


def adaptive_saving(reference: Path, target: float = 0.05) -> list[Figure]:
    """Replays the reference sweep's trials in their recorded order under the adaptive rule."""
    trials = pd.read_csv(reference / "trials.csv")
    ok = trials[trials["status"] == "ok"].sort_values("order_index")
    fixed_trials = adaptive_trials = fixed_precise = adaptive_precise = 0
    seconds_per_trial = float(ok["trial_wall_s"].mean())
    for workload, metric in sweep.PRECISION_METRIC.items():
        for _, group in ok[ok["workload"] == workload].groupby(
                ["implementation", "size_bytes", "threads", "pinning"]):
            values = group.sort_values("repetition")[metric].dropna().tolist()
            stop = next((n for n in range(sweep.ADAPTIVE_MIN_TRIALS, len(values) + 1)
                         if sweep.precise_enough(values[:n], target)), len(values))
            fixed_trials += len(values)
            adaptive_trials += stop
            fixed_precise += sweep.precise_enough(values, target)
            adaptive_precise += sweep.precise_enough(values[:stop], target)
    saved = (fixed_trials - adaptive_trials) * seconds_per_trial
    return [Figure(
        f"adaptive repetition (--target-ci {target}) replayed on {reference.name}",
        "report the saving",
        f"{adaptive_trials} instead of {fixed_trials} trials, {saved / 60:.1f} min saved "
        f"({1 - adaptive_trials / fixed_trials:.0%}); configurations within target: {adaptive_precise} adaptive vs "
        f"{fixed_precise} fixed", None)]


def copy_limit(reference: Path) -> list[Figure]:
    """Best throughput of each implementation against its copy bound, from the sweep's own calibration."""
    from copylab import manifest
    from copylab.stats import summarize
    from copylab.trials import load_trials

    calibrated = manifest.read(reference / "manifest.json").get("calibration", {}).get("memcpy_gbps")
    now = measure_memcpy()["memcpy_gbps"]
    figures = [Figure("single-core memcpy bandwidth", "report",
                      f"{calibrated or float('nan'):.1f} Gbit/s when {reference.name} started, {now:.1f} Gbit/s now",
                      None)]
    if calibrated is None:
        return figures
    summary = summarize(load_trials(reference / "trials.csv"), metrics=["throughput_gbps"])
    for row in copy_limit_rows(summary, calibrated):
        figures.append(Figure(
            f"{row['implementation']}: best throughput / copy bound ({row['copies']} copies)", "report",
            f"{row['best_gbps']:.1f} / {row['limit_gbps']:.1f} Gbit/s = {row['fraction']:.0%} "
            f"({row['size_bytes']} B, {row['threads']} thread(s))", None))
    return figures


def table(figures: list[Figure]) -> str:
    lines = ["| figure | goal | measured | result |", "|---|---|---|---|"]
    for figure in figures:
        verdict = "-" if figure.passed is None else ("pass" if figure.passed else "FAIL")
        lines.append(f"| {figure.name} | {figure.goal} | {figure.measured} | {verdict} |")
    return "\n".join(lines)


def run_bench(pairs: int = 5, duration_s: float = 2.0, rows: int = 10_000, smoke: bool = False,
              reference: Path = REFERENCE_DATA) -> list[Figure]:
    """All figures; smoke=True runs each part as briefly as possible (for CI)."""
    netns.require_root("bench")
    if not (reference / "trials.csv").exists():
        raise CopylabError(f"{reference} holds no sweep to replay")
    require_programs([f"{implementation}_{side}" for implementation in ("one_copy", "two_copy")
                      for side in ("server", "client")])
    with tempfile.TemporaryDirectory(prefix="copylab-bench-") as scratch:
        figures = iperf3_comparison(1 if smoke else pairs, 1.0 if smoke else duration_s)
        figures += harness_cost(Path(scratch), smoke)
        figures += analysis_and_report_time(reference, 500 if smoke else rows, Path(scratch))
        figures += explorer_redraw_time(reference)
        figures += adaptive_saving(reference)
        figures += copy_limit(reference)
    return figures

