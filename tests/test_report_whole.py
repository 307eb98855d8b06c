"""The whole reference report, as ./inv report --data composes it from the committed reference sweeps (the README's
reference render): no long sentence printed twice, the graded report before lettered appendices linked both ways,
each Part E answer in five labelled parts, captions that count the trials their figures draw, and every size axis
logarithmic."""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics
from copylab.paths import REFERENCES
from copylab.record.tables import CONFIG_KEYS
from copylab.report.answer import LABELS
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.experiments.copies import captions
from copylab.report.experiments.copies.figures import copies_figures
from copylab.report.results import Results
from copylab.report.sections import compose
from tests.reference_analyses import References

# A sentence at least this long, printed twice, is a repetition a reader notices.
REPEATED_CHARACTERS = 120


@pytest.fixture(scope="module")
def sweeps(references: References) -> list[Results]:
    return references.many(REFERENCES)


@pytest.fixture(scope="module")
def report(sweeps: list[Results]) -> list[Block]:
    return compose.blocks(compose.arrange(sweeps), date(2026, 1, 1))


def _texts(blocks: list[Block]) -> list[str]:
    return [block.text if isinstance(block, Markdown) else block.caption for block in blocks]


def long_sentences(markdown: str) -> list[str]:
    """MARKDOWN's sentences of REPEATED_CHARACTERS or more, without its tables, headings and code blocks."""
    found = []
    for block in re.split(r"\n\s*\n", markdown):
        lines = [line for line in block.splitlines() if not line.startswith(("|", "    ", "```", "#"))]
        text = re.sub(r"^\*\*(Figure \d+|[A-Z][a-z]+)\.\*\* ", "", " ".join(lines).strip())
        found += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`*])", text) if len(s) >= REPEATED_CHARACTERS]
    return found


def repeated(texts: list[str]) -> list[str]:
    counts = Counter(sentence for text in texts for sentence in long_sentences(text))
    return [f"{count}x: {sentence}" for sentence, count in counts.items() if count > 1]


def test_the_repetition_check_finds_a_long_sentence_printed_twice():
    long = "A sentence that runs on " + "and on " * 20 + "until it is long enough."
    assert repeated([f"{long} Short one.", f"Another. {long}"]) == [f"2x: {long}"]
    assert repeated([long, long.replace("until", "till")]) == []
    assert repeated(["| a table row that repeats itself |", "| a table row that repeats itself |"]) == []


def test_no_long_sentence_is_printed_twice(report):
    assert not repeated(_texts(report)), "\n".join(repeated(_texts(report)))


def _headings(blocks: list[Block]) -> list[str]:
    return [line for text in _texts(blocks) for line in text.splitlines() if line.startswith("# ")]


def test_the_graded_report_ends_with_its_short_method_and_the_appendices_follow_lettered(report):
    headings = _headings(report)
    first = next(i for i, heading in enumerate(headings) if heading.startswith("# Appendix "))
    assert headings[first - 2 : first] == ["# Limitations", "# Method in short"]
    assert headings[0] == "# Answers at a glance" and "# Part E: answers to the questions" in headings[:first]
    letters = [re.match(r"# Appendix ([A-Z]): ", heading) for heading in headings[first:]]
    assert all(letters), headings[first:]
    assert [m.group(1) for m in letters if m] == [chr(ord("A") + i) for i in range(len(letters))]
    titles = [heading.split(": ", 1)[1] for heading in headings[first:]]
    assert {"How a server waits", "Setup", "Method", "Reproducing this report", "Glossary"} <= set(titles)


def test_appendices_are_linked_both_ways(report):
    links = {target for block in report if isinstance(block, Markdown) for _, target in block.links}
    anchors = {block.anchor for block in report if isinstance(block, Markdown) and block.anchor}
    lettered = {anchor for anchor in anchors if anchor.startswith("appendix-")}
    assert lettered and "answers-at-a-glance" in anchors
    assert "#answers-at-a-glance" in links, "each appendix leads back to the graded report"
    method = next(b.anchor for b in report if isinstance(b, Markdown) and re.match(r"# Appendix .: Method$", b.text))
    assert f"#{method}" in links, "the short method names the full method's appendix and links it"
    assert all(target[1:] in anchors for target in links if target.startswith("#appendix-"))


def test_each_part_e_answer_has_the_five_labelled_parts(report):
    answers = [b.text for b in report if isinstance(b, Markdown) and (b.anchor or "").startswith("question-")]
    assert len(answers) == 6
    for text in answers:
        positions = [text.find(f"\n\n**{label}.**") for label in LABELS]
        assert all(p > 0 for p in positions) and positions == sorted(positions), text[:200]
        mechanism = text[positions[2] : positions[3]]
        assert re.search(r"(\w+/)+\w+\.[ch]\b|Documentation/\S+", mechanism), f"no kernel citation: {mechanism}"
        limits = text[positions[4] :]
        assert re.search(r"`(\./inv|perf) [^`]+`", limits), f"no command in the limits: {limits}"


# The figures whose caption says over how many trials each point is a mean: metric and workload drawn.
COUNTED = {
    "throughput_vs_size": ("throughput_gbps", "stream"),
    "cpu_per_byte_vs_size": ("cpu_ns_per_byte", "stream"),
    "latency_vs_threads": ("latency_mean_us", "rr"),
}
TRIALS = re.compile(r"over (\d+)(?: to (\d+))? successful trials per configuration")


def drawn_trials(results: Results, metric: str, workload: str) -> tuple[int, int]:
    """The fewest and most successful trials behind one point of a Part D figure, counted from trials.csv."""
    trials = add_metrics(results.trials)
    drawn = trials[
        (trials["status"] == "ok")
        & (trials["workload"] == workload)
        & (trials["receive"] == implementations.BASELINE_RECEIVE)
        & (trials["layout"] == implementations.STUDY_LAYOUT)
        & trials["implementation"].map(implementations.in_study)
        & trials[metric].notna()
    ]
    counts = drawn.groupby([key for key in CONFIG_KEYS if key in drawn]).size()
    return int(counts.min()), int(counts.max())


def test_the_caption_check_reads_a_span_and_a_single_count():
    assert TRIALS.search("means over 3 successful trials per configuration").groups() == ("3", None)
    assert TRIALS.search("means over 2 to 3 successful trials per configuration").groups() == ("2", "3")


def test_captions_count_the_trials_their_figures_draw(sweeps):
    main = sweeps[0]
    for name, (metric, workload) in COUNTED.items():
        found = TRIALS.search(captions.caption(name, main))
        assert found, f"{name}: the caption says no trial count"
        said = (int(found.group(1)), int(found.group(2) or found.group(1)))
        assert said == drawn_trials(main, metric, workload), name


def _figures(results: Results) -> dict[str, plt.Figure]:
    return copies_figures(results.trials, results.summary, results.crossovers, results.manifest)


SIZE_AXIS = re.compile(r"size|working set", re.IGNORECASE)


def test_every_size_axis_is_logarithmic(sweeps):
    checked = 0
    for results in sweeps[:6]:
        for name, figure in _figures(results).items():
            for ax in figure.axes:
                if SIZE_AXIS.search(ax.get_xlabel()):
                    assert ax.get_xscale() == "log", f"{results.name} {name}: {ax.get_xlabel()!r} is linear"
                    checked += 1
            plt.close(figure)
    assert checked >= 10


def test_figures_the_report_shows_exist(report):
    assert all(Path(block.path).exists() for block in report if isinstance(block, Figure))
    assert pd.Series([block.path.name for block in report if isinstance(block, Figure)]).is_unique
