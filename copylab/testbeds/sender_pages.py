"""The pages the kernel copies a sender's bytes into: large or small, a setting of the whole host.

TCP copies what a process sends into a page fragment, which the kernel refills with 32 KiB pages ("large": several
4 KiB pages joined into one, the kernel's default) or, when net.core.high_order_alloc_disable is 1, with single
4 KiB pages ("small").  Over a veth the receiver is handed the sender's pages, and TCP_ZEROCOPY_RECEIVE maps only
single pages into the receiver (the kernel refuses joined ones since 2024): a copying sender's bytes can be received
by mapping only with small pages.

The sysctl is one value for the whole machine, not per network namespace.  A sweep holds it at its value while it
runs and puts the old value back after, and no two sweeps of this machine may want different values at once: a
sweep holds a shared lock while the value is already its own, an exclusive one while it changed it.  A sweep that
was killed before it put the value back leaves a record that `./inv netns-down` restores from.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from copylab.error_catalogue import NO_PAGES_SYSCTL, PAGES_HELD, PAGES_NEED_ROOT, PAGES_NOT_SET, Line
from copylab.testbeds.netns import MARKERS

SYSCTL = Path("/proc/sys/net/core/high_order_alloc_disable")
SYSCTL_NAME = "net.core.high_order_alloc_disable"
VALUES = {"large": "0", "small": "1"}
LOCK = MARKERS.parent / "sender-pages.lock"
# The value to put back, written while a sweep holds another one.
LEFT = MARKERS.parent / "sender-pages.json"


def current() -> str | None:
    """The host's value as the setting names it (large or small); None where the kernel has no such sysctl."""
    try:
        value = SYSCTL.read_text().strip()
    except OSError:
        return None
    return "small" if value == VALUES["small"] else "large"


def refusal_without_root(pages: str) -> Line | None:
    """Why a sweep without root cannot copy into PAGES pages (only root changes the host's value); None when it can."""
    host = current()
    if host is None or host == pages:
        return None
    return PAGES_NEED_ROOT.text(pages=pages, sysctl=SYSCTL_NAME, host=host)


@contextmanager
def held(pages: str) -> Iterator[None]:
    """Inside the block the host copies senders' bytes into PAGES pages; the old value is back after it.  Refused
    in one line, before anything changes, while another sweep of this machine holds the other value."""
    if current() is None:
        raise NO_PAGES_SYSCTL.error(pages=pages, sysctl=SYSCTL_NAME)
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "a") as lock:
        before = current() or "large"
        exclusive = before != pages
        try:
            fcntl.flock(lock, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PAGES_HELD.error(pages=pages, sysctl=SYSCTL_NAME) from None
        if not exclusive:
            yield
            return
        LEFT.write_text(json.dumps({"restore": before}))
        _write(pages)
        try:
            yield
        finally:
            _write(before)
            LEFT.unlink(missing_ok=True)


def restore_left() -> str | None:
    """Puts back the value a killed sweep left changed; what it restored, or None when nothing was left."""
    try:
        before = json.loads(LEFT.read_text())["restore"]
    except FileNotFoundError:
        return None
    with open(LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its sweep still runs, and will put the value back itself
        _write(before)
        LEFT.unlink(missing_ok=True)
    return f"{SYSCTL_NAME}={VALUES[before]} ({before} pages)"


def _write(pages: str) -> None:
    try:
        SYSCTL.write_text(VALUES[pages])
    except OSError as error:
        raise PAGES_NOT_SET.error(pages=pages, sysctl=SYSCTL_NAME, reason=error.strerror) from None
