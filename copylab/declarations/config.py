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
from copylab.error_catalogue import (
    BAD_HOST,
    BAD_HOST_PORT,
    BAD_SERVER_ADDRESS,
    BAD_SWEEP_NAME,
    BUDGET_NEEDS_BLOCKED,
    HOST_MISSING,
    LAYOUT_FIXED,
    MAX_TRIALS_BELOW_FIRST_PASS,
    NAMED_TWICE,
    NEEDS_A_VALUE,
    NO_LAYOUT_GIVEN,
    NO_VALUE_GIVEN,
    NOT_A_LIST,
    NOT_A_NAME,
    NOT_A_NUMBER,
    NOT_ENOUGH_MEMORY,
    NOT_OF_THE_SWEEP,
    NOT_TRUE_OR_FALSE,
    ONLY_FOR_TWO_HOSTS,
    OPEN_LOAD_NEEDS_RATES,
    OUT_OF_RANGE,
    RATES_NEED_OPEN_LOAD,
    REFUSED_BY_EXPERIMENT,
    SELECT_LIMIT,
    SENDER_PAGES_ONE_HOST,
    SERVER_ADDRESS_MISSING,
    SIDE_SIZES_OUTSIDE,
    SOCKET_BUFFER_TOO_SMALL,
    SSH_CONFIG_UNREADABLE,
    SWEEP_FILE_UNREADABLE,
    TARGET_CI_NEEDS_RANDOMIZED,
    TOO_FEW_DESCRIPTORS,
    TOO_FEW_MAX_TRIALS,
    TOO_MANY_CONNECTIONS,
    TUNE_REMOTE_ONE_HOST,
    UNKNOWN_CHOICE,
    UNKNOWN_SETTINGS,
    UNKNOWN_SETTINGS_IN_FILE,
    WRONG_LENGTH,
)
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
        raise UNKNOWN_SETTINGS.error(names=", ".join(unknown))
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
        raise NEEDS_A_VALUE.error(label=label)
    items = value if setting.kind in LISTS else (value,)
    if setting.kind in LISTS:
        if not isinstance(value, tuple):
            raise NOT_A_LIST.error(label=label, value=value)
        if len(set(value)) != len(value):
            raise NAMED_TWICE.error(label=label, values=", ".join(map(str, value)))
        if setting.length is not None and len(value) != setting.length:
            raise WRONG_LENGTH.error(label=label, length=setting.length, given=len(value))
    item_kind = {"ints": "int", "sizes": "int", "strs": "str"}.get(setting.kind, setting.kind)
    for item in items:
        if item_kind == "bool" and not isinstance(item, bool):
            raise NOT_TRUE_OR_FALSE.error(label=label, value=item)
        if item_kind == "str" and not isinstance(item, str):
            raise NOT_A_NAME.error(label=label, value=item)
        if item_kind in ("int", "float"):
            whole = item_kind == "int"
            if not settings.is_number(item) or (whole and not isinstance(item, int)):
                raise NOT_A_NUMBER.error(label=label, value=item, kind="whole number" if whole else "number")
            low, high = setting.low, setting.high
            if (low is not None and (item < low or (setting.low_open and item == low))) or (
                high is not None and item > high
            ):
                above = "above " if setting.low_open else ""
                span = f"{above}{_bound(low)} to {_bound(high)}" if low is not None and high is not None else ""
                raise OUT_OF_RANGE.error(label=label, value=item, span=span)
        allowed = setting.allowed()
        if allowed is not None and item not in allowed:
            raise UNKNOWN_CHOICE.error(label=label, value=item, choices=", ".join(allowed))


def validate(config: SweepConfig) -> SweepConfig:
    """Rejects a bad sweep before anything is created; returns it unchanged."""
    if not NAME_PATTERN.fullmatch(config.name):
        raise BAD_SWEEP_NAME.error(name=config.name)
    for setting in SETTINGS:
        _check(setting, getattr(config, setting.name))
    experiment = experiments.get(config.experiment)
    if config.profile not in (*experiment.profiles, "custom"):
        raise UNKNOWN_CHOICE.error(label="profile", value=config.profile, choices=", ".join(experiment.profiles))
    for name, reason in experiment.refuses.items():
        if getattr(config, name) != settings.get(name).default:
            raise REFUSED_BY_EXPERIMENT.error(option=settings.get(name).option, reason=reason)
    for name, (allowed, reason) in experiment.allows.items():
        if not set(getattr(config, name)) <= set(allowed):
            raise REFUSED_BY_EXPERIMENT.error(option=settings.get(name).option, reason=reason)
    members = implementations.names(experiment.name)
    for name in config.implementations:
        if name not in members:
            raise UNKNOWN_CHOICE.error(label=experiment.noun, value=name, choices=", ".join(members))
    if not config.implementations:
        raise NO_VALUE_GIVEN.error(label=experiment.noun)
    _resolve(config, experiment)
    for label, value in (("workloads", config.workloads), ("pinning", config.pinning), ("receive", config.receive)):
        if not value:
            raise NO_VALUE_GIVEN.error(label=label)
    needs = {"threads": config.threads, "sizes" if "stream" in config.workloads else "": config.sizes}
    if "rr" in config.workloads:
        needs["rr-sizes"] = config.rr_sizes
    if experiment.axis == "connections":
        needs["connections"] = config.connections
    for label, counts in needs.items():
        if label and not counts:
            raise NO_VALUE_GIVEN.error(label=label)
    outside_sizes = sorted(set(config.side_sizes) - set(config.sizes))
    if outside_sizes:
        raise SIDE_SIZES_OUTSIDE.error(outside=", ".join(map(str, outside_sizes)))
    for label, chosen in (("receive-for", config.receive_for), ("layout-for", config.layout_for)):
        outside = [name for name in chosen if name not in config.implementations]
        if outside:
            raise NOT_OF_THE_SWEEP.error(label=label, names=", ".join(outside))
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
        raise NO_LAYOUT_GIVEN.error()
    if set(config.layout) <= {implementations.STUDY_LAYOUT}:
        return
    for member in config.members.values():
        fixed = member.fixed_layout
        if fixed is not None and (not config.layout_for or member.name in config.layout_for):
            held = "not in its memory" if fixed == NO_LAYOUT else fixed
            raise LAYOUT_FIXED.error(name=member.name, held=held)


def _check_socket_buffer(config: SweepConfig) -> None:
    if config.socket_buffer is not None and 0 < config.socket_buffer < SMALLEST_SOCKET_BUFFER:
        raise SOCKET_BUFFER_TOO_SMALL.error(asked=config.socket_buffer, smallest=SMALLEST_SOCKET_BUFFER)


def _check_load(config: SweepConfig) -> None:
    if config.load == "open" and not config.rates:
        raise OPEN_LOAD_NEEDS_RATES.error()
    if config.load == "closed" and config.rates:
        raise RATES_NEED_OPEN_LOAD.error()


def _check_design(config: SweepConfig) -> None:
    if config.target_ci is not None and config.design != "randomized":
        raise TARGET_CI_NEEDS_RANDOMIZED.error()
    if config.target_ci is not None and config.max_trials < ADAPTIVE_MIN_TRIALS:
        raise TOO_FEW_MAX_TRIALS.error(least=ADAPTIVE_MIN_TRIALS)
    if config.budget_s is not None:
        if config.design != "blocked":
            raise BUDGET_NEEDS_BLOCKED.error()
        if config.max_trials < config.trials:
            raise MAX_TRIALS_BELOW_FIRST_PASS.error(most=config.max_trials, trials=config.trials)


def _check_hosts(config: SweepConfig) -> None:
    hosts = {"server-host": config.server_host, "client-host": config.client_host}
    if not any(hosts.values()):
        for label, value in (("server-address", config.server_address), ("ssh-config", config.ssh_config)):
            if value:
                raise ONLY_FOR_TWO_HOSTS.error(label=label)
        if config.tune_remote:
            raise TUNE_REMOTE_ONE_HOST.error()
        return
    if config.sender_pages != "large":
        raise SENDER_PAGES_ONE_HOST.error(pages=config.sender_pages)
    for label, value in hosts.items():
        if not value:
            raise HOST_MISSING.error(label=label)
        if not HOST_PATTERN.fullmatch(value):
            raise BAD_HOST.error(label=label, value=value)
        port = HOST_PATTERN.fullmatch(value)["port"]  # type: ignore[index]
        if port is not None and not 1 <= int(port) <= 65535:
            raise BAD_HOST_PORT.error(label=label, port=port)
    if not config.server_address:
        raise SERVER_ADDRESS_MISSING.error()
    try:
        ipaddress.IPv4Address(config.server_address)
    except ValueError:
        raise BAD_SERVER_ADDRESS.error(address=config.server_address) from None
    if config.ssh_config is not None and not Path(config.ssh_config).is_file():
        raise SSH_CONFIG_UNREADABLE.error(path=config.ssh_config)


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
        raise TOO_MANY_CONNECTIONS.error(label=label, total=total, most=_bound(high))
    for member in config.members.values():
        name, limit = member.name, member.max_connections
        if limit is not None and most > limit:
            raise SELECT_LIMIT.error(label=label, name=name, limit=limit, total=total)


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
        raise TOO_FEW_DESCRIPTORS.error(most=most, needed=needed, hard=hard)


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
        raise NOT_ENOUGH_MEMORY.error(
            largest=largest,
            needed=needed >> 20,
            threads=max(config.threads),
            distinct=config.distinct_messages,
            available=available >> 20,
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
        raise UNKNOWN_CHOICE.error(label="profile", value=profile, choices=", ".join(declared))
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
            raise SWEEP_FILE_UNREADABLE.error(path=sweep_file, error=error) from None
    given.update({key: value for key, value in overrides.items() if value is not None})
    unknown = sorted(set(given) - set(settings.BY_NAME) - {"profile"})
    if unknown:
        raise UNKNOWN_SETTINGS_IN_FILE.error(names=", ".join(unknown))
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
