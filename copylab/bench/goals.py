"""`invoke bench`: copylab against iperf3 on the same link, the harness's own cost, and the copy limit.

Every figure is measured when the bench runs; comparisons are interleaved
pairs on one namespace pair, summarised by the median of the per-pair ratios,
so drift of a shared machine cancels out instead of biasing one side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import math
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import experiments
from copylab.analysis.copy_bound import copy_limit_rows
from copylab.bench.sampling_cost import sampler_cost
from copylab.calibration.measurement import measure_memcpy
from copylab.declarations import config, implementations
from copylab.declarations.implementation import BenchGoal
from copylab.declarations.namespace_pair import NamespacePair
from copylab.declarations.settings import get as setting
from copylab.declarations.sweep_config import SweepConfig
from copylab.errors import CopylabError
from copylab.measure import sweep
from copylab.measure.planning import schedule
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.trial import measured_window_s, run_trial
from copylab.paths import REFERENCE_DATA, ROOT
from copylab.programs import perf
from copylab.programs.build import require_programs
from copylab.record.store import SweepStore
from copylab.roles import Role
from copylab.testbeds import congestion, netns, testbed


@dataclass(frozen=True)
class BenchFigure:
    name: str
    goal: str
    measured: str
    passed: bool | None  # None: a figure to report, not a goal


# The study's budgets (issue: the whole study within budget).
OVERHEAD_BUDGET_S = 0.1
FULL_PROFILE_BUDGET_MIN = 30
ANALYSIS_BUDGET_S = 60
REPORT_BUDGET_S = 300


@dataclass(frozen=True)
class Contender:
    label: str  # names its trials; unique within a comparison
    implementation: str
    settings: TrialSettings  # with or without perf
    layout: str = implementations.STUDY_LAYOUT

    def __post_init__(self) -> None:
        # an implementation with one layout, or none to choose, runs in it whatever was asked
        fixed = implementations.fixed_layout(self.implementation)
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
                implementations.get(contender.implementation),
                "stream",
                size,
                1,
                "same_cpu",
                repetition,
                layout=contender.layout,
            )
            row = run_trial(spec, contender.settings)
            if row["status"] != "ok":
                raise CopylabError(f"bench trial {spec.trial_id} failed: {row['error']}")
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
    ratios = _pair_ratios(challenger, Contender(goal.against, goal.against, settings), size, pairs)
    return BenchFigure(
        f"{challenger.implementation} --layout {challenger.layout} / {goal.against} throughput, {size // 1024} KiB, "
        "1 thread, same CPU",
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
    goals = [(impl.name, impl.bench) for impl in implementations.registry().values() if impl.bench]
    bed = testbed.Namespaces(NamespacePair("copylab_bsrv", "copylab_bcli"), "bench")
    # Wrapped tools may take whole seconds: give every contender the same warm-up and window.
    duration_s = float(math.ceil(duration_s))
    unprofiled = TrialSettings("bench", bed, perf.PerfSupport(available=False, version=None), duration_s, 1.0)
    profiled = TrialSettings("bench", bed, bed.perf_support(), duration_s, 1.0)
    figures = []
    with bed.running():
        for size in sizes:
            for name, goal in goals:
                for layout in implementations.get(name).driver.layouts if beside else (goal.layout,):
                    checked = layout == goal.layout and size in goal.sizes
                    challenger = Contender(f"{name}-{layout}", name, unprofiled, layout)
                    figures.append(_held_to(goal, challenger, unprofiled, size, pairs, checked))
        profiled_name = goals[0][0]
        ratios = _pair_ratios(
            Contender(f"{profiled_name}-perf", profiled_name, profiled),
            Contender(profiled_name, profiled_name, unprofiled),
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
    result = sweep.run(settings, data_root=data_root, progress=False)
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


def _measured(name: str, data_root: Path, smoke: bool, **settings: Any) -> pd.DataFrame:
    """A small sweep on the bench's own namespaces, its trials with copylab.declarations.metrics' columns.  No part
    reads its calibration, which would cost each sweep about 10 s; SMOKE also leaves the kernel's copies uncounted
    (attaching bpftrace costs each sweep a second)."""
    from copylab.declarations.metrics import add_metrics

    settings["calibrate"] = False
    if smoke:
        settings["kernel_copies"] = False
        # windows as short as run at all, where the part does not choose its own
        settings = {"duration_s": 0.1, "warmup_s": 0.05, **settings}
    config_ = config.make_config(name, "quick", namespaces=["copylab_bsrv", "copylab_bcli"], **settings)
    result = sweep.run(config_, data_root=data_root, progress=False)
    if result.failed:
        raise CopylabError(f"bench sweep {name}: {result.failures[0]}")
    return add_metrics(SweepStore(result.directory).load()[0])


def _deciding(trials: pd.DataFrame, paired: bool) -> pd.DataFrame:
    """The copies experiment's deciding comparisons on throughput, per size."""
    from copylab.analysis.stats import compare

    pairs = implementations.deciding_pairs(experiments.main())
    found = compare(trials, pairs, ["throughput_gbps"], paired=paired)
    return found.set_index(["challenger", "size_bytes"]).sort_index()


def design_comparison(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The blocked and the randomized design on this host, at an equal number of trials, each twice: how wide
    the deciding ratios' intervals are, and whether two runs of a design reach the same verdicts."""
    trials = 2 if smoke else 8
    grid = dict(
        implementations=list(
            dict.fromkeys(name for pair in implementations.deciding_pairs(experiments.main()) for name in pair)
        ),
        workloads=["stream"],
        sizes=[65536] if smoke else [1024, 16384, 65536],
        threads=[1],
        receive=["copy"],
        trials=trials,
    )
    figures = []
    for design in ("blocked", "randomized"):
        runs = [
            _deciding(
                _measured(f"bench-{design}-{run}", data_root, smoke, design=design, seed=run, **grid),
                design == "blocked",
            )
            for run in (1, 2)
        ]
        bounds = [bound for run in runs for bound in zip(run["ratio_ci_low"], run["ratio_ci_high"], strict=True)]
        # With few trials Fieller's interval may be unbounded (the baseline's mean not clear of zero): counted apart.
        widths = [math.log(high / low) for low, high in bounds if low > 0 and math.isfinite(high)]
        unbounded = len(bounds) - len(widths)
        verdicts = [run["significant"].astype(str) + run["challenger_better"].astype(str) for run in runs]
        same = int((verdicts[0] == verdicts[1]).sum())
        figures.append(
            BenchFigure(
                f"{design} design, {trials} trials each: width of the deciding ratios' 95% intervals (log ratio, "
                "median over comparisons)",
                "report",
                (
                    f"{statistics.median(widths):.3f} (range {min(widths):.3f}-{max(widths):.3f} over {len(widths)})"
                    if widths
                    else "no bounded interval"
                )
                + (f"; {unbounded} unbounded" if unbounded else ""),
                None,
            )
        )
        figures.append(
            BenchFigure(
                f"{design} design: the same verdict from two runs",
                "report",
                f"{same} of {len(verdicts[0])} comparisons (significant and direction alike)",
                None,
            )
        )
    return figures


def window_spread(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The spread between identical trials with a short and a long window: what a longer window averages away."""
    figures = []
    baseline = implementations.by_role(Role.TWO_COPY)
    assert baseline is not None
    for duration, warmup in ((0.2, 0.1), (0.5, 0.2)):
        trials = _measured(
            f"bench-window-{duration}",
            data_root,
            smoke,
            implementations=[baseline.name],
            workloads=["stream"],
            sizes=[65536],
            threads=[1],
            receive=["copy"],
            trials=3 if smoke else 16,
            duration_s=duration,
            warmup_s=warmup,
        )
        values = trials.loc[trials["status"] == "ok", "throughput_gbps"]
        figures.append(
            BenchFigure(
                f"spread between identical trials ({baseline.name}, 64 KiB), {duration:g} s window after {warmup:g} s",
                "report",
                f"CV {values.std() / values.mean():.1%} over {len(values)} trials, "
                f"{trials['trial_wall_s'].median():.2f} s per trial",
                None,
            )
        )
    return figures


# The congestion control that paces by a timer, which the default is held against (docs/method.md: Why cubic).
PACED_CONGESTION = "bbr"


def _transports() -> list[tuple[str, dict[str, Any]]]:
    """The default transport, and each of its settings changed to what the host would choose: a pacing
    congestion control, socket buffers the kernel sizes as a connection goes (docs/method.md: The socket buffers)."""
    default = setting("congestion_control").default
    return [
        (f"congestion control {default}, socket buffers copylab's", {"congestion_control": default}),
        (f"congestion control {PACED_CONGESTION}, socket buffers copylab's", {"congestion_control": PACED_CONGESTION}),
        (
            f"congestion control {default}, socket buffers the kernel's",
            {"congestion_control": default, "socket_buffer": 0},
        ),
    ]


def transport_spread(data_root: Path, smoke: bool) -> list[BenchFigure]:
    """The study's two copying senders under the default transport and under each change of it the kernel
    offers: each's throughput and spread between identical trials, and their within-block ratio."""
    one_copy, two_copy = implementations.by_role(Role.ONE_COPY), implementations.by_role(Role.TWO_COPY)
    assert one_copy is not None and two_copy is not None
    figures = []
    for number, (label, transport) in enumerate(_transports()):
        refused = congestion.check_here(transport["congestion_control"])
        if refused:
            figures.append(BenchFigure(label, "report", refused, None))
            continue
        trials = _measured(
            f"bench-transport-{number}",
            data_root,
            smoke,
            implementations=[two_copy.name, one_copy.name],
            workloads=["stream"],
            sizes=[16384] if smoke else [1024, 16384, 65536, 262144],
            threads=[1],
            receive=["copy"],
            trials=2 if smoke else 8,
            **transport,
        )
        ok = trials[trials["status"] == "ok"]
        for size, group in ok.groupby("size_bytes"):
            stats = group.groupby("implementation")["throughput_gbps"].agg(["mean", "std"])
            cv = stats["std"] / stats["mean"]
            blocks = group.pivot_table(index="repetition", columns="implementation", values="throughput_gbps")
            log_ratios = (blocks[one_copy.name] / blocks[two_copy.name]).apply(math.log)
            figures.append(
                BenchFigure(
                    f"{label}, {size // 1024} KiB, 1 thread, {len(blocks)} blocks: throughput (CV between identical "
                    f"trials); {one_copy.name}/{two_copy.name} within blocks",
                    "report",
                    "; ".join(
                        f"{name} {stats.loc[name, 'mean']:.1f} Gbit/s (CV {cv[name]:.0%})"
                        for name in (two_copy.name, one_copy.name)
                    )
                    + f"; {math.exp(log_ratios.mean()):.2f}x, log-ratio SD {log_ratios.std():.3f}",
                    None,
                )
            )
    return figures


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


def report_time(smoke: bool) -> list[BenchFigure]:
    """The main job end to end, as a user runs it: ./inv report (build, the sweeps the experiments declare for it,
    analysis, PDF)."""
    if smoke:
        return []
    started = time.perf_counter()
    result = subprocess.run([str(ROOT / "inv"), "report"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise CopylabError(f"./inv report failed: {(result.stderr.strip().splitlines() or ['?'])[-1]}")
    return [
        BenchFigure(
            f"./inv report (build, the declared sweeps: {_declared_sweeps()}; analysis, PDF)",
            f"<= {REPORT_BUDGET_S / 60:.0f} min",
            f"{seconds / 60:.1f} min",
            seconds <= REPORT_BUDGET_S,
        )
    ]


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _grown(trials: pd.DataFrame, rows: int) -> pd.DataFrame:
    """ROWS trials made of whole copies of TRIALS' blocks, each copy's repetitions numbered after the last copy's: a
    blocked analysis then pairs them as it pairs measured blocks (trials drawn at random would give a contender two
    trials in one block, which no sweep records)."""
    copies = -(-rows // len(trials))
    last = int(trials["repetition"].max())
    grown = [trials.assign(repetition=trials["repetition"] + copy * last) for copy in range(copies)]
    return pd.concat(grown, ignore_index=True).iloc[:rows].reset_index(drop=True)


def grown_sweep(reference: Path, rows: int, scratch: Path) -> SweepStore:
    """A sweep of ROWS trials grown from REFERENCE's by whole blocks (_grown), written inside SCRATCH, never among
    the project's data."""
    trials, manifest = SweepStore(reference).load()
    big = _grown(trials, rows)
    big["trial_id"] = [f"{tid}-b{i}" for i, tid in enumerate(big["trial_id"])]
    big["order_index"] = range(rows)
    big["sweep"] = "bench-analysis"
    store = SweepStore(scratch / "data" / "bench-analysis", figures_root=scratch / "figures")
    writer = store.writer()
    try:
        for row in big.to_dict("records"):
            writer.write(row)
    finally:
        writer.close()
    # It records as many blocks as its copies made: a fixed design of that many trials.
    parameters = dataclasses.replace(
        manifest.parameters, trials=int(big["repetition"].max()), budget_s=None, target_ci=None
    )
    store.write_manifest(
        dataclasses.replace(manifest, sweep="bench-analysis", parameters=parameters, complete=False, trials_sha256=None)
    )
    return store


def _declared_sweeps() -> str:
    """The sweeps ./inv report runs, as the experiments declare them: "quick, sink, ..., servers quick"."""
    from copylab import experiments

    return ", ".join(
        profile if experiment.main else f"{experiment.name} {profile}" for experiment, profile in experiments.reported()
    )


def analysis_and_report_time(reference: Path, rows: int, scratch: Path, smoke: bool = False) -> list[BenchFigure]:
    """The analysis notebook on a trials.csv of ROWS rows drawn from REFERENCE's, and the report rendered from the
    reference sweep (SMOKE: from those rows, already analysed, so that no second analysis runs)."""
    from copylab.analysis.analyze_sweep import run_analysis_notebook
    from copylab.report.render import render_report

    store = grown_sweep(reference, rows, scratch)
    analysis_s = _timed(lambda: run_analysis_notebook(store, output=scratch / "bench-analysis.ipynb"))
    reported = store
    if not smoke:  # the report of the reference sweep, analysed into the scratch directory first (not timed)
        reported = SweepStore(reference, figures_root=scratch / "figures")
        run_analysis_notebook(reported, output=scratch / "reference.ipynb")
    report_s = _timed(lambda: render_report([reported], scratch / "report.pdf"))
    return [
        BenchFigure(
            f"analysis notebook on a {rows:,}-row trials.csv",
            f"<= {ANALYSIS_BUDGET_S} s",
            f"{analysis_s:.1f} s",
            analysis_s <= ANALYSIS_BUDGET_S,
        ),
        BenchFigure("report rendered from existing data", "<= 60 s", f"{report_s:.1f} s", report_s <= 60),
    ]


def explorer_redraw_time(reference: Path, changes: int = 7) -> list[BenchFigure]:
    """Median time from moving the explorer's slider to a finished redraw, on the reference sweep."""
    from copylab.explore.explorer import Explorer

    with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel, the widgets' display() prints reprs
        explorer = Explorer(reference, roots=[reference.parent])
        values = [value for _, value in explorer.fixed.options]
        if len(values) < 2:
            raise CopylabError(f"{reference.name} has one {explorer.fixed.description} value: no slider to move")
        explorer.fixed.value = values[0]
        # Cycling through the values: every change differs from the value before it, so each one redraws.
        times = [
            _timed(functools.partial(setattr, explorer.fixed, "value", value))
            for value in (values * changes)[1 : changes + 1]
        ]
    median = statistics.median(times)
    return [
        BenchFigure(
            f"explorer redraw after a slider change ({reference.name}, median of {len(times)})",
            "<= 0.5 s",
            f"{median:.2f} s",
            median <= 0.5,
        )
    ]


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
    for row in copy_limit_rows(summary, calibrated):
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


def table(figures: list[BenchFigure]) -> str:
    lines = ["| figure | goal | measured | result |", "|---|---|---|---|"]
    for figure in figures:
        verdict = "-" if figure.passed is None else ("pass" if figure.passed else "FAIL")
        lines.append(f"| {figure.name} | {figure.goal} | {figure.measured} | {verdict} |")
    return "\n".join(lines)


def run_bench(
    pairs: int = 5, duration_s: float = 2.0, rows: int = 100_000, smoke: bool = False, reference: Path = REFERENCE_DATA
) -> list[BenchFigure]:
    """All figures; smoke=True runs each part as briefly as possible (for CI)."""
    netns.require_root("bench")
    if not (reference / "trials.csv").exists():
        raise CopylabError(f"{reference} holds no sweep to replay")
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
