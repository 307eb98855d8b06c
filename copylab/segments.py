"""What a TCP segment over IPv4 carries, and the MTU at which its payload is whole pages.

TCP_ZEROCOPY_RECEIVE maps whole pages of payload.  With TCP timestamps, which every connection here negotiates, a
segment carries the MTU less TCP_IPV4_HEADERS (20 bytes of IP, 32 of TCP), so at MAPPING_MTU its payload is 15 whole
pages.  The kernel's tcp_mmap example quotes 61512, the IPv6 figure, at which nothing mapped over IPv4.
"""

from __future__ import annotations

PAGE = 4096
TCP_IPV4_HEADERS = 20 + 32
MAPPING_MTU = 15 * PAGE + TCP_IPV4_HEADERS
