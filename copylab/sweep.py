"""Sweeps: the grid of configurations, repeated trials in a seeded random order,
each row written to disk the moment its trial ends, resumable after any interruption."""

from __future__ import annotations

import csv
import io
import math
import os
import random
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats
from tqdm import tqdm

from copylab import manifest as manifest_module
from copylab import netns, perf
from copylab.build import require_programs
from copylab.calibrate import measure_memcpy
from copylab.errors import CopylabError
from copylab.paths import DATA
from copylab.schema import BASELINE_TOOLS, COLUMN_NAMES, IMPLEMENTATIONS, PINNINGS, WORKLOADS
from copylab.trial import TrialSettings, TrialSpec, measured_window_s, run_trial

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_SIZE = 64 << 20


def powers_of_two(low: int, high: int) -> list[int]:
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high]


PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "implementations": [*IMPLEMENTATIONS, *BASELINE_TOOLS], "workloads": ["stream", "rr"],
        "sizes": [64, 512, 4096, 16384, 65536], "rr_sizes": [4096], "threads": [1, 4],
        "trials": 3, "duration_s": 1.0, "warmup_s": 0.3, "pinning": ["same_cpu"],
    },
    "full": {
        "implementations": [*IMPLEMENTATIONS, *BASELINE_TOOLS], "workloads": ["stream", "rr"],
        "sizes": powers_of_two(64, 256 << 10), "rr_sizes": [4096], "threads": [1, 2, 4, 8],
        "trials": 5, "duration_s": 1.0, "warmup_s": 0.3, "pinning": ["same_cpu"],
    },
}


@dataclass(frozen=True)
class SweepConfig:
    name: str
    profile: str = "quick"
    implementations: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    rr_sizes: tuple[int, ...] = ()
    threads: tuple[int, ...] = ()
    trials: int = 3
    duration_s: float = 1.0
    warmup_s: float = 0.3
    pinning: tuple[str, ...] = ()
    seed: int = 1
    verify: bool = False
    mtu: int = 1500
    optmem_max: int = 131072
    sanitize: str | None = None
    namespaces: tuple[str, str] = ("copylab_srv", "copylab_cli")
    # Adaptive repetition: repeat a configuration only until its 95% interval is this tight.
    target_ci: float | None = None
    max_trials: int = 10

    def parameters(self) -> dict[str, Any]:
        """What the manifest records (everything but the name and profile)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()
                if k not in ("name", "profile")}


def _unique(label: str, values: tuple[Any, ...]) -> None:
    if len(set(values)) != len(values):
        raise CopylabError(f"{label}: {', '.join(map(str, values))} names a value twice")
    if not values:
        raise CopylabError(f"{label}: needs at least one value")


def _whole_range(label: str, values: tuple[int, ...], low: int, high: int) -> None:
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise CopylabError(f"{label}: {value!r} is not a whole number from {low} to {high}")


def validate(config: SweepConfig) -> SweepConfig:
    """Rejects a bad sweep before anything is created; returns it unchanged."""
    if not NAME_PATTERN.fullmatch(config.name):
        raise CopylabError(f"sweep name {config.name!r}: use letters, digits, '.', '_' or '-' (no '/' or spaces)")
    known = (*IMPLEMENTATIONS, *BASELINE_TOOLS)
    for label, values, allowed in (("implementations", config.implementations, known),
                                   ("workloads", config.workloads, WORKLOADS),
                                   ("pinning", config.pinning, PINNINGS)):
        _unique(label, values)
        for value in values:
            if value not in allowed:
                raise CopylabError(f"{label}: unknown {value!r} (choose from {', '.join(allowed)})")
    for label, values in (("sizes", config.sizes), ("threads", config.threads)):
        _unique(label, values)
    _whole_range("sizes", config.sizes, 8, MAX_SIZE)
    _whole_range("threads", config.threads, 1, 64)
    if "rr" in config.workloads:
        _unique("rr_sizes", config.rr_sizes)
        _whole_range("rr_sizes", config.rr_sizes, 8, MAX_SIZE)
    _whole_range("trials", (config.trials,), 1, 1000)
    if config.target_ci is not None:
        if not (isinstance(config.target_ci, (int, float)) and 0 < config.target_ci < 1):
            raise CopylabError(f"target-ci: {config.target_ci!r} must be a fraction of the mean between 0 and 1")
        _whole_range("max-trials", (config.max_trials,), ADAPTIVE_MIN_TRIALS, 1000)
    if not (isinstance(config.duration_s, (int, float)) and 0 < config.duration_s <= 3600):
        raise CopylabError(f"duration: {config.duration_s!r} must be above 0 and at most 3600 s")
    if not (isinstance(config.warmup_s, (int, float)) and 0 <= config.warmup_s <= 600):
        raise CopylabError(f"warmup: {config.warmup_s!r} must be from 0 to 600 s")
    if config.profile not in (*PROFILES, "custom"):
        raise CopylabError(f"profile: unknown {config.profile!r} (choose from {', '.join(PROFILES)})")
    if len(config.namespaces) != 2:
        raise CopylabError(f"namespaces: give two names (server, client), not {len(config.namespaces)}")
    netns.NamespacePair(*config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max)
    return config


def make_config(name: str, profile: str = "quick", sweep_file: Path | None = None,
                **overrides: Any) -> SweepConfig:
    """A profile's settings, then a sweep file's, then explicit options (None = not given)."""
    if profile not in PROFILES:
        raise CopylabError(f"profile: unknown {profile!r} (choose from {', '.join(PROFILES)})")
    values: dict[str, Any] = dict(PROFILES[profile])
    if sweep_file is not None:
        try:
            values.update(tomllib.loads(Path(sweep_file).read_text()))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise CopylabError(f"sweep file {sweep_file}: {error}") from None
    values.update({key: value for key, value in overrides.items() if value is not None})
    names = {f.name for f in fields(SweepConfig)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise CopylabError(f"unknown sweep setting(s): {', '.join(unknown)}")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    return validate(SweepConfig(**{**values, "name": name, "profile": values.get("profile", profile)}))


def config_from_manifest(stored: dict[str, Any]) -> SweepConfig:
    """The exact sweep a manifest describes, so that --resume runs the same plan."""
    try:
        values = {key: tuple(value) if isinstance(value, list) else value
                  for key, value in stored["parameters"].items()}
        return validate(SweepConfig(name=stored["sweep"], profile=stored["profile"], **values))
    except (KeyError, TypeError, AttributeError) as error:
        raise CopylabError(f"the manifest does not describe a copylab sweep ({type(error).__name__}: {error})") from None


Configuration = tuple[str, str, int, int, str]  # implementation, workload, size, threads, pinning
ADAPTIVE_MIN_TRIALS = 3
# The metric whose precision adaptive repetition watches, per workload.
PRECISION_METRIC = {"stream": "throughput_gbps", "rr": "latency_mean_us"}


def configurations(config: SweepConfig) -> list[Configuration]:
    grid = []
    for implementation in config.implementations:
        for workload in config.workloads:
            if workload == "rr" and implementation in BASELINE_TOOLS:
                continue
            for size in config.sizes if workload == "stream" else config.rr_sizes:
                for threads in config.threads:
                    for pinning in config.pinning:
                        grid.append((implementation, workload, size, threads, pinning))
    return grid


def _spec(configuration: Configuration, repetition: int, order_index: int) -> TrialSpec:
    implementation, workload, size, threads, pinning = configuration
    return TrialSpec(f"{implementation}-{workload}-{size}-{threads}-{pinning}-r{repetition}", order_index,
                     implementation, workload, size, threads, pinning, repetition)


def plan(config: SweepConfig) -> list[TrialSpec]:
    """Every trial of the fixed design, in its seeded random order."""
    trials = [(c, repetition) for c in configurations(config) for repetition in range(1, config.trials + 1)]
    random.Random(config.seed).shuffle(trials)
    return [_spec(c, repetition, index) for index, (c, repetition) in enumerate(trials)]


def precise_enough(values: list[float], target: float, confidence: float = 0.95) -> bool:
    """Is the confidence interval's half-width within target x |mean|?"""
    if len(values) < ADAPTIVE_MIN_TRIALS:
        return False
    sample = np.asarray(values, dtype=float)
    half_width = stats.t.ppf((1 + confidence) / 2, len(sample) - 1) * sample.std(ddof=1) / math.sqrt(len(sample))
    return bool(half_width <= target * abs(sample.mean()))


def adaptive_rounds(config: SweepConfig, measured: dict[Configuration, list[float]]) -> Iterator[list[TrialSpec]]:
    """Round r runs repetition r of every configuration still short of the target, shuffled.

    Lazy: each round is decided from `measured` as it stands once the previous round ran.
    """
    order = 0
    for repetition in range(1, config.max_trials + 1):
        pending = [c for c in configurations(config)
                   if not precise_enough(measured.get(c, []), config.target_ci or 0.0)]
        random.Random(config.seed * 1000 + repetition).shuffle(pending)
        if not pending:
            return
        yield [_spec(c, repetition, order + index) for index, c in enumerate(pending)]
        order += len(pending)


def _configuration_of(row: dict[str, Any]) -> Configuration:
    return (row["implementation"], row["workload"], int(row["size_bytes"]), int(row["threads"]), row["pinning"])


class TrialWriter:
    """Appends rows to trials.csv, each line written whole, flushed and synced as it comes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        new = not path.exists() or path.stat().st_size == 0
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if new:
            self._write_line(list(COLUMN_NAMES))

    def _write_line(self, values: list[Any]) -> None:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(values)
        os.write(self.fd, buffer.getvalue().encode())
        os.fsync(self.fd)

    def write(self, row: dict[str, Any]) -> None:
        def cell(value: Any) -> Any:
            if value is None or (isinstance(value, float) and math.isnan(value)):
                return ""
            return value

        self._write_line([cell(row.get(name)) for name in COLUMN_NAMES])

    def close(self) -> None:
        os.close(self.fd)


def repair_truncated_tail(path: Path) -> bool:
    """Cuts a last line that a crash left unfinished; True if it had to."""
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    with path.open("r+b") as stream:
        stream.truncate(data.rfind(b"\n") + 1)
    return True


def recorded_ok_rows(path: Path) -> list[dict[str, str]]:
    """The rows of trials already measured successfully."""
    with path.open(newline="") as stream:
        reader = csv.DictReader(stream)
        if tuple(reader.fieldnames or ()) != COLUMN_NAMES:
            raise CopylabError(f"{path}: its columns are not copylab's trials.csv columns; refusing to append")
        return [row for row in reader if row["status"] == "ok"]


def recorded_ok(path: Path) -> set[str]:
    """trial_ids already measured successfully."""
    return {row["trial_id"] for row in recorded_ok_rows(path)}


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

    def median_overhead_s(self) -> float:
        return float(np.median(self.overheads_s)) if self.overheads_s else math.nan

    def summary(self) -> str:
        text = (f"Sweep {self.directory.name}: {self.ran} trials run ({self.ok} ok, {self.failed} failed"
                f"{f', {self.skipped} already recorded' if self.skipped else ''}) of {self.planned} planned in "
                f"{self.wall_s:.0f} s; warm-up + measured windows {self.window_s:.0f} s "
                f"(wall/window {self.wall_s / self.window_s if self.window_s else math.nan:.2f}), median "
                f"{self.median_overhead_s():.2f} s per trial outside them. "
                f"Data: {self.directory / 'trials.csv'} with {self.directory / 'manifest.json'}.")
        if self.failures:
            text += f" First failure: {self.failures[0]}."
        return text


def _finished(config: SweepConfig, ok_rows: list[dict[str, str]]) -> bool:
    """Fixed design: every planned trial is ok. Adaptive: every configuration is precise or at max-trials."""
    if config.target_ci is None:
        return {row["trial_id"] for row in ok_rows} >= {spec.trial_id for spec in plan(config)}
    measured = _measured(ok_rows)
    return all(precise_enough(measured.get(c, []), config.target_ci) or len(measured.get(c, [])) >= config.max_trials
               for c in configurations(config))


def _measured(ok_rows: list[dict[str, Any]]) -> dict[Configuration, list[float]]:
    measured: dict[Configuration, list[float]] = {}
    for row in ok_rows:
        value = row.get(PRECISION_METRIC[row["workload"]])
        if value not in (None, ""):
            measured.setdefault(_configuration_of(row), []).append(float(value))
    return measured


def run(config: SweepConfig, data_root: Path = DATA, resume: bool = False,
        progress: bool = True, on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepResult:
    """Runs (or finishes) a sweep inside a fresh namespace pair; returns what happened."""
    directory = data_root / config.name
    trials_path, manifest_path = directory / "trials.csv", directory / "manifest.json"
    if resume:
        if not manifest_path.exists():
            raise CopylabError(f"--resume: {directory} holds no sweep to resume")
        try:
            stored = manifest_module.read(manifest_path)
        except (ValueError, OSError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise CopylabError(f"--resume: {manifest_path} is not readable JSON ({error})") from None
        config = config_from_manifest(stored)
    elif trials_path.exists() or manifest_path.exists():
        raise CopylabError(f"{directory} already holds a sweep: pass --resume to finish it, or choose another --name")
    netns.require_root("run-sweep")
    require_programs([f"{implementation}_{side}" for implementation in config.implementations
                      if implementation in IMPLEMENTATIONS for side in ("server", "client")], config.sanitize)
    require_programs(["memcpy_bandwidth"])
    pair = netns.NamespacePair(*config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max)
    netns.check_free(pair)  # before anything is written, so a refusal leaves nothing behind
    support = perf.detect()
    directory.mkdir(parents=True, exist_ok=True)
    if resume and trials_path.exists():
        repair_truncated_tail(trials_path)
        ok_rows = recorded_ok_rows(trials_path)
        record = manifest_module.read(manifest_path)
    else:
        ok_rows = []
        record = manifest_module.create(config.name, config.profile, config.parameters(), support)
        record["calibration"] = measure_memcpy(cpu="0" if "none" not in config.pinning else None)
    record["ended_at"], record["complete"], record["trials_sha256"] = None, False, None
    manifest_module.write(manifest_path, record)

    done = {row["trial_id"] for row in ok_rows}
    measured = _measured(ok_rows)
    if config.target_ci is None:
        batches: Iterator[list[TrialSpec]] = iter([plan(config)])
        planned = len(plan(config))
    else:
        batches = adaptive_rounds(config, measured)
        planned = len(configurations(config)) * config.max_trials
    result = SweepResult(directory, planned, skipped=len(done))
    settings = TrialSettings(config.name, pair, support, config.duration_s, config.warmup_s, config.verify,
                             config.sanitize)
    started = time.monotonic()
    writer = TrialWriter(trials_path)
    try:
        with netns.namespace_pair(pair), tqdm(
            total=planned - len(done), disable=not progress, unit="trial", dynamic_ncols=True
        ) as bar:
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
                    if on_row:
                        on_row(row)
                    bar.update(1)
            if config.target_ci is not None:
                result.planned = result.ran + result.skipped
    finally:
        writer.close()
        result.wall_s = time.monotonic() - started
        finished = _finished(config, recorded_ok_rows(trials_path))
        record = manifest_module.read(manifest_path)
        record["ended_at"] = manifest_module.now_iso()
        record["complete"] = finished
        record["trials_sha256"] = manifest_module.sha256_of(trials_path) if finished else None
        if result.ran:
            record["harness"] = {"median_overhead_s": result.median_overhead_s(), "wall_s": result.wall_s,
                                 "window_s": result.window_s, "trials_run": result.ran}
        manifest_module.write(manifest_path, record)
    return result
