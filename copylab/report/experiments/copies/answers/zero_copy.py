"""Question 1: why zero-copy does not always give the best throughput."""

from __future__ import annotations

import pandas as pd

from copylab.formatting import (
    code,
    fmt_num,
    fmt_pct,
    fmt_size,
)
from copylab.report.answer import Answer, in_short
from copylab.report.experiments.copies.answers.crossovers import ratio_table
from copylab.report.experiments.copies.basics.layout import skb_shape_text
from copylab.report.experiments.copies.basics.queries import choose_focus, role, zero_copy_counts
from copylab.report.prose import config_label, not_measured, value_interval
from copylab.report.results import (
    Results,
    between_hosts,
    comparison_rows,
    declared,
    measured_sizes,
    paired,
    value,
    verdict,
)
from copylab.roles import Role
from copylab.vocabulary.implementation import Implementation

# What the kernel does with a zero-copy send, cited where it does it.
MECHANISM = (
    "`MSG_ZEROCOPY` trades the copy for three costs. It pins every page the iovec spans and takes a reference on "
    "each (net/core/datagram.c `__zerocopy_sg_from_iter()`): a cost per page, not per byte. It queues a completion "
    "for each range of sends, which the sender must read from the error queue before it may reuse a buffer "
    "(net/core/skbuff.c `msg_zerocopy_callback()`). And it attaches the pages as fragments split at page "
    "boundaries, at most `MAX_SKB_FRAGS` to an skb, so fields that do not start on a page make more, smaller skbs "
    "(question 6). Where the receiver is local (veth, loopback), the kernel copies the pinned pages anyway before it "
    "queues them to the receiving socket (`skb_orphan_frags_rx()`, include/linux/skbuff.h), and flags the "
    "completion `SO_EE_CODE_ZEROCOPY_COPIED`. Why: a local socket may leave data unread indefinitely, and "
    "Documentation/networking/msg_zerocopy.rst (section *Loopback*) refuses the unbounded notification latency that "
    "would give. So every zero-copy packet looped to a local socket incurs a deferred copy. Over the veth zero-copy "
    "therefore saves only the user-space packing copy and still pays every cost above."
)
# The sweep between two hosts over a real NIC (docs/testbeds.md: two machines over SSH); the hosts are placeholders.
TWO_HOSTS = "`./inv run-sweep --name nic --server-host SERVER --client-host CLIENT --server-address SERVER_ADDRESS`"


def answer_q1(results: Results, sink: Results | None = None) -> str:
    """Question 1 as Markdown (q1)."""
    return q1(results, sink).markdown()


def q1(results: Results, sink: Results | None = None, counted: Results | None = None) -> Answer:
    """Why zero-copy is not always fastest: the claim and the numbers (copied fraction, notifications, ratio per
    size, CPU per byte, the transmitted skbs from COUNTED, the sweep that counted them, by default RESULTS), the
    mechanism, its test (the COPIED flag here and behind the SINK) and this host's limits."""
    zero_copy = role(results, Role.ZERO_COPY)
    if zero_copy is None:
        return Answer(not_measured("zero-copy"), "", MECHANISM, "", "")
    baseline = role(results, Role.TWO_COPY)
    focus = choose_focus(results)
    counts = zero_copy_counts(results.trials, zero_copy)
    parts = [_copied(results, counts)] if counts is not None else []
    comparisons = comparison_rows(
        results, zero_copy, baseline, workload="stream", threads=focus.threads, pinning=focus.pinning
    )
    if baseline is not None and not comparisons.empty:
        verdicts = [verdict(row) for row in comparisons.itertuples()]
        faster = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "faster"]
        slower = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "slower"]
        ours, theirs = declared(results, zero_copy), declared(results, baseline)
        parts.insert(0, _in_short(ours, theirs, len(faster), len(slower), len(comparisons), counts))
        parts.append(
            f"Throughput ratio {code(zero_copy)} / {code(baseline)} ({config_label(focus.threads, focus.pinning)}, "
            f"stream), {'within-block geometric mean and t' if paired(results) else 'mean and Fieller'} 95% CI "
            "(each size's own, unadjusted; the verdicts are Holm-corrected over the sizes): "
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
            + ". Pinning costs per page and reading completions per range of sends; they pay off only where they "
            "replace a copy that costs more, which needs large messages and a receiver that does not copy: a remote "
            "peer behind a NIC, not a local one."
        )
    shape = skb_shape_text(counted or results, zero_copy)
    if shape:
        parts.append(shape)
    parsed = in_short(parts[0]) if parts and parts[0].startswith("**In short:**") else None
    claim = parsed.claim if parsed else ""
    numbers = "\n\n".join(parts[1:] if parsed else parts)
    return Answer(
        claim=claim,
        numbers=numbers,
        mechanism=MECHANISM,
        test=_test(results, sink, zero_copy, counts),
        limits=(
            "Both ends run on one host, so every path here delivers locally; this host has no PMU, so the pinning and "
            "the completions are timed as CPU time, not counted in cycles. Between two hosts, with a NIC that does "
            f"scatter-gather, {TWO_HOSTS} measures where zero-copy pays without the deferred copy."
        ),
        summary=_summary(zero_copy, baseline, comparisons, counts),
        sure=parsed.sure if parsed else "",
    )


def _copied(results: Results, counts: dict[str, float]) -> str:
    """How many completions the kernel flagged copied on this path, and the notifications read per send."""
    return (
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


def _summary(zero_copy: str, baseline: str | None, comparisons: pd.DataFrame, counts: dict[str, float] | None) -> str:
    """Question 1 for the answers at a glance, in few words."""
    if baseline is None or comparisons.empty:
        return f"{code(zero_copy)} was not compared with its baseline in this sweep."
    slower = sum(verdict(row) == "slower" for row in comparisons.itertuples())
    copied = f"; the kernel copied {fmt_pct(counts['copied_fraction'])} of its sends anyway" if counts else ""
    return f"{code(zero_copy)} lost to {code(baseline)} at {slower} of {len(comparisons)} sizes{copied}."


def _test(results: Results, sink: Results | None, zero_copy: str, counts: dict[str, float] | None) -> str:
    """The test of the deferred copy: the COPIED flag on this path, and behind the sink, where nothing copies."""
    if counts is None:
        return "The sweep read no completions, so the COPIED flag that would test the deferred copy is not counted."
    text = (
        f"The completions test the deferred copy: the kernel flags each one it copied, and here it flagged "
        f"{fmt_pct(counts['copied_fraction'])} of them. Had the pages left uncopied, the flag would be absent."
    )
    uncopied = zero_copy_counts(sink.trials, zero_copy) if sink is not None else None
    if uncopied is None:
        return text + " No sweep behind a sink, where no local socket receives the pages, was given to compare."
    return text + (
        f" Behind the sink, where no local socket receives the datagrams, it flagged "
        f"{fmt_pct(uncopied['copied_fraction'])} of {uncopied['zc_completed']:,.0f}, and there zero-copy outperforms "
        "two-copy from a size on (question 5)."
    )


def _in_short(
    zero_copy: Implementation,
    baseline: Implementation,
    faster: int,
    slower: int,
    sizes: int,
    counts: dict[str, float] | None,
) -> str:
    """The answer in one sentence, and how sure it is: the Holm-corrected verdicts at each size."""
    copied = counts is not None and counts["copied_fraction"] >= 0.5
    ours, theirs = zero_copy.copies.per_byte(), baseline.copies.per_byte()
    why = (
        f"the kernel still copied {fmt_pct(counts['copied_fraction'])} of its sends on delivery. It made {ours} "
        f"copies of each byte where {code(baseline.name)} makes {theirs}: its kernel's copy was deferred, not saved, "
        "and it paid for page pinning and reading completions"
        if copied and counts is not None
        else "page pinning and reading completions cost more than the copy it saves at small messages"
    )
    head = (
        f"**In short:** {code(zero_copy.name)} was significantly slower than {code(baseline.name)} at {slower} of "
        f"{sizes} sizes and faster at {faster}, because {why}."
    )
    undecided = sizes - faster - slower
    return head + (
        " **How sure:** decided at every size (Holm-corrected tests)."
        if not undecided
        else f" **How sure:** decided at {faster + slower} of {sizes} sizes; at the other {undecided} no difference "
        "is shown, and more trials there would decide it."
    )
