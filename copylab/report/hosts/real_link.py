"""What the answers of a sweep run between two hosts are for: a real link, named by its two hosts and the card that
carried the bytes (its driver, MTU and offloads, as ethtool -i and -k read them on the server's end).  Over the veth
there is nothing to say: the answers name the veth themselves."""

from __future__ import annotations

from copylab.formatting import md_escape
from copylab.record.manifest import EndRecord, Manifest
from copylab.report.blocks import Markdown
from copylab.report.results import Results


def _host(end: EndRecord) -> str:
    host = end.host
    return f"{end.target} ({host.cpu_model}, kernel {host.kernel})"


def card(end: EndRecord | None) -> str:
    """The card that carried an end's traffic, in words: interface, driver, MTU and the offloads that are on."""
    if end is None or end.link is None:
        return "an interface copylab could not name"
    link = end.link
    on = [name for name, state in sorted(link.offloads.items()) if state.startswith("on")]
    offloads = f"offloads on: {', '.join(on)}" if on else "no offload on"
    mtu = f"MTU {link.mtu}" if link.mtu else "MTU unknown"
    return f"{link.interface} (driver {link.driver or 'unknown'}, {mtu}; {offloads})"


def name(manifest: Manifest) -> str:
    """The link in a few words: the server host, its card, the client host."""
    ends = {end.role: end for end in manifest.ends}
    server, client = ends.get("server"), ends.get("client")
    left = _host(server) if server else "the server host"
    right = _host(client) if client else "the client host"
    return f"{left} to {right} over {card(server)}"


def statement(results: Results) -> str | None:
    """The sentence that says the answers are for a real link and names it; None for a sweep over the veth."""
    manifest = results.manifest
    if manifest.path != "network":
        return None
    ends = {end.role: end for end in manifest.ends}
    server = ends.get("server")
    mtu = server.link.mtu if server is not None and server.link is not None else None
    return md_escape(
        f"These answers are for a real link between two hosts: {name(manifest)}. Zero-copy sends (question 5) crossed "
        f"that card over TCP, and the share of their pages the kernel copied anyway is the one measured there"
        + (f"; receiving by mapping ran at the card's MTU, {mtu} B." if mtu else ".")
    )


def blocks(results: Results) -> list[Markdown]:
    """The statement as the report's block, where there is one."""
    text = statement(results)
    return [Markdown(text)] if text else []
