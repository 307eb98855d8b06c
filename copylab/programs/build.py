"""Builds the C programs with make (plain, or instrumented by a sanitizer)."""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
from collections.abc import Iterator
from pathlib import Path

from copylab import error_catalogue
from copylab.paths import CSRC, build_dir, program

SANITIZERS = ("address", "undefined", "thread")
# The fixed work timed on a trial's CPUs before and after it (copylab.measure.running.host_speed).
SPEED_PROBE = "speed_probe"


@contextlib.contextmanager
def _exclusive(out: Path) -> Iterator[None]:
    """Holds OUT's build lock; one who may not write OUT cannot build into it either, and needs no lock."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        lock = open(out / ".lock", "a")  # noqa: SIM115 (held across the yield)
    except PermissionError:
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(sanitize: str | None = None, jobs: int = 2) -> Path:
    """Runs make in csrc/; returns the directory holding bin/."""
    if sanitize is not None and sanitize not in SANITIZERS:
        raise error_catalogue.SANITIZER_UNKNOWN.error(choices=", ".join(SANITIZERS), asked=sanitize)
    out = build_dir(sanitize)
    command = ["make", "-s", f"-j{jobs}", "-C", str(CSRC), f"OUT={out}"]
    if sanitize:
        command.append(f"SANITIZE={sanitize}")
    # Two builds into one directory at once (two sweeps, or the test suite's workers) would write the same
    # programs at the same time: the second waits for the first, then finds everything up to date.
    with _exclusive(out):
        result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise error_catalogue.C_BUILD_FAILED.error(reason=lines[-1] if lines else f"make exited {result.returncode}")
    return out


def require_programs(names: list[str], sanitize: str | None = None) -> None:
    """A one-line error naming the build command, before any namespace or row exists, when a program is missing."""
    missing = [name for name in names if not program(name, sanitize).exists()]
    if missing:
        command = "./inv build" + (f" --sanitize {sanitize}" if sanitize else "")
        raise error_catalogue.NOT_BUILT.error(path=program(missing[0], sanitize), command=command)
