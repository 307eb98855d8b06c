"""Two network namespaces a sweep runs between, as a sweep names them: checked before anything is created."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from copylab.errors import CopylabError

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
                raise CopylabError(f"namespace name {name!r} must be a lowercase letter then up to 30 of [a-z0-9_]")
        if self.server == self.client:
            raise CopylabError("the server and client namespaces need different names")
        try:
            network = ipaddress.ip_network(f"{self.server_address}/{self.prefix_length}", strict=False)
            client = ipaddress.ip_address(self.client_address)
        except ValueError as error:
            raise CopylabError(f"bad namespace address: {error}") from None
        if not network.is_private or client not in network or client == ipaddress.ip_address(self.server_address):
            raise CopylabError(
                f"{self.server_address} and {self.client_address} must be two addresses of one private "
                f"/{self.prefix_length} subnet"
            )
        if not 68 <= self.mtu <= 65535:
            raise CopylabError(f"MTU {self.mtu} is outside 68..65535")
        if not 1024 <= self.optmem_max <= 1 << 26:
            raise CopylabError(f"optmem_max {self.optmem_max} is outside 1024..67108864")
