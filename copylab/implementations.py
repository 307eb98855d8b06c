"""The registry: every implementation copylab can measure, and everything the rest of copylab needs to know of it.

An implementation declares how its two ends are started and read (its driver), which optional trials.csv
columns it fills, how many times each payload byte is copied on its path, the baseline it is compared with,
its colour, its paragraph in the report's Part A and its goal in ./inv bench.  Adding one is a C file in
csrc/ (or a wrapper in copylab.drivers), one entry below and its tests; no other module names an
implementation.  The order below is the order of every table, legend and list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from copylab.drivers import CopylabPrograms, Driver, Iperf3
from copylab.errors import CopylabError

# The study's three variants (ASSIGNMENT.md, Part A): the questions of Part E are asked about them.
STUDY_ROLES = {"A1": "two-copy baseline", "A2": "one-copy", "A3": "zero-copy"}
ZERO_COPY_COLUMNS = ("zc_sends", "zc_completed", "zc_copied", "zc_notifications", "zc_enobufs")


@dataclass(frozen=True)
class Copies:
    """How many times the CPU copies each payload byte on its way from the sender's memory to the receiver's."""

    sender_user: int  # in user space before the send (packing the fields)
    sender_kernel: int  # by the sending kernel, into socket buffers
    local_delivery: int = 0  # by the kernel when a local receiver may not keep the sender's pinned pages

    @property
    def at_send(self) -> int:
        """Copies made on the sending side when the message leaves user space."""
        return self.sender_user + self.sender_kernel

    def per_byte(self) -> int:
        """Copies end to end on local delivery (veth), the receiver's recv() copy included."""
        return self.at_send + self.local_delivery + 1


@dataclass(frozen=True)
class BenchGoal:
    """In ./inv bench, throughput against another implementation on the same link, interleaved."""

    against: str
    at_least: float  # median of the per-pair throughput ratios


@dataclass(frozen=True)
class Implementation:
    name: str
    summary: str  # one line: how the bytes leave user space
    explanation: str  # Markdown paragraph of the report's Part A
    driver: Driver
    copies: Copies
    color: str
    baseline: str | None = None  # ratios and crossovers are computed against it
    role: str | None = None  # its variant of the study (STUDY_ROLES), if it is one
    reference: bool = False  # an external tool measured for reference (drawn dashed)
    columns: tuple[str, ...] = ()  # optional trials.csv columns it fills
    bench: BenchGoal | None = None


IMPLEMENTATIONS: dict[str, Implementation] = {
    implementation.name: implementation
    for implementation in (
        Implementation(
            name="two_copy",
            summary="pack the 8 fields into one buffer (user-space memcpy), then send()",
            explanation=(
                "**two_copy: `send()` of a packed buffer.** (1) In user space the sender packs the 8 fields into "
                "one contiguous buffer with `memcpy`: the first copy, done by the CPU in user mode. (2) `send()` "
                "copies that buffer from user memory into the socket's buffers (skbs): the second copy, done by the "
                "kernel. Both are on the sending side, and the name counts these two. The receiving side adds one "
                "more: (3) `recv()` copies the data from the skbs into the client's buffer, in the receiver's "
                "kernel. Over veth the skb itself is handed to the peer namespace without another copy (there is "
                "no NIC and no DMA), so end to end there are three copies, two on the sender."
            ),
            driver=CopylabPrograms("two_copy"),
            copies=Copies(sender_user=1, sender_kernel=1),
            color="#0173b2",
            role="A1",
            bench=BenchGoal(against="iperf3", at_least=0.9),
        ),
        Implementation(
            name="one_copy",
            summary="one sendmsg() with an 8-entry iovec pointing at the fields",
            explanation=(
                "**one_copy: `sendmsg()` with an 8-entry iovec.** The iovec points at the 8 fields where they are, "
                "and the kernel gathers them straight into socket buffers. Copy (1), the user-space packing "
                "`memcpy`, is the one eliminated; the kernel's copy (2) and the receiver's copy (3) remain."
            ),
            driver=CopylabPrograms("one_copy"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#de8f05",
            baseline="two_copy",
            role="A2",
            bench=BenchGoal(against="iperf3", at_least=1.0),
        ),
        Implementation(
            name="zero_copy",
            summary="sendmsg(MSG_ZEROCOPY) with the same iovec; completions reaped from the socket error queue",
            explanation=(
                "**zero_copy: `sendmsg(MSG_ZEROCOPY)` with the same iovec.** With `SO_ZEROCOPY` set, the kernel "
                "pins the pages of the fields and the skb's fragments reference them instead of copying them. The "
                "sender must not touch those pages until the kernel says it is done: completion notifications "
                "arrive on the socket's error queue (`recvmsg(MSG_ERRQUEUE)`, origin `SO_EE_ORIGIN_ZEROCOPY`), each "
                "covering a range of sends. The sender therefore keeps a ring of message buffers and reuses a slot "
                "only after the completion covering it. On local delivery, as over this veth pair or loopback, the "
                "receiving socket may not keep references to another process's pinned pages, so the kernel copies "
                "them (`skb_orphan_frags_rx`) before queueing the data, and flags the completion "
                "`SO_EE_CODE_ZEROCOPY_COPIED`: the copy is deferred, not avoided. The counts below say how often "
                "that happened in this sweep."
            ),
            driver=CopylabPrograms("zero_copy"),
            copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
            color="#029e73",
            baseline="two_copy",
            role="A3",
            columns=ZERO_COPY_COLUMNS,
        ),
        Implementation(
            name="iperf3",
            summary="the standard tool on the same link: write() of one buffer per message (reference)",
            explanation=(
                "**iperf3 (reference).** The standard measurement tool on the same link and pinning, with the same "
                "message size (`-l`), one stream per thread and the server sending (`--reverse`): `write()` of one "
                "contiguous buffer, so the kernel's copy and the receiver's copy, as in one_copy."
            ),
            driver=Iperf3(),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#404040",
            baseline="two_copy",
            reference=True,
        ),
    )
}


def get(name: str) -> Implementation:
    """The registry entry of NAME; a one-line error naming the known ones otherwise."""
    try:
        return IMPLEMENTATIONS[name]
    except KeyError:
        raise CopylabError(f"unknown implementation {name!r} (choose from {', '.join(IMPLEMENTATIONS)})") from None


def names() -> tuple[str, ...]:
    return tuple(IMPLEMENTATIONS)


def ordered(present: Iterable[str]) -> list[str]:
    """PRESENT in registry order (names the registry no longer has last, sorted)."""
    present = set(present)
    return [name for name in IMPLEMENTATIONS if name in present] + sorted(present - set(IMPLEMENTATIONS))


def by_role(role: str) -> Implementation | None:
    """The implementation that plays one of the study's variants (STUDY_ROLES)."""
    return next((impl for impl in IMPLEMENTATIONS.values() if impl.role == role), None)


def comparison_pairs() -> list[tuple[str, str]]:
    """(challenger, baseline) of every implementation that has a baseline."""
    return [(impl.name, impl.baseline) for impl in IMPLEMENTATIONS.values() if impl.baseline]


def programs(implementations: Iterable[str]) -> list[str]:
    """The csrc/ programs the given implementations run."""
    return [program for name in implementations for program in get(name).driver.programs]


def uses_zero_copy(name: str) -> bool:
    """Whether NAME's sends are zero-copy sends whose completions it counts (the zc_* columns)."""
    return "zc_completed" in get(name).columns
