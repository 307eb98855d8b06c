"""Sweeps: the grid of configurations, repeated trials in a seeded random order,
each row written to disk the moment its trial ends, resumable after any interruption."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from tqdm import tqdm

from copylab import error_catalogue
from copylab.calibration.measurement import on_sending_cpu
from copylab.calibration.record import Calibration
from copylab.declarations.schema import SCHEMA_VERSION
from copylab.declarations.settings import chosen_on, per_trial
from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import (
    ALREADY_HOLDS,
    MORE_NEEDS_BLOCKED,
    NOT_WRITABLE,
    NOTHING_RUNS,
    NOTHING_TO_RESUME,
    RESUME_OTHER_SCHEMA,
    RESUME_UNREADABLE,
)
from copylab.errors import CopylabError
from copylab.measure.host.floor import host_floor
from copylab.measure.host.in_flight import measure as in_flight_from_path
from copylab.measure.host.provenance import create, now_iso
from copylab.measure.planning.budgeted import Progress, budgeted_rounds
from copylab.measure.planning.schedule import (
    PRECISION_METRIC,
    Configuration,
    adaptive_rounds,
    configuration_of,
    configurations,
    mapping_note,
    measured,
    plan,
    precise_enough,
)
from copylab.measure.running import drivers, kernel_copies, profiling
from copylab.measure.running.drivers import GRACE_S
from copylab.measure.running.spec import TrialSettings, TrialSpec, cpus_for
from copylab.measure.running.trial import measured_window_s, run_trial
from copylab.programs.sampler import EVENT, SAMPLE_HZ
from copylab.record.manifest import Harness, InFlight, Manifest, SamplerRecord
from copylab.record.store import SweepStore
from copylab.testbeds import sink, testbed
from copylab.testbeds.testbed import Testbed


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
    exhausted: bool = False  # its schedule ran to its end (a budgeted sweep: nothing left it would run)

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


# What a trial is assumed to cost beyond its windows until the sweep has measured it.
DEFAULT_OVERHEAD_S = 0.1


def _testbed(config: SweepConfig, directory: Path) -> Testbed:
    """The testbed a sweep's settings ask for: two hosts when it names them, else two namespaces here (in a
    user namespace of the sweep's own without root). DIRECTORY: where the sweep's data goes (what marks the
    hosts' temporary directories as its own)."""
    why = sink.refusal(config)
    if why:
        raise why.error()
    if config.server_host:
        from copylab.testbeds.remote import Hosts

        return Hosts(config, directory)
    if os.geteuid() != 0:
        from copylab.testbeds.userns import UserNamespaces

        return UserNamespaces.for_sweep(config)
    return testbed.Namespaces.for_sweep(config)


def _ok_rows(store: SweepStore) -> pd.DataFrame:
    trials = store.recorded_trials() if store.trials_path.exists() else None
    return trials[trials["status"] == "ok"] if trials is not None else pd.DataFrame(columns=["trial_id"])


def _finished(config: SweepConfig, ok_rows: pd.DataFrame, skip: frozenset[str], exhausted: bool) -> bool:
    """Fixed design: every planned trial is ok. Adaptive: every configuration is precise or at max-trials.
    Budgeted: its schedule ran to its end."""
    if config.budget_s is not None:
        return exhausted
    if config.target_ci is None:
        return set(ok_rows["trial_id"]) >= {spec.trial_id for spec in plan(config, skip)}
    found = measured(ok_rows)
    return all(
        precise_enough(found.get(c, []), config.target_ci) or len(found.get(c, [])) >= config.max_trials
        for c in configurations(config, skip)
    )


def unavailable_here(config: SweepConfig, bed: Testbed) -> dict[str, str]:
    """Implementations of the sweep that cannot run on its server end, with the reason."""
    reasons = {}
    for member in config.members.values():
        why = drivers.of(member).unavailable(bed.server, config.sanitize)
        if why:
            reasons[member.name] = why
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
    sender = bed.server if bed.path == "veth" else None
    with kernel_copies.accounting(bed.client, config.name, lease_s, sender) as counts:
        if counts.receive_reason:
            print(f"copylab: kernel copies are not counted: {counts.receive_reason}", file=sys.stderr)
        yield counts


@contextmanager
def _sampling(config: SweepConfig, bed: Testbed) -> Iterator[profiling.SweepSampler]:
    """The sweep's sampler (copylab.measure.running.profiling), or the line that says why it samples nothing."""
    cpus = [cpu for pinning in config.pinning for cpu in cpus_for(pinning)]
    with profiling.sampling(config.name, cpus, bed.path != "network", bed.privilege == "root") as sampled:
        if not sampled.use.available:
            print(error_catalogue.TRIALS_NOT_SAMPLED.text(reason=sampled.use.reason), file=sys.stderr)
        yield sampled


def _record_profile(store: SweepStore, sampled: profiling.SweepSampler) -> None:
    """The profile of the trials this run sampled, or the one line that says why it sampled none."""
    profile = sampled.finish()
    if profile is None:
        store.write_unsampled(sampled.use.reason)
    else:
        store.write_profile(profile.table(), profile.symbols())


def _check_writable(directory: Path) -> None:
    """A one-line refusal, before anything runs, when this user cannot write the sweep's directory."""
    existing = directory
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise NOT_WRITABLE.error(path=existing)


def run(
    config: SweepConfig,
    store: SweepStore,
    resume: bool = False,
    progress: bool = True,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    more_s: float | None = None,
) -> SweepResult:
    """Runs (or finishes) the sweep CONFIG, writing its data to STORE, on its testbed (a fresh namespace pair, or
    two hosts); returns what happened.
    With RESUME and MORE_S, a blocked sweep goes on beyond its end: its budget becomes the time its recorded trials
    took plus MORE_S, spent where its deciding comparisons are still undecided (copylab.measure.planning.allocation)."""
    _check_writable(store.directory)
    if resume:
        if not store.manifest_path.exists():
            raise NOTHING_TO_RESUME.error(directory=store.directory)
        try:
            record = store.read_manifest()
        except CopylabError as error:
            raise RESUME_UNREADABLE.error(error=error) from None
        if record.schema_version != SCHEMA_VERSION:
            raise RESUME_OTHER_SCHEMA.error(
                directory=store.directory, found=record.schema_version, schema=SCHEMA_VERSION
            )
        config = record.parameters if more_s is None else _with_more_time(record.parameters, store, more_s)
    elif store.holds_sweep():
        raise ALREADY_HOLDS.error(directory=store.directory)
    bed = _testbed(config, store.directory)
    with bed.prepared():
        support = bed.perf_support()
        # The manifest records what the testbed chose, and every trial runs with it.
        config = dataclasses.replace(config, **chosen_on(per_trial(config), bed))
        settings = TrialSettings(
            config.name,
            bed,
            support,
            config.duration_s,
            config.warmup_s,
            config.verify,
            config.sanitize,
            values=per_trial(config),
        )
        return _run_prepared(config, store, settings, resume, progress, on_row)


def _with_more_time(config: SweepConfig, store: SweepStore, more_s: float) -> SweepConfig:
    """CONFIG with a budget of MORE_S beyond the time its recorded trials took."""
    if config.design != "blocked":
        raise MORE_NEEDS_BLOCKED.error(directory=store.directory)
    recorded = store.recorded_trials() if store.trials_path.exists() else None
    spent = float(recorded["trial_wall_s"].sum()) if recorded is not None and len(recorded) else 0.0
    return dataclasses.replace(config, budget_s=spent + more_s)


def _run_prepared(
    config: SweepConfig,
    store: SweepStore,
    settings: TrialSettings,
    resume: bool,
    progress: bool,
    on_row: Callable[[dict[str, Any]], None] | None,
) -> SweepResult:
    """Runs the sweep on its prepared testbed: what it measures once, then its trials, its manifest written once
    when they start and again when they end; returns what happened."""
    bed = settings.testbed
    earlier = _recorded_ok(store, resume)
    result = SweepResult(store.directory, 0, skipped=len(earlier))
    started = time.monotonic()
    with bed.running():
        skip = _leave_out_unavailable(config, bed, result)
        kept = store.read_manifest() if resume else None
        settings, once = _measure_once(config, kept, settings, skip)
        opened = kept or create(config, settings.perf, SCHEMA_VERSION, bed.describe(), bed.privilege)
        # a resumed sweep's parameters: a budget that grew (more_s)
        store.write_manifest(_running(dataclasses.replace(opened, parameters=config, **once._asdict()), result))
        with _kernel_copies(config, bed) as counts, _sampling(config, bed) as sampled:
            settings = dataclasses.replace(settings, kernel_copies=counts, sampler=sampled)
            try:
                _run_schedule(config, store, settings, result, skip, earlier, on_row, progress)
                _record_profile(store, sampled)
            finally:
                result.wall_s = time.monotonic() - started
                _close_manifest(config, store, result, sampled)
    return result


def _run_schedule(
    config: SweepConfig,
    store: SweepStore,
    settings: TrialSettings,
    result: SweepResult,
    skip: frozenset[str],
    earlier: pd.DataFrame,
    on_row: Callable[[dict[str, Any]], None] | None,
    progress: bool,
) -> None:
    """Runs the trials of the sweep's design not yet recorded ok (EARLIER), writing each row as it ends."""
    found = measured(earlier)
    batches = _schedule(config, store, result, skip, found)
    writer = store.writer()
    try:
        _run_trials(batches, set(earlier["trial_id"]), settings, writer, result, found, on_row, progress)
    finally:
        writer.close()
    result.exhausted = True
    if config.target_ci is not None or config.budget_s is not None:
        result.planned = result.ran + result.skipped


def _recorded_ok(store: SweepStore, resume: bool) -> pd.DataFrame:
    """The rows already recorded ok (none for a new sweep), after cutting a line that a crash left unfinished."""
    if resume and store.trials_path.exists():
        store.repair_truncated_tail()
    return _ok_rows(store)


def _running(manifest: Manifest, result: SweepResult) -> Manifest:
    """MANIFEST as the trials start: not ended, and what could not run here."""
    return dataclasses.replace(
        manifest, ended_at=None, complete=False, trials_sha256=None, unavailable=dict(result.unavailable)
    )


def _leave_out_unavailable(config: SweepConfig, bed: Testbed, result: SweepResult) -> frozenset[str]:
    """The implementations that cannot run here, said and kept in RESULT; refuses a sweep left with none."""
    result.unavailable = unavailable_here(config, bed)
    for name, why in result.unavailable.items():
        print(f"copylab: {name} is unavailable here: {why}; its trials are not run", file=sys.stderr)
    note = mapping_note(config)
    if note:
        print(f"copylab: {note}", file=sys.stderr)
    skip = frozenset(result.unavailable)
    if skip >= set(config.implementations):
        raise NOTHING_RUNS.error()
    return skip


class MeasuredOnce(NamedTuple):
    """What a sweep measures once, before its trials, as its manifest records it."""

    calibration: Calibration | None
    restrictions: dict[str, str]
    host_floor: dict[str, float]
    in_flight: InFlight | None


def _measure_once(
    config: SweepConfig, kept: Manifest | None, settings: TrialSettings, skip: frozenset[str]
) -> tuple[TrialSettings, MeasuredOnce]:
    """The trials' settings, and what the sweep measures once: the calibration, the host's floor, the zero-copy
    in-flight limit (each KEPT from the manifest of a sweep resumed)."""
    bed = settings.testbed
    calibration = kept.calibration if kept else None
    # Measured once (kept on resume), before any other process of the sweep starts: bpftrace's start-up
    # alone takes the CPU for about 0.4 s.
    if calibration is None and config.calibrate and config.declared.calibrates:
        calibration = on_sending_cpu(config.pinning, bed.server.run, bed.server.program)
    floor = (kept.host_floor if kept else None) or host_floor(config.declared, min(config.rr_sizes or (64,)), settings)
    in_flight = kept.in_flight if kept else None
    zero_copy = any(member.zero_copy for member in config.members.values() if member.name not in skip)
    if in_flight is None and config.zc_inflight is None and zero_copy:
        in_flight = in_flight_from_path(config.declared, settings)
    if in_flight is not None:
        settings = dataclasses.replace(settings, values={**settings.values, "zc_inflight": in_flight.zc_inflight})
    return settings, MeasuredOnce(calibration, bed.restrictions(), floor, in_flight)


def _close_manifest(
    config: SweepConfig, store: SweepStore, result: SweepResult, sampled: profiling.SweepSampler
) -> None:
    """Records the sweep's end, whether it is complete, and which sampler ran (and at what rate), however it
    ended."""
    finished = _finished(config, _ok_rows(store), frozenset(result.unavailable), result.exhausted)
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
            sampler=SamplerRecord(sampled.use.available, sampled.use.description, SAMPLE_HZ, EVENT),
        )
    )


def _schedule(
    config: SweepConfig,
    store: SweepStore,
    result: SweepResult,
    skip: frozenset[str],
    found: dict[Configuration, list[float]],
) -> Iterator[list[TrialSpec]]:
    """The sweep's design (copylab.measure.planning.schedule), as rounds of trials; sets how many are planned."""
    if config.target_ci is not None:
        result.planned = len(configurations(config, skip)) * config.max_trials
        return adaptive_rounds(config, found, skip)
    if config.budget_s is None:
        fixed = plan(config, skip)
        result.planned = len(fixed)
        return iter([fixed])
    window = config.warmup_s + config.duration_s
    recorded = store.recorded_trials() if store.trials_path.exists() else None
    # The budget counts the sweep's own time, the harness's between trials included; an earlier, interrupted run
    # counts by its trials.
    before = float(recorded["trial_wall_s"].sum()) if recorded is not None and len(recorded) else 0.0
    started = time.monotonic()

    def progress() -> Progress:
        rows = store.recorded_trials() if store.trials_path.exists() else pd.DataFrame(columns=["status"])
        overhead = result.median_overhead_s()
        trial_s = window + (overhead if overhead == overhead else DEFAULT_OVERHEAD_S)
        return Progress(rows, before + time.monotonic() - started, trial_s)

    # Imported here: the allocator brings in the curve model's statistics (about a second), which no other sweep and
    # no one-line refusal of bad options needs.
    from copylab.measure.planning import allocation

    result.planned = int(config.budget_s // (window + DEFAULT_OVERHEAD_S))
    rounds = budgeted_rounds(config, progress, lambda ok: allocation.undecided(ok, config), skip)
    return _numbered(rounds, 0 if recorded is None else len(recorded))


def _numbered(rounds: Iterator[list[TrialSpec]], start: int) -> Iterator[list[TrialSpec]]:
    """ROUNDS with order indexes that go on from START, the rows already recorded."""
    for batch in rounds:
        yield [dataclasses.replace(spec, order_index=start + index) for index, spec in enumerate(batch)]
        start += len(batch)


def _run_trials(
    batches: Iterator[list[TrialSpec]],
    done: set[str],
    settings: TrialSettings,
    writer: Any,
    result: SweepResult,
    found: dict[Configuration, list[float]],
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
                done.add(spec.trial_id)
                writer.write(row)
                window = measured_window_s(spec, settings)
                result.ran += 1
                result.window_s += window
                result.overheads_s.append(row["trial_wall_s"] - window)
                if row["status"] == "ok":
                    result.ok += 1
                    value = row.get(PRECISION_METRIC[spec.workload])
                    if value is not None and not math.isnan(value):
                        found.setdefault(configuration_of(row), []).append(float(value))
                else:
                    result.failed += 1
                    result.failures.append(f"{spec.trial_id}: {row['error']}")
                    settings.testbed.reconnect()  # an end that went away: back, or the sweep stops here
                if on_row:
                    on_row(row)
                bar.update(1)
