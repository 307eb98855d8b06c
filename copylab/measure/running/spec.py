"""What one trial is: its configuration, and the settings every trial of a sweep shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from copylab.declarations import settings
from copylab.errors import BrokenInvariant
from copylab.programs.perf import PerfSupport
from copylab.vocabulary.implementation import Implementation

if TYPE_CHECKING:
    from copylab.measure.running.kernel_copies import Accounting
    from copylab.measure.running.profiling import SweepSampler
    from copylab.testbeds.testbed import Testbed

PORT = 5201


@dataclass(frozen=True)
class TrialSpec:
    trial_id: str
    order_index: int
    implementation: Implementation  # the registry's entry, resolved when the sweep was checked
    workload: str
    size_bytes: int
    threads: int
    pinning: str
    repetition: int
    receive: str = "copy"
    connections: int = 0  # servers: connections the client keeps busy; copies: one per thread (0 = threads)
    block_position: int | None = None  # its place in its block (a blocked design; repetition is the block)
    layout: str = "fields"  # how the sender holds the message (copylab.vocabulary.values.LAYOUTS, or NO_LAYOUT)
    idle_connections: int = 0  # servers: connections the client opens besides and leaves silent
    offered_rate: int = 0  # servers, open load: requests per second sent on a schedule (0: closed loop)

    def __post_init__(self) -> None:
        if not self.connections:
            object.__setattr__(self, "connections", self.threads)


@dataclass(frozen=True)
class TrialSettings:
    sweep: str
    testbed: Testbed  # where the two ends run (copylab.testbeds.testbed)
    perf: PerfSupport
    duration_s: float
    warmup_s: float
    verify: bool = False
    sanitize: str | None = None
    port: int = PORT
    # Counts the kernel's copies in each window (copylab.measure.running.kernel_copies); None: not counted.
    kernel_copies: Accounting | None = None
    # Samples each trial's window with perf record (copylab.measure.running.profiling); None: not sampled.
    sampler: SweepSampler | None = None
    # The sweep's settings that reach its rows or its programs (copylab.declarations.settings: column, program); the
    # others take their defaults.
    values: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Unless the sweep chose them already: the settings whose default depends on where the trial runs.
        object.__setattr__(self, "values", {**self.values, **settings.chosen_on(self.values, self.testbed)})

    def value(self, name: str) -> Any:
        return self.values.get(name, settings.get(name).default)

    def columns(self) -> dict[str, Any]:
        """The trials.csv columns the sweep's settings fill in every row."""
        return {s.column.name: self.value(s.name) for s in settings.SETTINGS if s.column}

    def program_arguments(self, role: str) -> list[str]:
        """The options the settings give the programs that play ROLE (copylab.declarations.contract.SIDES)."""
        arguments: list[str] = []
        for s in settings.SETTINGS:
            wanted = s.program
            if wanted is None or role not in wanted.roles:
                continue
            value = self.value(s.name)
            if s.kind == "bool":
                arguments += [wanted.option] if value else []
            elif value is not None:
                arguments += [wanted.option, str(value)]
        return arguments

    @property
    def server_address(self) -> str:
        """Where the client reaches the server."""
        return self.testbed.server_address

    def server_program(self, name: str) -> str:
        return self.testbed.server.program(name, self.sanitize)

    def client_program(self, name: str) -> str:
        return self.testbed.client.program(name, self.sanitize)

    def message_file(self, size: int) -> str:
        """The server end's message file of SIZE-byte messages (file-sending servers)."""
        if not self.testbed.server.files:
            raise BrokenInvariant("file-sending servers need a running testbed (its message file directory)")
        return f"{self.testbed.server.files}/messages-{size}.bin"


# CPU lists of (server, client) for each pinning; None: no affinity.
CPUS: dict[str, tuple[str | None, str | None]] = {"none": (None, None), "same_cpu": ("0", "0"), "split_cpu": ("0", "1")}


def cpus_for(pinning: str) -> tuple[str | None, str | None]:
    """CPU lists for (server, client)."""
    return CPUS[pinning]
