"""Where each sweep's measuring time went: its initial round of blocks, then the extra blocks a budget gave to the
comparisons still undecided (copylab.study.budget), one sentence per sweep, computed from its trials; and this host's
noise: the per-block spread of the deciding comparisons beside what the method was designed for, and what it cost in
blocks."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from copylab import experiments
from copylab.analysis.noise import DESIGNED_SPREAD, MARGIN, block_spread, needed_blocks
from copylab.analysis.stats import curve_keys
from copylab.declarations import implementations
from copylab.formatting import code, fmt_duration, fmt_num, fmt_size, markdown_table
from copylab.record.manifest import FirstPass
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
        f"undecided or a mean imprecise: at {_points(extra, params.declared.axis)}."
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
        "blocks where the study's answers are still open, ranked across sweeps. The curves whose verdict is still "
        "open come first, the ones fewest blocks from a verdict first: each asks for blocks where its band is widest "
        "for what it must decide, and a crossover also for a new size inside its bracket. Then come the means still "
        "imprecise, then the rest (another experiment's open points, verdicts no answer quotes). "
        if budgeted
        else "These sweeps ran with no time budget: each ran its fixed number of blocks, and no undecided verdict got "
        "more. "
    )
    return (
        f"**Where the time went.** {how}{verified(sweeps[0])}\n\n"
        + "\n".join(f"- {sentence(results)}" for results in sweeps)
        + (f"\n\n{noise}" if (noise := host_noise(sweeps)) else "")
    )


def _quoted(sweeps: Sequence[Results]) -> list[Results]:
    """The sweeps whose verdicts the study's answers quote (the main experiment's verdicts_from)."""
    main = experiments.main()
    return [
        results
        for results in sweeps
        if results.manifest.parameters.experiment == main.name
        and results.manifest.parameters.profile in main.verdicts_from
    ]


def noise_rows(results: Results) -> list[dict[str, str]]:
    """Per deciding comparison and curve of RESULTS: this run's per-block spread, against the spread the method was
    designed for, the blocks it ran per size and the blocks per size each spread asks for."""
    params = results.manifest.parameters
    experiment = params.declared
    trials = results.trials[results.trials["workload"] == experiment.workload]
    pairs = [pair for pair in implementations.deciding_pairs(experiment) if set(pair) <= set(trials["implementation"])]
    rows = []
    for found in block_spread(trials, pairs, experiment.metric, experiment.axis):
        sizes = found.points
        rows.append(
            {
                "sweep": code(results.name),
                "comparison": f"{code(found.challenger)} / {code(found.baseline)}",
                "threads": str(dict(zip(curve_keys(experiment.axis), found.curve, strict=True))["threads"]),
                "spread per block": f"{found.spread:.3f}",
                "× designed": f"{fmt_num(found.spread / DESIGNED_SPREAD[1])}×",
                "blocks per size": f"{found.blocks / sizes:.1f}",
                "needs per size": str(needed_blocks(found.spread, sizes)),
                "designed needs": str(needed_blocks(DESIGNED_SPREAD[1], sizes)),
            }
        )
    return rows


def _sizing(first: FirstPass | None) -> str:
    """How the first pass was sized from the pilot, or nothing where no pilot ran."""
    if first is None:
        return ""
    took = f"; it took {fmt_duration(first.took_s)}" if first.took_s is not None else ""
    return (
        f" Before the initial round, a pilot ({first.pilot_trials} trials, the first blocks of {code(first.pilot)}) "
        f"measured a spread of {fmt_num(first.spread)} ({first.degrees} degrees of freedom) and "
        f"{fmt_num(first.trial_s)} s per trial. That spread asked for {first.needed_blocks} blocks per size, half the "
        f"budget ({fmt_duration(first.share_s)}) afforded {first.affordable_blocks}, and the initial round ran "
        f"{first.blocks}{took}."
    )


def host_noise(sweeps: Sequence[Results]) -> str:
    """This host's noise: how far the blocks of the deciding comparisons spread in this run, beside the spread the
    method was designed for (docs/method.md), and the blocks each asks for; empty without paired blocks."""
    rows = [row for results in _quoted(sweeps) for row in noise_rows(results)]
    if not rows:
        return ""
    low, high = DESIGNED_SPREAD
    return (
        "**This host's noise.** How many blocks an answer needs depends on how far the blocks of a deciding "
        "comparison spread: the standard deviation of the log ratio within a block, about its size's mean, pooled "
        "over a curve's sizes. The method was designed on a host where it was "
        f"{low:g}-{high:g}, with the quick profile's warm-up and window (docs/method.md, Warm-up and window). The "
        f"table gives this run's spread, its multiple of {high:g} and the blocks it ran per size. It also gives the "
        f"blocks per size that would put the curve's mean log ratio within ±{MARGIN:.0%} (95%), at this run's "
        "spread and at the designed one: the blocks grow with the square of the spread."
        + _sizing(sweeps[0].manifest.first_pass)
        + "\n\n"
        + markdown_table(rows)
    )
