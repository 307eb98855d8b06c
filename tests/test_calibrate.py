"""The copy-bound ceiling and how the report states it."""

from __future__ import annotations

import subprocess

import pandas as pd
import pytest

from copylab import calibrate
from copylab.manifest import CacheLevel, Calibration, CopyCost
from copylab.paths import program


def summary_rows(rows):
    return pd.DataFrame(
        [
            {
                "metric": "throughput_gbps",
                "workload": "stream",
                "n": 5,
                "implementation": impl,
                "size_bytes": size,
                "threads": threads,
                "mean": mean,
            }
            for impl, size, threads, mean in rows
        ]
    )


def test_copy_limit_rows_take_each_implementation_at_its_best():
    summary = summary_rows(
        [
            ("two_copy", 1024, 1, 4.0),
            ("two_copy", 65536, 2, 20.0),
            ("one_copy", 65536, 1, 30.0),
            ("zero_copy", 4096, 4, 10.0),
        ]
    )
    rows = {row["implementation"]: row for row in calibrate.copy_limit_rows(summary, memcpy_gbps=90.0)}
    assert set(rows) == {"two_copy", "one_copy", "zero_copy"}
    assert rows["two_copy"]["best_gbps"] == 20.0 and rows["two_copy"]["size_bytes"] == 65536
    assert rows["two_copy"]["limit_gbps"] == pytest.approx(30.0)  # three copies
    assert rows["one_copy"]["fraction"] == pytest.approx(30.0 / 45.0)  # two copies
    assert rows["zero_copy"]["limit_gbps"] == pytest.approx(45.0)  # the deferred copy counts


def test_memcpy_measurement_is_plausible(bin_dir):
    assert program("memcpy_bandwidth").exists()
    result = calibrate.measure_memcpy(runs=2)
    assert result["buffer_mib"] >= 128 and result["buffer_mib"] << 20 >= 4 * (result["llc_bytes"] or 0)
    assert 1 < result["memcpy_gbps"] < 2000


LEVELS = [
    CacheLevel("L1d", 48 << 10, "0"),
    CacheLevel("L2", 1 << 20, "0"),
    CacheLevel("L3", 32 << 20, "0-1"),
]


class _Listed:
    returncode = 0
    stderr = ""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout


def test_cache_levels_keep_data_and_unified_caches_smallest_first():
    listing = "2 Unified 1024K 0\n1 Instruction 32K 0\n3 Unified 32768K 0-1\n1 Data 48K 0\n"
    assert calibrate.cache_levels(lambda command: _Listed(listing)) == LEVELS
    assert calibrate.cache_levels(lambda command: _Listed("")) == []


def test_working_sets_lie_inside_each_level_beyond_the_one_below_then_beyond_the_last():
    points = calibrate.working_sets(LEVELS)
    below = {"L1d": 0, "L2": 48 << 10, "L3": 1 << 20}
    for region, size in points:
        if region == "memory":
            assert size >= 4 * (32 << 20)
        else:
            level = next(level for level in LEVELS if level.name == region)
            assert below[region] < size <= level.size_bytes, (region, size)
    assert [region for region, _ in points].count("memory") == 2
    assert {region for region, _ in points} == {"L1d", "L2", "L3", "memory"}


def test_copy_cost_at_picks_the_smallest_cache_that_holds_the_working_set():
    record = Calibration(
        1,
        1,
        1.0,
        caches=LEVELS,
        copy_cost=[
            CopyCost(r, s, c)
            for r, s, c in (
                ("L1d", 12 << 10, 0.01),
                ("L2", 512 << 10, 0.02),
                ("L3", 16 << 20, 0.04),
                ("memory", 1 << 28, 0.2),
            )
        ],
    )
    assert calibrate.copy_cost_at(record, 32 << 10).region == "L1d"
    assert calibrate.copy_cost_at(record, 128 << 10) == CopyCost("L2", 128 << 10, 0.02)
    assert calibrate.copy_cost_at(record, 64 << 20).region == "memory"


def test_copy_cost_is_measured_and_costs_more_beyond_the_caches(bin_dir):
    levels, costs = calibrate.measure_copy_cost(runs=3, program_path=str(bin_dir / "copy_cost"))
    assert [cost.region for cost in costs] == [region for region, _ in calibrate.working_sets(levels)]
    assert all(cost.ns_per_byte > 0 for cost in costs)
    if levels:  # a ratio within one run: streaming from memory is slower than copying inside L1
        smallest = min(c.ns_per_byte for c in costs if c.region == levels[0].name)
        memory = min(c.ns_per_byte for c in costs if c.region == "memory")
        assert memory > 1.5 * smallest, costs


@pytest.mark.parametrize("arguments", [[], ["5"], ["0", "4096"], ["5", "12"], ["5", "4096x"]])
def test_copy_cost_refuses_bad_arguments_in_one_line(bin_dir, arguments):
    result = subprocess.run([str(bin_dir / "copy_cost"), *arguments], capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("copylab: error: ") and result.stderr.count("\n") == 1
