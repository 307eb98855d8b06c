"""Constants the C programs and the Python side must agree on that are not a setting's limits.

csrc/limits.h carries them, generated with the settings' limits (copylab.declarations.settings.c_header); a test holds
the
header to both.
"""

from __future__ import annotations

# The study's message: this many separately allocated fields.
FIELD_COUNT = 8
# select's descriptor sets hold descriptors below FD_SETSIZE (1024); the server keeps 16 for its own (stdio,
# listener, control and perf fifos), so this many connections is what a select server can hold.
SELECT_MAX_CONNECTIONS = 1024 - 16

# A process on a CPU for at least this share of its window had none to spare: under open load a load client
# that busy cannot keep its schedule, and its rate is its own limit, not the server's.
SATURATED = 0.95

# The zero-copy senders' bytes in flight at least, and the programs' default: over veth a longer ring moved less
# (copylab.declarations.settings, zc_inflight); a sweep raises it to twice a network path's bandwidth-delay product.
DEFAULT_ZC_INFLIGHT = 256 << 10

# The kernel keeps a floor under a socket's buffers (SOCK_MIN_SNDBUF, SOCK_MIN_RCVBUF: about 4.5 KiB on 64-bit)
# and raises what is asked below it, so --socket-buffer asks for this much at least (or 0: the kernel sizes them).
SMALLEST_SOCKET_BUFFER = 4096

# The sink path (--path sink; copylab.testbeds.sink): the device in the server's namespace whose root qdisc drops
# every packet once the stack has built it, and the neighbour the sender's datagrams are addressed to (a permanent
# neighbour entry, so nothing waits on ARP).
SINK_DEVICE = "cl_sink"
SINK_ADDRESS = "10.203.1.2"

CONSTANTS = {
    "FIELD_COUNT": FIELD_COUNT,
    "DEFAULT_ZC_INFLIGHT": DEFAULT_ZC_INFLIGHT,
    "SELECT_MAX_CONNECTIONS": SELECT_MAX_CONNECTIONS,
    "SATURATED": SATURATED,
    "SMALLEST_SOCKET_BUFFER": SMALLEST_SOCKET_BUFFER,
    "SINK_DEVICE": SINK_DEVICE,
    "SINK_ADDRESS": SINK_ADDRESS,
}
