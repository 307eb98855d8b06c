"""Figure captions that state, with numbers from the summary, what each figure of the report shows."""

from __future__ import annotations

from collections.abc import Callable

from copylab.calibration.record import MEMCPY, READ, VECTOR, region_costs
from copylab.formatting import code, fmt_interval, fmt_num, fmt_pct, fmt_size, fmt_span, md_escape, threads_text
from copylab.report.experiments.copies.basics.queries import Focus, choose_focus, role, study, zero_copy_counts
from copylab.report.experiments.copies.figures.levels import PATH_COLORS
from copylab.report.prose import row_interval
from copylab.report.results import (
    THROUGHPUT,
    Results,
    between_hosts,
    counters_unavailable_reason,
    measured,
    metric_rows,
    present,
)
from copylab.report.results import receive_modes as receive_modes_measured
from copylab.roles import Role


def _intervals(results: Results, metric: str, names: list[str] | None = None, **where: object) -> str:
    """What every curve of a figure drawn from METRIC's rows (of the implementations NAMES, default all) shows: means
    over how many trials per configuration, and the shaded bands (copylab.analysis.plotting.curve), of the study's
    message layout only."""
    rows = metric_rows(results, metric, **where)
    rows = rows if names is None else rows[rows["implementation"].isin(names)]
    counts = rows["n"][rows["n"] > 0]
    trials = (
        fmt_span(f"{int(counts.min())}", f"{int(counts.max())}") + " successful trials per configuration"
        if not counts.empty
        else "trials"
    )
    return f"Points: means over {trials}; bands: Student-t 95% intervals."


def part_d_introduction(results: Results) -> str:
    """What every figure of Part D draws: the study's three variants, receiving by copy, in the study's layout."""
    layouts = (
        " The contiguous layout is compared only in the appendix *What the message's layout costs*."
        if results.layouts is not None and not results.layouts.summary.empty
        else ""
    )
    return (
        "The figures below draw the study's three variants, each receiving by copy, with the message held as the "
        f"study's 8 separate fields.{layouts} Every size axis is logarithmic (base 2)."
    )


def _extremes(results: Results, metric: str, pick: str, names: list[str], **where: object) -> list[str]:
    """Per implementation: 'impl m [lo, hi] at SIZE' for the row with the largest (pick='max') or smallest mean."""
    parts = []
    for impl in names:
        rows = metric_rows(results, metric, implementation=impl, **where)
        if rows.empty:
            continue
        row = rows.loc[rows["mean"].idxmax() if pick == "max" else rows["mean"].idxmin()]
        interval = row_interval(row)
        parts.append(f"{code(impl)} {interval} at {fmt_size(row['size_bytes'])}")
    return parts


def _at_sizes(results: Results, metric: str, focus: Focus) -> str:
    """'at 64 B: impl a, impl b; at 64 KiB: ...' for the smallest and largest stream size."""
    rows = metric_rows(results, metric, workload="stream", threads=focus.threads, pinning=focus.pinning)
    sizes = sorted(rows["size_bytes"].unique())
    chunks = []
    for size in (sizes[0], sizes[-1]) if sizes else ():
        values = []
        for impl in study(results):
            rows = metric_rows(
                results,
                metric,
                implementation=impl,
                workload="stream",
                size_bytes=size,
                threads=focus.threads,
                pinning=focus.pinning,
            )
            if not rows.empty:
                row = rows.iloc[0]
                values.append(f"{code(impl)} {row_interval(row)}")
        chunks.append(f"at {fmt_size(size)}: " + ", ".join(values))
    return "; ".join(chunks)


def zero_copy_path(results: Results, focus: Focus) -> str:
    """Caption of the zero-copy path diagram, with the measured COPIED share."""
    zero_copy = role(results, Role.ZERO_COPY)
    counts = zero_copy_counts(results.trials, zero_copy) if zero_copy else None
    measured_text = (
        f" In this sweep {fmt_pct(counts['copied_fraction'])} of {counts['zc_completed']:,.0f} completed zero-copy "
        "sends carried the COPIED flag."
        if counts
        else " This sweep recorded no zero-copy completions."
    )
    return (
        f"The MSG_ZEROCOPY send path as exercised here, steps 1 to {8 if between_hosts(results) else 9}. Red: the "
        "steps where bytes are still copied, "
        + (
            "by recv() into user space (8), and by the sender's kernel wherever the NIC cannot take the pinned "
            "pages (4); dashed: the completion path back to the sender, which may reuse a buffer only after step 7."
            if between_hosts(results)
            else "by the receiver's kernel on local delivery (5) and by recv() into user space (9); dashed: the "
            "completion path back to the sender, which may reuse a buffer only after step 8."
        )
        + measured_text
    )


def throughput_vs_size(results: Results, focus: Focus) -> str:
    stream = metric_rows(results, THROUGHPUT, workload="stream", pinning=focus.pinning)
    threads = sorted({int(t) for t in stream["threads"]})
    text = "Stream throughput against message size, one panel per thread count. " + _intervals(
        results, THROUGHPUT, workload="stream", names=study(results)
    )
    for n in sorted({threads[0], threads[-1]}):
        peaks = _extremes(
            results, THROUGHPUT, "max", study(results), workload="stream", threads=n, pinning=focus.pinning
        )
        text += f" Peak throughput in Gbit/s with {threads_text(n)} (CPU pinning {code(focus.pinning)}): "
        text += "; ".join(peaks) + "."
    # the crossovers the figure draws (copylab.report.experiments.copies.figures.throughput_figure): between two of the
    # senders it draws, in a panel it has
    drawn = results.crossovers[
        (results.crossovers["status"] == "crossover")
        & (results.crossovers["metric"] == THROUGHPUT)
        & (results.crossovers["workload"] == "stream")
        & results.crossovers["challenger"].isin(study(results))
        & results.crossovers["baseline"].isin(study(results))
        & results.crossovers["threads"].isin(threads)
    ]
    marks = [
        f"{code(row['challenger'])} over {code(row['baseline'])} at about "
        f"{fmt_size(float(row['crossover_at']), approximate=True)} with {threads_text(int(row['threads']))}"
        for _, row in drawn.iterrows()
    ]
    if marks:
        drawn_as = (
            f"A dotted line marks the crossover of {marks[0]}, a lighter band its 95% interval"
            if len(marks) == 1
            else f"Dotted lines mark the crossovers of {'; '.join(marks)}, lighter bands their 95% intervals"
        )
        text += f" {drawn_as} (see the answer to question 4)."
    else:
        text += " No crossover between these senders was found, so none is marked."
    return text


def latency_vs_threads(results: Results, focus: Focus) -> str:
    rr = metric_rows(results, "latency_mean_us", workload="rr", pinning=focus.pinning)
    if rr.empty:
        return "The sweep has no request/response results, so no latency is shown."
    size = int(rr["size_bytes"].min())
    parts = []
    for impl in study(results):
        rows = rr[(rr["implementation"] == impl) & (rr["size_bytes"] == size)].sort_values("threads")
        if len(rows):
            first, last = rows.iloc[0], rows.iloc[-1]
            parts.append(
                f"{code(impl)} {fmt_interval(first['mean'], first['ci_low'], first['ci_high'])} µs with "
                f"{threads_text(int(first['threads']))}, {fmt_interval(last['mean'], last['ci_low'], last['ci_high'])} "
                f"µs with {int(last['threads'])}"
            )
    return (
        f"Round-trip latency of the request/response workload against the number of threads, {fmt_size(size)} "
        f"messages: mean (left) and 99th percentile (right). "
        f"{_intervals(results, 'latency_mean_us', workload='rr', names=study(results))} Mean latency, CPU pinning "
        f"{code(focus.pinning)}: {'; '.join(parts)}."
    )


def cache_misses_vs_size(results: Results, focus: Focus) -> str:
    counters = {"L1d": "snd_l1d_misses_per_kib", "LLC": "snd_llc_misses_per_kib"}
    present = {name: metric for name, metric in counters.items() if measured(results, metric)}
    if not present:
        record = results.manifest.calibration
        unmeasurable = (
            "Sender cache misses per KiB against message size: not measurable on this host, because "
            f"{counters_unavailable_reason(results)}."
        )
        copies = metric_rows(results, "rcv_kernel_copies_per_byte", workload="stream")
        counted = (
            " Left: the bytes the kernel copied to the receiver's user space per byte delivered, counted with BPF "
            f"({fmt_span(fmt_num(copies['mean'].min()), fmt_num(copies['mean'].max()))} over the configurations, "
            "receiving by copy), with the message sizes whose working set leaves each cache."
            if not copies.empty
            else ""
        )
        if record is None or not record.copy_cost:
            return unmeasurable + (counted or " No values are drawn rather than zeros.")
        levels = ", ".join(f"{region} {fmt_num(cost)} ns" for region, cost in region_costs(record).items())
        if not record.copy_points:
            return (
                unmeasurable
                + counted
                + " Drawn instead: the calibrated cost of copying one byte (median of repeated memcpy runs, "
                f"hot buffers, CPU {record.cpu or 'any'}) against the working set, inside each cache level and beyond: "
                f"{levels}. Grey dashed lines: the cache sizes; red dotted lines: the sweep's message sizes, at twice "
                "their size (a message and its copy)."
            )
        rounds = max(len(point.ns_per_byte) for point in record.copy_points)
        findings = " ".join(
            f"Shaded, a finding and not a cache level: {f.describe(record.cpu_flags)}." for f in record.findings
        )
        verdict = (
            f" The calibration is inconsistent ({md_escape(record.inconsistent)}): no cache level is derived from it."
            if record.inconsistent
            else ""
        )
        return (
            unmeasurable
            + counted
            + f" Drawn instead: the calibrated cost of copying one byte against the working set (median over {rounds} "
            f"rounds, separate processes, of interleaved passes, hot buffers, CPU {record.cpu or 'any'}). The lines "
            f"are memcpy as linked ({PATH_COLORS[MEMCPY][1]}), glibc's memcpy without rep movsb "
            f"({PATH_COLORS[VECTOR][1]}) and the kernel's copy to user space through read() "
            f"({PATH_COLORS[READ][1]}). Solid lines have source and destination at the same offset within a "
            f"page, dashed ones the destination 16 B past the source. Per level (memcpy, cheaper placement): {levels}. "
            f"{findings}{verdict} Grey dashed lines: the cache sizes; red dotted lines: the sweep's message sizes, at "
            "twice their size (a message and its copy)."
        )
    text = (
        "Sender cache load misses per KiB sent against message size, one panel per thread count. "
        f"{_intervals(results, next(iter(present.values())), workload='stream', names=study(results))} "
        f"With {threads_text(focus.threads)}, CPU pinning {code(focus.pinning)}:"
    )
    for name, metric in present.items():
        text += f" {name}: {_at_sizes(results, metric, focus)}."
    return text


def cpu_per_byte_vs_size(results: Results, focus: Focus) -> str:
    if measured(results, "cycles_per_byte"):
        metric, unit = "cycles_per_byte", "cycles/B"
        rows_text = "CPU cycles per byte, then CPU time per byte of both ends and of the sender"
    else:
        metric, unit = "cpu_ns_per_byte", "ns/B"
        rows_text = (
            "CPU time per byte of both ends (user + system), then of the sender alone (over the veth the sending "
            "CPU also runs the receiver's softirq work for the packets it sends, so the sender's time holds part of "
            "the receiver's); CPU cycles are not measurable on this host, so CPU time stands in for them"
        )
    text = (
        f"CPU cost per byte against message size, on a log axis; rows: {rows_text}; one column per thread count. "
        f"{_intervals(results, metric, workload='stream', names=study(results))} "
        f"With {threads_text(focus.threads)}, CPU pinning {code(focus.pinning)}, in {unit}: "
        f"{_at_sizes(results, metric, focus)}."
    )
    rows = metric_rows(results, metric, workload="stream", threads=focus.threads, pinning=focus.pinning)
    ends = rows.sort_values("size_bytes").groupby("implementation")["mean"].agg(["first", "last"])
    if len(ends) and (ends["last"] < ends["first"]).all():
        text += (
            " Every implementation needs less per byte at the largest size than at the smallest: the per-message "
            "cost (system call, TCP processing, notifications) is spread over more bytes."
        )
    return text


def zc_copied_fraction(results: Results, focus: Focus) -> str:
    rows = metric_rows(results, "zc_copied_fraction")
    if rows.empty:
        return "No zero-copy completions were recorded, so no copied fraction is shown."
    shares = fmt_span(fmt_pct(rows["mean"].min()), fmt_pct(rows["mean"].max()))
    return (
        "Share of zero-copy sends whose completion carried `SO_EE_CODE_ZEROCOPY_COPIED` against message size, one "
        f"line per thread count, one panel per workload: {shares} over {len(rows)} configurations. A share near "
        + (
            "100% means the kernel copied the pinned pages on the way to the NIC, so no copy was saved."
            if between_hosts(results)
            else "100% means the kernel copied the pinned pages on local delivery, so no copy was saved."
        )
    )


def retransmits(results: Results, focus: Focus) -> str:
    rows = metric_rows(results, "retransmits", workload="stream")
    if rows.empty:
        return "TCP retransmits were not recorded."
    worst = rows.loc[rows["mean"].idxmax()]
    zero = int((rows["mean"] == 0).sum())
    if zero == len(rows):
        return (
            "TCP retransmits per stream trial, one panel per implementation: none in any of the "
            f"{len(rows)} configurations."
        )
    return (
        f"TCP retransmits per stream trial (mean over trials), one panel per implementation. {zero} of {len(rows)} "
        f"stream configurations had none and {len(rows) - zero} saw some; the most, {fmt_num(worst['mean'])} per "
        "trial, occurred for "
        f"{code(worst['implementation'])} at "
        f"{fmt_size(worst['size_bytes'])} with {threads_text(int(worst['threads']))} and CPU pinning "
        f"{code(worst['pinning'])}."
    )


def senders_vs_size(results: Results, focus: Focus) -> str:
    threads = sorted({int(t) for t in metric_rows(results, THROUGHPUT, workload="stream")["threads"]})
    peaks = _extremes(
        results, THROUGHPUT, "max", present(results), workload="stream", threads=threads[0], pinning=focus.pinning
    )
    return (
        "Every sender's stream throughput (top) and CPU time per byte of both ends (bottom) against message size, "
        "receiving by copy, CPU time on a log axis; one column per thread count. "
        f"{_intervals(results, THROUGHPUT, workload='stream', receive='copy')} Peak throughput in Gbit/s with "
        f"{threads_text(threads[0])} (CPU pinning {code(focus.pinning)}): {'; '.join(peaks)}."
    )


def receive_modes(results: Results, focus: Focus) -> str:
    modes = receive_modes_measured(results)
    if len(modes) < 2:
        return "Every sender was measured receiving by copy only, so no receive mode is compared."
    return (
        "Stream throughput (top) and the receiver's CPU time per byte (bottom) against message size for each "
        f"sender measured in more than one receive mode ({', '.join(code(m) for m in modes)}), at the fewest "
        f"threads of the first pinning, CPU time on a log axis. "
        f"{_intervals(results, THROUGHPUT, workload='stream', threads=focus.threads, pinning=focus.pinning)}"
        " The gap between `copy` and `truncate` in the bottom row is the "
        "receiver's copy; the numbers are in the table of the receiver's copy below."
    )


# Figure name (the file stem the analysis saved) -> its caption, in the report's order.
CAPTIONS: dict[str, Callable[[Results, Focus], str]] = {
    "zerocopy_path": zero_copy_path,
    "throughput_vs_size": throughput_vs_size,
    "latency_vs_threads": latency_vs_threads,
    "cache_misses_vs_size": cache_misses_vs_size,
    "cpu_per_byte_vs_size": cpu_per_byte_vs_size,
    "zerocopy_copied_fraction": zc_copied_fraction,
    "retransmits": retransmits,
    "senders_vs_size": senders_vs_size,
    "receive_modes": receive_modes,
}


PART_A_FIGURE = "zerocopy_path"
OTHER_SENDERS_FIGURES = ("senders_vs_size", "receive_modes")
PART_D_FIGURES = tuple(name for name in CAPTIONS if name not in (PART_A_FIGURE, *OTHER_SENDERS_FIGURES))


def worth_a_figure(kind: str, results: Results) -> bool:
    """Whether figure KIND shows anything a sentence does not: the copied share drawn as a line at one constant
    value (100% everywhere, say) is left out, since Part A's counts say it."""
    if kind != "zerocopy_copied_fraction":
        return True
    means = metric_rows(results, "zc_copied_fraction")["mean"].dropna()
    return bool(means.empty or means.max() - means.min() > CONSTANT_SHARE)


# Copied shares that differ by no more than this are one constant value.
CONSTANT_SHARE = 0.005


def caption(kind: str, results: Results) -> str:
    """The caption of figure ``kind`` for ``results``."""
    if kind not in CAPTIONS:
        raise KeyError(f"no caption for figure kind {kind!r} (known: {', '.join(CAPTIONS)})")
    return CAPTIONS[kind](results, choose_focus(results))


def numbered(number: int, text: str) -> str:
    """A caption with its figure number."""
    return f"**Figure {number}.** {text}"
