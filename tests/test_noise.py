"""What explains the spread between identical trials (copylab.analysis.noise), on synthetic trials with a known
cause."""

from __future__ import annotations

import numpy as np
import pandas as pd

from copylab import experiments
from copylab.analysis.noise import spread_explained
from copylab.record.tables import CONFIG_KEYS


def _trials(seed: int) -> pd.DataFrame:
    """Two implementations at two sizes, 12 trials each, as blocks of both: a trial's throughput is 20 or 15
    Gbit/s by the receive buffer its connection settled at, times a little noise; the speed probe is noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for size in (16384, 65536):
        for repetition in range(12):
            for implementation in ("one_copy", "two_copy"):
                grown = rng.random() < 0.4
                rows.append(
                    {
                        **dict.fromkeys(CONFIG_KEYS, 0),
                        "implementation": implementation,
                        "workload": "stream",
                        "size_bytes": size,
                        "threads": 1,
                        "pinning": "same_cpu",
                        "receive": "copy",
                        "layout": "fields",
                        "experiment": "copies",
                        "status": "ok",
                        "repetition": repetition + 1,
                        "block_position": 0 if implementation == "one_copy" else 1,
                        "throughput_gbps": (15.0 if grown else 20.0) * rng.lognormal(0, 0.01),
                        "rcv_receive_buffer_bytes": float(rng.integers(5, 33) << 20 if grown else 2188030),
                        "probe_ns": rng.lognormal(10, 0.05),
                    }
                )
    return pd.DataFrame(rows)


def test_the_covariate_that_sets_the_mode_explains_the_spread_and_noise_does_not():
    found = {item.covariate: item for item in spread_explained(_trials(1), experiments.get("copies"), "stream")}
    assert found["rcv_receive_buffer_bytes"].share > 0.8
    assert found["probe_ns"].share < 0.2
    assert found["rcv_receive_buffer_bytes"].configurations == 4 and found["rcv_receive_buffer_bytes"].trials == 48


def test_a_fixed_buffer_explains_nothing_and_is_left_out():
    trials = _trials(2).assign(rcv_receive_buffer_bytes=2097152.0)
    found = spread_explained(trials, experiments.get("copies"), "stream")
    assert "rcv_receive_buffer_bytes" not in {item.covariate for item in found}
