"""The copies experiment: senders that differ only in how the bytes of a message leave user space, and a
receiver that takes them in one of three ways, compared along message size.

This package is the experiment's plug-in: its declaration (below), its figures (copylab.experiments.copies.figures), its
captions and its answers to the study's questions (copylab.experiments.copies.captions,
copylab.experiments.copies.answers) and its parts
of the report (copylab.experiments.copies.report).
"""

from __future__ import annotations

from typing import Any

from copylab.experiment import Experiment, Members
from copylab.roles import Role


def _sizes(low: int, high: int) -> list[int]:
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << k <= high]


# The study's two-copy and zero-copy variants: the receive modes other than copy are measured for them.
STUDY_EDGES = Members(roles=(Role.TWO_COPY, Role.ZERO_COPY))
# The senders whose message layout matters most: one_copy hands the fields to the kernel as they lie, zero_copy
# pins their pages (two_copy packs them whatever their layout).
LAYOUT_SENDERS = Members(roles=(Role.ONE_COPY, Role.ZERO_COPY))

# quick is ./inv report's sweep, within its 5-minute budget (docs/performance.md); full is the study's
# grid, within 30 minutes: iperf3, whose windows are whole seconds (2 s a trial against 0.3 s, 9 of its minutes),
# is left to `./inv bench`, which compares with it like for like, and to --implementations.  Both run blocked
# designs with short windows.  The window is 0.3 s, not shorter: with four threads at
# each end on one CPU, what the scheduler hands each end varies within a window and averages out over it (on the
# 2-vCPU development host, 0.2 s windows left 10-25% between identical trials at 1-4 KiB and 0.4 s windows 4-9%;
# at one thread both left 2-7%), while a warm-up longer than 0.1 s changed nothing.
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        "implementations": Members(references=False),
        "workloads": ["stream", "rr"],
        "sizes": [64, 1024, 4096, 16384, 65536, 262144],
        "rr_sizes": [4096],
        "threads": [1, 4],
        "trials": 3,
        "duration_s": 0.3,
        "warmup_s": 0.1,
        "pinning": ["same_cpu"],
        "receive": ["copy", "truncate"],
        "receive_for": STUDY_EDGES,
        "layout": ["fields", "contiguous"],
        "layout_for": LAYOUT_SENDERS,
        "design": "blocked",
        "budget_s": 180.0,
        "max_trials": 10,
    },
    "full": {
        "implementations": Members(references=False),
        "workloads": ["stream", "rr"],
        "sizes": _sizes(64, 256 << 10),
        "rr_sizes": [4096],
        "threads": [1, 2, 4, 8],
        "trials": 5,
        "duration_s": 0.2,
        "warmup_s": 0.1,
        "pinning": ["same_cpu"],
        "receive": ["copy", "truncate", "mmap"],
        "receive_for": STUDY_EDGES,
        "layout": ["fields", "aligned", "contiguous"],
        "layout_for": Members(roles=tuple(Role)),
        "design": "blocked",
    },
}

COPIES = Experiment(
    name="copies",
    question="When does copying less pay, from what message size on?",
    axis="size_bytes",
    axis_unit="byte",
    noun="implementations",
    metric="throughput_gbps",
    workload="stream",
    headline={"stream": "throughput_gbps", "rr": "latency_mean_us"},
    metrics=(
        "throughput_gbps",
        "latency_mean_us",
        "latency_p99_us",
        "cpu_ns_per_byte",
        "snd_cpu_ns_per_byte",
        "snd_user_ns_per_byte",
        "rcv_cpu_ns_per_byte",
        "cycles_per_byte",
        "snd_l1d_misses_per_kib",
        "snd_llc_misses_per_kib",
        "ctx_switches_per_msg",
        "zc_copied_fraction",
        "retransmits",
        "rcv_bytes_per_call",
        "probe_ns",
        "probe_copy_ns",
        "rcv_wakeups_per_mb",
        "rcv_kernel_copies_per_byte",
        "snd_kernel_copies_per_byte",
        "snd_segments_per_skb",
        "snd_frags_per_skb",
    ),
    compared=("throughput_gbps", "latency_mean_us", "latency_p99_us", "cpu_ns_per_byte"),
    profiles=PROFILES,
    figures="copylab.experiments.copies.figures:copies_figures",
    report="copylab.experiments.copies.report",
    implementations="copylab.experiments.copies.implementations:IMPLEMENTATIONS",
    refuses={
        "connections": "the copies experiment opens one connection per thread",
        "idle_connections": "the copies experiment's connections each carry a stream; none is idle",
        "load": "the copies experiment's clients move bytes as fast as they can; it offers no rate",
        "rates": "the copies experiment's clients move bytes as fast as they can; it offers no rate",
    },
    calibrates=True,
    main=True,
    explorer_axes=("size_bytes", "threads"),
    deciding="roles",
)
