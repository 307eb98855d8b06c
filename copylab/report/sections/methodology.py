"""The report's method: the short method after the Limitations and the full one in its appendix, computed from a
sweep's Results and manifest."""

from __future__ import annotations

import math
from collections.abc import Sequence

from copylab.analysis.noise import MIN_TRIALS as MIN_SPREAD_TRIALS
from copylab.analysis.noise import spread_explained
from copylab.analysis.stats import IMPRECISE, MIN_TRIALS
from copylab.calibration.record import FINDING_RATIO, ratio_rows
from copylab.declarations import implementations
from copylab.declarations.metrics import add_metrics
from copylab.declarations.schema import COLUMN_NAMES
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, fmt_span, markdown_table
from copylab.measure.running.spec import cpus_for
from copylab.record.manifest import Manifest
from copylab.record.tables import CONFIG_KEYS
from copylab.report.results import (
    Results,
    between_hosts,
    every_trial,
    present,
)
from copylab.report.sections import spending, transport_prose


def _topology(results: Results) -> str:
    params = results.manifest.parameters
    if not between_hosts(results):
        return (
            "**Topology.** The server (the variant under test; it sends) and the client (it receives) run in two "
            f"network namespaces joined by a veth pair with an MTU of {params.mtu} B, created before the sweep and "
            "removed after it."
        )
    return (
        f"**Topology.** The server (the variant under test; it sends) runs on {code(params.server_host or '')} and "
        f"the client (it receives) on {code(params.client_host or '')}; copylab drives both over SSH and the "
        f"trial traffic crosses the network to {code(params.server_address or '')} (the setup table names each "
        "host's interface, driver, MTU and offloads). For the zero-copy senders this path matters: on a NIC that "
        "supports scatter-gather the kernel hands the pinned pages to the device, so their completions stop "
        "carrying the COPIED flag; where the device or the path cannot use them as they are, the kernel copies "
        "them anyway. The copied fraction below is what this path did."
    )


def _pinning_text(pinning: str) -> str:
    server, client = cpus_for(pinning)
    if server is None:
        return f"{code(pinning)}: no affinity, the scheduler places both ends"
    if server == client:
        return f"{code(pinning)}: sender and receiver both on CPU {server} (taskset)"
    return f"{code(pinning)}: sender on CPU {server}, receiver on CPU {client} (taskset)"


def _baselines_text(results: Results) -> str:
    by_baseline: dict[str, list[str]] = {}
    for challenger in present(results):
        for baseline in results.manifest.parameters.members[challenger].baselines:
            if baseline in present(results):
                by_baseline.setdefault(baseline, []).append(challenger)
    if not by_baseline:
        return "No implementation was measured together with its baseline."
    against = "; ".join(
        f"{', '.join(code(c) for c in challengers)} against {code(baseline)}"
        for baseline, challengers in by_baseline.items()
    )
    if results.manifest.parameters.design != "blocked":
        return (
            f"Each implementation against its baseline ({against}): ratio of means with Fieller's 95% interval, "
            "Welch's t-test, Holm correction over the sizes of one curve."
        )
    blocks = results.manifest.parameters.trials
    return (
        f"Each implementation against its baseline ({against}), paired within blocks. The ratio is the geometric "
        "mean of the ratios of the two implementations' trials in each block they share. Its interval is the t "
        "interval of their logarithms, its test the paired t-test, with Holm correction over the points of one "
        "curve. A block's effect (the speed the host gives the guest while the block runs) scales both "
        "implementations alike. On the log scale it is a random effect added to both, and the mixed model with the "
        "block as a random effect estimates their difference by exactly this mean and interval. The per-size "
        f"interval is this t interval, not a bootstrap: with {blocks} blocks a size has only "
        f"{math.comb(2 * blocks - 1, blocks)} distinct resamples of its blocks, too few for a percentile interval. "
        "Where an estimate pools many sizes, its interval comes from drawing them again: a crossover's from each "
        "size's mean drawn from its standard error, how sure a verdict is from second runs simulated from the "
        "fitted curve. Where a metric "
        "is zero in some trial (retransmits, say) the unpaired analysis stands (ratio of means, Fieller, Welch), "
        "and comparisons.csv says which was used."
    )


def _configuration_totals(results: Results) -> str:
    """Why the report counts its configurations three ways: all of them (Part C), those in the study's layout (the
    Limitations' count), those of them receiving by copy (the figures' and the retransmits')."""
    keys = [key for key in CONFIG_KEYS if key in results.trials.columns]
    every = every_trial(results)[keys].drop_duplicates()
    study = results.trials[keys].drop_duplicates()
    by_copy = study[study["receive"] == implementations.BASELINE_RECEIVE]
    if len(every) == len(study) == len(by_copy):
        return ""
    return (
        f". The sweep has {len(every):,} configurations (Part C counts them all); {len(study):,} of them hold the "
        f"message in the study's layout (the Limitations count these), and {len(by_copy):,} of those receive by "
        "copy (the figures of Part D and the count of retransmits)"
    )


def _repetitions(results: Results) -> str:
    """How the trials were ordered and how many each configuration got, and why."""
    params, trials = results.manifest.parameters, every_trial(results)
    counted = f"{len(trials):,} trials in total ({int((trials['status'] == 'ok').sum()):,} succeeded)"
    arms = len(trials) - len(results.trials)
    if arms:
        others = sorted(set(trials["layout"]) - set(results.trials["layout"]))
        counted += (
            f"; {arms:,} of them held the message in another layout ({', '.join(code(o) for o in others)}). "
            f"Only the section on message layouts compares those, so the other sections rest on "
            f"{len(results.trials):,}"
        )
    counted += _configuration_totals(results)
    n = results.summary["n"]
    per = fmt_span(str(int(n.min())), str(int(n.max()))) if len(n) else "0"
    if params.design != "blocked":
        return (
            f"**Repetitions.** {counted}. They ran {params.trials} per configuration, in one seeded random order so "
            f"that drift in the host does not line up with any factor. Summaries use {per} successful trials per "
            "configuration."
        )
    text = (
        f"**Repetitions.** {counted}. They ran in blocks: a block runs every implementation, in each of its "
        "receive modes, at one point (workload, size, threads, pinning) back to back in a seeded random order, and "
        "the blocks of a round are shuffled across points; a trial's repetition number is its block's. "
    )
    if params.budget_s is None:
        return text + f"{params.trials} blocks per point; summaries use {per} successful trials per configuration."
    pairs = implementations.deciding_pairs(params.declared)
    deciding = ", ".join(f"{code(c)} against {code(b)}" for c, b in pairs if c in present(results))
    initial = (
        f"An initial round ran {params.trials} blocks of the implementations whose comparisons answer the study's "
        f"questions ({deciding}) at every point, and of every other implementation at the first thread count only "
        "(at the sizes the sweep gives them). "
    )
    if not params.budget_s:
        return (
            text
            + initial
            + (
                "The sweep ran with `--budget 0`, so no block followed: a verdict the initial round left undecided "
                f"stays undecided. Configurations rest on {per} successful trials."
            )
        )
    return (
        text
        + initial
        + (
            "The time left then went to a block at every point where one of those comparisons was still undecided "
            "(first the points that needed the fewest more blocks to come out significant, a point where the estimate "
            f"changes sign beside a significant one counting half), each up to {params.max_trials} blocks; *Where the "
            f"time went* below says how much each sweep got. So configurations rest on {per} successful trials: the "
            "most where an answer was hardest to decide."
        )
    )


def _noise(results: Results) -> str:
    """What explains the spread between identical trials in this sweep, measured."""
    experiment = results.manifest.parameters.declared
    complete = set(COLUMN_NAMES) <= set(results.trials.columns)
    found = spread_explained(add_metrics(results.trials), experiment, experiment.workload) if complete else []
    if not found:
        return (
            "**What makes identical trials differ.** The sweep has too few repeated trials with the covariates "
            "recorded (trials.csv schema 4 and later record them) to say."
        )
    shares = "; ".join(f"{item.meaning}: {fmt_pct(item.share)}" for item in found)
    names = {item.covariate for item in found}
    text = (
        "**What makes identical trials differ.** Of the spread of the headline metric between identical trials "
        f"(logarithms, centred within each configuration with {MIN_SPREAD_TRIALS} or more trials, "
        f"{found[0].configurations} configurations), the share each covariate explains alone: {shares}."
    )
    if len(found) > 1:
        text += (
            " Each share is that covariate's own (its squared correlation with the metric, or for the block the "
            "share of the spread between blocks); the covariates move together, so the shares overlap and need not "
            "add up to 100%."
        )
    if names & {"probe_ns", "probe_copy_ns"}:
        text += (
            " The host's speed is probed on the trial's CPUs just before and after each trial. A virtual CPU slows "
            "down for seconds when the host gives its core or its cache to other guests, and nothing inside the "
            "guest shows it."
        )
    if "rcv_receive_buffer_bytes" in names:
        text += _receive_buffer_share(results.manifest)
    if "block" in names:
        text += (
            " What the block explains is what pairing within blocks removes from a comparison; the rest is fixed "
            "per trial, which a longer window does not average away (`./inv bench` measures both lengths: "
            "docs/performance.md), so many short trials decide more per second than few long ones: hence the short "
            "windows."
        )
    return text


def _receive_buffer_share(manifest: Manifest) -> str:
    """What the receive buffer's share means: the kernel's sizing (--socket-buffer 0), or what is left of it when
    the sweep fixed the buffers."""
    chosen = manifest.parameters.socket_buffer
    if not chosen:
        return (
            " The kernel sized this sweep's socket buffers, and the receive buffer it grew each connection to is "
            "recorded: its share is the transport's, which fixed buffers (`--socket-buffer`, the default) remove."
        )
    return (
        f" This sweep fixed the socket buffers at {fmt_size(chosen)} (`--socket-buffer`); the receive buffer each "
        "connection reported is recorded all the same, and its share is what still varied with it."
    )


def _in_flight(manifest: Manifest) -> str:
    """How many bytes the zero-copy senders kept in flight and why; "" for a sweep that set none."""
    chosen = manifest.in_flight
    parameters = manifest.parameters
    if not any(member.zero_copy for member in parameters.members.values()):
        return ""
    if chosen is None:
        given = parameters.zc_inflight
        return "" if given is None else f"**Zero-copy ring.** At most {fmt_size(given)} in flight (`--zc-inflight`)."
    text = f"**Zero-copy ring.** At most {fmt_size(chosen.zc_inflight)} in flight: {chosen.how}."
    if chosen.throughput_gbps is not None and chosen.srtt_us is not None and chosen.bandwidth_delay_bytes is not None:
        text += (
            f" Measured at the sweep's start: {fmt_num(chosen.throughput_gbps)} Gbit/s with a smoothed round trip of "
            f"{fmt_num(chosen.srtt_us)} µs, a bandwidth-delay product of {fmt_size(chosen.bandwidth_delay_bytes)}."
        )
    return text


def method(results: Results, sweeps: Sequence[Results] = ()) -> str:
    """Topology, what one trial is, trial counts, where each sweep's time went (SWEEPS: every sweep of the report),
    and how intervals and crossovers are computed."""
    params = results.manifest.parameters
    return "\n".join(
        [
            f"{_topology(results)} CPU pinning of both ends: {'; '.join(_pinning_text(p) for p in params.pinning)}.",
            "",
            "**One trial.** Every trial starts a fresh server and a fresh client process. The client opens one "
            "connection per thread; the server serves each with its own worker thread. After a warm-up of "
            f"{fmt_num(params.warmup_s)} s the client measures a window of {fmt_num(params.duration_s)} s "
            "(CLOCK_MONOTONIC); throughput is the bytes all client threads received in the window over its measured "
            "length. `perf stat` runs on both processes but is enabled only inside the window, through its control "
            "fifo, so start-up, warm-up and teardown are not counted. CPU time and context switches come from "
            "getrusage over the same window.",
            "",
            transport_prose.paragraph(results.manifest),
            "",
            *([ring, ""] if (ring := _in_flight(results.manifest)) else []),
            _repetitions(results),
            "",
            spending.paragraph(sweeps or [results]),
            "",
            _noise(results),
            "",
            "**Intervals.** Every mean comes with a Student-t 95% confidence interval over its trials. A "
            f"configuration is flagged unstable when that interval reaches more than {fmt_num(IMPRECISE * 100)}% "
            f"either side of its mean or it has fewer than {MIN_TRIALS} successful trials: its mean is not known "
            "well enough yet. " + _baselines_text(results),
            "",
            "**Crossovers.** Along message size, each size is labelled significantly better, significantly worse, or "
            "neither. A single change from worse to better is a crossover. Its size is where the difference (the mean "
            "within-block log ratio, in a blocked design) crosses zero, interpolated linearly on log2(size) between "
            "the sizes on either side; where a model of the whole curve gives the verdict, the means are first made "
            "non-decreasing along size. Its 95% interval comes from drawing each size's mean again (from its "
            "standard error under the model, else by resampling the blocks or the trials within each size). "
            "Otherwise the comparison is one of the other cases: better at every size where "
            "the two differ, never better, not distinguishable at any size, or changing sign more than once; no size "
            "is ever extrapolated beyond the tested range.",
            *(["", calibration] if (calibration := _calibration(results)) else []),
        ]
    )


def _calibration(results: Results) -> str | None:
    """The copy calibration's ratios at every size with their spread over rounds, and the rule that makes one a
    finding; None when the manifest holds no copy samples (older sweeps)."""
    record = results.manifest.calibration
    if record is None or not record.copy_points:
        return None
    rounds = max(len(point.ns_per_byte) for point in record.copy_points)
    found = record.findings
    named = (
        " This calibration has "
        + (
            f"{len(found)} {'finding' if len(found) == 1 else 'findings'}: "
            + "; ".join(finding.describe(record.cpu_flags) for finding in found)
            if found
            else "none"
        )
        + "."
    )
    return (
        f"**The copy calibration.** Before the trials, each way of copying was timed in {rounds} rounds, each a "
        "separate process. The table gives, per copy size, the ratio of two ways' median costs. In brackets are its "
        "least and its most over the rounds. A *finding* is an effect of the copy path itself that the calibration "
        f"measures directly. A ratio makes one when its least value over the rounds exceeds {fmt_num(FINDING_RATIO)} "
        "and every sample of the slower way lies above every sample of the faster. One already explained by another "
        "finding is not counted again (a placement effect of the string instruction counts once), and neighbouring "
        f"sizes that qualify make one finding, a range of sizes.{named} A ratio whose rounds straddle the threshold "
        "may qualify in one run and not the next, so findings near it change from run to run.\n\n"
        + markdown_table(ratio_rows(record))
    )


def short_method(results: Results) -> str:
    """The method in one paragraph for the graded report: where the ends ran, what one trial measures, how trials
    were paired and how the intervals and verdicts Part E prints were computed; the appendix has the rest."""
    params = results.manifest.parameters
    paired = params.design == "blocked"
    pairing = (
        f"Trials ran in blocks: a block runs every implementation at one point (workload, size, threads, pinning) "
        f"back to back in a seeded random order, {params.trials} blocks per point, and a comparison pairs the two "
        "implementations' trials of each block. A ratio is the geometric mean of the within-block ratios, with the "
        "t 95% interval of their logarithms and the paired t-test. "
        if paired
        else "Trials ran in one seeded random order. A ratio is a ratio of means with Fieller's 95% interval and "
        "Welch's t-test. "
    )
    where = (
        "The sender and the receiver ran on two hosts."
        if between_hosts(results)
        else f"The sender (server) and the receiver (client) ran in two network namespaces of this host, joined by a "
        f"veth pair (MTU {params.mtu} B)."
    )
    return (
        f"{where} CPU pinning: {'; '.join(_pinning_text(p) for p in params.pinning)}. "
        "Every trial starts a fresh server and client; the client measures a window of "
        f"{fmt_num(params.duration_s)} s after a warm-up of {fmt_num(params.warmup_s)} s, and `perf stat` and "
        "getrusage count that window only. Over the veth the receiver's softirq work (the kernel's deferred "
        "processing of received packets) runs on the CPU whose send delivered them, inside the sender's system "
        "call or, when it falls behind, in that CPU's `ksoftirqd` thread. So the sender's CPU time also holds part "
        "of the receiver's work, and with both ends on one CPU the two cannot be told apart. "
        + pairing
        + "The verdict at each size (faster, slower, not significant) comes from that test with Holm's correction "
        "over the sizes of one curve, while the interval printed beside it is the size's own, unadjusted: an "
        "interval that excludes 1 beside *not significant* is a difference that one size shows alone but that does "
        "not survive testing every size at once. A crossover is where the sizes' mean log ratios, made "
        "non-decreasing along size, cross zero, interpolated on log2(size), with a 95% interval from drawing each "
        "size's mean again from its standard error; how often second runs simulated from the fitted curve reach a "
        "verdict again says how sure it is. The full method is in the appendix "
        "*Method*, the host and every setting in the appendix *Setup*."
    )
