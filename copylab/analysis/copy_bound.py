"""How far each implementation's best throughput is from the ceiling its copies allow on one CPU.

With both ends on one CPU, that core makes every copy of every byte, so an implementation that copies each
byte k times cannot exceed memcpy bandwidth / k while its copies run at memcpy's speed from memory.  Messages that
stay in the caches copy faster, and go past it (a fraction above 1).  The receiver's copies depend on how it takes
the bytes in (copylab.vocabulary.implementation.RECEIVE_MODES), so each receive mode has its own bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from copylab.declarations import implementations
from copylab.vocabulary.implementation import RECEIVE_MODES, Implementation


def copy_limit_rows(
    summary: pd.DataFrame, memcpy_gbps: float, members: Mapping[str, Implementation]
) -> list[dict[str, Any]]:
    """Per implementation and receive mode, its best mean stream throughput, what fraction of that mode's copy bound
    it is, and the receiver's part of its copies as declared and as the kernel counted it (least, most).  MEMBERS:
    the sweep's implementations by name (copylab.declarations.sweep_config.SweepConfig.members)."""
    throughput = summary[
        (summary["metric"] == "throughput_gbps") & (summary["workload"] == "stream") & (summary["n"] > 0)
    ]
    rows = []
    for implementation in implementations.ordered(throughput["implementation"]):
        mine = throughput[throughput["implementation"] == implementation]
        for receive in [mode for mode in RECEIVE_MODES if mode in set(mine["receive"])]:
            copies = members[implementation].copies.per_byte(receive)
            here = mine[mine["receive"] == receive]
            best = here.loc[here["mean"].idxmax()]
            limit = memcpy_gbps / copies if copies else float("inf")
            # what the kernel counted of the receiver's part (BPF, bytes copied to user space per byte delivered)
            counted = summary[
                (summary["metric"] == "rcv_kernel_copies_per_byte")
                & (summary["implementation"] == implementation)
                & (summary["receive"] == receive)
                & (summary["workload"] == "stream")
            ]["mean"].dropna()
            rows.append(
                {
                    "implementation": implementation,
                    "receive": receive,
                    "copies_per_byte": copies,
                    "receiver_copies": RECEIVE_MODES[receive].copies,
                    "receiver_counted": (float(counted.min()), float(counted.max())) if len(counted) else None,
                    "size_bytes": int(best["size_bytes"]),
                    "threads": int(best["threads"]),
                    "best_gbps": float(best["mean"]),
                    "limit_gbps": limit,
                    "fraction": float(best["mean"]) / limit,
                }
            )
    return rows
