"""Sweeps: the grid of configurations, repeated trials in a seeded random order,
each row written to disk the moment its trial ends, resumable after any interruption."""

from __future__ import annotations

import dataclasses
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from copylab import implementations, kernel_copies, testbed
from copylab.calibrate import CALIBRATION_PROGRAMS, calibration
from copylab.calibration import Calibration
from copylab.config import ADAPTIVE_MIN_TRIALS, SweepConfig
from copylab.drivers import GRACE_S
from copylab.errors import CopylabError
from copylab.manifest import Harness, create, now_iso
from copylab.paths import DATA
from copylab.schema import SCHEMA_VERSION
from copylab.spec import TrialSettings, TrialSpec
from copylab.store import SweepStore
from copylab.testbed import Testbed
from copylab.trial import measured_window_s, run_trial


class Configuration(NamedTuple):
    implementation: str
    workload: str
    size_bytes: int
    threads: int
    connections: int
    pinning: str
    receive: str


# The metric whose precision adaptive repetition watches, per workload.
PRECISION_METRIC = {"stream": "throughput_gbps", "rr": "latency_mean_us"}


def _receive_modes(config: SweepConfig, implementation: str) -> list[str]:
    supported = implementations.get(implementation).driver.receive_modes
    everywhere = not config.receive_for or implementation in config.receive_for
    return [mode for mode in config.receive if mode in supported and (mode == "copy" or everywhere)]


def configurations(config: SweepConfig, skip: frozenset[str] = frozenset()) -> list[Configuration]:
    """The grid, without the implementations in SKIP (those that cannot run here)."""
    grid = []
    for implementation in config.implementations:
        if implementation in skip:
            continue
        for workload in config.workloads:
            if workload not in implementations.get(implementation).driver.workloads:
                continue
            for size in config.sizes if workload == "stream" else config.rr_sizes:
                for threads in config.threads:
                    # copies: a connection per thread; servers: the connections the load client keeps busy
                    for connections in config.connections or (threads,):
                        for pinning in config.pinning:
                            for receive in _receive_modes(config, implementation):
                                grid.append(
                                    Configuration(
                                        implementation, workload, size, threads, connections, pinning, receive
                                    )
                                )
    return grid


def _spec(configuration: Configuration, repetition: int, order_index: int) -> TrialSpec:
    c = configuration
    return TrialSpec(
        f"{'-'.join(map(str, c))}-r{repetition}",
        order_index,
        c.implementation,
        c.workload,
        c.size_bytes,
        c.threads,
        c.pinning,
        repetition,
        c.receive,
        c.connections,
    )


def plan(config: SweepConfig, skip: frozenset[str] = frozenset()) -> list[TrialSpec]:
    """Every trial of the fixed design, in its seeded random order."""
    trials = [(c, repetition) for c in configurations(config, skip) for repetition in range(1, config.trials + 1)]
    random.Random(config.seed).shuffle(trials)
    return [_spec(c, repetition, index) for index, (c, repetition) in enumerate(trials)]


def precise_enough(values: list[float], target: float, confidence: float = 0.95) -> bool:
    """Is the confidence interval's half-width within target x |mean|?"""
    if len(values) < ADAPTIVE_MIN_TRIALS:
        return False
    sample = np.asarray(values, dtype=float)
    half_width = stats.t.ppf((1 + confidence) / 2, len(sample) - 1) * sample.std(ddof=1) / math.sqrt(len(sample))
    return bool(half_width <= target * abs(sample.mean()))


def adaptive_rounds(
    config: SweepConfig, measured: dict[Configuration, list[float]], skip: frozenset[str] = frozenset()
) -> Iterator[list[TrialSpec]]:
    """Round r runs repetition r of every configuration still short of the target, shuffled.

    Lazy: each round is decided from `measured` as it stands once the previous round ran.
    """
    order = 0
    for repetition in range(1, config.max_trials + 1):
        pending = [
            c for c in configurations(config, skip) if not precise_enough(measured.get(c, []), config.target_ci or 0.0)
        ]
        random.Random(config.seed * 1000 + repetition).shuffle(pending)
        if not pending:
            return
        yield [_spec(c, repetition, order + index) for index, c in enumerate(pending)]
        order += len(pending)


def _configuration_of(row: Any) -> Configuration:
    return Configuration(
        row["implementation"],
        row["workload"],
        int(row["size_bytes"]),
        int(row["threads"]),
        int(row["connections"]),
        row["pinning"],
        row["receive"],
    )


@dataclass
class SweepResult:
    directory: Path
    planned: int
    ran: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    wall_s: float = 0.0
    window_s: float = 0.0
    overheads_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # implementation -> why it could not run here

    def median_overhead_s(self) -> float:
        return float(np.median(self.overheads_s)) if self.overheads_s else math.nan

    def summary(self) -> str:
        text = (
            f"Sweep {self.directory.name}: {self.ran} trials run ({self.ok} ok, {self.failed} failed"
            f"{f', {self.skipped} already recorded' if self.skipped else ''}) of {self.planned} planned in "
            f"{self.wall_s:.0f} s; warm-up + measured windows {self.window_s:.0f} s "
            f"(wall/window {self.wall_s / self.window_s if self.window_s else math.nan:.2f}), median "
            f"{self.median_overhead_s():.2f} s per trial outside them. "
            f"Data: {self.directory / 'trials.csv'} with {self.directory / 'manifest.json'}."
        )
        if self.failures:
            text += f" First failure: {self.failures[0]}."
        return text


def _ok_rows(store: SweepStore) -> pd.DataFrame:
    trials = store.recorded_trials() if store.trials_path.exists() else None
    return trials[trials["status"] == "ok"] if trials is not None else pd.DataFrame(columns=["trial_id"])


def _finished(config: SweepConfig, ok_rows: pd.DataFrame, skip: frozenset[str]) -> bool:
    """Fixed design: every planned trial is ok. Adaptive: every configuration is precise or at max-trials."""
    if config.target_ci is None:
        return set(ok_rows["trial_id"]) >= {spec.trial_id for spec in plan(config, skip)}
    measured = _measured(ok_rows)
    return all(
        precise_enough(measured.get(c, []), config.target_ci) or len(measured.get(c, [])) >= config.max_trials
        for c in configurations(config, skip)
    )


def _measured(ok_rows: pd.DataFrame) -> dict[Configuration, list[float]]:
    measured: dict[Configuration, list[float]] = {}
    for _, row in ok_rows.iterrows():
        value = row[PRECISION_METRIC[row["workload"]]]
        if not pd.isna(value):
            measured.setdefault(_configuration_of(row), []).append(float(value))
    return measured


def unavailable_here(config: SweepConfig, bed: Testbed) -> dict[str, str]:
    """Implementations of the sweep that cannot run on its server end, with the reason."""
    reasons = {}
    for name in config.implementations:
        why = implementations.get(name).driver.unavailable(bed.server, config.sanitize)
        if why:
            reasons[name] = why
    return reasons


@contextmanager
def _kernel_copies(config: SweepConfig, bed: Testbed) -> Iterator[kernel_copies.Accounting | None]:
    if not config.kernel_copies:
        yield None
        return
    if bed.privilege != "root":
        yield kernel_copies.Accounting(bed.client, "BPF needs root, and this sweep runs without it (user namespace)")
        return
    # bpftrace ends itself when its lease, renewed before every trial, is older than a trial may take (iperf3's
    # windows, rounded up to whole seconds, and the harness between trials fit in the margin).
    lease_s = config.warmup_s + config.duration_s + GRACE_S + kernel_copies.LEASE_MARGIN_S
    with kernel_copies.accounting(bed.client, config.name, lease_s) as counts:
        if counts.receive_reason:
            print(f"copylab: kernel copies are not counted: {counts.receive_reason}", file=sys.stderr)
        yield counts


def calibration_for(config: SweepConfig, bed: Testbed) -> Calibration:
    """Single-core memcpy bandwidth on the sweep's sending CPU: the copy-bound ceiling of its report."""
    cpu = "0" if "none" not in config.pinning else None
    programs = {name: bed.server.program(name) for name in CALIBRATION_PROGRAMS}
    return calibration(cpu=cpu, run=bed.server.run, programs=programs)


def _check_writable(directory: Path) -> None:
    """A one-line refusal, before anything runs, when this user cannot write the sweep's directory."""
    existing = directory
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CopylabError(f"{existing} is not writable by this user: choose a data directory it can write")


def run(
    config: SweepConfig,
    data_root: Path = DATA,
    resume: bool = False,
    progress: bool = True,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepResult:
    """Runs (or finishes) a sweep on its testbed (a fresh namespace pair, or two hosts); returns what happened."""
    store = SweepStore(data_root / config.name, data_root=data_root)
    _check_writable(store.directory)
    if resume:
        if not store.manifest_path.exists():
            raise CopylabError(f"--resume: {store.directory} holds no sweep to resume")
        try:
            record = store.read_manifest()
        except CopylabError as error:
            raise CopylabError(f"--resume: {error}") from None
        if record.schema_version != SCHEMA_VERSION:
            raise CopylabError(
                f"--resume: {store.directory} was written by a copylab with trials.csv schema version "
                f"{record.schema_version} (this one writes {SCHEMA_VERSION}): finish it with that copylab or "
                "start a new sweep"
            )
        config = record.parameters
    elif store.holds_sweep():
        raise CopylabError(
            f"{store.directory} already holds a sweep: pass --resume to finish it, or choose another --name"
        )
    bed = testbed.for_config(config, store.directory)
    with bed.prepared():
        return _run_prepared(config, store, bed, resume, progress, on_row)


def _run_prepared(
    config: SweepConfig,
    store: SweepStore,
    bed: Testbed,
    resume: bool,
    progress: bool,
    on_row: Callable[[dict[str, Any]], None] | None,
) -> SweepResult:
    support = bed.perf_support()
    if resume and store.trials_path.exists():
        store.repair_truncated_tail()
        ok_rows = _ok_rows(store)
        record = store.read_manifest()
    else:
        ok_rows = _ok_rows(store)
        record = create(config, support, SCHEMA_VERSION, bed.describe(), bed.privilege)
    store.write_manifest(dataclasses.replace(record, ended_at=None, complete=False, trials_sha256=None))

    done = set(ok_rows["trial_id"])
    measured = _measured(ok_rows)
    result = SweepResult(store.directory, 0, skipped=len(done))
    started = time.monotonic()
    skip: frozenset[str] = frozenset()
    writer = store.writer()
    try:
        with bed.running():
            result.unavailable = unavailable_here(config, bed)
            skip = frozenset(result.unavailable)
            for name, why in result.unavailable.items():
                print(f"copylab: {name} is unavailable here: {why}; its trials are not run", file=sys.stderr)
            if skip >= set(config.implementations):
                raise CopylabError("no implementation of the sweep can run here (see the lines above)")
            record = store.read_manifest()
            calibration = record.calibration
            # Measured once (kept on resume), before any other process of the sweep starts: bpftrace's start-up
            # alone takes the CPU for about 0.4 s.
            if calibration is None and config.experiment == "copies":
                calibration = calibration_for(config, bed)
            store.write_manifest(
                dataclasses.replace(
                    record,
                    unavailable=dict(result.unavailable),
                    calibration=calibration,
                    restrictions=bed.restrictions(),
                )
            )
            with _kernel_copies(config, bed) as counts:
                if config.target_ci is None:
                    batches: Iterator[list[TrialSpec]] = iter([plan(config, skip)])
                    result.planned = len(plan(config, skip))
                else:
                    batches = adaptive_rounds(config, measured, skip)
                    result.planned = len(configurations(config, skip)) * config.max_trials
                settings = TrialSettings(
                    config.name,
                    bed,
                    support,
                    config.duration_s,
                    config.warmup_s,
                    config.verify,
                    config.sanitize,
                    align_fields=config.align_fields,
                    kernel_copies=counts,
                )
                _run_trials(batches, done, settings, writer, result, measured, on_row, progress)
                if config.target_ci is not None:
                    result.planned = result.ran + result.skipped
    finally:
        writer.close()
        result.wall_s = time.monotonic() - started
        finished = _finished(config, _ok_rows(store), skip)
        record = store.read_manifest()
        harness = (
            Harness(result.median_overhead_s(), result.wall_s, result.window_s, result.ran)
            if result.ran
            else record.harness
        )
        store.write_manifest(
            dataclasses.replace(
                record,
                ended_at=now_iso(),
                complete=finished,
                trials_sha256=store.trials_sha256() if finished else None,
                harness=harness,
            )
        )
    return result


def _run_trials(
    batches: Iterator[list[TrialSpec]],
    done: set[str],
    settings: TrialSettings,
    writer: Any,
    result: SweepResult,
    measured: dict[Configuration, list[float]],
    on_row: Callable[[dict[str, Any]], None] | None,
    progress: bool,
) -> None:
    """Runs every trial of BATCHES not yet DONE, writing each row the moment it ends."""
    with tqdm(total=result.planned - len(done), disable=not progress, unit="trial", dynamic_ncols=True) as bar:
        for batch in batches:
            for spec in batch:
                if spec.trial_id in done:
                    continue
                row = run_trial(spec, settings)
                writer.write(row)
                window = measured_window_s(spec, settings)
                result.ran += 1
                result.window_s += window
                result.overheads_s.append(row["trial_wall_s"] - window)
                if row["status"] == "ok":
                    result.ok += 1
                    value = row.get(PRECISION_METRIC[spec.workload])
                    if value is not None and not math.isnan(value):
                        measured.setdefault(_configuration_of(row), []).append(float(value))
                else:
                    result.failed += 1
                    result.failures.append(f"{spec.trial_id}: {row['error']}")
                    settings.testbed.reconnect()  # an end that went away: back, or the sweep stops here
                if on_row:
                    on_row(row)
                bar.update(1)
