"""Each implementation with a bench goal against the implementation its goal names (iperf3 for the
study's senders): interleaved pairs on one namespace pair, summarised by the median of the per-pair ratios, so
drift of a shared machine cancels out instead of biasing one side."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from copylab.bench.figure import BenchFigure
from copylab.declarations import implementations
from copylab.declarations.namespace_pair import NamespacePair
from copylab.error_catalogue import BENCH_TRIAL_FAILED
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import run_trial
from copylab.programs import perf
from copylab.testbeds import testbed
from copylab.vocabulary.implementation import BenchGoal, Implementation


@dataclass(frozen=True)
class Contender:
    label: str  # names its trials; unique within a comparison
    implementation: Implementation
    settings: TrialSettings  # with or without perf
    layout: str = implementations.STUDY_LAYOUT

    def __post_init__(self) -> None:
        # an implementation with one layout, or none to choose, runs in it whatever was asked
        fixed = self.implementation.fixed_layout
        if fixed is not None:
            object.__setattr__(self, "layout", fixed)


def _pair_ratios(challenger: Contender, baseline: Contender, size: int, pairs: int) -> list[float]:
    """challenger/baseline throughput ratio per interleaved pair, alternating which runs first."""
    ratios = []
    for repetition in range(1, pairs + 1):
        throughput = {}
        for contender in (challenger, baseline) if repetition % 2 else (baseline, challenger):
            spec = TrialSpec(
                f"bench-{contender.label}-{size}-r{repetition}",
                repetition,
                contender.implementation,
                "stream",
                size,
                1,
                "same_cpu",
                repetition,
                layout=contender.layout,
            )
            row = run_trial(spec, contender.settings)
            if row["status"] != "ok":
                raise BENCH_TRIAL_FAILED.error(trial=spec.trial_id, error=row["error"])
            throughput[contender.label] = row["throughput_gbps"]
        ratios.append(throughput[challenger.label] / throughput[baseline.label])
    return ratios


def _ratio_text(ratios: list[float]) -> str:
    return (
        f"{statistics.median(ratios):.2f}x (median of {len(ratios)} pairs, range {min(ratios):.2f}-{max(ratios):.2f})"
    )


def _held_to(
    goal: BenchGoal, challenger: Contender, settings: TrialSettings, size: int, pairs: int, checked: bool
) -> BenchFigure:
    """CHALLENGER against its goal's implementation (run with SETTINGS), interleaved; CHECKED: against the goal."""
    against = goal.against
    ratios = _pair_ratios(challenger, Contender(against.name, against, settings), size, pairs)
    return BenchFigure(
        f"{challenger.implementation.name} --layout {challenger.layout} / {against.name} throughput, "
        f"{size // 1024} KiB, 1 thread, same CPU",
        f">= {goal.at_least:g}x" if checked else "report",
        _ratio_text(ratios),
        statistics.median(ratios) >= goal.at_least if checked else None,
    )


def goal_comparisons(
    pairs: int, duration_s: float, beside: bool = True, sizes: tuple[int, ...] = (65536, 1024)
) -> list[BenchFigure]:
    """Each implementation with a bench goal against the implementation the goal names at SIZES, both unprofiled
    (a wrapped tool cannot run under perf's window control), in the goal's layout and, BESIDE, its others; then
    what profiling costs copylab in a sweep."""
    goals = [(impl, impl.bench) for impl in implementations.registry().values() if impl.bench]
    bed = testbed.Namespaces(NamespacePair("copylab_bsrv", "copylab_bcli"), "bench")
    # Wrapped tools may take whole seconds: give every contender the same warm-up and window.
    duration_s = float(math.ceil(duration_s))
    unprofiled = TrialSettings("bench", bed, perf.PerfSupport(available=False, version=None), duration_s, 1.0)
    profiled_settings = TrialSettings("bench", bed, bed.perf_support(), duration_s, 1.0)
    figures = []
    with bed.running():
        for size in sizes:
            for implementation, goal in goals:
                for layout in implementation.driver.layouts if beside else (goal.layout,):
                    checked = layout == goal.layout and size in goal.sizes
                    challenger = Contender(f"{implementation.name}-{layout}", implementation, unprofiled, layout)
                    figures.append(_held_to(goal, challenger, unprofiled, size, pairs, checked))
        profiled = goals[0][0]
        profiled_name = profiled.name
        ratios = _pair_ratios(
            Contender(f"{profiled_name}-perf", profiled, profiled_settings),
            Contender(profiled_name, profiled, unprofiled),
            65536,
            pairs,
        )
        figures.append(
            BenchFigure(
                f"{profiled_name} throughput under perf stat / without, 64 KiB, 1 thread",
                "report",
                _ratio_text(ratios),
                None,
            )
        )
    return figures
