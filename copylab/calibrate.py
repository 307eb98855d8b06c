"""The copy-bound ceiling: single-core memory copy bandwidth, and what it allows each variant.

Every byte a variant moves is copied a fixed number of times on this host; with
both ends on one CPU, that core does all of them, so no variant can exceed
memcpy bandwidth divided by its copies per byte.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import implementations
from copylab.build import require_programs
from copylab.errors import CopylabError
from copylab.manifest import CacheLevel, Calibration, CopyCost
from copylab.paths import program
from copylab.perf import Runner, run_here

CACHE_SIZES = Path("/sys/devices/system/cpu/cpu0/cache")


def last_level_cache_bytes(run: Runner = run_here) -> int | None:
    """The largest cache of CPU 0 (sysfs) on the machine RUN runs on; None where sysfs does not say."""
    listed = run(["sh", "-c", f"cat {CACHE_SIZES}/index*/size 2>/dev/null || true"])
    sizes = []
    for line in listed.stdout.split():
        match = re.fullmatch(r"(\d+)([KMG]?)", line.strip())
        if match:
            sizes.append(int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)])
    return max(sizes) if sizes else None


def measure_memcpy(
    runs: int = 7, cpu: str | None = "0", run: Runner = run_here, program_path: str | None = None
) -> dict[str, Any]:
    """Best of several copies of a buffer at least 4x the last-level cache, on one CPU of the machine RUN runs
    on (this one by default, with this machine's build)."""
    if program_path is None:
        require_programs(["memcpy_bandwidth"])
        program_path = str(program("memcpy_bandwidth"))
    llc = last_level_cache_bytes(run)
    mib = max(128, 4 * (llc or 0) >> 20)
    command = [program_path, str(mib), str(runs)]
    if cpu is not None:
        command = ["taskset", "-c", cpu, *command]
    result = run(command)
    if result.returncode != 0:
        raise CopylabError(f"memcpy calibration failed: {result.stderr.strip() or result.returncode}")
    measured = json.loads(result.stdout)
    measured["llc_bytes"] = llc
    measured["cpu"] = cpu
    return measured


CALIBRATION_PROGRAMS = ["memcpy_bandwidth", "copy_cost"]
# Working sets measured per cache level, as fractions of its size (inside it, beyond the level below).
_INSIDE = (0.25, 0.5)
_BEYOND_LLC = (4, 8)
_MAX_WORKING_SET = 1 << 30


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
        if len(parts) != 4 or parts[1] == "Instruction":
            continue
        match = re.fullmatch(r"(\d+)([KMG]?)", parts[2])
        if match and parts[0].isdigit():
            size = int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2)]
            levels.append(CacheLevel(f"L{parts[0]}{'d' if parts[1] == 'Data' else ''}", size, parts[3]))
    return sorted(levels, key=lambda level: level.size_bytes)


def working_sets(levels: list[CacheLevel]) -> list[tuple[str, int]]:
    """(region, bytes) to measure: inside each level but beyond the one below, then well beyond the last."""
    points = []
    below = 0
    for level in levels:
        for fraction in _INSIDE:
            size = int(level.size_bytes * fraction)
            if size > below:
                points.append((level.name, size))
        below = level.size_bytes
    largest = levels[-1].size_bytes if levels else 64 << 20
    points += [("memory", min(_MAX_WORKING_SET, largest * factor)) for factor in _BEYOND_LLC]
    return points


def measure_copy_cost(
    runs: int = 5, cpu: str | None = "0", run: Runner = run_here, program_path: str | None = None
) -> tuple[list[CacheLevel], list[CopyCost]]:
    """The cache hierarchy and the median copy cost per byte inside each level and beyond (hot buffers)."""
    if program_path is None:
        require_programs(["copy_cost"])
        program_path = str(program("copy_cost"))
    levels = cache_levels(run)
    points = working_sets(levels)
    command = [program_path, str(runs), *(str(size) for _, size in points)]
    result = run(["taskset", "-c", cpu, *command] if cpu is not None else command)
    if result.returncode != 0:
        raise CopylabError(f"copy cost calibration failed: {result.stderr.strip() or result.returncode}")
    measured = json.loads(result.stdout)["points"]
    costs = [
        CopyCost(region, int(point["working_set_bytes"]), float(point["ns_per_byte"]))
        for (region, _), point in zip(points, measured, strict=True)
    ]
    return levels, costs


def calibration(cpu: str | None = "0", run: Runner = run_here, programs: dict[str, str] | None = None) -> Calibration:
    """memcpy bandwidth and copy cost by cache level on one CPU of the machine RUN runs on; PROGRAMS: where
    the calibration programs are there (default: this machine's build)."""
    where = programs or {}
    memcpy = measure_memcpy(cpu=cpu, run=run, program_path=where.get("memcpy_bandwidth"))
    levels, costs = measure_copy_cost(cpu=cpu, run=run, program_path=where.get("copy_cost"))
    return Calibration(**memcpy, caches=levels, copy_cost=costs)


def region_costs(record: Calibration) -> dict[str, float]:
    """The median copy cost per byte of each region measured (L1d ... memory), smallest region first."""
    by_region: dict[str, list[float]] = {}
    for cost in record.copy_cost:
        by_region.setdefault(cost.region, []).append(cost.ns_per_byte)
    return {region: statistics.median(values) for region, values in by_region.items()}


def copy_cost_at(record: Calibration, working_set: int) -> CopyCost:
    """The calibrated cost for a working set: the region it fits in (the smallest cache at least that large,
    else memory) and the median measured cost of that region."""
    region = next((level.name for level in record.caches if working_set <= level.size_bytes), "memory")
    medians = region_costs(record)
    if region not in medians:
        raise CopylabError(f"the calibration has no copy cost for {region}")
    return CopyCost(region, working_set, medians[region])


def copy_cost_table(record: Calibration) -> str:
    """The copy cost by cache level as a text table."""
    lines = [f"{'region':<8} {'working set':>12} {'ns/byte':>9} {'GB/s':>8}"]
    for cost in record.copy_cost:
        size = cost.working_set_bytes
        shown = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        lines.append(f"{cost.region:<8} {shown:>12} {cost.ns_per_byte:>9.4f} {1 / cost.ns_per_byte:>8.1f}")
    return "\n".join(lines)


def copy_limit_rows(summary: pd.DataFrame, memcpy_gbps: float) -> list[dict[str, Any]]:
    """Per implementation, its best mean stream throughput and what fraction of its copy bound that is."""
    throughput = summary[
        (summary["metric"] == "throughput_gbps") & (summary["workload"] == "stream") & (summary["n"] > 0)
    ]
    rows = []
    for implementation in implementations.ordered(throughput["implementation"]):
        copies = implementations.get(implementation).copies.per_byte()
        mine = throughput[throughput["implementation"] == implementation]
        best = mine.loc[mine["mean"].idxmax()]
        limit = memcpy_gbps / copies
        rows.append(
            {
                "implementation": implementation,
                "copies": copies,
                "size_bytes": int(best["size_bytes"]),
                "threads": int(best["threads"]),
                "best_gbps": float(best["mean"]),
                "limit_gbps": limit,
                "fraction": float(best["mean"]) / limit,
            }
        )
    return rows
