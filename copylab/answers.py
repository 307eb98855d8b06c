"""The report's answers to the study's questions (Part A's evidence, Part E), in sentences computed from a sweep.

Every function takes loaded ``Results`` and returns Markdown; the numbers come from copylab.results and
copylab.anomaly, nothing here types in a result.  The study's variants are found by their role in the
registry (A1 two-copy, A2 one-copy, A3 zero-copy), never by name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from copylab import implementations
from copylab.anomaly import Anomaly, expected_order, find_anomaly
from copylab.calibration import Calibration, copy_cost_at, findings_for_copy, region_costs, region_rounds
from copylab.crossover import curve_advantages, verdict_stability
from copylab.errors import CopylabError
from copylab.formatting import (
    code,
    fmt_bytes,
    fmt_change,
    fmt_interval,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_size,
    fmt_span,
    markdown_table,
    md_escape,
    threads_text,
)
from copylab.results import (
    THROUGHPUT,
    Focus,
    Results,
    Value,
    between_hosts,
    choose_focus,
    comparison_rows,
    copied_fraction_range,
    counters_unavailable_reason,
    measured,
    metric_rows,
    other_senders,
    paired,
    present,
    receive_modes,
    role,
    select,
    study,
    tested_sizes,
    value,
    verdict,
    zero_copy_counts,
)
from copylab.schema import RECEIVE_MODES

QUESTIONS: tuple[str, ...] = (
    "Why does zero-copy not always give the best throughput?",
    "Which cache level shows the most reduction in misses, and why?",
    "How does thread count interact with cache contention?",
    "At what message size does one-copy outperform two-copy on this system?",
    "At what message size does zero-copy outperform two-copy on this system?",
    "Identify one unexpected result and explain it using OS or hardware concepts.",
)
CACHE_METRICS = {"L1 data cache": "snd_l1d_misses_per_kib", "last-level cache": "snd_llc_misses_per_kib"}


def config_label(threads: int, pinning: str) -> str:
    return f"{threads_text(threads)}, pinning {code(pinning)}"


def fmt_value(found: Value | None, unit: str = "") -> str:
    return "not measured" if found is None else fmt_interval(*found, unit)


def _not_measured(what: str) -> str:
    return f"The sweep has no {what} results, so the question cannot be answered from it."


# ---------------------------------------------------------------- Part A in numbers


def copy_evidence(results: Results) -> str:
    """Part A in numbers: the packing copy as sender user CPU, and the kernel's deferred zero-copy copy."""
    focus = choose_focus(results)
    parts = []
    baseline, one_copy, zero_copy = role(results, "A1"), role(results, "A2"), role(results, "A3")
    if baseline and one_copy:
        user = {
            impl: value(results, "snd_user_ns_per_byte", impl, "stream", focus.size, focus.threads, focus.pinning)
            for impl in (baseline, one_copy)
        }
        if all(user.values()):
            parts.append(
                f"The packing copy runs in user space, so it shows up as the sender's user CPU time: at "
                f"{fmt_size(focus.size)} ({config_label(focus.threads, focus.pinning)}) {code(baseline)} spent "
                f"{fmt_interval(*user[baseline], 'ns')} of user CPU per byte sent, {code(one_copy)} "
                f"{fmt_interval(*user[one_copy], 'ns')} (mean [95% CI] over trials). "
                + (
                    "The difference is the eliminated copy."
                    if user[one_copy][2] < user[baseline][1]
                    else "The intervals overlap, so this sweep cannot resolve the eliminated copy at this size."
                )
            )
    counts = zero_copy_counts(results.trials, zero_copy) if zero_copy else None
    if zero_copy and counts is None:
        parts.append("No zero-copy completions were recorded in this sweep.")
    elif counts is not None:
        text = (
            f"Of the {counts['zc_completed']:,.0f} zero-copy sends whose completion was read "
            f"({counts['trials']:.0f} trials), {counts['zc_copied']:,.0f} ({fmt_pct(counts['copied_fraction'])}) "
            f"carried {code('SO_EE_CODE_ZEROCOPY_COPIED')}"
        )
        span = copied_fraction_range(results, zero_copy)
        if span is not None:
            text += f" (per configuration {fmt_span(fmt_pct(span[0]), fmt_pct(span[1]))})"
        parts.append(
            text + f"; the sender read {fmt_num(counts['notifications_per_send'])} notifications per send (one per "
            f"{fmt_num(1 / counts['notifications_per_send'])} sends), because the kernel coalesces consecutive "
            "completions into one range."
        )
    for name in present(results):
        other = zero_copy_counts(results.trials, name) if name != zero_copy else None
        if implementations.uses_zero_copy(name) and other is not None:
            parts.append(
                f"{code(name)}: of {other['zc_completed']:,.0f} zero-copy sends whose notification arrived "
                f"({other['trials']:.0f} trials), {other['zc_copied']:,.0f} ({fmt_pct(other['copied_fraction'])}) "
                "were reported copied by the kernel, with "
                f"{fmt_num(other['notifications_per_send'])} notifications per send."
            )
    parts.append(kernel_copy_evidence(results))
    return "\n\n".join(part for part in parts if part)


def kernel_copy_evidence(results: Results) -> str:
    """The receiver's kernel-to-user copy, counted with BPF: bytes copied per byte delivered, by receive mode."""
    metric = "rcv_kernel_copies_per_byte"
    by_mode = {mode: metric_rows(results, metric, workload="stream", receive=mode) for mode in RECEIVE_MODES}
    if all(rows.empty for rows in by_mode.values()):
        missing = results.trials.get("kernel_copy_missing")
        reasons = sorted({r for r in missing.dropna() if "rcv_kernel_copy_bytes" in r}) if missing is not None else []
        why = (
            reasons[0].split("rcv_kernel_copy_bytes: ", 1)[1].split(";")[0]
            if reasons
            else "the sweep predates that count"
        )
        return f"The kernel's copies to user space were not counted in this sweep ({why})."
    per_mode = {
        mode: fmt_span(fmt_num(rows["mean"].min()), fmt_num(rows["mean"].max()))
        for mode, rows in by_mode.items()
        if not rows.empty
    }
    text = (
        "Counted in the kernel (BPF tracepoint `skb:skb_copy_datagram_iovec`, the client's namespace, measured "
        "window only), the bytes copied to the receiver's user space per byte delivered were, over every "
        "implementation and size: " + "; ".join(f"receiving by {code(mode)} {span}" for mode, span in per_mode.items())
    )
    if not by_mode["truncate"].empty and float(by_mode["truncate"]["mean"].max()) == 0:
        text += ": receiving with `MSG_TRUNC`, the kernel copied nothing to user space"
    sender = measured(results, "snd_kernel_copies_per_byte")
    return text + ("." if sender else "; the sender's copies could not be counted here (they need function probes).")


# ---------------------------------------------------------------- comparisons and crossovers


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
            f"KiB; 95% bootstrap CI {fmt_bytes(low)} to {fmt_bytes(high)}), where the mean difference turns in its "
            f"favour within the tested {span}.{first_text}{censored_text}"
        )
    if status == "challenger_always_better":
        return (
            f"{where}, {challenger} outperforms {baseline} at every tested size where they differ significantly "
            f"({span}): no crossover in range.{first_text}"
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
    raise CopylabError(f"crossovers.csv: unknown status {status!r}")


def answer_crossover(results: Results, challenger: str | None, baseline: str | None) -> str:
    """Q4/Q5: the crossover of ``challenger`` over ``baseline`` in stream throughput, per thread count and pinning."""
    found = select(results.crossovers, challenger=challenger, baseline=baseline, metric=THROUGHPUT, workload="stream")
    if challenger is None or baseline is None or found.empty:
        return (
            f"{code(challenger or 'the variant')} was not measured against {code(baseline or 'its baseline')} in this "
            "sweep, so the question cannot be answered from it."
        )
    found = found.sort_values(["pinning", "threads"])
    lines = [
        f"**In short:** {_short_answer(found)} Metric: stream throughput; method: root of the mean difference "
        + (
            "(within-block log ratios) interpolated on log2(size), interval from resampling blocks within each size."
            if paired(results)
            else "interpolated on log2(size), interval from resampling trials within each size."
        )
    ]
    lines += [""] + [f"- {crossover_statement(results, row)}{_evidence(results, row)}" for _, row in found.iterrows()]
    return "\n".join(lines)


def _evidence(results: Results, row: pd.Series) -> str:
    """For a blocked design: how many blocks the curve's comparisons rest on, and how often its verdict comes out
    again when its blocks are drawn anew (a second run's chance of the same verdict)."""
    if not paired(results):
        return ""
    where = dict(workload=row["workload"], threads=int(row["threads"]), pinning=row["pinning"])
    rows = comparison_rows(results, row["challenger"], row["baseline"], row["metric"], **where)
    rows = rows[rows["method"] == "paired"]
    if rows.empty or len(rows) < len(
        comparison_rows(results, row["challenger"], row["baseline"], row["metric"], **where)
    ):
        return ""
    blocks = fmt_span(str(int(rows["n_pairs"].min())), str(int(rows["n_pairs"].max())))
    trials = select(results.trials, **where, connections=int(row["connections"]))
    advantages = curve_advantages(
        trials, row["challenger"], row["baseline"], row["metric"], "size_bytes", rows["size_bytes"]
    )
    stability = verdict_stability(advantages, row["status"], seed=results.manifest.parameters.seed)
    return (
        f" It rests on {blocks} blocks per size (more where the comparison was still undecided after the first "
        f"pass); drawing those blocks anew gives the same verdict in {fmt_pct(stability)} of 400 resamples."
    )


_STATUS_SHORT = {
    "challenger_always_better": "better at every tested size where the difference is significant",
    "challenger_never_better": "never better within the tested range",
    "indistinguishable": "not distinguishable from the baseline",
    "multiple_crossings": "better at some sizes and worse at others, with no single crossover",
}


def _short_answer(rows: pd.DataFrame) -> str:
    """One sentence over all configurations of a challenger: the crossover sizes, or how many have which status."""
    challenger, baseline = code(rows["challenger"].iloc[0]), code(rows["baseline"].iloc[0])
    crossings = rows[rows["status"] == "crossover"]
    parts = []
    if len(crossings):
        low, high = crossings["crossover_at"].min(), crossings["crossover_at"].max()
        span = (
            f"of about {fmt_bytes(low)}"
            if round(low) == round(high)
            else f"between about {fmt_bytes(low)} and {fmt_bytes(high)}"
        )
        parts.append(f"above a crossover size {span} in {len(crossings)} of {len(rows)} configurations")
    for status, text in _STATUS_SHORT.items():
        count = int((rows["status"] == status).sum())
        if count:
            parts.append(f"{text} in {count} of {len(rows)} configurations")
    if len(crossings):
        return f"{challenger} outperforms {baseline} " + "; ".join(parts) + "."
    return f"{challenger} has no crossover over {baseline}; it is " + "; ".join(parts) + "."


def answer_q1(results: Results) -> str:
    """Why zero-copy is not always fastest: copied fraction, notifications, ratio per size, CPU per byte."""
    zero_copy = role(results, "A3")
    if zero_copy is None:
        return _not_measured("zero-copy")
    baseline = role(results, "A1")
    focus = choose_focus(results)
    parts = []
    counts = zero_copy_counts(results.trials, zero_copy)
    if counts is not None:
        parts.append(
            f"On this path the kernel flagged {fmt_pct(counts['copied_fraction'])} of "
            f"{counts['zc_completed']:,.0f} completed zero-copy sends as {code('SO_EE_CODE_ZEROCOPY_COPIED')}: "
            + (
                "most sends really avoided the copy. "
                if counts["copied_fraction"] < 0.5
                else "the device or the path could not use the pinned pages as they were, so the kernel copied "
                "them anyway, only later. "
                if between_hosts(results)
                else "the receiver is local (a veth peer), so the data were copied anyway on delivery, only later. "
            )
            + f"Each send also cost page pinning and {fmt_num(counts['notifications_per_send'])} error-queue "
            "notifications to read."
        )
    comparisons = comparison_rows(
        results, zero_copy, baseline, workload="stream", threads=focus.threads, pinning=focus.pinning
    )
    if not comparisons.empty:
        verdicts = [verdict(row) for row in comparisons.itertuples()]
        faster = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "faster"]
        slower = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts, strict=True) if v == "slower"]
        parts.append(
            f"Throughput ratio {code(zero_copy)} / {code(baseline)} ({config_label(focus.threads, focus.pinning)}, "
            f"stream), {'within-block geometric mean and t' if paired(results) else 'mean and Fieller'} 95% CI: "
            f"significantly faster at {len(faster)} of {len(comparisons)} sizes"
            + (f" ({', '.join(faster)})" if faster else "")
            + f", significantly slower at {len(slower)}"
            + (f" ({', '.join(slower)})" if slower else "")
            + ".\n\n"
            + ratio_table(results, zero_copy, baseline, focus.threads, focus.pinning)
        )
    sizes = tested_sizes(results)
    cpu = {
        (impl, size): value(results, "cpu_ns_per_byte", impl, "stream", size, focus.threads, focus.pinning)
        for impl in (zero_copy, baseline)
        for size in (sizes[0], sizes[-1])
    }
    if all(cpu.values()):
        parts.append(
            "CPU time of both ends per byte (ns, mean [95% CI]): "
            + "; ".join(
                f"at {fmt_size(size)} {code(zero_copy)} {fmt_value(cpu[(zero_copy, size)])} vs "
                f"{code(baseline)} {fmt_value(cpu[(baseline, size)])}"
                for size in (sizes[0], sizes[-1])
            )
            + ". Pinning pages (get_user_pages, page reference counts) and handling completions are a fixed cost "
            "per send; it pays off only when it replaces a copy that costs more, which needs large messages and a "
            "receiver that does not copy: a remote peer behind a NIC, not a local one."
        )
    return "\n\n".join(parts)


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


def _q2_from_calibration(results: Results, baseline: str | None, one_copy: str | None) -> str:
    """Derived, not counted: where each message size's removed copy works and what one copy costs there, from a
    calibration that is consistent, naming no level where a finding or a disagreement of its rounds decides."""
    record = results.manifest.calibration
    if record is None or not record.copy_cost:
        return (
            " This sweep's manifest has no copy cost by cache level either (it predates that calibration; "
            "`./inv calibrate --data DIR` adds it), so the question stays open here."
        )
    if record.inconsistent:
        return (
            " The sweep's copy-cost calibration cannot stand in for them either: it is inconsistent "
            f"({md_escape(record.inconsistent)}), so no cache level is derived from it, and none is named."
        )
    sizes = tested_sizes(results)
    if not sizes or not baseline or not one_copy:
        return ""
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
            f"{fmt_num(medians['memory'] / medians[cheapest])} times the cost inside {cheapest}"
            + (
                ": there a removed copy saves most, because it streams from and to memory."
                if max(medians, key=lambda region: medians[region]) == "memory"
                else "."
            )
        )
    return text


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
    costliest = {max(regions, key=lambda region, r=r: rounds[region][r]) for r in range(count)}
    if len(costliest) > 1:
        return (
            f" The calibration's rounds disagree on which of {', '.join(sorted(regions))} costs most per byte copied "
            f"(each of {', '.join(sorted(costliest))} came out costliest in some round), so none is named."
        )
    return f" Among this sweep's sizes the level that gains most from one copy less is {costliest.pop()}."


def answer_q2(results: Results) -> str:
    """Which cache level loses the most misses, or why that is not measurable here."""
    focus = choose_focus(results)
    baseline, one_copy = role(results, "A1"), role(results, "A2")
    challengers = [name for name in (one_copy, role(results, "A3")) if name]
    reductions = _cache_reductions(results, focus, challengers, baseline)
    if reductions.empty:
        text = (
            "Not measurable on this host, because "
            + counters_unavailable_reason(results)
            + ". The L1 and last-level cache miss columns are empty for every trial, so no level's reduction can "
            "be computed, and none is claimed." + _q2_from_calibration(results, baseline, one_copy)
        )
        one = {
            impl: value(results, "snd_cpu_ns_per_byte", impl, "stream", focus.size, focus.threads, focus.pinning)
            for impl in (baseline, one_copy)
            if impl
        }
        if baseline and one_copy and all(one.values()):
            text += (
                f" What is measured is the time the copies take: the sender's CPU per byte at {fmt_size(focus.size)} "
                f"was {fmt_value(one[baseline], 'ns')} for {code(baseline)} and "
                f"{fmt_value(one[one_copy], 'ns')} for {code(one_copy)}; that includes the stalls of the "
                "removed copy at every cache level together."
            )
        return text
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


def answer_q3(results: Results) -> str:
    """Thread count against throughput, CPU per byte, context switches and (if measured) cache misses."""
    focus = choose_focus(results)
    stream = metric_rows(results, THROUGHPUT, workload="stream", pinning=focus.pinning)
    threads = sorted(int(t) for t in stream["threads"].unique())
    hi = threads[-1]
    llc = measured(results, "snd_llc_misses_per_kib")
    rows, sentences = [], []
    for impl in study(results):
        values = {
            (metric, t): value(results, metric, impl, "stream", focus.size, t, focus.pinning)
            for metric in (THROUGHPUT, "cpu_ns_per_byte", "ctx_switches_per_msg", "snd_llc_misses_per_kib")
            for t in threads
        }
        if all(values[(THROUGHPUT, t)] is None for t in threads):
            continue
        for t in threads:
            row = {
                "Implementation": impl,
                "Threads": t,
                "Throughput, Gbit/s": fmt_value(values[(THROUGHPUT, t)]),
                "CPU ns/byte": fmt_value(values[("cpu_ns_per_byte", t)]),
                "Context switches/msg": fmt_value(values[("ctx_switches_per_msg", t)]),
            }
            if llc:
                row["Sender LLC misses/KiB"] = fmt_value(values[("snd_llc_misses_per_kib", t)])
            rows.append(row)
        measured_threads = [t for t in threads if values[(THROUGHPUT, t)] is not None]
        first, last = measured_threads[0], measured_threads[-1]
        if first != last:
            tp0, tp1 = values[(THROUGHPUT, first)][0], values[(THROUGHPUT, last)][0]
            text = (
                f"{code(impl)}, {first} to {last} threads: throughput {fmt_num(tp0)} to {fmt_num(tp1)} Gbit/s "
                f"({fmt_change(tp0, tp1)})"
            )
            cpu0, cpu1 = values[("cpu_ns_per_byte", first)], values[("cpu_ns_per_byte", last)]
            if cpu0 and cpu1:
                text += f", CPU per byte {fmt_num(cpu0[0])} to {fmt_num(cpu1[0])} ns ({fmt_change(cpu0[0], cpu1[0])})"
            cs0, cs1 = values[("ctx_switches_per_msg", first)], values[("ctx_switches_per_msg", last)]
            if cs0 and cs1:
                text += f", context switches per message {fmt_num(cs0[0])} to {fmt_num(cs1[0])}"
            sentences.append(f"- {text}.")
    if not rows:
        return "The sweep has no stream results at the focus size, so the question cannot be answered from it."
    cores = results.manifest.host.cores
    intro = f"At {fmt_size(focus.size)} per message (stream, pinning {code(focus.pinning)}):\n\n"
    intro += "\n".join(sentences) + "\n\n"
    if cores and hi > int(cores):
        intro += (
            f"The host has {cores} cores, so beyond {cores} threads the connections time-share cores: every switch "
            "between threads replaces the working set (socket buffers, message fields) in the private L1 and L2 "
            "caches, and the threads compete for the shared last-level cache."
        )
    if focus.pinning == "same_cpu":
        intro += " With both ends pinned to one CPU, all threads of sender and receiver share that CPU's caches."
    if not llc:
        intro += (
            " Cache contention itself cannot be observed here: the L1 and LLC miss counters are not measurable on "
            "this host (see question 2), so CPU time per byte and context switches are the measured proxies; rising "
            "CPU per byte at constant work means more stalls or scheduling overhead per byte."
        )
    return intro + "\n\n" + markdown_table(rows)


def _explain(results: Results, anomaly: Anomaly) -> str:
    zero_copy = implementations.uses_zero_copy(anomaly.implementation)
    if anomaly.kind == "ordering_reversal" and zero_copy:
        counts = zero_copy_counts(results.trials, anomaly.implementation)
        copied = f" ({fmt_pct(counts['copied_fraction'])} of completions flagged COPIED here)" if counts else ""
        where = (
            "Between these hosts the kernel still copied pinned pages where the device or the path could not use "
            "them as they were"
            if between_hosts(results)
            else "Over a veth pair the packet is delivered locally, so the kernel must copy the pinned pages before "
            "it can hand the data to another socket"
        )
        return (
            f"MSG_ZEROCOPY is built for a NIC that reads the pinned pages by DMA. {where}{copied}: where that "
            "happens the copy is not saved but deferred, and the sender pays on top for pinning the pages "
            "(get_user_pages, page reference counts, memory accounting against optmem_max) and for the completion "
            "notifications it has to read from the error queue. More work per byte means less throughput."
        )
    if anomaly.kind == "ordering_reversal":
        return (
            "With an 8-entry iovec the kernel copies eight separate user buffers: each segment is checked, faulted in "
            "and copied on its own, and each lands in socket-buffer memory at an unaligned offset. The packing memcpy "
            f"of {anomaly.observed[0]}, in contrast, runs on data that is hot in the L1/L2 cache and hands the kernel "
            "one contiguous buffer, a single long copy that the CPU's string-copy instructions handle at full speed. "
            "When the user-space copy is that cheap, the per-segment overhead inside sendmsg() outweighs it."
        )
    if anomaly.kind == "non_monotonic":
        zc = (
            f" For {anomaly.implementation}, the pinned pages of in-flight sends are also charged against optmem_max; "
            "once that runs out, sends fail with ENOBUFS until completions free it."
            if zero_copy
            else ""
        )
        return (
            "Larger messages mean fewer system calls per byte, so throughput should not fall. A fall means the larger "
            "message crosses a capacity limit: the message plus its socket-buffer copy no longer fit in the private "
            "L2 cache, so every copy now misses to the shared cache or memory; or a message larger than the socket "
            "send buffer makes the sender block and wait for the receiver, adding context switches and wake-ups." + zc
        )
    cores = results.manifest.host.cores
    core_text = f" on {cores} cores" if cores else ""
    return (
        f"More threads than cores{core_text} cannot run in parallel; they time-share the CPUs. Every context switch "
        "costs the scheduler's work and evicts the previous thread's socket buffers and message fields from the L1/L2 "
        "caches; the extra connections also add lock contention on the link and the receive path (softirq) work "
        "competes with the application threads for the same CPUs."
    )


def _copy_path_finding(results: Results) -> str | None:
    """The calibration's finding that touches the copies a sender of the sweep makes in user space, described with
    what it did to that sender's user-space CPU time; None when there is none."""
    record = results.manifest.calibration
    if record is None:
        return None
    sizes = tested_sizes(results)
    focus = choose_focus(results)
    for name in present(results):
        user_copy = implementations.get(name).copies.user_copy
        if user_copy is None:
            continue
        touched = {size: findings_for_copy(record, user_copy.call, user_copy.bytes_per_call(size)) for size in sizes}
        affected = [size for size in sizes if touched[size]]
        if not affected:
            continue
        finding = max((f for size in affected for f in touched[size]), key=lambda f: f.slowdown)
        calls = f"{user_copy.call}() of {fmt_size(user_copy.bytes_per_call(affected[0]))}" + (
            f" to {fmt_size(user_copy.bytes_per_call(affected[-1]))}" if len(affected) > 1 else ""
        )
        measured_cost = [
            (size, value(results, "snd_user_ns_per_byte", name, "stream", size, focus.threads, focus.pinning))
            for size in affected
        ]
        cost_text = "; ".join(f"{fmt_size(size)} {fmt_value(found, 'ns')}" for size, found in measured_cost if found)
        return (
            "Selection rule: a copy that costs more than twice another way of copying the same bytes is reported "
            "before any throughput anomaly, because the calibration measures it directly instead of inferring it "
            f"from throughput. On this host, {finding.describe(record.cpu_flags)}. {code(name)} makes such copies "
            f"at {', '.join(fmt_size(size) for size in affected)} ({calls} per call"
            + (f"; its sender's user-space CPU time per byte there, mean [95% CI]: {cost_text}" if cost_text else "")
            + ").\n\nString instructions (`rep movsb`) let the CPU's microcode copy a block as a whole; on CPUs "
            "with fast short rep-movsb (FSRM) both glibc and the kernel prefer them. The microcode must not copy "
            "forwards over its own output, so it checks whether the destination starts just after the source; "
            "when it checks only the address bits within a page, a destination a few bytes past the source modulo "
            "4 KiB looks like such an overlap, and it falls back to a slow, careful copy. Two buffers allocated "
            "one after the other by malloc() lie exactly so (16-byte block headers), so the same program copies "
            "fast or many times slower depending on where its buffers happen to lie: a cost no cache level "
            "explains, and one a page-aligned buffer removes."
        )
    return None


def answer_q6(results: Results) -> str:
    """A calibration finding that touches a sender's own copies, else the anomaly chosen by ``find_anomaly``,
    described with its numbers and explained by kind."""
    copy_path = _copy_path_finding(results)
    if copy_path is not None:
        return copy_path
    anomaly = find_anomaly(results)
    if anomaly is None:
        return "The sweep has no stream throughput results to search for unexpected results."
    where = f"{config_label(anomaly.threads, anomaly.pinning)}, stream"
    exp, obs = anomaly.expected, anomaly.observed
    if anomaly.kind == "ordering_reversal":
        finding = (
            f"At {fmt_size(anomaly.size)} ({where}), {code(str(obs[0]))} reached {fmt_interval(*obs[1:], 'Gbit/s')} "
            f"but {code(str(exp[0]))}, which avoids more copies, only {fmt_interval(*exp[1:], 'Gbit/s')}."
        )
        rule = (
            f"the largest reversal of the expected order {' > '.join(expected_order())} in the upper half of the "
            "tested sizes"
        )
    elif anomaly.kind == "non_monotonic":
        finding = (
            f"The throughput of {code(anomaly.implementation)} ({where}) fell from "
            f"{fmt_interval(*obs[1:], 'Gbit/s')} at {fmt_size(obs[0])} to {fmt_interval(*exp[1:], 'Gbit/s')} at "
            f"{fmt_size(exp[0])}."
        )
        rule = "the largest drop of a throughput curve as the message size grows"
    else:
        finding = (
            f"At {fmt_size(anomaly.size)} (pinning {code(anomaly.pinning)}, stream), {code(anomaly.implementation)} "
            f"moved {fmt_interval(*obs[1:], 'Gbit/s')} with {threads_text(obs[0])} but only "
            f"{fmt_interval(*exp[1:], 'Gbit/s')} with {exp[0]}."
        )
        rule = "the largest loss of throughput from the fewest to the most threads"
    if anomaly.score > 0:
        separation = (
            f"The 95% intervals do not overlap: the lower bound of the higher result is {fmt_num(1 + anomaly.score)} "
            "times the upper bound of the lower one."
        )
    else:
        separation = (
            "No candidate had non-overlapping 95% intervals, so this is the closest call, not a significant anomaly."
        )
    return (
        f"Selection rule: among all stream throughput results, {rule} was the highest-scoring of three kinds of "
        f"broken expectation (ordering, size, thread scaling). {finding} {separation}\n\n{_explain(results, anomaly)}"
    )


def crossover_summary(results: Results) -> str:
    """A further sweep's answers to questions 4 and 5."""
    return "\n\n".join(
        [
            "**One-copy against two-copy.** " + answer_crossover(results, role(results, "A2"), role(results, "A1")),
            "**Zero-copy against two-copy.** " + answer_crossover(results, role(results, "A3"), role(results, "A1")),
        ]
    )


def answers(results: Results) -> list[tuple[str, str]]:
    """(question, Markdown answer) for the six questions, in the assignment's order."""
    bodies = (
        answer_q1(results),
        answer_q2(results),
        answer_q3(results),
        answer_crossover(results, role(results, "A2"), role(results, "A1")),
        answer_crossover(results, role(results, "A3"), role(results, "A1")),
        answer_q6(results),
    )
    return list(zip(QUESTIONS, bodies, strict=True))


# ---------------------------------------------------------------- other ways to send


def _overlap(a: pd.Series, b: pd.Series) -> bool:
    """Whether two summary rows' intervals overlap: the data cannot tell them apart."""
    return bool(a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"])


def best_sender_table(results: Results) -> str:
    """Per stream size, the sender with the most throughput, and those whose intervals overlap its (ties)."""
    focus = choose_focus(results)
    rows = metric_rows(results, THROUGHPUT, workload="stream", threads=focus.threads, pinning=focus.pinning)
    table = []
    for size, group in rows.groupby("size_bytes"):
        ranked = group.sort_values("mean", ascending=False)
        best = ranked.iloc[0]
        tied = [code(str(r["implementation"])) for _, r in ranked.iloc[1:].iterrows() if _overlap(best, r)]
        table.append(
            {
                "Size": fmt_size(int(size)),
                "Most throughput, Gbit/s (95% CI)": f"{code(str(best['implementation']))} "
                + fmt_interval(best["mean"], best["ci_low"], best["ci_high"]),
                "Tied with (overlapping intervals)": ", ".join(tied) or "none: the best alone",
            }
        )
    if not table:
        return "The sweep has no stream throughput to rank the senders by."
    return (
        f"Stream throughput by message size ({config_label(focus.threads, focus.pinning)}, receiving by copy). "
        "A sender whose 95% interval overlaps the best one's is stated as a tie: the data cannot rank them.\n\n"
        + markdown_table(table)
    )


def sender_crossovers(results: Results) -> str:
    """The crossover of every pair the study's questions leave out, each against the baseline the registry names."""
    pairs = [
        (name, baseline)
        for name in other_senders(results)
        for baseline in implementations.get(name).baselines
        if baseline in present(results)
    ]
    pairs += [
        (name, baseline)
        for name in study(results)
        for baseline in implementations.get(name).baselines
        if baseline in other_senders(results)
    ]
    if not pairs:
        return "The sweep measured no other sender together with its baseline."
    return "\n\n".join(
        f"**{code(challenger)} against {code(baseline)}.** {answer_crossover(results, challenger, baseline)}"
        for challenger, baseline in pairs
    )


def receiver_copy_cost(results: Results) -> str:
    """What the receiver's copy costs, from receiving by truncate (no copy to user space) against copy."""
    focus = choose_focus(results)
    measured = [
        name
        for name in present(results)
        if not metric_rows(results, "rcv_cpu_ns_per_byte", implementation=name, receive="truncate").empty
    ]
    if not measured:
        return (
            "The sweep received by copy only, so the cost of the receiver's copy is not measured here "
            "(`--receive copy,truncate` measures it)."
        )
    table = []
    for name in measured:
        for size in tested_sizes(results):
            where = {
                "implementation": name,
                "workload": "stream",
                "size_bytes": size,
                "threads": focus.threads,
                "pinning": focus.pinning,
            }
            by_copy = metric_rows(results, "rcv_cpu_ns_per_byte", **where)
            by_truncate = metric_rows(results, "rcv_cpu_ns_per_byte", **where, receive="truncate")
            ratio = select(
                results.comparisons,
                challenger=implementations.contender(name, "truncate"),
                baseline=name,
                metric=THROUGHPUT,
                workload="stream",
                size_bytes=size,
                threads=focus.threads,
                pinning=focus.pinning,
            )
            if by_copy.empty or by_truncate.empty:
                continue
            copy_row, truncate_row = by_copy.iloc[0], by_truncate.iloc[0]
            table.append(
                {
                    "Sender": code(name),
                    "Size": fmt_size(size),
                    "Receiver CPU ns/B, copy": fmt_interval(copy_row["mean"], copy_row["ci_low"], copy_row["ci_high"]),
                    "truncate": fmt_interval(truncate_row["mean"], truncate_row["ci_low"], truncate_row["ci_high"]),
                    "The copy, ns/B": fmt_num(copy_row["mean"] - truncate_row["mean"]),
                    "Throughput truncate/copy": "n/a"
                    if ratio.empty
                    else f"{fmt_num(ratio.iloc[0]['ratio'])} [{fmt_num(ratio.iloc[0]['ratio_ci_low'])}, "
                    f"{fmt_num(ratio.iloc[0]['ratio_ci_high'])}]",
                }
            )
    verified = (
        " This sweep ran with `--verify`: to check the bytes, `truncate` first read them with `MSG_PEEK`, which is "
        "a copy, so here the difference does not measure the receiver's copy."
        if results.manifest.parameters.verify
        else ""
    )
    return (
        "Receiving with `recv(MSG_TRUNC)` consumes the same bytes without copying them to user space, so the "
        "difference in the receiver's CPU time per byte between `copy` and `truncate` is what the receiver's copy "
        f"costs ({config_label(focus.threads, focus.pinning)}, stream; mean [95% CI] over trials).{verified}\n\n"
        + markdown_table(table)
    )


def which_copy_costs_most(results: Results) -> str:
    """Part A's questions answered from the measured costs: is it really only two copies, and which costs most?"""
    focus = choose_focus(results)
    baseline, one_copy = role(results, "A1"), role(results, "A2")
    if not (baseline and one_copy):
        return ""
    at = ("stream", focus.size, focus.threads, focus.pinning)
    user = {name: value(results, "snd_user_ns_per_byte", name, *at) for name in (baseline, one_copy)}
    copy = value(results, "rcv_cpu_ns_per_byte", baseline, *at)
    truncate = metric_rows(
        results,
        "rcv_cpu_ns_per_byte",
        implementation=baseline,
        receive="truncate",
        workload="stream",
        size_bytes=focus.size,
        threads=focus.threads,
        pinning=focus.pinning,
    )
    copies = implementations.get(baseline).copies.per_byte()
    text = (
        f"**Is it really only two copies?** No: {code(baseline)} makes {copies} copies of each byte here, two on "
        "the sender (the packing `memcpy` and `send()`'s copy into socket buffers) and one on the receiver "
        "(`recv()`), which the name does not count."
    )
    if not (all(user.values()) and copy and not truncate.empty):
        return text + " This sweep did not measure both the packing copy and the receiver's copy, so it cannot say "
        "which costs most."
    packing = user[baseline][0] - user[one_copy][0]
    receiver = copy[0] - float(truncate.iloc[0]["mean"])
    costlier, cheaper = (
        ("receiver's copy", "packing copy") if receiver > packing else ("packing copy", "receiver's copy")
    )
    times = max(packing, receiver) / min(packing, receiver) if min(packing, receiver) > 0 else float("nan")
    return text + (
        f" **Which costs most?** At {fmt_size(focus.size)} ({config_label(focus.threads, focus.pinning)}) the packing "
        f"copy costs {fmt_num(packing)} ns per byte (the sender's user time of {code(baseline)} minus "
        f"{code(one_copy)}'s) and the receiver's copy {fmt_num(receiver)} ns per byte (the receiver's CPU time "
        f"receiving by copy minus by truncate): the {costlier} costs {fmt_num(times)} times the {cheaper}. The "
        "kernel's copy into socket buffers is inside the sender's system time, together with the protocol's work, "
        "and is not isolated by these two measurements."
    )


def mapped_receive(results: Results) -> str:
    """How much of what the client received through TCP_ZEROCOPY_RECEIVE arrived as mapped pages."""
    trials = results.trials
    rows = trials[(trials["receive"] == "mmap") & (trials["status"] == "ok")]
    if rows.empty:
        return ""
    parts = []
    for name in implementations.ordered(rows["implementation"]):
        mine = rows[rows["implementation"] == name]
        mapped, copied = float(mine["rx_mapped_bytes"].sum()), float(mine["rx_copied_bytes"].sum())
        if mapped + copied > 0:
            parts.append(f"{code(name)} {fmt_pct(mapped / (mapped + copied))}")
    mtu = results.manifest.parameters.mtu
    return (
        "With `TCP_ZEROCOPY_RECEIVE` (receive `mmap`) the share of the received bytes that arrived as mapped pages "
        f"rather than copied, over all trials, was: {'; '.join(parts)} (MTU {mtu} B). Only whole, page-aligned "
        "payload pages map: a segment carrying less than a page, or payload the sender's kernel copied into "
        "unaligned socket-buffer memory, is copied by `recv()` as before."
    )


def other_ways_to_send(results: Results) -> str:
    """The report's section beyond the study: every sender and the receiver's copy, from the data."""
    others = other_senders(results)
    if not others and receive_modes(results) == [implementations.BASELINE_RECEIVE]:
        return "This sweep measured only the study's senders, receiving by copy."
    parts = [
        "Senders measured beyond the study's three: " + (", ".join(code(name) for name in others) or "none") + ".",
        best_sender_table(results),
        sender_crossovers(results),
        receiver_copy_cost(results),
        which_copy_costs_most(results),
        mapped_receive(results),
    ]
    return "\n\n".join(part for part in parts if part)
