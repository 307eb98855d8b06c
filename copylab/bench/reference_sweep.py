"""Figures read from the reference sweep: what adaptive repetition would have saved on it, and how close each
implementation came to its copy bound."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from copylab.analysis.copy_bound import copy_limit_rows
from copylab.bench.figure import BenchFigure
from copylab.calibration.measurement import measure_memcpy
from copylab.declarations import config
from copylab.measure.planning import schedule
from copylab.record.store import SweepStore


def replay_adaptive(trials: pd.DataFrame, target: float) -> tuple[int, int, int, int]:
    """(fixed trials, adaptive trials, configurations within target fixed, adaptive) of TRIALS' ok rows replayed
    in their recorded order under the adaptive rule."""
    ok = trials[trials["status"] == "ok"].sort_values("order_index")
    fixed_trials = adaptive_trials = fixed_precise = adaptive_precise = 0
    for workload, metric in schedule.PRECISION_METRIC.items():
        for _, group in ok[ok["workload"] == workload].groupby(["implementation", "size_bytes", "threads", "pinning"]):
            values = group.sort_values("repetition")[metric].dropna().tolist()
            stop = next(
                (
                    n
                    for n in range(config.ADAPTIVE_MIN_TRIALS, len(values) + 1)
                    if schedule.precise_enough(values[:n], target)
                ),
                len(values),
            )
            fixed_trials += len(values)
            adaptive_trials += stop
            fixed_precise += schedule.precise_enough(values, target)
            adaptive_precise += schedule.precise_enough(values[:stop], target)
    return fixed_trials, adaptive_trials, fixed_precise, adaptive_precise


def adaptive_saving(reference: Path, target: float = 0.05) -> list[BenchFigure]:
    """Replays the reference sweep's trials in their recorded order under the adaptive rule."""
    trials, _ = SweepStore(reference).load()
    fixed_trials, adaptive_trials, fixed_precise, adaptive_precise = replay_adaptive(trials, target)
    seconds_per_trial = float(trials.loc[trials["status"] == "ok", "trial_wall_s"].mean())
    saved = (fixed_trials - adaptive_trials) * seconds_per_trial
    return [
        BenchFigure(
            f"adaptive repetition (--target-ci {target}) replayed on {reference.name}",
            "report the saving",
            f"{adaptive_trials} instead of {fixed_trials} trials, {saved / 60:.1f} min saved "
            f"({1 - adaptive_trials / fixed_trials:.0%}); configurations within target: {adaptive_precise} adaptive vs "
            f"{fixed_precise} fixed",
            None,
        )
    ]


def copy_limit(reference: Path) -> list[BenchFigure]:
    """Best throughput of each implementation against its copy bound, from the sweep's own calibration."""
    from copylab.analysis.stats import summarize

    trials, manifest = SweepStore(reference).load()
    calibrated = manifest.calibration.memcpy_gbps if manifest.calibration else None
    now = measure_memcpy()["memcpy_gbps"]
    figures = [
        BenchFigure(
            "single-core memcpy bandwidth",
            "report",
            f"{calibrated or float('nan'):.1f} Gbit/s when {reference.name} started, {now:.1f} Gbit/s now",
            None,
        )
    ]
    if calibrated is None:
        return figures
    summary = summarize(trials, metrics=["throughput_gbps"])
    for row in copy_limit_rows(summary, calibrated, manifest.parameters.members):
        figures.append(
            BenchFigure(
                f"{row['implementation']}, receive {row['receive']}: best throughput / copy bound "
                f"({row['copies_per_byte']} copies)",
                "report",
                f"{row['best_gbps']:.1f} / {row['limit_gbps']:.1f} Gbit/s = {row['fraction']:.0%} "
                f"({row['size_bytes']} B, {row['threads']} thread(s))",
                None,
            )
        )
    return figures
