"""Question 3: how thread count interacts with cache contention."""

from __future__ import annotations

from copylab.experiments.copies.queries import choose_focus, study
from copylab.formatting import (
    code,
    fmt_change,
    fmt_num,
    fmt_size,
    markdown_table,
)
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
