"""How an implementation's two ends are started and read: copylab's own program pair, or a wrapped tool.

A driver turns one trial into the server's and the client's command lines, and their outputs into
trials.csv columns.  The registry (copylab.implementations) gives each implementation its driver.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from copylab import contract
from copylab.paths import program
from copylab.spec import TrialSettings, TrialSpec

# How long a trial may overrun warm-up + duration before it is killed.
GRACE_S = 10.0


class TrialFailed(Exception):
    """The trial ran but did not produce a measurement."""


# Runs a command where a trial's server runs; used to ask whether an implementation can run there.
Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


class Driver:
    """What every driver declares; subclasses say how to start and read their ends."""

    # csrc/ programs it runs (./inv build makes them).
    programs: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ("stream", "rr")
    receive_modes: tuple[str, ...] = ("copy", "truncate", "mmap")
    # Why perf cannot count it inside its measured window; None: it can.
    unprofiled_reason: str | None = None
    # How long the client waits after the server starts (a client that does not retry a refused connect).
    start_delay_s: float = 0.0
    # The command that prints the version of the external tool it wraps, recorded in the manifest.
    version_command: tuple[str, ...] = ()

    def window_s(self, settings: TrialSettings) -> float:
        """Warm-up + measured window the trial is meant to spend; the rest of its wall time is harness."""
        return settings.warmup_s + settings.duration_s

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        raise NotImplementedError

    def unavailable(self, run: Runner, sanitize: str | None) -> str | None:
        """Why it cannot run where RUN runs commands, in one line; None when it can."""
        raise NotImplementedError

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        raise NotImplementedError


def _probe(run: Runner, server: Path) -> str | None:
    """Asks a copylab server whether it can run (--probe): None, or its one-line reason."""
    result = run([str(server), "--probe"])
    if result.returncode == 0:
        return None
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    return lines[-1].removeprefix("copylab: error: ") if lines else f"--probe exited {result.returncode}"


@dataclass(frozen=True)
class CopylabPrograms(Driver):
    """VARIANT_server sends through csrc/send_VARIANT.c; VARIANT_client receives (the same code for every variant)."""

    variant: str
    from_file: bool = False  # it serves the message file (--file), not messages from memory

    @property
    def server(self) -> str:
        return f"{self.variant}_server"

    @property
    def client(self) -> str:
        return f"{self.variant}_client"

    @property
    def programs(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.server, self.client)

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        pair = settings.pair
        common = ["--port", str(settings.port), "--size", str(spec.size_bytes), "--mode", spec.workload]
        server = [
            str(program(self.server, settings.sanitize)),
            "--bind",
            pair.server_address,
            *common,
            "--timeout",
            str(self.window_s(settings) + GRACE_S),
        ]
        if self.from_file:
            if settings.files is None:
                raise TrialFailed("server: no directory for its message file")
            server += ["--file", str(settings.files / f"messages-{spec.size_bytes}.bin")]
        client = [
            str(program(self.client, settings.sanitize)),
            "--connect",
            pair.server_address,
            *common,
            "--threads",
            str(spec.threads),
            "--duration",
            str(settings.duration_s),
            "--warmup",
            str(settings.warmup_s),
            "--receive",
            spec.receive,
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
                "role": role,
                "variant": self.variant,
                "mode": spec.workload,
                "size": spec.size_bytes,
                "threads": spec.threads,
            }
            for key, value in asked.items():
                if result[key] != value:
                    raise TrialFailed(f"{role}: ran {key} {result[key]!r}, the trial asked for {value!r}")
            row.update(contract.columns(role, result))
        return row

    def unavailable(self, run: Runner, sanitize: str | None) -> str | None:
        return _probe(run, program(self.server, sanitize))


def iperf3_whole_seconds(seconds: float) -> int:
    """iperf3 3.12 takes whole seconds for --time and --omit: round up, never down."""
    return max(1, math.ceil(seconds - 1e-9))


class Iperf3(Driver):
    """iperf3 on the same link: same message size (-l), one stream per thread, the server sending (--reverse)."""

    workloads = ("stream",)
    receive_modes = ("copy",)
    unprofiled_reason = "iperf3 cannot mark the measured window for perf"
    start_delay_s = 0.15  # iperf3's client does not retry a refused connection
    version_command = ("iperf3", "--version")

    def window_s(self, settings: TrialSettings) -> float:
        return float(iperf3_whole_seconds(settings.warmup_s) + iperf3_whole_seconds(settings.duration_s))

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        pair, port = settings.pair, str(settings.port)
        server = ["iperf3", "--server", "--one-off", "--bind", pair.server_address, "--port", port]
        client = [
            "iperf3",
            "--client",
            pair.server_address,
            "--bind",
            pair.client_address,
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
        ]
        return server, client

    def unavailable(self, run: Runner, sanitize: str | None) -> str | None:
        try:
            result = run(list(self.version_command))
        except FileNotFoundError:
            return "iperf3 is not installed"
        return None if result.returncode == 0 else "iperf3 is not installed"

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
        return {
            "measured_s": seconds,
            "bytes": nbytes,
            "messages": nbytes // spec.size_bytes,
            "throughput_gbps": nbytes * 8 / seconds / 1e9,
            "retransmits": sent.get("retransmits"),
        }


@dataclass(frozen=True)
class ModelPrograms(Driver):
    """MODEL_server answers requests while waiting for connections its way (csrc/wait_MODEL.c); load_client keeps
    the trial's connections busy with one request outstanding each."""

    model: str
    workloads = ("rr",)
    receive_modes = ("copy",)

    @property
    def server(self) -> str:
        return f"{self.model}_server"

    @property
    def programs(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.server, "load_client")

    def commands(self, spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
        pair, port, size = settings.pair, str(settings.port), str(spec.size_bytes)
        server = [
            *(str(program(self.server, settings.sanitize)), "--bind", pair.server_address, "--port", port),
            *("--size", size, "--timeout", str(self.window_s(settings) + GRACE_S)),
        ]
        client = [
            *(str(program("load_client", settings.sanitize)), "--connect", pair.server_address, "--port", port),
            *("--size", size, "--connections", str(spec.connections), "--threads", str(spec.threads)),
            *("--duration", str(settings.duration_s), "--warmup", str(settings.warmup_s)),
        ]
        return server, client

    def unavailable(self, run: Runner, sanitize: str | None) -> str | None:
        return _probe(run, program(self.server, sanitize))

    def measurement(self, spec: TrialSpec, server_out: str, client_out: str) -> dict[str, Any]:
        row: dict[str, Any] = {}
        asked_of_both = {"size": spec.size_bytes, "connections": spec.connections}
        for role, stdout, asked in (
            ("model_server", server_out, {**asked_of_both, "model": self.model}),
            ("load_client", client_out, {**asked_of_both, "threads": spec.threads}),
        ):
            side = role.split("_")[-1]
            try:
                result = contract.parse(role, stdout)
            except contract.ContractError as error:
                raise TrialFailed(f"{side}: {error}") from None
            for key, value in asked.items():
                if result[key] != value:
                    raise TrialFailed(f"{side}: ran {key} {result[key]!r}, the trial asked for {value!r}")
            row.update(contract.columns(role, result))
        return row
