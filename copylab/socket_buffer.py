"""The socket buffers a sweep's connections get, and whether its ends can give them.

copylab's programs ask with SO_SNDBUFFORCE and SO_RCVBUFFORCE, which pass over the host's caps
(net.core.wmem_max, net.core.rmem_max) for a process with CAP_NET_ADMIN: root, in namespaces of this machine or
on a remote host.  Without it (copylab in a user namespace, a remote user other than root) the kernel cuts a
larger request down to the cap and the programs refuse to run, so a size asked for must fit under the caps, and
where none is asked for the sweep takes PREFERRED or, under lower caps, the caps.
"""

from __future__ import annotations

from pathlib import Path

CAPS = {"send": "/proc/sys/net/core/wmem_max", "receive": "/proc/sys/net/core/rmem_max"}
# What a sweep asks for unless told: over veth with both ends on one CPU it held every message size's stream
# as fast as any larger buffer did (README: The socket buffers).
PREFERRED = 1 << 20


def caps_here() -> dict[str, int]:
    """This machine's caps on a buffer an unprivileged process asks for, per buffer."""
    return {buffer: int(Path(path).read_text()) for buffer, path in CAPS.items()}


def refusal(asked: int | None, caps: dict[str, int] | None, where: str) -> str | None:
    """Why buffers of ASKED bytes cannot be had WHERE, given its CAPS (None: it passes over them); None when they
    can (0 and None ask for no size: the kernel's, or the sweep's choice)."""
    if not asked or caps is None:
        return None
    for buffer, cap in caps.items():
        if asked > cap:
            return (
                f"--socket-buffer {asked}: the {where} caps a {buffer} buffer at {cap} bytes without CAP_NET_ADMIN "
                f"({CAPS[buffer].removeprefix('/proc/sys/').replace('/', '.')}): ask for at most that, raise it, "
                "or run as root"
            )
    return None


def chosen(asked: int | None, caps: dict[str, int] | None) -> int:
    """The buffer the sweep's connections get: ASKED, or with none asked PREFERRED within CAPS."""
    if asked is not None:
        return asked
    return PREFERRED if caps is None else min(PREFERRED, *caps.values())
