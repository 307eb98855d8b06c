"""The copy-bound ceiling and how the report states it."""

from __future__ import annotations

import pandas as pd
import pytest

from copylab import calibrate
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
