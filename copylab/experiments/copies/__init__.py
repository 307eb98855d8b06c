"""The copies experiment: senders that differ only in how the bytes of a message leave user space, and a
receiver that takes them in one of three ways, compared along message size.

This package is the experiment's declaration, plain data: the Experiment below and its implementations
(implementations.py).  What the report makes of it (its figures, captions, answers and report parts) is in
copylab.report.experiments.copies.
"""

from __future__ import annotations

from typing import Any

from copylab.experiments.copies.implementations import IMPLEMENTATIONS
from copylab.roles import Role
from copylab.segments import MAPPING_MTU
from copylab.vocabulary.experiment import Experiment, Members


def _sizes(low: int, high: int, step: int = 2) -> list[int]:
    """Every size from LOW up to HIGH, each STEP times the last."""
    sizes = [low]
    while sizes[-1] * step <= high:
        sizes.append(sizes[-1] * step)
    return sizes


# The study's two-copy and zero-copy variants: the receive modes other than copy are measured for them.
STUDY_EDGES = Members(roles=(Role.TWO_COPY, Role.ZERO_COPY))
# The senders whose message layout matters most: one_copy hands the fields to the kernel as they lie, zero_copy
# pins their pages (two_copy packs them whatever their layout).
LAYOUT_SENDERS = Members(roles=(Role.ONE_COPY, Role.ZERO_COPY))

# Sizes of ./inv report's main sweep: the study's range, 64 B to 256 KiB, 4x apart, at threads 1, 2, 4 and 8.  The
# model of a whole curve (copylab.analysis.crossover) reads every size of a thread count at once, so 4x apart gives
# each curve seven sizes: four below the 16 KiB where one_copy overtook two_copy on the development hosts, where
# two_copy should win, and two above.  A budget adds sizes between two of them where a crossover lies
# (copylab.measure.planning.allocation), so that its interval rests on measurements.  The contenders that decide no
# answer run at the ends and the middle of the range only (--side-sizes), which their figures and answer 1 read; the
# time this saves goes to the deciding ones.
REPORT_SIZES = _sizes(64, 256 << 10, step=4)
SIDE_SIZES = [REPORT_SIZES[0], REPORT_SIZES[len(REPORT_SIZES) // 2], REPORT_SIZES[-1]]
REPORT_THREADS = [1, 2, 4, 8]
# The sink's sizes: 1 KiB to 256 KiB 4x apart.  Below 1 KiB a datagram is mostly headers, and question 5's crossover
# lay near 40 KiB on the development hosts, between two of them; a budget adds the sizes between.
SINK_SIZES = _sizes(1024, 256 << 10, step=4)
# Messages each sender cycles through on the sink: "thousands make it cold" (the setting's help).  2,048 rather than
# the 4,096 of issue 37's throwaway test: a trial's wall time grows with the messages it allocates and fills, and
# from 16 KiB up 2,048 messages (32 MiB and more) already reach past the development host's 32 MiB last-level cache.
DISTINCT_MESSAGES = 2048

# The receiver's side: receiving by mapping (TCP_ZEROCOPY_RECEIVE) against receiving by copy, from a copying
# sender and the zero-copy one, at two large sizes, 3 blocks, no budget.  At MTU MAPPING_MTU a TCP segment's
# payload is whole pages.  Over the veth the receiver maps only single pages of the sender's, and a copying
# sender's are large unless --sender-pages small: "mmap" runs with the kernel's default, "mmap-small" with
# small pages, where mapping a copying sender's bytes can pay (the report's section on the receiver's side says
# whether it did, and by how much).
MMAP: dict[str, Any] = {
    "implementations": STUDY_EDGES,
    "workloads": ["stream"],
    "sizes": [65536, 262144],
    "threads": [1],
    "trials": 3,
    "duration_s": 0.2,
    "warmup_s": 0.1,
    "pinning": ["same_cpu"],
    "receive": ["copy", "mmap"],
    "mtu": MAPPING_MTU,
    "design": "blocked",
    "calibrate": False,  # as the sink's
}

# The eliminated copy, two_copy against one_copy, over a grid whose working sets (a message and its copy, twice the
# message) cross every cache level of the development hosts (L1d 32-48 KiB, L2 1-2 MiB, L3 32 MiB) and reach past
# the last one at two sizes: 64 and 128 MiB at 32 and 64 MiB messages (with one such size, 3 blocks of a 0.2 s window
# left the saving there 0.006 to 0.075 ns per byte on the development host: user time counts in ticks).  Question 2
# reads it (copylab.report.experiments.copies.answers.caches).  One thread, both ends on CPU 0, 3 fixed blocks.  It
# calibrates (about a second): its figure marks the cache sizes of the host it ran on.
CACHE_SIZES = [4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 32 << 20, 64 << 20]
CACHES: dict[str, Any] = {
    "implementations": Members(roles=(Role.TWO_COPY, Role.ONE_COPY)),
    "workloads": ["stream"],
    "sizes": CACHE_SIZES,
    "threads": [1],
    "trials": 3,
    "duration_s": 0.2,
    "warmup_s": 0.1,
    "pinning": ["same_cpu"],
    "design": "blocked",
}
# Question 3's sweep: two_copy at 2 MiB messages, more threads than the 2 CPUs, with both ends sharing CPU 0 and
# with the two ends on CPUs 0 and 1.  Each thread's message and its packed copy make 4 MiB: past a 1-2 MiB L2 from
# one thread on, the threads' combined working set stays inside a 32 MiB L3 up to 8 threads and passes it at 16
# (copylab.report.experiments.copies.answers.threads).  Not 64 threads: in 0.2 s windows their CPU time came out 0.18 to
# 0.47 ns per byte in three blocks on the 2-vCPU development host.  3 fixed blocks.
THREAD_COUNTS = [1, 2, 4, 8, 16]
THREADS: dict[str, Any] = {
    "implementations": Members(roles=(Role.TWO_COPY,)),
    "workloads": ["stream"],
    "sizes": [2 << 20],
    "threads": THREAD_COUNTS,
    "trials": 3,
    "duration_s": 0.2,
    "warmup_s": 0.1,
    "pinning": ["same_cpu", "split_cpu"],
    "design": "blocked",
    "calibrate": False,
}

# How quick's trials run, which the counts sweep shares so that its counts describe quick's trials: the window,
# the pinning, the receive modes and the layouts.
QUICK_TRIALS: dict[str, Any] = {
    "duration_s": 0.1,
    "warmup_s": 0.2,
    "pinning": ["same_cpu"],
    "receive": ["copy", "truncate"],
    "receive_for": STUDY_EDGES,
    "layout": ["fields", "contiguous"],
    "layout_for": LAYOUT_SENDERS,
    "design": "blocked",
}
# The kernel's own copies and transmitted skbs, counted with BPF (--kernel-copies), in a sweep of their own: the
# study's three senders, in each of quick's receive modes and layouts, at the ends of its range, one thread, no
# budget, 3 blocks (a window whose counts come out incomplete is left empty, and question 6 needs two counted ones an
# arm); two sizes, so that it costs the budget no more than 3 sizes of 2 blocks.
# Counting costs the traffic it counts: with the counts on, throughput from 16 KiB to 256 KiB fell by 15-35% on the
# 2-vCPU development host, and at 4 threads one_copy fell into its slower, receiver-bound state at 256 KiB in 10 of
# 12 trials against 2 of 12, which turned it from faster than two_copy there to slower (docs/method.md: Kernel copy
# counts via bpftrace).  So no other sweep the report runs counts, and the report reads the counts from this one.
COUNTS: dict[str, Any] = {
    **QUICK_TRIALS,
    "implementations": Members(roles=(Role.TWO_COPY, Role.ONE_COPY, Role.ZERO_COPY)),
    "workloads": ["stream"],
    "sizes": [REPORT_SIZES[0], REPORT_SIZES[-1]],
    "threads": [1],
    "trials": 3,
    "kernel_copies": True,
    "calibrate": False,  # the report states quick's calibration
}

# quick is ./inv report's main sweep; full is the study's grid (iperf3, whose windows are whole
# seconds, is left to `./inv bench` and to --implementations).  Both run blocked designs with short windows.  quick
# spends more of each trial warming up than measuring: a connection's first tenths of a second are not its steady
# state, and a window that starts in them spreads the paired ratios of one_copy to two_copy far more than a shorter
# window that starts after them (docs/method.md, Warm-up and window, has the figures).  Its first pass of 2 blocks and
# its budget are for run-sweep alone: inside ./inv report the first pass is sized from the host's own spread and speed
# (copylab.study.sizing) and the report's one budget decides the rest (copylab.study.budget).
PROFILES: dict[str, dict[str, Any]] = {
    "quick": {
        **QUICK_TRIALS,
        "implementations": Members(references=False),
        "workloads": ["stream", "rr"],
        "sizes": REPORT_SIZES,
        "side_sizes": SIDE_SIZES,
        "rr_sizes": [4096],
        "threads": REPORT_THREADS,
        "trials": 2,
        "budget_s": 150.0,
        "max_trials": 10,
    },
    "counts": COUNTS,
    # Where copying less pays on one host (docs/method.md: The sink): the senders' UDP datagrams into a device
    # that drops them once built, so MSG_ZEROCOPY completes uncopied.  Every sender that holds its message in
    # memory, stream only, one thread.  Cold sources: each sender cycles through DISTINCT_MESSAGES messages, as a
    # server's data would be; with one message the copy's source stays in cache and the copy looks cheaper than it
    # is.  A fixed design of 3 blocks, no budget; inside ./inv report its first pass is sized as quick's and it gets
    # extra blocks where question 5 is undecided.
    # Short windows: with one thread at each end, short and long windows left the same spread (docs/method.md).
    "sink": {
        "implementations": Members(references=False, in_memory=True),
        "workloads": ["stream"],
        "sizes": SINK_SIZES,
        "side_sizes": SINK_SIZES[::2],
        "threads": [1],
        "trials": 3,
        "duration_s": 0.15,
        "warmup_s": 0.05,
        "pinning": ["same_cpu"],
        "path": "sink",
        "distinct_messages": DISTINCT_MESSAGES,
        "design": "blocked",
        # The report states the quick sweep's calibration; one of this sweep's own would only lengthen it.
        "calibrate": False,
    },
    "mmap": MMAP,
    "mmap-small": {**MMAP, "sender_pages": "small"},
    "caches": CACHES,
    "threads": THREADS,
    "full": {
        "implementations": Members(references=False),
        "workloads": ["stream", "rr"],
        "sizes": _sizes(64, 256 << 10),  # every power of two
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
    implementations=IMPLEMENTATIONS,
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
    # The report's own sweep, the kernel's counts (COUNTS), then the sink and the receiver's side at MAPPING_MTU: the
    # question has an answer only where a zero copy is not undone by local delivery (copylab.report.experiments.copies.
    # report claims them).
    reported=("quick", "counts", "sink", "mmap", "mmap-small", "caches", "threads"),
    # Questions 4 and 5 quote the verdicts over the veth and behind the sink; questions 2 and 3 read the caches and
    # threads sweeps' means, and the receiver's side its ratios.
    verdicts_from=("quick", "sink"),
)
