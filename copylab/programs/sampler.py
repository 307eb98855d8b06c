"""perf record over a sweep: a sample of the running function, with its call chain, on the trials' CPUs.

One `perf record -e cpu-clock` runs for the whole sweep (starting perf takes a tenth of a second or more, too
long to pay per trial) and stays disabled but while a trial runs: the harness enables it through perf's control
fifo (--control fifo:CTL,ACK, as perf stat's is) just before a trial starts its ends and disables it when they are
gone.  Its clock is CLOCK_MONOTONIC (-k mono), the clock of the window each client reports, so the samples of a
trial are cut to its measured window exactly (copylab.programs.profile_reader).  cpu-clock is a software clock:
it samples where hardware counters are missing, as on these virtual machines, and needs root to see the kernel.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from copylab.error_catalogue import PERF_NO_ACK

# Samples per second per CPU.  Not a multiple of the kernel's tick, so that the samples do not fall in step with
# the timer's work.  About 100 samples in a 0.1 s window, pooled over a configuration's trials; `./inv bench`
# measures what it costs: at 1,999 per second, 3.6% of two_copy's throughput at 64 KiB (median of 7 pairs), past
# the goal of 3%; at 999, 1.5% on the same shared host.
SAMPLE_HZ = 999
EVENT = "cpu-clock"
ACK_TIMEOUT_S = 5.0
START_TIMEOUT_S = 30.0  # perf record lists every process's mappings before it answers its first command
STOP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SamplerUse:
    """Whether the sweep's trials are sampled, and if not why, in one line."""

    available: bool
    reason: str = ""  # why not, when not

    @property
    def description(self) -> str:
        return f"perf record -e {EVENT} -F {SAMPLE_HZ} -g" if self.available else f"not sampled: {self.reason}"


def refusal(local: bool, root: bool) -> str | None:
    """Why this sweep's trials cannot be sampled (LOCAL: both ends on this machine; ROOT: the sweep runs as root),
    in one line; None when they can."""
    if not local:
        return "the sampler runs only where both ends run on this machine (not between two hosts)"
    if not root or os.geteuid() != 0:
        return "sampling the kernel's functions with perf record needs root (this sweep runs without it)"
    try:
        # Without --no-bpf-event perf record takes a second to end (its thread that records BPF programs as they
        # load polls once a second), which every sweep would pay for a question the sampling itself does not ask.
        answer = subprocess.run(
            ["perf", "record", "-e", EVENT, "-a", "-g", "--no-bpf-event", "-o", "/dev/null", "--", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except FileNotFoundError:
        return "perf is not installed"
    except subprocess.TimeoutExpired:
        return "perf record did not finish sampling `true` within 30 s"
    if answer.returncode != 0:
        lines = [line for line in answer.stderr.splitlines() if line.strip()]
        return f"perf record cannot sample here: {lines[-1] if lines else f'exit status {answer.returncode}'}"
    return None


class Sampler:
    """perf record on CPUS (a CPU list; None: every CPU) writing DIRECTORY/samples.data, disabled until enabled."""

    def __init__(self, directory: Path, cpus: str | None) -> None:
        self.data = directory / "samples.data"
        self.control, self.ack = directory / "samples.ctl", directory / "samples.ack"
        self.log = directory / "samples.log"
        self.cpus = cpus
        self.process: subprocess.Popen[bytes] | None = None
        self.control_fd = self.ack_fd = -1

    def command(self) -> list[str]:
        where = ["-C", self.cpus] if self.cpus is not None else ["-a"]
        return [
            "perf", "record", "-e", EVENT, "-F", str(SAMPLE_HZ), "-g", *where, "-k", "mono", "-D", "-1",
            f"--control=fifo:{self.control},{self.ack}", "-o", str(self.data),
        ]  # fmt: skip

    def start(self) -> None:
        os.mkfifo(self.control)
        os.mkfifo(self.ack)
        # Opened read-write, neither open waits for perf; perf opens them the same way.
        self.control_fd = os.open(self.control, os.O_RDWR | os.O_CLOEXEC)
        self.ack_fd = os.open(self.ack, os.O_RDWR | os.O_CLOEXEC)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
        # Answered once perf is up: the sweep's first trial never starts before it.
        self._send("disable", START_TIMEOUT_S)

    def _send(self, command: str, timeout_s: float = ACK_TIMEOUT_S) -> None:
        os.write(self.control_fd, f"{command}\n".encode())
        ready, _, _ = select.select([self.ack_fd], [], [], timeout_s)
        if not ready:
            raise PERF_NO_ACK.error(command=command, timeout=f"{timeout_s:.0f}")
        os.read(self.ack_fd, 64)

    def enable(self) -> None:
        self._send("enable")

    def disable(self) -> None:
        self._send("disable")

    def stop(self) -> None:
        """Ends perf record, which writes its file whole on SIGINT; kills it if it does not end in time."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self.control_fd, self.ack_fd):
            if fd >= 0:
                os.close(fd)
        self.control_fd = self.ack_fd = -1

    def script(self) -> subprocess.Popen[str]:
        """perf script reading the samples back: a header line per sample, then its call chain a frame a line."""
        return subprocess.Popen(
            ["perf", "script", "-i", str(self.data), "-F", "comm,tid,cpu,time,ip,sym", "--ns"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
