"""Where each sweep's measuring time went: its initial round of blocks, then the extra blocks a budget gave to the
comparisons still undecided (copylab.study.budget), one sentence per sweep, computed from its trials."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from copylab import experiments
from copylab.formatting import code, fmt_duration, fmt_size
from copylab.report.results import Results, every_trial


def _points(extra: pd.DataFrame, axis: str) -> str:
    """The points extra blocks went to along AXIS, e.g. '8 KiB and 16 KiB with 1 thread; 4 KiB with 4 threads'."""
    by_threads = []
    for threads, group in extra.groupby("threads"):
        values = sorted(int(v) for v in group[axis].unique())
        shown = [fmt_size(v) for v in values] if axis == "size_bytes" else [f"{v} connections" for v in values]
        by_threads.append(f"{', '.join(shown)} with {int(threads)} thread{'s' if threads != 1 else ''}")
    return "; ".join(by_threads)


def _time(trials: pd.DataFrame) -> str:
    """The trials' own time (their windows and the harness around each), or nothing where it was not recorded."""
    if "trial_wall_s" not in trials or trials["trial_wall_s"].isna().all():
        return ""
    return f" in {fmt_duration(float(trials['trial_wall_s'].sum()))}"


def sentence(results: Results) -> str:
    """How the sweep's trials were spent: a fixed design, or an initial round and the extra blocks after it."""
    params, trials = results.manifest.parameters, every_trial(results)
    name = f"{code(results.name)} ({params.experiment}, profile {params.profile})"
    total = f"{len(trials):,} trials{_time(trials)}"
    if params.design != "blocked" or params.budget_s is None:
        return f"{name}: a fixed design, {total}."
    first = trials[trials["repetition"] <= params.trials]
    extra = trials[trials["repetition"] > params.trials]
    text = f"{name}: an initial round of {params.trials} blocks, {len(first):,} trials{_time(first)}"
    if not params.budget_s:
        return text + " and no more: it ran with `--budget 0`, so no undecided comparison got extra blocks."
    if extra.empty:
        return text + "; no extra blocks: the budget ran out before any undecided comparison got one."
    blocks = extra.groupby(["workload", "size_bytes", "threads", "connections", "pinning", "repetition"]).ngroups
    return (
        text + f"; then {blocks} extra blocks ({len(extra):,} trials{_time(extra)}) where a comparison was still "
        f"undecided or a mean imprecise: at {_points(extra, experiments.get(params.experiment).axis)}."
    )


def verified(results: Results) -> str:
    """What ./inv report's verified pass checked before it measured, or that none ran."""
    manifest = results.manifest
    if not manifest.verified:
        return "No verified pass ran before these sweeps (the report was rendered from sweeps measured on their own)."
    implementations = sorted({item.split()[0] for item in manifest.verified})
    return (
        f"Before measuring, a short verified pass checked every byte that {len(implementations)} implementations "
        f"delivered, in {len(manifest.verified)} pairs of implementation and receive mode (sweeps "
        f"{', '.join(code(name) for name in manifest.verified_in)}): every byte arrived as sent. Its trials are not "
        "in the results."
    )


def paragraph(sweeps: Sequence[Results]) -> str:
    """The sentence of every sweep of the report, after what the verified pass checked."""
    budgeted = any(s.manifest.parameters.design == "blocked" and s.manifest.parameters.budget_s for s in sweeps)
    how = (
        "`./inv report` spends one time budget on all its sweeps: an initial round of blocks of each, then more "
        "blocks where the study's answers are still open, ranked across sweeps. The verdicts still undecided come "
        "first (the points that need the fewest more blocks to come out significant first, a point where the "
        "estimate changes sign counting half), then the means still imprecise, then the rest (another experiment's "
        "open points, verdicts no answer quotes). "
        if budgeted
        else "These sweeps ran with no time budget: each ran its fixed number of blocks, and no undecided verdict got "
        "more. "
    )
    return f"**Where the time went.** {how}{verified(sweeps[0])}\n\n" + "\n".join(
        f"- {sentence(results)}" for results in sweeps
    )
