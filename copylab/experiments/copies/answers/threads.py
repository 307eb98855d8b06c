"""Question 3: how thread count interacts with cache contention."""

from __future__ import annotations

from copylab.experiments.copies.queries import choose_focus, study
from copylab.formatting import (
    code,
    fmt_change,
    fmt_num,
    fmt_size,
    fmt_span,
    markdown_table,
)
from copylab.measure.spec import cpus_for
from copylab.report.prose import value_interval
from copylab.report.results import THROUGHPUT, Results, measured, metric_rows, value


def answer_q3(results: Results) -> str:
    """Thread count against throughput, CPU per byte, context switches and (if measured) cache misses."""
    focus = choose_focus(results)
    stream = metric_rows(results, THROUGHPUT, workload="stream", pinning=focus.pinning)
    threads = sorted(int(t) for t in stream["threads"].unique())
    hi = threads[-1]
    llc = measured(results, "snd_llc_misses_per_kib")
    rows, sentences = [], []
    changes: list[Change] = []
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
                "Throughput, Gbit/s": value_interval(values[(THROUGHPUT, t)]),
                "CPU ns/byte": value_interval(values[("cpu_ns_per_byte", t)]),
                "Context switches/msg": value_interval(values[("ctx_switches_per_msg", t)]),
            }
            if llc:
                row["Sender LLC misses/KiB"] = value_interval(values[("snd_llc_misses_per_kib", t)])
            rows.append(row)
        throughput = {t: found for t in threads if (found := values[(THROUGHPUT, t)]) is not None}
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
    intro = f"{_conclusion(changes, threads[0], hi)}\n\nAt {fmt_size(focus.size)} per message (stream, pinning "
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
