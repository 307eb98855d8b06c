"""What a report says of the transport its sweep's connections used: the TCP congestion control and the socket
buffers, each set by the sweep rather than left to the host (copylab.declarations.settings), and why."""

from __future__ import annotations

from copylab.declarations import settings
from copylab.formatting import code, fmt_size
from copylab.record.manifest import Manifest


def congestion_setting(manifest: Manifest) -> str:
    chosen = manifest.parameters.congestion_control
    default = manifest.host.congestion_default
    if not chosen:
        return "the host's default, not recorded (a sweep from before copylab set it)"
    return chosen + (f" (the host's default: {default})" if default else "")


def socket_buffer_setting(manifest: Manifest) -> str:
    chosen = manifest.parameters.socket_buffer
    if chosen:
        return f"{fmt_size(chosen)} send and receive at both ends (the kernel holds twice that)"
    column = settings.get("socket_buffer").column
    if column is not None and manifest.schema_version < column.since:
        return "sized by the kernel as each connection went (a sweep from before copylab set them)"
    return "sized by the kernel as each connection went (`--socket-buffer 0`)"


def _socket_buffers(manifest: Manifest) -> str:
    """Whether the connections' buffers were fixed, and why."""
    chosen = manifest.parameters.socket_buffer
    why = (
        "Left to the kernel, a connection's receive buffer grows as the connection goes and settles at a size of "
        "its own for the trial's life. With both ends on one CPU, that size set how the two ends shared the CPU, so "
        "identical trials fell into two throughputs, one per size (docs/method.md: The socket buffers; `./inv bench` "
        "measures both on the host)."
    )
    if not chosen:
        return f" The socket buffers were sized by the kernel. {why}"
    return (
        f" Every connection's send and receive buffers were fixed at {fmt_size(chosen)} (`--socket-buffer`), which "
        "the kernel doubles for its bookkeeping: every program reads them back and refuses to run on other "
        f"sizes. {why}"
    )


def paragraph(manifest: Manifest) -> str:
    """The method's paragraph: which congestion control and socket buffers the connections used, and why they are
    set rather than left to the host."""
    chosen = manifest.parameters.congestion_control
    if not chosen:
        return (
            "**Transport.** The connections used the host's default TCP congestion control, which this sweep did "
            "not record."
        ) + _socket_buffers(manifest)
    default = manifest.host.congestion_default
    text = (
        f"**Transport.** Every connection used TCP congestion control {code(chosen)} (`--congestion-control`), set "
        "on each socket at both ends and read back from it for every trial."
    )
    if default and default != chosen:
        text += f" The host's own default is {code(default)}: left to it, the results would depend on the host."
    return (
        text
        + (
            " The setting is not left to the host because it changes what the sweep measures. A congestion control "
            "that paces its sends by a timer (as bbr does without a pacing qdisc) decides how many messages share a "
            "packet and how fast a stream may go. The pacing, not the sending paths' copies, then sets the pace "
            "(docs/method.md: Why cubic; `./inv bench` measures both on the host)."
        )
        + _socket_buffers(manifest)
    )
