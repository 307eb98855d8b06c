"""A sweep's settings: the profiles, a sweep file's and the command line's overrides, and their validation.

Everything is checked before anything is created, so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from copylab import implementations, netns
from copylab.errors import CopylabError
from copylab.schema import PINNINGS, WORKLOADS

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_SIZE = 64 << 20
ADAPTIVE_MIN_TRIALS = 3


def powers_of_two(low: int, high: int) -> list[int]:
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high]


PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "implementations": list(implementations.names()),
        "workloads": ["stream", "rr"],
        "sizes": [64, 512, 4096, 16384, 65536],
        "rr_sizes": [4096],
        "threads": [1, 4],
        "trials": 3,
        "duration_s": 1.0,
        "warmup_s": 0.3,
        "pinning": ["same_cpu"],
    },
    "full": {
        "implementations": list(implementations.names()),
        "workloads": ["stream", "rr"],
        "sizes": powers_of_two(64, 256 << 10),
        "rr_sizes": [4096],
        "threads": [1, 2, 4, 8],
        "trials": 5,
        "duration_s": 1.0,
        "warmup_s": 0.3,
        "pinning": ["same_cpu"],
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
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if k not in ("name", "profile")
        }

    @classmethod
    def from_parameters(cls, name: str, profile: str, parameters: dict[str, Any]) -> SweepConfig:
        """The exact sweep a manifest's parameters describe (settings it predates keep their defaults)."""
        unknown = sorted(set(parameters) - {f.name for f in fields(cls)} - {"name", "profile"})
        if unknown:
            raise CopylabError(f"unknown sweep setting(s) {', '.join(unknown)}")
        values = {key: tuple(value) if isinstance(value, list) else value for key, value in parameters.items()}
        return validate(cls(name=name, profile=profile, **values))


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
    for label, values, allowed in (
        ("implementations", config.implementations, implementations.names()),
        ("workloads", config.workloads, WORKLOADS),
        ("pinning", config.pinning, PINNINGS),
    ):
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


def make_config(name: str, profile: str = "quick", sweep_file: Path | None = None, **overrides: Any) -> SweepConfig:
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
    unknown = sorted(set(values) - {f.name for f in fields(SweepConfig)})
    if unknown:
        raise CopylabError(f"unknown sweep setting(s): {', '.join(unknown)}")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    return validate(SweepConfig(**{**values, "name": name, "profile": values.get("profile", profile)}))
