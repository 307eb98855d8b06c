"""One trial: a fresh server and a fresh client process, one row of trials.csv.

The implementation's driver (copylab.measure.running.drivers) says how its two ends are started and what they
printed; this module runs them on the sweep's testbed (copylab.testbeds.testbed): the server on its server end,
the client on its client end, each under perf stat (when perf is there and the driver can mark its window),
enabled only inside the measured window.  Whatever happens, both processes, their perf wrappers and the trial's
fifos are gone on return.
"""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from datetime import UTC, datetime
from typing import Any

from copylab.declarations.schema import PERF_EVENTS
from copylab.measure.running import drivers
from copylab.measure.running.drivers import GRACE_S, Driver, TrialFailed
from copylab.measure.running.host_speed import trial_speed
from copylab.measure.running.profiling import cpu_set
from copylab.measure.running.spec import TrialSettings, TrialSpec, cpus_for
from copylab.measure.running.window import Window
from copylab.programs.perf import PerfRun, PerfSupport
from copylab.testbeds.testbed import End, EndLost, Started

# Beyond the trial's own bound, how long an end lets a process live if nobody is left to end it.
ORPHAN_MARGIN_S = 30.0


def _pinned(cpu: str | None, command: list[str]) -> list[str]:
    return ["taskset", "-c", cpu, *command] if cpu is not None else command


def measured_window_s(spec: TrialSpec, settings: TrialSettings) -> float:
    """Warm-up + measured window the trial is meant to spend; the rest of its wall time is harness."""
    return drivers.of(spec.implementation).window_s(settings)


@contextmanager
def _perf_files(settings: TrialSettings) -> Iterator[dict[str, tuple[End, PerfRun]]]:
    """Each side's perf output and control fifos, in a scratch directory on its own end."""
    # The sweep's name in the path lets anyone find this sweep's processes by their arguments.
    prefix = f"copylab-trial-{settings.sweep}-"
    with ExitStack() as stack:
        runs = {}
        for side, end in (("snd", settings.testbed.server), ("rcv", settings.testbed.client)):
            directory = stack.enter_context(end.scratch(prefix))
            run = PerfRun(f"{directory}/{side}.perf", f"{directory}/{side}.ctl", f"{directory}/{side}.ack")
            end.make_fifos([run.control, run.ack])
            runs[side] = (end, run)
        yield runs


class _Processes:
    """Started processes, each in a process group of its own on its end, so the whole group can be ended."""

    def __init__(self) -> None:
        self.started: list[Started] = []

    def start(self, end: End, command: list[str], deadline_s: float) -> Started:
        process = end.start(command, deadline_s)
        self.started.append(process)
        return process

    def end_all(self) -> None:
        for process in self.started:
            process.kill()


def _failed(process: Started, stdout: str) -> bool:
    # perf stat exits 0 when its program is killed by a signal: a side that printed nothing failed too.
    return process.returncode != 0 or not stdout.strip()


def _error_line(role: str, process: Started, stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("Events ")]
    copylab_lines = [line for line in lines if line.startswith("copylab: error:")]
    status = f"exit status {process.returncode}" if process.returncode else "exited without printing a result"
    detail = (copylab_lines or lines or [status])[-1]
    if process.returncode is not None and process.returncode < 0:
        detail = f"killed by signal {-process.returncode}" + (f" ({detail})" if lines else "")
    return f"{role}: {detail.removeprefix('copylab: error: ')}"


def _perf_values(
    runs: dict[str, tuple[End, PerfRun]], support: PerfSupport, measured: bool
) -> tuple[dict[str, float], str]:
    values: dict[str, float] = {}
    missing = []
    for side, (end, run) in runs.items():
        counters = run.counters(support, end.read(run.output)) if measured else {e: (math.nan, "") for e in PERF_EVENTS}
        for event, suffix in PERF_EVENTS.items():
            value, reason = counters[event]
            values[f"{side}_{suffix}"] = value
            if math.isnan(value) and reason:
                missing.append(f"{side}_{suffix}: {reason}")
    return values, "; ".join(missing)


def _kernel_copies(settings: TrialSettings, window: Window | None) -> dict[str, Any]:
    if settings.kernel_copies is None:
        return {"kernel_copy_missing": "all: kernel copy accounting is off (no --kernel-copies)"}
    values, missing = settings.kernel_copies.columns(window)
    return {**values, "kernel_copy_missing": missing}


def _row_identity(spec: TrialSpec, settings: TrialSettings) -> dict[str, Any]:
    """The trial's row before it runs: what it is, the sweep's settings, when it started, and status ok."""
    return {
        "sweep": settings.sweep,
        "trial_id": spec.trial_id,
        "experiment": spec.implementation.experiment,
        "order_index": spec.order_index,
        "implementation": spec.implementation.name,
        "workload": spec.workload,
        "size_bytes": spec.size_bytes,
        "threads": spec.threads,
        "connections": spec.connections,
        "idle_connections": spec.idle_connections,
        "offered_rate": spec.offered_rate,
        "pinning": spec.pinning,
        "receive": spec.receive,
        "layout": spec.layout,
        "repetition": spec.repetition,
        "block_position": spec.block_position,
        **settings.columns(),
        "started_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "status": "ok",
        "error": "",
    }


def _commands(
    spec: TrialSpec,
    settings: TrialSettings,
    driver: Driver,
    cpus: tuple[str | None, str | None],
    runs: dict[str, tuple[End, PerfRun]],
    use_perf: bool,
) -> tuple[list[str], list[str]]:
    """The server's and the client's command lines: pinned to CPUS, and under perf stat if USE_PERF."""
    server_cpu, client_cpu = cpus
    server_cmd, client_cmd = driver.commands(spec, settings)
    server_cmd, client_cmd = _pinned(server_cpu, server_cmd), _pinned(client_cpu, client_cmd)
    if use_perf:
        server_cmd = [*runs["snd"][1].command(settings.perf), *server_cmd, *runs["snd"][1].program_options()]
        client_cmd = [*runs["rcv"][1].command(settings.perf), *client_cmd, *runs["rcv"][1].program_options()]
    return server_cmd, client_cmd


def _run_ends(
    settings: TrialSettings,
    driver: Driver,
    commands: tuple[list[str], list[str]],
    processes: _Processes,
    budget: float,
    started: float,
) -> tuple[str, str]:
    """Starts the server, then the client, and waits for both; returns their outputs, or raises TrialFailed with
    the cause when either failed."""
    server = processes.start(settings.testbed.server, commands[0], budget + ORPHAN_MARGIN_S)
    time.sleep(driver.declared.start_delay_s)
    client = processes.start(settings.testbed.client, commands[1], budget + ORPHAN_MARGIN_S)
    try:
        client_out, client_err = client.wait(budget)
    except subprocess.TimeoutExpired:
        raise TrialFailed(f"timed out after {budget:.0f} s") from None
    try:
        # A failed client can leave the server waiting for it: then the client's error is the cause.
        # Otherwise the server gets a few seconds to finish, but never beyond the trial's bound.
        left = budget - (time.monotonic() - started)
        wait = 1.0 if _failed(client, client_out) else min(5.0, max(1.0, left))
        server_out, server_err = server.wait(wait)
    except subprocess.TimeoutExpired:
        if _failed(client, client_out):
            raise TrialFailed(_error_line("client", client, client_err)) from None
        raise TrialFailed(f"server: still running {wait:.0f} s after the client ended") from None
    # Both sides' errors: whichever failed first is the cause, and either may have.
    errors = [
        _error_line(role, process, err)
        for role, process, out, err in (
            ("server", server, server_out, server_err),
            ("client", client, client_out, client_err),
        )
        if _failed(process, out)
    ]
    if errors:
        raise TrialFailed("; ".join(errors))
    return server_out, client_out


def _record_measurement(
    row: dict[str, Any],
    spec: TrialSpec,
    settings: TrialSettings,
    driver: Driver,
    runs: dict[str, tuple[End, PerfRun]],
    use_perf: bool,
    outputs: tuple[str, str],
) -> Window | None:
    """Adds what the ends measured and perf counted to ROW, refusing a trial that ran other settings than the
    sweep asked for; returns the measured window (what the kernel copies are counted over)."""
    server_out, client_out = outputs
    measured = driver.measurement(spec, server_out, client_out)
    for name, asked in settings.columns().items():
        if name in measured and measured[name] != asked:
            raise TrialFailed(f"ran {name} {measured[name]!r}, the sweep asked for {asked!r}")
    row.update(measured)
    window = driver.window(client_out)
    perf_values, missing = _perf_values(runs, settings.perf, use_perf)
    row.update(perf_values)
    row["perf_missing"] = missing if use_perf else settings.perf.unused_reason(driver.declared.unprofiled_reason)
    return window


def _sampled(settings: TrialSettings) -> AbstractContextManager[None]:
    """The sweep's sampler switched on while the ends run, when the sweep samples."""
    return settings.sampler.around_trial() if settings.sampler is not None else nullcontext()


def run_trial(spec: TrialSpec, settings: TrialSettings) -> dict[str, Any]:
    """Runs one trial and returns its row (status ok or failed, never raises TrialFailed)."""
    row = _row_identity(spec, settings)
    started = time.monotonic()
    driver = drivers.of(spec.implementation)
    use_perf = settings.perf.available and driver.declared.unprofiled_reason is None
    cpus = cpus_for(spec.pinning)
    budget = driver.window_s(settings) + GRACE_S
    processes = _Processes()
    try:
        if settings.kernel_copies is not None:
            settings.kernel_copies.renew()
        row.update(trial_speed(spec, settings, "before"))
        with _perf_files(settings) as runs:
            commands = _commands(spec, settings, driver, cpus, runs, use_perf)
            try:
                with _sampled(settings):
                    outputs = _run_ends(settings, driver, commands, processes, budget, started)
                window = _record_measurement(row, spec, settings, driver, runs, use_perf, outputs)
            finally:
                processes.end_all()
            if settings.sampler is not None:
                programs = tuple(command[0] for command in driver.commands(spec, settings))
                ends = driver.window_ends(outputs[1])
                settings.sampler.note(spec.trial_id, ends, (programs[0], programs[1]), cpu_set(cpus))
        row.update(trial_speed(spec, settings, "after"))
        # Last: bpftrace's flush that covers the window's end has come meanwhile, instead of being waited for.
        row.update(_kernel_copies(settings, window))
    except (TrialFailed, EndLost) as failure:
        row["status"], row["error"] = "failed", str(failure)
    row["trial_wall_s"] = time.monotonic() - started
    return row
