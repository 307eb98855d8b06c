"""Two network namespaces a sweep runs between, as a sweep names them: checked before anything is created."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from copylab.error_catalogue import (
    BAD_NAMESPACE_ADDRESS,
    BAD_NAMESPACE_NAME,
    MTU_OUT_OF_RANGE,
    NAMESPACE_SUBNET,
    NAMESPACES_ALIKE,
    OPTMEM_OUT_OF_RANGE,
)

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,30}$")


@dataclass(frozen=True)
class NamespacePair:
    server: str = "copylab_srv"
    client: str = "copylab_cli"
    server_address: str = "10.203.0.1"
    client_address: str = "10.203.0.2"
    prefix_length: int = 30
    mtu: int = 1500
    optmem_max: int = 131072
    sink: bool = False  # the server's namespace also holds the sink device (copylab.testbeds.sink)

    def __post_init__(self) -> None:
        for name in (self.server, self.client):
            if not NAME_PATTERN.fullmatch(name):
                raise BAD_NAMESPACE_NAME.error(name=name)
        if self.server == self.client:
            raise NAMESPACES_ALIKE.error()
        try:
            network = ipaddress.ip_network(f"{self.server_address}/{self.prefix_length}", strict=False)
            client = ipaddress.ip_address(self.client_address)
        except ValueError as error:
            raise BAD_NAMESPACE_ADDRESS.error(error=error) from None
        if not network.is_private or client not in network or client == ipaddress.ip_address(self.server_address):
            raise NAMESPACE_SUBNET.error(
                server=self.server_address, client=self.client_address, prefix=self.prefix_length
            )
        if not 68 <= self.mtu <= 65535:
            raise MTU_OUT_OF_RANGE.error(mtu=self.mtu)
        if not 1024 <= self.optmem_max <= 1 << 26:
            raise OPTMEM_OUT_OF_RANGE.error(optmem=self.optmem_max)
