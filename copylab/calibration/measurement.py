"""Measuring what a copy costs on one CPU of an end: memcpy bandwidth (the copy-bound ceiling) and the copy cost
by working set, path and placement, turned into a record by copylab.calibration.record.

Every measurement runs through a Runner, so the same code measures this machine, a namespace or a remote host: a
sweep's server end when the sweep starts (on_sending_cpu), this machine for ./inv calibrate and the bench.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from copylab.calibration.record import MEMCPY, VECTOR, CacheLevel, Calibration, CopyPoint, derive
from copylab.error_catalogue import CALIBRATION_FAILED
from copylab.paths import program
from copylab.programs.build import require_programs
from copylab.programs.perf import Runner, run_here

CACHE_SIZES = "/sys/devices/system/cpu/cpu0/cache"
# The calibration's programs: the single-core copy bandwidth and the copy cost per byte by working set.
CALIBRATION_PROGRAMS = ["memcpy_bandwidth", "copy_cost"]
# glibc's memcpy without its string-instruction path: the rep-movsb threshold above every copy measured.
WITHOUT_REP_MOVSB = "GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4611686018427387904"
# Working sets measured per cache level, as fractions of its size (inside it, beyond the level below).
_INSIDE = (0.25, 0.5)
_BEYOND_LLC = (2, 4)
_MAX_WORKING_SET = 1 << 30
# Copy sizes probed for findings whatever the hierarchy: the sizes the senders copy (8 fields of a message,
# a file chunk), where libraries switch between copy strategies.
_PROBED_COPIES = tuple(1 << k for k in range(10, 21, 2))
ROUNDS = 3  # separate processes, each of PASSES interleaved passes
PASSES = 2
COPY_FLAGS = ("erms", "fsrm")


def _size(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)] if match else None


def cache_levels(run: Runner = run_here) -> list[CacheLevel]:
    """CPU 0's data and unified caches from sysfs on the machine RUN runs on, smallest first."""
    listed = run(
        [
            "sh",
            "-c",
            f"for d in {CACHE_SIZES}/index*; do echo $(cat $d/level $d/type $d/size $d/shared_cpu_list); done "
            "2>/dev/null || true",
        ]
    )
    levels = []
    for line in listed.stdout.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[1] == "Instruction" or not parts[0].isdigit():
            continue
        size = _size(parts[2])
        if size:
            levels.append(CacheLevel(f"L{parts[0]}{'d' if parts[1] == 'Data' else ''}", size, parts[3]))
    return sorted(levels, key=lambda level: level.size_bytes)


def working_sets(levels: list[CacheLevel]) -> list[int]:
    """Working sets to measure: inside each level but beyond the one below, well beyond the last, and twice
    every probed copy size."""
    points = set()
    below = 0
    for level in levels:
        for fraction in _INSIDE:
            size = int(level.size_bytes * fraction)
            if size > below:
                points.add(size)
        below = level.size_bytes
    largest = levels[-1].size_bytes if levels else 64 << 20
    points |= {min(_MAX_WORKING_SET, largest * factor) for factor in _BEYOND_LLC}
    points |= {2 * size for size in _PROBED_COPIES}
    return sorted(points)


def measure_memcpy(
    runs: int = 7, cpu: str | None = "0", run: Runner = run_here, program_path: str | None = None
) -> dict[str, Any]:
    """Best of several copies of a buffer at least 4x the last-level cache, on one CPU of the machine RUN runs
    on (this one by default, with this machine's build)."""
    if program_path is None:
        require_programs(["memcpy_bandwidth"])
        program_path = str(program("memcpy_bandwidth"))
    levels = cache_levels(run)
    llc = levels[-1].size_bytes if levels else None
    mib = max(128, 4 * (llc or 0) >> 20)
    result = run(_pinned(cpu, [program_path, str(mib), str(runs)]))
    if result.returncode != 0:
        raise CALIBRATION_FAILED.error(what="memcpy", reason=result.stderr.strip() or result.returncode)
    measured: dict[str, Any] = json.loads(result.stdout)
    measured["llc_bytes"] = llc
    measured["cpu"] = cpu
    return measured


def _pinned(cpu: str | None, command: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *command] if cpu is not None else command


def measure_copy_points(
    sizes: list[int],
    cpu: str | None = "0",
    run: Runner = run_here,
    program_path: str | None = None,
    rounds: int = ROUNDS,
    passes: int = PASSES,
) -> list[CopyPoint]:
    """Every working set of SIZES along every path and placement, ROUNDS times alternating between memcpy as
    linked (and the kernel's read) and glibc's memcpy without rep movsb, each a process of PASSES passes."""
    if program_path is None:
        require_programs(["copy_cost"])
        program_path = str(program("copy_cost"))
    samples: dict[tuple[int, str, int], tuple[list[list[float]], list[list[float]]]] = {}
    for _ in range(rounds):
        for environment, arguments in (([], []), (["env", WITHOUT_REP_MOVSB], ["--memcpy-only"])):
            command = [*environment, *_pinned(cpu, [program_path, *arguments, str(passes), *map(str, sizes)])]
            result = run(command)
            if result.returncode != 0:
                raise CALIBRATION_FAILED.error(what="copy cost", reason=result.stderr.strip() or result.returncode)
            for point in json.loads(result.stdout)["points"]:
                path = VECTOR if environment and point["path"] == MEMCPY else point["path"]
                key = (int(point["working_set_bytes"]), path, int(point["offset"]))
                values, shares = samples.setdefault(key, ([], []))
                values.append([float(v) for v in point["ns_per_byte"]])
                shares.append([float(v) for v in point["on_cpu"]])
    return [CopyPoint(size, path, offset, values, shares) for (size, path, offset), (values, shares) in samples.items()]


def cpu_flags(run: Runner = run_here) -> list[str]:
    """The copy-related flags the CPU reports (/proc/cpuinfo) on the machine RUN runs on."""
    listed = run(["sh", "-c", "grep -m1 '^flags' /proc/cpuinfo || true"]).stdout.split()
    return [flag for flag in COPY_FLAGS if flag in listed]


def calibration(cpu: str | None = "0", run: Runner = run_here, programs: dict[str, str] | None = None) -> Calibration:
    """memcpy bandwidth and copy cost by working set, path and placement on one CPU of the machine RUN runs on;
    PROGRAMS: where the calibration programs are there (default: this machine's build)."""
    where = programs or {}
    memcpy = measure_memcpy(cpu=cpu, run=run, program_path=where.get("memcpy_bandwidth"))
    levels = cache_levels(run)
    points = measure_copy_points(working_sets(levels), cpu, run, where.get("copy_cost"))
    return derive(
        memcpy["buffer_mib"],
        memcpy["runs"],
        memcpy["memcpy_gbps"],
        memcpy["llc_bytes"],
        cpu,
        levels,
        points,
        cpu_flags(run),
    )


def on_sending_cpu(pinning: Sequence[str], run: Runner, program: Callable[[str], str]) -> Calibration:
    """The calibration on a sweep's sending CPU, CPU 0 (on any CPU when one of the sweep's PINNING leaves the ends
    unpinned): the copy-bound ceiling of its report.  RUN and PROGRAM: the server end's, where the sender runs."""
    cpu = "0" if "none" not in pinning else None
    return calibration(cpu=cpu, run=run, programs={name: program(name) for name in CALIBRATION_PROGRAMS})
