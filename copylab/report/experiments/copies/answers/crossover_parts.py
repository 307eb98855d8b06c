"""Questions 4 and 5 in the five parts of an answer (copylab.report.answer): the claim and the numbers are the
verdicts crossovers.py and sink.py compute, taken apart as they are; the mechanism, its test and this host's limits
are said here, with the answers at a glance's summary read from crossovers.csv's rows."""

from __future__ import annotations

from copylab.formatting import code, fmt_pct, fmt_size, threads_text
from copylab.report.answer import Answer, in_short
from copylab.report.experiments.copies.answers.crossovers import answer_q4, stream_crossovers
from copylab.report.experiments.copies.answers.sink import answer_q5, zero_copy_pairs
from copylab.report.experiments.copies.answers.zero_copy import TWO_HOSTS
from copylab.report.experiments.copies.basics.queries import choose_focus, role, zero_copy_counts
from copylab.report.prose import MODEL_ONLY, short_verdict, value_interval
from copylab.report.results import Results, measured_sizes, value
from copylab.roles import Role

Q4_MECHANISM = (
    "two-copy pays a user-space `memcpy` of the whole message into one buffer: a cost in proportion to its size. "
    "one-copy hands the kernel the 8 fields as an iovec, and the kernel's copy into socket buffers "
    "(net/ipv4/tcp.c `tcp_sendmsg_locked()`, through `skb_copy_to_page_nocache()` and lib/iov_iter.c "
    "`copy_from_iter()`) walks the 8 segments one after the other: a cost per segment and send, roughly fixed. "
    "Small messages therefore favour two-copy's single contiguous segment, and large ones favour skipping the "
    "`memcpy`."
)
Q5_MECHANISM = (
    "Over the veth the receiver is local, so the kernel copies the pinned pages on delivery (question 1: "
    "`skb_orphan_frags_rx()`, include/linux/skbuff.h; Documentation/networking/msg_zerocopy.rst, *Loopback*): the "
    "copy is deferred, not saved, and zero-copy never wins there. Behind the sink no local socket receives the "
    "datagrams, so nothing copies the pinned pages: zero-copy saves the copy of the whole message and pays per page "
    "pinned and per completion read. It wins from the size where the copy saved outweighs those costs, which the "
    "kernel's documentation puts around 10 KB."
)


def _summary(results: Results | None, challenger: str | None, baseline: str | None, where: str = "") -> str:
    """Each thread count's verdict of CHALLENGER against BASELINE in a few words, from crossovers.csv."""
    if results is None or challenger is None or baseline is None:
        return ""
    found = stream_crossovers(results, challenger, baseline)
    words = {
        "challenger_always_better": "wins wherever the two differ",
        "challenger_never_better": "never wins",
        "indistinguishable": "is not told apart",
    }
    clauses = []
    for _, row in found.iterrows():
        status = str(row["status"])
        at = fmt_size(float(row["crossover_at"]), approximate=True) if status == "crossover" else None
        said = f"wins from about {at}" if at else short_verdict(row) if status in MODEL_ONLY else None
        clauses.append(
            f"{said or words.get(status, 'changes sign more than once')} with {threads_text(int(row['threads']))}"
        )
    if not clauses:
        return ""
    return f"{where}{code(challenger)} against {code(baseline)}: {'; '.join(clauses)}."


def _user_copy(results: Results, one_copy: str, two_copy: str) -> str:
    """The packing copy measured directly: the two senders' user CPU time per byte at the smallest and largest
    size."""
    focus = choose_focus(results)
    sizes = measured_sizes(results)
    said = []
    for size in (sizes[0], sizes[-1]):
        found = {
            name: value(results, "snd_user_ns_per_byte", name, "stream", size, focus.threads, focus.pinning)
            for name in (two_copy, one_copy)
        }
        if all(found.values()):
            said.append(
                f"at {fmt_size(size)} {code(two_copy)} {value_interval(found[two_copy], 'ns')} against "
                f"{code(one_copy)} {value_interval(found[one_copy], 'ns')}"
            )
    if not said:
        return "The senders' user CPU time, which would show the packing copy directly, was not measured."
    return (
        "The test: the packing copy runs in user space, so if it is what one-copy saves, the senders' user CPU time "
        "per byte differs by it and one-copy's is near zero: " + "; ".join(said) + ". The sender's CPU time per byte "
        "(in the numbers above, where it decides otherwise than throughput) holds the kernel's copy of the 8 "
        "segments too; over the veth it also holds the receiver's softirq work that runs on the sending CPU."
    )


def q4(results: Results) -> Answer:
    """Question 4: where one-copy outperforms two-copy, in five parts."""
    one_copy, two_copy = role(results, Role.ONE_COPY), role(results, Role.TWO_COPY)
    parsed = in_short(answer_q4(results, one_copy, two_copy))
    return Answer(
        claim=parsed.claim,
        numbers=parsed.rest,
        mechanism=Q4_MECHANISM,
        test=_user_copy(results, one_copy, two_copy) if one_copy and two_copy else "",
        limits=(
            "Over the veth both ends share this host's CPUs, so the sender's time holds part of the receiver's work; "
            "this host has no PMU, so the copy's cycles and misses are not counted. Between two hosts, "
            f"{TWO_HOSTS} measures the crossover with the receiver's work on another machine."
        ),
        summary=_summary(results, one_copy, two_copy),
        sure=parsed.sure,
    )


def _temperature(sink: Results) -> str:
    """How hot the copy's source was behind the sink: its distinct messages against the last-level cache."""
    distinct = sink.manifest.parameters.distinct_messages
    record = sink.manifest.calibration
    if record is None or not record.caches or distinct <= 1:
        return (
            "Every send reused one message, so the copy's source was always in cache (hot); a cold arm "
            "(`--distinct-messages 2048`) was not measured."
        )
    last = record.caches[-1]
    fits = [size for size in measured_sizes(sink) if distinct * size <= last.size_bytes]
    within = (
        f" Up to {fmt_size(max(fits))} all {distinct:,} messages fit in the {fmt_size(last.size_bytes)} {last.name}, "
        "so there the source was in cache and only above it came from memory: temperature changes with size, "
        "across the crossover, and the two are confounded."
        if fits
        else f" At every size they exceed the {fmt_size(last.size_bytes)} {last.name}: the source came from memory."
    )
    return (
        f"The sink's senders cycled through {distinct:,} distinct messages.{within} A hot arm, one message reused, "
        f"was not measured: `./inv run-sweep --name sink-hot --profile {sink.manifest.profile} --distinct-messages 1` "
        "measures it, and whether the source is in cache moves the crossover."
    )


def q5(results: Results, sink: Results | None) -> Answer:
    """Question 5: where zero-copy outperforms two-copy, over the veth and behind the SINK, in five parts."""
    parsed = in_short(answer_q5(results, sink))
    pairs = zero_copy_pairs(results)
    counts = [
        f"{code(sender)} {fmt_pct(found['copied_fraction'])} over the veth"
        + (f" and {fmt_pct(there['copied_fraction'])} behind the sink" if there else "")
        for sender, _ in pairs
        if (found := zero_copy_counts(results.trials, sender)) is not None
        for there in [zero_copy_counts(sink.trials, sender) if sink is not None else None]
    ]
    test = (
        "The COPIED flag of each completion tests the deferred copy: the kernel flagged "
        + "; ".join(counts)
        + ". Had it copied behind the sink too, zero-copy would have lost there as it does over the veth."
        if counts
        else ""
    )
    summary = " ".join(
        part
        for sender, baseline in pairs
        for part in (
            _summary(results, sender, baseline, "Over the veth, "),
            _summary(sink, sender, baseline, "Behind the sink, "),
        )
        if part
    )
    limits = (
        "The sink is UDP datagrams dropped after the stack built them, not TCP to a real NIC: no wire, no DMA, no "
        "receiver. "
        + (_temperature(sink) + " " if sink is not None else "")
        + f"TCP over a real NIC between two hosts: {TWO_HOSTS}."
    )
    return Answer(parsed.claim, parsed.rest, Q5_MECHANISM, test, limits, summary, parsed.sure)
