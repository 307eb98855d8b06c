"""What copylab measured about itself, in one place: docs/measured.json, and docs/measured.md generated from it.

Each figure is written by the run that measured it (`./inv report`, `./inv test`, `./inv calibrate`, `./inv bench`)
when that run is asked to record (the environment variable COPYLAB_RECORD=1): a user's run on another machine
measures other numbers and leaves the project's record alone. A figure keeps its date, host and commit. The prose
of README.md and docs/ cites a figure as a Markdown link to measured.md whose title is the figure's key,
`[5.5 minutes](docs/measured.md "report_s")`, and a test compares the number quoted with the one recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from copylab.paths import ROOT

RECORD = ROOT / "docs" / "measured.json"
PAGE = ROOT / "docs" / "measured.md"
RECORDING = "COPYLAB_RECORD"  # set to 1: the runs write their figures into RECORD


@dataclass(frozen=True)
class Figure:
    value: float | int | str
    unit: str  # "s", "MiB", "" (a count), or "" for a figure whose value says its own unit
    what: str
    by: str  # the command whose run measured it
    when: str  # ISO date and time, UTC
    host: str
    commit: str
    goal: str = ""  # the goal it is held to, when it has one
    met: bool | None = None  # whether it met that goal


def recording() -> bool:
    return os.environ.get(RECORDING) == "1"


def load(path: Path = RECORD) -> dict[str, Figure]:
    if not path.is_file():
        return {}
    return {key: Figure(**fields) for key, fields in json.loads(path.read_text(encoding="utf-8")).items()}


def this_host() -> str:
    """The CPU model and how many CPUs this process may use, and the kernel: what a reader needs to weigh a time."""
    model = "unknown CPU"
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        model = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} CPUs, kernel {os.uname().release}"


def this_commit() -> str:
    """The commit measured, marked -dirty when the checkout has changes (a figure of uncommitted code)."""
    result = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"], capture_output=True, text=True
    )
    return result.stdout.strip() or "unknown"


# The commit a run measures: taken when it starts (copylab.cli.measuring), since the checkout may change under it.
STARTED_AT: dict[str, str] = {}


def figure(value: float | int | str, unit: str, what: str, by: str, **goal: Any) -> Figure:
    """A figure measured now, on this host, at the commit the run started from."""
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    commit = STARTED_AT.get("commit") or this_commit()
    return Figure(value, unit, what, by, when, this_host(), commit, **goal)


def record(figures: Mapping[str, Figure], path: Path = RECORD, page_path: Path = PAGE) -> None:
    """Writes FIGURES over those of the same keys, and the page from the whole record; nothing unless recording."""
    if not recording():
        return
    merged = {**load(path), **figures}
    path.write_text(json.dumps({key: asdict(f) for key, f in sorted(merged.items())}, indent=1) + "\n")
    page_path.write_text(page(merged))
    print(f"copylab: recorded {len(figures)} figures in {path}", file=sys.stderr)


def shown(figure: Figure) -> str:
    value = f"{figure.value:g}" if isinstance(figure.value, float) else str(figure.value)
    return f"{value} {figure.unit}".strip()


def _result(figure: Figure) -> str:
    return "-" if figure.met is None else ("met" if figure.met else "**missed**")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def page(figures: Mapping[str, Figure]) -> str:
    """docs/measured.md: a table per command that measured, newest run first."""
    lines = [
        "# What copylab measured about itself",
        "",
        "<!-- Generated from docs/measured.json by the runs that measured each figure (copylab/measured.py): run",
        "them with COPYLAB_RECORD=1 to record; do not edit by hand. -->",
        "",
        "Each figure was written by the run named above its table, run with `COPYLAB_RECORD=1` (for example",
        "`COPYLAB_RECORD=1 ./inv report`), with its date (UTC), the host and the commit (`-dirty`: with changes not",
        "committed). Other hosts measure other numbers. A goal missed is marked **missed**. The rest of the",
        "documentation quotes these figures as links to this page, and `tests/test_measured.py` fails when a",
        "quoted number differs from the one here. [performance.md](performance.md) explains what the bench",
        "measures and what past runs found.",
    ]
    by_command: dict[str, list[tuple[str, Figure]]] = {}
    for key, entry in sorted(figures.items(), key=lambda item: item[1].when, reverse=True):
        by_command.setdefault(entry.by, []).append((key, entry))
    for command, entries in by_command.items():
        lines += ["", f"## `{command}`", "", "| figure (its key) | value | goal | result | when | host | commit |"]
        lines.append("|---|---|---|---|---|---|---|")
        for key, entry in entries:
            named = entry.what if key == entry.what else f"{entry.what} (`{key}`)"
            cells = [named, shown(entry), entry.goal or "-", _result(entry), entry.when]
            lines.append("| " + " | ".join(_cell(cell) for cell in [*cells, entry.host, entry.commit]) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page(load()))
