"""The report's glossary: every term of art its body uses that a student may not know, each in one line.

The copies experiment's own words (copylab.report.experiments.copies.glance.GLOSSARY) come first; the words of the
method, the kernel and the other sections are here.  tests/test_report_glossary.py fails when the body uses a listed
term that this glossary lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from copylab.formatting import markdown_table


def _uses(text: str, entry: str) -> bool:
    """Whether TEXT uses the glossary's word ENTRY (its part before any parenthesis): the whole of it, or a name it
    starts with (Fieller, Welch, Holm), in any of its forms ("Holm-corrected", "Welch's")."""
    word = entry.split(" (")[0].strip()
    first = word.split()[0].removesuffix("'s")
    forms = [word, first] if first[:1].isupper() and first[1:].islower() else [word]
    return any(re.search(rf"(?<![\w-]){re.escape(form)}", text, re.IGNORECASE) for form in forms)


TERMS: tuple[tuple[str, str], ...] = (
    (
        "4K aliasing",
        "a CPU taking two addresses for the same one because their low 12 bits (the offset in a 4 KiB page) match; "
        "it slows loads after stores, and here `rep movsb` copies",
    ),
    ("bandwidth-delay product", "a path's throughput times its round trip: the bytes in flight that keep it busy"),
    (
        "copy bound",
        "the throughput an implementation could reach if every copy of each byte ran at single-core memcpy speed",
    ),
    (
        "finding (calibration)",
        "an effect of the copy path itself (a copy routine, a placement) that the copy calibration measures directly",
    ),
    (
        "GSO, TSO",
        "generic and TCP segmentation offload: the stack hands the device one large skb, which software (GSO) or "
        "the device (TSO) cuts into packets",
    ),
    ("ksoftirqd", "the per-CPU kernel thread that runs softirq work when there is too much to run at once"),
    (
        "Little's law",
        "items in a system = their arrival rate x the time each spends there; here a message's time in the system "
        "is threads over messages per second",
    ),
    ("PMU", "performance monitoring unit: the CPU's hardware counters (cycles, cache misses) that perf reads"),
    (
        "settled, decided",
        "a verdict is decided at a size when the Holm-corrected paired test tells the senders apart, and settled "
        "when redraws of its blocks give it again often enough",
    ),
    (
        "block, redraw",
        "one trial of every implementation and receive mode at one setting, run back to back in a random order; "
        "comparisons pair the trials of a block. A redraw resamples the blocks, whole, to see how far an estimate "
        "moves",
    ),
    (
        "band (of a curve)",
        "the range around a fitted curve that holds the true curve at every point at once with the stated "
        "confidence; a verdict is read from where it lies above or below no difference",
    ),
    (
        "equivalent, undecided",
        "equivalent: the band lies within the stated margin of no difference at every point, an answer; "
        "undecided: the band neither leaves no difference nor stays inside the margin, so more blocks are needed",
    ),
    ("bootstrap interval", "an interval from recomputing an estimate on data redrawn with replacement (here: blocks)"),
    (
        "covariate",
        "a quantity recorded beside each trial (the host's speed around it, its block) that may explain part of "
        "the spread between identical trials",
    ),
    ("CV", "coefficient of variation: the standard deviation of a metric over its trials, divided by their mean"),
    (
        "floor (the host's)",
        "the round trip of a minimal ping-pong, measured before a servers sweep's trials: what any server costs "
        "at least on this host",
    ),
    ("iovec", "an array of (address, length) pairs naming the pieces of one message for a single sendmsg() call"),
    ("MAX_SKB_FRAGS", "the most page fragments one skb may hold (17 in a default kernel build)"),
    (
        "memcpy as linked",
        "the memcpy the C programs call: the C library's, which picks a copy routine for the CPU when it loads",
    ),
    (
        "MSG_SPLICE_PAGES",
        "the kernel's own send flag for sendfile and splice: the pages are attached to the skb by reference, "
        "not copied",
    ),
    (
        "optmem_max",
        "net.core.optmem_max: the option memory a socket may hold; a MSG_ZEROCOPY send's completion records are "
        "charged to it",
    ),
    ("page cache", "the kernel's copy of file contents in memory, which read() and sendfile() serve from"),
    ("percentile (99th, p99)", "the value that 99% of the measured round trips stay below"),
    (
        "pinning (CPU, page)",
        "two meanings: CPU pinning (same_cpu, split_cpu) fixes the CPUs a process runs on; page pinning is the "
        "kernel holding user pages in memory while a zero-copy send references them",
    ),
    (
        "qdisc, blackhole",
        "queueing discipline: the kernel's queue in front of a network device; the blackhole one drops every packet",
    ),
    (
        "random effect",
        "a term of a statistical model that varies at random between groups (here: blocks) and shifts every "
        "trial of a group alike",
    ),
    (
        "same_cpu, split_cpu",
        "the CPU pinnings: both ends on one CPU (CPU 0), or each end on a CPU of its own (taskset)",
    ),
    ("scatter-gather", "a device's ability to send one packet from several pieces of memory, pages among them"),
    ("softirq", "the kernel's deferred interrupt work, where received packets are processed"),
    (
        "stream, rr",
        "the two workloads: stream sends messages back to back (throughput); rr, request/response, sends one "
        "request at a time and waits for its response (latency)",
    ),
    ("UDP_SEGMENT", "a UDP socket option: the kernel splits one send into datagrams of the size it names"),
    ("Welch's t-test", "a t-test of two means that does not assume equal variances, used where trials are unpaired"),
)


def glossary(experiment_terms: Iterable[tuple[str, str]] = (), used: str = "") -> str:
    """The glossary as one table, in alphabetical order: EXPERIMENT_TERMS (the main experiment's words) and TERMS,
    whose entry replaces an experiment's for the same word; given the report's text USED, only the entries one of
    whose words it uses."""
    ours = {word for entry, _ in TERMS for word in entry.split(", ")}
    theirs = [(word, meaning) for word, meaning in experiment_terms if word not in ours]
    entries = sorted([*theirs, *TERMS], key=lambda entry: entry[0].lower())
    if used:
        entries = [entry for entry in entries if any(_uses(used, word) for word in entry[0].split(", "))]
    return markdown_table({"Word": word, "Meaning": meaning} for word, meaning in entries)
