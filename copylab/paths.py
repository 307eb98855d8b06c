"""Where copylab keeps its programs, data and outputs, relative to the project root."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
DATA = ROOT / "data"
FIGURES = ROOT / "figures"
REPORT = ROOT / "report"
NOTEBOOKS = ROOT / "notebooks"
REFERENCE_DATA = DATA / "reference"  # the copies experiment's committed sweep
REFERENCE_SERVERS_DATA = DATA / "reference-servers"  # the servers experiment's
REFERENCE_OPEN_LOAD_DATA = DATA / "reference-open-load"  # the servers experiment's under open load
REFERENCE_SINK_DATA = DATA / "reference-sink"  # the copies experiment's sink profile
REFERENCE_MMAP_DATA = DATA / "reference-mmap"  # the copies experiment's mmap profile (the receiver's side)
REFERENCE_MMAP_SMALL_DATA = DATA / "reference-mmap-small"  # its mmap-small profile (small sender pages)
REFERENCE_CACHES_DATA = DATA / "reference-caches"  # its caches profile (question 2's grid)
REFERENCE_THREADS_DATA = DATA / "reference-threads"  # its threads profile (question 3's experiment)
REFERENCES = (
    REFERENCE_DATA,
    REFERENCE_SINK_DATA,
    REFERENCE_MMAP_DATA,
    REFERENCE_MMAP_SMALL_DATA,
    REFERENCE_CACHES_DATA,
    REFERENCE_THREADS_DATA,
    REFERENCE_SERVERS_DATA,
    REFERENCE_OPEN_LOAD_DATA,
)


def build_dir(sanitize: str | None = None) -> Path:
    """The build output of the plain programs, or of one sanitizer's instrumented copies."""
    return ROOT / "build" if sanitize is None else ROOT / "build" / f"sanitize-{sanitize}"


def program(name: str, sanitize: str | None = None) -> Path:
    return build_dir(sanitize) / "bin" / name


def shown(path: Path) -> str:
    """PATH as a command run from the project root names it: relative to the root when it lies below it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
