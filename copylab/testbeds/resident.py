"""The controller's side of a host's resident runner (copylab.testbeds.resident_runner): one SSH channel per host for
the length of a sweep, through which trials are started, waited for and ended in a few milliseconds each.

Requests go as JSON lines on the channel's stdin and answers come back on its stdout; a reader thread routes each
answer to its request, and each "exited" event to its process.  A keep-alive renews the runner's lease every few
seconds, so a runner whose controller vanished without a word ends itself within the lease.  When the channel
closes, every request waiting and every process running on it fails with EndLost, naming the host.
"""

from __future__ import annotations

import json
import secrets
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import paramiko

from copylab.error_catalogue import END_LOST, REQUEST_FAILED, RUNNER_NOT_ANSWERING
from copylab.testbeds.testbed import EndLost, Started

SCRIPT = (Path(__file__).with_name("resident_runner.py")).read_text()
# The runner ends itself after this long without a word from the controller (the keep-alive speaks every
# LEASE_S / 6).
LEASE_S = 30.0
READY_TIMEOUT_S = 30.0
# How long a request may take beyond its own timeout before the runner counts as lost.
ANSWER_MARGIN_S = 15.0


class _Exit:
    """A started process's end, as its "exited" event said it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.message: dict[str, Any] = {}


class Runner:
    """The resident runner on one host, started over the channel of an open SSH transport."""

    def __init__(self, transport: paramiko.Transport, label: str, sweep: str, owner: str) -> None:
        self.label = label
        self.lost: str | None = None
        self._answers: dict[int, tuple[threading.Event, dict[str, Any]]] = {}
        self._exits: dict[str, _Exit] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._ready = threading.Event()
        self._tail: list[str] = []  # what the runner printed that is not a message (a Python error)
        self.work = ""
        self.pid = 0
        self.channel = transport.open_session()
        self.channel.set_combine_stderr(True)
        command = ["python3", "-u", "-c", SCRIPT, sweep, owner, f"{LEASE_S:g}"]
        self.channel.exec_command("exec " + shlex.join(command))
        threading.Thread(target=self._read, daemon=True, name=f"runner-{label}").start()
        if not self._ready.wait(READY_TIMEOUT_S) or self.lost:
            why = self.lost or f"no answer within {READY_TIMEOUT_S:.0f} s"
            self.close()
            raise RUNNER_NOT_ANSWERING.error(EndLost, label=label, why=why)
        threading.Thread(target=self._keep_alive, daemon=True, name=f"keep-alive-{label}").start()

    # ------------------------------------------------------------ the channel

    def _read(self) -> None:
        stream = self.channel.makefile("rb")
        try:
            for raw in stream:
                line = raw.decode(errors="replace").strip()
                try:
                    message = json.loads(line)
                except json.JSONDecodeError:
                    self._tail = [*self._tail[-4:], line]
                    continue
                self._dispatch(message)
        except (OSError, EOFError, paramiko.SSHException):
            pass
        transport = self.channel.get_transport()
        if self._tail:
            self._lose(f"its runner ended ({self._tail[-1]})")
        elif transport is not None and transport.is_active():
            self._lose("its runner ended (killed?) while the SSH connection stayed up")
        else:
            self._lose("the SSH connection dropped")

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("event") == "ready":
            self.work, self.pid = message["work"], message["pid"]
            self._ready.set()
        elif message.get("event") == "exited":
            ended = self._exit(message["key"])
            ended.message = message
            ended.done.set()
        else:
            with self._lock:
                waiting = self._answers.pop(message.get("id", -1), None)
            if waiting is not None:
                waiting[1].update(message)
                waiting[0].set()

    def _exit(self, key: str) -> _Exit:
        with self._lock:
            return self._exits.setdefault(key, _Exit())

    def _lose(self, why: str) -> None:
        with self._lock:
            self.lost = self.lost or why
            waiting = list(self._answers.values())
            self._answers.clear()
            exits = list(self._exits.values())
        self._ready.set()
        for event, _ in waiting:
            event.set()
        for ended in exits:
            ended.done.set()

    def _keep_alive(self) -> None:
        while self.lost is None:
            time.sleep(LEASE_S / 6)
            try:
                self.request("ping", timeout=LEASE_S / 2)
            except (EndLost, subprocess.TimeoutExpired):
                return

    def alive(self) -> bool:
        return self.lost is None and not self.channel.closed

    def request(self, op: str, timeout: float = 30.0, **fields: Any) -> dict[str, Any]:
        """Sends one request and returns its answer; EndLost when the runner is gone or says it failed."""
        answer: dict[str, Any] = {}
        event = threading.Event()
        with self._lock:
            if self.lost is not None:
                raise END_LOST.error(EndLost, label=self.label, lost=self.lost)
            self._next_id += 1
            number = self._next_id
            self._answers[number] = (event, answer)
            line = json.dumps({"id": number, "op": op, **fields}) + "\n"
        try:
            with self._sending:  # one line at a time: the keep-alive speaks from a thread of its own
                self.channel.sendall(line.encode())
        except (OSError, EOFError, paramiko.SSHException) as error:
            self._lose(f"the SSH connection broke ({error or type(error).__name__})")
        if not event.wait(timeout + ANSWER_MARGIN_S) and self.lost is None:
            self._lose(f"its runner did not answer within {timeout + ANSWER_MARGIN_S:.0f} s")
        if self.lost is not None and not answer:
            raise END_LOST.error(EndLost, label=self.label, lost=self.lost)
        if "error" in answer:
            raise REQUEST_FAILED.error(EndLost, label=self.label, what=op, error=answer["error"])
        return answer

    def close(self, wait_s: float = 30.0) -> bool:
        """Closes the runner's stdin (it ends what it started and removes its directory), waits up to WAIT_S for it
        to exit and closes the channel; whether it exited."""
        exited = False
        if not self.channel.closed:
            try:
                self.channel.shutdown_write()
                ends = time.monotonic() + wait_s
                while not self.channel.exit_status_ready() and time.monotonic() < ends:
                    time.sleep(0.01)
                exited = self.channel.exit_status_ready()
            except (OSError, EOFError, paramiko.SSHException):
                pass
            self.channel.close()
        self._lose("the sweep closed its runner")
        return exited

    # ------------------------------------------------------------ processes

    def start(self, argv: list[str], deadline_s: float) -> Started:
        key = secrets.token_hex(6)
        ended = self._exit(key)
        self.request("start", key=key, argv=argv, deadline_s=deadline_s)
        return ResidentProcess(self, key, ended)


class ResidentProcess(Started):
    """A process the runner started, in a session of its own there."""

    def __init__(self, runner: Runner, key: str, ended: _Exit) -> None:
        self.runner = runner
        self.key = key
        self._ended = ended

    def wait(self, timeout: float) -> tuple[str, str]:
        if not self._ended.done.wait(timeout):
            raise subprocess.TimeoutExpired(self.key, timeout)
        message = self._ended.message
        if not message:
            raise END_LOST.error(EndLost, label=self.runner.label, lost=self.runner.lost)
        return str(message["stdout"]), str(message["stderr"])

    @property
    def returncode(self) -> int | None:
        code = self._ended.message.get("returncode")
        return int(code) if code is not None else None

    def kill(self) -> None:
        if self._ended.done.is_set() or not self.runner.alive():
            return
        try:
            self.runner.request("kill", key=self.key)
            self._ended.done.wait(5)
        except EndLost:
            pass
