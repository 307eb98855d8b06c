"""The servers experiment: servers that differ only in how they wait for many connections, compared along the
number of connections.

This package is the experiment's declaration, plain data: the Experiment below and its implementations
(implementations.py).  What the report makes of it (its figures and its section) is in
copylab.report.experiments.servers.
"""

from __future__ import annotations

from typing import Any

from copylab.experiments.servers.implementations import IMPLEMENTATIONS
from copylab.vocabulary.experiment import Experiment, Members

# The set-up of the study's related exercise: server on CPU 0, client on CPU 1 (taskset), many connections at once.
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "implementations": Members(),
        "workloads": ["rr"],
        "rr_sizes": [64],
        "threads": [1],
        "connections": [1, 10, 100],
        "trials": 3,
        "duration_s": 0.2,
        "warmup_s": 0.1,
        "pinning": ["split_cpu"],
        "design": "blocked",
        "budget_s": 45.0,
        "max_trials": 10,
    },
    "full": {
        "implementations": Members(),
        "workloads": ["rr"],
        "rr_sizes": [64, 4096],
        "threads": [1],
        # dense where the models part ways (the server saturates within ten connections), then far out
        "connections": [1, 2, 4, 8, 16, 100, 1000],
        "trials": 5,
        "duration_s": 0.5,
        "warmup_s": 0.2,
        "pinning": ["split_cpu"],
        "design": "blocked",
    },
}

SERVERS = Experiment(
    name="servers",
    question="From how many concurrent connections does one model beat another?",
    axis="connections",
    axis_unit="request",
    noun="models",
    metric="requests_per_s",
    workload="rr",
    headline={"rr": "requests_per_s"},
    metrics=(
        "requests_per_s",
        "latency_mean_us",
        "latency_p99_us",
        "latency_p999_us",
        "probe_ns",
        "probe_copy_ns",
        "rcv_kernel_copies_per_byte",
        "snd_cpu_us_per_request",
        "rcv_cpu_us_per_request",
        "snd_ctx_per_request",
        "snd_busy",
        "rcv_busy",
        "served_fraction",
        "fairness",
    ),
    compared=("requests_per_s", "latency_mean_us", "latency_p99_us", "snd_cpu_us_per_request"),
    profiles=PROFILES,
    implementations=IMPLEMENTATIONS,
    refuses={
        "distinct_messages": "the servers experiment's responses are one buffer",
        "path": "the servers experiment answers requests over the veth pair; the sink path is the copies experiment's",
    },
    allows={
        "workloads": (("rr",), "the servers experiment runs request/response (rr) only"),
        "receive": (("copy",), "the servers experiment's load client receives by copy only"),
        "layout": (("fields",), "the servers experiment's responses are one buffer; their layout is not chosen"),
    },
    explorer_axes=("connections", "size_bytes"),
)
