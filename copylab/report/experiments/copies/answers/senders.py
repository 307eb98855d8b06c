"""Other ways to send and receive: every sender ranked, the receiver's copy priced, mapping."""

from __future__ import annotations

import pandas as pd

from copylab.declarations import implementations
from copylab.formatting import (
    code,
    fmt_interval,
    fmt_num,
    fmt_pct,
    fmt_size,
    markdown_table,
)
from copylab.report.answer import in_short
from copylab.report.experiments.copies.answers.crossovers import answer_crossover
from copylab.report.experiments.copies.answers.receiving import PAGES
from copylab.report.experiments.copies.answers.sink import zero_copy_pairs
from copylab.report.experiments.copies.basics.queries import choose_focus, other_senders, role, study
from copylab.report.prose import config_label
from copylab.report.results import (
    THROUGHPUT,
    Results,
    declared,
    measured_sizes,
    metric_rows,
    present,
    receive_modes,
    select,
    value,
)
from copylab.roles import Role


def _overlap(a: pd.Series, b: pd.Series) -> bool:
    """Whether two summary rows' intervals overlap: the data cannot tell them apart."""
    return bool(a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"])


def best_sender_table(results: Results) -> str:
    """Per stream size, the sender with the most throughput, and those whose intervals overlap its (ties)."""
    focus = choose_focus(results)
    rows = metric_rows(results, THROUGHPUT, workload="stream", threads=focus.threads, pinning=focus.pinning)
    table = []
    for size, group in rows.groupby("size_bytes"):
        ranked = group.sort_values("mean", ascending=False)
        best = ranked.iloc[0]
        tied = [code(str(r["implementation"])) for _, r in ranked.iloc[1:].iterrows() if _overlap(best, r)]
        table.append(
            {
                "Size": fmt_size(int(size)),
                "Most throughput, Gbit/s (95% CI)": f"{code(str(best['implementation']))} "
                + fmt_interval(best["mean"], best["ci_low"], best["ci_high"]),
                "Tied with (overlapping intervals)": ", ".join(tied) or "none: the best alone",
            }
        )
    if not table:
        return "The sweep has no stream throughput to rank the senders by."
    return (
        f"Stream throughput by message size ({config_label(focus.threads, focus.pinning)}, receiving by copy). "
        "A sender whose 95% interval overlaps the best one's is stated as a tie: the data cannot rank them.\n\n"
        + markdown_table(table)
    )


def sender_crossovers(results: Results) -> str:
    """The crossover of every pair the study's questions leave out, each against the baseline the registry names."""
    pairs = [
        (name, baseline)
        for name in other_senders(results)
        for baseline in declared(results, name).baselines
        if baseline in present(results)
    ]
    pairs += [
        (name, baseline)
        for name in study(results)
        for baseline in declared(results, name).baselines
        if baseline in other_senders(results)
    ]
    answered = set(zero_copy_pairs(results))  # question 5 answers them
    pairs = [pair for pair in pairs if pair not in answered]
    if not pairs:
        return "The sweep measured no other sender together with its baseline."
    parsed = [(pair, in_short(answer_crossover(results, *pair))) for pair in pairs]
    notes = {found.note for _, found in parsed if found.note} | {
        "Over the veth the sending CPU also runs the receiver's softirq work for the packets it sends, so the "
        "sender's CPU time per byte quoted below holds part of the receiver's work too."
    }
    return "\n\n".join(
        [*notes]
        + [
            f"**{code(challenger)} against {code(baseline)}.** {found.claim} **How sure:** {found.sure}\n\n{found.rest}"
            + _sender_cpu(results, challenger, baseline)
            if found.claim
            else f"**{code(challenger)} against {code(baseline)}.** {found.rest}"
            for (challenger, baseline), found in parsed
        ]
    )


def _sender_cpu(results: Results, challenger: str, baseline: str) -> str:
    """What CHALLENGER's sender spent per byte against BASELINE's, at each size: where throughput does not show a
    saving of CPU, this does."""
    focus = choose_focus(results)
    ratios = []
    for size in measured_sizes(results):
        found = [
            value(results, "snd_cpu_ns_per_byte", name, "stream", size, focus.threads, focus.pinning)
            for name in (challenger, baseline)
        ]
        if found[0] and found[1] and found[1][0] > 0:
            ratios.append(f"{fmt_size(size)} {fmt_num(found[0][0] / found[1][0])}×")
    if not ratios:
        return ""
    where = config_label(focus.threads, focus.pinning)
    return (
        f" The sender's CPU time per byte, {code(challenger)} over {code(baseline)} ({where}, ratio of means): "
        f"{', '.join(ratios)}."
    )


def receiver_copy_cost(results: Results) -> str:
    """What the receiver's copy costs, from receiving by truncate (no copy to user space) against copy."""
    focus = choose_focus(results)
    measured = [
        name
        for name in present(results)
        if not metric_rows(results, "rcv_cpu_ns_per_byte", implementation=name, receive="truncate").empty
    ]
    if not measured:
        return (
            "The sweep received by copy only, so the cost of the receiver's copy is not measured here "
            "(`--receive copy,truncate` measures it)."
        )
    table: list[dict[str, str]] = []
    ratios: list[dict[str, str]] = []
    negative: list[tuple[str, int, float, tuple[float, float] | None]] = []
    for name in measured:
        for size in measured_sizes(results):
            where = {
                "implementation": name,
                "workload": "stream",
                "size_bytes": size,
                "threads": focus.threads,
                "pinning": focus.pinning,
            }
            by_copy = metric_rows(results, "rcv_cpu_ns_per_byte", **where)
            by_truncate = metric_rows(results, "rcv_cpu_ns_per_byte", **where, receive="truncate")
            ratio = select(
                results.comparisons,
                challenger=implementations.contender(name, "truncate"),
                baseline=name,
                metric=THROUGHPUT,
                workload="stream",
                size_bytes=size,
                threads=focus.threads,
                pinning=focus.pinning,
            )
            if by_copy.empty or by_truncate.empty:
                continue
            copy_row, truncate_row = by_copy.iloc[0], by_truncate.iloc[0]
            difference = copy_row["mean"] - truncate_row["mean"]
            if difference < 0:
                negative.append((name, size, difference, _per_call(results, where)))
            table.append(
                {
                    "Sender": code(name),
                    "Size": fmt_size(size),
                    "Receiver CPU ns/B, copy": fmt_interval(copy_row["mean"], copy_row["ci_low"], copy_row["ci_high"]),
                    "truncate": fmt_interval(truncate_row["mean"], truncate_row["ci_low"], truncate_row["ci_high"]),
                    "The copy, ns/B": fmt_num(difference),
                }
            )
            ratios.append(
                {
                    "Sender": code(name),
                    "Size": fmt_size(size),
                    "Throughput truncate / copy [95% CI]": "n/a"
                    if ratio.empty
                    else f"{fmt_num(ratio.iloc[0]['ratio'])} [{fmt_num(ratio.iloc[0]['ratio_ci_low'])}, "
                    f"{fmt_num(ratio.iloc[0]['ratio_ci_high'])}]",
                }
            )
    verified = (
        " This sweep ran with `--verify`: to check the bytes, `truncate` first read them with `MSG_PEEK`, which is "
        "a copy, so here the difference does not measure the receiver's copy."
        if results.manifest.parameters.verify
        else ""
    )
    return (
        "Receiving with `recv(MSG_TRUNC)` consumes the same bytes without copying them to user space, so the "
        "difference in the receiver's CPU time per byte between `copy` and `truncate` is what the receiver's copy "
        f"costs ({config_label(focus.threads, focus.pinning)}, stream; mean [95% CI] over trials).{verified}\n\n"
        + markdown_table(table)
        + _negative_copies(negative)
        + "\n\nThe same senders' throughput receiving by `truncate` over receiving by copy:\n\n"
        + markdown_table(ratios)
    )


def _per_call(results: Results, where: dict[str, object]) -> tuple[float, float] | None:
    """The bytes the receiver took per receive call at WHERE, receiving by copy and by truncate."""
    by_copy = metric_rows(results, "rcv_bytes_per_call", **where)
    by_truncate = metric_rows(results, "rcv_bytes_per_call", **where, receive="truncate")
    if by_copy.empty or by_truncate.empty:
        return None
    return float(by_copy.iloc[0]["mean"]), float(by_truncate.iloc[0]["mean"])


def _negative_copies(negative: list[tuple[str, int, float, tuple[float, float] | None]]) -> str:
    """What a negative difference means: not a copy that costs less than nothing, but a receiver that spent more
    receiving by truncate, said with the bytes per call that show why where the sweep counted them."""
    if not negative:
        return ""
    where = ", ".join(f"{code(name)} at {fmt_size(size)}" for name, size, _, _ in negative)
    smaller = [calls for *_, calls in negative if calls is not None and calls[1] < calls[0]]
    why = (
        " There the receiver took fewer bytes per call by `truncate` than by copy (for example "
        f"{smaller[0][1]:,.0f} B against {smaller[0][0]:,.0f} B). With no copy to make, it drained the socket "
        "sooner and so called more often per byte; those calls cost more than the copy saved."
        if len(smaller) == len(negative)
        else " This sweep does not show why; the difference is flagged, not explained."
    )
    return (
        f"\n\nSome differences are negative ({where}). That is not a copy costing less than nothing: receiving "
        f"by `truncate` cost the receiver more CPU per byte than receiving by copy.{why}"
    )


def which_copy_costs_most(results: Results) -> str:
    """Part A's questions answered from the measured costs: is it really only two copies, and which costs most?"""
    focus = choose_focus(results)
    baseline, one_copy = role(results, Role.TWO_COPY), role(results, Role.ONE_COPY)
    if not (baseline and one_copy):
        return ""
    at = ("stream", focus.size, focus.threads, focus.pinning)
    two_user, one_user = (value(results, "snd_user_ns_per_byte", name, *at) for name in (baseline, one_copy))
    copy = value(results, "rcv_cpu_ns_per_byte", baseline, *at)
    truncate = metric_rows(
        results,
        "rcv_cpu_ns_per_byte",
        implementation=baseline,
        receive="truncate",
        workload="stream",
        size_bytes=focus.size,
        threads=focus.threads,
        pinning=focus.pinning,
    )
    copies = declared(results, baseline).copies.per_byte()
    text = (
        f"**Is it really only two copies?** No: {code(baseline)} makes {copies} copies of each byte here, two on "
        "the sender (the packing `memcpy` and `send()`'s copy into socket buffers) and one on the receiver "
        "(`recv()`), which the name does not count."
    )
    if not (two_user and one_user and copy and not truncate.empty):
        return text + " This sweep did not measure both the packing copy and the receiver's copy, so it cannot say "
        "which costs most."
    packing = two_user[0] - one_user[0]
    receiver = copy[0] - float(truncate.iloc[0]["mean"])
    unresolved = [
        name
        for name, (high, low) in (
            ("packing copy", (one_user[2], two_user[1])),
            ("receiver's copy", (float(truncate.iloc[0]["ci_high"]), copy[1])),
        )
        if low <= high  # the two measurements' 95% intervals overlap
    ]
    if unresolved:
        return text + (
            f" **Which costs most?** At {fmt_size(focus.size)} ({config_label(focus.threads, focus.pinning)}) the "
            f"{' and the '.join(unresolved)} cannot be told from zero: the 95% intervals of the two measurements "
            "that isolate it overlap, so the data do not rank the copies there."
        )
    costlier, cheaper = (
        ("receiver's copy", "packing copy") if receiver > packing else ("packing copy", "receiver's copy")
    )
    times = max(packing, receiver) / min(packing, receiver) if min(packing, receiver) > 0 else float("nan")
    return text + (
        f" **Which costs most?** At {fmt_size(focus.size)} ({config_label(focus.threads, focus.pinning)}) the packing "
        f"copy costs {fmt_num(packing)} ns per byte (the sender's user time of {code(baseline)} minus "
        f"{code(one_copy)}'s) and the receiver's copy {fmt_num(receiver)} ns per byte (the receiver's CPU time "
        f"receiving by copy minus by truncate): the {costlier} costs {fmt_num(times)} times the {cheaper}. The "
        "kernel's copy into socket buffers is inside the sender's system time, together with the protocol's work, "
        "and is not isolated by these two measurements."
    )


def mapped_receive(results: Results) -> str:
    """How much of what the client received through TCP_ZEROCOPY_RECEIVE arrived as mapped pages."""
    trials = results.trials
    rows = trials[(trials["receive"] == "mmap") & (trials["status"] == "ok")]
    if rows.empty:
        return ""
    parts = []
    for name in implementations.ordered(rows["implementation"]):
        mine = rows[rows["implementation"] == name]
        shares = mine.reindex(columns=["rx_mapped_bytes", "rx_copybuf_bytes", "rx_copied_bytes"]).fillna(0).sum()
        mapped, received = float(shares["rx_mapped_bytes"]), float(shares.sum())
        if received > 0:
            parts.append(f"{code(name)} {fmt_pct(mapped / received)}")
    parameters = results.manifest.parameters
    return (
        "With `TCP_ZEROCOPY_RECEIVE` (receive `mmap`) the share of the received bytes that arrived as mapped pages "
        f"rather than copied, over all trials, was: {'; '.join(parts)} (MTU {parameters.mtu:,} B, "
        f"{PAGES[parameters.sender_pages]}). Only whole, page-aligned pages of payload map; the section *The "
        "receiver's side* says which."
    )


def other_ways_to_send(results: Results) -> str:
    """The report's section beyond the study: every sender and the receiver's copy, from the data."""
    others = other_senders(results)
    if not others and receive_modes(results) == [implementations.BASELINE_RECEIVE]:
        return "This sweep measured only the study's senders, receiving by copy."
    parts = [
        "Senders measured beyond the study's three: " + (", ".join(code(name) for name in others) or "none") + ".",
        best_sender_table(results),
        sender_crossovers(results),
        receiver_copy_cost(results),
        which_copy_costs_most(results),
        mapped_receive(results),
    ]
    return "\n\n".join(part for part in parts if part)
