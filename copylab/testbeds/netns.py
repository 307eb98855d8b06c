"""Two network namespaces joined by a veth pair: the hosts every trial runs between.

A namespace is copylab's only if copylab created it: creation leaves a marker
under /run/copylab, and nothing without a marker is ever changed or removed.
The veth pair is created directly inside the two namespaces, so no interface
of copylab's ever appears in the host's own namespace.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from pathlib import Path

from copylab import error_catalogue
from copylab.declarations.namespace_pair import NamespacePair
from copylab.error_catalogue import NETNS_COMMAND_FAILED
from copylab.testbeds import sink

MARKERS = Path(os.environ.get("COPYLAB_RUN_DIR", "/run/copylab")) / "netns"
INTERFACE = "cl0"


def _run(*command: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise NETNS_COMMAND_FAILED.error(command=" ".join(command), reason=message[-1] if message else "failed")
    return result.stdout


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise error_catalogue.NEEDS_ROOT.error(what=what)


def existing_namespaces() -> set[str]:
    names = Path("/run/netns")
    return {entry.name for entry in names.iterdir()} if names.is_dir() else set()


def _marker(name: str) -> Path:
    return MARKERS / name


def owned_namespaces() -> list[str]:
    return sorted(marker.name for marker in MARKERS.glob("*")) if MARKERS.is_dir() else []


def exec_prefix(namespace: str) -> list[str]:
    """The argument list that runs a command inside a namespace."""
    return ["ip", "netns", "exec", namespace]


def _owner(name: str) -> int | None:
    try:
        return int(json.loads(_marker(name).read_text())["owner_pid"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def check_free(pair: NamespacePair) -> None:
    """Raises unless each name is unused or a leftover of copylab's that no live copylab process owns."""
    present = existing_namespaces()
    for name in (pair.server, pair.client):
        if name in present and not _marker(name).exists():
            raise error_catalogue.NAMESPACE_NOT_OURS.error(name=name)
        owner = _owner(name)
        # Another sweep's namespaces would be torn down under it: never reuse them while it lives.
        if name in present and owner not in (None, os.getpid()) and Path(f"/proc/{owner}").exists():
            raise error_catalogue.NAMESPACE_IN_USE.error(name=name, pid=owner)


@contextmanager
def _exclusive() -> Iterator[None]:
    """Held while namespaces are checked, created or removed: two sweeps starting at once with the same names
    would otherwise both find them free, and each tear down what the other made."""
    MARKERS.mkdir(parents=True, exist_ok=True)
    with open(MARKERS.parent / "netns.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is done, then act.  Cut short, a `subprocess.run` stops waiting but
    its `ip netns add` goes on: the namespace then appears after the clean-up looked for it, unmarked, and is
    refused as someone else's.  Blocking the signals is not enough, as it holds for this thread alone: the kernel
    hands them to another (numpy's), and Python runs the handler here all the same.  So the handlers only take
    note, and what they noted is raised again at the end."""
    noted: list[int] = []
    handlers: dict[signal.Signals, signal._HANDLER] = {}
    try:
        for held in HELD:
            handlers[held] = signal.signal(held, lambda signum, _frame: noted.append(signum))
        # The commands inherit the blocked mask: a Ctrl-C to the whole process group does not cut them short.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # what was held back is noted now
    finally:
        for held, handler in handlers.items():
            signal.signal(held, handler)
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)


def up(pair: NamespacePair) -> None:
    """Creates both namespaces and the link; refuses to touch namespaces it did not create."""
    require_root("setting up namespaces")
    with _exclusive():
        check_free(pair)
        _remove([pair.server, pair.client])
        try:
            with _uninterrupted():  # an interruption arrives once the pair is whole, and is cleaned up below
                for name in (pair.server, pair.client):
                    _marker(name).write_text(json.dumps({**asdict(pair), "owner_pid": os.getpid()}))
                for command in setup_commands(pair):
                    _run(*command)
        except BaseException:
            with _uninterrupted():  # nor is the clean-up cut short, by a second signal
                _remove([pair.server, pair.client])
            raise


# The setting the last command of setup_commands() applies.
OPTMEM_SETTING = "net.core.optmem_max"


def setup_commands(pair: NamespacePair) -> list[list[str]]:
    """What creates the pair: both namespaces, the veth between them, addresses, links up, the sink device when
    asked for, then each namespace's optmem_max (it bounds outstanding zero-copy notifications)."""
    commands = [["ip", "netns", "add", pair.server], ["ip", "netns", "add", pair.client]]
    commands.append(
        [
            *("ip", "link", "add", "name", INTERFACE, "netns", pair.server, "mtu", str(pair.mtu)),
            *("type", "veth", "peer", "name", INTERFACE, "netns", pair.client, "mtu", str(pair.mtu)),
        ]
    )
    for name, address in ((pair.server, pair.server_address), (pair.client, pair.client_address)):
        inside = exec_prefix(name)
        commands += [
            [*inside, "ip", "addr", "add", f"{address}/{pair.prefix_length}", "dev", INTERFACE],
            [*inside, "ip", "link", "set", "lo", "up"],
            [*inside, "ip", "link", "set", INTERFACE, "up"],
        ]
    if pair.sink:
        commands += sink.setup_commands(exec_prefix(pair.server), pair.mtu)
    commands += [
        [*exec_prefix(name), "sysctl", "-q", "-w", f"{OPTMEM_SETTING}={pair.optmem_max}"]
        for name in (pair.server, pair.client)
    ]
    return commands


def down(pair: NamespacePair | None = None) -> list[str]:
    """Removes copylab's namespaces (those of pair, or all marked ones); returns what was removed."""
    with _exclusive(), _uninterrupted():
        return _remove([pair.server, pair.client] if pair else owned_namespaces())


def _remove(names: list[str]) -> list[str]:
    removed = []
    present = existing_namespaces()
    for name in names:
        if not _marker(name).exists():
            continue
        if name in present:
            # Deleting a namespace kills nothing: end what still runs inside first.
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(int(pid), 9)
            _run("ip", "netns", "delete", name)
            removed.append(name)
        _marker(name).unlink(missing_ok=True)
    return removed


def status() -> list[dict[str, str]]:
    """One entry per copylab namespace: its name, addresses and link state."""
    entries = []
    present = existing_namespaces()
    for name in owned_namespaces():
        entry = {"namespace": name, "present": "yes" if name in present else "no (stale marker)"}
        if name in present:
            links = json.loads(_run(*exec_prefix(name), "ip", "-j", "addr", "show", "dev", INTERFACE) or "[]")
            for link in links:
                entry["state"] = link.get("operstate", "?")
                entry["mtu"] = str(link.get("mtu", "?"))
                entry["addresses"] = ", ".join(f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []))
        entries.append(entry)
    return entries


@contextmanager
def namespace_pair(pair: NamespacePair) -> Iterator[NamespacePair]:
    """The namespaces exist inside the block and are gone after it, however it ends."""
    try:
        up(pair)
        yield pair
    finally:
        # Also when a signal lands as up() returns, the pair whole; never when up() refused someone else's.
        if os.getpid() in (_owner(pair.server), _owner(pair.client)):
            down(pair)
