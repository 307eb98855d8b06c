"""The copies experiment's parts of the report (copylab.report.sections.compose puts them after the answers at a
glance and before Limitations): where the copies happen (Part A), what was measured (Part B), the one command
(Part C), the study's plots (Part D) and the answers to the study's questions (Part E); and for the appendices the
other ways to send, where copying less pays, the message's layouts and how far each sender is from its copy bound."""

from __future__ import annotations

from collections.abc import Mapping

from copylab.analysis.copy_bound import copy_limit_rows
from copylab.declarations import implementations
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, fmt_span, markdown_table
from copylab.report import appendix, glossary
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.contract import ExperimentReport
from copylab.report.experiments.copies import answers, captions, glance
from copylab.report.experiments.copies.answers.costs import breakdown_figures, profile_limitations
from copylab.report.experiments.copies.basics import layout
from copylab.report.experiments.copies.basics.presentation import RECEIVE_EXPLANATIONS
from copylab.report.experiments.copies.basics.queries import role, zero_copy_counts
from copylab.report.hosts import real_link
from copylab.report.results import Results, between_hosts, declared, present, receive_modes, traced
from copylab.roles import Role

PART_A_INTRODUCTION = (
    "Every server sends the same message: 8 separately heap-allocated string fields that together make up the "
    "message size. They differ only in how the message leaves user space; the client is the same program for all."
)
OTHER_SENDERS_INTRODUCTION = (
    "The study's question, *when does copying less pay?*, for the senders beyond its three (a file served with "
    "`read()` and `send()` or with `sendfile()`; the 8-field message through io_uring, with and without zero-copy) "
    "and for the receiver's side of the copies."
)


def part_a(results: Results) -> str:
    """Where the copies happen, one paragraph per implementation and receive mode the sweep measured."""
    paragraphs = [declared(results, name).explanation for name in present(results)]
    modes = receive_modes(results)
    if modes != [implementations.BASELINE_RECEIVE]:
        paragraphs += [RECEIVE_EXPLANATIONS[mode] for mode in modes]
    return "\n\n".join(paragraphs)


def copy_limit(results: Results) -> str:
    """Best throughput of each implementation against the ceiling its copies allow on this host."""
    calibration = results.manifest.calibration
    if calibration is None:
        return (
            f"The sweep's manifest holds no memcpy calibration"
            f"{' (it ran with --no-calibrate)' if not results.manifest.parameters.calibrate else ''}; "
            "`./inv calibrate --data DIR` adds one. Without it, the "
            "distance to the copy-bound limit cannot be stated."
        )
    memcpy = calibration.memcpy_gbps
    rows = copy_limit_rows(results.summary, memcpy, results.manifest.parameters.members)
    table = markdown_table(
        {
            "Sender": code(row["implementation"]),
            "Receive": row["receive"],
            "Copies": str(row["copies_per_byte"]),
            "Counted": _counted(row["receiver_counted"]),
            "Best, Gbit/s": fmt_num(row["best_gbps"]),
            # size and threads apart: together, "256 KiB, 1 thread" wrapped in every row
            "At size": fmt_size(row["size_bytes"]),
            "Threads": str(row["threads"]),
            "Bound, Gbit/s": fmt_num(row["limit_gbps"]),
            "Of bound": f"{row['fraction']:.0%}",
        }
        for row in rows
    )
    disagree = [
        f"{code(row['implementation'])} receiving by {row['receive']}"
        for row in rows
        if row["receiver_counted"] is not None
        and any(abs(end - row["receiver_copies"]) > COUNT_TOLERANCE for end in row["receiver_counted"])
    ]
    agreement = (
        f" The kernel's count disagrees with the declared receiver's copy for {', '.join(disagree)}."
        if disagree
        else " Of each count, the receiver's copies (1 receiving by copy, 0 by truncate) agree with what the "
        "kernel counted with BPF per byte delivered (Part A, column Counted); the sender's copies come from its "
        "code and the kernel's source (Part A), since counting them needs function probes."
    )
    above = implementations.ordered({row["implementation"] for row in rows if row["fraction"] > 1})
    beyond = (
        f" Here {', '.join(code(name) for name in above)} went past the bound, so their copies ran from the "
        "caches, faster than from memory: for them the bound does not hold."
        if above
        else " Below the bound, the rest of the gap is protocol processing, system calls and scheduling."
    )
    return (
        f"Single-core memcpy on this host copies {fmt_num(memcpy)} Gbit/s from memory (best of "
        f"{calibration.runs} copies of a {calibration.buffer_mib} MiB buffer, larger than the last-level cache, "
        "measured when the sweep started). With both ends on one CPU that core performs every copy of every byte. "
        f"So if every copy ran at that speed, an implementation making *k* copies could not exceed "
        f"{fmt_num(memcpy)}/*k* Gbit/s: its copy bound. Each receive mode has its own bound, since the receiver's "
        "copies depend on how it takes the bytes in (with `truncate` the receiver's copy is gone). A message that "
        f"stays in the caches is copied faster than that.{beyond}{agreement}\n\n{table}"
    )


# How far the kernel's count of the receiver's copies (bytes per byte delivered) may lie from the declared whole
# number: headers and retransmitted bytes add a little (1.00 to 1.01 on the reference).
COUNT_TOLERANCE = 0.05


def _counted(span: tuple[float, float] | None) -> str:
    """The receiver's copies per byte the kernel counted, as one number where the configurations agree to
    COUNT_TOLERANCE (headers and retransmissions add a little to each)."""
    if span is None:
        return "n/a"
    if span[1] - span[0] <= COUNT_TOLERANCE:
        return fmt_num(sum(span) / 2)
    return fmt_span(fmt_num(span[0]), fmt_num(span[1]))


def _figure(results: Results, name: str) -> Figure:
    return Figure(results.store.figure_path(name), captions.caption(name, results))


# The figures of the sweeps designed for questions 2 and 3, drawn from those sweeps (copylab.experiments.copies
# .figures), with their captions.
ANSWER_FIGURES = {
    2: (
        "caches",
        "saving_vs_working_set",
        "The eliminated copy by cache level: two_copy's sender user CPU per byte minus one_copy's (mean and 95% "
        "interval, paired by block) and the packing copy's simulated misses per KiB, against the working set (twice "
        "the message), with this host's cache sizes marked.",
    ),
    3: (
        "threads",
        "cost_vs_threads",
        "CPU time per byte against the thread count of each end, both ends on one CPU and the two ends on two CPUs "
        "(mean and 95% interval), with the threads' combined working set on the axis.",
    ),
}


def _answer_figures(number: int, companions: Mapping[str, Results]) -> list[Block]:
    """Question NUMBER's own figure, when the report has the sweep that draws it."""
    kind, name, caption = ANSWER_FIGURES.get(number, (None, "", ""))
    sweep = companions.get(kind) if kind else None
    if sweep is None or not sweep.store.figure_path(name).exists():
        return []
    return [traced(Figure(sweep.store.figure_path(name), caption), sweep)]


def where_it_pays_introduction(results: Results) -> str:
    """What the section adds to the main sweep, said for the path the main sweep took."""
    places = (
        "the senders behind a sink, and the receiver's side, receiving by mapping pages with the kernel's default "
        "pages and with small ones"
    )
    if between_hosts(results):
        return (
            "Between two hosts the receiver is another machine, so a zero-copy send's pages can leave without a "
            f"copy. Sweeps on one host add {places}."
        )
    return (
        "Over the veth the receiver is on this host, so the kernel copies a zero-copy send's user pages on "
        "delivery anyway (`skb_orphan_frags_rx`); only sendfile's page-cache pages, which are not user pages, "
        "arrive uncopied (Part A). Sweeps beside the main one ask what a zero-copy send saves where nothing copies "
        f"its pages later, and what the receiver's copy costs: {places}."
    )


def companion(results: Results) -> str | None:
    """The part a sweep of this experiment is for when it is not the main one, from its manifest: "counts" for the
    sweep that counted the kernel's copies and skbs (the counts profile, copylab.experiments.copies), "sink" for one on
    the sink path, "mmap" for one that receives by mapping pages ("mmap-small" with small sender pages), "threads" for
    question 3's thread experiment, "caches" for question 2's cache-level grid; None for any other."""
    parameters = results.manifest.parameters
    if results.manifest.profile == "counts":
        return "counts"
    if parameters.path == "sink":
        return "sink"
    if "mmap" in parameters.receive:
        return "mmap" if parameters.sender_pages == "large" else "mmap-small"
    if answers.measures_threads(results):
        return "threads"
    if answers.measures_cache_levels(results):
        return "caches"
    return None


def where_it_pays(results: Results, companions: Mapping[str, Results]) -> list[Block]:
    """The sender behind the sink and the receiver's side at the MTU that maps, from the sweeps beside RESULTS."""
    receivers = [companions[kind] for kind in ("mmap", "mmap-small") if kind in companions]
    return [
        Markdown("# Where copying less pays"),
        Markdown(where_it_pays_introduction(results)),
        Markdown("## The sender behind a sink"),
        Markdown(answers.sink_section(companions.get("sink"))),
        *_data(companions.get("sink")),
        Markdown("## The receiver's side"),
        Markdown(answers.receiver_section(companions.get("mmap"), companions.get("mmap-small"), results)),
        *(block for sweep in receivers for block in _data(sweep)),
    ]


def _data(sweep: Results | None) -> list[Block]:
    """Which sweep a section's numbers come from, as a figure's caption says it; the web page links its files."""
    if sweep is None:
        return []
    store = sweep.store
    links = (("trials.csv", str(store.trials_path)), ("manifest.json", str(store.manifest_path)))
    return [Markdown(f"{sweep.origin.stamp()} Its settings: manifest.json.", links=links)]


def parts(results: Results, companions: Mapping[str, Results] | None = None) -> list[Block]:
    """The study's parts (A to E) of a report whose main sweep RESULTS is, with the sweeps COMPANIONS holds beside it
    (copylab.report.sections.compose.arrange: question 2's cache grid, question 3's threads, question 5's sink)."""
    companions = companions or {}
    return [
        Markdown("# Part A: where the copies happen"),
        Markdown(PART_A_INTRODUCTION),
        Markdown(part_a(results)),
        Markdown(answers.copy_evidence(results, companions.get("counts"))),
        _figure(results, captions.PART_A_FIGURE),
        Markdown("# Part B: what was measured"),
        Markdown(glance.part_b(results)),
        Markdown("# Part C: one command, one CSV"),
        Markdown(glance.part_c(results)),
        Markdown("# Part D: measurements"),
        Markdown(captions.part_d_introduction(results)),
        *(_figure(results, name) for name in captions.PART_D_FIGURES if captions.worth_a_figure(name, results)),
        Markdown("# Part E: answers to the questions"),
        *real_link.blocks(results),
        *(
            block
            for number, (question, answer) in enumerate(answers.answers(results, companions), 1)
            for block in (
                Markdown(f"## {question}\n\n{answer.markdown()}", anchor=f"question-{number}"),
                *_answer_figures(number, companions),
                *breakdown_figures(number, results, companions),
            )
        ),
    ]


def appendices(results: Results, companions: Mapping[str, Results] | None = None) -> list[Block]:
    """The experiment's sections beyond the study's parts, for the appendices: the other ways to send, where copying
    less pays (the sink, the receiver's side), the message's layouts and how far each sender is from its copy bound."""
    companions = companions or {}
    layouts = layout.section(results, companions.get("counts"))
    return [
        Markdown("# Other ways to send"),
        Markdown(OTHER_SENDERS_INTRODUCTION),
        *(_figure(results, name) for name in captions.OTHER_SENDERS_FIGURES),
        Markdown(answers.other_ways_to_send(results)),
        *where_it_pays(results, companions),
        *([Markdown(layouts)] if layouts else []),
        Markdown("# How far from the copy bound"),
        Markdown(copy_limit(results)),
    ]


def _evidence_links(results: Results) -> tuple[tuple[str, str], ...]:
    """Where the web page's answers at a glance lead: each question to its full answer, and each phrase that names
    evidence to its figure, its question (the anchors parts() gives them) or the data file it names (a path: the
    page links it relatively)."""
    figures = {
        "throughput": "throughput_vs_size",
        "cache-miss": "cache_misses_vs_size",
        "latency": "latency_vs_threads",
    }
    links = [(f"the {kind} figure of Part D", f"#figure-{name}") for kind, name in figures.items()]
    links += [(f"question {number}", f"#question-{number}") for number in range(1, len(answers.QUESTIONS) + 1)]
    links += [(f"the table under question {n}", f"#question-{n}") for n in range(1, len(answers.QUESTIONS) + 1)]
    links += [("the ratio table under question 1", "#question-1")]
    links += [(question, f"#question-{number}") for number, question in enumerate(answers.QUESTIONS, 1)]
    return (*links, ("crossovers.csv", str(results.store.table_path("crossovers"))))


def front(results: Results, companions: Mapping[str, Results] | None = None) -> list[Block]:
    """What the report opens with: the answers at a glance, linked to their evidence in the web page."""
    return [
        Markdown("# Answers at a glance", anchor=appendix.START),
        *real_link.blocks(results),
        Markdown(glance.at_a_glance(results, companions), links=_evidence_links(results)),
    ]


def back(used: str = "") -> list[Block]:
    """What the report's appendices end with: the glossary of the words the report's text USED uses, the
    experiment's with the report's."""
    return [Markdown(glossary.glossary(glance.GLOSSARY, used))]


def absent(loads: frozenset[str] = frozenset()) -> list[Block]:
    """A report always has its main sweep (copylab.report.sections.compose.arrange), whatever LOADS: nothing to say
    in its place."""
    return []


def summary(results: Results) -> str:
    """A further copies sweep: its answers to questions 4 and 5."""
    return answers.crossover_summary(results)


def limitations(results: Results, companions: Mapping[str, Results] | None = None) -> list[str]:
    """What limits this sweep beyond what every sweep says: zero-copy's sends the kernel copied anyway, and where
    the sweeps beside it (COMPANIONS: the sink's) measured them uncopied."""
    zero_copy = role(results, Role.ZERO_COPY)
    counts = zero_copy_counts(results.trials, zero_copy) if zero_copy else None
    if counts is None or counts["copied_fraction"] <= 0:
        return []
    if between_hosts(results):
        return [
            f"{fmt_pct(counts['copied_fraction'])} of zero-copy sends were copied by the kernel anyway on this "
            "network path (the setup table lists the interfaces' offloads)."
        ]
    sink = (companions or {}).get("sink")
    uncopied = zero_copy_counts(sink.trials, zero_copy) if sink is not None and zero_copy else None
    behind = (
        f" Behind the sink the kernel copied {fmt_pct(uncopied['copied_fraction'])} of them (*Where copying less "
        "pays*), but the sink has no wire, no DMA and no receiver."
        if uncopied is not None
        else " No sweep behind a sink was given, where they would leave uncopied."
    )
    return [
        f"Over the veth the kernel copied {fmt_pct(counts['copied_fraction'])} of zero-copy sends on local "
        f"delivery, so Parts D and E measure zero-copy with a local receiver.{behind} Neither path is a physical "
        "NIC, and the results do not carry over to one as they are."
    ]


def _limitations(results: Results, companions: Mapping[str, Results] | None = None) -> list[str]:
    return limitations(results, companions) + profile_limitations(results, companions or {})


REPORT = ExperimentReport(
    parts=parts,
    summary=summary,
    limitations=_limitations,
    absent=absent,
    front=front,
    back=back,
    companion=companion,
    appendices=appendices,
)
