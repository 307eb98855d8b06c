"""The mechanisms behind questions 1, 4 and 5, in paragraphs: where the CPU goes (the sampled profile,
copylab.analysis.breakdown) and what each unit of work costs (the cost model, copylab.analysis.costs).

Each function returns Markdown paragraphs that an answer appends to its own; a sweep without a profile says in one
sentence why the breakdown is missing, never a share of zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from copylab.analysis import breakdown, costs
from copylab.analysis.analyze_sweep import sweep_path
from copylab.analysis.costs import CostFit, PredictedCrossover
from copylab.declarations import implementations
from copylab.formatting import code, fmt_bytes, fmt_num, fmt_pct, fmt_size
from copylab.record.store import PROFILE_FILE, PROFILE_SYMBOLS_FILE
from copylab.report.blocks import Block, Figure
from copylab.report.experiments.copies.answers.crossovers import stream_crossovers
from copylab.report.experiments.copies.answers.sink import main_path
from copylab.report.experiments.copies.basics.queries import role
from copylab.report.results import Results, between_hosts, every_trial
from copylab.roles import Role
from copylab.vocabulary.values import NO_LAYOUT

PAGE = 4096
# Besides the figure's sizes, the shares are said at the bench's size, where the sampler's cost is measured.
SHARES_SIZE = 65536
# What zero-copy trades the copy for, in the profile's categories.
ZERO_COPY_CATEGORIES = ("pinning", "completions", "deferred_copy")
CATEGORY_WORDS = {"pinning": "pinning pages", "completions": "completions", "deferred_copy": "the deferred copy"}
SIDE_WORDS = {"sender": "the sender's CPU time", "receiver": "the receiver's CPU time", "both": "both ends' CPU time"}
SOFTIRQ_NOTE = (
    "Over the veth both ends share one CPU, and the sending process's transmit delivers the packet on it: the "
    "receiver's TCP work, and the deferred copy, run in softirq context on the sending CPU, so the sender's CPU time "
    "holds part of the receiver's work."
)


def stream_trials(results: Results) -> pd.DataFrame:
    """The sweep's ok stream trials that receive by copy, every message layout."""
    trials = every_trial(results)
    return trials[(trials["status"] == "ok") & (trials["workload"] == "stream") & (trials["receive"] == "copy")]


def study_trials(results: Results) -> pd.DataFrame:
    trials = stream_trials(results)
    return trials[trials["layout"].isin([implementations.STUDY_LAYOUT, NO_LAYOUT])]


def profile_of(results: Results) -> pd.DataFrame | str:
    """The sweep's profile, or the sentence that says why it has none."""
    found = results.store.read_profile()
    if isinstance(found, str):
        return f"The CPU breakdown of {code(results.name)} is missing ({found}); its shares are not reported."
    return found


def _interval(fit: CostFit, term: str, unit: str = "ns") -> str:
    low, high = fit.interval(term)
    shown = f"{fmt_num(fit.estimate(term))} {unit}"
    return shown + (f" [{fmt_num(low)}, {fmt_num(high)}]" if not math.isnan(low) else " (one block: no interval)")


def _costs_sentence(fit: CostFit) -> str:
    """FIT's identified costs, and the terms the data cannot tell apart."""
    said = "; ".join(f"{costs.TERM_WORDS[t]} {_interval(fit, t)}" for t in fit.terms)
    missing = [f"{costs.TERM_WORDS[t]} ({why})" for t, why in fit.left_out.items() if not why.startswith("none in any")]
    return (
        f"{code(fit.implementation)}, {SIDE_WORDS[fit.side]}, fitted to {fit.trials} trials in {fit.blocks} blocks "
        f"(CPU time of the window, ns, non-negative least squares, 95% intervals from resampled blocks; it fits a "
        f"trial within {fmt_pct(fit.spread)} on average): {said}."
        + (
            f" For {code(fit.implementation)} ({SIDE_WORDS[fit.side]}, {fit.trials} trials) the data cannot tell "
            f"apart the cost {', '.join(missing)}."
            if missing
            else ""
        )
    )


def zero_copy_shares(results: Results, sink: Results | None) -> str:
    """Q1: the share of zero_copy's samples spent pinning, in completions and in the deferred copy, by size, over
    the veth and behind the sink."""
    zero_copy = role(results, Role.ZERO_COPY)
    if zero_copy is None:
        return ""
    parts = []
    for where, sweep in ((main_path(results).capitalize(), results), ("Behind the sink", sink)):
        if sweep is None:
            continue
        profile = profile_of(sweep)
        if isinstance(profile, str):
            parts.append(profile)
            continue
        trials = study_trials(sweep)
        mine = trials[trials["implementation"] == zero_copy]
        by_size = []
        shown = breakdown.figure_sizes(list(mine["size_bytes"]), sweep.manifest.parameters.side_sizes)
        for size in sorted({*shown, *([SHARES_SIZE] if SHARES_SIZE in set(mine["size_bytes"]) else [])}):
            at = mine[mine["size_bytes"] == size]
            found = {c: breakdown.share_of(profile, at, [c]) for c in ZERO_COPY_CATEGORIES}
            if not any(math.isnan(v) for v in found.values()):
                each = ", ".join(f"{CATEGORY_WORDS[c]} {fmt_pct(v)}" for c, v in found.items())
                by_size.append(f"at {fmt_size(size)} {each}")
        parts.append(f"{where}: " + ("; ".join(by_size) if by_size else "none of its trials was sampled"))
    if not parts:
        return ""
    return (
        f"**Where the CPU of {code(zero_copy)} goes (sampled).** The shares of all the samples of its trials' "
        "windows, every side counted. "
        + ". ".join(parts)
        + "."
        + ("" if between_hosts(results) else f" {SOFTIRQ_NOTE}")
    )


def zero_copy_trade(results: Results, sink: Results | None) -> str:
    """Q1: what zero_copy pays instead of the copy, in ns per page pinned and per send, beside two_copy's copy."""
    zero_copy, baseline = role(results, Role.ZERO_COPY), role(results, Role.TWO_COPY)
    if zero_copy is None or baseline is None:
        return ""
    parts = []
    for where, sweep in ((main_path(results).capitalize(), results), ("Behind the sink", sink)):
        members = sweep.manifest.parameters.members if sweep is not None else {}
        if sweep is None or zero_copy not in members or baseline not in members:
            continue
        trials = stream_trials(sweep)
        ours, theirs = costs.fit(trials, members[zero_copy], "sender"), costs.fit(trials, members[baseline], "sender")
        if ours is None or theirs is None:
            continue
        copy = theirs.estimate("bytes") * PAGE
        parts.append(
            f"{where}: {_costs_sentence(ours)} Against it, {code(baseline)}'s sender pays "
            f"{fmt_num(theirs.estimate('bytes'))} ns per byte, {fmt_num(copy)} ns per 4 KiB page it copies. "
            + _costs_sentence(theirs)
        )
    if not parts:
        return ""
    return "**What zero-copy trades the copy for (fitted).** " + "\n\n".join(parts)


def _saving(challenger: CostFit, baseline: CostFit) -> str:
    """The per-byte cost CHALLENGER saves against BASELINE, with the interval of the paired resamples."""
    saved = baseline.estimate("bytes") - challenger.estimate("bytes")
    draws = min(len(challenger.draws), len(baseline.draws))
    if draws == 0 or "bytes" not in challenger.terms or "bytes" not in baseline.terms:
        return f"{fmt_num(saved)} ns per byte"
    paired = [baseline.draw(i)("bytes") - challenger.draw(i)("bytes") for i in range(draws)]
    low, high = (float(v) for v in pd.Series(paired).quantile([0.025, 0.975]))
    return f"{fmt_num(saved)} ns per byte [{fmt_num(low)}, {fmt_num(high)}]"


def _predicted(found: PredictedCrossover | None) -> str:
    if found is None:
        return "the costs predict no crossover (fewer than two common sizes)"
    span = f"from {fmt_size(found.sizes[0])} to {fmt_size(found.sizes[-1])}"
    if found.at is None:
        return f"the costs predict the challenger costs more per message at every size {span}"
    if math.isnan(found.at):
        return f"the costs predict the challenger costs less per message at every size {span}"
    interval = f" [{fmt_bytes(found.low)}, {fmt_bytes(found.high)}]" if not math.isnan(found.low) else ""
    return (
        f"the costs predict it costs less CPU per message above about **{fmt_bytes(found.at)}**{interval} "
        f"({fmt_pct(found.crossing)} of the resamples cross within {span})"
    )


def _measured(sweep: Results, challenger: str, baseline: str) -> str:
    rows = stream_crossovers(sweep, challenger, baseline)
    rows = rows[rows["status"] == "crossover"]
    if rows.empty:
        return "the sweep's throughput shows no single crossover"
    row = rows.iloc[0]
    return (
        f"the measured throughput crossover is at {fmt_bytes(row['crossover_at'])} "
        f"[{fmt_bytes(row['ci_low'])}, {fmt_bytes(row['ci_high'])}] ({int(row['threads'])} thread(s))"
    )


def crossover_costs(sweep: Results, challenger: str | None, baseline: str | None, where: str) -> str:
    """Q4 and Q5: the per-byte cost CHALLENGER saves against the per-send and per-segment cost it pays (both ends'
    CPU time), and the crossover those costs predict beside the measured one."""
    if challenger is None or baseline is None:
        return ""
    trials, members = stream_trials(sweep), sweep.manifest.parameters.members
    ours, theirs = costs.fit(trials, members[challenger], "both"), costs.fit(trials, members[baseline], "both")
    if ours is None or theirs is None:
        return ""
    pays = [t for t in ("sends", "segments", "pages", "completions") if t in ours.terms]
    predicted = costs.predicted_crossover(trials, ours, theirs, study_trials(sweep)[lambda t: t["threads"] == 1])
    return (
        f"**What the costs say, {where}.** {code(challenger)} saves {_saving(ours, theirs)} of both ends' CPU time "
        f"against {code(baseline)}, and pays "
        + ", ".join(f"{costs.TERM_WORDS[t]} {_interval(ours, t)}" for t in pays)
        + f" (against {code(baseline)}'s {costs.TERM_WORDS['sends']} {_interval(theirs, 'sends')}). At one thread, "
        f"{_predicted(predicted)}; {_measured(sweep, challenger, baseline)}.\n\n"
        f"{_costs_sentence(ours)}\n\n{_costs_sentence(theirs)}"
    )


def one_copy_costs(results: Results) -> str:
    """Q4's costs: one_copy against two_copy over the sweep's path, and the copy it removes as the samples show it."""
    one_copy, two_copy = role(results, Role.ONE_COPY), role(results, Role.TWO_COPY)
    said = crossover_costs(results, one_copy, two_copy, main_path(results))
    return "\n\n".join(part for part in (said, copy_shares(results, one_copy, two_copy)) if part)


def copy_shares(results: Results, challenger: str | None, baseline: str | None) -> str:
    """The share of each sender's samples in the user-space copy and the kernel's copy, by size."""
    if challenger is None or baseline is None:
        return ""
    profile = profile_of(results)
    if isinstance(profile, str):
        return profile
    trials = study_trials(results)
    trials = trials[trials["threads"] == trials["threads"].min()]
    said = []
    shown = breakdown.figure_sizes(list(trials["size_bytes"]), results.manifest.parameters.side_sizes)
    for size in sorted({*shown, *([SHARES_SIZE] if SHARES_SIZE in set(trials["size_bytes"]) else [])}):
        at = trials[trials["size_bytes"] == size]
        shares = {
            name: [
                breakdown.share_of(profile, at[at["implementation"] == name], [c]) for c in ("user_copy", "kernel_copy")
            ]
            for name in (baseline, challenger)
        }
        if any(math.isnan(v) for values in shares.values() for v in values):
            continue
        said.append(
            f"at {fmt_size(size)} "
            + " against ".join(f"{code(n)} {fmt_pct(u)} and {fmt_pct(k)}" for n, (u, k) in shares.items())
        )
    if not said:
        return ""
    return (
        "**The copy it removes, sampled.** The share of all the trials' samples in the user-space copy and in the "
        f"kernel's copies to and from user space (one thread): {'; '.join(said)}."
    )


def sink_costs(sink: Results | None) -> str:
    """Q5's costs: zero_copy against two_copy behind the sink."""
    if sink is None:
        return ""
    return crossover_costs(sink, role(sink, Role.ZERO_COPY), role(sink, Role.TWO_COPY), "behind the sink")


BREAKDOWN_CAPTION = (
    "Where the CPU goes, {where}: every sample of the trials' windows (perf record, cpu-clock, {rate} per second), "
    "stacked by category of function, for each sender a bar of its own process, one of softirq work (the receiver's "
    "TCP work over the veth runs there, on the sending CPU) and one of the receiver's process; a bar's height is its "
    "side's share of all samples (the rest ran in other processes or idle). Stream, receiving by copy, one thread, "
    "the study's message layout."
)


def breakdown_figures(number: int, results: Results, companions: Mapping[str, Results]) -> list[Block]:
    """Question 1's figures: where the CPU goes over the main path and behind the sink, each linked to the profile
    table it is drawn from."""
    if number != 1:
        return []
    blocks: list[Block] = []
    for where, sweep in ((main_path(results), results), ("behind the sink", companions.get("sink"))):
        if sweep is None or sweep.manifest.sampler is None:
            continue
        path = sweep.store.figures_dir / f"{breakdown.figure_name(sweep_path(sweep.manifest))}.png"
        if not path.is_file():
            continue
        caption = BREAKDOWN_CAPTION.format(where=where, rate=fmt_num(sweep.manifest.sampler.rate_hz))
        data = sweep.store.directory
        sources = (data / PROFILE_FILE, data / PROFILE_SYMBOLS_FILE, sweep.store.trials_path, sweep.store.manifest_path)
        blocks.append(Figure(path, f"{caption} {sweep.origin.stamp()}", tuple(p for p in sources if p.is_file())))
    return blocks


def profile_limitations(results: Results, companions: Mapping[str, Results]) -> list[str]:
    """What the sampled profile leaves out: a sweep that was not sampled (and why: without root, perf cannot sample
    the kernel), or ok trials it has no samples of."""
    said = []
    unsampled: dict[str, list[str]] = {}
    for sweep in (results, *companions.values()):
        found = sweep.store.read_profile()
        if isinstance(found, str):
            unsampled.setdefault(found, []).append(code(sweep.name))
            continue
        trials = every_trial(sweep)
        missing = breakdown.unsampled(found, trials[trials["status"] == "ok"])
        if missing:
            said.append(f"{len(missing)} ok trials of {code(sweep.name)} have no samples in the CPU breakdown.")
    said += [
        f"No CPU breakdown for {', '.join(names)} ({why}). For these sweeps the answers rest on the cost model of "
        "their CPU times alone."
        for why, names in unsampled.items()
    ]
    sampled = [(s.name, r.command) for s in (results, *companions.values()) if (r := s.manifest.sampler) and r.sampled]
    if sampled:
        said.append(
            f"The trials of {', '.join(code(name) for name, _ in sampled)} were sampled while they ran "
            f"({code(sampled[0][1])}): their throughput carries what sampling costs, which "
            "`./inv bench` measures (its goal: under 3% at 64 KiB)."
        )
    return said
