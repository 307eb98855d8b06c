"""The report's answer sentences, on small hand-made analysis tables with known numbers."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from copylab import formatting
from copylab.analysis.stats import trials_for_precision
from copylab.calibration.record import CacheLevel, Calibration, CopyCost, CopyFinding, copy_cost_at
from copylab.errors import CopylabError
from copylab.formatting import fmt_bytes, fmt_duration, fmt_interval, fmt_num, fmt_pct, fmt_size
from copylab.record.manifest import Manifest
from copylab.record.origin import Origin
from copylab.record.store import SweepStore
from copylab.report import sections
from copylab.report.experiments.copies import answers, captions, figures
from copylab.report.experiments.copies.basics.anomaly import answered_by_q1, find_anomaly
from copylab.report.experiments.copies.basics.queries import Focus, choose_focus
from copylab.report.experiments.copies.glance import at_a_glance
from copylab.report.results import Results, measured_sizes

SIZES = [64, 1024, 4096, 16384, 65536]
THREADS = [1, 4]
# stream throughput in Gbit/s per size: two_copy fastest at large sizes, as measured over veth
THROUGHPUT = {
    "two_copy": [0.55, 5.0, 12.0, 20.0, 26.0],
    "one_copy": [0.40, 4.2, 16.0, 18.0, 24.0],
    "zero_copy": [0.26, 1.7, 9.0, 15.0, 20.0],
}
UNSUPPORTED = {event: "<not supported>" for event in ("cycles", "L1-dcache-load-misses", "LLC-load-misses")}
CROSSOVER = (5792.6, 4100.2, 8191.0)


def _summary_row(impl, workload, size, threads, metric, mean, unstable=False):
    half = 0.03 * abs(mean) if np.isfinite(mean) else np.nan
    return {
        "implementation": impl,
        "workload": workload,
        "size_bytes": size,
        "threads": threads,
        "connections": threads,
        "pinning": "same_cpu",
        "receive": "copy",
        "metric": metric,
        "n": 5,
        "n_failed": 0,
        "mean": mean,
        "std": half,
        "cv": 0.02,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "unstable": unstable,
    }


def make_sweep(
    *,
    counters: bool = False,
    status: str = "crossover",
    throughput: dict[str, list[float]] = THROUGHPUT,
    miss_gain: tuple[float, float] = (0.4, 0.1),
    failed: int = 0,
    copied: float = 1.0,
) -> Results:
    """A sweep whose tables follow the contract; ``miss_gain`` = one_copy's (L1, LLC) miss reduction."""
    summary, comparisons, trials = [], [], []
    means: dict[tuple, float] = {}
    for impl, curve in throughput.items():
        for i, size in enumerate(SIZES):
            for threads in THREADS:
                tp = curve[i] * (1.0 if threads == 1 else 0.8)
                l1 = {"two_copy": 100.0}.get(impl, 100.0 * (1 - miss_gain[0])) if counters else np.nan
                llc = {"two_copy": 20.0}.get(impl, 20.0 * (1 - miss_gain[1])) if counters else np.nan
                values = {
                    "throughput_gbps": tp,
                    "cpu_ns_per_byte": 8 / tp,
                    "snd_cpu_ns_per_byte": 4 / tp,
                    "ctx_switches_per_msg": 0.01 * threads,
                    "retransmits": 0.0,
                    "snd_l1d_misses_per_kib": l1,
                    "snd_llc_misses_per_kib": llc,
                    # the mean of the trials' snd_cpu_user_s below over 1e9 bytes
                    "snd_user_ns_per_byte": {"two_copy": 0.52}.get(impl, 0.22),
                }
                if impl == "zero_copy":
                    values["zc_copied_fraction"] = copied
                for metric, mean in values.items():
                    summary.append(_summary_row(impl, "stream", size, threads, metric, mean))
                    means[(impl, size, threads, metric)] = mean
                for rep in (1, 2, 3):
                    sends = 1000.0
                    trials.append(
                        {
                            "implementation": impl,
                            "workload": "stream",
                            "size_bytes": size,
                            "threads": threads,
                            "connections": threads,
                            "pinning": "same_cpu",
                            "receive": "copy",
                            "repetition": rep,
                            "status": "ok",
                            "error": np.nan,
                            "bytes": 1e9,
                            "snd_cpu_user_s": {"two_copy": 0.5}.get(impl, 0.2) + 0.01 * rep,
                            "zc_sends": sends if impl == "zero_copy" else np.nan,
                            "zc_completed": sends if impl == "zero_copy" else np.nan,
                            "zc_copied": sends * copied if impl == "zero_copy" else np.nan,
                            "zc_notifications": 50.0 if impl == "zero_copy" else np.nan,
                        }
                    )
        for threads in THREADS:
            summary.append(_summary_row(impl, "rr", 64, threads, "latency_mean_us", 20.0 * threads, threads > 1))
    for k in range(failed):
        trials.append(
            {
                **trials[0],
                "repetition": 10 + k,
                "status": "failed",
                "error": "server did not start",
                "bytes": np.nan,
                "snd_cpu_user_s": np.nan,
            }
        )
    for challenger in ("one_copy", "zero_copy"):
        for metric in ("throughput_gbps", "snd_l1d_misses_per_kib", "snd_llc_misses_per_kib"):
            for size in SIZES:
                for threads in THREADS:
                    ratio = means[(challenger, size, threads, metric)] / means[("two_copy", size, threads, metric)]
                    significant = bool(np.isfinite(ratio) and abs(math.log(ratio)) > 0.05)
                    higher = metric == "throughput_gbps"
                    comparisons.append(
                        {
                            "workload": "stream",
                            "threads": threads,
                            "connections": threads,
                            "pinning": "same_cpu",
                            "metric": metric,
                            "size_bytes": size,
                            "challenger": challenger,
                            "baseline": "two_copy",
                            "ratio": ratio,
                            "ratio_ci_low": ratio * 0.96,
                            "ratio_ci_high": ratio * 1.04,
                            "p_value": 0.001,
                            "p_holm": 0.004 if significant else 0.5,
                            "significant": significant,
                            "challenger_better": significant and (ratio > 1) == higher,
                        }
                    )
    crossovers = []
    for challenger in ("one_copy", "zero_copy"):
        for threads in THREADS:
            # zero_copy never wins in this fixture; one_copy carries the status under test
            row_status = status if challenger == "one_copy" else "challenger_never_better"
            value = CROSSOVER if row_status == "crossover" else (np.nan, np.nan, np.nan)
            crossovers.append(
                {
                    "axis": "size_bytes",
                    "workload": "stream",
                    "size_bytes": pd.NA,
                    "threads": threads,
                    "connections": threads,
                    "pinning": "same_cpu",
                    "metric": "throughput_gbps",
                    "challenger": challenger,
                    "baseline": "two_copy",
                    "status": row_status,
                    "crossover_at": value[0],
                    "ci_low": value[1],
                    "ci_high": value[2],
                    "first_significant_at": 4096 if row_status in ("crossover", "challenger_always_better") else np.nan,
                    **_model_columns(row_status),
                }
            )
    manifest = Manifest.from_dict(
        {
            "sweep": "fixture",
            "profile": "custom",
            "host": {
                "hostname": "h",
                "kernel": "6.1",
                "cpu_model": "cpu",
                "cores": 2,
                "memory_gib": 4.0,
                "virtualization": "kvm" if not counters else "none",
            },
            "toolchain": {"gcc": "12", "perf": "6", "python": "3.11", "packages": {}},
            "parameters": {
                "implementations": list(throughput),
                "workloads": ["stream", "rr"],
                "sizes": SIZES,
                "rr_sizes": [64],
                "pinning": ["same_cpu"],
                "threads": THREADS,
                "trials": 3,
            },
            "perf": {
                "available": True,
                "supported_events": ["task-clock"],
                "unsupported_events": {} if counters else UNSUPPORTED,
            },
            "git": {"commit": "abc", "dirty": False},
            "complete": True,
        }
    )
    return Results(
        "fixture",
        manifest,
        pd.DataFrame(trials),
        pd.DataFrame(summary),
        pd.DataFrame(comparisons),
        pd.DataFrame(crossovers),
        SweepStore(Path("fixture")),
        Origin.of(manifest, "ab" * 32),
    )


def _model_columns(status: str) -> dict[str, object]:
    """crossovers.csv's model columns for a row of STATUS: the model's statuses with what it says of them, the per-size
    check's alone as an unpaired sweep leaves them."""
    modelled = status in ("equivalent", "undecided")
    return {
        "lack_of_fit_p": 0.4 if modelled else np.nan,
        "replication": 0.95 if status == "equivalent" else np.nan,
        "sure": status == "equivalent",
        "largest_difference": 0.021 if modelled else np.nan,
        "more_blocks": 24.0 if modelled else np.nan,
        "decide_at": 16384.0 if modelled else np.nan,
        "tested_status": "indistinguishable" if modelled else status,
    }


def _in_container(sweep: Results) -> Results:
    host = dataclasses.replace(sweep.manifest.host, virtualization="docker")
    return dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, host=host))


def test_formatting_is_exact():
    assert fmt_num(26.04) == "26.0" and fmt_num(0.01234) == "0.0123" and fmt_num(1234.5) == "1,234"
    assert fmt_size(65536) == "64 KiB" and fmt_size(64) == "64 B" and fmt_size(3000) == "3,000 B"
    assert fmt_bytes(5792.6) == "5,793 B" and fmt_bytes(640.2) == "640 B"
    assert formatting.fmt_p(0.00002) == "<0.001" and formatting.fmt_p(0.0123) == "0.0123"
    assert fmt_interval(1.0, 0.5, 1.5, "ns") == "1.00 [0.500, 1.50] ns"
    assert fmt_pct(0.973) == "97.3%"
    assert formatting.fmt_span("3", "3") == "3" and formatting.fmt_span("3", "5") == "3 to 5"
    # a table that fits a line: its separator no longer than its rows, so pandoc sets the columns at their widths
    # A column of numbers is set flush right (a colon ends its rule), one of text flush left.
    assert formatting.markdown_table([{"a": 1, "b": "x|y"}]) == "| a | b |\n|--:|----|\n| 1 | x\\|y |"
    sizes = formatting.markdown_table([{"s": "64\u00a0KiB", "r": "1.03 [0.9, 1.1]"}, {"s": "—", "r": "2.5%"}])
    assert sizes.splitlines()[1] == "|-----:|---------------|"
    wide = formatting.markdown_table([{"a": "`" + "x" * 12 + "`", "b": "y " * 50, "c": "9.99 [1.00, 10.0] µs"}])
    dashes = [len(part) for part in wide.splitlines()[1].strip("|").split("|")]
    assert sum(dashes) == formatting.WIDE_TABLE_DASHES  # wider than a line: fills the text width
    # every column gets at least its longest unbreakable run: the code span, the interval (kept whole)
    assert dashes[0] / sum(dashes) >= 12 / formatting.LINE_CHARACTERS
    assert dashes[2] / sum(dashes) >= len("[1.00, 10.0]") / formatting.LINE_CHARACTERS
    assert "[1.00,\u00a010.0]" in wide.splitlines()[2]
    # more whole intervals than a line holds: two tables, each led by the first column; a ratio keeps its 'x'
    ratios = formatting.markdown_table([{"m": "`epoll`", **{f"r{k}": f"1.0{k} [0.9{k}, 1.1{k}] x" for k in range(8)}}])
    parts = ratios.split("\n\n")
    assert len(parts) == 2 and all(part.startswith("| m | r") for part in parts)
    assert "1.07 [0.97,\u00a01.17]\u00a0x" in parts[1]
    assert formatting.md_escape("<not supported> a_b") == "\\<not supported\\> a\\_b"


def test_focus_is_first_pinning_fewest_threads_largest_common_size():
    assert choose_focus(make_sweep()) == Focus("same_cpu", 1, 65536)


def test_crossover_statement_names_size_and_interval_from_crossovers_csv():
    text = answers.answer_crossover(make_sweep(status="crossover"), "one_copy", "two_copy")
    for value in CROSSOVER:
        assert fmt_bytes(value) in text
    assert "outperforms `two_copy` above about **5,793 B** (5.66 KiB; 95% CI 4,100 B to 8,191 B)" in text
    assert "From 4 KiB upward it is significantly better" in text
    assert text.count("- With") == len(THREADS) and "1 thread, CPU pinning `same_cpu`" in text


@pytest.mark.parametrize(
    ("status", "phrase"),
    [
        (
            "challenger_always_better",
            "outperforms `two_copy` at every size where they differ significantly, tested from 64 B to 64 KiB",
        ),
        ("challenger_never_better", "never outperforms `two_copy` within the tested range of 64 B to 64 KiB"),
        ("indistinguishable", "are indistinguishable: no size from 64 B to 64 KiB"),
        # the fixture's one_copy is better only at 4 KiB (16 vs 12 Gbit/s) and worse elsewhere
        ("multiple_crossings", "significantly better at 4 KiB and significantly worse at 64 B, 1 KiB, 16 KiB, 64 KiB"),
    ],
)
def test_crossover_statuses_without_a_crossover_are_stated_honestly(status, phrase):
    text = answers.answer_crossover(make_sweep(status=status), "one_copy", "two_copy")
    assert phrase in text
    assert "95% CI" not in text.split("\n", 1)[1]


@pytest.mark.parametrize(
    ("status", "short", "full", "glanced"),
    [
        (
            "equivalent",
            "**equivalent** at every size from 64 B to 64 KiB: within ±3%",
            "2.1% either way",
            "equivalent (within ±3%) with 1 thread",
        ),
        (
            "undecided",
            "**undecided** from 64 B to 64 KiB: about 24 more blocks, most near 16 KiB",
            "would decide it",
            "undecided (about 24 more blocks near 16 KiB) with 1 thread",
        ),
    ],
)
def test_question_4_says_equivalent_or_undecided_with_the_margin_or_what_would_decide_it(status, short, full, glanced):
    answer = answers.answers(make_sweep(status=status))[3][1]
    assert short in answer.claim and "with 1 thread" in answer.claim and "with 4 threads" in answer.claim
    assert full in answer.markdown()
    glance = at_a_glance(make_sweep(status=status))
    fourth = next(line for line in glance.splitlines() if line.startswith("4. "))
    assert glanced in fourth  # answer 4 on the glance page says it too, in words of its own


def test_unknown_crossover_status_is_an_error():
    sweep = make_sweep()
    sweep.crossovers.loc[0, "status"] = "maybe"
    with pytest.raises(CopylabError, match="unknown status 'maybe'"):
        answers.answer_crossover(sweep, "one_copy", "two_copy")


def test_q5_zero_copy_never_better_and_q4_q5_listed_in_order():
    pairs = answers.answers(make_sweep())
    assert [q for q, _ in pairs] == list(answers.QUESTIONS)
    assert "`zero_copy` never outperforms" in pairs[4][1].markdown()


def test_q1_uses_copied_fraction_notifications_and_ratios():
    text = answers.answer_q1(make_sweep(copied=0.75))
    assert "75.0% of 30,000 completed zero-copy sends" in text
    assert "copied anyway on delivery" in text
    assert "0.0500 error-queue notifications" in text
    ratio = 20.0 / 26.0
    assert f"| 64\u00a0KiB | {fmt_num(ratio)} | [{fmt_num(ratio * 0.96)},\u00a0{fmt_num(ratio * 1.04)}]" in text
    assert "significantly faster at 0 of 5 sizes, significantly slower at 5" in text
    # CPU per byte at the smallest and largest size, both implementations
    assert fmt_num(8 / 20.0) in text and fmt_num(8 / 0.55) in text


def test_q1_when_the_kernel_did_not_copy():
    assert "most sends really avoided the copy" in answers.answer_q1(make_sweep(copied=0.1))


def test_q2_without_counters_says_not_measurable_and_why():
    text = answers.answer_q2(make_sweep(counters=False))
    assert text.startswith("**Claim.** Not answered here: this host cannot count cache misses")
    assert (
        "Not measurable on this host, because the hardware counters are not supported "
        "(perf reports `<not supported>` for L1-dcache-load-misses, LLC-load-misses)"
    ) in text
    assert "the host is a virtual machine (kvm)" in text
    assert "largest reduction" not in text
    assert "no copy cost by cache level either" in text


def _calibrated(sweep: Results, memory_ns: float) -> Results:
    levels = [CacheLevel("L1d", 48 << 10, "0"), CacheLevel("L2", 1 << 20, "0"), CacheLevel("L3", 32 << 20, "0-1")]
    costs = [
        CopyCost("L1d", 12 << 10, 0.007),
        CopyCost("L2", 512 << 10, 0.008),
        CopyCost("L3", 16 << 20, 0.017),
        CopyCost("memory", 1 << 28, memory_ns),
    ]
    record = Calibration(128, 7, 100.0, 32 << 20, "0", levels, costs)
    return dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, calibration=record))


def test_q2_without_counters_derives_an_answer_from_the_calibration():
    sweep = _calibrated(make_sweep(counters=False), memory_ns=0.12)
    text = answers.answer_q2(sweep)
    short, _, rest = text.partition("\n\n")
    level = short.removeprefix("**Claim.** ").split(",")[0]
    assert rest.startswith("**Numbers.** Not measurable on this host") and level in ("L1d", "L2", "L3", "memory")
    # one answer: the level named in short is the one the derivation names, and no other is said to gain most
    assert f"gains most from one copy less is {level}" in rest or f"works inside {level}" in rest
    assert "saves most" not in text
    assert "Derived from the copy counts and the calibration, not from miss counters" in text
    sizes = measured_sizes(sweep)
    largest = max(sizes)
    region = copy_cost_at(sweep.manifest.calibration, 2 * largest).region
    assert f"{fmt_size(largest)}: {region}" in text
    assert f"Beyond the last-level cache a copied byte costs {fmt_num(0.12)} ns" in text
    figure = figures.cache_figure(sweep.summary, sweep.manifest, "setup", 0.95)
    assert len(figure.axes) == 1 and len(figure.axes[0].lines) >= 4, "the calibration is drawn, not an empty frame"
    assert "Drawn instead: the calibrated cost of copying one byte" in captions.cache_misses_vs_size(
        sweep, choose_focus(sweep)
    )


def _with_finding(sweep: Results) -> Results:
    """The calibration of a host whose memcpy takes a slow rep movsb path for copies of 4 to 256 KiB."""
    finding = CopyFinding("string_instruction", "memcpy", 16, 4 << 10, 256 << 10, 30.0, 0.6, 0.02, "memcpy_vector")
    record = dataclasses.replace(sweep.manifest.calibration, findings=[finding], cpu_flags=["erms", "fsrm"])
    return dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, calibration=record))


def test_q2_names_no_level_from_an_inconsistent_calibration():
    sweep = _calibrated(make_sweep(counters=False), memory_ns=0.12)
    record = dataclasses.replace(sweep.manifest.calibration, inconsistent="its rounds disagree")
    sweep = dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, calibration=record))
    text = answers.answer_q2(sweep)
    assert "it is inconsistent (its rounds disagree), so no cache level is derived from it, and none is named" in text
    claimed = text.split("**Mechanism.**")[0]
    assert "gains most" not in claimed and "L1d" not in claimed


def test_q2_names_no_level_for_sizes_whose_removed_copy_a_finding_touches():
    sweep = _with_finding(_calibrated(make_sweep(counters=False), memory_ns=0.12))
    text = answers.answer_q2(sweep)
    sizes = measured_sizes(sweep)
    touched = [size for size in sizes if 4 << 10 <= size // 8 <= 256 << 10]
    assert touched, "the fixture has sizes whose 8 fields the finding covers"
    assert f"At {', '.join(fmt_size(size) for size in touched)} the removed copy (memcpy of" in text
    assert "`rep movsb`" in text and "not by a cache level, so those sizes name none" in text
    for size in touched:
        assert f"{fmt_size(size)}: L" not in text


def test_q6_reports_the_copy_path_finding_before_any_throughput_anomaly():
    sweep = _with_finding(_calibrated(make_sweep(counters=False), memory_ns=0.12))
    text = answers.answer_q6(sweep)
    assert text.startswith("**Claim.** On this host, glibc's memcpy copies")
    assert "**Numbers.** Selection rule: a copy that costs more than twice another way" in text
    assert "`two_copy` makes such copies" in text and "`rep movsb`" in text
    assert "sender's user-space CPU time per byte there" in text
    assert "**Numbers.** Selection rule: among all stream throughput results" in answers.answer_q6(make_sweep())


@pytest.mark.parametrize(("gain", "level"), [((0.4, 0.1), "L1 data cache"), ((0.1, 0.5), "last-level cache")])
def test_q2_with_counters_names_the_level_with_the_largest_reduction(gain, level):
    text = answers.answer_q2(make_sweep(counters=True, miss_gain=gain))
    assert text.startswith(f"**Claim.** The {level} shows the largest reduction")
    assert f"{fmt_pct(max(gain))} fewer sender misses per KiB" in text
    assert "Not measurable" not in text


def test_q3_reports_thread_scaling_numbers_and_missing_counters():
    text = answers.answer_q3(make_sweep())
    # two_copy at 64 KiB: 26.0 Gbit/s with 1 thread, 20.8 with 4
    assert "- `two_copy`, 1 to 4 threads: throughput 26.0 to 20.8 Gbit/s (-20.0%)" in text
    assert text.startswith("**Claim.** From 1 to 4 threads every implementation spent more CPU time per byte")
    assert answers.q3(make_sweep()).sure.startswith("decided; in each of the 3 implementations")
    # every thread was pinned to CPU 0: they take turns on one CPU, whatever the host's cores
    assert "Every thread of both ends was pinned to CPU 0" in text and "cores" not in text.split("**Limits.**")[0]
    assert "not measurable on this host" in text
    assert "Sender LLC misses/KiB" not in text
    assert "Sender LLC misses/KiB" in answers.answer_q3(make_sweep(counters=True))


def test_q6_finds_the_zero_copy_reversal_in_the_fixture():
    sweep = make_sweep()
    anomaly = find_anomaly(sweep)
    assert anomaly.kind == "ordering_reversal" and anomaly.implementation == "zero_copy"
    # largest gap in the upper half of sizes: one_copy 16 vs zero_copy 9 Gbit/s at 4 KiB, each +-3%
    assert anomaly.observed[0] == "one_copy" and anomaly.size == 4096
    assert anomaly.score == pytest.approx(16 * 0.97 / (9 * 1.03) - 1)
    # question 1 explains zero-copy's losses: question 6 picks the most surprising result beyond them
    text = answers.answer_q6(sweep)
    beyond = find_anomaly(sweep, beyond_q1=True)
    assert beyond is not None and not answered_by_q1(sweep, beyond)
    assert "left to question 1" in text and "`one_copy` reached 16.0 [15.5, 16.5] Gbit/s" not in text
    assert "How sure: " in text


def test_q6_prefers_a_bigger_drop_in_a_curve():
    curves = {
        "two_copy": [0.5, 5.0, 12.0, 20.0, 26.0],
        "one_copy": [0.6, 6.0, 14.0, 24.0, 30.0],
        "zero_copy": [0.7, 7.0, 16.0, 80.0, 32.0],  # falls 80 -> 32 from 16 KiB to 64 KiB
    }
    anomaly = find_anomaly(make_sweep(throughput=curves))
    assert anomaly.kind == "non_monotonic" and anomaly.implementation == "zero_copy"
    assert anomaly.observed[0] == 16384 and anomaly.expected[0] == 65536
    assert "fell from" in answers.answer_q6(make_sweep(throughput=curves))


def test_q6_without_significant_anomaly_says_so():
    flat = {name: [1.0] * len(SIZES) for name in THROUGHPUT}
    sweep = make_sweep(throughput=flat)
    sweep.summary.loc[sweep.summary["metric"] == "throughput_gbps", ["ci_low", "ci_high"]] = (0.5, 1.5)
    assert "not a significant anomaly" in answers.answer_q6(sweep)


def test_limitations_are_counted():
    text = sections.limitations(make_sweep(failed=2))
    total = len(SIZES) * len(THREADS) * 3 * 3 + 2
    assert f"2 of {total} trials failed" in text and '"server did not start", 2 times' in text
    # 3 implementations x (5 sizes x 2 thread counts + 2 rr configurations); rr with 4 threads is unstable
    assert "3 of 36 configurations (every receive mode, in the study's message layout) were flagged unstable" in text
    assert "reached a CV of 2.0%" in text
    assert "virtualised (kvm)" in text
    assert "cycles, L1-dcache-load-misses, LLC-load-misses (perf: `<not supported>`)" in text
    assert "the kernel copied 100.0% of zero-copy sends on local delivery" in text
    assert "measured only with local delivery" not in text  # the sink, when given, measures them uncopied
    assert "No sweep behind a sink was given" in text


def test_limitations_say_how_many_trials_the_unstable_means_need_and_how_long():
    sweep = make_sweep()
    main = (sweep.summary["metric"] == "throughput_gbps") & (sweep.summary["size_bytes"] == SIZES[0])
    sweep.summary.loc[main, ["n", "cv", "unstable"]] = (3, 0.2, True)
    flagged = int(main.sum())
    needed = trials_for_precision(0.2)
    t = st.t.ppf(0.975, [needed - 2, needed - 1])
    assert t[1] * 0.2 / np.sqrt(needed) <= 0.1 < t[0] * 0.2 / np.sqrt(needed - 1)  # the fewest that do
    ten_minutes = {"started_at": "2026-01-01T00:00:00+00:00", "ended_at": "2026-01-01T00:10:00+00:00"}
    sweep = dataclasses.replace(sweep, manifest=dataclasses.replace(sweep.manifest, **ten_minutes))
    text = sections.limitations(sweep)
    more = flagged * (needed - 3)
    pace = 600 / len(sweep.trials)
    assert f"{flagged} of those means would need about {more} more successful trials to come within 10.0%" in text
    assert f"At this sweep's {fmt_num(pace)} s per trial (its wall time over its trials) that is about" in text
    assert f"about {fmt_duration(more * pace)};" in text
    assert "`--trials` sets each configuration's" in text  # the synthetic sweep has a fixed design


def test_copy_evidence_shows_the_eliminated_user_space_copy():
    text = answers.copy_evidence(make_sweep())
    # two_copy 0.5x s of user CPU per 1e9 bytes = 0.5x ns/B, one_copy 0.2x
    assert "`two_copy` spent 0.520 [" in text and "`one_copy` 0.220 [" in text
    assert "The difference is the eliminated copy." in text
    assert "30,000 zero-copy sends" in text


def test_captions_state_peaks_and_ends_with_numbers():
    from copylab.report.experiments.copies import captions

    sweep = make_sweep()
    text = captions.caption("throughput_vs_size", sweep)
    # peak of two_copy with 1 thread: 26.0 Gbit/s +-3% at 64 KiB
    assert "with 1 thread (CPU pinning `same_cpu`): `two_copy` 26.0 [25.2, 26.8] at 64 KiB" in text
    # with 4 threads the fixture runs at 0.8 x: 20.8 Gbit/s
    assert "with 4 threads (CPU pinning `same_cpu`): `two_copy` 20.8 [20.2, 21.4] at 64 KiB" in text
    # the crossovers the figure draws, each named, never a count the figure does not show
    assert "Dotted lines mark the crossovers of `one_copy` over `two_copy` at about" in text
    assert "bands: Student-t 95% intervals" in text and "bars" not in text
    latency = captions.caption("latency_vs_threads", sweep)
    assert "`two_copy` 20.0 [19.4, 20.6] µs with 1 thread, 80.0 [77.6, 82.4] µs with 4" in latency
    cpu = captions.caption("cpu_per_byte_vs_size", sweep)
    assert "cycles are not measurable" in cpu and f"`two_copy` {fmt_num(8 / 0.55)} [" in cpu
    assert "Every implementation needs less per byte" in cpu
    assert "not measurable on this host" in captions.caption("cache_misses_vs_size", sweep)
    assert "one panel per workload: 100.0% over 10 configurations" in captions.caption(
        "zerocopy_copied_fraction", sweep
    )
    assert "none in any of the 30 configurations" in captions.caption("retransmits", sweep)
    with pytest.raises(KeyError, match="no caption for figure kind 'pie'"):
        captions.caption("pie", sweep)


def test_cache_caption_with_counters_gives_both_levels():
    from copylab.report.experiments.copies import captions

    text = captions.caption("cache_misses_vs_size", make_sweep(counters=True))
    assert "L1d: at 64 B: `two_copy` 100 [97.0, 103]" in text and "LLC: at 64 B" in text


def test_short_answer_summarises_all_configurations():
    text = answers.answer_crossover(make_sweep(status="crossover"), "one_copy", "two_copy")
    assert text.startswith(
        "**In short:** `one_copy` against `two_copy`: with 1 thread, CPU pinning `same_cpu`, faster from about 5,793 B "
        "(95% CI 4,100 B to 8,191 B); with 4 threads, CPU pinning `same_cpu`, faster from about 5,793 B"
    )
    text = answers.answer_crossover(make_sweep(status="indistinguishable"), "one_copy", "two_copy")
    assert text.startswith(
        "**In short:** `one_copy` against `two_copy`: with 1 thread, CPU pinning `same_cpu`, indistinguishable at "
        "every size from 64 B to 64 KiB; with 4 threads"
    )


def test_single_trial_has_no_interval_and_a_container_manager_is_systemd_detect_virts_word():
    assert fmt_interval(18.3, float("nan"), float("nan"), "Gbit/s") == "18.3 (no interval) Gbit/s"
    sweep = _in_container(make_sweep())
    assert "systemd-detect-virt names a container manager (docker), as it does on some virtual machines" in (
        answers.answer_q2(sweep)
    )
    assert "no performance monitoring unit (PMU)" in answers.answer_q2(sweep)
    assert "ran inside a container" not in answers.answer_q2(sweep) + sections.limitations(sweep)
    assert "systemd-detect-virt names a container manager (docker)" in sections.limitations(sweep)


def test_focus_size_has_the_most_results_when_a_sweep_is_incomplete():
    sweep = make_sweep()
    summary = sweep.summary
    drop = (summary["size_bytes"] == 65536) & (summary["threads"] == 4) & (summary["implementation"] == "two_copy")
    sweep = dataclasses.replace(sweep, summary=summary[~drop])
    assert choose_focus(sweep).size == 16384


def test_retransmit_causes_depend_on_pinning():
    sweep = make_sweep()
    rows = sweep.summary["metric"] == "retransmits"
    sweep.summary.loc[rows & (sweep.summary["size_bytes"] == 64), "mean"] = 12.0
    text = sections.limitations(sweep)
    assert "6 of 30 configurations receiving by copy saw TCP retransmits (up to 12.0 per trial" in text
    assert "6 ran with both ends on one CPU, where veth does not reorder" in text and "takes the reordering" not in text


def _with_receiver_side(sweep: Results) -> Results:
    """The fixture plus sendfile (tied with two_copy at 64 KiB), two_copy receiving by truncate, and mmap trials."""
    extra = []
    for size in SIZES:
        tp = {64: 0.5, 1024: 4.0, 4096: 11.0, 16384: 19.5, 65536: 25.9}[size]
        extra.append(_summary_row("sendfile", "stream", size, 1, "throughput_gbps", tp))
        for receive, rcv in (("copy", 2.0), ("truncate", 1.5)):
            row = _summary_row("two_copy", "stream", size, 1, "rcv_cpu_ns_per_byte", rcv)
            extra.append({**row, "receive": receive})
    summary = pd.concat([sweep.summary, pd.DataFrame(extra)], ignore_index=True)
    mmap = pd.DataFrame(
        [{**sweep.trials.iloc[0].to_dict(), "receive": "mmap", "rx_mapped_bytes": 900.0, "rx_copied_bytes": 100.0}]
    )
    trials = pd.concat([sweep.trials.assign(rx_mapped_bytes=np.nan, rx_copied_bytes=np.nan), mmap])
    return dataclasses.replace(sweep, summary=summary, trials=trials)


def test_other_ways_to_send_ranks_senders_with_ties_and_prices_the_receivers_copy():
    sweep = _with_receiver_side(make_sweep())
    table = answers.best_sender_table(sweep)
    # 64 KiB, 1 thread: two_copy 26.0 +-3%, sendfile 25.9 +-3% overlap (one_copy 24.0 [23.3, 24.7]: apart);
    # 4 KiB: one_copy 16 alone
    assert "| 64\u00a0KiB | `two_copy` 26.0 [25.2,\u00a026.8] | `sendfile` |" in table
    assert "| 4\u00a0KiB | `one_copy` 16.0 [15.5,\u00a016.5] | none: the best alone |" in table
    cost = answers.receiver_copy_cost(sweep)
    assert "| `two_copy` | 64\u00a0KiB | 2.00 [1.94,\u00a02.06] | 1.50 [1.46,\u00a01.54] | 0.500 |" in cost
    most = answers.which_copy_costs_most(sweep)
    # packing 0.52 - 0.22 = 0.30 ns/B against the receiver's 2.0 - 1.5 = 0.50 ns/B
    assert "makes 3 copies of each byte" in most and "the packing copy costs 0.300 ns per byte" in most
    assert "the receiver's copy costs 1.67 times the packing copy" in most
    assert "`two_copy` 90.0%" in answers.mapped_receive(sweep)
    assert answers.mapped_receive(make_sweep()) == ""  # no mmap trials: nothing claimed


def test_what_part_a_says_of_the_kernel_is_cited_and_its_copy_counts_agree():
    """sendfile splices page-cache pages into the skb by reference: no copy at the send nor on local delivery, as the
    kernel's source says (cited by file and function); the counts Part A, the copy bound and Question 1 use are the
    registry's."""
    from copylab.declarations import implementations

    sendfile = implementations.get("sendfile")
    assert sendfile.copies.per_byte("copy") == 1 and sendfile.copies.at_send == 0
    for cited in ("tcp_sendmsg_locked", "net/ipv4/tcp.c", "skb_splice_from_iter", "net/core/skbuff.c"):
        assert cited in sendfile.explanation, cited
    assert "skb_orphan_frags_rx" in sendfile.explanation and "copies each chunk" not in sendfile.explanation
    # zero_copy's kernel copy is deferred, not saved: 2 copies where two_copy makes 3, said so in question 1
    assert (
        implementations.get("zero_copy").copies.per_byte() == 2
        and implementations.get("two_copy").copies.per_byte() == 3
    )
    sweep = make_sweep()
    q1 = answers.answer_q1(sweep)
    assert "saved no copy" not in q1 and "It made 2 copies of each byte where `two_copy` makes 3" in q1


def test_a_negative_receivers_copy_is_flagged_not_read_as_a_cost():
    """Where receiving by truncate cost the receiver more per byte than receiving by copy, the table's difference is
    negative: the text says so and why (fewer bytes per call by truncate), not a copy costing less than nothing."""
    sweep = _with_receiver_side(make_sweep())
    summary = sweep.summary.copy()
    at_64 = (summary["metric"] == "rcv_cpu_ns_per_byte") & (summary["size_bytes"] == 64)
    summary.loc[at_64 & (summary["receive"] == "truncate"), ["mean", "ci_low", "ci_high"]] = (2.5, 2.4, 2.6)
    calls = [
        {**_summary_row("two_copy", "stream", 64, 1, "rcv_bytes_per_call", value), "receive": receive}
        for receive, value in (("copy", 4096.0), ("truncate", 1024.0))
    ]
    sweep = dataclasses.replace(sweep, summary=pd.concat([summary, pd.DataFrame(calls)], ignore_index=True))
    cost = answers.receiver_copy_cost(sweep)
    assert "| -0.500 |" in cost and "Some differences are negative (`two_copy` at 64 B)" in cost
    assert "not a copy costing less than nothing" in cost and "(for example 1,024 B against 4,096 B)" in cost
    assert "Size" in cost.split("same senders' throughput")[1]  # the ratio table keeps its Size column


def test_several_crossings_the_per_size_tests_do_not_see_are_still_said_in_a_whole_sentence():
    """The model's band can change sign more than once where no single size is significantly better on its own
    blocks: question 4's short answer then says so in words, with no empty list of sizes."""
    never_faster = {**THROUGHPUT, "one_copy": [0.40, 4.2, 12.0, 18.0, 24.0]}
    claim = answers.answers(make_sweep(status="multiple_crossings", throughput=never_faster))[3][1].claim
    assert "faster at some sizes from 64 B to 64 KiB and slower at others, changing more than once" in claim
    assert "faster at  and" not in claim and "faster at and" not in claim
