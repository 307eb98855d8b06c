"""Two hosts reached over SSH (Fabric): the server's end on one, the client's on the other.

Each host gets a private directory under /tmp holding copylab's C sources, their build and every trial's
files; it is removed, and every process copylab started there is killed, when the sweep ends however it ends.
A process runs as the session leader sshd makes of its command, so killing that session ends the program,
its perf wrapper and whatever they started; `timeout` bounds each one even when nobody is left to kill it.
Authentication is OpenSSH's (agent, keys, ssh_config); a host key must already be known unless the ssh
config's StrictHostKeyChecking says otherwise.  copylab never asks for a password.
"""

from __future__ import annotations

import io
import platform
import re
import secrets
import shlex
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import fabric
import paramiko
from invoke.exceptions import CommandTimedOut

from copylab.declarations import implementations, socket_buffer
from copylab.declarations.config import HOST_PATTERN
from copylab.declarations.sweep_config import SweepConfig
from copylab.errors import CopylabError
from copylab.paths import CSRC
from copylab.programs import perf
from copylab.record.manifest import EndRecord, Host, Link
from copylab.testbeds import congestion
from copylab.testbeds.testbed import HOST_PROGRAMS, Completed, End, EndLost, Started, Testbed

CONNECT_TIMEOUT_S = 10
TOOLS = ("gcc", "make", "tar", "timeout", "taskset", "pkill", "mkfifo")
# The offloads that decide whether MSG_ZEROCOPY pages reach the NIC uncopied, as ethtool -k names them.
OFFLOADS = (
    "scatter-gather",
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
)
_EXIT_MARK = "copylab-exit-status "
_POLL_S = 0.005


def _kill_started(directory: str) -> str:
    """A shell loop that kills the session of every process started from DIRECTORY (by its pid files)."""
    return f'for f in {directory}/*.pid; do [ -s "$f" ] && pkill -KILL -s "$(cat "$f")"; done; true'


class _RemoteProcess(Started):
    """A command run by its own sshd session; its exit status is reported by the shell that waited for it."""

    def __init__(self, end: RemoteEnd, command: list[str], deadline_s: float) -> None:
        self.end = end
        self.pidfile = f"{end.work}/{secrets.token_hex(6)}.pid"
        self._returncode: int | None = None
        self._promise = end.call(
            "start",
            # $$: the session leader sshd made of this shell, whose session holds everything started below.
            f"echo $$ > {self.pidfile}; timeout -s KILL {deadline_s:.0f} {shlex.join(command)}; "
            f'echo "{_EXIT_MARK}$?" >&2',
            asynchronous=True,
        )

    def wait(self, timeout: float) -> tuple[str, str]:
        ends = time.monotonic() + timeout
        runner = self._promise.runner
        while not runner.process_is_finished:
            if not self.end.connected():
                raise EndLost(f"{self.end.label}: the SSH connection dropped during the trial")
            if time.monotonic() >= ends:
                raise subprocess.TimeoutExpired(self.pidfile, timeout)
            time.sleep(_POLL_S)
        try:
            result = self._promise.join()
        except Exception as error:  # invoke re-raises whatever broke its I/O threads
            raise EndLost(f"{self.end.label}: {error}") from None
        lines = result.stderr.splitlines()
        marks = [line for line in lines if line.startswith(_EXIT_MARK)]
        if not marks:
            raise EndLost(f"{self.end.label}: the SSH session ended before its command did")
        status = int(marks[-1].removeprefix(_EXIT_MARK))
        # A shell reports death by signal N as 128 + N.
        self._returncode = -(status - 128) if status > 128 else status
        stderr = "\n".join(line for line in lines if not line.startswith(_EXIT_MARK))
        return result.stdout, stderr

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def kill(self) -> None:
        if self._returncode is None and self.end.connected():
            with suppress(EndLost, subprocess.TimeoutExpired):
                self.end.call("end a process", f'pkill -KILL -s "$(cat {self.pidfile})"; true', timeout=30)
            with suppress(Exception):
                self.wait(5)


class RemoteEnd(End):
    """An end on a host reached over SSH, with a private working directory there."""

    def __init__(self, role: str, target: str, ssh_config: str | None) -> None:
        super().__init__(role, f"{role} host {target}")
        self.target = target
        self.ssh_config = ssh_config
        self.work = ""  # /tmp/copylab-remote-SWEEP-..., chosen before it is created so nothing can leak it
        self.connection: fabric.Connection | None = None
        self.buffer_caps: dict[str, int] | None = None  # read by check_socket_buffer

    # ------------------------------------------------------------ the SSH connection

    def _new_connection(self) -> fabric.Connection:
        match = HOST_PATTERN.fullmatch(self.target)
        assert match is not None  # the sweep's settings were validated
        config = fabric.Config(runtime_ssh_path=self.ssh_config) if self.ssh_config else fabric.Config()
        port = int(match["port"]) if match["port"] else None
        connection = fabric.Connection(
            match["host"], user=match["user"], port=port, config=config, connect_timeout=CONNECT_TIMEOUT_S
        )
        # Fabric accepts any host key by default; copylab trusts what OpenSSH would.
        keys = connection.client.get_host_keys()
        known = connection.ssh_config.get("userknownhostsfile", "~/.ssh/known_hosts ~/.ssh/known_hosts2")
        for path in [*known.split(), "/etc/ssh/ssh_known_hosts"]:
            with suppress(OSError):
                keys.load(str(Path(path).expanduser()))
        checking = connection.ssh_config.get("stricthostkeychecking", "ask").lower()
        policy = paramiko.AutoAddPolicy() if checking in ("no", "off", "accept-new") else paramiko.RejectPolicy()
        connection.client.set_missing_host_key_policy(policy)
        return connection

    def connect(self) -> None:
        """Opens the connection; a one-line CopylabError naming the host and the cause when it cannot."""
        if self.connection is not None:
            with suppress(Exception):
                self.connection.close()
        connection = self._new_connection()
        host = f"{self.role} host {self.target}"
        try:
            connection.open()
        except paramiko.BadHostKeyException:
            raise CopylabError(
                f"{host}: its host key does not match known_hosts (a changed or impersonated host); fix known_hosts"
            ) from None
        except paramiko.AuthenticationException:
            raise CopylabError(
                f"{host}: the SSH server refused every key offered (copylab uses your agent, keys and ssh config "
                "and never asks for a password)"
            ) from None
        except paramiko.SSHException as error:
            if "not found in known_hosts" in str(error):
                raise CopylabError(
                    f"{host}: its host key is unknown; connect once with ssh to check and record it, or set "
                    "StrictHostKeyChecking accept-new in the ssh config"
                ) from None
            raise CopylabError(f"{host}: SSH failed: {error}") from None
        except (OSError, EOFError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error) or "timed out"
            raise CopylabError(f"{host}: cannot connect over SSH ({reason})") from None
        self.connection = connection

    def connected(self) -> bool:
        return self.connection is not None and self.connection.is_connected

    def call(self, purpose: str, command: str, timeout: float | None = None, asynchronous: bool = False) -> Any:
        """Runs a shell COMMAND on the host; EndLost when the connection is gone."""
        if not self.connected():
            raise EndLost(f"{self.label}: not connected (while trying to {purpose})")
        assert self.connection is not None
        try:
            return self.connection.run(
                command, hide=True, warn=True, in_stream=False, timeout=timeout, asynchronous=asynchronous
            )
        except CommandTimedOut:
            raise subprocess.TimeoutExpired(command, timeout or 0) from None
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise EndLost(f"{self.label}: the SSH connection broke ({error or type(error).__name__})") from None

    # ------------------------------------------------------------ End

    def program(self, name: str, sanitize: str | None = None) -> str:
        return f"{self.work}/build{'-' + sanitize if sanitize else ''}/bin/{name}"

    def start(self, command: list[str], deadline_s: float) -> Started:
        return _RemoteProcess(self, command, deadline_s)

    def run(self, command: list[str], timeout: float = 30) -> Completed:
        result = self.call("run " + command[0], shlex.join(command), timeout=timeout)
        return Completed(result.exited, result.stdout, result.stderr)

    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        directory = f"{self.work}/{prefix}{secrets.token_hex(6)}"
        try:
            self._check(self.call("create a trial directory", f"mkdir -m 700 {directory}"), "mkdir")
            yield directory
        finally:
            if self.connected():
                with suppress(EndLost, subprocess.TimeoutExpired):
                    self.call("remove a trial directory", f"rm -rf {directory}", timeout=30)

    def make_fifos(self, paths: list[str]) -> None:
        self._check(self.call("create fifos", shlex.join(["mkfifo", "-m", "600", *paths])), "mkfifo")

    def read(self, path: str, offset: int = 0) -> str:
        text: str = self.call("read " + path, f"tail -c +{offset + 1} {shlex.quote(path)} 2>/dev/null || true").stdout
        return text

    def _check(self, result: Any, what: str) -> None:
        if result.exited != 0:
            raise EndLost(f"{self.label}: {what} failed: {result.stderr.strip() or result.exited}")

    # ------------------------------------------------------------ the working directory

    def create_work(self, sweep: str, owner: str) -> None:
        """Removes this end's directories that an earlier run of this sweep left, then creates its own.
        (Both ends may be one host: OWNER names the end too.)"""
        owner = f"{owner}:{self.role}"
        self.call(
            "remove what an earlier run left",
            f"for d in /tmp/copylab-remote-{sweep}-*; do "
            f'[ "$(cat "$d/owner" 2>/dev/null)" = {shlex.quote(owner)} ] || continue; '
            f'{_kill_started(chr(34) + "$d" + chr(34))}; rm -rf "$d"; done; true',
            timeout=60,
        )
        self.work = f"/tmp/copylab-remote-{sweep}-{secrets.token_hex(6)}"
        self.files = f"{self.work}/files"
        created = self.call(
            "create its working directory",
            f"mkdir -m 700 {self.work} && mkdir {self.files} && echo {shlex.quote(owner)} > {self.work}/owner",
        )
        if created.exited != 0:
            raise CopylabError(f"{self.label}: cannot create {self.work}: {created.stderr.strip()}")

    def remove_work(self) -> None:
        """Kills everything started from the working directory and removes it; says so when it cannot."""
        if not self.work:
            return
        try:
            if not self.connected():
                self.connect()
            self.call(
                "remove its working directory",
                f"{_kill_started(self.work)}; rm -rf {self.work}",
                timeout=60,
            )
            self.work = ""
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
            raise CopylabError(
                f"{self.label}: {', '.join(missing)} not found (copylab builds and runs its C programs there: "
                "install gcc make tar coreutils util-linux procps)"
            )

    def check_congestion_control(self, name: str) -> None:
        lists = self.call(
            "read its congestion controls",
            f"id -u; cat {congestion.AVAILABLE}; cat {congestion.ALLOWED} 2>/dev/null || echo",
        ).stdout.splitlines()
        uid, available, allowed = (*lists, "", "", "")[:3]
        why = congestion.refusal(name, available, allowed, uid.strip() == "0", self.label)
        if why:
            raise CopylabError(why)

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
            raise CopylabError(f"{self.label}: cannot read {', '.join(socket_buffer.CAPS.values())}") from None
        self.buffer_caps = None if uid.strip() == "0" else limits
        why = socket_buffer.refusal(asked, self.buffer_caps, self.label)
        if why:
            raise CopylabError(why)

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
            raise CopylabError(f"{self.label}: cannot copy the C sources there over SFTP ({error})") from None
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
        interface = (
            f"ip -o addr show to {address} | awk '{{print $2; exit}}'"
            if self.role == "server"
            else f"ip -o route get {address} | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'"
        )
        script = f"""
echo "hostname=$(hostname)"; echo "kernel=$(uname -r)"
echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
echo "cores=$(nproc)"; echo "memory_kb=$(sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo)"
v=$(systemd-detect-virt 2>/dev/null)
[ -n "$v" ] || {{ grep -qw hypervisor /proc/cpuinfo && v="unknown hypervisor" || v="none detected"; }}
echo "virt=$v"
echo "congestion=$(cat {congestion.DEFAULT} 2>/dev/null)"
i=$({interface}); echo "interface=$i"
[ -n "$i" ] || exit 0
echo "mtu=$(cat /sys/class/net/$i/mtu)"
if command -v ethtool >/dev/null; then
  echo "driver=$(ethtool -i $i 2>/dev/null | sed -n 's/^driver: //p')"
  ethtool -k $i 2>/dev/null | sed -n 's/^\\([a-z-]*\\): \\(.*\\)/offload:\\1=\\2/p'
else
  echo "driver=$(basename "$(readlink /sys/class/net/$i/device/driver 2>/dev/null)" 2>/dev/null)"
fi
"""
        lines = self.call("describe itself", script).stdout.splitlines()
        values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("offload:"))
        offloads = {
            key.removeprefix("offload:"): value
            for key, value in (line.split("=", 1) for line in lines if line.startswith("offload:"))
            if key.removeprefix("offload:") in OFFLOADS
        }
        memory_kb = values.get("memory_kb", "")
        host = Host(
            hostname=values.get("hostname", "unknown"),
            kernel=values.get("kernel", "unknown"),
            cpu_model=values.get("cpu") or "unknown",
            cores=int(values.get("cores") or 0),
            memory_gib=round(int(memory_kb) / 2**20, 1) if memory_kb.isdigit() else float("nan"),
            virtualization=values.get("virt", "unknown"),
            congestion_default=values.get("congestion") or None,
        )
        if not values.get("interface"):
            return host, None
        mtu = values.get("mtu", "")
        link = Link(values["interface"], values.get("driver") or None, int(mtu) if mtu.isdigit() else None, offloads)
        return host, link

    def tune(self, interface: str | None, mtu: int, optmem_max: int) -> dict[str, str]:
        """Sets the sweep's optmem_max and MTU; returns the values to restore, by setting."""
        before = {"net.core.optmem_max": self.call("read optmem_max", "sysctl -n net.core.optmem_max").stdout.strip()}
        commands = [f"sysctl -qw net.core.optmem_max={optmem_max}"]
        if interface:
            before["mtu"] = self.call("read the MTU", f"cat /sys/class/net/{interface}/mtu").stdout.strip()
            commands.append(f"ip link set dev {interface} mtu {mtu}")
        result = self.call("tune it", " && ".join(commands))
        if result.exited != 0:
            raise CopylabError(f"{self.label}: --tune-remote failed: {result.stderr.strip()} (it needs root there)")
        return before

    def restore(self, interface: str | None, before: dict[str, str]) -> None:
        commands = []
        if "net.core.optmem_max" in before:
            commands.append(f"sysctl -qw net.core.optmem_max={before['net.core.optmem_max']}")
        if interface and "mtu" in before:
            commands.append(f"ip link set dev {interface} mtu {before['mtu']}")
        try:
            if not self.connected():
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
        programs = implementations.programs(self.config.members)
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
                        raise CopylabError(f"{end.label}: the C build failed: {unbuilt[name]}")
                for name, why in unbuilt.items():
                    print(f"copylab: {name} does not build on the {end.label}: {why}", file=sys.stderr)
            self.records = []
            for end in self.ends:
                host, link = end.describe(self.server_address)
                if end.role == "server" and link is None:
                    raise CopylabError(f"{end.label}: no interface there has the address {self.server_address}")
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
        for end in self.ends:
            if end.connected():
                continue
            try:
                end.connect()
            except CopylabError as error:
                raise CopylabError(
                    f"{error}; the connection was lost during the sweep: everything measured is saved, finish "
                    "with --resume"
                ) from None
            # What the lost session had started there ends now, not at its deadline.
            with suppress(EndLost, subprocess.TimeoutExpired):
                end.call("end the lost trial's processes", _kill_started(end.work), timeout=30)
