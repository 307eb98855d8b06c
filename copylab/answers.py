"""Sentences from numbers: the report's answers to the study's questions, computed from a sweep's tables.

Every function takes a loaded ``Sweep`` and returns Markdown; nothing here types in a result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from copylab.errors import CopylabError
from copylab.formatting import (
    fmt_num,
    fmt_size,
    fmt_bytes,
    fmt_p,
    fmt_interval,
    fmt_pct,
    fmt_change,
    fmt_span,
    code,
    md_escape,
    markdown_table,
)
from copylab.stats import MIN_TRIALS, UNSTABLE_CV, t_interval
from copylab.trials import load_sweep

QUESTIONS: tuple[str, ...] = (
    "Why does zero-copy not always give the best throughput?",
    "Which cache level shows the most reduction in misses, and why?",
    "How does thread count interact with cache contention?",
    "At what message size does one-copy outperform two-copy on this system?",
    "At what message size does zero-copy outperform two-copy on this system?",
    "Identify one unexpected result and explain it using OS or hardware concepts.",
)
BASELINE = "two_copy"
THROUGHPUT = "throughput_gbps"
# the ordering the study expects at large messages: fewer copies, more throughput
EXPECTED_ORDER = ("zero_copy", "one_copy", "two_copy")
CACHE_METRICS = {"L1 data cache": "snd_l1d_misses_per_kib", "last-level cache": "snd_llc_misses_per_kib"}
# systemd-detect-virt's names of container managers (the rest are hypervisors)
CONTAINERS = {"docker", "podman", "lxc", "lxc-libvirt", "systemd-nspawn", "openvz", "rkt", "wsl", "proot", "pouch"}
CACHE_EVENTS = ("L1-dcache-load-misses", "LLC-load-misses", "cache-misses", "cache-references")
RESULT_FILES = ("summary.csv", "comparisons.csv", "crossovers.csv")


@dataclass(frozen=True)
class Sweep:
    """One sweep's provenance, trials and analysis tables."""

    name: str
    manifest: dict
    trials: pd.DataFrame
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    crossovers: pd.DataFrame
    directory: Path | None = None


@dataclass(frozen=True)
class Focus:
    """The slice most statements describe: one pinning, a fixed thread count and a fixed stream size."""

    pinning: str
    threads: int
    size: int


@dataclass(frozen=True)
class Anomaly:
    """A result that contradicts an expectation, scored by how far apart the two 95% intervals are."""

    kind: str  # ordering_reversal | non_monotonic | thread_scaling
    score: float  # lower CI bound of the surprising side / upper bound of the expected side - 1
    implementation: str
    threads: int
    pinning: str
    expected: tuple[str | int, float, float, float]  # (label, mean, ci_low, ci_high) expected to be higher
    observed: tuple[str | int, float, float, float]  # (label, mean, ci_low, ci_high) that came out higher
    size: int


# ---------------------------------------------------------------- loading


def load_results(data_dir: Path) -> Sweep:
    """Read a sweep's validated trials and manifest and the analysis tables next to them."""
    data_dir = Path(data_dir)
    missing = [name for name in RESULT_FILES if not (data_dir / name).is_file()]
    if missing:
        raise CopylabError(f"{data_dir}: missing {', '.join(missing)} (run the analysis first)")
    trials, manifest = load_sweep(data_dir)
    tables = [pd.read_csv(data_dir / name) for name in RESULT_FILES]
    return Sweep(str(manifest["sweep"]), manifest, trials, *tables, directory=data_dir)


# ---------------------------------------------------------------- selections


def _as_bool(series: pd.Series) -> pd.Series:
    # CSV round trips turn booleans into bool, object or str columns depending on missing values
    return series.astype(str).str.strip().str.lower().isin(("true", "1", "1.0", "yes"))


def _flag(value: object) -> bool:
    return bool(_as_bool(pd.Series([value])).iloc[0])


def _rows(frame: pd.DataFrame, **where: object) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    return frame[mask]


def metric_rows(sweep: Sweep, metric: str, **where: object) -> pd.DataFrame:
    """Summary rows of one metric with a finite mean, sorted by configuration."""
    rows = _rows(sweep.summary, metric=metric, **where)
    rows = rows[np.isfinite(rows["mean"].astype(float))]
    return rows.sort_values(["implementation", "workload", "pinning", "threads", "size_bytes"])


def measured(sweep: Sweep, metric: str) -> bool:
    """Whether the summary holds at least one finite value of ``metric``."""
    return not metric_rows(sweep, metric).empty


def _value(sweep: Sweep, metric: str, implementation: str, workload: str, size: int, threads: int, pinning: str):
    """(mean, ci_low, ci_high) of one configuration, or None when not measured."""
    rows = metric_rows(
        sweep, metric, implementation=implementation, workload=workload, size_bytes=size, threads=threads,
        pinning=pinning,
    )
    if rows.empty:
        return None
    row = rows.iloc[0]
    return float(row["mean"]), float(row["ci_low"]), float(row["ci_high"])


def _fmt_value(value, unit: str = "") -> str:
    return "not measured" if value is None else fmt_interval(*value, unit)


def implementations(sweep: Sweep) -> list[str]:
    """Implementations present in the summary, in the study's order (baseline tools last)."""
    present = set(sweep.summary["implementation"])
    order = [name for name in ("two_copy", "one_copy", "zero_copy") if name in present]
    return order + sorted(present - set(order))


def choose_focus(sweep: Sweep) -> Focus:
    """The pinning listed first in the manifest, the fewest threads, and the largest of the stream sizes with the
    most results (every implementation at every thread count, in a complete sweep)."""
    stream = metric_rows(sweep, THROUGHPUT, workload="stream")
    if stream.empty:
        raise CopylabError(f"sweep {sweep.name}: no stream throughput in summary.csv")
    listed = [p for p in sweep.manifest.get("parameters", {}).get("pinning", []) if p in set(stream["pinning"])]
    pinning = listed[0] if listed else str(stream["pinning"].mode().iloc[0])
    stream = stream[stream["pinning"] == pinning]
    counts = stream.groupby("size_bytes").size()
    size = max(counts[counts == counts.max()].index)
    return Focus(pinning, int(stream["threads"].min()), int(size))


def tested_sizes(sweep: Sweep, workload: str = "stream") -> list[int]:
    """Message sizes with results for ``workload``."""
    return sorted(int(s) for s in metric_rows(sweep, THROUGHPUT, workload=workload)["size_bytes"].unique())


def threads_text(threads: int) -> str:
    """'1 thread', '4 threads'."""
    return f"{threads} thread{'s' if threads != 1 else ''}"


def _config_label(threads: int, pinning: str) -> str:
    return f"{threads_text(threads)}, pinning {code(pinning)}"


# ---------------------------------------------------------------- zero-copy and copy evidence


def zero_copy_counts(sweep: Sweep) -> dict[str, float] | None:
    """Pooled zero-copy counters of all ok zero_copy trials, or None when there are none."""
    trials = sweep.trials
    zc = trials[(trials["implementation"] == "zero_copy") & (trials["status"] == "ok")]
    columns = ("zc_sends", "zc_completed", "zc_copied", "zc_notifications")
    totals = {column: float(zc[column].sum(min_count=1)) for column in columns}
    if zc.empty or not totals["zc_completed"] > 0:
        return None
    return {
        **totals,
        "trials": float(len(zc)),
        "copied_fraction": totals["zc_copied"] / totals["zc_completed"],
        "notifications_per_send": totals["zc_notifications"] / totals["zc_sends"] if totals["zc_sends"] else math.nan,
    }


def copied_fraction_range(sweep: Sweep) -> tuple[float, float] | None:
    """Smallest and largest per-configuration mean COPIED fraction, from the summary."""
    rows = metric_rows(sweep, "zc_copied_fraction")
    return None if rows.empty else (float(rows["mean"].min()), float(rows["mean"].max()))


def sender_user_ns_per_byte(sweep: Sweep, implementation: str, size: int, threads: int, pinning: str):
    """Sender user-space CPU ns per byte (mean and Student t 95% CI over trials), or None."""
    t = sweep.trials
    rows = t[
        (t["implementation"] == implementation)
        & (t["workload"] == "stream")
        & (t["size_bytes"] == size)
        & (t["threads"] == threads)
        & (t["pinning"] == pinning)
        & (t["status"] == "ok")
    ]
    values = (rows["snd_cpu_user_s"] * 1e9 / rows["bytes"]).replace([np.inf, -np.inf], np.nan).dropna()
    if len(values) < 2:
        return None
    return float(values.mean()), *t_interval(values.to_numpy())


def copy_evidence(sweep: Sweep) -> str:
    """Part A in numbers: the packing copy as sender user CPU, and the kernel's deferred zero-copy copy."""
    focus = choose_focus(sweep)
    parts = []
    user = {
        impl: sender_user_ns_per_byte(sweep, impl, focus.size, focus.threads, focus.pinning)
        for impl in ("two_copy", "one_copy")
    }
    if all(user.values()):
        parts.append(
            f"The packing copy runs in user space, so it shows up as the sender's user CPU time: at "
            f"{fmt_size(focus.size)} ({_config_label(focus.threads, focus.pinning)}) {code('two_copy')} spent "
            f"{fmt_interval(*user['two_copy'], 'ns')} of user CPU per byte sent, {code('one_copy')} "
            f"{fmt_interval(*user['one_copy'], 'ns')} (mean [95% CI] over trials). "
            + (
                "The difference is the eliminated copy."
                if user["one_copy"][2] < user["two_copy"][1]
                else "The intervals overlap, so this sweep cannot resolve the eliminated copy at this size."
            )
        )
    counts = zero_copy_counts(sweep)
    if counts is None:
        parts.append("No zero-copy completions were recorded in this sweep.")
    else:
        text = (
            f"Of the {counts['zc_completed']:,.0f} zero-copy sends whose completion was read "
            f"({counts['trials']:.0f} trials), {counts['zc_copied']:,.0f} ({fmt_pct(counts['copied_fraction'])}) "
            f"carried {code('SO_EE_CODE_ZEROCOPY_COPIED')}"
        )
        span = copied_fraction_range(sweep)
        if span is not None:
            text += f" (per configuration {fmt_span(fmt_pct(span[0]), fmt_pct(span[1]))})"
        parts.append(
            text + f"; the sender read {fmt_num(counts['notifications_per_send'])} notifications per send (one per "
            f"{fmt_num(1 / counts['notifications_per_send'])} sends), because the kernel coalesces consecutive "
            "completions into one range."
        )
    return "\n\n".join(parts)


# ---------------------------------------------------------------- comparisons and crossovers


def comparison_rows(sweep: Sweep, challenger: str, metric: str = THROUGHPUT, **where: object) -> pd.DataFrame:
    """comparisons.csv rows of ``challenger`` against the two_copy baseline, sorted by size."""
    rows = _rows(sweep.comparisons, challenger=challenger, baseline=BASELINE, metric=metric, **where)
    return rows.sort_values("size_bytes")


def _verdict(row) -> str:
    if not _flag(row.significant):
        return "not significant"
    return "faster" if _flag(row.challenger_better) else "slower"


def ratio_table(sweep: Sweep, challenger: str, threads: int, pinning: str) -> str:
    """Markdown table of challenger/two_copy throughput ratios per size, with 95% CI and Holm p."""
    rows = comparison_rows(sweep, challenger, workload="stream", threads=threads, pinning=pinning)
    if rows.empty:
        return ""
    return markdown_table(
        {
            "Size": fmt_size(row.size_bytes),
            "Throughput ratio": fmt_num(row.ratio),
            "95% CI": f"[{fmt_num(row.ratio_ci_low)}, {fmt_num(row.ratio_ci_high)}]",
            "p (Holm)": fmt_p(row.p_holm),
            "Verdict": _verdict(row),
        }
        for row in rows.itertuples()
    )


def _significant_sizes(sweep: Sweep, row: pd.Series) -> tuple[list[str], list[str]]:
    """Sizes where the challenger of a crossovers.csv row is significantly better, and worse."""
    rows = comparison_rows(
        sweep, row["challenger"], row["metric"], workload=row["workload"], threads=row["threads"],
        pinning=row["pinning"],
    )
    verdicts = [(fmt_size(r.size_bytes), _verdict(r)) for r in rows.itertuples()]
    return [s for s, v in verdicts if v == "faster"], [s for s, v in verdicts if v == "slower"]


def crossover_statement(sweep: Sweep, row: pd.Series) -> str:
    """One crossovers.csv row as a sentence, with the tested size range."""
    challenger, baseline = code(row["challenger"]), code(row["baseline"])
    threads, pinning = int(row["threads"]), str(row["pinning"])
    sizes = sorted(
        int(s)
        for s in metric_rows(sweep, row["metric"], workload=row["workload"], threads=threads, pinning=pinning)[
            "size_bytes"
        ].unique()
    )
    span = f"{fmt_size(sizes[0])} to {fmt_size(sizes[-1])}" if sizes else "the tested sizes"
    where = f"With {_config_label(threads, pinning)}"
    first = row.get("first_significant_size")
    first_text = (
        f" From {fmt_size(first)} upward it is significantly better at every tested size (Holm-corrected)."
        if first is not None and pd.notna(first)
        else ""
    )
    status = row["status"]
    if status == "crossover":
        size, low, high = (float(row[c]) for c in ("crossover_size", "ci_low", "ci_high"))
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
        better, worse = _significant_sizes(sweep, row)
        return (
            f"{where}, there is no single size from which {challenger} outperforms {baseline} within {span}: it is "
            f"significantly better at {', '.join(better) or 'no size'} and significantly worse at "
            f"{', '.join(worse) or 'no size'}."
        )
    raise CopylabError(f"crossovers.csv: unknown status {status!r}")


def answer_crossover(sweep: Sweep, challenger: str) -> str:
    """Q4/Q5: the crossover of ``challenger`` over two_copy in stream throughput, per thread count and pinning."""
    rows = _rows(sweep.crossovers, challenger=challenger, baseline=BASELINE, metric=THROUGHPUT, workload="stream")
    if rows.empty:
        return (
            f"{code(challenger)} was not measured against {code(BASELINE)} in this sweep, so the question cannot be "
            "answered from it."
        )
    rows = rows.sort_values(["pinning", "threads"])
    lines = [
        f"**In short:** {_short_answer(rows)} Metric: stream throughput; method: root of the mean difference "
        "interpolated on log2(size), interval from resampling trials within each size."
    ]
    lines += [""] + [f"- {crossover_statement(sweep, row)}" for _, row in rows.iterrows()]
    return "\n".join(lines)


_STATUS_SHORT = {
    "challenger_always_better": "better at every tested size where the difference is significant",
    "challenger_never_better": "never better within the tested range",
    "indistinguishable": "not distinguishable from the baseline",
    "multiple_crossings": "better at some sizes and worse at others, with no single crossover",
}


def _short_answer(rows: pd.DataFrame) -> str:
    """One sentence over all configurations of a challenger: the crossover sizes, or how many have which status."""
    challenger = code(rows["challenger"].iloc[0])
    crossings = rows[rows["status"] == "crossover"]
    parts = []
    if len(crossings):
        low, high = crossings["crossover_size"].min(), crossings["crossover_size"].max()
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
        return f"{challenger} outperforms {code(BASELINE)} " + "; ".join(parts) + "."
    return f"{challenger} has no crossover over {code(BASELINE)}; it is " + "; ".join(parts) + "."


# ---------------------------------------------------------------- Part E


def virtualised(sweep: Sweep) -> str | None:
    """The virtualisation the manifest detected (systemd-detect-virt), or None on bare metal."""
    virtualization = str((sweep.manifest.get("host") or {}).get("virtualization") or "none").strip()
    return None if virtualization.lower().startswith("none") else virtualization


def _in_container(virtualization: str) -> bool:
    return virtualization.lower() in CONTAINERS


def counters_unavailable_reason(sweep: Sweep, events: Iterable[str] = CACHE_EVENTS) -> str:
    """Why hardware counters are missing, from the manifest's perf section."""
    perf = sweep.manifest.get("perf") or {}
    if not perf.get("available", False):
        reason = "perf was not available on this host"
    else:
        unsupported = perf.get("unsupported_events") or {}
        listed = [event for event in events if event in unsupported] or sorted(unsupported)
        if listed:
            by_reason: dict[str, list[str]] = {}
            for event in listed:
                by_reason.setdefault(str(unsupported[event]), []).append(event)
            reason = "the hardware counters are not supported (" + "; ".join(
                f"perf reports {code(why)} for {', '.join(names)}" for why, names in by_reason.items()
            ) + ")"
        else:
            reason = "the counters produced no values in this sweep"
    virtualization = virtualised(sweep)
    if virtualization and _in_container(virtualization):
        reason += f"; the sweep ran inside a container ({virtualization}), where perf could not open these events"
    elif virtualization:
        reason += f"; the host is a virtual machine ({virtualization}) whose hypervisor does not expose these events"
    return reason


def answer_q1(sweep: Sweep) -> str:
    """Why zero-copy is not always fastest: copied fraction, notifications, ratio per size, CPU per byte."""
    if "zero_copy" not in implementations(sweep):
        return "The sweep has no zero_copy results, so the question cannot be answered from it."
    focus = choose_focus(sweep)
    parts = []
    counts = zero_copy_counts(sweep)
    if counts is not None:
        parts.append(
            f"On this path the kernel flagged {fmt_pct(counts['copied_fraction'])} of "
            f"{counts['zc_completed']:,.0f} completed zero-copy sends as {code('SO_EE_CODE_ZEROCOPY_COPIED')}: "
            + (
                "the receiver is local (a veth peer), so the data were copied anyway on delivery, only later. "
                if counts["copied_fraction"] >= 0.5
                else "most sends really avoided the copy. "
            )
            + f"Each send also cost page pinning and {fmt_num(counts['notifications_per_send'])} error-queue "
            "notifications to read."
        )
    comparisons = comparison_rows(sweep, "zero_copy", workload="stream", threads=focus.threads, pinning=focus.pinning)
    if not comparisons.empty:
        verdicts = [_verdict(row) for row in comparisons.itertuples()]
        faster = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts) if v == "faster"]
        slower = [fmt_size(s) for s, v in zip(comparisons["size_bytes"], verdicts) if v == "slower"]
        parts.append(
            f"Throughput ratio {code('zero_copy')} / {code(BASELINE)} ({_config_label(focus.threads, focus.pinning)}, "
            f"stream), mean and Fieller 95% CI: significantly faster at {len(faster)} of {len(comparisons)} sizes"
            + (f" ({', '.join(faster)})" if faster else "")
            + f", significantly slower at {len(slower)}"
            + (f" ({', '.join(slower)})" if slower else "")
            + ".\n\n"
            + ratio_table(sweep, "zero_copy", focus.threads, focus.pinning)
        )
    sizes = tested_sizes(sweep)
    cpu = {
        (impl, size): _value(sweep, "cpu_ns_per_byte", impl, "stream", size, focus.threads, focus.pinning)
        for impl in ("zero_copy", BASELINE)
        for size in (sizes[0], sizes[-1])
    }
    if all(cpu.values()):
        parts.append(
            "CPU time of both ends per byte (ns, mean [95% CI]): "
            + "; ".join(
                f"at {fmt_size(size)} {code('zero_copy')} {_fmt_value(cpu[('zero_copy', size)])} vs "
                f"{code(BASELINE)} {_fmt_value(cpu[(BASELINE, size)])}"
                for size in (sizes[0], sizes[-1])
            )
            + ". Pinning pages (get_user_pages, page reference counts) and handling completions are a fixed cost "
            "per send; it pays off only when it replaces a copy that costs more, which needs large messages and a "
            "receiver that does not copy: a remote peer behind a NIC, not a local one."
        )
    return "\n\n".join(parts)


def _cache_reductions(sweep: Sweep, focus: Focus) -> pd.DataFrame:
    """Relative miss reduction (1 - ratio to two_copy) per level, challenger and size, where measured."""
    records = []
    for level, metric in CACHE_METRICS.items():
        for challenger in ("one_copy", "zero_copy"):
            rows = comparison_rows(
                sweep, challenger, metric, workload="stream", threads=focus.threads, pinning=focus.pinning
            )
            rows = rows[np.isfinite(rows["ratio"].astype(float))]
            records += [
                {"level": level, "challenger": challenger, "size": int(r.size_bytes), "reduction": 1 - r.ratio,
                 "low": 1 - r.ratio_ci_high, "high": 1 - r.ratio_ci_low}
                for r in rows.itertuples()
            ]
    return pd.DataFrame.from_records(records, columns=["level", "challenger", "size", "reduction", "low", "high"])


def answer_q2(sweep: Sweep) -> str:
    """Which cache level loses the most misses, or why that is not measurable here."""
    focus = choose_focus(sweep)
    reductions = _cache_reductions(sweep, focus)
    if reductions.empty:
        text = (
            "Not measurable on this host, because "
            + counters_unavailable_reason(sweep)
            + ". The L1 and last-level cache miss columns are empty for every trial, so no level's reduction can "
            "be computed, and none is claimed."
        )
        one = {impl: _value(sweep, "snd_cpu_ns_per_byte", impl, "stream", focus.size, focus.threads, focus.pinning)
               for impl in ("two_copy", "one_copy")}
        if all(one.values()):
            text += (
                f" What is measured is the time the copies take: the sender's CPU per byte at {fmt_size(focus.size)} "
                f"was {_fmt_value(one['two_copy'], 'ns')} for {code('two_copy')} and "
                f"{_fmt_value(one['one_copy'], 'ns')} for {code('one_copy')}; that includes the stalls of the "
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
            "Miss reduction vs two_copy (95% CI)": f"{fmt_pct(r.reduction)} [{fmt_pct(r.low)}, {fmt_pct(r.high)}]",
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
        f"{fmt_pct(best['reduction'])} fewer sender misses per KiB than {code(BASELINE)}{other_text} "
        f"({_config_label(focus.threads, focus.pinning)}, stream). {why}\n\n{table}"
    )


def answer_q3(sweep: Sweep) -> str:
    """Thread count against throughput, CPU per byte, context switches and (if measured) cache misses."""
    focus = choose_focus(sweep)
    stream = metric_rows(sweep, THROUGHPUT, workload="stream", pinning=focus.pinning)
    threads = sorted(int(t) for t in stream["threads"].unique())
    hi = threads[-1]
    llc = measured(sweep, "snd_llc_misses_per_kib")
    rows, sentences = [], []
    for impl in implementations(sweep):
        values = {
            (metric, t): _value(sweep, metric, impl, "stream", focus.size, t, focus.pinning)
            for metric in (THROUGHPUT, "cpu_ns_per_byte", "ctx_switches_per_msg", "snd_llc_misses_per_kib")
            for t in threads
        }
        if all(values[(THROUGHPUT, t)] is None for t in threads):
            continue
        for t in threads:
            row = {
                "Implementation": impl,
                "Threads": t,
                "Throughput, Gbit/s": _fmt_value(values[(THROUGHPUT, t)]),
                "CPU ns/byte": _fmt_value(values[("cpu_ns_per_byte", t)]),
                "Context switches/msg": _fmt_value(values[("ctx_switches_per_msg", t)]),
            }
            if llc:
                row["Sender LLC misses/KiB"] = _fmt_value(values[("snd_llc_misses_per_kib", t)])
            rows.append(row)
        present = [t for t in threads if values[(THROUGHPUT, t)] is not None]
        first, last = present[0], present[-1]
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
    cores = (sweep.manifest.get("host") or {}).get("cores")
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


def _ordering_candidates(summary: pd.DataFrame, large: list[int]) -> list[Anomaly]:
    found = []
    for (workload, threads, pinning, size), group in summary.groupby(["workload", "threads", "pinning", "size_bytes"]):
        if workload != "stream" or size not in large:
            continue
        by_impl = group.set_index("implementation")
        for i, high in enumerate(EXPECTED_ORDER):
            for low in EXPECTED_ORDER[i + 1:]:
                if high in by_impl.index and low in by_impl.index:
                    h, l = by_impl.loc[high], by_impl.loc[low]
                    found.append(Anomaly(
                        "ordering_reversal", l["ci_low"] / h["ci_high"] - 1, high, int(threads), str(pinning),
                        (high, h["mean"], h["ci_low"], h["ci_high"]),
                        (low, l["mean"], l["ci_low"], l["ci_high"]),
                        int(size),
                    ))
    return found


def _curve_candidates(summary: pd.DataFrame) -> list[Anomaly]:
    found = []
    for (impl, threads, pinning), group in summary.groupby(["implementation", "threads", "pinning"]):
        group = group.sort_values("size_bytes")
        for (_, small), (_, big) in zip(group.iloc[:-1].iterrows(), group.iloc[1:].iterrows()):
            found.append(Anomaly(
                "non_monotonic", small["ci_low"] / big["ci_high"] - 1, str(impl), int(threads), str(pinning),
                (int(big["size_bytes"]), big["mean"], big["ci_low"], big["ci_high"]),
                (int(small["size_bytes"]), small["mean"], small["ci_low"], small["ci_high"]), int(big["size_bytes"]),
            ))
    for (impl, size, pinning), group in summary.groupby(["implementation", "size_bytes", "pinning"]):
        group = group.sort_values("threads")
        if len(group) > 1:
            one, many = group.iloc[0], group.iloc[-1]
            found.append(Anomaly(
                "thread_scaling", one["ci_low"] / many["ci_high"] - 1, str(impl), int(many["threads"]), str(pinning),
                (int(many["threads"]), many["mean"], many["ci_low"], many["ci_high"]),
                (int(one["threads"]), one["mean"], one["ci_low"], one["ci_high"]), int(size),
            ))
    return found


def find_anomaly(sweep: Sweep) -> Anomaly | None:
    """The most surprising stream-throughput result by one score over three kinds of expectation.

    Expectations: the order zero_copy > one_copy > two_copy in the upper half of the tested sizes (log2 scale);
    throughput not falling as messages grow; throughput not falling as threads are added.  The score is the lower
    95% bound of the side that came out higher over the upper bound of the side expected higher, minus one, so it is
    positive only when the intervals do not overlap.
    """
    stream = metric_rows(sweep, THROUGHPUT, workload="stream")
    stream = stream[stream["implementation"].isin(EXPECTED_ORDER)]
    sizes = sorted(int(s) for s in stream["size_bytes"].unique())
    if not sizes:
        return None
    middle = (math.log2(sizes[0]) + math.log2(sizes[-1])) / 2
    large = [s for s in sizes if math.log2(s) >= middle]
    candidates = _ordering_candidates(stream, large) + _curve_candidates(stream)
    candidates = [c for c in candidates if math.isfinite(c.score)]
    return max(candidates, key=lambda c: c.score) if candidates else None


def _explain(sweep: Sweep, anomaly: Anomaly) -> str:
    if anomaly.kind == "ordering_reversal" and anomaly.implementation == "zero_copy":
        counts = zero_copy_counts(sweep)
        copied = f" ({fmt_pct(counts['copied_fraction'])} of completions flagged COPIED here)" if counts else ""
        return (
            "MSG_ZEROCOPY is built for a NIC that reads the pinned pages by DMA. Over a veth pair the packet is "
            "delivered locally, so the kernel must copy the pinned pages before it can hand the data to another "
            f"socket{copied}: the copy is not saved but deferred, and the sender pays on top for pinning the pages "
            "(get_user_pages, page reference counts, memory accounting against optmem_max) and for the completion "
            "notifications it has to read from the error queue. More work per byte means less throughput."
        )
    if anomaly.kind == "ordering_reversal":
        return (
            "With an 8-entry iovec the kernel copies eight separate user buffers: each segment is checked, faulted in "
            "and copied on its own, and each lands in socket-buffer memory at an unaligned offset. The packing memcpy "
            "of two_copy, in contrast, runs on data that is hot in the L1/L2 cache and hands the kernel one "
            "contiguous buffer, a single long copy that the CPU's string-copy instructions handle at full speed. When "
            "the user-space copy is that cheap, the per-segment overhead inside sendmsg() outweighs it."
        )
    if anomaly.kind == "non_monotonic":
        zc = (
            " For zero_copy, the pinned pages of in-flight sends are also charged against optmem_max; once that "
            "runs out, sends fail with ENOBUFS until completions free it."
            if anomaly.implementation == "zero_copy"
            else ""
        )
        return (
            "Larger messages mean fewer system calls per byte, so throughput should not fall. A fall means the larger "
            "message crosses a capacity limit: the message plus its socket-buffer copy no longer fit in the private "
            "L2 cache, so every copy now misses to the shared cache or memory; or a message larger than the socket "
            "send buffer makes the sender block and wait for the receiver, adding context switches and wake-ups."
            + zc
        )
    cores = (sweep.manifest.get("host") or {}).get("cores")
    core_text = f" on {cores} cores" if cores else ""
    return (
        f"More threads than cores{core_text} cannot run in parallel; they time-share the CPUs. Every context switch "
        "costs the scheduler's work and evicts the previous thread's socket buffers and message fields from the L1/L2 "
        "caches; the extra connections also add lock contention on the veth and the receive path (softirq) work "
        "competes with the application threads for the same CPUs."
    )


def answer_q6(sweep: Sweep) -> str:
    """The anomaly chosen by ``find_anomaly``, described with its numbers and explained by kind."""
    anomaly = find_anomaly(sweep)
    if anomaly is None:
        return "The sweep has no stream throughput results to search for unexpected results."
    where = f"{_config_label(anomaly.threads, anomaly.pinning)}, stream"
    exp, obs = anomaly.expected, anomaly.observed
    if anomaly.kind == "ordering_reversal":
        finding = (
            f"At {fmt_size(anomaly.size)} ({where}), {code(str(obs[0]))} reached {fmt_interval(*obs[1:], 'Gbit/s')} "
            f"but {code(str(exp[0]))}, which avoids more copies, only {fmt_interval(*exp[1:], 'Gbit/s')}."
        )
        rule = (
            "the largest reversal of the expected order zero_copy > one_copy > two_copy in the upper half of the "
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
        verdict = (
            f"The 95% intervals do not overlap: the lower bound of the higher result is {fmt_num(1 + anomaly.score)} "
            "times the upper bound of the lower one."
        )
    else:
        verdict = (
            "No candidate had non-overlapping 95% intervals, so this is the closest call, not a significant "
            "anomaly."
        )
    return (
        f"Selection rule: among all stream throughput results, {rule} was the highest-scoring of three kinds of "
        f"broken expectation (ordering, size, thread scaling). {finding} {verdict}\n\n{_explain(sweep, anomaly)}"
    )


def answers(sweep: Sweep) -> list[tuple[str, str]]:
    """(question, Markdown answer) for the six questions, in the assignment's order."""
    bodies = (
        answer_q1(sweep),
        answer_q2(sweep),
        answer_q3(sweep),
        answer_crossover(sweep, "one_copy"),
        answer_crossover(sweep, "zero_copy"),
        answer_q6(sweep),
    )
    return list(zip(QUESTIONS, bodies))


# ---------------------------------------------------------------- limitations


def limitations(sweep: Sweep) -> list[str]:
    """The sweep's limitations as bullet texts, each computed from its data or manifest."""
    items = []
    trials = sweep.trials
    failed = trials[trials["status"] != "ok"]
    if len(failed):
        common = failed["error"].fillna("").astype(str).value_counts()
        items.append(
            f"{len(failed)} of {len(trials)} trials failed and are excluded"
            + (
                f' (most common error: "{md_escape(common.index[0])}", {common.iloc[0]} times)'
                if common.index[0]
                else ""
            )
            + "."
        )
    else:
        items.append(f"All {len(trials)} trials completed; none failed.")
    summary = sweep.summary
    main = summary[
        ((summary["workload"] == "stream") & (summary["metric"] == THROUGHPUT))
        | ((summary["workload"] == "rr") & (summary["metric"] == "latency_mean_us"))
    ]
    main = main[np.isfinite(main["mean"].astype(float))]
    unstable = main[_as_bool(main["unstable"])]
    items.append(
        f"{len(unstable)} of {len(main)} configurations were flagged unstable in their main metric (stream "
        f"throughput or rr latency): coefficient of variation above {fmt_pct(UNSTABLE_CV)} or fewer than "
        f"{MIN_TRIALS} successful trials"
        + (f", the largest CV being {fmt_pct(float(unstable['cv'].max()))}." if len(unstable) else ".")
    )
    n = main["n"]
    if len(n):
        items.append(
            f"Each configuration rests on {fmt_span(str(int(n.min())), str(int(n.max())))} successful trials; "
            "intervals are correspondingly wide."
        )
    perf = sweep.manifest.get("perf") or {}
    unsupported = perf.get("unsupported_events") or {}
    if not perf.get("available", False) or unsupported:
        by_reason: dict[str, list[str]] = {}
        for event, why in unsupported.items():
            by_reason.setdefault(str(why), []).append(event)
        items.append(
            "Hardware counters missing: "
            + (
                "; ".join(f"{', '.join(events)} (perf: {code(why)})" for why, events in by_reason.items())
                or "perf not available"
            )
            + ". Cycles per byte and cache misses cannot be reported; CPU time per byte stands in for them."
        )
    virtualization = virtualised(sweep)
    if virtualization:
        items.append(
            f"The sweep ran inside a container ({virtualization}): other workloads of the machine share its CPUs "
            "and caches."
            if _in_container(virtualization)
            else f"The host is virtualised ({virtualization}): other guests share the physical CPUs and caches, and "
            "CPU time includes time stolen by the hypervisor."
        )
    counts = zero_copy_counts(sweep)
    if counts is not None and counts["copied_fraction"] > 0:
        items.append(
            f"Zero-copy was measured only with local delivery over veth, where {fmt_pct(counts['copied_fraction'])} of "
            "sends were copied by the kernel anyway; results do not carry over to a physical NIC."
        )
    retransmits = metric_rows(sweep, "retransmits")
    with_retransmits = retransmits[retransmits["mean"] > 0]
    if len(with_retransmits):
        split = with_retransmits["pinning"] != "same_cpu"
        text = (
            f"{len(with_retransmits)} of {len(retransmits)} configurations saw TCP retransmits (up to "
            f"{fmt_num(float(with_retransmits['mean'].max()))} per trial on average), which cost throughput and add "
            "noise."
        )
        if split.any():
            text += (
                f" {int(split.sum())} of them ran with the ends free to use different CPUs, where a veth pair "
                "reorders packets and TCP takes the reordering for loss."
            )
        if (~split).any():
            text += (
                f" {int((~split).sum())} ran with both ends on one CPU, where veth does not reorder; this data does "
                "not identify their cause."
            )
        items.append(text)
    if not sweep.manifest.get("complete", True):
        items.append("The sweep did not complete; configurations after the interruption are missing.")
    git = sweep.manifest.get("git") or {}
    if git.get("dirty"):
        items.append("The code had uncommitted changes when the sweep ran, so the commit alone does not reproduce it.")
    return items
