"""Question 1: why zero-copy does not always give the best throughput."""

from __future__ import annotations

from copylab.declarations import implementations
from copylab.experiments.copies.answers.crossovers import ratio_table
from copylab.experiments.copies.queries import choose_focus, role, zero_copy_counts
from copylab.formatting import (
    code,
    fmt_num,
    fmt_pct,
    fmt_size,
)
from copylab.report.prose import config_label, not_measured, value_interval
from copylab.report.results import Results, between_hosts, comparison_rows, measured_sizes, paired, value, verdict
from copylab.roles import Role


def answer_q1(results: Results) -> str:
    """Why zero-copy is not always fastest: copied fraction, notifications, ratio per size, CPU per byte."""
    zero_copy = role(results, Role.ZERO_COPY)
    if zero_copy is None:
        return not_measured("zero-copy")
    baseline = role(results, Role.TWO_COPY)
    focus = choose_focus(results)
    parts = []
    counts = zero_copy_counts(results.trials, zero_copy)
    if counts is not None:
        parts.append(
            f"On this path the kernel flagged {fmt_pct(counts['copied_fraction'])} of "
            f"{counts['zc_completed']:,.0f} completed zero-copy sends as {code('SO_EE_CODE_ZEROCOPY_COPIED')}: "
            + (
                "most sends really avoided the copy. "
                if counts["copied_fraction"] < 0.5
                else "the device or the path could not use the pinned pages as they were, so the kernel copied "
                "them anyway, only later. "
                if between_hosts(results)
                else "the receiver is local (a veth peer), so the data were copied anyway on delivery, only later. "
            )
            + f"Each send also cost page pinning and {fmt_num(counts['notifications_per_send'])} error-queue "
            "notifications to read."
        )
    comparisons = comparison_rows(
        results, zero_copy, baseline, workload="stream", threads=focus.threads, pinning=focus.pinning
    )
    if baseline is not None and not comparisons.empty:
        verdicts = [verdict(row) for row in comparisons.itertuples()]
        faster = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "faster"]
        slower = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "slower"]
        parts.insert(0, _in_short(zero_copy, baseline, len(faster), len(slower), len(comparisons), counts))
        parts.append(
            f"Throughput ratio {code(zero_copy)} / {code(baseline)} ({config_label(focus.threads, focus.pinning)}, "
            f"stream), {'within-block geometric mean and t' if paired(results) else 'mean and Fieller'} 95% CI: "
            f"significantly faster at {len(faster)} of {len(comparisons)} sizes"
            + (f" ({', '.join(faster)})" if faster else "")
            + f", significantly slower at {len(slower)}"
            + (f" ({', '.join(slower)})" if slower else "")
            + ".\n\n"
            + ratio_table(results, zero_copy, baseline, focus.threads, focus.pinning)
        )
    sizes = measured_sizes(results)
    cpu = {
        (impl, size): value(results, "cpu_ns_per_byte", impl, "stream", size, focus.threads, focus.pinning)
        for impl in (zero_copy, baseline)
        for size in (sizes[0], sizes[-1])
    }
    if baseline is not None and all(cpu.values()):
        parts.append(
            "CPU time of both ends per byte (ns, mean [95% CI]): "
            + "; ".join(
                f"at {fmt_size(size)} {code(zero_copy)} {value_interval(cpu[(zero_copy, size)])} vs "
                f"{code(baseline)} {value_interval(cpu[(baseline, size)])}"
                for size in (sizes[0], sizes[-1])
            )
            + ". Page pinning (get_user_pages, page reference counts) and handling completions are a fixed cost "
            "per send; it pays off only when it replaces a copy that costs more, which needs large messages and a "
            "receiver that does not copy: a remote peer behind a NIC, not a local one."
        )
    return "\n\n".join(parts)


def _in_short(
    zero_copy: str, baseline: str, faster: int, slower: int, sizes: int, counts: dict[str, float] | None
) -> str:
    """The answer in one sentence, and how sure it is: the Holm-corrected verdicts at each size."""
    copied = counts is not None and counts["copied_fraction"] >= 0.5
    ours, theirs = (implementations.get(name).copies.per_byte() for name in (zero_copy, baseline))
    why = (
        f"the kernel still copied {fmt_pct(counts['copied_fraction'])} of its sends on delivery. It made {ours} "
        f"copies of each byte where {code(baseline)} makes {theirs}: its kernel's copy was deferred, not saved, and "
        "it paid for page pinning and reading completions"
        if copied and counts is not None
        else "page pinning and reading completions cost more than the copy it saves at small messages"
    )
    head = (
        f"**In short:** {code(zero_copy)} was significantly slower than {code(baseline)} at {slower} of {sizes} "
        f"sizes and faster at {faster}, because {why}."
    )
    undecided = sizes - faster - slower
    return head + (
        " **How sure:** decided at every size (Holm-corrected tests)."
        if not undecided
        else f" **How sure:** decided at {faster + slower} of {sizes} sizes; at the other {undecided} no difference "
        "is shown, and more trials there would decide it."
    )
