"""The receiver's side of where copying less pays: whether receiving by mapping pages (TCP_ZEROCOPY_RECEIVE, receive
`mmap`) pays over receiving by copy, with the kernel's default (large) sender pages and with small ones, with the
share of the bytes mapped, copied inside the call and copied by recv() reported apart.

The numbers come from the sweeps that received by mmap (copylab.report.sections.compose.arrange finds them by their
manifests' receive modes and sender pages), or from the main sweep when it measured mmap itself; without either, one
sentence says so and which commands measure it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from copylab.declarations import implementations
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, fmt_span, markdown_table, threads_text
from copylab.report.experiments.copies.answers.sink import main_path, measure_command
from copylab.report.results import Results, between_hosts, comparison_rows, declared, present, receive_modes, verdict
from copylab.segments import MAPPING_MTU, PAGE, TCP_IPV4_HEADERS

MAPPED = "mmap"
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


def _rows(results: Results) -> list[dict[str, Any]]:
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


PAGES = {
    "large": "multi-page (32 KiB) buffers (the kernel's default)",
    "small": "single 4 KiB pages (`--sender-pages small`)",
}


def _pages_of(results: Results) -> str:
    return PAGES[results.manifest.parameters.sender_pages]


def _summary(results: Results, found: list[dict[str, Any]]) -> str:
    """Per sender: at how many sizes mapping was faster and slower, and the share it mapped over them all."""
    clauses = []
    for sender in implementations.ordered({str(item["sender"]) for item in found}):
        mine = [item for item in found if item["sender"] == sender]
        verdicts = [verdict(item["row"]) for item in mine]
        mapped = [item["shares"]["rx_mapped_bytes"] for item in mine]
        share = fmt_span(fmt_pct(min(mapped)), fmt_pct(max(mapped)))
        clauses.append(
            f"{code(sender)} faster at {verdicts.count('faster')} of {len(mine)} sizes and slower at "
            f"{verdicts.count('slower')}, with {share} of the bytes mapped"
        )
    return f"With {_pages_of(results)}: {'; '.join(clauses)}."


def _over_the_veth() -> str:
    """Why a sender's pages decide what maps when both ends are on one host."""
    return (
        "Over the veth the receiver is handed the sender's own pages, and the kernel maps only single 4 KiB pages. "
        "A copying sender's kernel copies its bytes into multi-page buffers of 32 KiB (not huge pages: 8 single "
        "pages allocated together), which cannot map. With `--sender-pages small` it copies them into single pages, "
        "which can; that setting "
        "(`net.core.high_order_alloc_disable=1`) holds for the whole host while the sweep runs. A zero-copy "
        "sender's pages are copied on delivery into new single pages, which can map either way. When no more "
        "than the copy buffer is queued, the kernel copies it all inside the call, so the share mapped also "
        "depends on how far the receiver lags."
    )


def _pages(mtu: int) -> str:
    """Whether a full segment's payload at MTU is whole pages over IPv4, which a NIC's buffers need for it to map."""
    payload = mtu - TCP_IPV4_HEADERS
    if payload % PAGE == 0:
        return (
            f"At this MTU a full segment carries {fmt_size(payload)} of payload over IPv4, {payload // PAGE} whole "
            "pages, so a NIC's receive buffers can hold whole pages to map."
        )
    return (
        f"At this MTU a full segment carries {payload:,} B of payload over IPv4, not whole pages, so a NIC's "
        f"receive buffers hold few whole pages to map; at MTU {MAPPING_MTU:,} B they would."
    )


def _table(results: Results, found: list[dict[str, Any]]) -> str:
    parameters = results.manifest.parameters
    path = main_path(results) + ("" if between_hosts(results) else " (both ends on this host)")
    table = markdown_table(
        {
            "Sender": code(str(item["sender"])),
            "Size": fmt_size(int(item["size"])),
            "Throughput mmap / copy": _ratio(item["row"]),
            **{label: fmt_pct(item["shares"][column]) for column, label in SHARES},
        }
        for item in found
    )
    return (
        f"With {_pages_of(results)}: stream, {threads_text(min(parameters.threads))}, CPU pinning "
        f"{code(parameters.pinning[0])}, {path}, MTU {parameters.mtu:,} B; {_trials(results)}.\n\n" + table
    )


def _trials(results: Results) -> str:
    """How many trials the sweep ran and how many each configuration rests on."""
    counts = results.summary["n"][results.summary["n"] > 0]
    spread = fmt_span(f"{int(counts.min())}", f"{int(counts.max())}") if not counts.empty else "0"
    return f"{len(results.trials):,} trials, {spread} successful per configuration"


def _median(results: Results, sender: str, size: int, receive: str) -> float | None:
    trials = results.trials
    rows = trials[
        (trials["implementation"] == sender)
        & (trials["size_bytes"] == size)
        & (trials["receive"] == receive)
        & (trials["status"] == "ok")
        & (trials["workload"] == "stream")
    ]
    return float(rows["throughput_gbps"].median()) if not rows.empty else None


def _span(ratios: list[float]) -> str:
    return fmt_span(f"{fmt_num(min(ratios))}×", f"{fmt_num(max(ratios))}×")


def _small_against_large(large: Results, small: Results) -> tuple[list[float], list[float], list[str]]:
    """For each copying sender and size both sweeps measured: receiving by copy with small pages over with large
    ones, and receiving by mapping with small pages over receiving by copy with large ones (medians)."""
    copy_ratios, best_ratios, senders = [], [], []
    for item in _rows(small):
        sender, size = str(item["sender"]), int(item["size"])
        if declared(small, sender).zero_copy:
            continue
        copy_large = _median(large, sender, size, "copy")
        copy_small, mapped_small = _median(small, sender, size, "copy"), _median(small, sender, size, MAPPED)
        if copy_large and copy_small is not None and mapped_small is not None:
            copy_ratios.append(copy_small / copy_large)
            best_ratios.append(mapped_small / copy_large)
            senders.append(sender)
    return copy_ratios, best_ratios, senders


def _verdict_on_small_pages(best_ratios: list[float]) -> str:
    if max(best_ratios) < 1:
        return "So mapping did not beat copying into the kernel's default pages here."
    if min(best_ratios) > 1:
        return "So mapping with small pages beat copying into the kernel's default pages here."
    return "So whether mapping beats copying into the kernel's default pages depended on the size."


def _what_small_pages_cost(copy_ratios: list[float], best_ratios: list[float], senders: list[str]) -> str:
    """Small pages against the kernel's default, for the copying senders both sweeps measured (_small_against_large)."""
    names = ", ".join(code(name) for name in implementations.ordered(set(senders)))
    return (
        f"Small pages cost something of their own. Receiving by copy from {names}, the median throughput with small "
        f"pages was {_span(copy_ratios)} of that with 32 KiB buffers. Receiving by mapping with small pages was "
        f"{_span(best_ratios)} of receiving by copy with 32 KiB buffers. These are medians of two sweeps, not a "
        f"paired comparison. {_verdict_on_small_pages(best_ratios)}"
    )


def receiver_section(large: Results | None, small: Results | None, main: Results) -> str:
    """Whether receiving by mapping pays over receiving by copy, with the kernel's default pages and with small ones,
    with the shares mapped and copied apart."""
    sweeps = [sweep for sweep in (large, small) if sweep is not None]
    if not sweeps and MAPPED in receive_modes(main):
        sweeps = [main]
    if not sweeps:
        return (
            "Receiving by mapping pages was not measured, because the report was given no sweep that receives by "
            f"`mmap`; {measure_command('mmap')} and {measure_command('mmap-small')} measure it (then add their "
            "directories to `./inv report --data`)."
        )
    measured = [(sweep, _rows(sweep)) for sweep in sweeps]
    measured = [(sweep, found) for sweep, found in measured if found]
    if not measured:
        return "The sweeps that received by `mmap` have no comparison of it with receiving by copy."
    in_short = [_summary(sweep, found) for sweep, found in measured]
    copy_ratios, best_ratios, senders = (
        _small_against_large(large, small) if large is not None and small is not None else ([], [], [])
    )
    if senders:
        effect = "slowed" if max(copy_ratios) < 1 else "sped up" if min(copy_ratios) > 1 else None
        in_short += [f"Small pages also {effect} receiving by copy."] if effect else []
        in_short.append(_verdict_on_small_pages(best_ratios))
    parts = [
        "**In short:** Receiving by mapping against receiving by copy, counting the sizes where it was "
        "significantly faster or slower. " + " ".join(in_short),
        "Receiving by `mmap` asks the kernel with `TCP_ZEROCOPY_RECEIVE` to map the received pages into the "
        "receiver's memory instead of copying them. Only whole, page-aligned pages of payload map; what cannot "
        "map is copied into the receiver's buffer inside the same call, and what is left is read with `recv()`. "
        "So the tables give the three shares apart: each gives throughput receiving by `mmap` over receiving by "
        "copy with its 95% interval, marked faster or slower where it differs significantly (Holm-corrected tests), "
        "and where the bytes received by `mmap` came from. "
        + (_pages(measured[0][0].manifest.parameters.mtu) if between_hosts(measured[0][0]) else _over_the_veth()),
        *(_table(sweep, found) for sweep, found in measured),
    ]
    if senders:
        parts.append(_what_small_pages_cost(copy_ratios, best_ratios, senders))
    elif small is None and not between_hosts(measured[0][0]):
        parts.append(f"Small pages were not measured; {measure_command('mmap-small')} measures them.")
    return "\n\n".join(part for part in parts if part)
