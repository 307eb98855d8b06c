"""What the harness itself costs: the time a sweep spends outside its measured windows, and the full profile's
duration estimated from it."""

from __future__ import annotations

from pathlib import Path

from copylab.bench.figure import FULL_PROFILE_BUDGET_MIN, OVERHEAD_BUDGET_S, BenchFigure
from copylab.declarations import config
from copylab.declarations.namespace_pair import NamespacePair
from copylab.declarations.sweep_config import SweepConfig
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.measure.running.spec import TrialSettings
from copylab.measure.running.trial import measured_window_s
from copylab.programs import perf
from copylab.record.store import SweepStore
from copylab.testbeds import testbed


def harness_cost(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """A reduced quick sweep: how much of its wall time is not warm-up or measured window."""
    settings = config.make_config(
        "bench-harness",
        "quick",
        sizes=[64] if smoke else [64, 65536],
        threads=[1] if smoke else [1, 4],
        trials=1 if smoke else 2,
        namespaces=["copylab_bsrv", "copylab_bcli"],
        calibrate=not smoke,  # part of a sweep's wall time as users run it; a smoke run only checks the parts run
        duration_s=0.1 if smoke else None,
        warmup_s=0.05 if smoke else None,
    )
    result = sweep.run(settings, SweepStore.under(data_root, settings.name), progress=False)
    ratio = result.wall_s / result.window_s
    overhead = result.median_overhead_s()
    return [
        BenchFigure(
            "time outside measured windows per trial (median)",
            f"<= {OVERHEAD_BUDGET_S:.2f} s",
            f"{overhead:.3f} s over {result.ran} trials",
            overhead <= OVERHEAD_BUDGET_S,
        ),
        full_profile_estimate(overhead),
        BenchFigure("sweep wall time / (warm-up + measured windows)", "<= 1.20", f"{ratio:.3f}", ratio <= 1.2),
    ]


def full_profile_estimate(overhead_s: float) -> BenchFigure:
    """The copies study's full profile: its trials times (warm-up + window + the harness's time per trial)."""
    full = config.make_config("bench-full", "full")
    trials = schedule.plan(full)
    minutes = sum(measured_window_s(spec, _window_settings(full)) + overhead_s for spec in trials) / 60
    return BenchFigure(
        f"full profile of the copies study ({len(trials):,} trials), estimated from its plan and the harness time",
        f"<= {FULL_PROFILE_BUDGET_MIN} min",
        f"{minutes:.1f} min",
        minutes <= FULL_PROFILE_BUDGET_MIN,
    )


def _window_settings(settings: SweepConfig) -> TrialSettings:
    bed = testbed.Namespaces(NamespacePair(*settings.namespaces), settings.name)
    return TrialSettings(settings.name, bed, perf.PerfSupport(False, None), settings.duration_s, settings.warmup_s)
