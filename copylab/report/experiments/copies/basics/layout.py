"""The report's section "What the message's layout costs": each sender measured with its message held as the
study holds it (8 fields, each allocated apart) and as --layout aligned or contiguous hold it, from the sweep's
other layouts (copylab.report.results.Layouts).  Every number is read from the rows and the analysis tables."""

from __future__ import annotations

import pandas as pd

from copylab.calibration.record import findings_for_copy
from copylab.declarations import implementations
from copylab.formatting import code, fmt_interval, fmt_num, fmt_pct, fmt_size, markdown_table
from copylab.report.experiments.copies.basics.queries import study
from copylab.report.prose import crossover_sentences, spoken
from copylab.report.results import Results, declared

HEADING = "# What the message's layout costs"
MECHANISM = (
    "A layout changes what the sending path touches, not the bytes sent. `fields` hands the kernel 8 iovec entries "
    "whose buffers lie wherever the allocator put them; `aligned` starts each on a page of its own; `contiguous` is "
    "one entry over one buffer. one_copy's `sendmsg()` copies each entry apart (a short copy per field pays the "
    "copy routine's start-up, and on CPUs whose `rep movsb` is slow for mid-sized blocks, see the copy-cost "
    "calibration, that start-up is large); zero_copy pins the pages each entry spans, so scattered fields pin more "
    "pages (counted below) and make more fragments per skb; two_copy packs the fields into one buffer whatever "
    "their layout."
)
COLUMNS = ("throughput_gbps", "cpu_ns_per_byte")


def _rows(layouts: pd.DataFrame) -> list[dict[str, object]]:
    summary = layouts[(layouts["workload"] == "stream") & (layouts["receive"] == implementations.BASELINE_RECEIVE)]
    table = []
    keys = ["implementation", "size_bytes", "threads", "pinning", "layout"]
    wide = summary[summary["metric"].isin(COLUMNS)].pivot_table(
        index=keys, columns="metric", values=["mean", "ci_low", "ci_high"], aggfunc="first"
    )
    for (name, size, threads, pinning, layout), row in wide.iterrows():
        entry: dict[str, object] = {
            "Sender": code(name),
            "Size": fmt_size(size),
            "Threads": threads,
            "Layout": layout,
        }
        throughput = [row.get((part, "throughput_gbps")) for part in ("mean", "ci_low", "ci_high")]
        # the unit in the heading: in each cell it wrapped onto a line of its own
        entry["Throughput, Gbit/s"] = fmt_interval(*throughput) if pd.notna(throughput[0]) else "not measured"
        cpu = row.get(("mean", "cpu_ns_per_byte"))
        entry["CPU ns/B"] = fmt_num(cpu) if pd.notna(cpu) else "not measured"
        if len(set(summary["pinning"])) > 1:
            entry["Pinning"] = pinning
        table.append(entry)
    return table


def _verdicts(comparisons: pd.DataFrame) -> list[str]:
    """Per sender and layout: at how many sizes the layout was significantly faster or slower than fields."""
    rows = comparisons[(comparisons["metric"] == "throughput_gbps") & (comparisons["workload"] == "stream")]
    sentences = []
    for (challenger, baseline), group in rows.groupby(["challenger", "baseline"], sort=False):
        better = group[group["significant"] & group["challenger_better"]]
        worse = group[group["significant"] & ~group["challenger_better"]]
        ratios = group["ratio"]
        sentences.append(
            f"{spoken(challenger)} against {spoken(baseline)}: significantly faster at {len(better)} and slower at "
            f"{len(worse)} of {len(group)} compared points (throughput ratio {fmt_num(ratios.min())} to "
            f"{fmt_num(ratios.max())})."
        )
    return sentences


def _copied_anyway(layouts: pd.DataFrame) -> str | None:
    """zero-copy senders: the share of sends the kernel copied anyway, per layout."""
    ok = layouts[(layouts["status"] == "ok") & layouts["zc_sends"].notna() & (layouts["zc_sends"] > 0)]
    if ok.empty or ok["layout"].nunique() < 2:
        return None
    shares = ok.groupby(["implementation", "layout"], sort=False)[["zc_copied", "zc_completed"]].sum()
    parts = [
        f"{code(name)} `{layout}` {fmt_pct(row.zc_copied / row.zc_completed)}"
        for (name, layout), row in shares.iterrows()
        if row.zc_completed > 0
    ]
    return "Sends the kernel copied anyway (SO_EE_CODE_ZEROCOPY_COPIED): " + ", ".join(parts) + "."


def _in_several_layouts(trials: pd.DataFrame) -> pd.DataFrame:
    """The TRIALS of the senders that appear in them in more than one layout."""
    return trials[trials.groupby("implementation")["layout"].transform("nunique") > 1]


def _pages_pinned(layouts: pd.DataFrame) -> list[dict[str, object]]:
    """zero-copy senders: pages pinned per message (zc_pages_per_message, measured by the sender), per size and
    layout; empty where no row of two layouts has it."""
    ok = _in_several_layouts(layouts[(layouts["status"] == "ok") & layouts["zc_pages_per_message"].notna()])
    if ok.empty:
        return []
    pages = ok.pivot_table(
        index=["implementation", "size_bytes"], columns="layout", values="zc_pages_per_message", aggfunc="mean"
    )
    return [
        {"Sender": code(name), "Size": fmt_size(size)}
        | {layout: fmt_num(value) if pd.notna(value) else "not measured" for layout, value in row.items()}
        for (name, size), row in pages.iterrows()
    ]


def _skb_shape(layouts: pd.DataFrame) -> list[dict[str, object]]:
    """Per sender, size and layout: the sender's transmitted skbs (BPF), their TCP segments and page fragments,
    per skb; empty where no sender has them in two layouts."""
    ok = _in_several_layouts(layouts[(layouts["status"] == "ok") & (layouts["snd_skbs"] > 0)])
    if ok.empty:
        return []
    sums = ok.groupby(["implementation", "size_bytes", "layout"])[
        ["bytes", "snd_skbs", "snd_skb_segments", "snd_skb_frags"]
    ].sum()
    return [
        {
            "Sender": code(name),
            "Size": fmt_size(size),
            "Layout": layout,
            "KiB per skb": fmt_num(row.bytes / row.snd_skbs / 1024),
            "Segments per skb": fmt_num(row.snd_skb_segments / row.snd_skbs),
            "Page fragments per skb": fmt_num(row.snd_skb_frags / row.snd_skbs),
        }
        for (name, size, layout), row in sums.iterrows()
    ]


def _copy_findings(results: Results, layouts: pd.DataFrame) -> str | None:
    """The calibration's findings (a copy path this CPU runs slowly) that a sender's own copy of a field meets."""
    record = results.manifest.calibration
    if record is None or not record.findings:
        return None
    met, touched = [], []
    for name in sorted(set(layouts["implementation"])):
        user_copy = declared(results, name).copies.user_copy
        if user_copy is None:
            continue
        for size in sorted(set(layouts.loc[layouts["implementation"] == name, "size_bytes"])):
            copied = user_copy.bytes_per_call(int(size))
            found = findings_for_copy(record, user_copy.call, copied)
            if found:
                met.append(f"{code(name)} at {fmt_size(size)} ({fmt_size(copied)} per {user_copy.call}())")
                touched += [finding for finding in found if finding not in touched]
    if not met:
        return None
    return (
        "Where this host's copy-cost calibration found a slow copy path, a sender's own copy of each field meets it: "
        + ", ".join(met)
        + ". "
        + " ".join(f"Finding: {finding.describe(record.cpu_flags)}." for finding in touched)
    )


def section(results: Results, counted: Results | None = None) -> str | None:
    """The section's Markdown; None when the sweep measured no sender in more than one layout.  The transmitted skbs
    come from COUNTED, the sweep that counted them (by default RESULTS)."""
    layouts = results.layouts
    if layouts is None or layouts.summary["layout"].nunique() < 2 or layouts.comparisons.empty:
        return None
    measured = layouts.summary[layouts.summary["implementation"].isin(set(layouts.trials["implementation"]))]
    several = measured.groupby("implementation")["layout"].nunique()
    shown = measured[measured["implementation"].isin(several[several > 1].index)]
    parts = [
        HEADING,
        MECHANISM,
        markdown_table(_rows(shown)),
        " ".join(_verdicts(layouts.comparisons)),
    ]
    crossings = crossover_sentences(layouts.crossovers[layouts.crossovers["metric"] == "throughput_gbps"])
    if crossings:
        parts.append("Where one layout overtakes another: " + " ".join(crossings))
    pinned = _pages_pinned(layouts.trials)
    if pinned:
        parts.append("Pages pinned per message by the zero-copy senders, counted by the sender from its iovec:")
        parts.append(markdown_table(pinned))
    copied = _copied_anyway(layouts.trials)
    if copied:
        parts.append(copied)
    counted_layouts = (counted or results).layouts
    shape = _skb_shape(counted_layouts.trials) if counted_layouts is not None else []
    if shape:
        parts.append(
            "What the sender's kernel transmitted, counted with BPF in each window (tracepoint "
            "net:net_dev_start_xmit): data per skb, the TCP segments it carried (how many packets the stack handed "
            "the device at once, as one large skb that GSO/TSO, segmentation offload, cuts into packets) and its page "
            "fragments (an skb holds at most the kernel's MAX_SKB_FRAGS; a "
            "zero-copy sender's pages travel as fragments, so pieces of pages fill an skb before its bytes do):"
        )
        parts.append(markdown_table(shape))
    slow_copies = _copy_findings(results, layouts.trials)
    if slow_copies:
        parts.append(slow_copies)
    return "\n\n".join(parts)


def skb_shape_text(results: Results, zero_copy: str) -> str | None:
    """What ZERO_COPY's kernel transmitted against the other senders' in the study's layout, at the sweep's largest
    size (BPF counts): bytes and page fragments per skb; None where the sweep did not count them."""
    trials = results.trials
    if "snd_skbs" not in trials:
        return None
    largest = int(trials["size_bytes"].max())
    rows = trials[
        (trials["status"] == "ok")
        & (trials["snd_skbs"] > 0)
        & (trials["workload"] == "stream")
        & (trials["size_bytes"] == largest)
        & (trials["receive"] == implementations.BASELINE_RECEIVE)
    ]
    sums = rows.groupby("implementation")[["bytes", "snd_skbs", "snd_skb_frags"]].sum()
    if zero_copy not in sums.index or len(sums) < 2:
        return None
    shapes = [
        f"{code(name)} {fmt_num(row.bytes / row.snd_skbs / 1024)} KiB in {fmt_num(row.snd_skb_frags / row.snd_skbs)}"
        for name in study(results)
        if name in sums.index and (row := sums.loc[name]) is not None
    ]
    return (
        f"What each sender's kernel transmitted at {fmt_size(largest)}, counted with BPF (tracepoint "
        f"net:net_dev_start_xmit), as data per skb in page fragments per skb: {'; '.join(shapes)}. A zero-copy "
        "sender's pinned pages travel as fragments, at most `MAX_SKB_FRAGS` to an skb."
    )
