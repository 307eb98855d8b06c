"""The copies experiment's front of the report: the answers at a glance, Part B (what was measured, on which side,
in which window) and Part C (the one command and the files it writes), and the glossary at the back.

The answers at a glance are each answer's summary, in words of its own, and how sure it is
(copylab.report.answer.Answer), so the page does not repeat Part E's claims."""

from __future__ import annotations

from collections.abc import Mapping

from copylab.analysis.curve_model import EQUIVALENCE_MARGIN, SURE
from copylab.analysis.stats import IMPRECISE
from copylab.declarations.schema import COLUMN_NAMES
from copylab.formatting import code, fmt_pct, markdown_table
from copylab.record.tables import CONFIG_KEYS
from copylab.report.experiments.copies import answers
from copylab.report.results import Results, every_trial

# Where each question's evidence is, in the order of answers.QUESTIONS.
EVIDENCE = (
    "the throughput figure of Part D and the ratio table under question 1",
    "the cache-miss figure of Part D (or what it draws in its place) and question 2",
    "the latency figure of Part D and the table under question 3",
    "the throughput figure of Part D and crossovers.csv",
    "the throughput figure of Part D and crossovers.csv",
    "the table under question 6 and the appendix *What the message's layout costs*",
)
# Questions 2 and 3 where the report has the sweeps designed for them
# (copylab.report.experiments.copies.report.companion).
COMPANION_EVIDENCE = {
    "caches": "the figure of the eliminated copy by cache level and the table under question 2",
    "threads": "the figure of CPU per byte against threads and question 3",
}


def at_a_glance(results: Results, companions: Mapping[str, Results] | None = None) -> str:
    """Each Part E question, its answer in a few words of its own (the full claim is in Part E), how sure it is and
    where the evidence is, from the main sweep and the sweeps COMPANIONS holds beside it (question 2's grid,
    question 3's threads, question 5's sink)."""
    companions = companions or {}
    evidence = list(EVIDENCE)
    if companions.get("sink") is not None:
        evidence[4] += ", and for the sink the appendix *Where copying less pays*"
    for number, kind in ((2, "caches"), (3, "threads")):
        if companions.get(kind) is not None:
            evidence[number - 1] = COMPANION_EVIDENCE[kind]
    items = [
        f"{number}. **{question}** {_capital(answer.summary or 'see the full answer in Part E.')}"
        + (f" *How sure:* {answer.sure}" if answer.sure else "")
        + f" *Evidence:* {evidence[number - 1]}."
        for number, (question, answer) in enumerate(answers.answers(results, companions), start=1)
    ]
    return (
        "The study's six questions (Part E) and this sweep's answers in brief, each with how sure it is. Part E "
        "argues each in five parts: the claim, the numbers, the mechanism, its test and the limits. A comparison "
        "along size is *decided* when one model of the whole curve, fitted to every block, places a crossover, "
        "finds one option better wherever the two differ, or finds them within "
        f"±{EQUIVALENCE_MARGIN:.0%} of each other everywhere (*equivalent*); it is *sure* when at least {SURE:.0%} "
        "of simulated second runs reach the same verdict.\n\n" + "\n".join(items)
    )


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _counted(results: Results, events: tuple[str, ...]) -> str:
    perf = results.manifest.perf
    if perf is not None and perf.available and all(event in perf.supported_events for event in events):
        return "perf stat, on each end"
    return "not countable on this host (see Limitations); CPU time stands in"


def part_b(results: Results) -> str:
    """What each metric is, on which side it is measured and over which window."""
    window = "the measured window only"
    rows = [
        ("Throughput (Gbit/s)", "client (receiver)", "bytes all client threads received, over the window's length"),
        ("Latency (µs)", "client", "round trip of each request of the request/response workload: mean, 99th pct"),
        ("CPU cycles", "both ends", _counted(results, ("cycles",))),
        (
            "L1 and last-level cache misses",
            "both ends",
            _counted(results, ("L1-dcache-load-misses", "LLC-load-misses")),
        ),
        ("Context switches", "both ends", "getrusage, voluntary and involuntary"),
        ("CPU time (user, system)", "both ends", "getrusage"),
    ]
    table = markdown_table({"Metric": m, "Side": side, "How": how, "When": window} for m, side, how in rows)
    return (
        "The server sends and the client receives; the variants differ only on the sending side, so every counter "
        "is taken on both ends and reported per side (`snd_` and `rcv_` columns). perf is enabled only inside the "
        "window, through its control fifo: start-up, warm-up and teardown are not counted.\n\n" + table
    )


def part_c(results: Results) -> str:
    """The one command and the files it writes, with this sweep's counts."""
    trials = every_trial(results)
    configurations = len(trials[list(CONFIG_KEYS)].drop_duplicates())
    directory = results.store.directory.name
    rows = len(results.store.read_table("summary"))
    privilege = (
        "this sweep ran without root, its namespaces inside a user namespace"
        if results.manifest.privilege == "user-namespace"
        else "this sweep ran as root, which creates the namespaces directly (without root, copylab creates them "
        "inside a user namespace)"
    )
    return (
        f"One command, `./inv report`, compiles the C programs, runs every sweep the two experiments declare for "
        "the report (each one's quick sweep; for the copies experiment also the sink and the receiver's side), "
        f"analyses them and writes this report, with no manual step; {privilege}. This sweep's files, in "
        f"`data/{directory}/`:\n\n"
        f"- {code('trials.csv')}: one row per trial, {len(trials):,} rows of {len(COLUMN_NAMES)} columns;\n"
        f"- {code('summary.csv')}: the study's one CSV of results, a row per configuration and metric "
        f"({rows:,} rows over {configurations:,} configurations), each with its mean and 95% interval;\n"
        f"- {code('manifest.json')}: the host, the toolchain, every setting and the calibration, so that the sweep "
        "can be measured again (the appendix *Reproducing this report* gives the command)."
    )


GLOSSARY = (
    (
        "block",
        "one trial of every implementation, in each of its receive modes and layouts, at one setting, run back to "
        "back; comparisons pair trials within it",
    ),
    ("configuration", "one implementation at one setting: message size, threads, pinning, receive mode, layout"),
    ("crossover", "the message size from which one sender is significantly better than another"),
    ("Fieller interval", "a confidence interval for a ratio of two means"),
    ("Holm correction", "adjusts p-values for testing many sizes at once, so that few false verdicts slip through"),
    ("LLC", "last-level cache: the largest cache, shared by the cores"),
    ("MSG_ZEROCOPY", "a send flag: the kernel pins the user pages instead of copying them, and reports completion"),
    ("MTU", "the largest packet a device sends whole; it decides how much payload a TCP segment carries"),
    ("namespace, veth", "an isolated copy of the network stack; a virtual cable joining two of them"),
    ("rep movsb", "the x86 string-copy instruction that memcpy uses for many sizes"),
    ("sink", "a virtual device that drops the sender's datagrams once the kernel has built them: no wire, no receiver"),
    ("skb", "socket buffer: the kernel's structure holding a packet's data"),
    ("trial, window", "one fresh server and client process; the measured part of it, after a warm-up"),
    ("unstable", f"a mean whose 95% interval reaches more than {fmt_pct(IMPRECISE)} either side of it"),
)
