"""Questions 4 and 5, and every comparison of two implementations along message size: ratio tables,
crossover statements, how firmly the data decide them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from copylab.error_catalogue import UNKNOWN_CROSSOVER_STATUS
from copylab.formatting import (
    code,
    fmt_bytes,
    fmt_duration,
    fmt_num,
    fmt_p,
    fmt_size,
    markdown_table,
)
from copylab.paths import shown
from copylab.report.prose import (
    MODEL_ONLY,
    check_note,
    config_label,
    fit_note,
    how_sure,
    model_clause,
    sure_clause,
    to_decide,
)
from copylab.report.results import (
    THROUGHPUT,
    Results,
    comparison_rows,
    metric_rows,
    paired,
    select,
    verdict,
)


def ratio_table(results: Results, challenger: str, baseline: str, threads: int, pinning: str) -> str:
    """Markdown table of challenger/baseline throughput ratios per size, with 95% CI and Holm p."""
    rows = comparison_rows(results, challenger, baseline, workload="stream", threads=threads, pinning=pinning)
    if rows.empty:
        return ""
    return markdown_table(
        {
            "Size": fmt_size(row.size_bytes),
            "Throughput ratio": fmt_num(row.ratio),
            "95% CI": f"[{fmt_num(row.ratio_ci_low)}, {fmt_num(row.ratio_ci_high)}]",
            "p (Holm)": fmt_p(row.p_holm),
            "Verdict": verdict(row),
        }
        for row in rows.itertuples()
    )


def _significant_sizes(results: Results, row: pd.Series) -> tuple[list[str], list[str]]:
    """Sizes where the challenger of a crossovers.csv row is significantly better, and worse."""
    rows = comparison_rows(
        results,
        row["challenger"],
        row["baseline"],
        row["metric"],
        workload=row["workload"],
        threads=row["threads"],
        pinning=row["pinning"],
    )
    verdicts = [(fmt_size(r.size_bytes), verdict(r)) for r in rows.itertuples()]
    return [s for s, v in verdicts if v == "faster"], [s for s, v in verdicts if v == "slower"]


def crossover_statement(results: Results, row: pd.Series) -> str:
    """One crossovers.csv row as a sentence, with the tested size range."""
    challenger, baseline = code(row["challenger"]), code(row["baseline"])
    threads, pinning = int(row["threads"]), str(row["pinning"])
    sizes = sorted(
        int(s)
        for s in metric_rows(results, row["metric"], workload=row["workload"], threads=threads, pinning=pinning)[
            "size_bytes"
        ].unique()
    )
    span = f"{fmt_size(sizes[0])} to {fmt_size(sizes[-1])}" if sizes else "the tested sizes"
    where = f"With {config_label(threads, pinning)}"
    first = row.get("first_significant_at")
    first_text = (
        f" From {fmt_size(first)} upward it is significantly better at every tested size (Holm-corrected)."
        if first is not None and pd.notna(first)
        else ""
    )
    status = row["status"]
    if status in MODEL_ONLY:
        return f"{where}, {challenger} against {baseline}: {model_clause(row, span)}.{first_text}"
    if status == "crossover":
        size, low, high = (float(row[c]) for c in ("crossover_at", "ci_low", "ci_high"))
        censored = [fmt_size(b) for b in (low, high) if round(b) in sizes]
        censored_text = (
            f" An interval bound on a tested size ({', '.join(censored)}) means the resamples reach at least that size."
            if censored
            else ""
        )
        return (
            f"{where}, {challenger} outperforms {baseline} above about **{fmt_bytes(size)}** ({fmt_num(size / 1024)} "
            f"KiB; 95% CI {fmt_bytes(low)} to {fmt_bytes(high)}), where the mean difference turns in its "
            f"favour within the tested {span}.{first_text}{censored_text}"
        )
    if status == "challenger_always_better":
        return (
            f"{where}, {challenger} outperforms {baseline} at every size where they differ significantly, tested "
            f"from {span}: no crossover in range.{first_text}"
        )
    if status == "challenger_never_better":
        return f"{where}, {challenger} never outperforms {baseline} within the tested range of {span}."
    if status == "indistinguishable":
        return (
            f"{where}, {challenger} and {baseline} are indistinguishable: no size from {span} shows a "
            "significant difference, so no crossover size can be named."
        )
    if status == "multiple_crossings":
        better, worse = _significant_sizes(results, row)
        return (
            f"{where}, there is no single size from which {challenger} outperforms {baseline} within {span}: it is "
            f"significantly better at {', '.join(better) or 'no size'} and significantly worse at "
            f"{', '.join(worse) or 'no size'}."
        )
    raise UNKNOWN_CROSSOVER_STATUS.error(status=status)


def stream_crossovers(results: Results, challenger: str | None, baseline: str | None) -> pd.DataFrame:
    """crossovers.csv's rows of CHALLENGER over BASELINE in stream throughput, by pinning and thread count."""
    found = select(results.crossovers, challenger=challenger, baseline=baseline, metric=THROUGHPUT, workload="stream")
    return found.sort_values(["pinning", "threads"])


def crossover_bullets(results: Results, found: pd.DataFrame) -> tuple[str, list[pd.Series]]:
    """A bullet per crossovers row (its statement, how sure it is, where the per-size tests disagree), then which
    curves no smooth curve fits, and the rows."""
    rows = [row for _, row in found.iterrows()]
    bullets = "\n".join(
        f"- {crossover_statement(results, row)}{sure_clause(row)}"
        + "".join(f" {note}" for note in [check_note(row)] if note)
        for row in rows
    )
    if note := fit_note(rows):
        bullets += f"\n\n{note}"
    return bullets, rows


def method_note(results: Results) -> str:
    """How a crossover is computed, for the sweep's design."""
    return "Metric: stream throughput; method: " + (
        "a smooth curve (a polynomial in log2 size) fitted to the within-block log ratios of every block at every "
        "size, its verdict read from the curve's simultaneous band; the crossover where the curve crosses 0, its "
        "interval from refitting to the blocks of every size drawn again (docs/method.md)."
        if paired(results)
        else "root of the mean difference interpolated on log2(size), interval from resampling trials within each size."
    )


def answer_crossover(results: Results, challenger: str | None, baseline: str | None) -> str:
    """Q4/Q5: the crossover of ``challenger`` over ``baseline`` in stream throughput, per thread count and pinning."""
    found = stream_crossovers(results, challenger, baseline)
    if challenger is None or baseline is None or found.empty:
        return (
            f"{code(challenger or 'the variant')} was not measured against {code(baseline or 'its baseline')} in this "
            "sweep, so the question cannot be answered from it."
        )
    bullets, rows = crossover_bullets(results, found)
    return f"**In short:** {_short_answer(results, found)}{how_sure(rows)} {method_note(results)}\n\n{bullets}"


# The sender's CPU time per byte: where the eliminated copy shows directly (question 4).
SENDER_CPU = "snd_cpu_ns_per_byte"


def _rows_of(results: Results, row: pd.Series) -> pd.DataFrame:
    """The comparisons behind a crossovers row, by size."""
    return comparison_rows(
        results,
        row["challenger"],
        row["baseline"],
        row["metric"],
        workload=row["workload"],
        threads=int(row["threads"]),
        pinning=row["pinning"],
    )


def _short_status(results: Results, row: pd.Series) -> str:
    """One configuration's verdict in a clause that names a size or says every size."""
    better, worse = _significant_sizes(results, row)
    sizes = [int(size) for size in _rows_of(results, row)["size_bytes"]]
    span = f"{fmt_size(min(sizes))} to {fmt_size(max(sizes))}" if sizes else "the tested sizes"
    who = f"with {config_label(int(row['threads']), str(row['pinning']))}"
    status = row["status"]
    if status in MODEL_ONLY:
        return f"{who}, {model_clause(row, span)}"
    if status == "crossover":
        size, low, high = (float(row[c]) for c in ("crossover_at", "ci_low", "ci_high"))
        return f"{who}, faster from about {fmt_bytes(size)} (95% CI {fmt_bytes(low)} to {fmt_bytes(high)})"
    if status == "challenger_always_better":
        if len(better) == len(sizes):
            return f"{who}, faster at every size from {span}"
        return f"{who}, never slower: faster at every size where the two differ ({', '.join(better)}; tested {span})"
    if status == "challenger_never_better":
        if len(worse) == len(sizes):
            return f"{who}, slower at every size from {span}"
        return f"{who}, never faster: slower at every size where the two differ ({', '.join(worse)}; tested {span})"
    if status == "indistinguishable":
        return f"{who}, indistinguishable at every size from {span}"
    if better and worse:
        return f"{who}, faster at {', '.join(better)} and slower at {', '.join(worse)}: no single crossover"
    # the model's band changes sign more than once where the per-size tests, each on its own blocks, see less
    return f"{who}, faster at some sizes from {span} and slower at others, changing more than once: no single crossover"


def _short_answer(results: Results, rows: pd.DataFrame) -> str:
    """One sentence over all configurations of a challenger: per thread count, the crossover size or that one option
    wins at every size."""
    challenger, baseline = code(rows["challenger"].iloc[0]), code(rows["baseline"].iloc[0])
    clauses = [_short_status(results, row) for _, row in rows.iterrows()]
    return f"{challenger} against {baseline}: " + "; ".join(clauses) + "."


def answer_q4(results: Results, challenger: str | None, baseline: str | None) -> str:
    """Question 4: answer_crossover, then the pair's details per thread count (pair_details)."""
    text = answer_crossover(results, challenger, baseline)
    if challenger is None or baseline is None:
        return text
    return "\n\n".join([text, *pair_details(results, challenger, baseline)])


def pair_details(results: Results, challenger: str, baseline: str) -> list[str]:
    """Per thread count of CHALLENGER against BASELINE in stream throughput: the ratio table, where the sender's CPU
    per byte decides differently, where the ranking of *Other ways to send* (unpaired) and the paired verdicts part,
    and, for a verdict not settled, what would settle it."""
    parts = []
    seconds = 0.0
    for _, row in stream_crossovers(results, challenger, baseline).iterrows():
        threads, pinning = int(row["threads"]), str(row["pinning"])
        parts.append(
            f"**Per size, {config_label(threads, pinning)}:** {code(challenger)} over {code(baseline)} in stream "
            f"throughput, {'paired within blocks' if paired(results) else 'unpaired'}.\n\n"
            + ratio_table(results, challenger, baseline, threads, pinning)
        )
        parts += [sentence for sentence in (_sender_cpu(results, row), _ranking_differs(results, row)) if sentence]
        said, needed = _to_settle(results, row)
        parts.append(said)
        seconds += needed
    # one command for every verdict not sure yet, said once after them
    command = more_command(results, seconds) if seconds > 0 else None
    if command is not None:
        block = "\n".join(["```", *command, "```"])
        parts.append(f"This command measures all of them in the same sweeps and renders again:\n\n{block}")
    return [part for part in parts if part]


def _sender_cpu(results: Results, row: pd.Series) -> str | None:
    """The sender's CPU time per byte's verdict, where it differs from throughput's; None where it agrees."""
    where = dict(workload=row["workload"], threads=int(row["threads"]), pinning=row["pinning"])
    cpu = select(results.crossovers, challenger=row["challenger"], baseline=row["baseline"], metric=SENDER_CPU, **where)
    if cpu.empty:
        return None
    other = cpu.iloc[0]
    same = other["status"] == row["status"] and (
        row["status"] != "crossover" or (other["ci_low"] <= row["ci_high"] and row["ci_low"] <= other["ci_high"])
    )
    if same:
        return None
    return (
        f"By the sender's CPU time per byte ({code(SENDER_CPU)}), which shows the eliminated copy directly, the "
        f"verdict differs from throughput's: {crossover_statement(results, other)}"
    )


def _ranking_differs(results: Results, row: pd.Series) -> str | None:
    """Where the two senders' own intervals overlap (so a ranking by intervals calls them tied) while their paired
    comparison separates them; None where the two agree."""
    where = dict(workload="stream", threads=int(row["threads"]), pinning=row["pinning"])
    means = metric_rows(results, THROUGHPUT, **where).set_index(["implementation", "size_bytes"])
    parted = []
    for compared in comparison_rows(results, row["challenger"], row["baseline"], **where).itertuples():
        keys = [(name, compared.size_bytes) for name in (row["challenger"], row["baseline"])]
        if not compared.significant or not all(key in means.index for key in keys):
            continue
        a, b = (means.loc[key] for key in keys)
        if a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"]:
            parted.append(fmt_size(compared.size_bytes))
    if not parted:
        return None
    return (
        f"At {', '.join(parted)} the two senders' own 95% intervals overlap, so the ranking of *Other ways to send* "
        "calls them tied, while the paired comparison here separates them. Pairing the two trials of one block "
        "removes the drift between blocks that widens each sender's own interval, so the paired verdict stands."
    )


def _to_settle(results: Results, row: pd.Series) -> tuple[str, float]:
    """For a verdict not sure yet: what would decide it (copylab.report.prose.to_decide) and about how long that
    takes, with those seconds (0 when unknown); nothing when sure or without the model."""
    if bool(row["sure"]) or pd.isna(row["more_blocks"]):
        return "", 0.0
    more = float(row["more_blocks"])
    parameters = results.manifest.parameters
    each = results.trials["trial_wall_s"].median() if "trial_wall_s" in results.trials else math.nan
    # a trial's recorded wall time, or, where rows predate it, its warm-up and window; two trials a block
    seconds = more * 2 * (float(each) if each == each else parameters.warmup_s + parameters.duration_s)
    text = f"The verdict is not sure yet: {to_decide(row)}"
    if not np.isfinite(seconds):
        return text + ".", 0.0
    return text + f", about {fmt_duration(seconds)} of trials.", seconds


def more_command(results: Results, seconds: float) -> list[str] | None:
    """`./inv report --more`, naming every sweep ./inv report measured with this one (its manifest's report_sweeps),
    one directory a line (a backslash at a line's end continues the comma list); None for a sweep measured on its
    own, such as a committed reference."""
    names = results.manifest.report_sweeps
    if not names:
        return None
    directories = [shown(results.store.directory.parent / name) for name in names]
    first = f"./inv report --more {int(np.ceil(seconds))} --data \\"
    return [first, *(f"{directory},\\" for directory in directories[:-1]), directories[-1]]
