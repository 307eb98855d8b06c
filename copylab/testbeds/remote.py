"""Two hosts reached over SSH (Fabric): the server's end on one, the client's on the other.

Each host runs a resident runner for the length of the sweep (copylab.testbeds.resident): one process, started
over the sweep's SSH connection, that starts and ends the trials' processes on request, in a few milliseconds.  Its
private directory under /tmp holds copylab's C sources, their build and every trial's files; the runner kills
everything it started and removes the directory when the sweep closes it, when the connection is lost (its stdin
closes) or when it hears nothing for its lease; should the runner itself be killed, the next one of the same
sweep does both.  `timeout` bounds each process even when nobody is left to kill it.  What runs once per sweep
(checking the tools, building, describing and tuning the host) goes through SSH sessions of its own
(copylab.testbeds.ssh).
"""

from __future__ import annotations

import io
import platform
import re
import secrets
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import fabric
import paramiko

from copylab.declarations import implementations
from copylab.declarations.settings import socket_buffer
from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import (
    CANNOT_READ_CAPS,
    CONNECTION_LOST,
    END_LOST,
    NO_INTERFACE,
    REMOTE_BUILD_FAILED,
    REQUEST_FAILED,
    RUNNER_NOT_STARTED,
    SFTP_FAILED,
    TOOLS_MISSING_THERE,
    TUNE_FAILED,
)
from copylab.errors import CopylabError
from copylab.paths import CSRC
from copylab.programs import perf
from copylab.record.manifest import EndRecord, Host, Link
from copylab.testbeds import congestion
from copylab.testbeds.host_facts import describe_host
from copylab.testbeds.resident import Runner
from copylab.testbeds.ssh import open_connection, shell
from copylab.testbeds.testbed import HOST_PROGRAMS, Completed, End, EndLost, Started, Testbed

TOOLS = ("python3", "gcc", "make", "tar", "timeout", "setpriv", "taskset", "pkill", "mkfifo")


def _kill_started(directory: str) -> str:
    """A shell loop that kills the session of every process started from DIRECTORY (by its pid files)."""
    return f'for f in {directory}/*.pid; do [ -s "$f" ] && pkill -KILL -s "$(cat "$f")"; done; true'


class RemoteEnd(End):
    """An end on a host reached over SSH: its resident runner and its private working directory there."""

    def __init__(self, role: str, target: str, ssh_config: str | None) -> None:
        super().__init__(role, f"{role} host {target}")
        self.target = target
        self.ssh_config = ssh_config
        self.work = ""  # /tmp/copylab-remote-SWEEP-..., the runner's
        self.connection: fabric.Connection | None = None
        self.runner: Runner | None = None
        self.buffer_caps: dict[str, int] | None = None  # read by check_socket_buffer

    # ------------------------------------------------------------ the SSH connection and the runner

    def connect(self) -> None:
        """Opens the connection; a one-line CopylabError naming the host and the cause when it cannot."""
        if self.connection is not None:
            with suppress(Exception):
                self.connection.close()
        self.connection = open_connection(self.target, self.ssh_config, f"{self.role} host {self.target}")

    def ssh_up(self) -> bool:
        return self.connection is not None and self.connection.is_connected

    def connected(self) -> bool:
        """The connection is open and the runner, once started, answers."""
        return self.ssh_up() and (self.runner is None or self.runner.alive())

    def call(self, purpose: str, command: str, timeout: float | None = None) -> Any:
        """Runs a shell COMMAND on the host in an SSH session of its own; EndLost when the connection is gone."""
        return shell(self.connection, self.label, purpose, command, timeout)

    def _runner(self) -> Runner:
        if self.runner is None:
            raise END_LOST.error(EndLost, label=self.label, lost="its runner is not started")
        return self.runner

    # ------------------------------------------------------------ End

    def program(self, name: str, sanitize: str | None = None) -> str:
        return f"{self.work}/build{'-' + sanitize if sanitize else ''}/bin/{name}"

    def start(self, command: list[str], deadline_s: float) -> Started:
        return self._runner().start(command, deadline_s)

    def run(self, command: list[str], timeout: float = 30) -> Completed:
        answer = self._runner().request("run", timeout=timeout, argv=command, timeout_s=timeout)
        if answer.get("timeout"):
            raise subprocess.TimeoutExpired(command, timeout)
        return Completed(int(answer["returncode"]), str(answer["stdout"]), str(answer["stderr"]))

    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        runner = self._runner()
        directory = f"{self.work}/{prefix}{secrets.token_hex(6)}"
        try:
            runner.request("mkdir", path=directory)
            yield directory
        finally:
            with suppress(EndLost):
                runner.request("rmtree", path=directory)

    def make_fifos(self, paths: list[str]) -> None:
        self._runner().request("mkfifo", paths=paths)

    def read(self, path: str, offset: int = 0) -> str:
        return str(self._runner().request("read", path=path, offset=offset)["text"])

    def _check(self, result: Any, what: str) -> None:
        if result.exited != 0:
            raise REQUEST_FAILED.error(
                EndLost, label=self.label, what=what, error=result.stderr.strip() or result.exited
            )

    # ------------------------------------------------------------ the working directory

    def create_work(self, sweep: str, owner: str) -> None:
        """Starts the host's runner, which ends and removes what an earlier run of this sweep left there and creates
        the working directory.  (Both ends may be one host: OWNER names the end too.)"""
        assert self.connection is not None
        transport = self.connection.client.get_transport()
        try:
            self.runner = Runner(transport, self.label, sweep, f"{owner}:{self.role}")
        except (EndLost, paramiko.SSHException, OSError, EOFError) as error:
            raise RUNNER_NOT_STARTED.error(label=self.label, error=error) from None
        self.work = self.runner.work
        self.files = f"{self.work}/files"

    def remove_work(self) -> None:
        """Closes the runner (it kills everything it started and removes its directory); when it cannot, kills and
        removes them over a session of its own; says so when neither can."""
        if not self.work:
            return
        if self.runner is not None and self.runner.alive() and self.runner.close():
            self.runner, self.work = None, ""
            return
        try:
            if not self.ssh_up():
                self.connect()
            self.call("remove its working directory", f"{_kill_started(self.work)}; rm -rf {self.work}", timeout=60)
            self.runner, self.work = None, ""
        except (CopylabError, subprocess.TimeoutExpired) as error:
            print(
                f"copylab: could not remove {self.work} on the {self.label} ({error}); the next run of this "
                "sweep removes it, and its processes end by themselves within a trial's bound",
                file=sys.stderr,
            )

    def check_tools(self) -> None:
        result = self.call(
            "check its tools", f"for t in {' '.join(TOOLS)}; do command -v $t >/dev/null || echo $t; done"
        )
        missing = result.stdout.split()
        if missing:
            raise TOOLS_MISSING_THERE.error(label=self.label, tools=", ".join(missing))

    def check_congestion_control(self, name: str) -> None:
        lists = self.call(
            "read its congestion controls",
            f"id -u; cat {congestion.AVAILABLE}; cat {congestion.ALLOWED} 2>/dev/null || echo",
        ).stdout.splitlines()
        uid, available, allowed = (*lists, "", "", "")[:3]
        why = congestion.refusal(name, available, allowed, uid.strip() == "0", self.label)
        if why:
            raise why.error()

    def check_socket_buffer(self, asked: int | None) -> None:
        """Reads the host's caps on the socket buffers (kept as buffer_caps; None for root, who passes over them)
        and refuses a size asked for above them."""
        lines = self.call(
            "read its socket buffer caps", f"id -u; cat {' '.join(socket_buffer.CAPS.values())}"
        ).stdout.split()
        uid, *caps = (*lines, "", "", "")[:3]
        try:
            limits = {buffer: int(cap) for buffer, cap in zip(socket_buffer.CAPS, caps, strict=True)}
        except ValueError:
            raise CANNOT_READ_CAPS.error(label=self.label, files=", ".join(socket_buffer.CAPS.values())) from None
        self.buffer_caps = None if uid.strip() == "0" else limits
        why = socket_buffer.refusal(asked, self.buffer_caps, self.label)
        if why:
            raise why.error()

    def build(self, programs: list[str], sanitize: str | None) -> dict[str, str]:
        """Uploads csrc/ and builds PROGRAMS (sanitized when asked) and the calibration programs; returns those
        that did not build, each with make's last error line."""
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            for path in sorted(CSRC.iterdir()):
                if path.is_file():
                    tar.add(path, arcname=f"csrc/{path.name}")
        archive.seek(0)
        assert self.connection is not None
        try:
            self.connection.put(archive, f"{self.work}/csrc.tar.gz")
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise SFTP_FAILED.error(label=self.label, error=error) from None
        self._check(self.call("unpack", f"tar -xzf {self.work}/csrc.tar.gz -C {self.work}"), "tar")
        failed: dict[str, str] = {}
        builds = [(sanitize, programs), (None, HOST_PROGRAMS)] if sanitize else [(None, [*programs, *HOST_PROGRAMS])]
        for flavour, names in builds:
            out = f"{self.work}/build{'-' + flavour if flavour else ''}"
            targets = " ".join(f"{out}/bin/{name}" for name in names)
            made = self.call(
                "build",
                f"make -s -k -j2 -C {self.work}/csrc OUT={out} {'SANITIZE=' + flavour if flavour else ''} {targets}",
                timeout=600,
            )
            errors = [line for line in made.stderr.splitlines() if "error" in line]
            listed = self.call("list the build", f"ls {out}/bin 2>/dev/null || true").stdout.split()
            for name in names:
                if name not in listed:
                    failed[name] = errors[0] if errors else f"make exited {made.exited}"
        return failed

    def describe(self, address: str) -> tuple[Host, Link | None]:
        """The host, and the interface that carries ADDRESS's traffic there."""
        return describe_host(lambda script: str(self.call("describe itself", script).stdout), self.role, address)

    def tune(self, interface: str | None, mtu: int, optmem_max: int) -> dict[str, str]:
        """Sets the sweep's optmem_max and MTU; returns the values to restore, by setting."""
        before = {"net.core.optmem_max": self.call("read optmem_max", "sysctl -n net.core.optmem_max").stdout.strip()}
        commands = [f"sysctl -qw net.core.optmem_max={optmem_max}"]
        if interface:
            before["mtu"] = self.call("read the MTU", f"cat /sys/class/net/{interface}/mtu").stdout.strip()
            commands.append(f"ip link set dev {interface} mtu {mtu}")
        result = self.call("tune it", " && ".join(commands))
        if result.exited != 0:
            raise TUNE_FAILED.error(label=self.label, error=result.stderr.strip())
        return before

    def restore(self, interface: str | None, before: dict[str, str]) -> None:
        commands = []
        if "net.core.optmem_max" in before:
            commands.append(f"sysctl -qw net.core.optmem_max={before['net.core.optmem_max']}")
        if interface and "mtu" in before:
            commands.append(f"ip link set dev {interface} mtu {before['mtu']}")
        try:
            if not self.ssh_up():
                self.connect()
            self.call("restore its settings", "; ".join(commands))
        except (CopylabError, subprocess.TimeoutExpired) as error:
            print(f"copylab: could not restore {before} on the {self.label}: {error}", file=sys.stderr)


def _owner(store_directory: Path) -> str:
    """Who created a working directory: this controller and the sweep directory it writes."""
    return re.sub(r"[^A-Za-z0-9._/:-]", "_", f"{platform.node()}:{store_directory}")


class Hosts(Testbed):
    """The server's end on one host and the client's on another, both over SSH."""

    path = "network"

    def __init__(self, config: SweepConfig, directory: Path) -> None:
        assert config.server_host and config.client_host and config.server_address
        self.config = config
        self.server = RemoteEnd("server", config.server_host, config.ssh_config)
        self.client = RemoteEnd("client", config.client_host, config.ssh_config)
        self.server_address = config.server_address
        self.owner = _owner(directory.resolve())
        self.records: list[EndRecord] = []

    @property
    def ends(self) -> tuple[RemoteEnd, RemoteEnd]:
        return self.server, self.client  # type: ignore[return-value]

    def socket_buffer_caps(self) -> dict[str, int] | None:
        capped = [end.buffer_caps for end in self.ends if end.buffer_caps is not None]
        if not capped:
            return None
        return {buffer: min(caps[buffer] for caps in capped) for buffer in socket_buffer.CAPS}

    def _both(self, work: Any) -> list[Any]:
        """WORK(end) on both hosts at once (connecting and building take seconds each)."""
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(work, self.ends))

    @contextmanager
    def prepared(self) -> Iterator[Testbed]:
        programs = implementations.programs(self.config.members.values())
        try:
            self._both(lambda end: end.connect())
            for end in self.ends:
                end.check_tools()
                end.check_congestion_control(self.config.congestion_control)
                end.check_socket_buffer(self.config.socket_buffer)
            for end in self.ends:
                end.create_work(self.config.name, self.owner)
            for end, unbuilt in zip(
                self.ends, self._both(lambda end: end.build(programs, self.config.sanitize)), strict=True
            ):
                for name in HOST_PROGRAMS:
                    if name in unbuilt:
                        raise REMOTE_BUILD_FAILED.error(label=end.label, reason=unbuilt[name])
                for name, why in unbuilt.items():
                    print(f"copylab: {name} does not build on the {end.label}: {why}", file=sys.stderr)
            self.records = []
            for end in self.ends:
                host, link = end.describe(self.server_address)
                if end.role == "server" and link is None:
                    raise NO_INTERFACE.error(label=end.label, address=self.server_address)
                self.records.append(EndRecord(end.role, end.target, host, link))
            yield self
        finally:
            for end in self.ends:
                end.remove_work()
                if end.connection is not None:
                    with suppress(Exception):
                        end.connection.close()

    @contextmanager
    def running(self) -> Iterator[Testbed]:
        if not self.config.tune_remote:
            yield self
            return
        tuned: list[tuple[RemoteEnd, str | None, dict[str, str]]] = []
        try:
            for end, record in zip(self.ends, self.records, strict=True):
                interface = record.link.interface if record.link else None
                tuned.append((end, interface, {}))
                tuned[-1] = (end, interface, end.tune(interface, self.config.mtu, self.config.optmem_max))
            yield self
        finally:
            for end, interface, before in tuned:
                if before:
                    end.restore(interface, before)

    def perf_support(self) -> perf.PerfSupport:
        server, client = (perf.detect(end.run) for end in self.ends)
        return perf.combined(server, client, (self.server.label, self.client.label))

    def describe(self) -> tuple[str, list[EndRecord]]:
        if not self.config.tune_remote:
            return self.path, self.records
        tuned = {"net.core.optmem_max": str(self.config.optmem_max), "mtu": str(self.config.mtu)}
        return self.path, [EndRecord(r.role, r.target, r.host, r.link, tuned) for r in self.records]

    def reconnect(self) -> None:
        """An end whose connection or runner was lost gets both back, and its build again: its runner removed its
        directory as it ended (or the new one does, ending what the old one started)."""
        for end in self.ends:
            if end.connected():
                continue
            lost = end.runner.lost if end.runner is not None else None
            try:
                if not end.ssh_up():
                    end.connect()
                end.create_work(self.config.name, self.owner)
            except CopylabError as error:
                raise CONNECTION_LOST.error(error=error) from None
            print(f"copylab: the {end.label} was lost ({lost}); back, building there again", file=sys.stderr)
            for name, why in end.build(
                implementations.programs(self.config.members.values()), self.config.sanitize
            ).items():
                print(f"copylab: {name} does not build on the {end.label}: {why}", file=sys.stderr)
