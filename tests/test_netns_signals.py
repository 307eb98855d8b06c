"""SIGTERM while namespaces are set up or removed, taken by a thread other than the one doing it.

run-sweep has such a thread (numpy's), and blocking a signal holds for the blocking thread alone: the kernel hands
the signal to the other thread, and Python still runs the handler in the main thread, in the middle of a command.
Cut short there, `subprocess.run` stops waiting but its `ip netns add` goes on, and the namespace appears after the
clean-up has looked for it: unmarked, so every later sweep refuses it as someone else's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from copylab.cli.main import INTERRUPTED, guarded
from copylab.errors import CopylabError
from copylab.testbeds import netns
from tests.conftest import needs_root

TAG = os.getpid() % 100000
PAIR = netns.NamespacePair(f"clsig{TAG}_s", f"clsig{TAG}_c")


class OtherThread(threading.Thread):
    """Sends SIGTERM to itself when told, as the kernel does to a thread of run-sweep that does not block it.
    Started before the set-up, so it does not inherit the set-up's blocked mask."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.told = threading.Event()
        self.sent = threading.Event()

    def run(self) -> None:
        self.told.wait()
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)  # its handler has run when this returns
        self.sent.set()

    def terminate(self) -> None:
        self.told.set()
        self.sent.wait()


def signal_during(
    command: tuple[str, ...], thread: OtherThread, started: list[subprocess.Popen[bytes]]
) -> Callable[..., str]:
    """netns._run, but COMMAND starts (and waits for its go on stdin), then the other thread takes a SIGTERM, then
    the command is let go and waited for, as subprocess.run would wait for it."""
    real = netns._run

    def run(*given: str) -> str:
        if given != command:
            return real(*given)
        process = subprocess.Popen(["sh", "-c", 'read go && exec "$@"', "sh", *given], stdin=subprocess.PIPE)
        started.append(process)
        thread.terminate()
        process.communicate(b"go\n")
        assert process.returncode == 0, given
        return ""

    return run


def left_behind() -> list[str]:
    present = netns.existing_namespaces()
    return [f"namespace {name}" for name in (PAIR.server, PAIR.client) if name in present] + [
        f"marker {name}" for name in (PAIR.server, PAIR.client) if (netns.MARKERS / name).exists()
    ]


def let_go(processes: list[subprocess.Popen[bytes]]) -> None:
    """Gives each command still waiting for its go the go, and waits for it."""
    for process in processes:
        if process.returncode is None:
            process.communicate(b"go\n")


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The commands signal_during started; each still waiting for its go gets it at the end, and what it made goes."""
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    let_go(processes)
    for name in (PAIR.server, PAIR.client):
        if name in netns.existing_namespaces():
            subprocess.run(["ip", "netns", "delete", name], check=True)
        (netns.MARKERS / name).unlink(missing_ok=True)


def interrupted(call: Callable[[], object]) -> int:
    """CALL's exit status under run-sweep's handlers: 130 when a signal ended it."""

    def status() -> int:
        call()
        return 0

    return guarded(status)


@needs_root
def test_sigterm_in_another_thread_during_ip_netns_add_leaves_no_namespace(monkeypatch, started):
    thread = OtherThread()
    thread.start()
    monkeypatch.setattr(netns, "_run", signal_during(("ip", "netns", "add", PAIR.client), thread, started))

    status = interrupted(lambda: netns.up(PAIR))
    let_go(started)  # an add the set-up stopped waiting for runs now, after the clean-up has looked

    assert status == INTERRUPTED, "the signal ended the set-up"
    assert left_behind() == [], "the clean-up removed everything the set-up made"
    netns.check_free(PAIR)  # a later sweep may use the names
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, []), "the signal is not blocked any more"


@needs_root
def test_sigterm_in_another_thread_during_clean_up_does_not_cut_it_short(monkeypatch, started):
    handler = signal.getsignal(signal.SIGTERM)
    netns.up(PAIR)
    assert signal.getsignal(signal.SIGTERM) is handler, "the set-up gave the caller's handler back"
    thread = OtherThread()
    thread.start()
    monkeypatch.setattr(netns, "_run", signal_during(("ip", "netns", "delete", PAIR.server), thread, started))

    status = interrupted(lambda: netns.down(PAIR))

    assert status == INTERRUPTED, "the signal acted once the clean-up was done"
    assert left_behind() == [], "both namespaces and their markers are gone"


@needs_root
def test_a_namespace_of_the_users_own_is_still_refused(started):
    subprocess.run(["ip", "netns", "add", PAIR.client], check=True)
    with pytest.raises(CopylabError, match=f"namespace {PAIR.client} exists and was not created by copylab"):
        netns.up(PAIR)
    assert PAIR.client in netns.existing_namespaces(), "the user's namespace is left alone"
    assert left_behind() == [f"namespace {PAIR.client}"], "nothing else was made, and nothing marked"


@needs_root
def test_a_signal_as_the_set_up_returns_still_takes_the_pair_down(monkeypatch, started):
    real = netns._exclusive
    held: list[str] = []

    @contextmanager
    def then_a_signal() -> Iterator[None]:
        with real():
            yield
        held.append("lock")
        if held == ["lock"]:  # the first is up()'s: the pair is whole, the block not yet entered
            raise KeyboardInterrupt

    monkeypatch.setattr(netns, "_exclusive", then_a_signal)
    with pytest.raises(KeyboardInterrupt), netns.namespace_pair(PAIR):
        pytest.fail("the block ran")
    assert left_behind() == [], "the pair went all the same"
