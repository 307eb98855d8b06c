"""What the C programs print: one JSON object per program, every key declared here with its type and unit.

A key that fills a trials.csv column is the column's quantity: its type, unit and meaning are the column's,
declared once in copylab.declarations.schema (or in the setting that declares the column), never again here.
The drivers read results only through parse(); tests/test_contract.py checks that the C sources emit
exactly these keys and that every program's real output parses.  A missing, unknown, null or mistyped
key is an error that names it, never an empty column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from copylab.declarations.schema import COLUMN_BY_NAME, SIDE_QUANTITIES

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


_KINDS: dict[str, Kind] = {"int": "int", "float": "float", "str": "str"}


def _stored(column: str, name: str | None = None, nullable: bool = False) -> Key:
    """The key a program prints for COLUMN's quantity ("{side}_..." for a side's own), under NAME when the program
    calls it otherwise, NULLABLE when the program prints null where the column stays empty."""
    if column.startswith("{side}_"):
        quantity = SIDE_QUANTITIES[column.removeprefix("{side}_")]
        kind, unit, meaning = quantity.kind, quantity.unit, quantity.meaning("the program")
    else:
        declared = COLUMN_BY_NAME[column]
        kind, unit, meaning = declared.kind, declared.unit, declared.description
    return Key(name or column.removeprefix("{side}_"), _KINDS[kind], unit, meaning, nullable, column)


def _checked(column: str, name: str | None = None) -> Key:
    """The key a program prints for what the trial asked of it, COLUMN's quantity (under NAME when the program calls
    it otherwise): checked against the trial, not stored again, so its type, unit and meaning are the column's."""
    declared = COLUMN_BY_NAME[column]
    return Key(name or column, _KINDS[declared.kind], declared.unit, declared.description)


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
    _checked("workload", "mode"),
    _checked("size_bytes", "size"),
    _checked("threads"),
)
_USAGE = tuple(_stored(f"{{side}}_{name}") for name in SIDE_QUANTITIES)
# Both ends report it; a trial whose ends disagree, or differ from what the sweep asked, fails
# (copylab.measure.running.drivers).
_CONGESTION = _stored("congestion_control")
# Both ends report it too, and a trial whose ends differ from the sweep fails alike.
_SOCKET_BUFFER = _stored("socket_buffer_bytes", "socket_buffer")
# null unless the sending path uses MSG_ZEROCOPY
_ZERO_COPY = tuple(
    _stored(name, nullable=True) for name in ("zc_sends", "zc_completed", "zc_copied", "zc_notifications", "zc_enobufs")
)
# null in stream mode
_LATENCY = tuple(_stored(f"latency_{name}_us", nullable=True) for name in ("mean", "p50", "p99", "p999", "max"))

RESULTS: dict[str, tuple[Key, ...]] = {
    "server": (
        *_IDENTITY,
        _checked("layout"),
        *_USAGE,
        _stored("retransmits"),
        _stored("srtt_us"),
        _CONGESTION,
        _SOCKET_BUFFER,
        _stored("snd_send_buffer_bytes", "send_buffer_bytes"),
        *_ZERO_COPY,
        _stored("zc_pages_per_message", nullable=True),
        _stored("sink_segment_bytes", nullable=True),  # null unless --path sink
    ),
    "client": (
        *_IDENTITY,
        _checked("receive"),
        _stored("measured_s"),
        *_WINDOW,
        _stored("bytes"),
        _stored("messages"),
        _stored("rcv_receive_calls", "receive_calls"),
        _stored("throughput_gbps"),
        *_LATENCY,
        _CONGESTION,
        _SOCKET_BUFFER,
        _stored("rcv_receive_buffer_bytes", "receive_buffer_bytes"),
        *_USAGE,
        # null unless receive mmap
        _stored("rx_mapped_bytes", nullable=True),
        _stored("rx_copied_bytes", nullable=True),
        _stored("rx_copybuf_bytes", nullable=True),
        _stored("sink_datagrams", nullable=True),  # null unless --path sink
    ),
}
# The servers experiment: a model's server (serve_main.c) and the load client.
RESULTS["model_server"] = (
    Key("role", "str", "", "server"),
    _stored("model"),
    _checked("size_bytes", "size"),
    # Not the connections column (those kept busy): what the server held, the idle ones too.
    Key("connections", "int", "", "connections the client opened, busy and idle"),
    _CONGESTION,
    _SOCKET_BUFFER,
    *_USAGE,
)
RESULTS["load_client"] = (
    Key("role", "str", "", "client"),
    _checked("size_bytes", "size"),
    _checked("connections"),
    _checked("idle_connections"),
    _checked("offered_rate"),
    _checked("threads"),
    _stored("measured_s"),
    *_WINDOW,
    _stored("messages", "requests"),
    _stored("requests_per_s"),
    _stored("bytes"),
    _stored("throughput_gbps"),
    *_LATENCY,
    _stored("issue_lag_p99_us", nullable=True),  # null in a closed loop
    _stored("connections_served"),
    _CONGESTION,
    _SOCKET_BUFFER,
    _stored("fairness", nullable=True),  # null when no connection completed a request
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
