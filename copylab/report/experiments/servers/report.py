"""The report's section "How a server waits": the servers experiment's figures' captions and its answers,
in sentences computed from one servers sweep.

Like copylab.report.experiments.copies.answers, every number comes from the sweep's tables through
copylab.report.results; a model is found through the registry (its baselines, its connection limit, its
explanation), never by name.
"""

from __future__ import annotations

from collections.abc import Mapping

from copylab.declarations.metrics import METRICS
from copylab.experiments.servers import SERVERS
from copylab.formatting import code, fmt_num, fmt_size, fmt_span, threads_text
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.contract import ExperimentReport
from copylab.report.experiments.servers import open_load, waiting
from copylab.report.experiments.servers.answers import (
    answer_crossovers,
    answers,
    baseline,
    connection_counts,
    connections_text,
    crossover_rows,
    models,
    most_common,
    setting,
    value_at,
)
from copylab.report.experiments.servers.figures import FIGURES
from copylab.report.prose import row_interval
from copylab.report.results import Results, between_hosts, paired


def _per_configuration(results: Results) -> str:
    """'3 to 8': the successful trials the sweep's configurations rest on (a blocked sweep adds blocks where a
    comparison was undecided)."""
    counts = results.summary["n"][results.summary["n"] > 0]
    return fmt_span(f"{int(counts.min())}", f"{int(counts.max())}") if not counts.empty else "0"


def trial_counts(results: Results) -> str:
    """'122 trials (3 to 8 successful per configuration)'."""
    return f"{len(results.trials):,} trials ({_per_configuration(results)} successful per configuration)"


def _intervals(results: Results) -> str:
    return (
        f"Lines are means over {_per_configuration(results)} trials per configuration, shaded bands Student-t 95% "
        "confidence intervals; open markers: unstable."
    )


def introduction(results: Results) -> str:
    """What was measured: the models (from the registry), the load, and how to read the numbers."""
    params = results.manifest.parameters
    explained = "\n\n".join(params.members[name].explanation for name in models(results))
    client_threads = " or ".join(threads_text(t) for t in params.threads)
    return "\n\n".join(
        [
            f"The question: *{SERVERS.question}* Every model answers the same "
            f"requests: an 8-byte request, a response of {', '.join(fmt_size(s) for s in params.rr_sizes)}, on "
            f"{', '.join(str(c) for c in connection_counts(results))} concurrent connections, each kept busy by the "
            f"load client with one request outstanding at a time (closed loop). The client drives all of them from "
            f"{client_threads} waiting with `epoll`, not a thread per connection. The window opens once "
            "the server holds its connections (after accepting them all; one, for a server that takes one at a "
            f"time) and a warm-up of {fmt_num(params.warmup_s)} s; "
            + (
                "the models of one connection count run back to back in blocks, in a seeded random order, "
                f"{params.trials} blocks and more where a comparison was still undecided: "
                f"{trial_counts(results)}."
                if paired(results)
                else f"{params.trials} trials per configuration in a seeded random order: {trial_counts(results)}."
            ),
            explained,
            f"Each model is compared with {code(baseline(results) or 'its baseline')} at every connection count "
            + (
                "(paired within blocks: the t-test of the within-block log ratios, "
                if paired(results)
                else "(Welch's t-test, "
            )
            + "Holm-corrected along the counts). A crossover is where it starts to beat it, interpolated on a log "
            "axis with a bootstrap interval."
            + (
                ""
                if between_hosts(results)
                else " Over veth each side's CPU time also holds the kernel's receive work for the packets it sends "
                "(the peer's receive path runs on the sending CPU)."
            ),
        ]
    )


def caption(name: str, results: Results) -> str:
    """The caption of the servers figure NAME, with numbers from the summary."""
    return {
        "requests_vs_connections": _requests_caption,
        "cost_per_request": _cost_caption,
        "fairness_vs_connections": _fairness_caption,
    }[name](results)


def _at_most(results: Results, metric: str, unit: str) -> str:
    count = most_common(results)
    parts = [
        f"{code(model)} {row_interval(value_at(results, metric, model, count), unit)}"
        for model in models(results)
        if value_at(results, metric, model, count) is not None
    ]
    return f"at {connections_text(count)}: " + ", ".join(parts)


def _marked(results: Results, name: str) -> str:
    """The crossovers figure NAME draws (copylab.report.experiments.servers.figures marks every one of its
    metrics'), each named, or nothing when it draws none."""
    marks = []
    for metric in FIGURES[name][1]:
        found = crossover_rows(results, metric)
        for _, row in found[found["status"] == "crossover"].iterrows():
            marks.append(
                f"{code(row['challenger'])} over {code(row['baseline'])} in {METRICS[metric].label} from about "
                f"{connections_text(float(row['crossover_at']))}"
            )
    if not marks:
        return ""
    if len(marks) == 1:
        return f" A dotted line marks the crossover of {marks[0]}, a lighter band its 95% bootstrap interval."
    return f" Dotted lines mark the crossovers of {'; '.join(marks)}, lighter bands their 95% bootstrap intervals."


def _requests_caption(results: Results) -> str:
    marked = _marked(results, "requests_vs_connections")
    return (
        f"{FIGURES['requests_vs_connections'][0]} ({setting(results)}). Requests per second "
        + _at_most(results, "requests_per_s", "")
        + ". The 99th percentile of the round-trip latency "
        + _at_most(results, "latency_p99_us", "µs")
        + f". {_intervals(results)}{marked}"
    )


def _cost_caption(results: Results) -> str:
    return (
        f"{FIGURES['cost_per_request'][0]} ({setting(results)}). Server CPU time per request "
        + _at_most(results, "snd_cpu_us_per_request", "µs")
        + ". Server context switches per request "
        + _at_most(results, "snd_ctx_per_request", "")
        + ". The lower panels show the share of the window each side spent on a CPU (user + system time over "
        "the window): near 1, that side had nothing to spare. Lines and bands as in the figure before."
        + _marked(results, "cost_per_request")
    )


def _fairness_caption(results: Results) -> str:
    return (
        f"{FIGURES['fairness_vs_connections'][0]} ({setting(results)}): the share of connections that "
        "completed at least one request in the window, and Jain's index over the requests each completed "
        "(1: all equal; 1/connections: one connection got them all). Served share "
        + _at_most(results, "served_fraction", "")
        + ". Lines and bands as in the figures before."
        + _marked(results, "fairness_vs_connections")
    )


# ---------------------------------------------------------------- answers


HEADING = "# How a server waits"
INTRODUCTION = (
    "The study's related exercises ask a second question: not how bytes leave user space, but how a server waits "
    "for many connections at once: one at a time, a thread or a process per connection, or one thread "
    "multiplexing them with `select`, `poll` or `epoll`."
)


def parts(results: Results, companions: Mapping[str, Results] | None = None) -> list[Block]:
    """The section of a report whose servers sweep RESULTS is (copylab.report.experiments.servers.open_load's under open
    load); a servers sweep has no COMPANIONS."""
    if results.manifest.parameters.load == "open":
        return open_load.parts(results)
    return [
        Markdown(HEADING),
        Markdown(INTRODUCTION),
        Markdown(introduction(results)),
        *(Figure(results.store.figure_path(name), caption(name, results)) for name in FIGURES),
        *(Markdown(f"## {question}\n\n{answer}") for question, answer in answers(results)),
        *(Markdown(f"## {question}\n\n{answer}") for question, answer in waiting.answers(results)),
    ]


def absent(loads: frozenset[str] = frozenset()) -> list[Block]:
    """What the report says in place of the servers sweeps it lacks, given the loads of those it has: without any,
    the section and how to get a sweep; without one under open load, how to get that section."""
    if loads:
        return [] if "open" in loads else [Markdown(open_load.ABSENT)]
    return [
        Markdown(HEADING),
        Markdown(INTRODUCTION),
        Markdown(
            "This report has no servers sweep. `./inv report` runs one; `./inv run-sweep --experiment servers` "
            "runs a sweep of its own, and `./inv report --data COPIES_DIR,SERVERS_DIR` reports both."
        ),
    ]


def summary(results: Results) -> str:
    """A further servers sweep: from how many connections each model beats the baseline (under open load, the
    highest rate each serves within the target)."""
    if results.manifest.parameters.load == "open":
        return open_load.summary(results)
    return answer_crossovers(results)


def limitations(results: Results, companions: Mapping[str, Results] | None = None) -> list[str]:
    """What limits a servers sweep beyond what every sweep says (with or without COMPANIONS, sweeps beside it):
    nothing of its own yet."""
    return []


REPORT = ExperimentReport(parts=parts, summary=summary, limitations=limitations, absent=absent)
