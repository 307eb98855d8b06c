"""A sweep's settings: SweepConfig (copylab/declarations/sweep_config.py, generated from
copylab.declarations.settings' table) made from the profiles (each experiment's own), a sweep file's and the command
line's overrides, and their validation.

Everything is checked before anything is created, so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import ipaddress
import os
import re
import resource
import tomllib
from pathlib import Path
from typing import Any

from copylab import experiments
from copylab.declarations import implementations, settings
from copylab.declarations.namespace_pair import NamespacePair
from copylab.declarations.settings import LISTS, SETTINGS, Setting
from copylab.declarations.sweep_config import SweepConfig
from copylab.errors import CopylabError
from copylab.vocabulary.experiment import Experiment, Members
from copylab.vocabulary.limits import SMALLEST_SOCKET_BUFFER
from copylab.vocabulary.values import NO_LAYOUT

HOST_PATTERN = re.compile(r"^(?P<user>[A-Za-z_][A-Za-z0-9._-]*)@(?P<host>[A-Za-z0-9.-]+)(:(?P<port>\d{1,5}))?$")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ADAPTIVE_MIN_TRIALS = 3
# Descriptors an end needs besides its connections (csrc/serve_main.c and load_client.c ask for as many).
DESCRIPTORS_BESIDES_CONNECTIONS = 64


def from_parameters(name: str, profile: str, parameters: dict[str, Any]) -> SweepConfig:
    """The exact sweep a manifest's parameters describe; a setting it predates takes the value its absence
    implies (copylab.declarations.settings: legacy, else the default)."""
    parameters = settings.upgraded(parameters)
    unknown = sorted(set(parameters) - set(settings.BY_NAME) - {"name", "profile"})
    if unknown:
        raise CopylabError(f"unknown sweep setting(s) {', '.join(unknown)}")
    implied = {s.name: s.legacy for s in SETTINGS if s.legacy is not settings.UNSET}
    values: dict[str, Any] = {
        key: tuple(value) if isinstance(value, list) else value for key, value in {**implied, **parameters}.items()
    }
    return validate(SweepConfig(name=name, profile=profile, **values))


def _bound(limit: float) -> str:
    """A limit as the command line would take it: 67108864, not 6.71089e+07."""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


def _check(setting: Setting, value: Any) -> None:
    """One setting's value against its declaration: type, limits, choices, a list's items."""
    label = setting.option or setting.name
    if value is None:
        if setting.optional:
            return
        raise CopylabError(f"{label}: needs a value")
    items = value if setting.kind in LISTS else (value,)
    if setting.kind in LISTS:
        if not isinstance(value, tuple):
            raise CopylabError(f"{label}: {value!r} is not a list")
        if len(set(value)) != len(value):
            raise CopylabError(f"{label}: {', '.join(map(str, value))} names a value twice")
        if setting.length is not None and len(value) != setting.length:
            raise CopylabError(f"{label}: give {setting.length} values, not {len(value)}")
    item_kind = {"ints": "int", "sizes": "int", "strs": "str"}.get(setting.kind, setting.kind)
    for item in items:
        if item_kind == "bool" and not isinstance(item, bool):
            raise CopylabError(f"{label}: {item!r} is not true or false")
        if item_kind == "str" and not isinstance(item, str):
            raise CopylabError(f"{label}: {item!r} is not a name")
        if item_kind in ("int", "float"):
            whole = item_kind == "int"
            if not settings.is_number(item) or (whole and not isinstance(item, int)):
                raise CopylabError(f"{label}: {item!r} is not a {'whole number' if whole else 'number'}")
            low, high = setting.low, setting.high
            if (low is not None and (item < low or (setting.low_open and item == low))) or (
                high is not None and item > high
            ):
                above = "above " if setting.low_open else ""
                span = f"{above}{_bound(low)} to {_bound(high)}" if low is not None and high is not None else ""
                raise CopylabError(f"{label}: {item!r} is out of range ({span})")
        allowed = setting.allowed()
        if allowed is not None and item not in allowed:
            raise CopylabError(f"{label}: unknown {item!r} (choose from {', '.join(allowed)})")


def validate(config: SweepConfig) -> SweepConfig:
    """Rejects a bad sweep before anything is created; returns it unchanged."""
    if not NAME_PATTERN.fullmatch(config.name):
        raise CopylabError(f"sweep name {config.name!r}: use letters, digits, '.', '_' or '-' (no '/' or spaces)")
    for setting in SETTINGS:
        _check(setting, getattr(config, setting.name))
    experiment = experiments.get(config.experiment)
    if config.profile not in (*experiment.profiles, "custom"):
        raise CopylabError(f"profile: unknown {config.profile!r} (choose from {', '.join(experiment.profiles)})")
    for name, reason in experiment.refuses.items():
        if getattr(config, name) != settings.get(name).default:
            raise CopylabError(f"{settings.get(name).option}: {reason}")
    for name, (allowed, reason) in experiment.allows.items():
        if not set(getattr(config, name)) <= set(allowed):
            raise CopylabError(f"{settings.get(name).option}: {reason}")
    members = implementations.names(experiment.name)
    for name in config.implementations:
        if name not in members:
            raise CopylabError(f"{experiment.noun}: unknown {name!r} (choose from {', '.join(members)})")
    if not config.implementations:
        raise CopylabError(f"{experiment.noun}: needs at least one value")
    _resolve(config, experiment)
    for label, value in (("workloads", config.workloads), ("pinning", config.pinning), ("receive", config.receive)):
        if not value:
            raise CopylabError(f"{label}: needs at least one value")
    needs = {"threads": config.threads, "sizes" if "stream" in config.workloads else "": config.sizes}
    if "rr" in config.workloads:
        needs["rr-sizes"] = config.rr_sizes
    if experiment.axis == "connections":
        needs["connections"] = config.connections
    for label, counts in needs.items():
        if label and not counts:
            raise CopylabError(f"{label}: needs at least one value")
    outside_sizes = sorted(set(config.side_sizes) - set(config.sizes))
    if outside_sizes:
        raise CopylabError(
            f"side-sizes: {', '.join(map(str, outside_sizes))} not among --sizes (side sizes are a subset of them)"
        )
    for label, chosen in (("receive-for", config.receive_for), ("layout-for", config.layout_for)):
        outside = [name for name in chosen if name not in config.implementations]
        if outside:
            raise CopylabError(f"{label}: {', '.join(outside)} (give implementations of the sweep)")
    _check_layouts(config)
    _check_socket_buffer(config)
    _check_load(config)
    if config.connections:
        _check_connection_limits(config)
    _check_design(config)
    NamespacePair(*config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max)
    _check_hosts(config)
    return config


def _resolve(config: SweepConfig, experiment: Experiment) -> None:
    """Puts in CONFIG the declarations its names stand for (SweepConfig.declared, members, deciding): the one place a
    sweep's names are looked up."""
    members = {name: implementations.get(name) for name in config.implementations}
    deciding = tuple(
        (members[challenger], members[baseline])
        for challenger, baseline in implementations.deciding_pairs(experiment)
        if challenger in members and baseline in members
    )
    # Frozen, and resolved only once checked: what the names stand for is not a setting of its own.
    for name, value in (("declared", experiment), ("members", members), ("deciding", deciding)):
        object.__setattr__(config, name, value)


def _check_layouts(config: SweepConfig) -> None:
    if not config.layout:
        raise CopylabError("layout: needs at least one value")
    if set(config.layout) <= {implementations.STUDY_LAYOUT}:
        return
    for member in config.members.values():
        fixed = member.fixed_layout
        if fixed is not None and (not config.layout_for or member.name in config.layout_for):
            held = "not in its memory" if fixed == NO_LAYOUT else fixed
            raise CopylabError(
                f"layout: {member.name}'s message layout cannot be chosen (it is {held}); leave it out, or name the "
                "senders with --layout-for"
            )


def _check_socket_buffer(config: SweepConfig) -> None:
    if config.socket_buffer is not None and 0 < config.socket_buffer < SMALLEST_SOCKET_BUFFER:
        raise CopylabError(
            f"socket-buffer: {config.socket_buffer} is below the {SMALLEST_SOCKET_BUFFER} bytes the kernel grants as "
            "asked (0 leaves the buffers to the kernel)"
        )


def _check_load(config: SweepConfig) -> None:
    if config.load == "open" and not config.rates:
        raise CopylabError("rates: an open load needs the rates it offers, e.g. --rates 5000,10000,20000")
    if config.load == "closed" and config.rates:
        raise CopylabError("rates: only an open load offers a rate (add --load open)")


def _check_design(config: SweepConfig) -> None:
    if config.target_ci is not None and config.design != "randomized":
        raise CopylabError(
            "target-ci: adaptive repetition is for --design randomized; a blocked sweep spends a --budget on the "
            "comparisons still undecided instead"
        )
    if config.target_ci is not None and config.max_trials < ADAPTIVE_MIN_TRIALS:
        raise CopylabError(f"max-trials: adaptive repetition needs at least {ADAPTIVE_MIN_TRIALS}")
    if config.budget_s is not None:
        if config.design != "blocked":
            raise CopylabError("budget: only a blocked sweep (--design blocked) spends a time budget")
        if config.max_trials < config.trials:
            raise CopylabError(f"max-trials: {config.max_trials} is fewer than the first pass's {config.trials}")


def _check_hosts(config: SweepConfig) -> None:
    hosts = {"server-host": config.server_host, "client-host": config.client_host}
    if not any(hosts.values()):
        for label, value in (("server-address", config.server_address), ("ssh-config", config.ssh_config)):
            if value:
                raise CopylabError(f"{label}: only for two hosts (give --server-host and --client-host)")
        if config.tune_remote:
            raise CopylabError("tune-remote: only for two hosts (give --server-host and --client-host)")
        return
    if config.sender_pages != "large":
        raise CopylabError(
            f"sender-pages: {config.sender_pages} is for one host only (over a NIC the receiving driver's pages, "
            "not the sender's, decide what the receiver can map)"
        )
    for label, value in hosts.items():
        if not value:
            raise CopylabError(f"{label}: missing (a two-host sweep needs both --server-host and --client-host)")
        if not HOST_PATTERN.fullmatch(value):
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


def _held(config: SweepConfig) -> int:
    """The most connections a server of the sweep holds: the busy ones and the idle ones."""
    return max(config.connections) + max(config.idle_connections)


def _check_connection_limits(config: SweepConfig) -> None:
    """Refuses more connections, busy and idle, than a model of the sweep can hold."""
    most = _held(config)
    label = "connections" if max(config.idle_connections) == 0 else "idle-connections"
    total = (
        f"{most}" if label == "connections" else f"{max(config.connections)} busy + {max(config.idle_connections)} idle"
    )
    if (high := settings.get("connections").high) is not None and most > high:
        raise CopylabError(f"{label}: {total} connections are more than {_bound(high)}")
    for member in config.members.values():
        name, limit = member.name, member.max_connections
        if limit is not None and most > limit:
            raise CopylabError(
                f"{label}: a {name} server holds at most {limit} connections (FD_SETSIZE less its own "
                f"descriptors), not {total}; drop {name} or the larger counts"
            )


def check_descriptor_limit(config: SweepConfig) -> None:
    """Refuses, before running here, more connections than this host lets a process open.

    Each end raises its own limit as far as the hard limit allows, and past it when privileged.
    """
    if not config.connections:
        return
    most = _held(config)
    needed = most + DESCRIPTORS_BESIDES_CONNECTIONS
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < needed and os.geteuid() != 0:
        raise CopylabError(
            f"connections: {most} connections need {needed} descriptors per process and the hard limit is {hard} "
            "(raise it with ulimit -Hn or in /etc/security/limits.conf)"
        )


# Where this host says how much memory a new process may take: the cgroup's limit and use, and the kernel's estimate.
CGROUP_MEMORY = Path("/sys/fs/cgroup")
MEMINFO = Path("/proc/meminfo")


def available_memory() -> int | None:
    """Bytes this host can give the sweep's programs: the kernel's MemAvailable, or less where a cgroup limit leaves
    less; None where neither can be read."""
    found = []
    try:
        line = next(line for line in MEMINFO.read_text().splitlines() if line.startswith("MemAvailable:"))
        found.append(int(line.split()[1]) * 1024)
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    try:
        limit = (CGROUP_MEMORY / "memory.max").read_text().strip()
        used = int((CGROUP_MEMORY / "memory.current").read_text())
        if limit != "max":
            found.append(int(limit) - used)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def memory_needed(config: SweepConfig) -> int:
    """Bytes of messages the sweep's largest trial holds at its two ends: each sender thread its distinct messages and
    a packed copy of one, each receiver thread a buffer of a message."""
    largest = max((*config.sizes, *config.rr_sizes), default=0)
    return max(config.threads, default=1) * largest * (config.distinct_messages + 2)


def check_memory_limit(config: SweepConfig) -> None:
    """Refuses, before running here, messages that do not fit in the memory this host has left."""
    available = available_memory()
    needed = memory_needed(config)
    if available is not None and needed > available:
        largest = max((*config.sizes, *config.rr_sizes), default=0)
        raise CopylabError(
            f"sizes: {largest} B messages need about {needed >> 20} MiB at the two ends ({max(config.threads)} "
            f"threads, {config.distinct_messages} distinct messages) and this host has {available >> 20} MiB available"
        )


def _members(experiment: str, chosen: Members) -> list[str]:
    return [
        impl.name
        for impl in implementations.registry().values()
        if impl.experiment == experiment
        and not impl.bench_only
        and (chosen.references or not impl.reference)
        and (chosen.roles is None or impl.role in chosen.roles)
        and (not chosen.in_memory or impl.fixed_layout != NO_LAYOUT)
    ]


def profile_settings(experiment: str, profile: str) -> dict[str, Any]:
    """An experiment's profile, its choices of implementations made from the registry."""
    declared = experiments.get(experiment).profiles
    if profile not in declared:
        raise CopylabError(f"profile: unknown {profile!r} (choose from {', '.join(declared)})")
    return {
        key: _members(experiment, value) if isinstance(value, Members) else value
        for key, value in declared[profile].items()
    }


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
    unknown = sorted(set(given) - set(settings.BY_NAME) - {"profile"})
    if unknown:
        raise CopylabError(f"unknown sweep setting(s): {', '.join(unknown)}")
    experiment = experiments.get(experiment or given.get("experiment") or experiments.DEFAULT.name).name
    values: dict[str, Any] = {**profile_settings(experiment, profile), "experiment": experiment}
    values.update(given)
    # A profile's budget is for its own design: an explicit number of trials (a fixed design of that many blocks)
    # or the randomized design sets it aside, unless a budget is given too.
    if "budget_s" not in given and ("trials" in given or given.get("design") == "randomized"):
        values["budget_s"] = None
    if "sizes" in given and "side_sizes" not in given:
        values["side_sizes"] = []  # sizes asked for explicitly: every contender at each of them
    values.setdefault("receive_for", [])
    values.setdefault("layout_for", [])
    if "layout" in given and "layout_for" not in given:
        # layouts asked for explicitly: for every implementation asked for, or those of a profile that can take them
        chosen = [name for name in values["implementations"] if implementations.fixed_layout(name) is None]
        values["layout_for"] = [] if "implementations" in given else chosen
    elif "implementations" in given and "layout_for" not in given:
        # implementations named without a layout: as the study holds the message, unless --layout says otherwise
        values["layout"], values["layout_for"] = [implementations.STUDY_LAYOUT], []
    elif "layout_for" not in given and values["layout_for"]:
        values["layout_for"] = [name for name in values["layout_for"] if name in values["implementations"]]
        if not values["layout_for"]:
            values["layout"] = [implementations.STUDY_LAYOUT]
    if "receive" in given and "receive_for" not in given:
        values["receive_for"] = []  # receive modes asked for explicitly: for every implementation
    elif "receive_for" not in given and values["receive_for"]:
        # The profile's choice follows the implementations actually asked for; none of them left: copy only.
        values["receive_for"] = [name for name in values["receive_for"] if name in values["implementations"]]
        if not values["receive_for"]:
            values["receive"] = ["copy"]
    if values.get("path") == "sink":
        # A profile's request/response and receive modes have no place on the sink (copylab.testbeds.sink refuses
        # them when asked for).
        values.update(
            {key: only for key, only in (("workloads", ["stream"]), ("receive", ["copy"])) if key not in given}
        )
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()}
    return validate(SweepConfig(**{**values, "name": name, "profile": values.get("profile", profile)}))
