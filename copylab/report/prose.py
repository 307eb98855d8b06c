"""How the report's prose says things, shared by every experiment's answers and captions: a point on an axis, an
interval, a configuration, a crossover, a question the data cannot answer.  Numbers are formatted by
copylab.formatting; the sentences built from them are here, so that every experiment words them alike."""

from __future__ import annotations

import pandas as pd

from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS
from copylab.formatting import code, fmt_interval, fmt_num, fmt_size, threads_text
from copylab.report.results import Value


def count(value: float) -> str:
    """A count: whole ones as '1,000', averages as '9.87'."""
    return f"{int(value):,}" if float(value).is_integer() else fmt_num(value)


def config_label(threads: int, pinning: str) -> str:
    return f"{threads_text(threads)}, CPU pinning {code(pinning)}"


def value_interval(found: Value | None, unit: str = "") -> str:
    """A (mean, low, high) value as 'mean [low, high] unit', or that it was not measured."""
    return "not measured" if found is None else fmt_interval(*found, unit)


def row_interval(row: pd.Series | None, unit: str = "") -> str:
    """A summary.csv row's mean and interval, or that it was not measured."""
    return "not measured" if row is None else fmt_interval(row["mean"], row["ci_low"], row["ci_high"], unit)


def not_measured(what: str) -> str:
    return f"The sweep has no {what} results, so the question cannot be answered from it."


# How the prose says a comparison's status (copylab.analysis.crossover), never the status code itself.
STATUS_WORDS = {
    "challenger_always_better": "better at every point where the two differ",
    "challenger_never_better": "never better",
    "indistinguishable": "not distinguishable at any point",
    "multiple_crossings": "better at some points and worse at others, changing more than once",
    "equivalent": "equivalent: within the margin of no difference at every point",
    "undecided": "undecided: more blocks are needed",
    "model_does_not_fit": "no verdict: the model of the curve does not fit",
}


def spoken(label: str) -> str:
    """A comparison's contender label as the prose says it: 'one_copy@contiguous' -> 'one_copy (contiguous
    layout)', 'two_copy/truncate' -> 'two_copy (receiving by truncate)'."""
    name, _, receive = label.partition("/")
    implementation, _, layout = name.partition(implementations.LAYOUT_MARK)
    said = [f"{layout} layout"] if layout else []
    said += [f"receiving by {receive}"] if receive else []
    return code(implementation) + (f" ({', '.join(said)})" if said else "")


def axis_value(axis: str, value: float) -> str:
    """A point on an experiment's axis as the prose writes it: '4 KiB', '100 connections'."""
    if axis == "size_bytes":
        return fmt_size(value, approximate=True)
    return f"{count(value)} {axis.removesuffix('s')}" + ("" if value == 1 else "s")


def crossover_sentences(crossovers: pd.DataFrame) -> list[str]:
    """One plain sentence per crossovers.csv row, every number taken from the row."""
    sentences = []
    for row in crossovers.itertuples(index=False):
        settings = [row.workload]
        if row.axis != "size_bytes":
            settings.append(fmt_size(row.size_bytes, approximate=True))
        settings.append(f"{row.threads} thread" + ("s" if row.threads != 1 else ""))
        if row.axis != "connections" and row.connections != row.threads:
            settings.append(f"{row.connections} connections")
        where = f"{', '.join(settings)}, CPU pinning {row.pinning}, {METRICS[row.metric].label}"
        head = f"{spoken(row.challenger)} against {spoken(row.baseline)} ({where}): "
        if row.status == "crossover":
            body = (
                f"better from about {axis_value(row.axis, row.crossover_at)} "
                f"(CI {axis_value(row.axis, row.ci_low)} to {axis_value(row.axis, row.ci_high)})"
            )
        else:
            body = STATUS_WORDS.get(row.status, row.status.replace("_", " "))
        if not pd.isna(row.first_significant_at):
            noun = "size" if row.axis == "size_bytes" else "count"
            body += f"; significantly better at every {noun} from {axis_value(row.axis, row.first_significant_at)}"
        sentences.append(head + body + ".")
    return sentences
