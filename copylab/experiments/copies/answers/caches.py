"""Question 2: which cache level shows the most reduction in misses, from the counters where the host has
them, else from the copy-cost calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd

from copylab.declarations import implementations
from copylab.experiments.copies.queries import Focus, choose_focus, role
from copylab.formatting import (
    code,
    fmt_num,
    fmt_pct,
    fmt_size,
    markdown_table,
    md_escape,
)
from copylab.record.calibration import Calibration, copy_cost_at, findings_for_copy, region_costs, region_rounds
from copylab.report.prose import config_label, value_interval
from copylab.report.results import Results, comparison_rows, counters_unavailable_reason, measured_sizes, value
from copylab.roles import Role

CACHE_METRICS = {"L1 data cache": "snd_l1d_misses_per_kib", "last-level cache": "snd_llc_misses_per_kib"}


def _cache_reductions(results: Results, focus: Focus, challengers: list[str], baseline: str | None) -> pd.DataFrame:
    """Relative miss reduction (1 - ratio to the baseline) per level, challenger and size, where measured."""
    records = []
    for level, metric in CACHE_METRICS.items():
        for challenger in challengers:
            found = comparison_rows(
                results, challenger, baseline, metric, workload="stream", threads=focus.threads, pinning=focus.pinning
            )
            found = found[np.isfinite(found["ratio"])]
            records += [
                {
                    "level": level,
                    "challenger": challenger,
                    "size": int(r.size_bytes),
                    "reduction": 1 - r.ratio,
                    "low": 1 - r.ratio_ci_high,
                    "high": 1 - r.ratio_ci_low,
                }
                for r in found.itertuples()
            ]
    return pd.DataFrame.from_records(records, columns=["level", "challenger", "size", "reduction", "low", "high"])


def _q2_from_calibration(results: Results, baseline: str | None, one_copy: str | None) -> tuple[str, str | None]:
    """Derived, not counted: where each message size's removed copy works and what one copy costs there, from a
    calibration that is consistent, naming no level where a finding or a disagreement of its rounds decides; and
    the level it names, if any."""
    record = results.manifest.calibration
    if record is None or not record.copy_cost:
        skipped = not results.manifest.parameters.calibrate
        why = "it ran with --no-calibrate" if skipped else "it predates that calibration"
        return (
            f" This sweep's manifest has no copy cost by cache level either ({why}; "
            "`./inv calibrate --data DIR` adds it), so the question stays open here."
        ), None
    if record.inconsistent:
        return (
            " The sweep's copy-cost calibration cannot stand in for them either: it is inconsistent "
            f"({md_escape(record.inconsistent)}), so no cache level is derived from it, and none is named."
        ), None
    sizes = measured_sizes(results)
    if not sizes or not baseline or not one_copy:
        return "", None
    saved = implementations.get(baseline).copies.per_byte() - implementations.get(one_copy).copies.per_byte()
    times = "time" if saved == 1 else "times"
    removed = implementations.get(baseline).copies.user_copy
    touched = {
        size: findings_for_copy(record, removed.call, removed.bytes_per_call(size)) if removed else [] for size in sizes
    }
    clean = [size for size in sizes if not touched[size]]
    at = {size: copy_cost_at(record, 2 * size) for size in clean}
    text = (
        f" **Derived from the copy counts and the calibration, not from miss counters:** {code(baseline)} copies each "
        f"payload byte {saved:g} more {times} in user space than {code(one_copy)} by construction, and a message and "
        "its copy occupy twice its size."
    )
    if at:
        per_size = "; ".join(
            f"{fmt_size(size)}: {cost.region}, {fmt_num(cost.ns_per_byte * saved)} ns per byte"
            for size, cost in at.items()
        )
        text += (
            " Where that working set lives and what removing the copy saves, from the calibrated copy cost on CPU "
            f"{record.cpu or 'any'}: {per_size}."
        )
    affected = [size for size in sizes if touched[size]]
    if affected and removed:
        finding = touched[affected[0]][0]
        text += (
            f" At {', '.join(fmt_size(size) for size in affected)} the removed copy ({removed.call} of "
            f"{fmt_size(removed.bytes_per_call(affected[0]))}"
            + (f" to {fmt_size(removed.bytes_per_call(affected[-1]))}" if len(affected) > 1 else "")
            + f" per call) falls where the calibration found that {finding.describe(record.cpu_flags)}: there its cost "
            "is set by where the buffers lie, not by a cache level, so those sizes name none."
        )
    text += _costliest_level(record, {cost.region for cost in at.values()})
    medians = region_costs(record)
    if "memory" in medians:
        cheapest = min(medians, key=lambda region: medians[region])
        text += (
            f" Beyond the last-level cache a copied byte costs {fmt_num(medians['memory'])} ns, "
            f"{fmt_num(medians['memory'] / medians[cheapest])} times the cost inside {cheapest}; no tested "
            "message of this sweep reached that far, so it names no level here."
            if "memory" not in {cost.region for cost in at.values()}
            else f"{fmt_num(medians['memory'] / medians[cheapest])} times the cost inside {cheapest}."
        )
    return text, _costliest(record, {cost.region for cost in at.values()})


def _costliest(record: Calibration, regions: set[str]) -> str | None:
    """The one of REGIONS where a copied byte costs most in every round of the calibration; None if none is."""
    if len(regions) == 1:
        return next(iter(regions))
    if not regions or "disagree" in _costliest_level(record, regions):
        return None
    rounds = region_rounds(record)
    if not all(region in rounds for region in regions):
        medians = region_costs(record)
        return max(regions, key=lambda region: medians[region])
    return max(regions, key=lambda region: rounds[region][0])


def _costliest_level(record: Calibration, regions: set[str]) -> str:
    """Which of REGIONS gains most from one copy less, when every round of the calibration says the same."""
    if not regions:
        return " No tested size is left whose level the calibration can name."
    if len(regions) == 1:
        return f" Every such size works inside {next(iter(regions))}."
    rounds = region_rounds(record)
    if not all(region in rounds for region in regions):  # a record from before the calibration kept its samples
        medians = region_costs(record)
        rounds = {region: [medians[region]] for region in regions}
    count = min(len(rounds[region]) for region in regions)

    def costliest_in(r: int) -> str:
        return max(regions, key=lambda region: rounds[region][r])

    costliest = {costliest_in(r) for r in range(count)}
    if len(costliest) > 1:
        return (
            f" The calibration's rounds disagree on which of {', '.join(sorted(regions))} costs most per byte copied "
            f"(each of {', '.join(sorted(costliest))} came out costliest in some round), so none is named."
        )
    return f" Among this sweep's sizes the level that gains most from one copy less is {costliest.pop()}."


def answer_q2(results: Results) -> str:
    """Which cache level loses the most misses, or why that is not measurable here."""
    focus = choose_focus(results)
    baseline, one_copy = role(results, Role.TWO_COPY), role(results, Role.ONE_COPY)
    challengers = [name for name in (one_copy, role(results, Role.ZERO_COPY)) if name]
    reductions = _cache_reductions(results, focus, challengers, baseline)
    if reductions.empty:
        derived, level = _q2_from_calibration(results, baseline, one_copy)
        short = (
            f"**In short:** {level}, derived from the copy-cost calibration rather than counted: this host cannot "
            "count cache misses. **How sure:** every round of the calibration agrees on it; a host with miss "
            "counters would decide it by counting."
            if level
            else "**In short:** not answered here: this host cannot count cache misses, and nothing else in the "
            "sweep names a level. **How sure:** open; a host whose perf counts L1 and LLC misses would decide it."
        )
        text = (
            f"{short}\n\nNot measurable on this host, because "
            + counters_unavailable_reason(results)
            + ". The L1 and last-level cache miss columns are empty for every trial, so no level's reduction is "
            "counted." + derived
        )
        one = {
            impl: value(results, "snd_cpu_ns_per_byte", impl, "stream", focus.size, focus.threads, focus.pinning)
            for impl in (baseline, one_copy)
            if impl
        }
        if baseline and one_copy and all(one.values()):
            text += (
                f" What is measured is the time the copies take: the sender's CPU per byte at {fmt_size(focus.size)} "
                f"was {value_interval(one[baseline], 'ns')} for {code(baseline)} and "
                f"{value_interval(one[one_copy], 'ns')} for {code(one_copy)}; that includes the stalls of the "
                "removed copy at every cache level together."
            )
        return text
    assert baseline is not None  # the reductions are counted against it
    summary = reductions.groupby(["level", "challenger"])["reduction"].median().reset_index()
    best = summary.loc[summary["reduction"].idxmax()]
    table = markdown_table(
        {
            "Cache level": r.level,
            "Implementation": r.challenger,
            "Size": fmt_size(r.size),
            f"Miss reduction vs {baseline} (95% CI)": f"{fmt_pct(r.reduction)} [{fmt_pct(r.low)}, {fmt_pct(r.high)}]",
        }
        for r in reductions.itertuples()
    )
    other = summary[summary["level"] != best["level"]]
    other_text = (
        f", against at most {fmt_pct(other['reduction'].max())} in the {other['level'].iloc[0]}"
        if not other.empty
        else ""
    )
    why = (
        "The copy that disappears is a user-space memcpy whose source fields and destination buffer are recently "
        "touched and small: its misses are mostly L1 misses served from L2 or the LLC, so removing it shows up first "
        "in L1, while the kernel's remaining copy into socket buffers keeps the LLC traffic."
        if best["level"].startswith("L1")
        else "The removed copy streams the message through a second buffer; once message and buffer no longer fit "
        "in the private caches, that traffic misses in the last level and goes to memory, so removing it saves "
        "LLC misses, while L1 misses stay dominated by the kernel's own copy, which remains."
    )
    return (
        f"The {best['level']} shows the largest reduction: the median over sizes for {code(best['challenger'])} is "
        f"{fmt_pct(best['reduction'])} fewer sender misses per KiB than {code(baseline)}{other_text} "
        f"({config_label(focus.threads, focus.pinning)}, stream). {why}\n\n{table}"
    )
