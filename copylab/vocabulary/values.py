"""What the trials.csv format and the sweep settings are both built from: the values of the categorical columns
and settings, and the record that declares a column.  copylab.declarations.schema lists the columns,
copylab.declarations.settings the settings (a setting recorded per row declares its column there, and the schema
takes it from it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["str", "int", "float", "bool"]

WORKLOADS = ("stream", "rr")
# What each workload's trials are first judged by: how fast a stream moves, how long a request waits.
WORKLOAD_MEASURE = {"stream": "throughput_gbps", "rr": "latency_mean_us"}
RECEIVE_MODES = ("copy", "truncate", "mmap")
PINNINGS = ("none", "same_cpu", "split_cpu")
# The pinnings that place both ends, on one CPU and across CPUs: where the host's floor is measured.
FLOOR_PINNINGS = PINNINGS[1:]
# How a sender holds its message: the study's separately allocated fields first.
LAYOUTS = ("fields", "aligned", "contiguous")
# The layout of senders whose message is not in their memory (a file) or not theirs to choose (a tool).
NO_LAYOUT = "none"
STATUSES = ("ok", "failed")
# Where the sender's bytes go: over the veth pair to the client, or into a device that drops them once built.
PATHS = ("veth", "sink")
# The pages the kernel copies a sender's bytes into (copylab.testbeds.sender_pages): its default first.
SENDER_PAGES = ("large", "small")


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    unit: str
    description: str
    required: bool = False  # must be filled in every row, ok or failed
    since: int = 1  # the schema version that introduced it
    # What a required column holds in the rows of files written before it existed: a value, or another column's.
    legacy: str | None = None
    legacy_column: str | None = None
