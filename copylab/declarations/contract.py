"""What the C programs print: one JSON object per program, every key declared here with its type and unit.

The drivers read results only through parse(); tests/test_contract.py checks that the C sources emit
exactly these keys and that every program's real output parses.  A missing, unknown, null or mistyped
key is an error that names it, never an empty column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["int", "float", "str", "list"]


class ContractError(ValueError):
    """A program's output does not match its declared keys."""


@dataclass(frozen=True)
class Key:
    name: str
    kind: Kind
    unit: str
    meaning: str
    nullable: bool = False
    # The trials.csv column it fills ("{side}" becomes snd or rcv); None: checked against the trial, not stored.
    column: str | None = None


# When the window began and ended (CLOCK_MONOTONIC, what BPF's nsecs counts) and which process received:
# kernel copy accounting sums what the kernel copied for that process between the two.
_WINDOW = (
    Key("window_begin_ns", "int", "ns", "CLOCK_MONOTONIC when the measured window began"),
    Key("window_end_ns", "int", "ns", "CLOCK_MONOTONIC when the measured window ended"),
    Key("pid", "int", "", "the receiving process's id, whose receives the kernel's counts are taken for"),
)
_IDENTITY = (
    Key("role", "str", "", "server or client"),
    Key("variant", "str", "", "the sending path compiled into the program (csrc/send_VARIANT.c)"),
    Key("mode", "str", "", "stream or rr"),
    Key("size", "int", "B", "message size"),
    Key("threads", "int", "", "data connections, one thread each"),
)
_USAGE = (
    Key("cpu_user_s", "float", "s", "user CPU time over the measured window", column="{side}_cpu_user_s"),
    Key("cpu_sys_s", "float", "s", "system CPU time over the measured window", column="{side}_cpu_sys_s"),
    Key("ctx_voluntary", "int", "count", "voluntary context switches in the window", column="{side}_ctx_voluntary"),
    Key(
        "ctx_involuntary", "int", "count", "involuntary context switches in the window", column="{side}_ctx_involuntary"
    ),
)
# Both ends report it; a trial whose ends disagree, or differ from what the sweep asked, fails
# (copylab.measure.running.drivers).
_CONGESTION = Key(
    "congestion_control",
    "str",
    "",
    "the TCP congestion control of its connections, read back from a socket (a listener's is what the connections "
    "it accepts inherit)",
    column="congestion_control",
)
# Both ends report it too, and a trial whose ends differ from the sweep fails alike.
_SOCKET_BUFFER = Key(
    "socket_buffer",
    "int",
    "B",
    "the send and receive buffer it asked for on every socket, which the kernel was checked to hold doubled (0: it "
    "left them to the kernel)",
    column="socket_buffer_bytes",
)
_ZERO_COPY = tuple(
    Key(name, "int", "count", meaning + " (null unless the sending path uses MSG_ZEROCOPY)", True, name)
    for name, meaning in (
        ("zc_sends", "MSG_ZEROCOPY sendmsg calls that succeeded"),
        ("zc_completed", "sends covered by completion notifications"),
        ("zc_copied", "completed sends flagged SO_EE_CODE_ZEROCOPY_COPIED"),
        ("zc_notifications", "completion notifications read from the error queue"),
        ("zc_enobufs", "sends refused with ENOBUFS and retried"),
    )
)
_LATENCY = tuple(
    Key(
        f"latency_{name}_us",
        "float",
        "us",
        f"{meaning} round-trip time (null in stream mode)",
        True,
        f"latency_{name}_us",
    )
    for name, meaning in (
        ("mean", "mean"),
        ("p50", "median"),
        ("p99", "99th percentile"),
        ("p999", "99.9th percentile"),
        ("max", "largest"),
    )
)

RESULTS: dict[str, tuple[Key, ...]] = {
    "server": (
        *_IDENTITY,
        Key("layout", "str", "", "fields, aligned or contiguous: how the sender held the message (--layout)"),
        *_USAGE,
        Key("retransmits", "int", "count", "TCP retransmits of the sending connections", column="retransmits"),
        Key(
            "srtt_us",
            "float",
            "us",
            "smoothed round-trip time of the sending connections at their end (TCP_INFO), their mean",
            column="srtt_us",
        ),
        _CONGESTION,
        _SOCKET_BUFFER,
        Key(
            "send_buffer_bytes",
            "int",
            "B",
            "the first sending connection's send buffer at the window's end as the kernel held it (SO_SNDBUF: twice "
            "--socket-buffer, or what the kernel had grown it to)",
            column="snd_send_buffer_bytes",
        ),
        *_ZERO_COPY,
        Key(
            "zc_pages_per_message",
            "float",
            "pages",
            "pages pinned per message: each iovec entry's pages, summed over entries, averaged over the messages "
            "sent (null unless the sending path uses MSG_ZEROCOPY)",
            True,
            "zc_pages_per_message",
        ),
        Key(
            "sink_segment_bytes",
            "int",
            "B",
            "the UDP_SEGMENT size of its datagrams, 0: none (null unless --path sink)",
            True,
            "sink_segment_bytes",
        ),
    ),
    "client": (
        *_IDENTITY,
        Key("receive", "str", "", "copy, truncate or mmap: how the client took the bytes in"),
        Key("measured_s", "float", "s", "length of the measured window", column="measured_s"),
        *_WINDOW,
        Key("bytes", "int", "B", "bytes received in the window", column="bytes"),
        Key("messages", "int", "count", "messages (stream) or round trips (rr) in the window", column="messages"),
        Key(
            "receive_calls",
            "int",
            "count",
            "receive system calls (recv(), TCP_ZEROCOPY_RECEIVE) in the window",
            column="rcv_receive_calls",
        ),
        Key("throughput_gbps", "float", "Gbit/s", "bytes x 8 / measured_s / 1e9", column="throughput_gbps"),
        *_LATENCY,
        _CONGESTION,
        _SOCKET_BUFFER,
        Key(
            "receive_buffer_bytes",
            "int",
            "B",
            "the first receiving connection's receive buffer at the window's end as the kernel held it (SO_RCVBUF: "
            "twice --socket-buffer, or what the kernel had grown it to)",
            column="rcv_receive_buffer_bytes",
        ),
        *_USAGE,
        Key(
            "rx_mapped_bytes",
            "int",
            "B",
            "bytes received as mapped pages in the window (null unless receive mmap)",
            True,
            "rx_mapped_bytes",
        ),
        Key(
            "rx_copied_bytes",
            "int",
            "B",
            "bytes received by recv() in the window (null unless receive mmap)",
            True,
            "rx_copied_bytes",
        ),
        Key(
            "rx_copybuf_bytes",
            "int",
            "B",
            "bytes TCP_ZEROCOPY_RECEIVE copied into its copy buffer inside the call, what it could not map (null "
            "unless receive mmap)",
            True,
            "rx_copybuf_bytes",
        ),
        Key(
            "sink_datagrams",
            "int",
            "count",
            "datagrams the sink device's qdisc dropped in the window; bytes are counted from them (null unless --path "
            "sink)",
            True,
            "sink_datagrams",
        ),
    ),
}
# The servers experiment: a model's server (serve_main.c) and the load client.
RESULTS["model_server"] = (
    Key("role", "str", "", "server"),
    Key("model", "str", "", "how the server waits for connections (csrc/wait_MODEL.c)", column="model"),
    Key("size", "int", "B", "response size"),
    Key("connections", "int", "", "connections the client opened, busy and idle"),
    _CONGESTION,
    _SOCKET_BUFFER,
    *_USAGE,
)
RESULTS["load_client"] = (
    Key("role", "str", "", "client"),
    Key("size", "int", "B", "response size"),
    Key("connections", "int", "", "connections kept busy: one request outstanding each, or a share of the rate"),
    Key("idle_connections", "int", "", "connections opened besides and silent throughout"),
    Key("offered_rate", "int", "1/s", "requests per second sent on a schedule (0: closed loop)"),
    Key("threads", "int", "", "threads driving them"),
    Key("measured_s", "float", "s", "length of the measured window", column="measured_s"),
    *_WINDOW,
    Key("requests", "int", "count", "round trips completed in the window", column="messages"),
    Key("requests_per_s", "float", "1/s", "requests / measured_s", column="requests_per_s"),
    Key("bytes", "int", "B", "response bytes received in the window", column="bytes"),
    Key("throughput_gbps", "float", "Gbit/s", "bytes x 8 / measured_s / 1e9", column="throughput_gbps"),
    *_LATENCY,
    Key(
        "issue_lag_p99_us",
        "float",
        "us",
        "99th percentile of how late the client sent a request of the window against its schedule (null: closed loop)",
        True,
        "issue_lag_p99_us",
    ),
    Key(
        "connections_served",
        "int",
        "count",
        "connections with a request completed in the window",
        column="connections_served",
    ),
    _CONGESTION,
    _SOCKET_BUFFER,
    Key(
        "fairness",
        "float",
        "",
        "Jain's index over the connections' completed requests (null: none completed)",
        True,
        "fairness",
    ),
    *_USAGE,
)
# A calibration-like probe the harness runs around each trial (csrc/speed_probe.c).
RESULTS["speed_probe"] = (
    Key("ns_per_iteration", "float", "ns", "median time of one step of a chain of dependent multiplications"),
    Key("copy_ns_per_byte", "float", "ns/B", "median time per byte of copying 2 MiB (page-aligned, hot)"),
    Key("on_cpu", "float", "", "share of the probe's wall time its thread was on a CPU"),
)
# The calibration programs (copylab.calibration.measurement), run once when a sweep starts and by ./inv calibrate.
RESULTS["memcpy_bandwidth"] = (
    Key("buffer_mib", "int", "MiB", "the buffer copied, and its copy's size"),
    Key("runs", "int", "count", "copies timed"),
    Key("memcpy_gbps", "float", "Gbit/s", "the fastest copy: bytes x 8 / its time"),
)
RESULTS["copy_cost"] = (
    Key("passes", "int", "count", "how many times every point was measured"),
    Key(
        "points",
        "list",
        "",
        "one object per working set, path and placement: working_set_bytes (B, source and destination), path "
        "(memcpy or read), offset (B, the destination's offset from the source modulo a page), and one value per "
        "pass of ns_per_byte (ns/B) and on_cpu (the share of the wall time the thread was on a CPU)",
    ),
)
SIDES = {"server": "snd", "client": "rcv", "model_server": "snd", "load_client": "rcv"}
_TYPES: dict[Kind, tuple[type, ...]] = {"int": (int,), "float": (int, float), "str": (str,), "list": (list,)}


def json_object(stdout: str) -> dict[str, Any]:
    """The one JSON object a program printed (a wrapped tool's too)."""
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        raise ContractError("printed no JSON result") from None
    if not isinstance(result, dict):
        raise ContractError("printed something other than one JSON object")
    return result


def parse(role: str, stdout: str) -> dict[str, Any]:
    """The one JSON object a program of ROLE printed, checked key by key against RESULTS[role]."""
    result = json_object(stdout)
    keys = RESULTS[role]
    unknown = sorted(set(result) - {key.name for key in keys})
    if unknown:
        raise ContractError(f"printed undeclared key(s) {', '.join(unknown)} (see copylab/declarations/contract.py)")
    for key in keys:
        if key.name not in result:
            raise ContractError(f"did not print the key {key.name}")
        value = result[key.name]
        if value is None:
            if not key.nullable:
                raise ContractError(f"printed null for {key.name}")
        elif isinstance(value, bool) or not isinstance(value, _TYPES[key.kind]):
            raise ContractError(f"printed {key.name} = {value!r}, not a JSON {key.kind}")
    return result


def columns(role: str, result: dict[str, Any]) -> dict[str, Any]:
    """The trials.csv columns a parsed result of ROLE fills."""
    side = SIDES[role]
    return {key.column.format(side=side): result[key.name] for key in RESULTS[role] if key.column}
