"""How the report presents the copies experiment's implementations and receive modes: each one's colour in every
figure and its paragraph in Part A (where the copies happen).  An implementation or receive mode without both fails
tests/test_registry.py."""

from __future__ import annotations

import seaborn

# Markdown paragraph of Part A, per implementation.
EXPLANATIONS: dict[str, str] = {
    "two_copy": (
        "**two_copy: `send()` of a packed buffer.** (1) In user space the sender packs the 8 fields into "
        "one contiguous buffer with `memcpy`: the first copy, done by the CPU in user mode. (2) `send()` "
        "copies that buffer from user memory into the socket's buffers (skbs): the second copy, done by the "
        "kernel. Both are on the sending side, and the name counts these two. The receiving side adds one "
        "more: (3) `recv()` copies the data from the skbs into the client's buffer, in the receiver's "
        "kernel. Over veth the skb itself is handed to the peer namespace without another copy (there is "
        "no NIC and no DMA), so end to end there are three copies, two on the sender."
    ),
    "one_copy": (
        "**one_copy: `sendmsg()` with an 8-entry iovec.** The iovec points at the 8 fields where they are, "
        "and the kernel gathers them straight into socket buffers. Copy (1), the user-space packing "
        "`memcpy`, is the one eliminated; the kernel's copy (2) and the receiver's copy (3) remain."
    ),
    "zero_copy": (
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
    "zc_contiguous": (
        "**zc_contiguous (reference).** What a minimal `MSG_ZEROCOPY` benchmark does: one contiguous "
        "buffer per message instead of 8 fields, the error queue read every 32 sends. It keeps as many "
        "bytes of distinct messages in flight as zero_copy (`--zc-inflight`) and never resends a buffer "
        "the kernel still holds. It bounds what zero_copy could reach on the same path; the difference is "
        "what the study's 8 fields and its harness cost."
    ),
    "read_send": (
        "**read_send: `read()` then `send()` of a file.** The server serves a message file from the page "
        "cache (a tmpfs file of at least 256 MiB, read once before any window): `read()` copies a "
        "message-sized chunk into a user buffer (1), `send()` copies it into socket buffers (2), and the "
        "receiver's `recv()` copies it out (3). The classic count of \"four copies\" adds the disk's DMA "
        "into the page cache, which never happens here. It is the baseline of the file-serving pair."
    ),
    "sendfile": (
        "**sendfile: `sendfile()` of the same file.** The kernel hands each chunk's page-cache pages to TCP "
        "with `MSG_SPLICE_PAGES`, and on a device with scatter-gather (veth is one) `tcp_sendmsg_locked` "
        "(net/ipv4/tcp.c) attaches them to the skb by reference through `skb_splice_from_iter` "
        "(net/core/skbuff.c): no copy is made, neither into user space nor into socket buffers. Local delivery "
        "adds none either: `skb_orphan_frags_rx` (include/linux/skbuff.h) copies only an skb that holds a "
        "zero-copy sender's user pages, and page-cache pages are not user pages. Of read_send's copies only "
        "the receiver's (3) remains."
    ),
    "uring_send": (
        "**uring_send: `IORING_OP_SENDMSG`.** one_copy's 8-entry iovec submitted through an io_uring ring "
        "instead of a `sendmsg()` call: the same copies (the kernel's gather into socket buffers and the "
        "receiver's), a different interface."
    ),
    "uring_send_zc": (
        "**uring_send_zc: `IORING_OP_SENDMSG_ZC`.** zero_copy's pinned pages through io_uring: each send "
        "completes twice on the ring, first with its result, then with a notification once the kernel no "
        "longer needs the pages; with `IORING_SEND_ZC_REPORT_USAGE` the notification says whether the "
        "kernel copied them after all (`IORING_NOTIF_USAGE_ZC_COPIED`), which on local delivery it does. "
        "Buffers are reused only after their notification, as in zero_copy."
    ),
    "iperf3": (
        "**iperf3 (reference).** The standard measurement tool on the same link and pinning, with the same "
        "message size (`-l`), one stream per thread and the server sending (`--reverse`): `write()` of one "
        "contiguous buffer, so the kernel's copy and the receiver's copy, as in one_copy."
    ),
}

# Each implementation's colour in every figure: matplotlib's tab10, ten colours a reader tells apart, one each.
TAB10 = seaborn.color_palette("tab10").as_hex()
COLORS: dict[str, str] = {
    "two_copy": TAB10[0],
    "one_copy": TAB10[1],
    "zero_copy": TAB10[2],
    "zc_contiguous": TAB10[7],
    "read_send": TAB10[3],
    "sendfile": TAB10[4],
    "uring_send": TAB10[5],
    "uring_send_zc": TAB10[9],
    "iperf3": TAB10[8],
}

# Markdown paragraph of Part A, per receive mode (copylab.declarations.implementation.RECEIVE_MODES).
RECEIVE_EXPLANATIONS: dict[str, str] = {
    "copy": (
        "**Receive `copy`.** The client's `recv()` copies the data from the socket buffers into its own "
        "buffer: the receiver's copy, made by the receiving kernel for every byte."
    ),
    "truncate": (
        "**Receive `truncate`.** `recv(MSG_TRUNC)` on TCP consumes the data without copying it to user space: "
        "the receiver's copy disappears, so comparing `truncate` with `copy` for the same sender measures what "
        "that copy costs. (With `--verify` the bytes are first read with `MSG_PEEK`, a copy, to check them.)"
    ),
    "mmap": (
        "**Receive `mmap`.** `TCP_ZEROCOPY_RECEIVE` maps whole payload pages into a region the client mapped "
        "on the socket instead of copying them; only page-aligned, page-sized payload can be mapped, the rest "
        "is still read with `recv()`. The trials count both (`rx_mapped_bytes`, `rx_copied_bytes`): whether "
        "anything maps depends on how the sender built its packets and on the MTU."
    ),
}

RECEIVE_COLORS: dict[str, str] = {
    "copy": "#333333",
    "truncate": "#e69f00",
    "mmap": "#0072b2",
}
