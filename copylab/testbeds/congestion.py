"""Whether an end can run its connections with the sweep's TCP congestion control.

The kernel must offer the algorithm (it may be a module not built in); a process without CAP_NET_ADMIN in its
network namespace may only choose one the host allows.  Root in namespaces of this machine, and copylab in a
user namespace of its own (which holds CAP_NET_ADMIN over its network namespaces), may choose any it offers;
on a remote host the SSH user is checked.
"""

from __future__ import annotations

DEFAULT = "/proc/sys/net/ipv4/tcp_congestion_control"
AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"
ALLOWED = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def refusal(name: str, available: str, allowed: str, privileged: bool, where: str) -> str | None:
    """Why NAME cannot be used WHERE, given the kernel's AVAILABLE and ALLOWED lists (their /proc text); None
    when it can."""
    offered = available.split()
    if name not in offered:
        return f"--congestion-control {name}: the {where} offers {', '.join(offered) or 'none'}"
    if not privileged and name not in allowed.split():
        return (
            f"--congestion-control {name}: the {where} allows only {', '.join(allowed.split()) or 'none'} "
            "without CAP_NET_ADMIN (net.ipv4.tcp_allowed_congestion_control)"
        )
    return None


def check_here(name: str) -> str | None:
    """Why NAME cannot be used in namespaces of this machine (created as root or in a user namespace); None
    when it can."""
    with open(AVAILABLE) as available:
        return refusal(name, available.read(), "", True, "kernel of this machine")
