"""The two-copy sender's packing copy under a cache simulator: valgrind's cachegrind (`--cache-sim=yes`) runs
csrc/pack_copy.c, the packing copy alone, with the first-level data cache and the last-level cache of the host the
sweep calibrated on, and counts the misses of that copy per KiB it copies.

A stand-in where the host cannot count misses (a VM without a PMU): it simulates only user space, so the kernel's
copies into socket buffers and out of them are not in it, and cachegrind models two levels, the first and the last,
never an L2.  A simulation, not a measurement: the same program and cache sizes give the same counts anywhere, so
a report rendered again from the same sweep says the same.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass

from copylab.calibration.record import CacheLevel
from copylab.paths import program

PROGRAM = "pack_copy"
LINE_BYTES = 64
# Two runs that differ by two rounds of the copy: their difference is two steady-state rounds, without the setup.
ROUNDS = (1, 3)
# cachegrind needs a power-of-two number of sets; at least this many ways keeps a level from being direct-mapped.
MIN_WAYS = 8
_MISSES = {"D1": re.compile(r"D1\s+misses:\s+([\d,]+)"), "LL": re.compile(r"LLd\s+misses:\s+([\d,]+)")}


@dataclass(frozen=True)
class Simulated:
    """The packing copy's simulated misses per KiB copied, at one message size."""

    message_bytes: int
    first_per_kib: float  # misses of the first-level data cache
    last_per_kib: float  # misses of the last-level cache (each one goes to memory)


def geometry(size_bytes: int) -> str:
    """cachegrind's SIZE,WAYS,LINE for a cache of SIZE_BYTES: as many sets as a power of two allows, with at least
    MIN_WAYS ways."""
    lines = size_bytes // LINE_BYTES
    sets = lines & -lines  # the largest power of two that divides the lines
    while sets > 1 and lines // sets < MIN_WAYS:
        sets //= 2
    return f"{sets * (lines // sets) * LINE_BYTES},{lines // sets},{LINE_BYTES}"


def _misses(size: int, rounds: int, first: CacheLevel, last: CacheLevel) -> dict[str, int]:
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--cachegrind-out-file=/dev/null",
        f"--D1={geometry(first.size_bytes)}",
        f"--LL={geometry(last.size_bytes)}",
        str(program(PROGRAM)),
        str(size),
        str(rounds),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    found = {level: pattern.search(done.stderr) for level, pattern in _MISSES.items()}
    if done.returncode != 0 or not all(found.values()):
        lines = done.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"valgrind exited {done.returncode}")
    return {level: int(match.group(1).replace(",", "")) for level, match in found.items() if match}


def unavailable() -> str | None:
    """Why the simulation cannot run on this machine, in words; None when it can."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (./inv installs it as root)"
    if not program(PROGRAM).exists():
        return f"{PROGRAM} is not built (./inv build)"
    return None


@functools.lru_cache(maxsize=8)
def simulate(sizes: tuple[int, ...], first: CacheLevel, last: CacheLevel) -> list[Simulated] | str:
    """The packing copy's simulated misses at each message size of SIZES with the caches FIRST and LAST; or why it
    could not be simulated, in words."""
    why = unavailable()
    if why:
        return why
    found = []
    for size in sizes:
        try:
            low, high = (_misses(size, rounds, first, last) for rounds in ROUNDS)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
            return f"cachegrind failed at {size} bytes ({error})"
        kib = (ROUNDS[1] - ROUNDS[0]) * size / 1024
        found.append(Simulated(size, (high["D1"] - low["D1"]) / kib, (high["LL"] - low["LL"]) / kib))
    return found
