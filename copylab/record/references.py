"""The committed reference sweeps and the command that measures each: a profile `./inv report` runs, by name,
with more blocks (and, for the servers under open load, the options that make the load open).

A reference compares like with like with a sweep of today's profile of the same name only while its grid and
method are that profile's: `departures` says where they are not (tests/test_references.py fails on any), and
docs/sweeps.md's table of commands is generated here (`python -m copylab.record.references`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copylab.declarations import settings
from copylab.declarations.config import make_config
from copylab.declarations.sweep_config import SweepConfig
from copylab.paths import DATA, shown
from copylab.record.grids import Difference, differences
from copylab.record.store import SweepStore

BLOCKS = 5  # a reference's blocks: with the profiles' 3, a third of quick's stream configurations stayed unstable


@dataclass(frozen=True)
class Reference:
    directory: Path
    experiment: str
    profile: str
    options: dict[str, Any] = field(default_factory=dict)  # settings beyond the profile, by name
    after: str = ""  # a command run on the sweep once it is measured

    def config(self) -> SweepConfig:
        """The parameters the command measures with today."""
        return make_config(self.directory.name, self.profile, experiment=self.experiment, **self.options)

    def command(self) -> str:
        words = ["./inv run-sweep", f"--name {self.directory.name}"]
        words += [f"--experiment {self.experiment}"] if self.experiment != "copies" else []
        words += [f"--profile {self.profile}"]
        for name, value in self.options.items():
            option = settings.get(name).option
            shown_value = ",".join(map(str, value)) if isinstance(value, list | tuple) else value
            words.append(f"--{option} {shown_value}")
        words.append("--no-analyze")
        return " ".join(words)


REFERENCE_SWEEPS = (
    Reference(DATA / "reference", "copies", "quick", {"trials": BLOCKS}),
    Reference(DATA / "reference-sink", "copies", "sink", {"trials": BLOCKS}),
    Reference(DATA / "reference-mmap", "copies", "mmap", {"trials": BLOCKS}),
    Reference(DATA / "reference-mmap-small", "copies", "mmap-small", {"trials": BLOCKS}),
    Reference(DATA / "reference-caches", "copies", "caches", {"trials": BLOCKS}),
    Reference(
        DATA / "reference-threads",
        "copies",
        "threads",
        {"trials": BLOCKS},
        after="./inv calibrate --data data/reference-threads",
    ),
    Reference(DATA / "reference-servers", "servers", "quick", {"trials": BLOCKS}),
    Reference(
        DATA / "reference-open-load",
        "servers",
        "quick",
        {
            "implementations": ["thread", "select", "poll", "epoll", "uring"],
            "connections": [100],
            "load": "open",
            "rates": [5000, 10000, 20000, 30000, 40000, 50000],
            "trials": 4,
            "duration_s": 0.5,
            "warmup_s": 0.2,
        },
    ),
)


def departures(reference: Reference) -> list[Difference]:
    """Where the committed sweep's grid and method depart from what its command measures today.  A setting the
    testbed chooses when the profile leaves it open (the socket buffer) is compared only when the profile sets it."""
    measured = SweepStore(reference.directory).read_manifest().parameters
    today = reference.config()
    return [
        difference
        for difference in differences(measured, today)
        if not (difference.b is None and settings.get(difference.setting).chosen_on is not None)
    ]


def commands_table() -> str:
    """docs/sweeps.md's table: each reference and the command that measures it."""
    rows = [
        f"| `{shown(reference.directory)}/` | `{reference.command()}`"
        + (f", then `{reference.after}`" if reference.after else "")
        + " |"
        for reference in REFERENCE_SWEEPS
    ]
    return "\n".join(["| directory | command |", "|---|---|", *rows]) + "\n"


if __name__ == "__main__":
    sys.stdout.write(commands_table())
