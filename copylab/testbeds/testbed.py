"""Where a sweep's two ends run: two network namespaces of this machine joined by a veth pair (this module), or
two hosts reached over SSH (copylab.testbeds.remote).

A trial sees only the `End` interface: start a process there and wait for it or kill its whole process
group, run a short command, keep a scratch directory, read a file.  A `Testbed` holds the two ends and the
address the client reaches the server at; `prepared()` readies it before anything of the sweep is written
(and undoes it after), `running()` brings up what only the trials need.
"""

from __future__ import annotations

import os
import signal
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from copylab.calibration.measurement import CALIBRATION_PROGRAMS
from copylab.declarations import implementations
from copylab.declarations.config import check_descriptor_limit, check_memory_limit
from copylab.declarations.namespace_pair import NamespacePair
from copylab.declarations.settings import socket_buffer
from copylab.declarations.sweep_config import SweepConfig
from copylab.errors import CopylabError
from copylab.paths import program
from copylab.programs import perf
from copylab.programs.build import SPEED_PROBE, require_programs
from copylab.record.manifest import EndRecord
from copylab.scratch import private_directory
from copylab.testbeds import congestion, netns, sender_pages

# What a testbed builds on each end besides the implementations' programs: the calibration's, and the speed probe
# that runs around every trial.
HOST_PROGRAMS = [*CALIBRATION_PROGRAMS, SPEED_PROBE]


class EndLost(CopylabError):
    """The connection to an end broke (a host went away, its SSH server stopped): the trial on it failed."""


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


class Started(ABC):
    """A process started on an end, in a process group of its own."""

    @abstractmethod
    def wait(self, timeout: float) -> tuple[str, str]:
        """Its stdout and stderr once it ended; subprocess.TimeoutExpired when it runs past TIMEOUT seconds."""

    @property
    @abstractmethod
    def returncode(self) -> int | None:
        """Its exit status (negative: the signal that ended it), None while it runs."""

    @abstractmethod
    def kill(self) -> None:
        """Ends its whole process group (what it started too), now."""


class End(ABC):
    """One end of every trial: the machine (or namespace) where the server, or the client, runs."""

    def __init__(self, role: str, label: str) -> None:
        self.role = role  # server or client
        self.label = label  # how errors name it: "server namespace copylab_srv", "client host root@10.0.0.2"
        self.files = ""  # a directory where the server's message files live (set while running)

    @abstractmethod
    def program(self, name: str, sanitize: str | None = None) -> str:
        """Where the built program NAME is on this end."""

    @abstractmethod
    def start(self, command: list[str], deadline_s: float) -> Started:
        """Starts COMMAND; whatever happens here, it and its process group are killed DEADLINE_S seconds on."""

    @abstractmethod
    def run(self, command: list[str], timeout: float = 30) -> Completed:
        """Runs a short command to its end."""

    @abstractmethod
    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        """A private directory on this end, gone after the block."""

    @abstractmethod
    def make_fifos(self, paths: list[str]) -> None: ...

    @abstractmethod
    def read(self, path: str, offset: int = 0) -> str:
        """A text file's contents from byte OFFSET on, '' when it does not exist."""


class Testbed(ABC):
    """The two ends of a sweep and the address the client reaches the server at."""

    server: End
    client: End
    server_address: str
    path: str  # "veth" (two namespaces of one machine) or "network" (two hosts)
    privilege = "root"  # or "user-namespace": how the namespaces were made

    @abstractmethod
    @contextmanager
    def prepared(self) -> Iterator[Testbed]:
        """Everything checked and built before the sweep writes anything; undone after the block."""

    @abstractmethod
    @contextmanager
    def running(self) -> Iterator[Testbed]:
        """What the trials need beyond that (namespaces, message file directories, tuned settings)."""

    def perf_support(self) -> perf.PerfSupport:
        """What perf can count on both ends (an event counts only where both ends count it)."""
        server, client = (perf.detect(end.run) for end in (self.server, self.client))
        return perf.combined(server, client, (self.server.label, self.client.label))

    def describe(self) -> tuple[str, list[EndRecord]]:
        """The path and the ends, as the manifest records them."""
        return self.path, []

    def restrictions(self) -> dict[str, str]:
        """What this testbed could not do as asked (a setting, a kind of measurement), with the reason."""
        return {}

    def socket_buffer_caps(self) -> dict[str, int] | None:
        """The caps on the socket buffers its programs may ask for, per buffer
        (copylab.declarations.settings.socket_buffer); None: they pass over them (root)."""
        return None

    @abstractmethod
    def reconnect(self) -> None:
        """After a failed trial: make sure both ends can still be reached (CopylabError when not)."""


# ---------------------------------------------------------------- two namespaces of this machine


class _LocalProcess(Started):
    def __init__(self, command: list[str]) -> None:
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )

    def wait(self, timeout: float) -> tuple[str, str]:
        return self._process.communicate(timeout=timeout)

    @property
    def returncode(self) -> int | None:
        return self._process.poll()

    def kill(self) -> None:
        if self._process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired, ValueError):
            self._process.communicate(timeout=5)


class NamespaceEnd(End):
    """An end in a network namespace of this machine: its programs are this machine's build."""

    def __init__(self, role: str, namespace: str) -> None:
        super().__init__(role, f"{role} namespace {namespace}")
        self.namespace = namespace

    def program(self, name: str, sanitize: str | None = None) -> str:
        return str(program(name, sanitize))

    def inside(self) -> list[str]:
        """What runs a command in this end's namespace."""
        return netns.exec_prefix(self.namespace)

    def start(self, command: list[str], deadline_s: float) -> Started:
        # The caller kills its group when done or at DEADLINE_S; should this process die first, the kernel ends it.
        return _LocalProcess([*self.inside(), "setpriv", "--pdeathsig", "KILL", "--", *command])

    def run(self, command: list[str], timeout: float = 30) -> Completed:
        result = subprocess.run([*self.inside(), *command], capture_output=True, text=True, timeout=timeout)
        return Completed(result.returncode, result.stdout, result.stderr)

    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        with private_directory(prefix) as directory:
            yield str(directory)

    def make_fifos(self, paths: list[str]) -> None:
        for path in paths:
            os.mkfifo(path, 0o600)

    def read(self, path: str, offset: int = 0) -> str:
        try:
            with open(path, "rb") as file:
                file.seek(offset)
                return file.read().decode(errors="replace")
        except FileNotFoundError:
            return ""


class Namespaces(Testbed):
    """Two network namespaces joined by a veth pair, created for the sweep and removed after it."""

    path = "veth"

    def __init__(self, pair: NamespacePair, name: str, config: SweepConfig | None = None) -> None:
        self.pair = pair
        self.name = name  # the sweep's, in the names of its temporary files
        self.config = config
        self.server = NamespaceEnd("server", pair.server)
        # On the sink path the client counts the sink device's drops, in the server's namespace.
        self.client: NamespaceEnd = NamespaceEnd("client", pair.server if pair.sink else pair.client)
        self.server_address = pair.server_address

    @classmethod
    def for_sweep(cls, config: SweepConfig) -> Namespaces:
        pair = NamespacePair(
            *config.namespaces, mtu=config.mtu, optmem_max=config.optmem_max, sink=config.path == "sink"
        )
        return cls(pair, config.name, config)

    @contextmanager
    def prepared(self) -> Iterator[Testbed]:
        netns.require_root("run-sweep")
        self._require()
        netns.check_free(self.pair)  # before anything is written, so a refusal leaves nothing behind
        if self.config is None:
            yield self
            return
        with sender_pages.held(self.config.sender_pages):
            yield self

    def _require(self) -> None:
        if self.config is not None:
            check_descriptor_limit(self.config)
            check_memory_limit(self.config)
            why = congestion.check_here(self.config.congestion_control) or socket_buffer.refusal(
                self.config.socket_buffer, self.socket_buffer_caps(), "kernel of this machine"
            )
            if why:
                raise why.error()
            require_programs(implementations.programs(self.config.members.values()), self.config.sanitize)
        require_programs(HOST_PROGRAMS)

    @contextmanager
    def running(self) -> Iterator[Testbed]:
        with netns.namespace_pair(self.pair), message_files(self.name) as files:
            self.server.files = str(files)
            try:
                yield self
            finally:
                self.server.files = ""

    def reconnect(self) -> None:
        """Namespaces of this machine cannot be lost."""

    def perf_support(self) -> perf.PerfSupport:
        # Both namespaces share this machine's perf and PMU: ask once.
        return perf.detect()


@contextmanager
def message_files(name: str) -> Iterator[Path]:
    """A tmpfs directory of the sweep's own for the message files of file-sending servers, gone afterwards."""
    shm = Path("/dev/shm")
    with private_directory(f"copylab-files-{name}-", shm if shm.is_dir() else None) as directory:
        yield directory
