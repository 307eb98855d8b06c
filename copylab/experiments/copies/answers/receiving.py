"""The receiver's side of where copying less pays: whether receiving by mapping pages (TCP_ZEROCOPY_RECEIVE, receive
`mmap`) pays over receiving by copy, at the MTU the sweep ran, with the share of the bytes mapped, copied inside
the call and copied by recv() reported apart.

The numbers come from the sweep that received by mmap (copylab.report.compose.arrange finds it by its manifest's
receive modes), or from the main sweep when it measured mmap itself; without either, one sentence says so and
which command measures it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from copylab.declarations import implementations
from copylab.experiments.copies import MAPPING_MTU
from copylab.experiments.copies.answers.sink import main_path, measure_command
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, markdown_table, threads_text
from copylab.report.results import Results, between_hosts, comparison_rows, present, receive_modes, verdict

MAPPED = "mmap"
PAGE = 4096
HEADERS = 20 + 32  # IPv4's header and TCP's with timestamps, which every connection here negotiates
# The three ways a byte received by mmap reached the receiver (docs/reference/columns.md).
SHARES = (
    ("rx_mapped_bytes", "Mapped"),
    ("rx_copybuf_bytes", "Copied in the call"),
    ("rx_copied_bytes", "Copied by recv()"),
)


def _shares(trials: pd.DataFrame, sender: str, size: int) -> dict[str, float] | None:
    """Each SHARES column's part of the bytes SENDER's ok trials at SIZE received by mmap, or None without any."""
    rows = trials[
        (trials["implementation"] == sender)
        & (trials["size_bytes"] == size)
        & (trials["receive"] == MAPPED)
        & (trials["status"] == "ok")
    ]
    totals = {column: float(rows[column].fillna(0).sum()) for column, _ in SHARES}
    whole = sum(totals.values())
    return {column: total / whole for column, total in totals.items()} if whole > 0 else None


def _rows(results: Results) -> list[dict[str, object]]:
    """A row per sender and size: mmap's throughput over copy's, its verdict and the three shares."""
    parameters = results.manifest.parameters
    threads, pinning = min(parameters.threads), parameters.pinning[0]
    found = []
    for sender in present(results):
        ratios = comparison_rows(
            results,
            implementations.contender(sender, MAPPED),
            sender,
            workload="stream",
            threads=threads,
            pinning=pinning,
        )
        for row in ratios.itertuples():
            shares = _shares(results.trials, sender, int(row.size_bytes))
            if shares is not None:
                found.append({"sender": sender, "size": int(row.size_bytes), "row": row, "shares": shares})
    return found


def _ratio(row: Any) -> str:
    """A comparisons row's ratio and 95% interval, marked faster or slower where it differs significantly."""
    mark = {"faster": " faster", "slower": " slower"}.get(verdict(row), "")
    return f"{fmt_num(row.ratio)} [{fmt_num(row.ratio_ci_low)}, {fmt_num(row.ratio_ci_high)}]{mark}"


def _summary(found: list[dict[str, object]]) -> str:
    """Per sender: at how many sizes mapping was faster and slower, and the share it mapped over them all."""
    sentences = []
    for sender in implementations.ordered({str(item["sender"]) for item in found}):
        mine = [item for item in found if item["sender"] == sender]
        verdicts = [verdict(item["row"]) for item in mine]
        mapped = [item["shares"]["rx_mapped_bytes"] for item in mine]  # type: ignore[index]
        low, high = fmt_pct(min(mapped)), fmt_pct(max(mapped))
        share = low if low == high else f"{low} to {high}"
        sentences.append(
            f"With {code(sender)} sending, receiving by mapping was significantly faster than by copy at "
            f"{verdicts.count('faster')} of {len(mine)} sizes and slower at {verdicts.count('slower')}; it mapped "
            f"{share} of the bytes."
        )
    return " ".join(sentences)


def _pages(mtu: int) -> str:
    """Whether a full segment's payload at MTU is whole pages over IPv4, which is what lets it map."""
    payload = mtu - HEADERS
    if payload % PAGE == 0:
        return (
            f"At this MTU a full segment carries {fmt_size(payload)} of payload over IPv4, {payload // PAGE} whole "
            "pages, so every page of it can map."
        )
    return (
        f"At this MTU a full segment carries {payload:,} B of payload over IPv4, not whole pages, so few pages can "
        f"map; at MTU {MAPPING_MTU:,} B it would carry whole pages ({measure_command('mmap')} runs there)."
    )


def receiver_section(mmap: Results | None, main: Results) -> str:
    """Whether receiving by mapping pays over receiving by copy, with the shares mapped and copied apart."""
    source = mmap if mmap is not None else main if MAPPED in receive_modes(main) else None
    if source is None:
        return (
            "Receiving by mapping pages was not measured, because the report was given no sweep that receives by "
            f"`mmap`; {measure_command('mmap')} measures it (then add its directory to `./inv report --data`)."
        )
    found = _rows(source)
    mtu = source.manifest.parameters.mtu
    if not found:
        return f"The sweep that received by `mmap` (MTU {mtu:,} B) has no comparison of it with receiving by copy."
    parameters = source.manifest.parameters
    table = markdown_table(
        {
            "Sender": code(str(item["sender"])),
            "Size": fmt_size(int(item["size"])),  # type: ignore[arg-type]
            "Throughput mmap / copy": _ratio(item["row"]),
            **{label: fmt_pct(item["shares"][column]) for column, label in SHARES},  # type: ignore[index]
        }
        for item in found
    )
    path = main_path(source) + ("" if between_hosts(source) else " (both ends on this host)")
    return "\n\n".join(
        [
            f"**In short:** These trials ran at MTU {mtu:,} B. {_summary(found)}",
            "Receiving by `mmap` asks the kernel with `TCP_ZEROCOPY_RECEIVE` to map the received pages into the "
            "receiver's memory instead of copying them. Only whole, page-aligned pages of payload map; what cannot "
            "map is copied into the receiver's buffer inside the same call, and what is left is read with `recv()`. "
            "So the table gives the three shares apart. " + _pages(mtu),
            f"Stream, {threads_text(min(parameters.threads))}, pinning {code(parameters.pinning[0])}, {path}: "
            "throughput receiving by `mmap` over receiving by copy with its 95% interval, "
            "marked faster or slower where it differs significantly (Holm-corrected tests), and where the bytes "
            "received by `mmap` came from.\n\n" + table,
        ]
    )
