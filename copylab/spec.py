"""What one trial is: its configuration, and the settings every trial of a sweep shares."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from copylab.netns import NamespacePair
from copylab.perf import PerfSupport

PORT = 5201


@dataclass(frozen=True)
class TrialSpec:
    trial_id: str
    order_index: int
    implementation: str
    workload: str
    size_bytes: int
    threads: int
    pinning: str
    repetition: int
    receive: str = "copy"
    connections: int = 0  # servers: connections the client keeps busy; copies: one per thread (0 = threads)

    def __post_init__(self) -> None:
        if not self.connections:
            object.__setattr__(self, "connections", self.threads)


@dataclass(frozen=True)
class TrialSettings:
    sweep: str
    pair: NamespacePair
    perf: PerfSupport
    duration_s: float
    warmup_s: float
    verify: bool = False
    sanitize: str | None = None
    port: int = PORT
    # Where file-sending servers keep their message files (a tmpfs directory of the sweep's own).
    files: Path | None = None


# CPU lists of (server, client) for each pinning; None: no affinity.
CPUS: dict[str, tuple[str | None, str | None]] = {"none": (None, None), "same_cpu": ("0", "0"), "split_cpu": ("0", "1")}


def cpus_for(pinning: str) -> tuple[str | None, str | None]:
    """CPU lists for (server, client)."""
    return CPUS[pinning]
