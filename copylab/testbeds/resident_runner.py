"""The resident runner: the one process copylab keeps on a host for the length of a sweep.

This file is shipped as text and run on the host by `python3 -u -c` over the sweep's SSH connection, so it
imports nothing but Python's standard library (the host needs no copylab).  Its arguments: the sweep's name, the
owner of its working directory (the controller, its sweep directory and the end's role) and its lease in seconds.

It creates the working directory /tmp/copylab-remote-SWEEP-XXXX (after ending and removing what an earlier run of
the same owner left), says `{"event": "ready", "work": ...}`, then answers JSON requests, one a line, on stdin
with one JSON line each on stdout (`{"id": N, ...}`); a started process's end comes as `{"event": "exited", ...}`.
Each started process leads a session of its own, recorded in WORK/KEY.pid, and runs under `timeout`.

When its stdin closes (the controller closed it, or the connection is gone), when it has heard nothing for its
lease, or on SIGTERM, SIGHUP or SIGINT, it kills every session it started and removes its working directory.
Should it be killed outright, the next runner of the same owner does both (its pid files say what to kill).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import threading
from typing import Any

PR_SET_PDEATHSIG = 1
_output = threading.Lock()


def _send(message: dict[str, Any]) -> None:
    line = json.dumps(message) + "\n"
    with _output:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass  # the controller is gone: stdin's end follows


def _session_members(session: int) -> list[int]:
    members = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session:  # state, ppid, pgrp, session
            members.append(int(stat.split("/")[2]))
    return members


def _kill_session(session: int) -> None:
    if session == os.getsid(0):
        return
    for pid in _session_members(session):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _kill_started(work: str) -> None:
    """Kills the session of every process started from WORK, by its pid files (an earlier runner's too)."""
    for pidfile in glob.glob(f"{work}/*.pid"):
        try:
            with open(pidfile) as file:
                _kill_session(int(file.read().strip()))
        except (OSError, ValueError):
            continue


def _clear_earlier(sweep: str, owner: str) -> None:
    for work in glob.glob(f"/tmp/copylab-remote-{sweep}-*"):
        try:
            with open(f"{work}/owner") as file:
                if file.read().strip() != owner:
                    continue
        except OSError:
            continue
        _kill_started(work)
        shutil.rmtree(work, ignore_errors=True)


# setpriv sets the program's death signal only after timeout has forked it: were timeout killed (with the runner)
# in between, no signal would ever come and the program would run on, orphaned.  So once the signal is set, the
# program runs only if its parent is still timeout, the leader of the session it was started in (else it ends as
# if killed: 128 + SIGKILL).
_IF_TIMEOUT_LIVES = (
    'read -r _ _ _ parent _ session _ < /proc/$$/stat && [ "$parent" = "$session" ] && exec "$@"; exit 137'
)


def _die_with_runner(runner: int) -> None:
    """In a started process before it runs: killed should the runner (pid RUNNER) die (prctl PR_SET_PDEATHSIG);
    ended at once should it have died already, before the death signal was set."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != runner:
        os._exit(128 + signal.SIGKILL)


def _status(returncode: int) -> int:
    # timeout, like a shell, reports its program's death by signal N as 128 + N.
    return -(returncode - 128) if returncode > 128 else returncode


class Runner:
    def __init__(self, work: str) -> None:
        self.work = work
        self.started: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, key: str, argv: list[str], deadline_s: float) -> dict[str, Any]:
        # Started by this (main) thread, which lives as long as the runner: the death signal is the runner's.
        process = subprocess.Popen(
            # The program dies with timeout, and timeout with the runner: a killed runner leaves no program running.
            [
                *("timeout", "-s", "KILL", f"{deadline_s:.0f}", "setpriv", "--pdeathsig", "KILL", "--"),
                *("sh", "-c", _IF_TIMEOUT_LIVES, "sh", *argv),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_runner, os.getpid()),
        )
        with open(f"{self.work}/{key}.pid", "w") as file:
            file.write(str(process.pid))
        self.started[key] = process
        threading.Thread(target=self._await, args=(key, process), daemon=True).start()
        return {"pid": process.pid}

    def _await(self, key: str, process: subprocess.Popen[bytes]) -> None:
        stdout, stderr = process.communicate()
        _kill_session(process.pid)  # whatever it left running in its session
        self.started.pop(key, None)
        with contextlib.suppress(OSError):
            os.unlink(f"{self.work}/{key}.pid")
        _send(
            {
                "event": "exited",
                "key": key,
                "returncode": _status(process.returncode),
                "stdout": stdout.decode(errors="replace"),
                "stderr": stderr.decode(errors="replace"),
            }
        )

    def kill(self, key: str) -> dict[str, Any]:
        process = self.started.get(key)
        if process is not None:
            _kill_session(process.pid)
        return {}

    def run(self, argv: list[str], timeout: float) -> dict[str, Any]:
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
        except OSError as error:
            return {"returncode": 127, "stdout": "", "stderr": f"{argv[0]}: {error.strerror}"}
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_session(process.pid)
            process.communicate()
            return {"timeout": True}
        return {
            "returncode": process.returncode,
            "stdout": stdout.decode(errors="replace"),
            "stderr": stderr.decode(errors="replace"),
        }

    def read(self, path: str, offset: int) -> dict[str, Any]:
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                return {"text": file.read().decode(errors="replace")}
        except FileNotFoundError:
            return {"text": ""}

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "start":
            return self.start(request["key"], request["argv"], request["deadline_s"])
        if op == "kill":
            return self.kill(request["key"])
        if op == "run":
            return self.run(request["argv"], request["timeout_s"])
        if op == "read":
            return self.read(request["path"], request["offset"])
        if op == "mkdir":
            os.mkdir(request["path"], 0o700)
        elif op == "rmtree":
            shutil.rmtree(request["path"], ignore_errors=True)
        elif op == "mkfifo":
            for path in request["paths"]:
                os.mkfifo(path, 0o600)
        elif op != "ping":
            raise ValueError(f"unknown request {op!r}")
        return {}

    def end(self) -> None:
        for process in list(self.started.values()):
            _kill_session(process.pid)
        _kill_started(self.work)
        shutil.rmtree(self.work, ignore_errors=True)


def _requests(lease_s: float) -> Any:
    """The requests on stdin, until it closes or stays silent for LEASE_S."""
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], lease_s)
        if not readable:
            return
        chunk = os.read(0, 65536)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _ended_by_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main() -> None:
    sweep, owner, lease_s = sys.argv[1], sys.argv[2], float(sys.argv[3])
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _ended_by_signal)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _clear_earlier(sweep, owner)
    work = f"/tmp/copylab-remote-{sweep}-{secrets.token_hex(6)}"
    os.mkdir(work, 0o700)
    runner = Runner(work)
    try:
        os.mkdir(f"{work}/files")
        with open(f"{work}/owner", "w") as file:
            file.write(owner + "\n")
        # Its own session, so that a later runner of this owner ends this one too should it still run.
        with open(f"{work}/runner.pid", "w") as file:
            file.write(str(os.getsid(0)))
        _send({"event": "ready", "work": work, "pid": os.getpid()})
        for request in _requests(lease_s):
            try:
                _send({"id": request["id"], **runner.answer(request)})
            except (OSError, ValueError, KeyError, TypeError) as error:
                _send({"id": request.get("id"), "error": f"{type(error).__name__}: {error}"})
    finally:
        runner.end()


if __name__ == "__main__":
    main()
