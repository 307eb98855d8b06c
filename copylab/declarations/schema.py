"""The trials.csv format: one row per trial, every column named, typed and given a unit.

"snd_" columns describe the sending side (the server: the variant under test),
"rcv_" columns the receiving side (the client).  Counters a host cannot measure
are left empty (NaN after loading), never 0; ``perf_missing`` says why.

Columns carry the schema version that introduced them: a file written by an older
copylab lacks the later ones, and loads with them empty (copylab.record.trials_file).
"""

from __future__ import annotations

from dataclasses import dataclass

from copylab import experiments
from copylab.declarations.settings import SETTINGS
from copylab.vocabulary.values import PINNINGS, RECEIVE_MODES, STATUSES, WORKLOADS, Column, Kind

__all__ = ["PINNINGS", "RECEIVE_MODES", "STATUSES", "WORKLOADS", "Column"]

SCHEMA_VERSION = 11

# perf events recorded per side: perf's event name -> column suffix.
PERF_EVENTS: dict[str, str] = {
    "cycles": "cycles",
    "instructions": "instructions",
    "cache-references": "cache_references",
    "cache-misses": "cache_misses",
    "L1-dcache-load-misses": "l1d_load_misses",
    "LLC-load-misses": "llc_load_misses",
    "context-switches": "context_switches",
    "cpu-migrations": "cpu_migrations",
    "task-clock": "task_clock_ms",
}


@dataclass(frozen=True)
class SideQuantity:
    """What each end measures of itself, stored once per side ("snd_NAME", "rcv_NAME"); every program prints it
    as NAME (copylab.declarations.contract)."""

    name: str
    kind: Kind
    unit: str
    template: str  # "{who}": the end that measured it

    def meaning(self, who: str) -> str:
        return self.template.format(who=who)


# In the order every program prints them (json_usage in csrc/usage.c).
SIDE_QUANTITIES: dict[str, SideQuantity] = {
    quantity.name: quantity
    for quantity in (
        SideQuantity("cpu_user_s", "float", "s", "user CPU time of {who} over the measured window (getrusage)"),
        SideQuantity("cpu_sys_s", "float", "s", "system CPU time of {who} over the measured window (getrusage)"),
        SideQuantity("ctx_voluntary", "int", "count", "voluntary context switches of {who} in the window"),
        SideQuantity("ctx_involuntary", "int", "count", "involuntary context switches of {who} in the window"),
    )
}


def _side_columns(side: str, who: str) -> list[Column]:
    columns = [Column(f"{side}_{q.name}", q.kind, q.unit, q.meaning(f"the {who}")) for q in SIDE_QUANTITIES.values()]
    for event, suffix in PERF_EVENTS.items():
        unit = "ms" if event == "task-clock" else "count"
        columns.append(
            Column(f"{side}_{suffix}", "float", unit, f"perf stat {event} of the {who}, measured window only")
        )
    return columns


COLUMNS: tuple[Column, ...] = (
    Column("sweep", "str", "", "sweep name (the directory under data/)", True),
    Column(
        "trial_id",
        "str",
        "",
        "unique id: implementation-workload-size-threads-connections-pinning-receive, then -LAYOUT when the layout "
        "is chosen and not the study's fields, -idleN with N idle connections, -rateN with an offered rate of N per "
        "second, and -rR for block (repetition) R: e.g. one_copy-stream-16384-1-1-same_cpu-copy-contiguous-r1",
        True,
    ),
    Column(
        "experiment",
        "str",
        "",
        "copies (how bytes leave user space) or servers (how a server waits for connections)",
        True,
        since=2,
        legacy=experiments.DEFAULT.name,
    ),
    Column("order_index", "int", "", "position in the seeded random trial order", True),
    Column("implementation", "str", "", "the implementation under test (docs/programs.md)", True),
    Column(
        "model",
        "str",
        "",
        "how the server waits for connections, as the server reported it (servers; empty for copies)",
        since=2,
    ),
    Column("workload", "str", "", "stream (bulk transfer) or rr (request/response)", True),
    Column("size_bytes", "int", "B", "message size", True),
    Column("threads", "int", "", "client threads (copies: = connections = server worker threads)", True),
    Column(
        "connections",
        "int",
        "",
        "connections the client keeps busy (copies: one per thread)",
        True,
        since=2,
        legacy_column="threads",
    ),
    Column(
        "idle_connections",
        "int",
        "",
        "servers: connections the client opened besides and left silent for the whole trial (copies: 0)",
        True,
        since=6,
        legacy="0",
    ),
    Column(
        "offered_rate",
        "int",
        "1/s",
        "servers, open load: requests per second the client sent on a schedule over all busy connections, "
        "answered or not; 0 in a closed loop, where no rate is offered",
        True,
        since=7,
        legacy="0",
    ),
    Column("pinning", "str", "", "none, same_cpu (both ends on one CPU) or split_cpu", True),
    Column(
        "receive",
        "str",
        "",
        "how the client takes the bytes in: copy (recv), truncate (recv MSG_TRUNC, no copy) "
        "or mmap (TCP_ZEROCOPY_RECEIVE)",
        True,
        since=2,
        legacy="copy",
    ),
    Column(
        "layout",
        "str",
        "",
        "how the sender held the message: fields (8 separate allocations, the study's), aligned (each on a page "
        "boundary) or contiguous (one buffer); none for senders of a file or a tool's own buffer",
        True,
        since=5,
        legacy="fields",
    ),
    Column("repetition", "int", "", "trial number of this configuration, from 1", True),
    Column("started_at", "str", "UTC ISO 8601", "when the trial started", True),
    Column("status", "str", "", "ok or failed", True),
    Column("error", "str", "", "why the trial failed (empty when ok)"),
    Column("measured_s", "float", "s", "length of the measured window (after warm-up, CLOCK_MONOTONIC)"),
    Column("bytes", "int", "B", "bytes received by all client threads in the window"),
    Column("messages", "int", "count", "messages received (stream: bytes / size) or round trips (rr) in the window"),
    Column("throughput_gbps", "float", "Gbit/s", "bytes x 8 / measured_s / 1e9, at the receiver"),
    Column("latency_mean_us", "float", "us", "mean round-trip time (rr only)"),
    Column("latency_p50_us", "float", "us", "median round-trip time (rr only)"),
    Column("latency_p99_us", "float", "us", "99th percentile round-trip time (rr only)"),
    Column("latency_p999_us", "float", "us", "99.9th percentile round-trip time (rr only)", since=6),
    Column("latency_max_us", "float", "us", "largest round-trip time (rr only)"),
    Column(
        "issue_lag_p99_us",
        "float",
        "us",
        "servers, open load: 99th percentile of how late the client sent a request against its schedule (its own "
        "lateness, part of the latency it measured from the schedule)",
        since=7,
    ),
    Column("requests_per_s", "float", "1/s", "round trips completed per second in the window (servers)", since=2),
    Column(
        "connections_served",
        "int",
        "count",
        "connections that completed at least one request in the window (servers)",
        since=2,
    ),
    Column(
        "fairness",
        "float",
        "",
        "Jain's index over the connections' completed requests: 1 = all equal, 1/connections = one got all (servers)",
        since=2,
    ),
    *_side_columns("snd", "sender (server)"),
    *_side_columns("rcv", "receiver (client)"),
    Column("perf_missing", "str", "", "perf events not measured, with the reason, e.g. 'snd_cycles: <not supported>'"),
    Column("retransmits", "int", "count", "TCP retransmits of the sender's connections (TCP_INFO)"),
    Column(
        "srtt_us",
        "float",
        "us",
        "smoothed round-trip time of the sender's connections at their end, their mean (TCP_INFO): with the "
        "throughput, the bytes a path holds in flight",
        since=8,
    ),
    Column(
        "snd_send_buffer_bytes",
        "int",
        "B",
        "the sender's first connection's send buffer at the window's end (SO_SNDBUF: twice socket_buffer_bytes, or "
        "with 0 what the kernel had grown it to; copylab's copies programs only)",
        since=10,
    ),
    Column(
        "rcv_receive_buffer_bytes",
        "int",
        "B",
        "the receiver's first connection's receive buffer at the window's end (SO_RCVBUF, as snd_send_buffer_bytes)",
        since=10,
    ),
    Column("zc_sends", "int", "count", "MSG_ZEROCOPY sendmsg calls (zero-copy senders only)"),
    Column("zc_completed", "int", "count", "sends covered by completion notifications (zero-copy senders only)"),
    Column("zc_copied", "int", "count", "completed sends flagged SO_EE_CODE_ZEROCOPY_COPIED (zero-copy senders only)"),
    Column(
        "zc_notifications",
        "int",
        "count",
        "completion notifications read from the error queue (zero-copy senders only)",
    ),
    Column(
        "zc_enobufs",
        "int",
        "count",
        "zero-copy sends refused with ENOBUFS and retried (zero-copy senders only)",
        since=2,
    ),
    Column(
        "zc_pages_per_message",
        "float",
        "pages",
        "pages the kernel pinned per message: each iovec entry's pages, summed over the entries (a page two entries "
        "share counts twice, as it is pinned twice), averaged over the messages sent (zero-copy senders only)",
        since=8,
    ),
    Column("rx_mapped_bytes", "int", "B", "bytes the client received as mapped pages (receive mmap only)", since=2),
    Column("rx_copied_bytes", "int", "B", "bytes the client still copied with recv() (receive mmap only)", since=2),
    Column(
        "rx_copybuf_bytes",
        "int",
        "B",
        "bytes TCP_ZEROCOPY_RECEIVE copied into the client's copy buffer in the same call, what it could not map "
        "(receive mmap only; before schema 11 the client had no copy buffer and recv() copied them)",
        since=11,
    ),
    Column(
        "sink_datagrams",
        "int",
        "count",
        "path sink: the datagrams the sink device's blackhole qdisc dropped in the window, from its own counter (a "
        "datagram UDP_SEGMENT splits counts once: the qdisc drops it before it is segmented)",
        since=11,
    ),
    Column(
        "sink_segment_bytes",
        "int",
        "B",
        "path sink: the UDP_SEGMENT size the sender's datagrams carried (the device's MTU less 28 B of IPv4 and UDP "
        "headers), 0 when every datagram fit the MTU whole",
        since=11,
    ),
    # The settings recorded per row (copylab.declarations.settings declares their columns).
    *(setting.column for setting in SETTINGS if setting.column),
    Column(
        "rcv_kernel_copy_bytes",
        "int",
        "B",
        "bytes the kernel copied to user space for the trial's client process, measured window only (BPF "
        "tracepoint skb:skb_copy_datagram_iovec; before schema 4, for every receiver in the client's namespace); "
        "0 is a measurement: the bytes arrived (rcv_kernel_received_bytes) and none was copied, as with MSG_TRUNC",
        since=3,
    ),
    Column(
        "rcv_kernel_received_bytes",
        "int",
        "B",
        "bytes the client process's receive calls took from its sockets in the window, copied or not, as the "
        "kernel counted them (BPF tracepoint sock:sock_recv_length, peeks left out): the check that the window was "
        "counted whole",
        since=4,
    ),
    Column("snd_kernel_copy_bytes", "int", "B", "bytes the kernel copied from the sender's user space (BPF)", since=3),
    Column(
        "zc_deferred_copy_bytes",
        "int",
        "B",
        "bytes of zero-copy pages the kernel copied later anyway (skb_copy_ubufs, BPF)",
        since=3,
    ),
    Column(
        "snd_skbs",
        "int",
        "count",
        "skbs carrying data that the sender's network namespace transmitted in the window (BPF tracepoint "
        "net:net_dev_start_xmit; only where the sender runs on the kernel copylab traces, empty between two hosts)",
        since=9,
    ),
    Column(
        "snd_skb_segments",
        "int",
        "count",
        "TCP segments those skbs carried (gso_segs, 1 for an skb sent as one packet): per skb, how many packets the "
        "stack handed the device at once",
        since=9,
    ),
    Column(
        "snd_skb_frags",
        "int",
        "count",
        "page fragments of those skbs (skb_shinfo nr_frags): a zero-copy sender's pinned pages travel as fragments, "
        "one per piece of a page an iovec entry spans",
        since=9,
    ),
    Column(
        "kernel_copy_missing",
        "str",
        "",
        "why a kernel copy column is empty: 'column: reason; ...' (BPF probes that cannot attach here)",
        since=3,
    ),
    Column(
        "block_position",
        "int",
        "",
        "a blocked design's trials: its place in its block, 0 first (its repetition is the block's number at its "
        "point)",
        since=4,
    ),
    Column(
        "rcv_receive_calls",
        "int",
        "count",
        "receive system calls of the client in the window (recv(), TCP_ZEROCOPY_RECEIVE): bytes per call is how "
        "much it drained per call",
        since=4,
    ),
    Column(
        "probe_before_ns",
        "float",
        "ns",
        "the speed probe on the trial's CPUs just before the trial (csrc/speed_probe.c, ns per step of a dependent "
        "multiplication chain): how fast the host ran them then, higher is slower",
        since=4,
    ),
    Column("probe_after_ns", "float", "ns", "the same speed probe just after the trial", since=4),
    Column(
        "probe_before_copy_ns",
        "float",
        "ns/B",
        "the speed probe's copy of 2 MiB (last-level cache, not the private ones) on the trial's CPUs just before "
        "the trial, per byte: how fast the host's shared cache and memory served them then, higher is slower",
        since=4,
    ),
    Column("probe_after_copy_ns", "float", "ns/B", "the same copy probe just after the trial", since=4),
    Column("trial_wall_s", "float", "s", "wall time of the whole trial, start-up and teardown included"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(column.name for column in COLUMNS)
COLUMN_BY_NAME: dict[str, Column] = {column.name: column for column in COLUMNS}


def markdown() -> str:
    """The table of trials.csv's columns (docs/reference/columns.md), from COLUMNS."""
    lines = ["| column | unit | meaning |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.unit} | {c.description} |" for c in COLUMNS]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
