"""What looking costs: copylab's throughput with its trials' windows sampled (perf record, copylab.programs.sampler)
against the same trials unsampled, in interleaved pairs on one namespace pair, so that a shared machine's drift
cancels out instead of biasing one side."""

from __future__ import annotations

import dataclasses
import statistics

from copylab.declarations import implementations
from copylab.declarations.namespace_pair import NamespacePair
from copylab.error_catalogue import BENCH_TRIAL_FAILED
from copylab.errors import BrokenInvariant
from copylab.measure.running import profiling
from copylab.measure.running.spec import TrialSettings, TrialSpec, cpus_for
from copylab.measure.running.trial import run_trial
from copylab.programs import perf
from copylab.programs.sampler import EVENT, SAMPLE_HZ
from copylab.roles import Role
from copylab.testbeds import testbed
from copylab.vocabulary.implementation import Implementation

SIZE = 65536
# The goal: sampling takes less than this share of the throughput away.
GOAL_COST = 0.03


def _throughput(settings: TrialSettings, implementation: Implementation, label: str, repetition: int) -> float:
    spec = TrialSpec(
        f"bench-{label}-{SIZE}-r{repetition}",
        repetition,
        implementation,
        "stream",
        SIZE,
        1,
        "same_cpu",
        repetition,
    )
    row = run_trial(spec, settings)
    if row["status"] != "ok":
        raise BENCH_TRIAL_FAILED.error(trial=spec.trial_id, error=row["error"])
    return float(row["throughput_gbps"])


def sampler_cost(pairs: int, duration_s: float) -> tuple[str, str, str, bool | None]:
    """(figure, goal, measured, passed): the study's baseline sender's throughput sampled over unsampled at 64 KiB,
    the median of PAIRS interleaved pairs; passed is None when this host cannot sample (measured says why)."""
    baseline = implementations.by_role(Role.TWO_COPY)
    if baseline is None:
        raise BrokenInvariant("the registry has no two-copy sender to measure the sampler's cost on")
    name = f"{baseline.name} throughput sampled ({EVENT}, {SAMPLE_HZ} Hz, call chains) / unsampled, 64 KiB, 1 thread"
    goal = f">= {1 - GOAL_COST:g}x (costs under {GOAL_COST:.0%})"
    bed = testbed.Namespaces(NamespacePair("copylab_bsrv", "copylab_bcli"), "bench")
    unsampled = TrialSettings("bench", bed, perf.PerfSupport(available=False, version=None), duration_s, 0.5)
    with bed.running(), profiling.sampling("bench", cpus_for("same_cpu"), True, profiling.is_root()) as sampled:
        if not sampled.use.available:
            return name, goal, f"not measured: {sampled.use.reason}", None
        with_sampler = dataclasses.replace(unsampled, sampler=sampled)
        ratios = []
        for repetition in range(1, pairs + 1):
            runs = [("sampled", with_sampler), ("unsampled", unsampled)]
            order = runs if repetition % 2 else runs[::-1]
            got = {label: _throughput(s, baseline, label, repetition) for label, s in order}
            ratios.append(got["sampled"] / got["unsampled"])
        sampled.finish()
    median = statistics.median(ratios)
    measured = (
        f"{median:.3f}x: costs {1 - median:.1%} (median of {len(ratios)} pairs, range {min(ratios):.3f}-"
        f"{max(ratios):.3f})"
    )
    return name, goal, measured, median >= 1 - GOAL_COST
