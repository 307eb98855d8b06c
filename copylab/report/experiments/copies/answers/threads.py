"""Question 3: how thread count interacts with cache contention."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from copylab.calibration.record import CacheLevel, Calibration, region_costs
from copylab.declarations.sweep_config import SweepConfig
from copylab.formatting import (
    code,
    fmt_change,
    fmt_num,
    fmt_pct,
    fmt_size,
    fmt_span,
    markdown_table,
)
from copylab.measure.running.spec import cpus_for
from copylab.report.answer import Answer, in_short
from copylab.report.experiments.copies.answers import paired
from copylab.report.experiments.copies.answers.caches import host_calibration
from copylab.report.experiments.copies.basics.queries import choose_focus, study
from copylab.report.prose import value_interval
from copylab.report.results import THROUGHPUT, Results, declared, measured, metric_rows, value

MECHANISM = (
    "Threads pinned to one CPU take turns on it: the scheduler switches between them (kernel/sched/core.c "
    "`__schedule()` and `context_switch()`). After each switch the next thread's message, its copy and its socket "
    "buffers must come back into that CPU's L1d and L2 from the shared last-level cache. Once the threads' combined "
    "working set passes the last level, they come from memory. Threads on two CPUs keep each CPU's private caches "
    "and contend only in the shared last level. Queueing is apart from this: threads sharing a CPU wait their turn. "
    "By Little's law (time in the system = messages in the system / messages per second) that lengthens a "
    "message's time in the system in proportion to the threads, without adding work per byte."
)
PMU_COMMAND = (
    "`./inv run-sweep --name threads --profile threads` on a host with a PMU and more cores counts each level's "
    "misses per KiB in the same trials (perf stat)."
)


def answer_q3(results: Results, threads: Results | None = None) -> str:
    """Question 3 as Markdown (q3)."""
    return q3(results, threads).markdown()


def q3(results: Results, threads: Results | None = None) -> Answer:
    """From the thread experiment THREADS when the report has it; else from the main sweep's thread counts."""
    if threads is not None:
        return answer_from_threads(threads, results)
    parsed = in_short(_from_main(results))
    return Answer(
        claim=parsed.claim,
        numbers=parsed.rest,
        mechanism=MECHANISM,
        test="The main sweep holds no pinning to compare with; the thread experiment (`--profile threads`) measures "
        "both pinnings, the control that separates one CPU's caches from the shared last level.",
        limits="This host has no PMU, so misses are not counted: CPU time per byte stands in. " + PMU_COMMAND,
        summary="",
        sure=parsed.sure,
    )


def _from_main(results: Results) -> str:
    """Thread count against throughput, CPU per byte, context switches and (if measured) cache misses of the main
    sweep."""
    focus = choose_focus(results)
    stream = metric_rows(results, THROUGHPUT, workload="stream", pinning=focus.pinning)
    counts = sorted(int(t) for t in stream["threads"].unique())
    hi = counts[-1]
    llc = measured(results, "snd_llc_misses_per_kib")
    rows, sentences = [], []
    changes: list[Change] = []
    for impl in study(results):
        values = {
            (metric, t): value(results, metric, impl, "stream", focus.size, t, focus.pinning)
            for metric in (THROUGHPUT, "cpu_ns_per_byte", "ctx_switches_per_msg", "snd_llc_misses_per_kib")
            for t in counts
        }
        if all(values[(THROUGHPUT, t)] is None for t in counts):
            continue
        for t in counts:
            row = {
                "Implementation": impl,
                "Threads": t,
                "Throughput, Gbit/s": value_interval(values[(THROUGHPUT, t)]),
                "CPU ns/byte": value_interval(values[("cpu_ns_per_byte", t)]),
                "Context switches/msg": value_interval(values[("ctx_switches_per_msg", t)]),
            }
            if llc:
                row["Sender LLC misses/KiB"] = value_interval(values[("snd_llc_misses_per_kib", t)])
            rows.append(row)
        throughput = {t: found for t in counts if (found := values[(THROUGHPUT, t)]) is not None}
        first, last = min(throughput), max(throughput)
        if first != last:
            tp0, tp1 = throughput[first][0], throughput[last][0]
            text = (
                f"{code(impl)}, {first} to {last} threads: throughput {fmt_num(tp0)} to {fmt_num(tp1)} Gbit/s "
                f"({fmt_change(tp0, tp1)})"
            )
            cpu0, cpu1 = values[("cpu_ns_per_byte", first)], values[("cpu_ns_per_byte", last)]
            if cpu0 and cpu1:
                text += f", CPU per byte {fmt_num(cpu0[0])} to {fmt_num(cpu1[0])} ns ({fmt_change(cpu0[0], cpu1[0])})"
                changes.append((cpu1[0] / cpu0[0] - 1, cpu1[1] > cpu0[2] or cpu1[2] < cpu0[1]))
            cs0, cs1 = values[("ctx_switches_per_msg", first)], values[("ctx_switches_per_msg", last)]
            if cs0 and cs1:
                text += f", context switches per message {fmt_num(cs0[0])} to {fmt_num(cs1[0])}"
            sentences.append(f"- {text}.")
    if not rows:
        return "The sweep has no stream results at the focus size, so the question cannot be answered from it."
    intro = f"{_conclusion(changes, counts[0], hi)}\n\nAt {fmt_size(focus.size)} per message (stream, pinning "
    intro += f"{code(focus.pinning)}):\n\n" + "\n".join(sentences) + "\n\n"
    intro += _where_threads_ran(focus.pinning, results.manifest.host.cores, hi)
    if not llc:
        intro += (
            " Cache contention itself cannot be observed here: the L1 and LLC miss counters are not measurable on "
            "this host (see question 2), so CPU time per byte and context switches are the measured proxies; rising "
            "CPU per byte at constant work means more stalls or scheduling overhead per byte."
        )
    return intro + "\n\n" + markdown_table(rows)


Change = tuple[float, bool]  # relative change of CPU per byte from the fewest to the most threads; beyond the CIs


def _conclusion(changes: list[Change], first: int, last: int) -> str:
    """The answer in one sentence: what adding threads did to CPU time per byte, and how sure that is."""
    if not changes:
        return "**In short:** CPU time per byte was not measured at both thread counts, so nothing is concluded."
    span = fmt_span(f"{min(c for c, _ in changes) * 100:+.1f}%", f"{max(c for c, _ in changes) * 100:+.1f}%")
    clear = sum(beyond for _, beyond in changes)
    sure = (
        f"decided; in each of the {clear} implementations the change lies beyond both 95% intervals"
        if clear == len(changes)
        else f"not settled; only in {clear} of {len(changes)} implementations does the change lie beyond both 95% "
        "intervals, and more trials at both thread counts would decide the rest"
    )
    if all(change > 0 for change, _ in changes):
        return (
            f"**In short:** from {first} to {last} threads every implementation spent more CPU time per byte "
            f"({span}): the threads add switching and cache refills, not parallelism. **How sure:** {sure}."
        )
    if all(change < 0 for change, _ in changes):
        return (
            f"**In short:** from {first} to {last} threads every implementation spent less CPU time per byte "
            f"({span}): more connections amortised the per-message cost, and no contention shows. "
            f"**How sure:** {sure}."
        )
    return (
        f"**In short:** from {first} to {last} threads CPU time per byte moved both ways ({span}), so no "
        f"interaction with the caches is shown. **How sure:** {sure}."
    )


def _where_threads_ran(pinning: str, cores: int | None, most: int) -> str:
    """Which CPUs the threads shared, from the pinning, and so which caches they contended for."""
    server, client = cpus_for(pinning)
    if server is not None and server == client:
        return (
            f"Every thread of both ends was pinned to CPU {server}, so no two of them ever ran at once: from 2 "
            "threads on they take turns on that one CPU. Each switch between them replaces the working set (socket "
            "buffers, message fields) in its L1 and L2 caches, so contention here is for one core's caches."
        )
    if server is not None:
        return (
            f"The sender's threads were pinned to CPU {server} and the receiver's to CPU {client}: the threads of "
            "one end take turns on their CPU and refill its L1 and L2 caches at each switch, and the two ends "
            "share the last-level cache."
        )
    if cores and most > int(cores):
        return (
            f"The host has {cores} cores and the threads were not pinned, so beyond {cores} threads they take turns "
            "on the cores: every switch replaces the working set in the private L1 and L2 caches, and the threads "
            "compete for the shared last-level cache."
        )
    return "The threads were not pinned and had a core each, so they compete only for the shared last-level cache."


# A sweep with at least this many thread counts, in more than one pinning, is question 3's
# (copylab.experiments.copies.THREADS).
THREAD_COUNTS_AT_LEAST = 4
COST = "cpu_ns_per_byte"


def measures_threads(sweep: Results) -> bool:
    """Whether SWEEP is question 3's thread experiment."""
    return thread_parameters(sweep.manifest.parameters)


def thread_parameters(parameters: SweepConfig) -> bool:
    """Whether a sweep's PARAMETERS make question 3's thread experiment: stream, several thread counts in more than
    one pinning."""
    return (
        "stream" in parameters.workloads
        and len(parameters.threads) >= THREAD_COUNTS_AT_LEAST
        and len(parameters.pinning) > 1
    )


def thread_rows(sweep: Results) -> pd.DataFrame:
    """Per pinning and thread count of SWEEP: the combined working set (a message and its copy per thread), CPU per
    byte, its ratio to one thread's paired by block, context switches per message and the time a message of one
    thread spends in the system (Little's law: threads over messages per second)."""
    first = study(sweep)[0]
    trials = sweep.trials[sweep.trials["implementation"] == first]
    size = int(trials["size_bytes"].max())
    rows = paired.ok_rows(trials[trials["size_bytes"] == size], COST)
    records = []
    for pinning, group in rows.groupby("pinning", sort=False):
        blocks = group.pivot_table(index="repetition", columns="threads", values=COST, aggfunc="mean")
        least = int(min(blocks.columns))
        for count in sorted(int(t) for t in blocks.columns):
            at = group[group["threads"] == count]
            ratio = paired.interval(np.log(blocks[count] / blocks[least])) if count != least else None
            per_second = (at["messages"] / at["measured_s"]).mean()
            records.append(
                {
                    "pinning": str(pinning),
                    "threads": count,
                    "working_set": 2 * size * count,
                    "cost": paired.interval(at[COST]),
                    "ratio": ratio,
                    "switches": paired.interval(at["ctx_switches_per_msg"]),
                    "residence_us": count / per_second * 1e6 if per_second > 0 else math.nan,
                }
            )
    return pd.DataFrame.from_records(
        records, columns=["pinning", "threads", "working_set", "cost", "ratio", "switches", "residence_us"]
    )


def _rise(rows: pd.DataFrame) -> pd.Series | None:
    """The fewest threads from which CPU per byte stays above one thread's, beyond the paired interval."""
    above = [row.ratio is not None and np.exp(row.ratio.low) > 1 for row in rows.itertuples()]
    for index in range(1, len(rows)):
        if all(above[index:]):
            return rows.iloc[index]
    return None


def _change(row: pd.Series | Any) -> str:
    """A paired change against one thread: '+10% [+3%, +17%]'."""
    return f"{np.exp(row.ratio.mean) - 1:+.0%} [{np.exp(row.ratio.low) - 1:+.0%}, {np.exp(row.ratio.high) - 1:+.0%}]"


def private_cache(record: Calibration | None) -> CacheLevel | None:
    """The largest cache only one CPU uses: what threads sharing that CPU refill at each switch."""
    if record is None:
        return None
    private = [level for level in record.caches if "," not in level.shared_cpus and "-" not in level.shared_cpus]
    return private[-1] if private else None


def _verdict(pinning: str, rows: pd.DataFrame, record: Calibration | None) -> str:
    """What adding threads did to CPU per byte under PINNING, with the cache it ties to, in one clause."""
    least, most = rows.iloc[0], rows.iloc[-1]
    rise = _rise(rows)
    changed = [row for row in rows.iloc[1:].itertuples() if row.ratio is not None]
    if rise is None:
        low = min(np.exp(row.ratio.low) - 1 for row in changed)
        high = max(np.exp(row.ratio.high) - 1 for row in changed)
        return (
            f"With {_PINNING_WORDS.get(pinning, code(pinning))} it did not rise: from {least.threads} to "
            f"{most.threads} threads every change against one thread lies within {low:+.0%} to {high:+.0%}."
        )
    server, client = cpus_for(pinning)
    private = private_cache(record)
    tie = (
        f" There the threads' combined working set ({fmt_size(rise.working_set)}) overflows CPU {server}'s private "
        f"{fmt_size(private.size_bytes)} {private.name} many times over. So what one thread wrote is refilled from "
        "the next level when its peer reads it."
        if private is not None and server is not None and server == client and rise.working_set > private.size_bytes
        else f" There the threads' combined working set is {fmt_size(rise.working_set)}."
    )
    return (
        f"With {_PINNING_WORDS.get(pinning, code(pinning))} it rose from {rise.threads} threads "
        f"({_change(rise)}) to {_change(most)} at {most.threads}.{tie}"
    )


_PINNING_WORDS = {"same_cpu": "both ends sharing one CPU", "split_cpu": "the two ends on two CPUs"}


def _pinning_text(pinning: str, rows: pd.DataFrame) -> str:
    """One pinning's numbers: CPU per byte against one thread's, context switches, time in the system."""
    least, most = rows.iloc[0], rows.iloc[-1]
    changes = "; ".join(f"{row.threads}: {_change(row)}" for row in rows.iloc[1:].itertuples() if row.ratio is not None)
    return (
        f"- {code(pinning)}: CPU per byte {fmt_num(least.cost.mean)} ns at {least.threads} thread, "
        f"{fmt_num(most.cost.mean)} ns at {most.threads}; change against one thread, paired by block, mean [95% CI], "
        f"at {changes}. Context switches per message {fmt_num(least.switches.mean)} to "
        f"{fmt_num(most.switches.mean)}; a message of one thread spends {fmt_num(least.residence_us)} to "
        f"{fmt_num(most.residence_us)} µs in the system (Little's law: threads over messages per second). "
        + _where_threads_ran(pinning, None, int(most.threads))
    )


def answer_from_threads(sweep: Results, main: Results | None) -> Answer:
    """Question 3 from the thread experiment SWEEP: per pinning, where CPU per byte steps up against the threads'
    working set and the caches, queueing apart from cache refills, the pinnings as each other's control."""
    rows = thread_rows(sweep)
    if rows.empty or rows["ratio"].isna().all():
        return Answer(
            "Not answered: the thread sweep has no paired stream results at two thread counts.", "", "", "", ""
        )
    record = host_calibration(sweep, main)
    found = {str(pinning): group.reset_index(drop=True) for pinning, group in rows.groupby("pinning", sort=False)}
    groups = {pinning: found[pinning] for pinning in sweep.manifest.parameters.pinning if pinning in found}
    name, size = study(sweep)[0], int(sweep.trials["size_bytes"].max())
    cores = sweep.manifest.host.cores
    counts = sorted(int(t) for t in rows["threads"].unique())
    fewer = (
        f" This host has {cores} CPUs and the sweep at most {max(counts)} threads, so more threads than CPUs were "
        "not measured here."
        if cores and max(counts) <= int(cores)
        else ""
    )
    numbers = (
        f"The thread experiment: {code(name)}, {fmt_size(size)} messages, {', '.join(str(c) for c in counts)} "
        f"threads at each end, on {cores or 'these'} CPUs, each end's threads pinned as each pinning says.{fewer} "
        "Each change is CPU per byte against one thread's in the same block, with its 95% interval.\n\n"
        + "\n".join(_pinning_text(pinning, group) for pinning, group in groups.items())
        + f"\n\n{_refill_text(groups, record, declared(sweep, name).copies.per_byte())}{_retransmits(sweep)}"
    )
    steps = [_steps(pinning, group) for pinning, group in groups.items()]
    return Answer(
        claim=f"CPU time per byte of {fmt_size(size)} messages against one thread's. "
        + " ".join(steps)
        + _working_sets(size, counts, record),
        numbers=numbers,
        mechanism=MECHANISM,
        test=_test(groups),
        limits="This host has 2 CPUs and no PMU: misses are not counted, so refills are inferred from CPU time, "
        "and the veth runs the receiver's softirq work on the sending CPU. " + PMU_COMMAND,
        summary=" ".join(
            _verdict(pinning, group, record).split(". ")[0].rstrip(".") + "." for pinning, group in groups.items()
        ),
        sure="paired intervals, each thread count against one thread in the same block.",
    )


def _steps(pinning: str, rows: pd.DataFrame) -> str:
    """Where the mean CPU per byte steps up under PINNING: its largest step between two thread counts, and where it
    ends, read from the means (the intervals say how sure each is, in the numbers)."""
    means = [0.0] + [float(np.exp(row.ratio.mean) - 1) for row in rows.iloc[1:].itertuples() if row.ratio is not None]
    counts = [int(t) for t in rows["threads"]][: len(means)]
    if len(means) < 2:
        return ""
    jumps = [means[i + 1] - means[i] for i in range(len(means) - 1)]
    largest = int(np.argmax(jumps))
    words = _PINNING_WORDS.get(pinning, code(pinning))
    if max(means) < STEP:
        return f"With {words} the mean never rose by {STEP:.0%} or more ({means[-1]:+.0%} at {counts[-1]} threads)."
    return (
        f"With {words} the mean rose most from {counts[largest]} to {counts[largest + 1]} threads "
        f"({jumps[largest]:+.0%}) and stood at {means[-1]:+.0%} at {counts[-1]}."
    )


# A rise of the mean CPU per byte below this is not called a step.
STEP = 0.05


def _working_sets(size: int, counts: list[int], record: Calibration | None) -> str:
    """One thread's working set and the thread count whose combined working set reaches each cache."""
    one = 2 * size
    text = f" One thread's working set (a message and its copy) is {fmt_size(one)}"
    if record is None:
        return text + "."
    passed = [level for level in record.caches if level.size_bytes < one]
    if passed:
        text += f", past the {fmt_size(passed[-1].size_bytes)} {passed[-1].name} already at one thread"
    last = record.caches[-1]
    reach = next((c for c in counts if one * c >= last.size_bytes), None)
    return text + (
        f"; the threads' combined working set reaches the {fmt_size(last.size_bytes)} {last.name} at {reach} threads."
        if reach
        else f"; the combined working set stays below the {fmt_size(last.size_bytes)} {last.name}."
    )


def _test(groups: dict[str, pd.DataFrame]) -> str:
    """The pinnings as each other's control, and queueing (Little's law) against work per byte."""
    text = (
        "The two pinnings are each other's control: the same threads and working sets, with both ends on one CPU or "
        "each end on its own. If refills after switches on a shared CPU are the mechanism, CPU per byte rises with "
        "the threads only where they share a CPU."
    )
    for pinning, rows in groups.items():
        least, most = rows.iloc[0], rows.iloc[-1]
        if least.residence_us > 0 and most.ratio is not None:
            text += (
                f" Under {code(pinning)} a message's time in the system (Little's law) grew "
                f"{most.residence_us / least.residence_us:.1f}-fold from {least.threads} to {most.threads} threads "
                f"while its CPU per byte changed by {np.exp(most.ratio.mean) - 1:+.0%}: queueing lengthens the wait, "
                "not the work."
            )
    return text


def _retransmits(sweep: Results) -> str:
    """TCP retransmits per trial by pinning, where any: a confound of CPU per byte in that pinning."""
    if "retransmits" not in sweep.trials:
        return ""
    ok = sweep.trials[sweep.trials["status"] == "ok"]
    means = ok.groupby(["pinning", "threads"])["retransmits"].mean()
    said = []
    for pinning, group in means.groupby(level="pinning"):
        if group.max() > 0:
            at = int(group.idxmax()[1])
            said.append(f"{code(str(pinning))} up to {fmt_num(float(group.max()))} a trial (at {at} threads)")
    if not said:
        return ""
    return (
        " TCP retransmitted segments in some trials: " + "; ".join(said) + ". A veth pair whose ends run on two "
        "CPUs reorders packets, and each retransmission adds CPU per byte of its own: a confound of CPU per byte "
        "there, not a cache effect."
    )


def _refill_text(groups: dict[str, pd.DataFrame], record: Calibration | None, copies: int) -> str:
    """Queueing against cache refills: context switches and time in the system against what the calibrated copy
    cost says a refill adds per byte, and the pinnings compared."""
    text = (
        "Queueing is not cache contention: threads sharing a CPU wait their turn, which lengthens the time a message "
        "spends in the system in proportion to the threads (above) and adds context switches, not CPU per byte."
    )
    private = private_cache(record)
    if record is None or private is None or not region_costs(record):
        return text + " No calibration of this host prices a copy per cache level, so refills are not priced here."
    costs = region_costs(record)
    below = next((level.name for level in record.caches if level.size_bytes > private.size_bytes), "memory")
    added = (costs.get(below, float("nan")) - costs[private.name]) * copies
    rises = {p: g.iloc[-1].cost.mean - g.iloc[0].cost.mean for p, g in groups.items()}
    measured_rises = "; ".join(f"{code(p)} {fmt_num(rise)} ns" for p, rise in rises.items())
    largest = max(rises.values())
    share = added / largest if largest > 0 else math.nan
    reconciled = (
        " The refill model predicts no rise to compare with: CPU per byte did not rise."
        if not largest > 0
        else f" The model predicts {fmt_pct(share)} of the largest measured rise: within a factor of "
        f"{MATCH_FACTOR:g} of it, so refills of the copies can account for it."
        if 1 / MATCH_FACTOR <= share <= MATCH_FACTOR
        else f" The model predicts {fmt_pct(share)} of the largest measured rise, so it does not match: refills of "
        "the copies alone do not account for it, and the rest lies in what the model leaves out (the switches "
        "themselves, the scheduler's work, the socket buffers' refills)."
    )
    return text + (
        f" Refills add CPU per byte: the calibration prices a copied byte at {fmt_num(costs[private.name])} ns "
        f"inside {private.name} and {fmt_num(costs.get(below, float('nan')))} ns in {below}, so {copies} copies of "
        f"each byte that no longer find their data in {private.name} cost about {fmt_num(added)} ns per byte more. "
        f"From the fewest threads to the most, CPU per byte changed by: {measured_rises}.{reconciled}"
    )


# A model's prediction within this factor of the measured rise matches it.
MATCH_FACTOR = 1.5
