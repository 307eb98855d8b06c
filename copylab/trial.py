"""One trial: a fresh server process and a fresh client process, one row of trials.csv.

The server runs in the server namespace and sends; the client runs in the
client namespace and receives.  Each runs under perf stat (when perf is
there), enabled only inside the measured window.  Whatever happens, both
processes, their perf wrappers and the trial's fifos are gone on return.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from copylab.netns import NamespacePair, exec_prefix
from copylab.paths import program
from copylab.perf import PerfRun, PerfSupport
from copylab.schema import PERF_EVENTS

PORT = 5201
# How long a trial may overrun warm-up + duration before it is killed.
GRACE_S = 10.0


@dataclass(frozen=True)
class TrialSpec:
    trial_id: str
    order_index: int
    implementation: str
    workload: str
    size_bytes: int
    threads: int
    pinning: str
    repetition: int


@dataclass(frozen=True)
class TrialSettings:
    sweep: str
    pair: NamespacePair
    perf: PerfSupport
    duration_s: float
    warmup_s: float
    verify: bool = False
    sanitize: str | None = None
    port: int = PORT


class TrialFailed(Exception):
    """The trial ran but did not produce a measurement."""


def cpus_for(pinning: str) -> tuple[str | None, str | None]:
    """CPU lists for (server, client)."""
    return {"none": (None, None), "same_cpu": ("0", "0"), "split_cpu": ("0", "1")}[pinning]


def _pinned(cpu: str | None, command: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *command] if cpu is not None else command


def iperf3_whole_seconds(seconds: float) -> int:
    """iperf3 3.12 takes whole seconds for --time and --omit: round up, never down."""
    return max(1, math.ceil(seconds - 1e-9))


def measured_window_s(spec: TrialSpec, settings: TrialSettings) -> float:
    """Warm-up + measured window the trial is meant to spend; the rest of its wall time is harness."""
    if spec.implementation == "iperf3":
        return float(iperf3_whole_seconds(settings.warmup_s) + iperf3_whole_seconds(settings.duration_s))
    return settings.warmup_s + settings.duration_s


def _copylab_commands(spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
    pair = settings.pair
    common = ["--port", str(settings.port), "--size", str(spec.size_bytes), "--mode", spec.workload]
    server = [str(program(f"{spec.implementation}_server", settings.sanitize)), "--bind", pair.server_address,
              *common, "--timeout", str(settings.warmup_s + settings.duration_s + GRACE_S)]
    client = [str(program(f"{spec.implementation}_client", settings.sanitize)), "--connect", pair.server_address,
              *common, "--threads", str(spec.threads), "--duration", str(settings.duration_s),
              "--warmup", str(settings.warmup_s)]
    if settings.verify:
        client.append("--verify")
    return server, client


def _iperf3_commands(spec: TrialSpec, settings: TrialSettings) -> tuple[list[str], list[str]]:
    pair = settings.pair
    server = ["iperf3", "--server", "--one-off", "--bind", pair.server_address, "--port", str(settings.port)]
    # --reverse: the server sends and the client receives, as in copylab's programs.
    client = ["iperf3", "--client", pair.server_address, "--bind", pair.client_address, "--port",
              str(settings.port), "--reverse", "--json", "--length", str(spec.size_bytes), "--parallel",
              str(spec.threads), "--time", str(iperf3_whole_seconds(settings.duration_s)),
              "--omit", str(iperf3_whole_seconds(settings.warmup_s))]
    return server, client


@contextmanager
def _trial_files(sweep: str) -> Iterator[dict[str, PerfRun]]:
    # The sweep's name in the path lets anyone find this sweep's processes by their arguments.
    directory = Path(tempfile.mkdtemp(prefix=f"copylab-trial-{sweep}-"))
    try:
        runs = {}
        for side in ("snd", "rcv"):
            run = PerfRun(directory / f"{side}.perf", directory / f"{side}.ctl", directory / f"{side}.ack")
            os.mkfifo(run.control, 0o600)
            os.mkfifo(run.ack, 0o600)
            runs[side] = run
        yield runs
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _Processes:
    """Started processes, each in its own session so the whole group can be ended."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, command: list[str]) -> subprocess.Popen[str]:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        self.started.append(process)
        return process

    def end_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for process in self.started:
            try:
                process.communicate(timeout=5)
            except (subprocess.TimeoutExpired, ValueError):
                pass


def _failed(process: subprocess.Popen[str], stdout: str) -> bool:
    # perf stat exits 0 when its program is killed by a signal: a side that printed nothing failed too.
    return process.returncode != 0 or not stdout.strip()


def _error_line(role: str, process: subprocess.Popen[str], stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("Events ")]
    copylab_lines = [line for line in lines if line.startswith("copylab: error:")]
    status = f"exit status {process.returncode}" if process.returncode else "exited without printing a result"
    detail = (copylab_lines or lines or [status])[-1]
    if process.returncode is not None and process.returncode < 0:
        detail = f"killed by signal {-process.returncode}" + (f" ({detail})" if lines else "")
    return f"{role}: {detail.removeprefix('copylab: error: ')}"


def _parse_json(role: str, stdout: str) -> dict[str, Any]:
    try:
        result = json.loads(stdout)
    except json.JSONDecodeError:
        raise TrialFailed(f"{role}: printed no JSON result") from None
    if not isinstance(result, dict):
        raise TrialFailed(f"{role}: printed something other than one JSON object")
    return result


def _side_values(prefix: str, result: dict[str, Any]) -> dict[str, Any]:
    return {
        f"{prefix}_cpu_user_s": result.get("cpu_user_s"),
        f"{prefix}_cpu_sys_s": result.get("cpu_sys_s"),
        f"{prefix}_ctx_voluntary": result.get("ctx_voluntary"),
        f"{prefix}_ctx_involuntary": result.get("ctx_involuntary"),
    }


def _copylab_measurement(server: dict[str, Any], client: dict[str, Any]) -> dict[str, Any]:
    row = {key: client.get(key) for key in ("measured_s", "bytes", "messages", "throughput_gbps")}
    for key in ("mean", "p50", "p99", "max"):
        row[f"latency_{key}_us"] = client.get(f"latency_{key}_us")
    row.update(_side_values("snd", server))
    row.update(_side_values("rcv", client))
    row["retransmits"] = server.get("retransmits")
    for key in ("zc_sends", "zc_completed", "zc_copied", "zc_notifications"):
        row[key] = server.get(key)
    return row


def _iperf3_measurement(client: dict[str, Any]) -> dict[str, Any]:
    if "error" in client:
        raise TrialFailed(f"iperf3: {client['error']}")
    end = client.get("end", {})
    received, sent = end.get("sum_received", {}), end.get("sum_sent", {})
    seconds, nbytes = received.get("seconds"), received.get("bytes")
    if not seconds or nbytes is None:
        raise TrialFailed("iperf3: no receiver summary in its JSON")
    size = client["start"]["test_start"]["blksize"]
    return {
        "measured_s": seconds, "bytes": nbytes, "messages": nbytes // size,
        "throughput_gbps": nbytes * 8 / seconds / 1e9, "retransmits": sent.get("retransmits"),
    }


def _perf_values(runs: dict[str, PerfRun], support: PerfSupport, measured: bool) -> tuple[dict[str, float], str]:
    values: dict[str, float] = {}
    missing = []
    for side, run in runs.items():
        counters = run.counters(support) if measured else {e: (math.nan, "") for e in PERF_EVENTS}
        for event, suffix in PERF_EVENTS.items():
            value, reason = counters[event]
            values[f"{side}_{suffix}"] = value
            if math.isnan(value) and reason:
                missing.append(f"{side}_{suffix}: {reason}")
    return values, "; ".join(missing)


def _perf_unused_reason(is_iperf3: bool, support: PerfSupport) -> str:
    if is_iperf3 and support.available:
        return "all: iperf3 cannot mark the measured window for perf"
    return "all: " + next(iter(support.unsupported.values()), "perf unavailable")


def run_trial(spec: TrialSpec, settings: TrialSettings) -> dict[str, Any]:
    """Runs one trial and returns its row (status ok or failed, never raises TrialFailed)."""
    row: dict[str, Any] = {
        "sweep": settings.sweep, "trial_id": spec.trial_id, "order_index": spec.order_index,
        "implementation": spec.implementation, "workload": spec.workload, "size_bytes": spec.size_bytes,
        "threads": spec.threads, "pinning": spec.pinning, "repetition": spec.repetition,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "status": "ok", "error": "",
    }
    started = time.monotonic()
    is_iperf3 = spec.implementation == "iperf3"
    use_perf = settings.perf.available and not is_iperf3
    server_cpu, client_cpu = cpus_for(spec.pinning)
    with _trial_files(settings.sweep) as runs:
        server_cmd, client_cmd = (_iperf3_commands if is_iperf3 else _copylab_commands)(spec, settings)
        if use_perf:
            server_cmd = [*runs["snd"].command(settings.perf), *_pinned(server_cpu, server_cmd),
                          *runs["snd"].program_options()]
            client_cmd = [*runs["rcv"].command(settings.perf), *_pinned(client_cpu, client_cmd),
                          *runs["rcv"].program_options()]
        else:
            server_cmd, client_cmd = _pinned(server_cpu, server_cmd), _pinned(client_cpu, client_cmd)
        processes = _Processes()
        try:
            server = processes.start([*exec_prefix(settings.pair.server), *server_cmd])
            if is_iperf3:
                time.sleep(0.15)  # iperf3's client does not retry a refused connection
            client = processes.start([*exec_prefix(settings.pair.client), *client_cmd])
            budget = measured_window_s(spec, settings) + GRACE_S
            try:
                client_out, client_err = client.communicate(timeout=budget)
            except subprocess.TimeoutExpired:
                raise TrialFailed(f"timed out after {budget:.0f} s") from None
            try:
                # A failed client can leave the server waiting for it: then the client's error is the cause.
                # Otherwise the server gets a few seconds to finish, but never beyond the trial's bound.
                left = budget - (time.monotonic() - started)
                wait = 1.0 if _failed(client, client_out) else min(5.0, max(1.0, left))
                server_out, server_err = server.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                if _failed(client, client_out):
                    raise TrialFailed(_error_line("client", client, client_err)) from None
                raise TrialFailed(f"server: still running {wait:.0f} s after the client ended") from None
            # Both sides' errors: whichever failed first is the cause, and either may have.
            errors = [_error_line(role, process, err) for role, process, out, err in
                      (("server", server, server_out, server_err), ("client", client, client_out, client_err))
                      if _failed(process, out)]
            if errors:
                raise TrialFailed("; ".join(errors))
            if is_iperf3:
                row.update(_iperf3_measurement(_parse_json("client", client_out)))
            else:
                row.update(_copylab_measurement(_parse_json("server", server_out),
                                                _parse_json("client", client_out)))
            perf_values, missing = _perf_values(runs, settings.perf, use_perf)
            row.update(perf_values)
            row["perf_missing"] = missing if use_perf else _perf_unused_reason(is_iperf3, settings.perf)
        except TrialFailed as failure:
            row["status"], row["error"] = "failed", str(failure)
        finally:
            processes.end_all()
    row["trial_wall_s"] = time.monotonic() - started
    return row
