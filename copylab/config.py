"""A sweep's settings: the profiles, a sweep file's and the command line's overrides, and their validation.

Everything is checked before anything is created, so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import ipaddress
import os
import re
import resource
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from copylab import implementations, netns
from copylab.errors import CopylabError
from copylab.schema import PINNINGS, RECEIVE_MODES, WORKLOADS

HOST_PATTERN = re.compile(r"^(?P<user>[A-Za-z_][A-Za-z0-9._-]*)@(?P<host>[A-Za-z0-9.-]+)(:(?P<port>\d{1,5}))?$")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_SIZE = 64 << 20
ADAPTIVE_MIN_TRIALS = 3


def powers_of_two(low: int, high: int) -> list[int]:
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high]


# The copies experiment's implementations that profiles run (the bench's yardsticks are left to the bench).
_PROFILED = [name for name in implementations.names("copies") if not implementations.get(name).bench_only]
_STUDY_EDGES = [role.name for role in map(implementations.by_role, ("A1", "A3")) if role]

# Experiment -> profile -> settings.  quick is ./inv report's sweep, within its 5-minute budget (README's
# performance table); full is the study's grid.  Both run blocked designs with short windows: what makes identical
# trials differ here is fixed per trial (the host's speed while it runs, how the two ends share the CPU), not
# averaged away by a longer window, so more and shorter trials paired within blocks decide more per second.
PROFILES: dict[str, dict[str, dict[str, Any]]] = {
    "copies": {
        "quick": {
            "implementations": [n for n in _PROFILED if not implementations.get(n).reference],
            "workloads": ["stream", "rr"],
            "sizes": [64, 1024, 4096, 16384, 65536, 262144],
            "rr_sizes": [4096],
            "threads": [1, 4],
            "trials": 2,
            "duration_s": 0.2,
            "warmup_s": 0.1,
            "pinning": ["same_cpu"],
            "receive": ["copy", "truncate"],
            "receive_for": _STUDY_EDGES,
            "design": "blocked",
            "budget_s": 135.0,
            "max_trials": 10,
        },
        "full": {
            "implementations": list(_PROFILED),
            "workloads": ["stream", "rr"],
            "sizes": powers_of_two(64, 256 << 10),
            "rr_sizes": [4096],
            "threads": [1, 2, 4, 8],
            "trials": 5,
            "duration_s": 0.2,
            "warmup_s": 0.1,
            "pinning": ["same_cpu"],
            "receive": list(RECEIVE_MODES),
            "receive_for": _STUDY_EDGES,
            "design": "blocked",
        },
    },
    # The seed material's set-up: server on CPU 0, client on CPU 1 (taskset), many connections at once.
    "servers": {
        "quick": {
            "implementations": list(implementations.names("servers")),
            "workloads": ["rr"],
            "rr_sizes": [64],
            "threads": [1],
            "connections": [1, 10, 100],
            "trials": 2,
            "duration_s": 0.2,
            "warmup_s": 0.1,
            "pinning": ["split_cpu"],
            "design": "blocked",
            "budget_s": 30.0,
            "max_trials": 10,
        },
        "full": {
            "implementations": list(implementations.names("servers")),
            "workloads": ["rr"],
            "rr_sizes": [64, 4096],
            "threads": [1],
            # dense where the models part ways (the server saturates within ten connections), then far out
            "connections": [1, 2, 4, 8, 16, 100, 1000],
            "trials": 5,
            "duration_s": 0.5,
            "warmup_s": 0.2,
            "pinning": ["split_cpu"],
            "design": "blocked",
        },
    },
}
PROFILE_NAMES = ("quick", "full")
# The most connections a trial may open (csrc/copylab.h MAX_CONNECTIONS: the accept queue's default bound).
MAX_CONNECTIONS = 4096
# Descriptors an end needs besides its connections (csrc/serve_main.c and load_client.c ask for as many).
DESCRIPTORS_BESIDES_CONNECTIONS = 64


DESIGNS = ("blocked", "randomized")
# What a manifest written before a setting existed implies for it (where that is not the setting's default).
LEGACY = {"design": "randomized"}


@dataclass(frozen=True)
class SweepConfig:
    name: str
    profile: str = "quick"
    experiment: str = "copies"
    implementations: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    rr_sizes: tuple[int, ...] = ()
    threads: tuple[int, ...] = ()
    trials: int = 3
    duration_s: float = 1.0
    warmup_s: float = 0.3
    pinning: tuple[str, ...] = ()
    # How the client takes the bytes in; modes other than copy only for receive_for (empty: every implementation).
    receive: tuple[str, ...] = ("copy",)
    receive_for: tuple[str, ...] = ()
    # servers: the connections the client keeps busy (copies: one per thread, this stays empty)
    connections: tuple[int, ...] = ()
    seed: int = 1
    verify: bool = False
    mtu: int = 1500
    optmem_max: int = 131072
    sanitize: str | None = None
    namespaces: tuple[str, str] = ("copylab_srv", "copylab_cli")
    # Adaptive repetition: repeat a configuration only until its 95% interval is this tight.
    target_ci: float | None = None
    max_trials: int = 10
    # Two hosts over SSH instead of two namespaces here (copylab.remote): USER@HOST[:PORT] each, and the address
    # the client reaches the server at on the data path.
    server_host: str | None = None
    client_host: str | None = None
    server_address: str | None = None
    ssh_config: str | None = None
    # Set --mtu and --optmem-max on the hosts for the sweep (restored after); otherwise they are left alone.
    tune_remote: bool = False
    # Count the kernel's copies in each window with BPF (copylab.kernel_copies).
    kernel_copies: bool = True
    # Allocate each of the message's fields on a page boundary (still 8 allocations).
    align_fields: bool = False
    # blocked: each block runs every implementation of one point back to back, and comparisons pair them within
    # blocks; randomized: every trial of the grid in one random order, compared unpaired.
    design: str = "blocked"
    # A blocked sweep's time budget (s): after a first pass of `trials` blocks, the rest goes to the comparisons
    # that decide the experiment's answers and are still undecided (capped at max_trials blocks a point), then to
    # the other implementations.  None: the fixed design of `trials` blocks.
    budget_s: float | None = None

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
        values = {**LEGACY, **values}
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
    experiment = implementations.experiment(config.experiment)
    names = "models" if experiment.name == "servers" else "implementations"
    for label, values, allowed in (
        (names, config.implementations, implementations.names(experiment.name)),
        ("workloads", config.workloads, WORKLOADS),
        ("pinning", config.pinning, PINNINGS),
        ("receive", config.receive, RECEIVE_MODES),
    ):
        _unique(label, values)
        for value in values:
            if value not in allowed:
                raise CopylabError(f"{label}: unknown {value!r} (choose from {', '.join(allowed)})")
    _unique("threads", config.threads)
    outside = [name for name in config.receive_for if name not in config.implementations]
    if outside or len(set(config.receive_for)) != len(config.receive_for):
        raise CopylabError(f"receive-for: {', '.join(outside) or 'a name twice'} (give implementations of the sweep)")
    if experiment.name == "copies":
        _unique("sizes", config.sizes)
        _whole_range("sizes", config.sizes, 8, MAX_SIZE)
        if config.connections:
            raise CopylabError("connections: the copies experiment opens one connection per thread")
    else:
        _unique("connections", config.connections)
        _whole_range("connections", config.connections, 1, MAX_CONNECTIONS)
        if config.workloads != ("rr",) or config.receive != ("copy",):
            raise CopylabError("the servers experiment runs request/response (rr) receiving by copy only")
        _check_connection_limits(config)
    _whole_range("threads", config.threads, 1, 64)
    if "rr" in config.workloads:
        _unique("rr_sizes", config.rr_sizes)
        _whole_range("rr_sizes", config.rr_sizes, 8, MAX_SIZE)
    _whole_range("trials", (config.trials,), 1, 1000)
    if config.target_ci is not None:
        if not (isinstance(config.target_ci, (int, float)) and 0 < config.target_ci < 1):
            raise CopylabError(f"target-ci: {config.target_ci!r} must be a fraction of the mean between 0 and 1")
        _whole_range("max-trials", (config.max_trials,), ADAPTIVE_MIN_TRIALS, 1000)
    if config.design not in DESIGNS:
        raise CopylabError(f"design: unknown {config.design!r} (choose from {', '.join(DESIGNS)})")
    if config.target_ci is not None and config.design != "randomized":
        raise CopylabError(
            "target-ci: adaptive repetition is for --design randomized; a blocked sweep spends a --budget on the "
            "comparisons still undecided instead"
        )
    if config.budget_s is not None:
        if config.design != "blocked":
            raise CopylabError("budget: only a blocked sweep (--design blocked) spends a time budget")
        if isinstance(config.budget_s, bool) or not (
            isinstance(config.budget_s, (int, float)) and 0 < config.budget_s <= 7 * 24 * 3600
        ):
            raise CopylabError(f"budget: {config.budget_s!r} must be above 0 and at most a week, in seconds")
        _whole_range("max-trials", (config.max_trials,), max(2, config.trials), 1000)
    if not (isinstance(config.duration_s, (int, float)) and 0 < config.duration_s <= 3600):
        raise CopylabError(f"duration: {config.duration_s!r} must be above 0 and at most 3600 s")
    if not (isinstance(config.warmup_s, (int, float)) and 0 <= config.warmup_s <= 600):
        raise CopylabError(f"warmup: {config.warmup_s!r} must be from 0 to 600 s")
    if config.profile not in (*PROFILE_NAMES, "custom"):
        raise CopylabError(f"profile: unknown {config.profile!r} (choose from {', '.join(PROFILE_NAMES)})")
    if len(config.namespaces) != 2:
        raise CopylabError(f"namespaces: give two names (server, client), not {len(config.namespaces)}")
    netns.NamespacePair(*config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max)
    _check_hosts(config)
    return config


def _check_hosts(config: SweepConfig) -> None:
    hosts = {"server-host": config.server_host, "client-host": config.client_host}
    if not any(hosts.values()):
        for label, value in (("server-address", config.server_address), ("ssh-config", config.ssh_config)):
            if value:
                raise CopylabError(f"{label}: only for two hosts (give --server-host and --client-host)")
        if config.tune_remote:
            raise CopylabError("tune-remote: only for two hosts (give --server-host and --client-host)")
        return
    for label, value in hosts.items():
        if not value:
            raise CopylabError(f"{label}: missing (a two-host sweep needs both --server-host and --client-host)")
        if not isinstance(value, str) or not HOST_PATTERN.fullmatch(value):
            raise CopylabError(f"{label}: {value!r} is not USER@HOST or USER@HOST:PORT")
        port = HOST_PATTERN.fullmatch(value)["port"]  # type: ignore[index]
        if port is not None and not 1 <= int(port) <= 65535:
            raise CopylabError(f"{label}: port {port} is not from 1 to 65535")
    if not config.server_address:
        raise CopylabError("server-address: missing (where the client reaches the server on the data path)")
    try:
        ipaddress.IPv4Address(config.server_address)
    except ValueError:
        raise CopylabError(f"server-address: {config.server_address!r} is not an IPv4 address") from None
    if config.ssh_config is not None and not Path(config.ssh_config).is_file():
        raise CopylabError(f"ssh-config: {config.ssh_config} is not a readable file")


def _check_connection_limits(config: SweepConfig) -> None:
    """Refuses more connections than a model of the sweep can hold."""
    most = max(config.connections)
    for name in config.implementations:
        limit = implementations.get(name).max_connections
        if limit is not None and most > limit:
            raise CopylabError(
                f"connections: a {name} server holds at most {limit} connections (FD_SETSIZE less its own "
                f"descriptors), not {most}; drop {name} or the larger counts"
            )


def check_descriptor_limit(config: SweepConfig) -> None:
    """Refuses, before running here, more connections than this host lets a process open.

    Each end raises its own limit as far as the hard limit allows, and past it when privileged.
    """
    if not config.connections:
        return
    most = max(config.connections)
    needed = most + DESCRIPTORS_BESIDES_CONNECTIONS
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < needed and os.geteuid() != 0:
        raise CopylabError(
            f"connections: {most} connections need {needed} descriptors per process and the hard limit is {hard} "
            "(raise it with ulimit -Hn or in /etc/security/limits.conf)"
        )


def make_config(
    name: str, profile: str = "quick", sweep_file: Path | None = None, experiment: str | None = None, **overrides: Any
) -> SweepConfig:
    """A profile's settings, then a sweep file's, then explicit options (None = not given)."""
    given: dict[str, Any] = {}
    if sweep_file is not None:
        try:
            given.update(tomllib.loads(Path(sweep_file).read_text()))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise CopylabError(f"sweep file {sweep_file}: {error}") from None
    given.update({key: value for key, value in overrides.items() if value is not None})
    experiment = experiment or given.get("experiment") or "copies"
    if experiment not in PROFILES:
        raise CopylabError(f"experiment: unknown {experiment!r} (choose from {', '.join(PROFILES)})")
    if profile not in PROFILES[experiment]:
        raise CopylabError(f"profile: unknown {profile!r} (choose from {', '.join(PROFILE_NAMES)})")
    values: dict[str, Any] = {**PROFILES[experiment][profile], "experiment": experiment}
    values.update(given)
    # A profile's budget is for its own design: an explicit number of trials (a fixed design of that many blocks)
    # or the randomized design sets it aside, unless a budget is given too.
    if "budget_s" not in given and ("trials" in given or given.get("design") == "randomized"):
        values["budget_s"] = None
    values.setdefault("receive_for", [])
    if "receive" in given and "receive_for" not in given:
        values["receive_for"] = []  # receive modes asked for explicitly: for every implementation
    elif "receive_for" not in given and values["receive_for"]:
        # The profile's choice follows the implementations actually asked for; none of them left: copy only.
        values["receive_for"] = [name for name in values["receive_for"] if name in values["implementations"]]
        if not values["receive_for"]:
            values["receive"] = ["copy"]
    unknown = sorted(set(values) - {f.name for f in fields(SweepConfig)})
    if unknown:
        raise CopylabError(f"unknown sweep setting(s): {', '.join(unknown)}")
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    return validate(SweepConfig(**{**values, "name": name, "profile": values.get("profile", profile)}))
