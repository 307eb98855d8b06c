"""Provenance of a sweep as a typed record: host, toolchain, code version, settings, and a checksum of the data.
copylab.measure.host.provenance probes this host for it.

Manifest.from_dict accepts every manifest copylab has written (settings a manifest predates keep their
defaults) and rejects anything else with one line naming the key; copylab.record.store reads and writes the file.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from copylab.calibration.record import Calibration
from copylab.declarations.config import from_parameters
from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import (
    MANIFEST_KEY_MISSING,
    MANIFEST_KEY_NOT_AN_OBJECT,
    MANIFEST_NO_PARAMETERS,
    MANIFEST_NOT_A_LIST,
    MANIFEST_NOT_AN_OBJECT,
    MANIFEST_UNKNOWN_KEY,
    MANIFEST_WRONG_TYPE,
)


@dataclass(frozen=True)
class Host:
    hostname: str  # the machine's name
    kernel: str  # uname -r
    cpu_model: str  # /proc/cpuinfo's model name
    cores: int  # CPUs online
    memory_gib: float  # memory in GiB
    virtualization: str  # what systemd-detect-virt says, or whether /proc/cpuinfo names a hypervisor
    # The TCP congestion control its connections get unless they choose one (net.ipv4.tcp_congestion_control);
    # None: not recorded (manifests from before it was)
    congestion_default: str | None = None


@dataclass(frozen=True)
class Link:
    """The interface that carries an end's trial traffic."""

    interface: str  # its name
    driver: str | None  # ethtool -i's driver, None where ethtool is missing
    mtu: int | None  # its MTU
    offloads: dict[str, str] = field(default_factory=dict)  # ethtool -k: feature -> on/off (fixed), where present


@dataclass(frozen=True)
class EndRecord:
    """One end of a sweep run between two hosts: where it ran and what carried its traffic."""

    role: str  # server or client
    target: str  # the SSH destination, USER@HOST[:PORT]
    host: Host  # the end's machine, as host.* above
    link: Link | None  # the interface that carried its traffic
    # Settings changed on the host for the sweep (--tune-remote) and restored after: name -> value used.
    tuned: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Toolchain:
    python: str
    packages: dict[str, str | None]
    # Program -> the first line of its version output (None: not installed): gcc, perf, wrapped tools.
    programs: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Git:
    commit: str  # the checkout's HEAD when the sweep started
    dirty: bool  # whether tracked files had uncommitted changes


@dataclass(frozen=True)
class PerfRecord:
    available: bool  # whether perf stat could count in this sweep
    supported_events: list[str]  # the events it counted
    unsupported_events: dict[str, str]  # event -> perf's reason


@dataclass(frozen=True)
class SamplerRecord:
    """The sampled profile of the trials' windows (copylab.programs.sampler)."""

    sampled: bool  # whether the trials' windows were sampled
    command: str  # the sampler as it ran (perf record, its event, rate and call chains), or why it did not run
    rate_hz: int  # samples per second per CPU
    event: str  # perf's event


@dataclass(frozen=True)
class Harness:
    """What the sweep cost beyond its measured windows."""

    median_overhead_s: float  # median seconds a trial spent outside its warm-up and window
    wall_s: float  # the sweep's wall time
    window_s: float  # the sum of its trials' warm-ups and windows
    trials_run: int  # trials run (a resumed sweep: this run's)


@dataclass(frozen=True)
class InFlight:
    """The zero-copy senders' bytes in flight as the sweep chose them from the path (copylab.measure.host.in_flight)."""

    zc_inflight: int  # bytes in flight chosen
    throughput_gbps: float | None  # the measuring trial's; None when it failed
    srtt_us: float | None  # the measuring trial's smoothed round trip (TCP_INFO), µs
    bandwidth_delay_bytes: int | None  # throughput times round trip, bytes
    how: str  # how it was chosen, in words


@dataclass(frozen=True)
class FirstPass:
    """How ./inv report sized the first pass of its sweeps whose verdicts the answers quote, from a pilot on this host
    (copylab.study.sizing)."""

    pilot: str  # the sweep whose first blocks the pilot ran (under data/)
    pilot_trials: int  # the pilot's trials, which the first pass did not run again
    spread: float  # the pilot's per-block spread (standard deviation) of the deciding comparisons' log ratios
    degrees: int  # that spread's degrees of freedom
    trial_s: float  # a trial's wall time in the pilot (median): its warm-up, window and the harness around them
    start_up_s: float  # what a sweep took besides its trials in the pilot (testbed, bpftrace)
    needed_blocks: int  # the blocks that spread asks for
    affordable_blocks: int  # the most blocks that keep every first pass within its share of the budget
    blocks: int  # the blocks the first pass ran
    share_s: float  # the first pass's share of the budget (half of it)
    planned_s: float  # what the first pass was expected to take, the verified pass and the pilot included
    fixed_s: float  # what the other sweeps' first passes (fixed designs) were expected to take, from the rest
    # the most blocks of the other sweeps' first passes: empty where the budget afforded their profiles' blocks
    fixed_blocks: int | None = None
    took_s: float | None = None  # what the first pass took, the verified pass and the pilot included


@dataclass(frozen=True)
class Manifest:
    sweep: str  # the sweep's name (its directory under data/)
    profile: str  # the profile it started from, one of its experiment's (run-sweep --profile lists them), or custom
    host: Host  # the machine that ran it (host.* below)
    toolchain: Toolchain  # Python, its packages and the programs' versions, flattened into this object
    git: Git  # the code's version (git.* below)
    parameters: SweepConfig  # every setting by name (run-sweep's options)
    perf: PerfRecord  # what perf stat could count (perf.* below)
    started_at: str | None = None  # ISO 8601, UTC
    ended_at: str | None = None  # ISO 8601, UTC; empty while it runs or when interrupted
    complete: bool = False  # whether every planned trial ran
    trials_sha256: str | None = None  # trials.csv's checksum when the sweep ended
    calibration: Calibration | None = None  # memcpy bandwidth and copy costs measured at the start
    harness: Harness | None = None  # what the sweep cost beyond its windows (harness.* below)
    # The trials.csv schema it was written with (copylab.declarations.schema.SCHEMA_VERSION); manifests before it: 1.
    schema_version: int = 1
    # Implementations of the sweep that could not run on this host, with the reason; their trials were not run.
    unavailable: dict[str, str] = field(default_factory=dict)
    # What carried the trials: "veth" (two namespaces of the host above) or "network" (the two hosts of ends).
    path: str = "veth"
    ends: list[EndRecord] = field(default_factory=list)  # between two hosts: each end (ends[].* below)
    # root, or user-namespace (an unprivileged user: copylab made the namespaces inside a user namespace)
    privilege: str = "root"
    # What the testbed could not do as asked (a setting, a kind of measurement), with the reason.
    restrictions: dict[str, str] = field(default_factory=dict)
    # The host's floor (copylab.measure.host.floor): pinning -> mean round trip in µs of a minimal ping-pong at one
    # connection.
    host_floor: dict[str, float] = field(default_factory=dict)
    # Without --zc-inflight, for a sweep with a zero-copy sender: what it was set to from the path, and why.
    in_flight: InFlight | None = None
    # Written by ./inv report into its first sweep's manifest: the sweeps it measured together (directory names, this
    # one first), which `./inv report --more` goes on measuring.
    report_sweeps: list[str] = field(default_factory=list)
    # Written beside report_sweeps: the reported profiles that could not run here (profile -> why; without root,
    # those that change a setting of the whole host).
    not_measured: dict[str, str] = field(default_factory=dict)
    # Written by ./inv report into its first sweep's manifest: what its verified pass checked before it measured
    # ("implementation receive-mode", every byte as sent).
    verified: list[str] = field(default_factory=list)
    # Written beside verified: the sweeps that ran the verified pass, under data/.
    verified_in: list[str] = field(default_factory=list)
    # Written by ./inv report into its first sweep's manifest: how its first pass was sized from this host
    # (first_pass.* below).
    first_pass: FirstPass | None = None
    # Which sampler profiled the trials' windows and at what rate; None: a sweep from before the sampler.
    sampler: SamplerRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        record["parameters"] = self.parameters.parameters()
        record["toolchain"] = {
            **self.toolchain.programs,
            "python": self.toolchain.python,
            "packages": self.toolchain.packages,
        }
        return record

    @classmethod
    def from_dict(cls, record: Any) -> Manifest:
        """A manifest from its JSON; CopylabError naming the first missing, unknown or mistyped key."""
        if not isinstance(record, dict):
            raise MANIFEST_NOT_AN_OBJECT.error()
        record = dict(record)
        toolchain = record.get("toolchain")
        if isinstance(toolchain, dict):
            programs = {k: v for k, v in toolchain.items() if k not in ("python", "packages")}
            record["toolchain"] = {
                "python": toolchain.get("python"),
                "packages": toolchain.get("packages"),
                "programs": programs,
            }
        parameters = record.get("parameters")
        if not isinstance(parameters, dict):
            raise MANIFEST_NO_PARAMETERS.error()
        record["parameters"] = from_parameters(str(record.get("sweep")), str(record.get("profile")), parameters)
        manifest: Manifest = _build(cls, record, "")
        return manifest


def _build(cls: type, record: Any, where: str) -> Any:
    """An instance of dataclass CLS from RECORD, every field checked against its annotation."""
    if not isinstance(record, dict):
        raise MANIFEST_KEY_NOT_AN_OBJECT.error(key=where.rstrip("."))
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(record) - set(known))
    if unknown:
        raise MANIFEST_UNKNOWN_KEY.error(key=f"{where}{unknown[0]}")
    values = {}
    for name, spec in known.items():
        if name not in record:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise MANIFEST_KEY_MISSING.error(key=f"{where}{name}")
            continue
        values[name] = _value(hints[name], record[name], f"{where}{name}")
    return cls(**values)


def _value(hint: Any, value: Any, where: str) -> Any:
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        return _value(next(a for a in arguments if a is not type(None)), value, where)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return value if isinstance(value, hint) else _build(hint, value, f"{where}.")
    if origin is list and arguments and dataclasses.is_dataclass(arguments[0]):
        if not isinstance(value, list):
            raise MANIFEST_NOT_A_LIST.error(key=where, kind=type(value).__name__, value=value)
        return [_value(arguments[0], item, f"{where}[{index}]") for index, item in enumerate(value)]
    expected = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}.get(hint) or (origin or hint,)
    if (isinstance(value, bool) and hint is not bool) or not isinstance(value, expected):
        raise MANIFEST_WRONG_TYPE.error(
            key=where, kind=type(value).__name__, value=value, expected=getattr(hint, "__name__", hint)
        )
    return value
