"""How an implementation's two ends are started and read: copylab's own program pair, or a wrapped tool.

A driver turns one trial into the server's and the client's command lines, and their outputs into
trials.csv columns.  An implementation declares its driver as data (copylab.vocabulary.implementation.DriverSpec);
runner() gives the driver that runs that spec, one class a kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from copylab.declarations import contract
from copylab.measure.running.spec import TrialSettings, TrialSpec
from copylab.measure.running.window import Window
from copylab.vocabulary.implementation import DriverKind, DriverSpec, Implementation

if TYPE_CHECKING:
    from copylab.testbeds.testbed import End

# How long a trial may overrun warm-up + duration before it is killed.
GRACE_S = 10.0


class TrialFailed(Exception):
    """The trial ran but did not produce a measurement."""


@dataclass(frozen=True)
class Driver:
    """What every driver does with its spec; subclasses say how to start and read their ends."""

    declared: DriverSpec

    def window_s(self, settings: TrialSettings) -> float:
        """Warm-up + measured window the trial is meant to spend; the rest of its wall time is harness."""
        return settings.warmup_s + settings.duration_s

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def unavailable(self, end: End, sanitize: str | None) -> str | None:
        """Why it cannot run on END (where the trials' servers run), in one line; None when it can."""
        raise NotImplementedError

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        raise NotImplementedError

    def window(self, client_out: str) -> Window | None:
        """The measured window, as the client reports it (its ends, its pid, the bytes it received), or None."""
        return None

    def window_ends(self, client_out: str) -> tuple[int, int] | None:
        """The measured window's ends (CLOCK_MONOTONIC, ns) as the client reports them, or None."""
        return None


def runner(spec: DriverSpec) -> Driver:
    """The driver that starts and reads the ends SPEC declares."""
    kinds: dict[DriverKind, type[Driver]] = {
        DriverKind.PROGRAM_PAIR: CopylabPrograms,
        DriverKind.MODEL_PAIR: ModelPrograms,
        DriverKind.IPERF3: Iperf3,
    }
    return kinds[spec.kind](spec)


def of(implementation: Implementation) -> Driver:
    """IMPLEMENTATION's driver as measure runs it."""
    return runner(implementation.driver)


def _client_window(client_out: str) -> Window | None:
    result = contract.json_object(client_out)
    if result.get("sink_datagrams") is not None:
        return None  # the sink's client counts a device's drops: it receives nothing the kernel could copy

    # What the receive calls took (sock_recv_length): neither the mapped pages nor TCP_ZEROCOPY_RECEIVE's copies.
    taken = result["bytes"] - (result.get("rx_mapped_bytes") or 0) - (result.get("rx_copybuf_bytes") or 0)
    return Window(result["window_begin_ns"], result["window_end_ns"], result["pid"], taken)


def _merged(row: dict[str, Any], columns: dict[str, Any], side: str) -> None:
    """Adds a side's COLUMNS to ROW; a column both sides fill (the congestion control) must agree."""
    for name, value in columns.items():
        if name in row and row[name] != value:
            raise TrialFailed(f"{side}: ran {name} {value!r}, the other side {row[name]!r}")
        row[name] = value


def _probe(end: End, server: str) -> str | None:
    """Asks a copylab server whether it can run (--probe): None, or its one-line reason."""
    result = end.run([server, "--probe"])
    if result.returncode == 0:
        return None
    if result.returncode == 127:  # a shell's "not found": the program did not build there
        return f"{server.rsplit('/', 1)[-1]} is not built on the {end.label}"
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("copylab: error: ") if lines else f"--probe exited {result.returncode}"


class CopylabPrograms(Driver):
    """VARIANT_server sends through csrc/send_VARIANT.c; VARIANT_client receives (the same code for every variant)."""

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        common = ["--port", str(settings.port), "--size", str(spec.size_bytes), "--mode", spec.workload]
        server = [
            settings.server_program(self.declared.server),
            "--bind",
            settings.server_address,
            *common,
            "--timeout",
            str(self.window_s(settings) + GRACE_S),
        ]
        if self.declared.from_file:
            server += ["--file", settings.message_file(spec.size_bytes)]
        if self.declared.layouts:
            server += ["--layout", spec.layout]
        server += settings.program_arguments(self.declared.server_role)
        client = [
            settings.client_program(self.declared.client),
            "--connect",
            settings.server_address,
            *common,
            "--threads",
            str(spec.threads),
            "--duration",
            str(settings.duration_s),
            "--warmup",
            str(settings.warmup_s),
            "--receive",
            spec.receive,
            *settings.program_arguments(self.declared.client_role),
        ]
        if settings.verify:
            client.append("--verify")
        return server, client

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for role, stdout in (("server", server_out), ("client", client_out)):
            try:
                result = contract.parse(role, stdout)
            except contract.ContractError as error:
                raise TrialFailed(f"{role}: {error}") from None
            asked = {
                **({"receive": spec.receive} if role == "client" else {}),
                **({"layout": spec.layout} if role == "server" and self.declared.layouts else {}),
                "role": role,
                "variant": self.declared.name,
                "mode": spec.workload,
                "size": spec.size_bytes,
                "threads": spec.threads,
            }
            for key, value in asked.items():
                if result[key] != value:
                    raise TrialFailed(f"{role}: ran {key} {result[key]!r}, the trial asked for {value!r}")
            _merged(row, contract.columns(role, result), role)
        return row

    def unavailable(self, end: End, sanitize: str | None) -> str | None:
        return _probe(end, end.program(self.declared.server, sanitize))

    def window(self, client_out: str) -> Window | None:
        return _client_window(client_out)

    def window_ends(self, client_out: str) -> tuple[int, int] | None:
        result = contract.json_object(client_out)
        begin, end = result.get("window_begin_ns"), result.get("window_end_ns")
        return (int(begin), int(end)) if isinstance(begin, int) and isinstance(end, int) else None


def iperf3_whole_seconds(seconds: float) -> int:
    """iperf3 3.12 takes whole seconds for --time and --omit: round up, never down."""
    return max(1, math.ceil(seconds - 1e-9))


class Iperf3(Driver):
    """iperf3 on the same link: same message size (-l), one stream per thread, the server sending (--reverse)."""

    def window_s(self, settings: TrialSettings) -> float:
        return float(iperf3_whole_seconds(settings.warmup_s) + iperf3_whole_seconds(settings.duration_s))

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        port = str(settings.port)
        server = ["iperf3", "--server", "--one-off", "--bind", settings.server_address, "--port", port]
        client = [
            "iperf3",
            "--client",
            settings.server_address,
            "--port",
            port,
            "--reverse",
            "--json",
            "--length",
            str(spec.size_bytes),
            "--parallel",
            str(spec.threads),
            "--time",
            str(iperf3_whole_seconds(settings.duration_s)),
            "--omit",
            str(iperf3_whole_seconds(settings.warmup_s)),
            "--congestion",
            settings.value("congestion_control"),
        ]
        if settings.value("socket_buffer"):  # both buffers at both ends (what it got: _iperf3_socket_buffer)
            client += ["--window", str(settings.value("socket_buffer"))]
        return server, client

    def unavailable(self, end: End, sanitize: str | None) -> str | None:
        try:
            result = end.run(list(self.declared.version_command))
        except FileNotFoundError:
            return "iperf3 is not installed"
        return None if result.returncode == 0 else f"iperf3 is not installed on the {end.label}"

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        try:
            result = contract.json_object(client_out)
        except contract.ContractError as error:
            raise TrialFailed(f"client: {error}") from None
        if "error" in result:
            raise TrialFailed(f"iperf3: {result['error']}")
        end = result.get("end", {})
        received, sent = end.get("sum_received", {}), end.get("sum_sent", {})
        seconds, nbytes = received.get("seconds"), received.get("bytes")
        if not seconds or nbytes is None:
            raise TrialFailed("iperf3: no receiver summary in its JSON")
        row = {
            "measured_s": seconds,
            "bytes": nbytes,
            "messages": nbytes // spec.size_bytes,
            "throughput_gbps": nbytes * 8 / seconds / 1e9,
            "retransmits": sent.get("retransmits"),
        }
        for side in ("sender", "receiver"):
            _merged(row, {"congestion_control": end.get(f"{side}_tcp_congestion")}, f"iperf3's {side}")
        row["socket_buffer_bytes"] = _iperf3_socket_buffer(result.get("start", {}))
        return row


def _iperf3_socket_buffer(start: dict[str, Any]) -> int:
    """The buffer iperf3's connections got, as --socket-buffer would ask for it (0: sized by the kernel).  iperf3
    asks without forcing, and the kernel caps the size at net.core.[rw]mem_max without a word: its client's
    buffers (the server's are capped alike) say what it got, doubled by the kernel."""
    if not start.get("sock_bufsize"):
        return 0
    smaller: int = min(start.get("sndbuf_actual", 0), start.get("rcvbuf_actual", 0))
    return smaller // 2


class ModelPrograms(Driver):
    """MODEL_server answers requests while waiting for connections its way (csrc/wait_MODEL.c); load_client keeps
    the trial's connections busy with one request outstanding each."""

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        address, port, size = settings.server_address, str(settings.port), str(spec.size_bytes)
        server = [
            *(settings.server_program(self.declared.server), "--bind", address, "--port", port),
            *("--size", size, "--timeout", str(self.window_s(settings) + GRACE_S)),
            *settings.program_arguments(self.declared.server_role),
        ]
        client = [
            *(settings.client_program(self.declared.client), "--connect", address, "--port", port),
            *("--size", size, "--connections", str(spec.connections), "--threads", str(spec.threads)),
            *("--idle-connections", str(spec.idle_connections), "--rate", str(spec.offered_rate)),
            *("--duration", str(settings.duration_s), "--warmup", str(settings.warmup_s)),
            *(["--verify"] if settings.verify else []),
            *settings.program_arguments(self.declared.client_role),
        ]
        return server, client

    def unavailable(self, end: End, sanitize: str | None) -> str | None:
        return _probe(end, end.program(self.declared.server, sanitize))

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        row: dict[str, Any] = {}
        # the server holds the idle connections like the busy ones
        held = spec.connections + spec.idle_connections
        for role, stdout, asked in (
            ("model_server", server_out, {"size": spec.size_bytes, "connections": held, "model": self.declared.name}),
            (
                "load_client",
                client_out,
                {
                    "size": spec.size_bytes,
                    "connections": spec.connections,
                    "idle_connections": spec.idle_connections,
                    "offered_rate": spec.offered_rate,
                    "threads": spec.threads,
                },
            ),
        ):
            side = role.split("_")[-1]
            try:
                result = contract.parse(role, stdout)
            except contract.ContractError as error:
                raise TrialFailed(f"{side}: {error}") from None
            for key, value in asked.items():
                if result[key] != value:
                    raise TrialFailed(f"{side}: ran {key} {result[key]!r}, the trial asked for {value!r}")
            _merged(row, contract.columns(role, result), side)
        return row

    def window(self, client_out: str) -> Window | None:
        return _client_window(client_out)
