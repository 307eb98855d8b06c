"""Question 2: which cache level shows the most reduction in misses, from the counters where the host has
them, else from the copy-cost calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd

from copylab.calibration.record import (
    Calibration,
    copy_cost_at,
    findings_for_copy,
    region_costs,
    region_of,
    region_rounds,
)
from copylab.declarations.sweep_config import SweepConfig
from copylab.formatting import (
    code,
    fmt_interval,
    fmt_num,
    fmt_pct,
    fmt_size,
    markdown_table,
    md_escape,
)
from copylab.report.answer import Answer, in_short
from copylab.report.experiments.copies.answers import paired
from copylab.report.experiments.copies.basics import cachesim
from copylab.report.experiments.copies.basics.queries import Focus, choose_focus, role
from copylab.report.prose import config_label, value_interval
from copylab.report.results import (
    Results,
    comparison_rows,
    counters_unavailable_reason,
    declared,
    measured,
    measured_sizes,
    value,
)
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
    saved = declared(results, baseline).copies.per_byte() - declared(results, one_copy).copies.per_byte()
    times = "time" if saved == 1 else "times"
    removed = declared(results, baseline).copies.user_copy
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


MECHANISM = (
    "two-copy's packing copy reads the message and writes its copy: a working set of about twice the message. "
    "Inside L1d the copy hits. Once the working set overflows a level, each 64-byte line of the source and of the "
    "destination misses there and comes from the level below. So the misses the eliminated copy no longer makes "
    "fall at the level its working set overflows. That is L1d for messages of a few KiB to tens of KiB, L2 once it "
    "passes L1d, and the last level and memory once it passes L2 and the last level. The kernel's own copy into "
    "socket buffers (lib/iov_iter.c `copy_from_iter()`) stays in both senders."
)


def answer_q2(results: Results, grid: Results | None = None) -> str:
    return q2(results, grid).markdown()


def q2(results: Results, grid: Results | None = None) -> Answer:
    """Which cache level loses the most misses: from the cache-level GRID when the report has it, else from the main
    sweep's counters or calibration, or why that is not measurable here."""
    if grid is not None:
        return _q2_from_grid(results, grid)
    parsed = in_short(_q2_main(results))
    return Answer(
        parsed.claim,
        parsed.rest,
        MECHANISM,
        "The cache-level grid (`--profile caches`) tests it: its sizes cross every level of this host.",
        "`perf stat -e L1-dcache-load-misses,LLC-load-misses` on a host with a PMU counts the misses.",
        sure=parsed.sure,
    )


def _q2_main(results: Results) -> str:
    """Question 2 from the main sweep's counters or calibration, or why that is not measurable here."""
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
        f"**In short:** The {best['level']} shows the largest reduction: the median over sizes for "
        f"{code(best['challenger'])} is {fmt_pct(best['reduction'])} fewer sender misses per KiB than "
        f"{code(baseline)}{other_text} ({config_label(focus.threads, focus.pinning)}, stream). **How sure:** the "
        f"table gives each size's interval.\n\n{why}\n\n{table}"
    )


# A sweep whose largest message reaches this far is question 2's grid (copylab.experiments.copies.CACHES): the main
# sweeps stop at 256 KiB, whose working sets stay inside a last-level cache.
GRID_LARGEST = 4 << 20
SAVING = "snd_user_ns_per_byte"


def grid_parameters(parameters: SweepConfig) -> bool:
    """Whether a sweep's PARAMETERS make a grid for question 2: stream, one thread count, messages up to at least
    GRID_LARGEST."""
    return (
        len(parameters.threads) == 1
        and "stream" in parameters.workloads
        and max(parameters.sizes, default=0) >= GRID_LARGEST
    )


def measures_cache_levels(sweep: Results) -> bool:
    """Whether SWEEP is a grid for question 2 that measured two_copy and one_copy."""
    return grid_parameters(sweep.manifest.parameters) and all(
        role(sweep, name) for name in (Role.TWO_COPY, Role.ONE_COPY)
    )


def host_calibration(sweep: Results, main: Results | None) -> Calibration | None:
    """The calibration that places SWEEP's working sets in cache levels: its own, else the main sweep's when both
    ran on the same machine (./inv report calibrates once, in the main sweep)."""
    own = sweep.manifest.calibration
    if own is not None and own.caches:
        return own
    if main is None or main.manifest.calibration is None or not main.manifest.calibration.caches:
        return None
    same = [(s.manifest.host.hostname, s.manifest.host.cpu_model) for s in (sweep, main)]
    return main.manifest.calibration if same[0] == same[1] else None


def overflowed(working_set: int, record: Calibration) -> str | None:
    """The cache a working set overflows, whose misses a copy of it adds (the largest level smaller than it); None
    inside the first level."""
    smaller = [level.name for level in record.caches if level.size_bytes < working_set]
    return smaller[-1] if smaller else None


def level_rows(grid: Results, record: Calibration) -> pd.DataFrame:
    """Per message size of GRID: its working set, where it lies, the level it overflows, the eliminated copy's
    saving per byte (two_copy minus one_copy sender CPU, paired by block) and the calibrated copy cost there."""
    baseline, one_copy = role(grid, Role.TWO_COPY), role(grid, Role.ONE_COPY)
    blocks = paired.by_block(grid.trials, SAVING, ["size_bytes", "implementation"])
    medians = region_costs(record)
    records = []
    for size, rows in blocks.groupby(level="size_bytes"):
        found = paired.interval(rows[baseline] - rows[one_copy]) if {baseline, one_copy} <= set(rows) else None
        if found is None:
            continue
        region = region_of(2 * int(size), record.caches)
        records.append(
            {
                "size": int(size),
                "region": region,
                "overflows": overflowed(2 * int(size), record),
                "saving": found,
                "cost": medians.get(region),
            }
        )
    return pd.DataFrame.from_records(records, columns=["size", "region", "overflows", "saving", "cost"])


def _by_level(rows: pd.DataFrame, grid: Results) -> dict[str, np.ndarray]:
    """Per level the grid's working sets overflow, the savings per byte of its sizes' blocks."""
    baseline, one_copy = role(grid, Role.TWO_COPY), role(grid, Role.ONE_COPY)
    blocks = paired.by_block(grid.trials, SAVING, ["size_bytes", "implementation"]).reset_index()
    blocks["saving"] = blocks[baseline] - blocks[one_copy]
    blocks["level"] = blocks["size_bytes"].map(dict(zip(rows["size"], rows["overflows"], strict=True)))
    blocks = blocks.dropna(subset=["level", "saving"])
    return {str(level): group["saving"].to_numpy() for level, group in blocks.groupby("level") if len(group) > 1}


def simulated_text(grid: Results, record: Calibration) -> tuple[str, dict[int, cachesim.Simulated]]:
    """What the cache simulator says of the packing copy at the grid's sizes, and its results by size."""
    first, last = record.caches[0], record.caches[-1]
    found = cachesim.simulate(tuple(measured_sizes(grid)), first, last)
    if isinstance(found, str):
        return f" The packing copy's misses could not be simulated here: {found}.", {}
    by_size = {row.message_bytes: row for row in found}
    beyond = [row for row in found if row.last_per_kib > 0]
    text = (
        f" **Simulated, not counted:** valgrind's cachegrind ran the packing copy alone (csrc/pack_copy.c) with this "
        f"host's {first.name} ({fmt_size(first.size_bytes)}) and last-level cache ({last.name}, "
        f"{fmt_size(last.size_bytes)}). It misses {fmt_num(max(row.first_per_kib for row in found))} times per KiB "
        f"copied in {first.name} (a source and a destination line per 64 B) wherever the working set passes "
        f"{first.name}"
    )
    text += (
        f". It misses as often in the last level only from {fmt_size(beyond[0].message_bytes)} on, where the "
        "working set passes it: there every line of the copy comes from memory."
        if beyond
        else f", and never in the last level: no working set of the grid passes {fmt_size(last.size_bytes)}."
    )
    return text + (
        " It simulates user space only: the kernel's copies into and out of socket buffers are not in it, and "
        "cachegrind models the first and last levels, not an L2."
    ), by_size


def _q2_from_grid(results: Results, grid: Results) -> Answer:
    """Question 2 from the cache-level grid GRID, for the study's sizes (the main sweep's): counted misses where the
    host counts them, else the measured saving per byte of the eliminated copy by cache level and the simulated
    misses of the packing copy."""
    record = host_calibration(grid, results)
    baseline, one_copy = role(grid, Role.TWO_COPY), role(grid, Role.ONE_COPY)
    assert baseline is not None and one_copy is not None  # a grid measured both (measures_cache_levels)
    if record is None:
        return Answer(
            "Not answered: the cache-level sweep has no calibration of its own and ran on another host than the main "
            "sweep, so its working sets cannot be placed in this host's caches.",
            "",
            MECHANISM,
            "",
            f"`./inv calibrate --data data/{grid.name}` adds a calibration.",
        )
    if measured(grid, "snd_l1d_misses_per_kib") or measured(grid, "snd_llc_misses_per_kib"):
        parsed = in_short(_q2_counted(grid, record))
        return Answer(parsed.claim, parsed.rest, MECHANISM, "", "", sure=parsed.sure)
    rows = level_rows(grid, record)
    largest_study = max(measured_sizes(results))
    study_rows = rows[rows["size"] <= largest_study]
    savings = _by_level(study_rows, grid)
    levels = {level: found for level, values in savings.items() if (found := paired.interval(values))}
    every = {level: found for level, values in _by_level(rows, grid).items() if (found := paired.interval(values))}
    simulated, by_size = simulated_text(grid, record)
    if not levels:
        return Answer("Not answered: the grid has no paired blocks at the study's sizes.", "", MECHANISM, "", "")
    best, sure = _best_level(levels, savings)
    value = levels[best]
    claim = (
        f"For the study's messages (up to {fmt_size(largest_study)}, working sets up to {fmt_size(2 * largest_study)}) "
        f"the eliminated copy's reduction is largest where the working set overflows {best}: removing "
        f"{code(baseline)}'s packing copy saved the sender {fmt_interval(value.mean, value.low, value.high, 'ns')} of "
        "user-space CPU per byte there. This is time saved, a stand-in for misses this host cannot count."
    )
    beyond = ", ".join(f"overflowing {level} {fmt_interval(v.mean, v.low, v.high, 'ns')}" for level, v in every.items())
    numbers = (
        f"The saving per byte by the level each working set overflows, over the whole grid (sizes up to "
        f"{fmt_size(int(rows['size'].max()))}, beyond the study's): {beyond}. It is {code(baseline)}'s sender "
        f"user-space CPU time per byte minus {code(one_copy)}'s, paired by block "
        f"({grid.manifest.host.cpu_model or 'this CPU'}, both ends on one CPU, stream, one thread); the kernel's "
        "copy into the socket buffer, which both make, is system time and not in it. The calibrated cost of copying "
        f"a byte where the working set lies is beside it.\n\n{_level_table(rows, record, by_size)}"
    )
    return Answer(
        claim=claim,
        numbers=numbers,
        mechanism=MECHANISM,
        test="Two stand-ins test it, each labelled. The calibrated copy cost per level: if the saving is the "
        "copy's misses, it follows the cost of the level the working set lies in (the table's last columns)."
        + simulated,
        limits=f"This host counts no cache misses: {counters_unavailable_reason(grid)}. `perf stat -e "
        "L1-dcache-load-misses,LLC-load-misses` on a host with a PMU would count them, and `./inv run-sweep "
        "--name caches --profile caches` there measures this grid with them.",
        summary=f"{best}, for the study's sizes, by the CPU time the eliminated copy saved (no miss counters here).",
        sure=sure + ".",
    )


def _level_table(rows: pd.DataFrame, record: Calibration, by_size: dict[int, cachesim.Simulated]) -> str:
    """The grid by message size: where its working set lies, the measured saving, the calibrated and simulated."""
    return markdown_table(
        {
            "Message": fmt_size(r.size),
            "Working set": fmt_size(2 * r.size),
            "Lies in": r.region,
            "Misses it adds": r.overflows if isinstance(r.overflows, str) else "none",
            "Saving, ns/B (95% CI)": fmt_interval(r.saving.mean, r.saving.low, r.saving.high),
            "Calibrated copy, ns/B": fmt_num(r.cost) if r.cost is not None else "not calibrated",
            f"Simulated {record.caches[0].name} misses/KiB": fmt_num(by_size[r.size].first_per_kib)
            if r.size in by_size
            else "not simulated",
            "Simulated LL misses/KiB": fmt_num(by_size[r.size].last_per_kib) if r.size in by_size else "not simulated",
        }
        for r in rows.itertuples()
    )


def _best_level(levels: dict[str, paired.Interval], savings: dict[str, np.ndarray]) -> tuple[str, str]:
    """The level whose overflow the eliminated copy saves most per byte at, and how sure that is against the next."""
    best = max(levels, key=lambda level: levels[level].mean)
    runner_up = max((level for level in levels if level != best), key=lambda level: levels[level].mean, default=None)
    margin = paired.difference(savings[best], savings[runner_up]) if runner_up else None
    sure = (
        f"settled: it saves {fmt_interval(margin.mean, margin.low, margin.high, 'ns')} per byte more than where the "
        f"working set overflows {runner_up}, the next level (Welch's 95% interval of the difference)"
        if margin is not None and margin.low > 0
        else "not settled against "
        + f"{runner_up}: "
        + ", ".join(f"{level} {fmt_interval(v.mean, v.low, v.high, 'ns')}" for level, v in levels.items())
        + " overlap; more blocks of the grid would decide it"
        if runner_up
        else "one level only was reached"
    )
    return best, sure


def _q2_counted(grid: Results, record: Calibration) -> str:
    """Question 2 where the host counted misses: the counted reduction per KiB by level, two_copy minus one_copy."""
    baseline, one_copy = role(grid, Role.TWO_COPY), role(grid, Role.ONE_COPY)
    assert baseline is not None and one_copy is not None  # a grid measured both (measures_cache_levels)
    intervals = {}
    for level, metric in CACHE_METRICS.items():
        blocks = paired.by_block(grid.trials, metric, ["size_bytes", "implementation"])
        if {baseline, one_copy} <= set(blocks):
            intervals[level] = paired.interval(blocks[baseline] - blocks[one_copy])
    found = {level: value for level, value in intervals.items() if value is not None}
    if not found:
        return "**In short:** not answered: the counted misses have no paired blocks of two_copy and one_copy."
    best = max(found, key=lambda level: found[level].mean)
    return (
        f"**In short:** the {best}: removing {code(baseline)}'s packing copy removed "
        f"{fmt_interval(found[best].mean, found[best].low, found[best].high)} sender misses per KiB there, counted by "
        f"perf over the grid's sizes. **How sure:** "
        + (
            "settled by the intervals."
            if all(found[best].above(v) for k, v in found.items() if k != best)
            else "the levels' intervals overlap."
        )
        + "\n\n"
        + "; ".join(f"{level}: {fmt_interval(v.mean, v.low, v.high)} misses per KiB" for level, v in found.items())
        + f" (the caches of {record.cpu or 'the sending CPU'}: "
        + ", ".join(f"{level.name} {fmt_size(level.size_bytes)}" for level in record.caches)
        + ")."
    )
