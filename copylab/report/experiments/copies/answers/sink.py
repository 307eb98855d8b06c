"""Question 5 answered twice, over the veth and behind the sink, and the sink's part of the section on where
copying less pays.

Over the veth the receiver is local, so the kernel copies a zero-copy send's pages anyway on delivery; behind the
sink (docs/method.md: The sink) nothing undoes it.  The sink sweep comes beside the report's
main sweep (copylab.report.sections.compose.arrange finds it by its manifest's path); without one, each part says in one
sentence that it was not measured and which command measures it.  Every number comes from the sweeps' rows.
"""

from __future__ import annotations

import pandas as pd

from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, markdown_table, threads_listed, threads_text
from copylab.report.experiments.copies.answers.crossovers import (
    crossover_bullets,
    method_note,
    pair_details,
    stream_crossovers,
)
from copylab.report.experiments.copies.basics.queries import role, zero_copy_counts
from copylab.report.prose import how_sure, model_clause
from copylab.report.results import Results, between_hosts, comparison_rows, declared, metric_rows, present, verdict
from copylab.roles import Role

# A documented figure, cited with its source; the measured ones beside it come from the rows.
KERNEL_FIGURE = (
    "The kernel's documentation says `MSG_ZEROCOPY` is generally only effective at writes over around 10 KB "
    "(Documentation/networking/msg_zerocopy.rst)."
)
# What an engineer quoting a size measured behind the sink must know: it is a UDP send's size, not a TCP one's.
SINK_TRANSPORT = (
    "The sink carries UDP datagrams, not TCP: `UDP_SEGMENT` splits each send into datagrams that a `blackhole` "
    "queueing discipline (qdisc) drops, so its sizes are those of UDP sends."
)
SINK_MEANING = (
    "The sink stands for the sender's cost behind a device that takes the pages without copying them. It is not a "
    "NIC: there is no wire, no DMA and no receiver, so what they would cost is in none of these numbers."
)


def measure_command(profile: str) -> str:
    """The one command that measures a profile the report was not given."""
    return f"`./inv run-sweep --profile {profile} --name {profile}`"


def sink_not_measured(what: str) -> str:
    return (
        f"{what} was not measured, because the report was given no sweep on the sink; "
        f"{measure_command('sink')} measures it (then add its directory to `./inv report --data`)."
    )


def zero_copy_pairs(results: Results) -> list[tuple[str, str]]:
    """(sender, two-copy baseline) for every sender of RESULTS whose sends are zero-copy sends, in registry order."""
    baseline = role(results, Role.TWO_COPY)
    if baseline is None:
        return []
    return [(name, baseline) for name in present(results) if declared(results, name).zero_copy]


def _span(results: Results, row: pd.Series) -> str:
    sizes = sorted(
        int(size)
        for size in metric_rows(
            results, row["metric"], workload="stream", threads=int(row["threads"]), pinning=row["pinning"]
        )["size_bytes"].unique()
    )
    return f"{fmt_size(sizes[0])} to {fmt_size(sizes[-1])}" if sizes else "the tested sizes"


def where_it_pays(results: Results, row: pd.Series) -> str:
    """One crossovers.csv row as a clause, in the words the report gives every verdict (model_clause): above which
    size the challenger outperforms its baseline, or that it always, never or not distinguishably does, within the
    tested sizes."""
    return f"{code(row['challenger'])} against {code(row['baseline'])}: {model_clause(row, _span(results, row))}"


def _clauses(results: Results, found: pd.DataFrame) -> str:
    """Each configuration's clause, those that say the same said once, named by their thread counts when there are
    several."""
    said: dict[str, list[int]] = {}
    for _, row in found.iterrows():
        said.setdefault(where_it_pays(results, row), []).append(int(row["threads"]))
    if len(found) == 1:
        return next(iter(said))
    return "; ".join(f"with {threads_listed(counts)}, {clause}" for clause, counts in said.items())


def main_path(results: Results) -> str:
    """Where the main sweep's bytes went, as a sentence says it: over the veth on one host, or between two hosts."""
    return "between the two hosts" if between_hosts(results) else "over the veth"


def _copied(results: Results, sender: str) -> str:
    counts = zero_copy_counts(results.trials, sender)
    if counts is None:
        return "no completion was counted"
    return (
        f"the kernel copied {fmt_pct(counts['copied_fraction'])} of its {counts['zc_completed']:,.0f} completed sends"
    )


def _pair_sentences(
    results: Results, sink: Results | None, sender: str, baseline: str
) -> tuple[list[str], list[pd.Series]]:
    """The pair over the veth and behind the sink, each with the share of its sends the kernel copied anyway."""
    stabilities: list[pd.Series] = []
    sentences = []
    veth, where = stream_crossovers(results, sender, baseline), main_path(results).capitalize()
    if veth.empty:
        sentences.append(f"{where}, {code(sender)} was not measured against {code(baseline)}.")
    else:
        stabilities += crossover_bullets(results, veth)[1]
        # only over the veth is the receiver on this host, whose delivery copies the pages
        delivery = "" if between_hosts(results) else ", on local delivery"
        sentences.append(f"{where}, {_clauses(results, veth)}. There {_copied(results, sender)}{delivery}.")
    if sink is None:
        return sentences, stabilities
    behind = stream_crossovers(sink, sender, baseline)
    if behind.empty:
        sentences.append(f"Behind the sink, {code(sender)} was not measured against {code(baseline)}.")
    else:
        stabilities += crossover_bullets(sink, behind)[1]
        sentences.append(f"Behind the sink, {_clauses(sink, behind)}. There {_copied(sink, sender)}.")
    return sentences, stabilities


def answer_q5(results: Results, sink: Results | None) -> str:
    """Q5: where each zero-copy sender outperforms two-copy over the veth and behind the sink, beside the kernel's
    documented figure; then each verdict's statement in full."""
    pairs = zero_copy_pairs(results)
    pairs += [pair for pair in zero_copy_pairs(sink) if pair not in pairs] if sink is not None else []
    if not pairs:
        zero_copy, baseline = role(results, Role.ZERO_COPY), role(results, Role.TWO_COPY)
        return (
            f"{code(zero_copy or 'the zero-copy variant')} was not measured against "
            f"{code(baseline or 'its baseline')} in this sweep, so the question cannot be answered from it."
        )
    sentences: list[str] = []
    stabilities: list[pd.Series] = []
    for sender, baseline in pairs:
        said, sure = _pair_sentences(results, sink, sender, baseline)
        sentences += said
        stabilities += sure
    if sink is None:
        sentences.append(sink_not_measured("Behind a sink, where no receiver undoes the zero copy, it"))
    else:
        sentences.append(SINK_TRANSPORT)
    short = f"**In short:** {' '.join(sentences)} {KERNEL_FIGURE}{how_sure(stabilities)} {method_note(results)}"
    body = [short]
    for sender, baseline in pairs:
        for where, sweep in ((main_path(results), results), ("behind the sink", sink)):
            found = stream_crossovers(sweep, sender, baseline) if sweep is not None else pd.DataFrame()
            if sweep is not None and not found.empty:
                body.append(
                    f"**{code(sender)} against {code(baseline)}, {where}.**\n\n{crossover_bullets(sweep, found)[0]}"
                )
                body += pair_details(sweep, sender, baseline) if sweep is sink else []
    return "\n\n".join(body)


def _ratio_cell(sink: Results, challenger: str, baseline: str, size: int, threads: int, pinning: str) -> str:
    rows = comparison_rows(sink, challenger, baseline, workload="stream", threads=threads, pinning=pinning)
    rows = rows[rows["size_bytes"] == size]
    if rows.empty:
        return "n/a"
    row = rows.iloc[0]
    mark = {"faster": " faster", "slower": " slower"}.get(verdict(row), "")
    return f"{fmt_num(row['ratio'])} [{fmt_num(row['ratio_ci_low'])}, {fmt_num(row['ratio_ci_high'])}]{mark}"


def ratio_table(sink: Results, baseline: str) -> str:
    """Per size: the baseline's throughput and every other sender's ratio to it, with the 95% interval."""
    parameters = sink.manifest.parameters
    threads, pinning = min(parameters.threads), parameters.pinning[0]
    others = [name for name in present(sink) if name != baseline]
    rows = metric_rows(sink, "throughput_gbps", implementation=baseline, workload="stream", threads=threads)
    rows = rows[rows["pinning"] == pinning]
    return markdown_table(
        {
            "Size": fmt_size(int(row["size_bytes"])),
            f"{code(baseline)} Gbit/s": f"{fmt_num(row['mean'])} [{fmt_num(row['ci_low'])}, {fmt_num(row['ci_high'])}]",
            **{
                f"{code(name)} / {code(baseline)}": _ratio_cell(
                    sink, name, baseline, int(row["size_bytes"]), threads, pinning
                )
                for name in others
            },
        }
        for _, row in rows.iterrows()
    )


def sink_section(sink: Results | None) -> str:
    """What the sink is and stands for, what it took, and every sender's throughput against two-copy on it."""
    if sink is None:
        return SINK_MEANING + " " + sink_not_measured("The senders' cost behind it")
    parameters = sink.manifest.parameters
    trials = sink.trials[sink.trials["status"] == "ok"]
    segments = sorted({int(s) for s in trials["sink_segment_bytes"].dropna() if s > 0})
    segmented = (
        f"; longer datagrams were split by `UDP_SEGMENT` into segments of {fmt_size(segments[0])}" if segments else ""
    )
    copied = "; ".join(f"{code(sender)}: {_copied(sink, sender)}" for sender, _ in zero_copy_pairs(sink))
    baseline = role(sink, Role.TWO_COPY)
    table = ratio_table(sink, baseline) if baseline else ""
    return "\n\n".join(
        part
        for part in (
            "The senders' UDP datagrams went into a virtual device of the server's namespace whose `blackhole` "
            f"queueing discipline drops each one once the stack has built it (MTU {parameters.mtu:,} B{segmented}). "
            f"Its own counter shows {trials['sink_datagrams'].sum():,.0f} datagrams dropped over {len(trials):,} "
            f"trials. Each sender cycled through {parameters.distinct_messages:,} distinct messages, so that the "
            "copy's source comes from memory once they no longer fit in the last-level cache; question 5's limits "
            "give the size from which they do not.",
            SINK_MEANING,
            f"Zero-copy sends the kernel still copied: {copied}." if copied else "",
            f"Stream throughput on the sink ({threads_text(min(parameters.threads))}, CPU pinning "
            f"{code(parameters.pinning[0])}): the ratio of each sender to {code(baseline or 'two-copy')}, 95% "
            "interval; a ratio marked faster or slower differs significantly (Holm-corrected tests), an unmarked one "
            "does not.\n\n" + table
            if table
            else "",
        )
        if part
    )
