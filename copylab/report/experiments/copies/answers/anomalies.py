"""Question 6: one unexpected result, explained: the copy path's own findings first, then the largest
significant reversal of the expected order."""

from __future__ import annotations

from typing import Any

import pandas as pd

from copylab.calibration.record import findings_for_copy
from copylab.declarations import implementations
from copylab.declarations.implementations import STUDY_LAYOUT
from copylab.formatting import (
    code,
    fmt_interval,
    fmt_num,
    fmt_pct,
    fmt_size,
    markdown_table,
    threads_text,
)
from copylab.measure.running.spec import cpus_for
from copylab.report.answer import Answer
from copylab.report.experiments.copies.answers import paired
from copylab.report.experiments.copies.basics.anomaly import Anomaly, expected_order, find_anomaly
from copylab.report.experiments.copies.basics.queries import choose_focus, role, zero_copy_counts
from copylab.report.prose import config_label, value_interval
from copylab.report.results import (
    THROUGHPUT,
    Results,
    between_hosts,
    declared,
    every_trial,
    measured_sizes,
    present,
    select,
    value,
)
from copylab.roles import Role

# Why rep movsb copies slowly at some offsets: the named effect, 4K aliasing.
REP_MOVSB = (
    "String instructions (`rep movsb`) let the CPU's microcode copy a block as a whole; on CPUs with fast short "
    "rep-movsb (FSRM) both glibc and the kernel prefer them. The microcode must not copy forwards over its own "
    "output, so it checks whether the destination starts just after the source. When it compares only the address "
    "bits within a 4 KiB page, a destination a few bytes past the source modulo 4 KiB looks like such an overlap "
    "(*4K aliasing*), and it falls back to a slow, careful copy. Two buffers allocated one after the other by "
    "`malloc()` lie exactly so (16-byte block headers), so the same program copies fast or many times slower "
    "depending on where its buffers happen to lie: a cost no cache level explains, and one a page-aligned buffer "
    "removes."
)


def _explain(results: Results, anomaly: Anomaly) -> str:
    zero_copy = declared(results, anomaly.implementation).zero_copy
    if anomaly.kind == "ordering_reversal" and zero_copy:
        counts = zero_copy_counts(results.trials, anomaly.implementation)
        copied = f" ({fmt_pct(counts['copied_fraction'])} of completions flagged COPIED here)" if counts else ""
        where = (
            "Between these hosts the kernel still copied pinned pages where the device or the path could not use "
            "them as they were"
            if between_hosts(results)
            else "Over a veth pair the packet is delivered locally, so the kernel must copy the pinned pages before "
            "it can hand the data to another socket"
        )
        return (
            f"MSG_ZEROCOPY is built for a NIC that reads the pinned pages by DMA. {where}{copied}: where that "
            "happens the copy is not saved but deferred, and the sender pays on top for pinning the pages "
            "(get_user_pages, page reference counts, memory accounting against optmem_max) and for the completion "
            "notifications it has to read from the error queue. More work per byte means less throughput."
        )
    if anomaly.kind == "ordering_reversal":
        return (
            "With an 8-entry iovec the kernel copies eight separate user buffers: each segment is checked, faulted in "
            "and copied on its own, and each lands in socket-buffer memory at an unaligned offset. The packing memcpy "
            f"of {anomaly.observed[0]}, in contrast, runs on data that is hot in the L1/L2 cache and hands the kernel "
            "one contiguous buffer, a single long copy that the CPU's string-copy instructions handle at full speed. "
            "When the user-space copy is that cheap, the per-segment overhead inside sendmsg() outweighs it."
        )
    if anomaly.kind == "non_monotonic":
        zc = (
            f" For {anomaly.implementation}, the pinned pages of in-flight sends are also charged against optmem_max; "
            "once that runs out, sends fail with ENOBUFS until completions free it."
            if zero_copy
            else ""
        )
        return (
            "Larger messages mean fewer system calls per byte, so throughput should not fall. A fall means the larger "
            "message crosses a capacity limit: the message plus its socket-buffer copy no longer fit in the private "
            "L2 cache, so every copy now misses to the shared cache or memory; or a message larger than the socket "
            "send buffer makes the sender block and wait for the receiver, adding context switches and wake-ups." + zc
        )
    server, client = cpus_for(anomaly.pinning)
    cores = results.manifest.host.cores
    sharing = (
        f"Every thread of both ends was pinned to CPU {server}, so the threads cannot run in parallel: they take "
        "turns on that one CPU."
        if server is not None and server == client
        else f"More threads than cores{f' on {cores} cores' if cores else ''} cannot run in parallel; they take "
        "turns on the CPUs."
    )
    return (
        f"{sharing} Every context switch "
        "costs the scheduler's work and evicts the previous thread's socket buffers and message fields from the L1/L2 "
        "caches; the extra connections also add lock contention on the link and the receive path (softirq) work "
        "competes with the application threads for the same CPUs."
    )


def _copy_path_finding(results: Results) -> Answer | None:
    """The calibration's finding that touches the copies a sender of the sweep makes in user space, described with
    what it did to that sender's user-space CPU time; None when there is none."""
    record = results.manifest.calibration
    if record is None:
        return None
    sizes = measured_sizes(results)
    focus = choose_focus(results)
    for name in present(results):
        user_copy = declared(results, name).copies.user_copy
        if user_copy is None:
            continue
        touched = {size: findings_for_copy(record, user_copy.call, user_copy.bytes_per_call(size)) for size in sizes}
        affected = [size for size in sizes if touched[size]]
        if not affected:
            continue
        finding = max((f for size in affected for f in touched[size]), key=lambda f: f.slowdown)
        calls = f"{user_copy.call}() of {fmt_size(user_copy.bytes_per_call(affected[0]))}" + (
            f" to {fmt_size(user_copy.bytes_per_call(affected[-1]))}" if len(affected) > 1 else ""
        )
        measured_cost = [
            (size, value(results, "snd_user_ns_per_byte", name, "stream", size, focus.threads, focus.pinning))
            for size in affected
        ]
        cost_text = "; ".join(
            f"{fmt_size(size)} {value_interval(found, 'ns')}" for size, found in measured_cost if found
        )
        sizes_text = ", ".join(fmt_size(size) for size in affected)
        return Answer(
            claim=f"On this host, {finding.describe(record.cpu_flags)}, and {code(name)} makes such copies at "
            f"{sizes_text}.",
            numbers="Selection rule: a copy that costs more than twice another way of copying the same bytes is "
            "reported before any throughput anomaly, because the calibration measures it directly instead of "
            f"inferring it from throughput. {code(name)} makes such copies at {sizes_text} ({calls} per call"
            + (f"; its sender's user-space CPU time per byte there, mean [95% CI]: {cost_text}" if cost_text else "")
            + "). The calibration's table is in the appendix *Method*.",
            mechanism=REP_MOVSB,
            test="The calibration times the same copy with `GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1000000`, "
            "which makes glibc copy with vector instructions instead of `rep movsb`: if 4K aliasing of `rep movsb` "
            "is the cause, the penalty goes with it, and it does in the ratio above.",
            limits=f"Measured on {_host(results)}; other CPUs (and other microcode) differ, so the same program "
            "may show no such penalty elsewhere. `./inv calibrate` measures it on any host.",
            summary=f"a copy path of glibc's `memcpy` ran slowly on this CPU, and {code(name)} takes it.",
            sure="the calibration measured it directly when the sweep started.",
        )
    return None


def answer_q6(results: Results) -> str:
    """Question 6 as Markdown (q6)."""
    return q6(results).markdown()


def q6(results: Results, counted: Results | None = None) -> Answer:
    """zero_copy's small skbs (counted in COUNTED, the sweep that counted them, by default RESULTS) tested by the
    contiguous arm, else a calibration finding that touches a sender's own copies, else the anomaly chosen by
    ``find_anomaly``, described with its numbers and explained by kind."""
    found = _fragments_finding(results, counted or results) or _copy_path_finding(results)
    if found is not None:
        return found
    anomaly = find_anomaly(results, beyond_q1=True)
    if anomaly is None:
        return Answer(
            "Beyond zero-copy's losses, which question 1 explains, the sweep's stream throughput holds no result "
            "to search for unexpected ones.",
            "",
            "",
            "",
            f"Measured on {_host(results)}.",
        )
    where = f"{config_label(anomaly.threads, anomaly.pinning)}, stream"
    exp, obs = anomaly.expected, anomaly.observed
    if anomaly.kind == "ordering_reversal":
        finding = (
            f"At {fmt_size(anomaly.size)} ({where}), {code(str(obs[0]))} reached {fmt_interval(*obs[1:], 'Gbit/s')} "
            f"but {code(str(exp[0]))}, which avoids more copies, only {fmt_interval(*exp[1:], 'Gbit/s')}."
        )
        rule = (
            f"the largest reversal of the expected order {' > '.join(expected_order())} in the upper half of the "
            "tested sizes"
        )
    elif anomaly.kind == "non_monotonic":
        finding = (
            f"The throughput of {code(anomaly.implementation)} ({where}) fell from "
            f"{fmt_interval(*obs[1:], 'Gbit/s')} at {fmt_size(int(obs[0]))} to {fmt_interval(*exp[1:], 'Gbit/s')} at "
            f"{fmt_size(int(exp[0]))}."
        )
        rule = "the largest drop of a throughput curve as the message size grows"
    else:
        finding = (
            f"At {fmt_size(anomaly.size)} (CPU pinning {code(anomaly.pinning)}, stream), "
            f"{code(anomaly.implementation)} moved {fmt_interval(*obs[1:], 'Gbit/s')} with "
            f"{threads_text(int(obs[0]))} but only {fmt_interval(*exp[1:], 'Gbit/s')} with {exp[0]}."
        )
        rule = "the largest loss of throughput from the fewest to the most threads"
    separation = (
        "the 95% intervals do not overlap: the lower bound of the higher result is "
        f"{fmt_num(1 + anomaly.score)} times the upper bound of the lower one."
        if anomaly.score > 0
        else "not settled; no candidate had non-overlapping 95% intervals, so this is the closest call, not a "
        "significant anomaly."
    )
    return Answer(
        claim=finding,
        numbers=f"Selection rule: among all stream throughput results, {rule} was the highest-scoring of three kinds "
        "of broken expectation (ordering, size, thread scaling); zero-copy's losses to the copying senders are left "
        f"to question 1, which explains them. How sure: {separation}",
        mechanism=_explain(results, anomaly),
        test="This sweep holds no control arm for it. Measuring the same configurations again, with more trials, "
        f"tests whether it repeats: `./inv run-sweep --name follow-up --sizes {anomaly.size} --trials 10`.",
        limits=f"Measured on {_host(results)}; it may depend on this CPU and kernel.",
        summary=f"{code(anomaly.implementation)}'s stream throughput broke the expected "
        f"{KINDS.get(anomaly.kind, 'pattern')} at {fmt_size(anomaly.size)}.",
        sure=separation,
    )


CONTROL_LAYOUT = "contiguous"
# What each kind of anomaly breaks, in a few words for the answers at a glance.
KINDS = {"ordering_reversal": "order of the senders", "non_monotonic": "growth with size"}


def _skb_shape(trials: pd.DataFrame, name: str, layout: str, size: int) -> dict[str, Any] | None:
    """What NAME's kernel transmitted at SIZE in LAYOUT, per trial (BPF counts): KiB per skb with its interval,
    page fragments per skb and KiB per fragment, pooled, and pages pinned per message; None where not counted."""
    rows = select(
        trials,
        implementation=name,
        size_bytes=size,
        layout=layout,
        status="ok",
        workload="stream",
        receive=implementations.BASELINE_RECEIVE,
    )
    rows = rows[rows["snd_skbs"] > 0]
    per_skb = paired.interval(rows["bytes"] / rows["snd_skbs"] / 1024)
    if per_skb is None:
        return None
    frags = rows["snd_skb_frags"].sum() / rows["snd_skbs"].sum()
    pages = rows["zc_pages_per_message"].mean() if "zc_pages_per_message" in rows else float("nan")
    return {"kib": per_skb, "frags": frags, "per_frag": per_skb.mean / frags if frags else float("nan"), "pages": pages}


Arm = tuple[str, str]  # (implementation, layout)


def _shapes(results: Results, arms: tuple[Arm, Arm, Arm]) -> tuple[int, dict[Arm, dict[str, Any]]] | None:
    """The size where zero_copy's skbs are smallest against one_copy's, with every ARM's skb shape there (at the
    focus's threads and pinning); None where an arm was not counted at any size."""
    focus = choose_focus(results)
    trials = every_trial(results)
    trials = trials[(trials["threads"] == focus.threads) & (trials["pinning"] == focus.pinning)]
    shapes: dict[int, dict[Arm, dict[str, Any]]] = {}
    for size in measured_sizes(results):
        found = {arm: _skb_shape(trials, *arm, size) for arm in arms}
        counted = {arm: shape for arm, shape in found.items() if shape}
        if len(counted) == len(found):
            shapes[size] = counted
    if not shapes:
        return None
    size = min(shapes, key=lambda s: shapes[s][arms[0]]["kib"].mean / shapes[s][arms[2]]["kib"].mean)
    return size, shapes[size]


def _speed(results: Results, arm: Arm, size: int) -> tuple[float, float, float] | None:
    """ARM's stream throughput at SIZE (mean, 95% interval), at the focus's threads and pinning."""
    focus = choose_focus(results)
    summary = results.layouts.summary if results.layouts is not None else results.summary
    row = summary[
        (summary["implementation"] == arm[0])
        & (summary["layout"] == arm[1])
        & (summary["size_bytes"] == size)
        & (summary["metric"] == THROUGHPUT)
        & (summary["workload"] == "stream")
        & (summary["threads"] == focus.threads)
        & (summary["pinning"] == focus.pinning)
        & (summary["receive"] == implementations.BASELINE_RECEIVE)
    ]
    if row.empty:
        return None
    return float(row.iloc[0]["mean"]), float(row.iloc[0]["ci_low"]), float(row.iloc[0]["ci_high"])


def _fragment_table(
    results: Results, shape: dict[Arm, dict[str, Any]], speeds: dict[Arm, tuple[float, float, float]]
) -> str:
    return markdown_table(
        {
            "Sender, layout": f"{code(name)} {layout}",
            "KiB per skb (95% CI)": fmt_interval(found["kib"].mean, found["kib"].low, found["kib"].high),
            "Fragments per skb": fmt_num(found["frags"]),
            "KiB per fragment": fmt_num(found["per_frag"]),
            "Pages pinned per message": fmt_num(found["pages"]) if declared(results, name).zero_copy else "none",
            "Throughput, Gbit/s": fmt_interval(*speeds[(name, layout)]),
        }
        for (name, layout), found in shape.items()
    )


def _fragments_finding(results: Results, counted: Results) -> Answer | None:
    """zero_copy's small skbs: where its message's fields make it send far fewer bytes per skb than one_copy (as
    COUNTED counted them), the mechanism (a fragment per piece of a pinned page) and the control arm that tests it
    (the same sender with one contiguous buffer, its throughput from RESULTS); None when the sweeps lack that arm
    or the counts."""
    zero_copy, one_copy = role(results, Role.ZERO_COPY), role(results, Role.ONE_COPY)
    if not zero_copy or not one_copy or results.layouts is None:
        return None
    arms = ((zero_copy, STUDY_LAYOUT), (zero_copy, CONTROL_LAYOUT), (one_copy, STUDY_LAYOUT))
    found = _shapes(counted, arms)
    if found is None:
        return None
    size, shape = found
    measured_speeds = {arm: _speed(results, arm, size) for arm in arms}
    speeds = {arm: speed for arm, speed in measured_speeds.items() if speed}
    if len(speeds) < len(measured_speeds):
        return None
    fields, control, copying = (shape[arm] for arm in arms)
    fast, slow = speeds[arms[1]], speeds[arms[0]]
    table = _fragment_table(results, shape, speeds)
    grown = fmt_interval(control["kib"].mean, control["kib"].low, control["kib"].high, "KiB")
    faster = (
        f"and its throughput rose to {fmt_interval(*fast, 'Gbit/s')} from {fmt_interval(*slow, 'Gbit/s')}"
        if fast[1] > slow[2]
        else f"while its throughput, {fmt_interval(*fast, 'Gbit/s')} against {fmt_interval(*slow, 'Gbit/s')}, is not "
        "told apart by this run's intervals"
    )
    settled = control["kib"].above(fields["kib"])
    claim = (
        f"At {fmt_size(size)} {code(zero_copy)} sent skbs of {fmt_num(fields['kib'].mean)} KiB against "
        f"{code(one_copy)}'s {fmt_num(copying['kib'].mean)} KiB, though both hand the kernel the same 8 fields: pinned "
        f"in place, the fields' {fmt_num(fields['pages'])} pages become {fmt_num(fields['per_frag'])} KiB fragments."
    )
    numbers = (
        "Selection rule: the result of this run's own rows that most contradicts what the study's design predicts "
        "(a sender that copies less should not send smaller packets), with a control arm in the same run that "
        f"tests its explanation.\n\n{table}" + _one_message(counted, zero_copy, one_copy)
    )
    test = (
        f"The control arm: {code(zero_copy)} with the message in one contiguous buffer pins whole pages "
        f"({fmt_num(control['pages'])} per message) and sends {fmt_num(control['per_frag'])} KiB fragments. Had the "
        "cost been per send or per byte, its skbs would have stayed as small; "
        + (
            f"they grew to {grown}, beyond the 95% intervals, {faster}."
            if settled
            else f"they carried {grown}, not beyond the 95% intervals, so this sweep does not confirm the mechanism."
        )
    )
    return Answer(
        claim=claim,
        numbers=numbers,
        mechanism=_fragments_mechanism(one_copy, zero_copy, size, fields, control, copying),
        test=test,
        limits=(
            f"Measured on {_host(results)}. The fragment sizes depend on the allocator's placement (glibc's 16-byte "
            "block headers) and the page size, not on the CPU; the appendix *What the message's layout costs* has "
            "every size. With each field on a page of its own, `./inv run-sweep --name layouts --implementations "
            "one_copy,zero_copy --layout fields,aligned,contiguous --layout-for one_copy,zero_copy` separates the "
            "pieces of pages from the number of fields."
        ),
        summary=(
            f"Pinned in place, the 8 fields make {code(zero_copy)}'s skbs smaller than {code(one_copy)}'s "
            f"({fmt_num(fields['kib'].mean)} against {fmt_num(copying['kib'].mean)} KiB at {fmt_size(size)})."
        ),
        sure=(
            "a control arm (one contiguous buffer) grew the skbs beyond the 95% intervals."
            if settled
            else "not confirmed by the control arm."
        ),
    )


def _host(results: Results) -> str:
    """The CPU by its full model string and the kernel, as the manifest recorded them."""
    host = results.manifest.host
    return f"{host.cpu_model or 'an unrecorded CPU'}, kernel {host.kernel}"


# Fragment counts within this factor of each other are "about as many".
ABOUT_AS_MANY = 1.25


def _fragments_mechanism(
    one_copy: str, zero_copy: str, size: int, fields: dict[str, Any], control: dict[str, Any], copying: dict[str, Any]
) -> str:
    """Why pinned fields make small skbs, with the kernel's functions, said for the fragments counted."""
    a, b = fields["frags"], control["frags"]
    follow = (
        f"Its skbs carry about as many fragments in either layout ({fmt_num(a)} and {fmt_num(b)}), so their bytes "
        "follow the bytes per fragment."
        if max(a, b) <= ABOUT_AS_MANY * min(a, b)
        else f"Its skbs carry {fmt_num(a)} fragments in the fields layout and {fmt_num(b)} with one contiguous "
        f"buffer, of {fmt_num(fields['per_frag'])} and {fmt_num(control['per_frag'])} KiB: the fields' skbs are made "
        "of pieces of pages."
    )
    return (
        f"A copying sender's bytes go into the socket's own page fragment (`sk_page_frag()`, pages of up to 32 KiB, "
        f"net/ipv4/tcp.c `tcp_sendmsg_locked()`), so {code(one_copy)}'s skbs hold {fmt_num(copying['frags'])} large "
        "fragments. With `MSG_ZEROCOPY` the kernel pins the user's pages instead and attaches each piece of a page "
        "the iovec covers as a fragment of its own (net/core/datagram.c `__zerocopy_sg_from_iter()`), at most "
        "`MAX_SKB_FRAGS` to an skb. The 8 fields were allocated apart with `malloc()`, so none starts on a page: "
        f"each {fmt_size(size // 8)} field spans {fmt_num(fields['pages'] / 8)} pages, and the fragments are pieces "
        f"of pages. {follow} A zero-copy skb also holds one range of sends only: an skb points to one completion "
        "record (`ubuf_info`), and `skb_zerocopy_iter_stream()` (net/core/skbuff.c) refuses to append a send with "
        "another (`-EEXIST`), so `tcp_sendmsg_locked()` starts a new skb. The record of the previous send is extended "
        "only while its skb still waits in the write queue (`msg_zerocopy_realloc()`); with both ends on one CPU "
        "each send tends to leave before the next, so a zero-copy skb carries about one message at most, where a "
        "copying sender keeps filling the queue's last skb. Every per-skb cost (building it, segmenting it, the copy "
        "on local delivery, a completion) is then spread over fewer bytes."
    )


def _one_message(results: Results, zero_copy: str, one_copy: str) -> str:
    """Per size, the zero-copy and copying senders' bytes per skb against the message: whether zero-copy's stop at
    about one message."""
    focus = choose_focus(results)
    trials = every_trial(results)
    trials = trials[(trials["threads"] == focus.threads) & (trials["pinning"] == focus.pinning)]
    said = []
    for size in measured_sizes(results):
        ours, theirs = (_skb_shape(trials, name, STUDY_LAYOUT, size) for name in (zero_copy, one_copy))
        if ours and theirs:
            said.append(
                f"{fmt_size(size)}: {fmt_num(ours['kib'].mean * 1024 / size)} and "
                f"{fmt_num(theirs['kib'].mean * 1024 / size)}"
            )
    if not said:
        return ""
    return (
        f"\n\nData per skb in messages, {code(zero_copy)} and {code(one_copy)} (both in fields), by size: "
        + "; ".join(said)
        + "."
    )
