"""The copies experiment's implementations: its senders, the study's variants among them, and the reference tool."""

from __future__ import annotations

from copylab.roles import Role
from copylab.vocabulary.implementation import (
    TAB10,
    BenchGoal,
    Copies,
    DriverKind,
    DriverSpec,
    Implementation,
    UserCopy,
    program_pair,
)
from copylab.vocabulary.limits import FIELD_COUNT

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
IPERF3_DRIVER = DriverSpec(
    DriverKind.IPERF3,
    "iperf3",
    workloads=("stream",),
    receive_modes=("copy",),
    unprofiled_reason="iperf3 cannot mark the measured window for perf",
    start_delay_s=0.15,  # iperf3's client does not retry a refused connection
    version_command=("iperf3", "--version"),
)


# The references the study's senders are held to in ./inv bench (BenchGoal): declared first, so that a goal holds
# the declaration itself.
ZC_CONTIGUOUS = Implementation(
    name="zc_contiguous",
    color=TAB10[7],
    explanation=(
        "**zc_contiguous (reference).** What a minimal `MSG_ZEROCOPY` benchmark does: one contiguous "
        "buffer per message instead of 8 fields, the error queue read every 32 sends. It keeps as many "
        "bytes of distinct messages in flight as zero_copy (`--zc-inflight`) and never resends a buffer "
        "the kernel still holds. It bounds what zero_copy could reach on the same path; the difference is "
        "what the study's 8 fields and its harness cost."
    ),
    driver=program_pair("zc_contiguous", layouts=("contiguous",)),
    copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
    baselines=("zero_copy",),
    reference=True,
    columns=ZERO_COPY_COLUMNS,
    bench_only=True,
)

IPERF3 = Implementation(
    name="iperf3",
    color=TAB10[8],
    explanation=(
        "**iperf3 (reference).** The standard measurement tool on the same link and pinning, with the same "
        "message size (`-l`), one stream per thread and the server sending (`--reverse`): `write()` of one "
        "contiguous buffer, so the kernel's copy and the receiver's copy, as in one_copy."
    ),
    driver=IPERF3_DRIVER,
    copies=Copies(sender_user=0, sender_kernel=1),
    baselines=("two_copy",),
    reference=True,
)


# The order below is the order of every table, legend and list.
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        name="two_copy",
        color=TAB10[0],
        explanation=(
            "**two_copy: `send()` of a packed buffer.** (1) In user space the sender packs the 8 fields into "
            "one contiguous buffer with `memcpy`: the first copy, done by the CPU in user mode. (2) `send()` "
            "copies that buffer from user memory into the socket's buffers (skbs): the second copy, done by the "
            "kernel. Both are on the sending side, and the name counts these two. The receiving side adds one "
            "more: (3) `recv()` copies the data from the skbs into the client's buffer, in the receiver's "
            "kernel. Over veth the skb itself is handed to the peer namespace without another copy (there is "
            "no NIC and no DMA), so end to end there are three copies, two on the sender."
        ),
        driver=program_pair("two_copy"),
        copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("memcpy", FIELD_COUNT)),
        role=Role.TWO_COPY,
    ),
    Implementation(
        name="one_copy",
        color=TAB10[1],
        explanation=(
            "**one_copy: `sendmsg()` with an 8-entry iovec.** The iovec points at the 8 fields where they are, "
            "and the kernel gathers them straight into socket buffers. Copy (1), the user-space packing "
            "`memcpy`, is the one eliminated; the kernel's copy (2) and the receiver's copy (3) remain."
        ),
        driver=program_pair("one_copy"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("two_copy",),
        role=Role.ONE_COPY,
        bench=BenchGoal(against=IPERF3, at_least=1.0),
    ),
    Implementation(
        name="zero_copy",
        color=TAB10[2],
        explanation=(
            "**zero_copy: `sendmsg(MSG_ZEROCOPY)` with the same iovec.** With `SO_ZEROCOPY` set, the kernel "
            "pins the pages of the fields and the skb's fragments reference them instead of copying them. The "
            "sender must not touch those pages until the kernel says it is done: completion notifications "
            "arrive on the socket's error queue (`recvmsg(MSG_ERRQUEUE)`, origin `SO_EE_ORIGIN_ZEROCOPY`), each "
            "covering a range of sends. The sender therefore keeps a ring of message buffers and reuses a slot "
            "only after the completion covering it. On local delivery, as over this veth pair or loopback, the "
            "kernel copies the pinned pages (`skb_orphan_frags_rx()`, include/linux/skbuff.h) before queueing the data "
            "to the receiving socket, and flags the completion `SO_EE_CODE_ZEROCOPY_COPIED`: a local receiver may "
            "leave its data unread indefinitely, and Documentation/networking/msg_zerocopy.rst refuses the unbounded "
            "notification latency that would give. The copy is deferred, not avoided. The counts below say how often "
            "that happened in this sweep."
        ),
        driver=program_pair("zero_copy"),
        copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
        baselines=("two_copy",),
        role=Role.ZERO_COPY,
        columns=ZERO_COPY_COLUMNS,
        bench=BenchGoal(against=ZC_CONTIGUOUS, at_least=0.95),
    ),
    ZC_CONTIGUOUS,
    Implementation(
        name="read_send",
        color=TAB10[3],
        explanation=(
            "**read_send: `read()` then `send()` of a file.** The server serves a message file from the page "
            "cache (a tmpfs file of at least 256 MiB, read once before any window): `read()` copies a "
            "message-sized chunk into a user buffer (1), `send()` copies it into socket buffers (2), and the "
            "receiver's `recv()` copies it out (3). The classic count of \"four copies\" adds the disk's DMA "
            "into the page cache, which never happens here. It is the baseline of the file-serving pair."
        ),
        driver=program_pair("read_send", from_file=True, layouts=()),
        copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("read", 1)),
    ),
    Implementation(
        name="sendfile",
        color=TAB10[4],
        explanation=(
            "**sendfile: `sendfile()` of the same file.** The kernel hands each chunk's page-cache pages to TCP "
            "with `MSG_SPLICE_PAGES`, and on a device with scatter-gather (veth is one) `tcp_sendmsg_locked` "
            "(net/ipv4/tcp.c) attaches them to the skb by reference through `skb_splice_from_iter` "
            "(net/core/skbuff.c): no copy is made, neither into user space nor into socket buffers. Local delivery "
            "adds none either: `skb_orphan_frags_rx` (include/linux/skbuff.h) copies only an skb that holds a "
            "zero-copy sender's user pages, and page-cache pages are not user pages. Of read_send's copies only "
            "the receiver's (3) remains."
        ),
        driver=program_pair("sendfile", from_file=True, layouts=()),
        copies=Copies(sender_user=0, sender_kernel=0),
        baselines=("read_send",),
    ),
    Implementation(
        name="uring_send",
        color=TAB10[5],
        explanation=(
            "**uring_send: `IORING_OP_SENDMSG`.** one_copy's 8-entry iovec submitted through an io_uring ring "
            "instead of a `sendmsg()` call: the same copies (the kernel's gather into socket buffers and the "
            "receiver's), a different interface."
        ),
        driver=program_pair("uring_send"),
        copies=Copies(sender_user=0, sender_kernel=1),
        baselines=("two_copy",),
    ),
    Implementation(
        name="uring_send_zc",
        color=TAB10[9],
        explanation=(
            "**uring_send_zc: `IORING_OP_SENDMSG_ZC`.** zero_copy's pinned pages through io_uring: each send "
            "completes twice on the ring, first with its result, then with a notification once the kernel no "
            "longer needs the pages; with `IORING_SEND_ZC_REPORT_USAGE` the notification says whether the "
            "kernel copied them after all (`IORING_NOTIF_USAGE_ZC_COPIED`), which on local delivery it does. "
            "Buffers are reused only after their notification, as in zero_copy."
        ),
        driver=program_pair("uring_send_zc"),
        copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
        baselines=("two_copy", "zero_copy"),
        columns=ZERO_COPY_COLUMNS,
    ),
    IPERF3,
)
