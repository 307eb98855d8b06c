"""The socket buffers a sweep's connections get, and whether its ends can give them.

copylab's programs ask with SO_SNDBUFFORCE and SO_RCVBUFFORCE, which pass over the host's caps
(net.core.wmem_max, net.core.rmem_max) for a process with CAP_NET_ADMIN: root, in namespaces of this machine or
on a remote host.  Without it (copylab in a user namespace, a remote user other than root) the kernel cuts a
larger request down to the cap and the programs refuse to run, so a size asked for must fit under the caps, and
where none is asked for the sweep takes PREFERRED or, under lower caps, the caps.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Protocol

from copylab.error_catalogue import SOCKET_BUFFER_CAPPED, Line


class CappedEnds(Protocol):
    """What choosing a default needs of a testbed: the caps its ends put on a buffer (None: none)."""

    def socket_buffer_caps(self) -> dict[str, int] | None: ...


CAPS = {"send": "/proc/sys/net/core/wmem_max", "receive": "/proc/sys/net/core/rmem_max"}
# What a sweep asks for unless told: over veth with both ends on one CPU it held every message size's stream
# as fast as any larger buffer did (docs/method.md: The socket buffers).
PREFERRED = 1 << 20


def caps_here() -> dict[str, int]:
    """This machine's caps on a buffer an unprivileged process asks for, per buffer."""
    return {buffer: int(Path(path).read_text()) for buffer, path in CAPS.items()}


def refusal(asked: int | None, caps: dict[str, int] | None, where: str) -> Line | None:
    """Why buffers of ASKED bytes cannot be had WHERE, given its CAPS (None: it passes over them); None when they
    can (0 and None ask for no size: the kernel's, or the sweep's choice)."""
    if not asked or caps is None:
        return None
    for buffer, cap in caps.items():
        if asked > cap:
            sysctl = CAPS[buffer].removeprefix("/proc/sys/").replace("/", ".")
            return SOCKET_BUFFER_CAPPED.text(asked=asked, where=where, buffer=buffer, cap=cap, sysctl=sysctl)
    return None


def within(caps: dict[str, int] | None) -> int:
    """What a sweep that asks for no size gets under CAPS (None: none): PREFERRED, or the caps where lower."""
    return PREFERRED if caps is None else min(PREFERRED, *caps.values())


def default_on(testbed: CappedEnds) -> int:
    """The socket buffer a sweep that asks for none gets on TESTBED, said on the terminal where its caps cut it."""
    buffer = within(testbed.socket_buffer_caps())
    if buffer < PREFERRED:
        print(
            f"copylab: socket buffers of {buffer} bytes, not {PREFERRED}: the most the ends give a user without root "
            "(net.core.[rw]mem_max)",
            file=sys.stderr,
        )
    return buffer
