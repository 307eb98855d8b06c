"""Sweeps: the grid of configurations, repeated trials in a seeded random order,
each row written to disk the moment its trial ends, resumable after any interruption."""

from __future__ import annotations

import csv
import io
import math
import os
import random
import re
import signal
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import FrameType
from typing import Any

from tqdm import tqdm

from copylab import manifest as manifest_module
from copylab import netns, perf
from copylab.errors import CopylabError
from copylab.paths import DATA
from copylab.schema import BASELINE_TOOLS, COLUMN_NAMES, IMPLEMENTATIONS, PINNINGS, WORKLOADS
from copylab.trial import TrialSettings, TrialSpec, run_trial

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
    values = {key: tuple(value) if isinstance(value, list) else value
              for key, value in stored["parameters"].items()}
    return validate(SweepConfig(name=stored["sweep"], profile=stored["profile"], **values))


def plan(config: SweepConfig) -> list[TrialSpec]:
    """Every trial of the sweep, in its seeded random order."""
    configurations = []
    for implementation in config.implementations:
        for workload in config.workloads:
            if workload == "rr" and implementation in BASELINE_TOOLS:
                continue
            for size in config.sizes if workload == "stream" else config.rr_sizes:
                for threads in config.threads:
                    for pinning in config.pinning:
                        configurations.append((implementation, workload, size, threads, pinning))
    trials = [(*c, repetition) for c in configurations for repetition in range(1, config.trials + 1)]
    random.Random(config.seed).shuffle(trials)
    return [
        TrialSpec(f"{impl}-{workload}-{size}-{threads}-{pinning}-r{rep}", index, impl, workload, size, threads,
                  pinning, rep)
        for index, (impl, workload, size, threads, pinning, rep) in enumerate(trials)
    ]


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


def recorded_ok(path: Path) -> set[str]:
    """trial_ids already measured successfully."""
    with path.open(newline="") as stream:
        reader = csv.DictReader(stream)
        if tuple(reader.fieldnames or ()) != COLUMN_NAMES:
            raise CopylabError(f"{path}: its columns are not copylab's trials.csv columns; refusing to append")
        return {row["trial_id"] for row in reader if row["status"] == "ok"}


class Interrupted(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C so every context manager cleans up."""


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        overhead = (self.wall_s - self.window_s) / self.ran if self.ran else 0.0
        text = (f"Sweep {self.directory.name}: {self.ran} trials run ({self.ok} ok, {self.failed} failed"
                f"{f', {self.skipped} already recorded' if self.skipped else ''}) of {self.planned} planned in "
                f"{self.wall_s:.0f} s, {overhead:.2f} s per trial outside measured windows. "
                f"Data: {self.directory / 'trials.csv'} with {self.directory / 'manifest.json'}.")
        if self.failures:
            text += f" First failure: {self.failures[0]}."
        return text


def run(config: SweepConfig, data_root: Path = DATA, resume: bool = False,
        progress: bool = True, on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepResult:
    """Runs (or finishes) a sweep inside a fresh namespace pair; returns what happened."""
    directory = data_root / config.name
    trials_path, manifest_path = directory / "trials.csv", directory / "manifest.json"
    if resume:
        if not manifest_path.exists():
            raise CopylabError(f"--resume: {directory} holds no sweep to resume")
        config = config_from_manifest(manifest_module.read(manifest_path))
    elif trials_path.exists() or manifest_path.exists():
        raise CopylabError(f"{directory} already holds a sweep: pass --resume to finish it, or choose another --name")
    netns.require_root("run-sweep")
    pair = netns.NamespacePair(*config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max)
    support = perf.detect()
    directory.mkdir(parents=True, exist_ok=True)
    if resume and trials_path.exists():
        repair_truncated_tail(trials_path)
        done = recorded_ok(trials_path)
        record = manifest_module.read(manifest_path)
    else:
        done = set()
        record = manifest_module.create(config.name, config.profile, config.parameters(), support)
    record["ended_at"], record["complete"], record["trials_sha256"] = None, False, None
    manifest_module.write(manifest_path, record)

    trials = plan(config)
    todo = [spec for spec in trials if spec.trial_id not in done]
    result = SweepResult(directory, len(trials), skipped=len(trials) - len(todo))
    settings = TrialSettings(config.name, pair, support, config.duration_s, config.warmup_s, config.verify,
                             config.sanitize)
    started = time.monotonic()
    writer = TrialWriter(trials_path)
    try:
        with _terminate_as_interrupt(), netns.namespace_pair(pair), tqdm(
            total=len(todo), disable=not progress, unit="trial", dynamic_ncols=True
        ) as bar:
            for spec in todo:
                row = run_trial(spec, settings)
                writer.write(row)
                result.ran += 1
                result.window_s += settings.warmup_s + settings.duration_s
                if row["status"] == "ok":
                    result.ok += 1
                else:
                    result.failed += 1
                    result.failures.append(f"{spec.trial_id}: {row['error']}")
                if on_row:
                    on_row(row)
                bar.update(1)
    finally:
        writer.close()
        result.wall_s = time.monotonic() - started
        finished = recorded_ok(trials_path) >= {spec.trial_id for spec in trials}
        record = manifest_module.read(manifest_path)
        record["ended_at"] = manifest_module.now_iso()
        record["complete"] = finished
        record["trials_sha256"] = manifest_module.sha256_of(trials_path) if finished else None
        manifest_module.write(manifest_path, record)
    return result
