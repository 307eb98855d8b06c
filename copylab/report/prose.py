"""How the report's prose says things, shared by every experiment's answers and captions: a point on an axis, an
interval, a configuration, a crossover, a verdict of the model of a whole curve, a question the data cannot
answer.  Numbers are formatted by copylab.formatting; the sentences built from them are here, so that every
experiment words them alike."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from copylab.analysis.curve_model import EQUIVALENCE_MARGIN, FIT_LEVEL, SURE
from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS
from copylab.formatting import code, fmt_interval, fmt_num, fmt_p, fmt_pct, fmt_size, threads_listed, threads_text
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


# How the report says a curve's verdict from the model of its whole curve (copylab.analysis.curve_model): the verdict
# in a clause (a point with its interval, every point, the margin of equivalence, or undecided and what would decide
# it), how sure it is, and where the per-point tests disagree with it.  Every number comes from the crossovers.csv row.

# What the per-point tests' status (crossovers.csv's tested_status) says, in words.
TESTED_WORDS = {
    "crossover": "worse at the small end and better at the large end",
    "challenger_always_better": "better at some points and worse at none",
    "challenger_never_better": "worse at some points and better at none",
    "indistinguishable": "no point significantly different",
    "multiple_crossings": "better and worse in more than one stretch",
}
# The model's statuses that agree with a per-point check that found no significant point.
_NOTHING_FOUND = ("undecided", "equivalent")


def margin_text() -> str:
    return f"±{fmt_pct(EQUIVALENCE_MARGIN).removesuffix('.0%')}%"


def _noun(axis: str) -> str:
    return "size" if axis == "size_bytes" else "count"


def model_clause(row: pd.Series, span: str) -> str:
    """The model's verdict of a crossovers.csv ROW in one clause (no subject), over the tested SPAN ("1 KiB to 256
    KiB")."""
    axis, status = str(row["axis"]), str(row["status"])
    noun = _noun(axis)
    if status == "crossover":
        at, low, high = (axis_value(axis, float(row[c])) for c in ("crossover_at", "ci_low", "ci_high"))
        return f"better from about **{at}** (95% interval {low} to {high}; worse below it)"
    if status == "challenger_always_better":
        return (
            f"better at every {noun} from {span} where the two differ, and worse by more than {margin_text()} at none"
        )
    if status == "challenger_never_better":
        return (
            f"never better: worse at every {noun} from {span} where the two differ, and better by more than "
            f"{margin_text()} at none"
        )
    if status == "equivalent":
        return (
            f"**equivalent** at every {noun} from {span}: within {margin_text()} (the curve's band reaches at most "
            f"{fmt_pct(float(row['largest_difference']))} either way)"
        )
    if status == "multiple_crossings":
        return f"better at some {noun}s from {span} and worse at others, crossing more than once"
    if status == "undecided":
        return f"**undecided** from {span}: {to_decide(row)}"
    return f"not distinguishable at any {noun} from {span}"


def _p_text(p: float) -> str:
    """'p = 0.0123', or 'p < 0.001'."""
    shown = fmt_p(p)
    return f"p {shown[0]} {shown[1:]}" if shown.startswith("<") else f"p = {shown}"


def to_decide(row: pd.Series) -> str:
    """What would decide an open verdict (or make a decided one sure): about how many more blocks, and where."""
    more = float(row["more_blocks"])
    where = axis_value(str(row["axis"]), float(row["decide_at"]))
    if not math.isfinite(more):
        return "more blocks at every point would decide it"
    if more < 1:
        return f"its band already decides it; a few more blocks, near {where} first, would show it again more surely"
    return f"about {count(more)} more blocks, most near {where}, would decide it"


def sure_clause(row: pd.Series) -> str:
    """How sure a verdict is, in a sentence: the share of simulated second runs that reach it again."""
    replication = float(row["replication"])
    if not math.isfinite(replication):
        return ""
    share = fmt_pct(replication)
    if bool(row["sure"]):
        return f" Sure: {share} of simulated second runs reach the same verdict."
    return f" Not sure yet: only {share} of simulated second runs reach the same verdict (sure takes {fmt_pct(SURE)})."


def how_sure(rows: Iterable[pd.Series]) -> str:
    """One sentence over several verdicts: how many are sure, and what sure means."""
    modelled = [row for row in rows if math.isfinite(float(row["replication"])) or row["status"] == "undecided"]
    if not modelled:
        return (
            " **How sure:** Holm-corrected tests at each point; too few points for the curve model, so no second run "
            "is simulated."
        )
    sure = sum(bool(row["sure"]) for row in modelled)
    if len(modelled) == 1:
        return (
            f" **How sure:** the verdict is {'sure' if sure else 'not sure yet'}: "
            f"{fmt_pct(float(modelled[0]['replication'])) if sure else 'fewer than ' + fmt_pct(SURE)} of second runs "
            "simulated from the fitted curve and its uncertainty reach it (docs/method.md measures how often a sure "
            "verdict comes out again)."
        )
    return (
        f" **How sure:** {sure} of the {len(modelled)} verdicts "
        + ("is" if sure == 1 else "are")
        + f" sure (a verdict is sure when at least {fmt_pct(SURE)} of second runs simulated from the fitted curve and "
        "its uncertainty reach it again; docs/method.md measures how often a sure verdict does)."
    )


def check_note(row: pd.Series) -> str | None:
    """Where the per-point tests (Holm-corrected, each on its own blocks) disagree with the model; None where they
    agree."""
    tested, status = str(row["tested_status"]), str(row["status"])
    if tested == status or (tested == "indistinguishable" and status in _NOTHING_FOUND):
        return None
    return (
        f"The per-point tests (Holm-corrected, each on its own blocks) say {TESTED_WORDS.get(tested, tested)}; "
        "the model, fitted to every block of the curve at once, decides as above."
    )


def fit_note(rows: list[pd.Series]) -> str:
    """For the ROWS whose point means no polynomial fits, that their verdicts read each point's own mean, in one
    sentence naming their thread counts; else nothing."""
    unfitted = [row for row in rows if float(row["lack_of_fit_p"]) < FIT_LEVEL]
    if not unfitted:
        return ""
    p = max(float(row["lack_of_fit_p"]) for row in unfitted)
    return (
        f"With {threads_listed([int(row['threads']) for row in unfitted])}, no smooth curve fits the point means "
        f"({_p_text(p)}{' at most' if len(unfitted) > 1 else ''}), so "
        f"{'those verdicts read' if len(unfitted) > 1 else 'its verdict reads'} each point's own mean, with the spread "
        "pooled over every block."
    )


# The model's statuses that only it gives (the per-point check never does), each said by these functions.
MODEL_ONLY = ("equivalent", "undecided")


def short_verdict(row: pd.Series) -> str:
    """A MODEL_ONLY verdict in a table cell's few words."""
    status = str(row["status"])
    if status == "equivalent":
        return f"equivalent (within {margin_text()})"
    more = float(row["more_blocks"])
    where = axis_value(str(row["axis"]), float(row["decide_at"]))
    return f"undecided (about {count(more)} more blocks near {where})" if math.isfinite(more) else "undecided"
