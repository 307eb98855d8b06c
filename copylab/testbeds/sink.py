"""The sink path (--path sink): a device in the server's namespace that drops the sender's datagrams once the stack
has built them.

The device is one end of a veth pair whose both ends stay in the server's namespace (a veth needs its peer up to
carry anything); its root qdisc is `blackhole`, which drops every packet handed to it, and a permanent neighbour
entry for SINK_ADDRESS means nothing waits on ARP.  Nothing is delivered, so MSG_ZEROCOPY's pinned pages are never
copied for a local receiver, as they are over the veth pair to the client.  The sweep's --mtu is the device's;
the sender segments longer datagrams with UDP_SEGMENT and never fragments them (csrc/sink.c).  The client program
runs in the server's namespace too and counts the qdisc's drops in its window.
"""

from __future__ import annotations

from copylab.declarations.sweep_config import SweepConfig
from copylab.error_catalogue import SINK_REFUSED, Line
from copylab.vocabulary.limits import SINK_ADDRESS, SINK_DEVICE
from copylab.vocabulary.values import NO_LAYOUT

PEER = "cl_sink_peer"
# The sink device's own address: SINK_ADDRESS's /30, so the route to it leaves through the device.
LOCAL = SINK_ADDRESS.rsplit(".", 1)[0] + "." + str(int(SINK_ADDRESS.rsplit(".", 1)[1]) - 1)
MAC = "02:00:00:00:00:02"


def refusal(config: SweepConfig) -> Line | None:
    """Why a sweep on the sink path cannot run, in one line (before anything is created); None when it can."""
    if config.path != "sink":
        return None
    why = None
    if config.server_host:
        why = "it is a device of this machine's server namespace; two hosts send over their network"
    elif set(config.workloads) != {"stream"}:
        why = "a sink answers no request: the workload is stream only (leave out rr)"
    elif set(config.receive) != {"copy"}:
        why = "nothing is received on the sink, so there is no receive mode to choose (leave --receive copy)"
    elif config.verify:
        why = "--verify: nothing arrives on the sink, so there are no bytes to verify (leave out --verify)"
    else:
        unfit = [member.name for member in config.members.values() if member.fixed_layout == NO_LAYOUT]
        if unfit:
            why = (
                f"{', '.join(unfit)} cannot send there: the sink takes datagrams of messages a copylab sender holds in "
                "memory (file senders and external tools send over TCP)"
            )
    return SINK_REFUSED.text(why=why) if why else None


def setup_commands(inside: list[str], mtu: int) -> list[list[str]]:
    """What makes the sink in the namespace INSIDE runs commands in."""
    link = ["ip", "link", "add", SINK_DEVICE, "mtu", str(mtu), "type", "veth", "peer", "name", PEER, "mtu", str(mtu)]
    return [
        [*inside, *link],
        [*inside, "ip", "addr", "add", f"{LOCAL}/30", "dev", SINK_DEVICE],
        [*inside, "ip", "link", "set", PEER, "up"],
        [*inside, "ip", "link", "set", SINK_DEVICE, "up"],
        [*inside, "ip", "neigh", "replace", SINK_ADDRESS, "lladdr", MAC, "dev", SINK_DEVICE, "nud", "permanent"],
        [*inside, "tc", "qdisc", "replace", "dev", SINK_DEVICE, "root", "blackhole"],
    ]
