"""The report between two hosts: which of its sweeps mean something over a real link, and the settings every one of
its sweeps runs with there (the hosts, the address on the data path, the ssh config, the card's own MTU)."""

from __future__ import annotations

import ipaddress
import socket
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from copylab.declarations.config import make_config
from copylab.error_catalogue import CANNOT_RESOLVE, LOOPBACK_SERVER, NO_INTERFACE
from copylab.testbeds.remote import RemoteEnd

# Why a reported sweep is left out between two hosts, by what makes it one of this machine's alone.
NOT_BETWEEN_HOSTS = {
    "sink": "the sink is a device of one machine's network namespace; between two hosts the bytes cross the card",
    "small": "small sender pages change a setting of the controller's own kernel, which sends nothing between two "
    "hosts; there the card's MTU decides what a receiver can map",
}


@dataclass(frozen=True)
class Link:
    """Two hosts over SSH: the server's, the client's, where the client reaches the server on the data path (None:
    the server host's SSH address) and the ssh config used for both."""

    server_host: str
    client_host: str
    server_address: str | None = None
    ssh_config: str | None = None

    def settings(self, mtu: int | None = None) -> dict[str, Any]:
        """The sweep settings that run a sweep between the two hosts (at the card's MTU when given)."""
        given = {
            "server_host": self.server_host,
            "client_host": self.client_host,
            "server_address": self.server_address,
            "ssh_config": self.ssh_config,
        }
        return {**given, **({"mtu": mtu} if mtu is not None else {})}

    @property
    def machines(self) -> frozenset[str]:
        """The two machines by host name (a port or user does not make another machine)."""
        return frozenset(target.split("@", 1)[1].split(":")[0] for target in (self.server_host, self.client_host))

    def name(self) -> str:
        return f"{self.server_host} to {self.client_host}"


def checked(link: Link) -> Link:
    """LINK with its server address found (the server host's, resolved) and every setting checked, as a sweep
    checks them: a one-line CopylabError before anything is created."""
    address = link.server_address
    if address is None:
        host = link.server_host.split("@", 1)[-1].split(":")[0]
        try:
            address = socket.gethostbyname(host)
        except OSError:
            raise CANNOT_RESOLVE.error(host=host) from None
        with suppress(ValueError):
            if ipaddress.IPv4Address(address).is_loopback:
                raise LOOPBACK_SERVER.error(host=host)
    resolved = Link(link.server_host, link.client_host, address, link.ssh_config)
    make_config("check", "quick", **resolved.settings())
    return resolved


def card_mtu(link: Link) -> int:
    """The MTU of the server's card on the data path, read over SSH: receiving by mapping runs at it."""
    assert link.server_address is not None
    end = RemoteEnd("server", link.server_host, link.ssh_config)
    end.connect()
    try:
        _, card = end.describe(link.server_address)
    finally:
        if end.connection is not None:
            end.connection.close()
    if card is None or card.mtu is None:
        raise NO_INTERFACE.error(label=end.label, address=link.server_address)
    return card.mtu


def not_between_hosts(experiment: str, profile: str) -> str | None:
    """Why a reported sweep means nothing between two hosts (the sink, small sender pages); None when it does."""
    config = make_config("check", profile, experiment=experiment)
    if config.path == "sink":
        return NOT_BETWEEN_HOSTS["sink"]
    if config.sender_pages != "large":
        return NOT_BETWEEN_HOSTS["small"]
    return None
