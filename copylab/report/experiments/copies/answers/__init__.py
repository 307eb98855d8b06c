"""The report's answers to the study's questions (Part A's evidence, Part E), in sentences computed from a sweep:
one module per question, this one listing them in the assignment's order.

Every function takes loaded ``Results`` and returns Markdown; the numbers come from copylab.report.results and
copylab.report.experiments.copies.basics.anomaly, the wording from copylab.report.prose; nothing here types in a
result.  The study's variants are found by their role in the registry (copylab.roles), never by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from copylab.report.answer import Answer
from copylab.report.experiments.copies.answers.anomalies import answer_q6, q6
from copylab.report.experiments.copies.answers.caches import answer_q2, measures_cache_levels, q2
from copylab.report.experiments.copies.answers.costs import (
    one_copy_costs,
    sink_costs,
    zero_copy_shares,
    zero_copy_trade,
)
from copylab.report.experiments.copies.answers.crossover_parts import q4, q5
from copylab.report.experiments.copies.answers.crossovers import answer_crossover, answer_q4, crossover_statement
from copylab.report.experiments.copies.answers.evidence import copy_evidence, kernel_copy_evidence
from copylab.report.experiments.copies.answers.receiving import receiver_section
from copylab.report.experiments.copies.answers.senders import (
    best_sender_table,
    mapped_receive,
    other_ways_to_send,
    receiver_copy_cost,
    sender_crossovers,
    which_copy_costs_most,
)
from copylab.report.experiments.copies.answers.sink import answer_q5, sink_section
from copylab.report.experiments.copies.answers.threads import answer_q3, measures_threads, q3
from copylab.report.experiments.copies.answers.zero_copy import answer_q1, q1
from copylab.report.experiments.copies.basics.queries import role
from copylab.report.results import Results
from copylab.roles import Role

__all__ = [
    "QUESTIONS",
    "answer_crossover",
    "answer_q1",
    "answer_q2",
    "answer_q3",
    "answer_q4",
    "answer_q5",
    "answer_q6",
    "answers",
    "best_sender_table",
    "copy_evidence",
    "crossover_statement",
    "crossover_summary",
    "kernel_copy_evidence",
    "mapped_receive",
    "measures_cache_levels",
    "measures_threads",
    "other_ways_to_send",
    "q1",
    "q2",
    "q3",
    "q4",
    "q5",
    "q6",
    "receiver_copy_cost",
    "receiver_section",
    "sender_crossovers",
    "sink_section",
    "which_copy_costs_most",
]


QUESTIONS: tuple[str, ...] = (
    "Why does zero-copy not always give the best throughput?",
    "Which cache level shows the most reduction in misses, and why?",
    "How does thread count interact with cache contention?",
    "At what message size does one-copy outperform two-copy on this system?",
    "At what message size does zero-copy outperform two-copy on this system?",
    "Identify one unexpected result and explain it using OS or hardware concepts.",
)


def crossover_summary(results: Results) -> str:
    """A further sweep's answers to questions 4 and 5."""
    return "\n\n".join(
        [
            "**One-copy against two-copy.** "
            + answer_crossover(results, role(results, Role.ONE_COPY), role(results, Role.TWO_COPY)),
            "**Zero-copy against two-copy.** "
            + answer_crossover(results, role(results, Role.ZERO_COPY), role(results, Role.TWO_COPY)),
        ]
    )


def _with(answer: Answer, numbers: str = "", mechanism: str = "") -> Answer:
    """ANSWER with the CPU breakdown's shares added to its numbers and the cost model's costs to its mechanism
    (copylab.report.experiments.copies.answers.costs), those it has."""

    def joined(*parts: str) -> str:
        return "\n\n".join(part for part in parts if part)

    return replace(answer, numbers=joined(answer.numbers, numbers), mechanism=joined(answer.mechanism, mechanism))


def answers(results: Results, companions: Mapping[str, Results] | None = None) -> list[tuple[str, Answer]]:
    """(question, its answer in five parts) for the six questions, in the assignment's order, from the main sweep
    RESULTS and the sweeps COMPANIONS holds beside it (copylab.report.experiments.copies.report.companion): question
    2 from the cache-level grid, question 3 from the thread experiment, question 5 over the veth and behind the sink
    too, and the kernel's counts (BPF) from the sweep that counted them."""
    companions = companions or {}
    sink, counted = companions.get("sink"), companions.get("counts")
    found = (
        _with(q1(results, sink, counted), zero_copy_shares(results, sink), zero_copy_trade(results, sink)),
        q2(results, companions.get("caches")),
        q3(results, companions.get("threads")),
        _with(q4(results), mechanism=one_copy_costs(results)),
        _with(q5(results, sink), mechanism=sink_costs(sink)),
        q6(results, counted),
    )
    return list(zip(QUESTIONS, found, strict=True))
