"""The copy-bound ceiling: single-core memory copy bandwidth, and what it allows each variant.

Every byte a variant moves is copied a fixed number of times on this host; with
both ends on one CPU, that core does all of them, so no variant can exceed
memcpy bandwidth divided by its copies per byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import implementations
from copylab.build import require_programs
from copylab.errors import CopylabError
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
