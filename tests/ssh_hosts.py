"""Pairs of 'hosts' over SSH, for real, on this machine: each pair is two network namespaces joined by a data veth,
each namespace running its own sshd reached from this namespace over a control veth, with throwaway host and client
keys.  What a sweep left on the controller or on any host is looked for from inside each."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copylab.declarations import config
from copylab.declarations.sweep_config import SweepConfig
from copylab.testbeds import netns
from tests.robustness_table import Looked
from tests.test_robustness import pgrep, wait_for

TAG = os.getpid() % 100000
DATA_SERVER, DATA_CLIENT = "10.207.0.1", "10.207.0.2"  # inside each pair's two namespaces only
# Each namespace's control link is a /30 of this /24, routed in this namespace: it follows TAG, so that another
# run's links never take its traffic.
_CONTROL_NET = f"10.207.{2 * (TAG % 127)}"
SSH_PORT = 22
# What the two-host tests' sweeps share: small enough to run in seconds (two_copy streaming 4 KiB and 16 KiB on one
# thread, three short trials on one CPU). No calibration: it costs each sweep about 10 s, and a test that is about it
# asks for it.
SMALL_SWEEP: dict[str, Any] = dict(
    implementations=["two_copy"],
    workloads=["stream"],
    sizes=[4096, 16384],
    threads=[1],
    trials=3,
    duration_s=0.3,
    warmup_s=0.05,
    pinning=["same_cpu"],
    receive=["copy"],
    calibrate=False,
)


def small_sweep(name: str, ends: dict[str, Any], **changes: Any) -> SweepConfig:
    """The sweep NAME between ENDS (the hosts' settings): SMALL_SWEEP's settings but CHANGES (None: the profile's)."""
    return config.make_config(name, "quick", **{**ends, **SMALL_SWEEP, **changes})


def run(*command: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)}: {result.stderr.strip()}")
    return result


def pair_namespaces(index: int) -> tuple[str, str]:
    suffix = str(index) if index else ""
    return f"clrm{TAG}_s{suffix}", f"clrm{TAG}_c{suffix}"


def control(index: int, role: str) -> tuple[str, str]:
    """Pair INDEX's ROLE namespace's control link: (this namespace's side, the namespace's side, where sshd listens)."""
    slot = 2 * index + (role == "client")
    return f"{_CONTROL_NET}.{4 * slot + 1}", f"{_CONTROL_NET}.{4 * slot + 2}"


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def namespace_pids(namespace: str) -> list[int]:
    result = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(pid) for pid in result.stdout.split()]


def running_in(namespace: str, word: str) -> bool:
    return any(word in command_of(pid) for pid in namespace_pids(namespace))


def exited(pid: int) -> bool:
    """Gone, or a zombie: it ended and waits only for its parent (init, once orphaned) to collect its status."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _listening(address: str) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((address, SSH_PORT)) == 0


def _on_a_link_here(address: str) -> bool:
    route = subprocess.run(["ip", "-o", "route", "get", address], capture_output=True, text=True).stdout
    return bool(route) and " via " not in route


def write_sshd_config(directory: Path, namespace: str, address: str, keys: Path, extra: str = "") -> Path:
    path = directory / f"sshd_config-{namespace}{'-extra' if extra else ''}"
    path.write_text(
        f"""ListenAddress {address}
Port {SSH_PORT}
HostKey {keys}/host_{namespace}
AuthorizedKeysFile {keys}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
Subsystem sftp internal-sftp
LogLevel ERROR
{extra}"""
    )
    return path


@dataclass
class HostPair:
    """Two 'hosts' and how to reach them."""

    index: int
    keys: Path
    ssh_config: Path
    sshd: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    @property
    def namespaces(self) -> tuple[str, str]:
        return pair_namespaces(self.index)

    @property
    def server_ns(self) -> str:
        return self.namespaces[0]

    @property
    def client_ns(self) -> str:
        return self.namespaces[1]

    def address(self, namespace: str) -> str:
        return control(self.index, "server" if namespace == self.server_ns else "client")[1]

    @property
    def server_host(self) -> str:
        return f"root@{self.address(self.server_ns)}"

    @property
    def client_host(self) -> str:
        return f"root@{self.address(self.client_ns)}"

    def settings(self, **changes: Any) -> dict[str, Any]:
        given = dict(
            server_host=self.server_host,
            client_host=self.client_host,
            server_address=DATA_SERVER,
            ssh_config=str(self.ssh_config),
        )
        return {**given, **changes}

    def sshd_config(self, namespace: str, extra: str = "") -> Path:
        return write_sshd_config(self.keys, namespace, self.address(namespace), self.keys, extra)

    def start_sshd(self, namespace: str, config_file: Path | None = None) -> None:
        self.stop_sshd(namespace)
        command = [*netns.exec_prefix(namespace), "/usr/sbin/sshd", "-D", "-e", "-f"]
        process = subprocess.Popen(
            [*command, str(config_file or self.sshd_config(namespace))],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.sshd[namespace] = process
        wait_for(lambda: _listening(self.address(namespace)), 20, 0.05, process)

    def stop_sshd(self, namespace: str) -> None:
        """Ends the namespace's sshd and every session it serves (as a host going away would), and waits until they
        are gone (a new sshd could not listen beside the old one)."""
        if namespace in self.sshd:
            self.sshd.pop(namespace).kill()
        killed = [pid for pid in namespace_pids(namespace) if "sshd" in command_of(pid)]
        for pid in killed:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: all(exited(pid) for pid in killed), 10, 0.02)


def _keys(directory: Path, namespaces: list[tuple[str, str]]) -> Path:
    """A client key every sshd accepts, a host key per namespace, known_hosts and an ssh config for them all
    (NAMESPACES: each with its sshd's address); the ssh config's path."""
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / "id_ed25519"))
    (directory / "authorized_keys").write_text((directory / "id_ed25519.pub").read_text())
    known = []
    for namespace, address in namespaces:
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / f"host_{namespace}"))
        known.append(f"{address} {(directory / f'host_{namespace}.pub').read_text().strip()}")
    (directory / "known_hosts").write_text("\n".join(known) + "\n")
    ssh_config = directory / "ssh_config"
    ssh_config.write_text(
        f"""Host {" ".join(address for _, address in namespaces)}
  IdentityFile {directory}/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile {directory}/known_hosts
  StrictHostKeyChecking yes
"""
    )
    return ssh_config


def _control_link(bed: HostPair, namespace: str, number: int) -> None:
    outside, inside = control(bed.index, "server" if namespace == bed.server_ns else "client")
    assert not _on_a_link_here(inside), f"{inside} is already on a link here (another run's?)"
    here, there = f"clrm{TAG}h{number}", f"clrm{TAG}n{number}"
    run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
    run("ip", "link", "set", there, "netns", namespace)
    run("ip", "addr", "add", f"{outside}/30", "dev", here)
    run("ip", "link", "set", here, "up")
    run(*netns.exec_prefix(namespace), "ip", "addr", "add", f"{inside}/30", "dev", there)
    run(*netns.exec_prefix(namespace), "ip", "link", "set", there, "up")


@contextmanager
def host_pairs(count: int, keys: Path) -> Iterator[list[HostPair]]:
    """COUNT pairs of hosts, each namespace with its sshd, all gone after the block (the control veths go with their
    namespaces)."""
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    listed = [
        (namespace, control(index, role)[1])
        for index in range(count)
        for namespace, role in zip(pair_namespaces(index), ("server", "client"), strict=True)
    ]
    ssh_config = _keys(keys, listed)
    beds = [HostPair(index, keys, ssh_config) for index in range(count)]
    with ExitStack() as stack:
        for bed in beds:
            stack.enter_context(
                netns.namespace_pair(
                    netns.NamespacePair(*bed.namespaces, server_address=DATA_SERVER, client_address=DATA_CLIENT)
                )
            )
            stack.callback(lambda bed=bed: [bed.stop_sshd(namespace) for namespace in bed.namespaces])
            for namespace in bed.namespaces:
                _control_link(bed, namespace, 2 * bed.index + (namespace == bed.client_ns))
                bed.start_sshd(namespace)
        yield beds


def _scratch_patterns(name: str) -> list[str]:
    """Where a sweep named NAME keeps files on an end: its working directory on a host, and the scratch
    directories (trial files, kernel copy counts, message files) an end of its own would use."""
    return [
        f"/tmp/copylab-remote-{name}-*",
        f"/tmp/copylab-trial-{name}-*",
        f"/tmp/copylab-kcopy-{name}-*",
        f"/dev/shm/copylab-files-{name}-*",
    ]


def _files_on(namespace: str | None, patterns: list[str]) -> list[str]:
    """The paths matching PATTERNS as seen from NAMESPACE (None: the controller's)."""
    listing = "for p in " + " ".join(patterns) + '; do [ -e "$p" ] && echo "$p"; done; true'
    prefix = netns.exec_prefix(namespace) if namespace else []
    return subprocess.run([*prefix, "sh", "-c", listing], capture_output=True, text=True, timeout=30).stdout.split()


def _leftovers(name: str, namespaces: list[str]) -> list[str]:
    found = [f"{path} on the controller" for path in _files_on(None, _scratch_patterns(name))]
    for namespace in namespaces:
        found += [f"{path} on host {namespace}" for path in _files_on(namespace, _scratch_patterns(name))]
    found += [f"process {pid} ({command_of(int(pid))[:60]})" for pid in pgrep(f"copylab-remote-{name}-")]
    for namespace in namespaces:
        found += [
            f"process {pid} in {namespace} ({command_of(pid)[:60]})"
            for pid in namespace_pids(namespace)
            if "sshd" not in command_of(pid) and not exited(pid)
        ]
    return found


def leftovers(name: str, namespaces: list[str], settle_s: float = 3.0) -> Looked:
    """What a sweep named NAME left on the controller and on each host of NAMESPACES (looked for from inside it):
    working and scratch directories and files, and processes that have not ended.  An SSH session closed as the
    sweep ended may still be exiting (its command line already gone): what is there after SETTLE_S is left behind."""
    deadline = time.monotonic() + settle_s
    while (found := _leftovers(name, namespaces)) and time.monotonic() < deadline:
        time.sleep(0.1)
    where = f"on the controller and the hosts: {', '.join(_scratch_patterns(name))}, and their processes"
    return Looked(found, where)
