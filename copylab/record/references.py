"""The committed reference sweeps and the command that measures each: the profile its manifest names, one of those
`./inv report` runs, with more blocks (and, for the servers under open load, the options that make the load open).

A reference compares like with like with a sweep of today's profile of the same name only while its grid and
method are that profile's: `departures` says where they are not (tests/test_references.py fails on any), and
docs/sweeps.md's table of commands is generated here (`python -m copylab.record.references`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copylab import experiments
from copylab.declarations import settings
from copylab.declarations.config import make_config
from copylab.declarations.sweep_config import SweepConfig
from copylab.paths import DATA, shown
from copylab.record.grids import Difference, differences
from copylab.record.manifest import Manifest
from copylab.record.store import SweepStore


@dataclass(frozen=True)
class Reference:
    """A committed sweep, measured by `./inv run-sweep` with the profile its manifest names (of the experiment it
    names) and the settings GIVEN on the command line besides, at the values its manifest records."""

    directory: Path
    # settings named on the command line, beyond the profile's: every reference counted the kernel's copies, which the
    # profiles but counts no longer do
    given: tuple[str, ...] = ("trials", "kernel_copies")
    after: str = ""  # a command run on the sweep once it is measured

    def _manifest(self) -> Manifest:
        return SweepStore(self.directory).read_manifest()

    def options(self) -> dict[str, Any]:
        parameters = self._manifest().parameters
        return {name: getattr(parameters, name) for name in self.given}

    def config(self) -> SweepConfig:
        """The parameters its command measures with today."""
        manifest = self._manifest()
        experiment = manifest.parameters.experiment
        return make_config(self.directory.name, manifest.profile, experiment=experiment, **self.options())

    def command(self) -> str:
        manifest = self._manifest()
        experiment = manifest.parameters.experiment
        words = ["./inv run-sweep", f"--name {self.directory.name}"]
        words += [f"--experiment {experiment}"] if experiment != experiments.DEFAULT.name else []
        words += [f"--profile {manifest.profile}"]
        words += [
            word for name, value in self.options().items() if (word := settings.option_word(settings.get(name), value))
        ]
        return " ".join([*words, "--no-analyze"])


OPEN_LOAD = ("implementations", "connections", "load", "rates", "trials", "duration_s", "warmup_s", "kernel_copies")
REFERENCE_SWEEPS = (
    Reference(DATA / "reference"),
    Reference(DATA / "reference-sink"),
    Reference(DATA / "reference-mmap"),
    Reference(DATA / "reference-mmap-small"),
    Reference(DATA / "reference-caches"),
    Reference(DATA / "reference-threads", after="./inv calibrate --data data/reference-threads"),
    Reference(DATA / "reference-servers"),
    Reference(DATA / "reference-open-load", given=OPEN_LOAD),
)


def departures(reference: Reference) -> list[Difference]:
    """Where the committed sweep's grid and method depart from what its command measures today.  A setting the
    testbed chooses when the profile leaves it open (the socket buffer) is compared only when the profile sets it."""
    measured = reference._manifest().parameters
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
