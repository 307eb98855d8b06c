"""Whether an end can run its connections with the sweep's TCP congestion control.

The kernel must offer the algorithm (it may be a module not built in); a process without CAP_NET_ADMIN in its
network namespace may only choose one the host allows.  Root in namespaces of this machine, and copylab in a
user namespace of its own (which holds CAP_NET_ADMIN over its network namespaces), may choose any it offers;
on a remote host the SSH user is checked.
"""

from __future__ import annotations

from copylab.error_catalogue import CONGESTION_NOT_ALLOWED, CONGESTION_UNOFFERED, Line

DEFAULT = "/proc/sys/net/ipv4/tcp_congestion_control"
AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def refusal(name: str, available: str, allowed: str, privileged: bool, where: str) -> Line | None:
    """Why NAME cannot be used WHERE, given the kernel's AVAILABLE and ALLOWED lists (their /proc text); None
    when it can."""
    offered = available.split()
    if name not in offered:
        return CONGESTION_UNOFFERED.text(name=name, where=where, offered=", ".join(offered) or "none")
    if not privileged and name not in allowed.split():
        return CONGESTION_NOT_ALLOWED.text(name=name, where=where, allowed=", ".join(allowed.split()) or "none")
    return None


def check_here(name: str) -> Line | None:
    """Why NAME cannot be used in namespaces of this machine (created as root or in a user namespace); None
    when it can."""
    with open(AVAILABLE) as available:
        return refusal(name, available.read(), "", True, "kernel of this machine")
