"""Without root: the sweep's two namespaces inside one user namespace that copylab creates and holds.

The user namespace comes with its own network, mount and PID namespaces and a private /run, so `ip netns`
works there for an unprivileged user, and nothing in it is visible to (or can be left on) the host: when the
holding process ends, the kernel ends every process in its PID namespace and frees the namespaces.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from copylab.declarations.namespace_pair import NamespacePair
from copylab.declarations.settings import socket_buffer
from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import USERNS_DISABLED, USERNS_REFUSED, USERNS_SETUP_FAILED
from copylab.testbeds import netns, sender_pages
from copylab.testbeds.testbed import NamespaceEnd, Namespaces, Testbed, message_files

MAX_USER_NAMESPACES = Path("/proc/sys/user/max_user_namespaces")
_HOW_TO_ENABLE = (
    "enable them (sysctl -w user.max_user_namespaces=15000; where AppArmor restricts them, also "
    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0) or run as root"
)
# Runs as root of the new user namespace: a private /run for ip netns, then holds the namespaces open.
_HOLD = "mount -t tmpfs -o mode=755 tmpfs /run && echo ready && exec sleep infinity"


class UserNamespace:
    """A user namespace with its own network, mount and PID namespaces, alive while held."""

    def __init__(self) -> None:
        self._holder: subprocess.Popen[str] | None = None
        self.pid = 0  # the host's pid of the first process inside

    @staticmethod
    def check_enabled() -> None:
        with suppress(OSError, ValueError):
            if int(MAX_USER_NAMESPACES.read_text()) == 0:
                raise USERNS_DISABLED.error()

    @contextmanager
    def held(self) -> Iterator[UserNamespace]:
        command = [
            *("setpriv", "--pdeathsig", "KILL", "--"),  # ends with this process, however it ends
            *("unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child"),
            *("--propagation", "private", "sh", "-c", _HOLD),
        ]
        try:
            self._holder = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
            )
            assert self._holder.stdout is not None and self._holder.stderr is not None
            if self._holder.stdout.readline().strip() != "ready":
                self._holder.wait(10)
                lines = self._holder.stderr.read().strip().splitlines()
                raise USERNS_REFUSED.error(reason=lines[-1] if lines else "no reason given")
            unshare = self._holder.pid
            self.pid = int(Path(f"/proc/{unshare}/task/{unshare}/children").read_text().split()[0])
            yield self
        finally:
            if self._holder is not None:
                # Ending the first process inside ends every process of its PID namespace; unshare, its parent,
                # then reaps it and exits (killing unshare first would leave it unreaped).
                if self.pid:
                    with suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
                try:
                    self._holder.wait(10)
                except subprocess.TimeoutExpired:
                    self._holder.kill()
                    self._holder.wait(10)
                for stream in (self._holder.stdout, self._holder.stderr):
                    if stream is not None:
                        stream.close()

    def prefix(self) -> list[str]:
        """What runs a command as root of the user namespace, inside its mount, network and PID namespaces."""
        return ["nsenter", "-t", str(self.pid), "--user", "--preserve-credentials", "--mount", "--net", "--pid", "--"]

    def run(self, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix(), *command], capture_output=True, text=True, timeout=30)


class UserNamespaceEnd(NamespaceEnd):
    def __init__(self, role: str, namespace: str, userns: UserNamespace) -> None:
        super().__init__(role, namespace)
        self.userns = userns

    def inside(self) -> list[str]:
        return [*self.userns.prefix(), *netns.exec_prefix(self.namespace)]


class UserNamespaces(Namespaces):
    """The two namespaces of Namespaces, in a user namespace of the sweep's own (no root needed)."""

    privilege = "user-namespace"

    def __init__(self, pair: NamespacePair, name: str, config: SweepConfig | None = None) -> None:
        super().__init__(pair, name, config)
        self.userns = UserNamespace()
        self.server = UserNamespaceEnd("server", pair.server, self.userns)
        self.client = UserNamespaceEnd("client", self.client.namespace, self.userns)
        self._restrictions: dict[str, str] = {}

    @contextmanager
    def prepared(self) -> Iterator[Testbed]:
        UserNamespace.check_enabled()
        self._require()  # the namespaces are private: no name can collide with another sweep's
        why = sender_pages.refusal_without_root(self.config.sender_pages) if self.config is not None else None
        if why:
            raise why.error()
        yield self

    @contextmanager
    def running(self) -> Iterator[Testbed]:
        with self.userns.held(), message_files(self.name) as files:
            for command in netns.setup_commands(self.pair):
                result = self.userns.run(command)
                if result.returncode == 0:
                    continue
                why = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
                if netns.OPTMEM_SETTING not in " ".join(command):
                    raise USERNS_SETUP_FAILED.error(command=" ".join(command), reason=why)
                self._restrictions[netns.OPTMEM_SETTING] = f"not set in a user namespace ({why}): the kernel's value"
            pinned = self.userns.run([*netns.exec_prefix(self.pair.server), "taskset", "-c", "0", "true"])
            if pinned.returncode != 0:
                self._restrictions["pinning"] = f"taskset failed: {pinned.stderr.strip()}"
            self.server.files = str(files)
            try:
                yield self
            finally:
                self.server.files = ""

    def restrictions(self) -> dict[str, str]:
        return dict(self._restrictions)

    def socket_buffer_caps(self) -> dict[str, int] | None:
        # Forcing a buffer past them needs CAP_NET_ADMIN over the host, which a user namespace does not give.
        return socket_buffer.caps_here()
