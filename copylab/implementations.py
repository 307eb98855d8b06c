"""The registry: every implementation copylab can measure, and everything the rest of copylab needs to know of it.

An implementation declares how its two ends are started and read (its driver), which optional trials.csv
columns it fills, how many times each payload byte is copied on its path, the baselines it is compared with,
its colour, its paragraph in the report's Part A and its goal in ./inv bench.  Adding one is a C file in
csrc/ (or a wrapper in copylab.drivers), one entry below and its tests; no other module names an
implementation.  The order below is the order of every table, legend and list.

The receiver's side has its own small registry, RECEIVE_MODES: how the client takes the bytes in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from copylab import experiments
from copylab.copies import COPIES
from copylab.copies.roles import STUDY_BASELINE, Role
from copylab.drivers import CopylabPrograms, Driver, Iperf3, ModelPrograms
from copylab.errors import CopylabError
from copylab.experiment import Experiment
from copylab.limits import FIELD_COUNT, SELECT_MAX_CONNECTIONS
from copylab.servers import SERVERS
from copylab.vocabulary import LAYOUTS, NO_LAYOUT

# The study's three variants (ASSIGNMENT.md, Part A): the questions of Part E are asked about them.
ZERO_COPY_COLUMNS = (
    "zc_sends",
    "zc_completed",
    "zc_copied",
    "zc_notifications",
    "zc_enobufs",
    "zc_pages_per_message",
)


@dataclass(frozen=True)
class UserCopy:
    """How a sender copies a message into a buffer of its own before sending it."""

    call: str  # "memcpy" (libc, in user space) or "read" (the kernel's copy to user space)
    per_message: int  # calls per message: one per field, or one for the whole message

    def bytes_per_call(self, size: int) -> int:
        return size // self.per_message


@dataclass(frozen=True)
class Copies:
    """How many times the CPU copies each payload byte on its way from the sender's memory to the receiver's."""

    sender_user: int  # in user space before the send (packing the fields, reading a file into a buffer)
    sender_kernel: int  # by the sending kernel, into socket buffers
    local_delivery: int = 0  # by the kernel when a local receiver may not keep the sender's pinned pages
    user_copy: UserCopy | None = None  # how the sender_user copy is made

    @property
    def at_send(self) -> int:
        """Copies made on the sending side when the message leaves user space."""
        return self.sender_user + self.sender_kernel

    def per_byte(self, receive: str = "copy") -> int:
        """Copies end to end on local delivery (veth), the receiver's included."""
        return self.at_send + self.local_delivery + RECEIVE_MODES[receive].copies


@dataclass(frozen=True)
class ReceiveMode:
    """A way for the client to take the bytes in (csrc/receive.c)."""

    name: str
    copies: int  # copies of each byte into the receiver's user space (mmap: 0 where whole pages map)
    explanation: str  # Markdown paragraph of the report's Part A
    color: str


RECEIVE_MODES: dict[str, ReceiveMode] = {
    mode.name: mode
    for mode in (
        ReceiveMode(
            "copy",
            1,
            "**Receive `copy`.** The client's `recv()` copies the data from the socket buffers into its own "
            "buffer: the receiver's copy, made by the receiving kernel for every byte.",
            "#333333",
        ),
        ReceiveMode(
            "truncate",
            0,
            "**Receive `truncate`.** `recv(MSG_TRUNC)` on TCP consumes the data without copying it to user space: "
            "the receiver's copy disappears, so comparing `truncate` with `copy` for the same sender measures what "
            "that copy costs. (With `--verify` the bytes are first read with `MSG_PEEK`, a copy, to check them.)",
            "#e69f00",
        ),
        ReceiveMode(
            "mmap",
            0,
            "**Receive `mmap`.** `TCP_ZEROCOPY_RECEIVE` maps whole payload pages into a region the client mapped "
            "on the socket instead of copying them; only page-aligned, page-sized payload can be mapped, the rest "
            "is still read with `recv()`. The trials count both (`rx_mapped_bytes`, `rx_copied_bytes`): whether "
            "anything maps depends on how the sender built its packets and on the MTU.",
            "#0072b2",
        ),
    )
}
BASELINE_RECEIVE = "copy"


@dataclass(frozen=True)
class BenchGoal:
    """In ./inv bench, throughput against another implementation on the same link, interleaved."""

    against: str
    at_least: float  # median of the per-pair throughput ratios
    # The goal holds with the message in this layout, like for like with the implementation it is held to (one
    # buffer); the bench reports the sender's other layouts beside it, without a verdict.
    layout: str = "contiguous"
    sizes: tuple[int, ...] = (65536, 1024)  # message sizes the goal holds at


@dataclass(frozen=True)
class Implementation:
    name: str
    summary: str  # one line: how the bytes leave user space
    explanation: str  # Markdown paragraph of the report's Part A
    driver: Driver
    copies: Copies
    color: str
    baselines: tuple[str, ...] = ()  # ratios and crossovers are computed against them
    role: Role | None = None  # its variant of the study, if it is one
    reference: bool = False  # an external tool measured for reference (drawn dashed)
    columns: tuple[str, ...] = ()  # optional trials.csv columns it fills
    bench: BenchGoal | None = None
    experiment: str = COPIES.name
    max_connections: int | None = None  # the most connections it can hold, when it has a limit of its own
    bench_only: bool = False  # a yardstick of ./inv bench, in no profile (a sweep may still name it)
    # Its round trip at one connection is the host's floor for its experiment: a minimal ping-pong, measured once
    # per sweep at every pinning, which the report subtracts so that the host's wake-up cost is not read as a
    # model's.
    floor: bool = False


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
            copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("memcpy", FIELD_COUNT)),
            color="#0173b2",
            role=Role.TWO_COPY,
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
            baselines=("two_copy",),
            role=Role.ONE_COPY,
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
            baselines=("two_copy",),
            role=Role.ZERO_COPY,
            columns=ZERO_COPY_COLUMNS,
            bench=BenchGoal(against="zc_contiguous", at_least=0.95),
        ),
        Implementation(
            name="zc_contiguous",
            summary="reference: sendmsg(MSG_ZEROCOPY) of contiguous messages, error queue read every 32 sends",
            explanation=(
                "**zc_contiguous (reference).** What a minimal `MSG_ZEROCOPY` benchmark does: one contiguous "
                "buffer per message instead of 8 fields, the error queue read every 32 sends. It keeps as many "
                "bytes of distinct messages in flight as zero_copy (`--zc-inflight`) and never resends a buffer "
                "the kernel still holds. It bounds what zero_copy could reach on the same path; the difference is "
                "what the study's 8 fields and its harness cost."
            ),
            driver=CopylabPrograms("zc_contiguous", layouts=("contiguous",)),
            copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
            color="#7f7f7f",
            baselines=("zero_copy",),
            reference=True,
            columns=ZERO_COPY_COLUMNS,
            bench_only=True,
        ),
        Implementation(
            name="read_send",
            summary="a file server the classic way: read() a chunk of a file into a buffer, then send() it",
            explanation=(
                "**read_send: `read()` then `send()` of a file.** The server serves a message file from the page "
                "cache (a tmpfs file of at least 256 MiB, read once before any window): `read()` copies a "
                "message-sized chunk into a user buffer (1), `send()` copies it into socket buffers (2), and the "
                "receiver's `recv()` copies it out (3). The classic count of \"four copies\" adds the disk's DMA "
                "into the page cache, which never happens here. It is the baseline of the file-serving pair."
            ),
            driver=CopylabPrograms("read_send", from_file=True, layouts=()),
            copies=Copies(sender_user=1, sender_kernel=1, user_copy=UserCopy("read", 1)),
            color="#d55e00",
        ),
        Implementation(
            name="sendfile",
            summary="the same file and chunk size through sendfile(): page cache to socket, no user-space copy",
            explanation=(
                "**sendfile: `sendfile()` of the same file.** The kernel copies each chunk from the page cache "
                "straight into socket buffers: the copy into user space and back disappears, the kernel's copy (2) "
                "and the receiver's (3) remain."
            ),
            driver=CopylabPrograms("sendfile", from_file=True, layouts=()),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#cc78bc",
            baselines=("read_send",),
        ),
        Implementation(
            name="uring_send",
            summary="the 8-field message through io_uring IORING_OP_SENDMSG",
            explanation=(
                "**uring_send: `IORING_OP_SENDMSG`.** one_copy's 8-entry iovec submitted through an io_uring ring "
                "instead of a `sendmsg()` call: the same copies (the kernel's gather into socket buffers and the "
                "receiver's), a different interface."
            ),
            driver=CopylabPrograms("uring_send"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#ca9161",
            baselines=("two_copy",),
        ),
        Implementation(
            name="uring_send_zc",
            summary="the same through IORING_OP_SENDMSG_ZC, each notification saying whether the kernel copied",
            explanation=(
                "**uring_send_zc: `IORING_OP_SENDMSG_ZC`.** zero_copy's pinned pages through io_uring: each send "
                "completes twice on the ring, first with its result, then with a notification once the kernel no "
                "longer needs the pages; with `IORING_SEND_ZC_REPORT_USAGE` the notification says whether the "
                "kernel copied them after all (`IORING_NOTIF_USAGE_ZC_COPIED`), which on local delivery it does. "
                "Buffers are reused only after their notification, as in zero_copy."
            ),
            driver=CopylabPrograms("uring_send_zc"),
            copies=Copies(sender_user=0, sender_kernel=0, local_delivery=1),
            color="#56b4e9",
            baselines=("two_copy", "zero_copy"),
            columns=ZERO_COPY_COLUMNS,
        ),
        Implementation(
            name="iterative",
            summary="one connection at a time: accept, answer its requests until it closes, accept the next",
            explanation=(
                "**iterative.** The server accepts one connection and answers its requests until the client closes "
                "it, then accepts the next. Clients that keep their connections open are served one at a time: the "
                "first is served, the others wait in the accept queue."
            ),
            driver=ModelPrograms("iterative"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#949494",
            baselines=("thread",),
            experiment=SERVERS.name,
            floor=True,
        ),
        Implementation(
            name="thread",
            summary="a thread per connection, each blocked in recv() on its own connection",
            explanation=(
                "**thread.** A thread per connection, each blocked in `recv()` on its connection: the scheduler wakes "
                "whichever has a request. Each connection costs a thread (a stack, a scheduling entity) and a wake-up "
                "and a context switch per request."
            ),
            driver=ModelPrograms("thread"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#0173b2",
            experiment=SERVERS.name,
        ),
        Implementation(
            name="fork",
            summary="a process per connection, each blocked in recv() on its own connection",
            explanation=(
                "**fork.** A process per connection: like a thread per connection, with an address space of its own "
                "(copy-on-write pages, a process switch rather than a thread switch)."
            ),
            driver=ModelPrograms("fork"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#de8f05",
            baselines=("thread",),
            experiment=SERVERS.name,
        ),
        Implementation(
            name="select",
            summary="one thread waiting on every connection with select()",
            explanation=(
                "**select.** One thread waits on every connection with `select()`: the descriptor sets are rebuilt, "
                "copied into the kernel and scanned whole on every call, and hold only descriptors below FD_SETSIZE "
                f"(1024), so a select server holds at most {SELECT_MAX_CONNECTIONS} connections here."
            ),
            driver=ModelPrograms("select"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#029e73",
            baselines=("thread",),
            experiment=SERVERS.name,
            max_connections=SELECT_MAX_CONNECTIONS,
        ),
        Implementation(
            name="poll",
            summary="one thread waiting on every connection with poll()",
            explanation=(
                "**poll.** One thread waits with `poll()`: no limit of its own on descriptors, but the whole array "
                "goes to the kernel and back, and is scanned, on every call."
            ),
            driver=ModelPrograms("poll"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#d55e00",
            baselines=("thread",),
            experiment=SERVERS.name,
        ),
        Implementation(
            name="epoll",
            summary="one thread waiting on every connection with a level-triggered epoll instance",
            explanation=(
                "**epoll.** One thread waits with a level-triggered `epoll` instance: the kernel keeps the interest "
                "list and returns only the connections that are ready, so a call costs in proportion to the ready "
                "connections, not to all of them."
            ),
            driver=ModelPrograms("epoll"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#cc78bc",
            baselines=("thread",),
            experiment=SERVERS.name,
        ),
        Implementation(
            name="uring",
            summary="one thread driving every connection through an io_uring: multishot accept and receive",
            explanation=(
                "**uring.** One thread drives every connection through one `io_uring`: a multishot accept takes "
                "the connections, a multishot receive per connection lands its requests in buffers the kernel "
                "picks from a provided buffer ring, and the responses go out as sends on the same ring, so one "
                "`io_uring_enter()` serves many connections and no call waits on one. Published measurements of "
                "such servers disagree on whether it is ahead of epoll or behind; the comparison below is this "
                "host's, with intervals. It needs a kernel with multishot receive (6.0 on); elsewhere it is "
                "reported unavailable with the reason."
            ),
            driver=ModelPrograms("uring"),
            copies=Copies(sender_user=0, sender_kernel=1),
            color="#ca9161",
            baselines=("thread", "epoll"),
            experiment=SERVERS.name,
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
            baselines=("two_copy",),
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


def names(experiment: str | None = None) -> tuple[str, ...]:
    """Every implementation, or those of one experiment."""
    return tuple(name for name, impl in IMPLEMENTATIONS.items() if experiment in (None, impl.experiment))


def experiment(name: str) -> Experiment:
    """The experiment NAME (copylab.experiments), one-line error for an unknown one."""
    return experiments.get(name)


def deciding_pairs(experiment: Experiment) -> list[tuple[str, str]]:
    """The (challenger, baseline) pairs whose curves answer EXPERIMENT's question: the study's variants against its
    baseline variant (deciding "roles"), or every implementation against its baselines ("baselines")."""
    members = [IMPLEMENTATIONS[name] for name in names(experiment.name)]
    if experiment.deciding == "roles":
        baseline = next(impl.name for impl in members if impl.role == STUDY_BASELINE)
        return [(impl.name, baseline) for impl in members if impl.role and impl.name != baseline]
    return [(impl.name, base) for impl in members for base in impl.baselines]


def ordered(present: Iterable[str]) -> list[str]:
    """PRESENT in registry order (names the registry no longer has last, sorted)."""
    present = set(present)
    return [name for name in IMPLEMENTATIONS if name in present] + sorted(present - set(IMPLEMENTATIONS))


def by_role(role: Role) -> Implementation | None:
    """The implementation that plays one of the study's variants."""
    return next((impl for impl in IMPLEMENTATIONS.values() if impl.role == role), None)


def floor_of(experiment: str) -> Implementation | None:
    """The implementation whose one-connection round trip is EXPERIMENT's host floor, if it has one."""
    return next((get(name) for name in names(experiment) if get(name).floor), None)


def shared_baseline(experiment: str) -> str:
    """The baseline most implementations of EXPERIMENT are compared with (copies: the study's two-copy variant)."""
    named = [b for name in names(experiment) for b in get(name).baselines]
    if not named:
        return names(experiment)[0]
    return max(dict.fromkeys(named), key=named.count)


# The study's own layout: its 8 fields, each allocated apart.
STUDY_LAYOUT = LAYOUTS[0]


# Joins an implementation and a layout other than the study's in a contender's label.
LAYOUT_MARK = "@"


def fixed_layout(name: str) -> str | None:
    """The layout NAME always runs in when its layout cannot be chosen (NO_LAYOUT: its message is not in its
    memory); None when --layout chooses it."""
    layouts = get(name).driver.layouts
    if len(layouts) > 1:
        return None
    return layouts[0] if layouts else NO_LAYOUT


def contender(implementation: str, receive: str, layout: str = STUDY_LAYOUT) -> str:
    """What a comparison calls one implementation with one receive mode and message layout: 'two_copy',
    'two_copy/truncate', 'one_copy@contiguous' (the study's layout, or none to choose, is left unsaid)."""
    name = implementation if layout in (STUDY_LAYOUT, NO_LAYOUT) else f"{implementation}{LAYOUT_MARK}{layout}"
    return name if receive == BASELINE_RECEIVE else f"{name}/{receive}"


def parse_contender(label: str) -> tuple[Implementation, str]:
    """The implementation and receive mode a contender label names; a one-line error for a foreign one."""
    name, _, receive = label.partition("/")
    name = name.partition(LAYOUT_MARK)[0]
    receive = receive or BASELINE_RECEIVE
    if receive not in RECEIVE_MODES:
        raise CopylabError(f"unknown receive mode {receive!r} in {label!r} (choose from {', '.join(RECEIVE_MODES)})")
    return get(name), receive


def in_study(name: str) -> bool:
    """One of the study's variants or a reference tool: what the report's Parts D and E are about."""
    implementation = get(name)
    return implementation.role is not None or implementation.reference


def comparison_pairs(receive_modes: Iterable[str] = (BASELINE_RECEIVE,)) -> list[tuple[str, str]]:
    """(challenger, baseline) contenders: each implementation against its baselines in every receive mode, and
    each implementation in every other receive mode against itself receiving by copy."""
    modes = [mode for mode in RECEIVE_MODES if mode in set(receive_modes)]
    pairs = [
        (contender(impl.name, mode), contender(baseline, mode))
        for mode in modes
        for impl in IMPLEMENTATIONS.values()
        for baseline in impl.baselines
    ]
    pairs += [(contender(name, mode), name) for mode in modes if mode != BASELINE_RECEIVE for name in IMPLEMENTATIONS]
    pairs += [
        (contender(impl.name, BASELINE_RECEIVE, layout), impl.name)
        for impl in IMPLEMENTATIONS.values()
        if fixed_layout(impl.name) is None
        for layout in impl.driver.layouts
        if layout != STUDY_LAYOUT
    ]
    return pairs


def programs(implementations: Iterable[str]) -> list[str]:
    """The csrc/ programs the given implementations run."""
    return [program for name in implementations for program in get(name).driver.programs]


def uses_zero_copy(name: str) -> bool:
    """Whether NAME's sends are zero-copy sends whose completions it counts (the zc_* columns)."""
    return "zc_completed" in get(name).columns
