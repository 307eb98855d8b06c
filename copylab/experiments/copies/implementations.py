"""The copies experiment's implementations: its senders, the study's variants among them, and the reference tool."""

from __future__ import annotations

from copylab.declarations.implementation import (
    BenchGoal,
    Copies,
    DriverKind,
    DriverSpec,
    Implementation,
    UserCopy,
    program_pair,
)
from copylab.declarations.limits import FIELD_COUNT
from copylab.roles import Role

# The columns every zero-copy sender fills: its sends, their completions and how many the kernel copied.
ZERO_COPY_COLUMNS = (
    "zc_sends",
    "zc_completed",
    "zc_copied",
    "zc_notifications",
    "zc_enobufs",
    "zc_pages_per_message",
)

# iperf3 on the same link: same message size (-l), one stream per thread, the server sending (--reverse).
IPERF3 = DriverSpec(
    DriverKind.IPERF3,
    "iperf3",
    workloads=("stream",),
    receive_modes=("copy",),
    unprofiled_reason="iperf3 cannot mark the measured window for perf",
    start_delay_s=0.15,  # iperf3's client does not retry a refused connection
    version_command=("iperf3", "--version"),
)


# The order below is the order of every table, legend and list.
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        name="two_copy",
        driver=program_pair("two_copy"),
        copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("memcpy", FIELD_COUNT)),
        role=Role.TWO_COPY,
    ),
    Implementation(
        name="one_copy",
        driver=program_pair("one_copy"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("two_copy",),
        role=Role.ONE_COPY,
        bench=BenchGoal(against="iperf3", at_least=1.0),
    ),
    Implementation(
        name="zero_copy",
        driver=program_pair("zero_copy"),
        copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
        baselines=("two_copy",),
        role=Role.ZERO_COPY,
        columns=ZERO_COPY_COLUMNS,
        bench=BenchGoal(against="zc_contiguous", at_least=0.95),
    ),
    Implementation(
        name="zc_contiguous",
        driver=program_pair("zc_contiguous", layouts=("contiguous",)),
        copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
        baselines=("zero_copy",),
        reference=True,
        columns=ZERO_COPY_COLUMNS,
        bench_only=True,
    ),
    Implementation(
        name="read_send",
        driver=program_pair("read_send", from_file=True, layouts=()),
        copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("read", 1)),
    ),
    Implementation(
        name="sendfile",
        driver=program_pair("sendfile", from_file=True, layouts=()),
        copies=Copies(sender_user=0, sender_kernel=0),
        baselines=("read_send",),
    ),
    Implementation(
        name="uring_send",
        driver=program_pair("uring_send"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("two_copy",),
    ),
    Implementation(
        name="uring_send_zc",
        driver=program_pair("uring_send_zc"),
        copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
        baselines=("two_copy", "zero_copy"),
        columns=ZERO_COPY_COLUMNS,
    ),
    Implementation(
        name="iperf3",
        driver=IPERF3,
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("two_copy",),
        reference=True,
    ),
)
