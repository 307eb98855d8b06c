"""What limits a sweep's results: one function per kind of limitation.

Each returns the bullet that copylab.report.sections.limitations lists for it, computed from the sweep's data or
manifest, or None when the sweep has no such limitation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pandas as pd

from copylab.analysis.stats import IMPRECISE, MIN_TRIALS, trials_for_precision
from copylab.calibration.record import region_costs
from copylab.declarations import settings
from copylab.formatting import code, fmt_duration, fmt_num, fmt_pct, fmt_span, md_escape
from copylab.programs.perf import USER_MODE_ONLY
from copylab.record.manifest import Manifest
from copylab.report.results import (
    Results,
    between_hosts,
    every_trial,
    in_container,
    metric_rows,
    virtualised,
)
from copylab.vocabulary.values import WORKLOAD_MEASURE


def failed_trials(trials: pd.DataFrame) -> str:
    """How many trials failed and were left out, with their most common error."""
    failed = trials[trials["status"] != "ok"]
    if not len(failed):
        return f"All {len(trials)} trials completed; none failed."
    common = failed["error"].fillna("").astype(str).value_counts()
    return (
        f"{len(failed)} of {len(trials)} trials failed and are excluded"
        + (f' (most common error: "{md_escape(common.index[0])}", {common.iloc[0]} times)' if common.index[0] else "")
        + "."
    )


def main_metric(summary: pd.DataFrame) -> pd.DataFrame:
    """Each configuration's row of its workload's main metric (WORKLOAD_MEASURE) that has a mean."""
    main = summary[summary["metric"] == summary["workload"].map(WORKLOAD_MEASURE)]
    return main[np.isfinite(main["mean"])]


def unstable_means(main: pd.DataFrame, unstable: pd.DataFrame) -> str:
    """How many main metrics are not known well enough yet, and the widest spread among them."""
    return (
        f"{len(unstable)} of {len(main)} configurations (every receive mode, in the study's message layout) were "
        "flagged unstable in their main metric (stream "
        f"throughput or rr latency): a 95% interval reaching more than {fmt_pct(IMPRECISE)} either side of the "
        f"mean, or fewer than {MIN_TRIALS} successful trials"
        + (
            f"; the spread between their trials reached a CV of {fmt_pct(float(unstable['cv'].max()))}."
            if len(unstable)
            else "."
        )
    )


def trials_to_settle(unstable: pd.DataFrame, results: Results) -> str | None:
    """How many more trials the UNSTABLE configurations' own spread says their means need, and at this sweep's
    pace how long: what more time would buy.  None when their spread asks for none (intervals not Student-t's)."""
    spread = unstable[(unstable["n"] >= 2) & np.isfinite(unstable["cv"])]
    shortfalls = [
        short
        for cv, n in zip(spread["cv"], spread["n"], strict=True)
        if (short := trials_for_precision(float(cv)) - int(n)) > 0
    ]
    if not shortfalls:
        return None
    more = sum(shortfalls)
    text = (
        "At the spread between their own trials (each configuration's CV under the Student-t interval), "
        f"{'one of those means' if len(shortfalls) == 1 else f'{len(shortfalls)} of those means'} would need about "
        f"{more} more successful trials to come within {fmt_pct(IMPRECISE)}"
    )
    m = results.manifest
    ran = len(every_trial(results))  # the wall time went to every layout's trials
    if m.started_at and m.ended_at and ran:
        elapsed = datetime.fromisoformat(m.ended_at) - datetime.fromisoformat(m.started_at)
        pace = elapsed.total_seconds() / ran
        budgeted = m.parameters.design == "blocked" and m.parameters.budget_s is not None
        option = settings.get("budget_s" if budgeted else "trials").option
        lever = f"{code(f'--{option}')} " + ("sets a blocked sweep's time" if budgeted else "sets each configuration's")
        text += (
            f". At this sweep's {fmt_num(pace)} s per trial (its wall time over its trials) that is about "
            f"{fmt_duration(more * pace)}; {lever}"
        )
    left = len(unstable) - len(spread)
    if left:
        text += f". {left} with fewer than 2 successful trials show no spread to go by"
    return text + "."


def trials_per_configuration(main: pd.DataFrame) -> str | None:
    """The range of successful trials behind each main metric; None when there is none."""
    n = main["n"]
    if not len(n):
        return None
    return (
        f"Each configuration rests on {fmt_span(str(int(n.min())), str(int(n.max())))} successful trials; "
        "intervals are correspondingly wide."
    )


def missing_counters(results: Results) -> str | None:
    """Which hardware counters perf could not count and why; None when it counted them all."""
    perf = results.manifest.perf
    if perf.available and not perf.unsupported_events:
        return None
    unit = results.manifest.parameters.declared.axis_unit
    by_reason: dict[str, list[str]] = {}
    for event, why in perf.unsupported_events.items():
        by_reason.setdefault(str(why), []).append(event)
    return (
        "Hardware counters missing: "
        + (
            "; ".join(f"{', '.join(events)} (perf: {code(why)})" for why, events in by_reason.items())
            or "perf not available"
        )
        + f". Cycles and cache misses per {unit} cannot be reported; CPU time per {unit} stands in for them."
    )


def shared_machine(results: Results) -> str | None:
    """What a container or virtual machine shares with the sweep; None on bare metal."""
    virtualization = virtualised(results)
    if not virtualization:
        return None
    if in_container(virtualization):
        return (
            f"systemd-detect-virt names a container manager ({md_escape(virtualization)}), as some virtual machines "
            "also do: other workloads of the machine share its CPUs and caches."
        )
    return (
        f"The host is virtualised ({md_escape(virtualization)}): other guests share the physical CPUs and caches, and "
        "CPU time includes time stolen by the hypervisor."
    )


WORKLOAD_WORDS = {"stream": "stream", "rr": "request/response"}


def retransmits_seen(results: Results) -> str | None:
    """How many configurations saw TCP retransmits and what this topology says of their cause; None if none did."""
    retransmits = metric_rows(results, "retransmits")
    with_retransmits = retransmits[retransmits["mean"] > 0]
    if not len(with_retransmits):
        return None
    split = with_retransmits["pinning"] != "same_cpu"
    workloads = retransmits["workload"].unique()
    by_workload = (
        " ("
        + ", ".join(
            f"{int((with_retransmits['workload'] == w).sum())} of {int((retransmits['workload'] == w).sum())} "
            f"{WORKLOAD_WORDS.get(w, w)}"
            for w in workloads
        )
        + ")"
        if len(workloads) > 1
        else ""
    )
    text = (
        f"{len(with_retransmits)} of {len(retransmits)} configurations receiving by copy{by_workload} saw TCP "
        "retransmits (up to "
        f"{fmt_num(float(with_retransmits['mean'].max()))} per trial on average), which cost throughput and add "
        "noise."
    )
    if between_hosts(results):
        text += " Between two hosts they come from the network path (loss, or reordering on the link)."
    elif split.any():
        text += (
            f" {int(split.sum())} of them ran with the ends free to use different CPUs, where a veth pair "
            "reorders packets and TCP takes the reordering for loss."
        )
    if (~split).any() and not between_hosts(results):
        text += (
            f" {int((~split).sum())} ran with both ends on one CPU, where veth does not reorder; this data does "
            "not identify their cause."
        )
    return text


def without_root(manifest: Manifest) -> str | None:
    """What running in a user namespace left out; None when the sweep ran as root."""
    if manifest.privilege != "user-namespace":
        return None
    user_mode = [e for e, why in manifest.perf.unsupported_events.items() if why == USER_MODE_ONLY]
    return (
        "The sweep ran without root, in a user namespace."
        + (
            f" perf could count only user mode, so {', '.join(code(e) for e in user_mode)} are left empty."
            if user_mode
            else ""
        )
        + "".join(f" {name}: {why}." for name, why in manifest.restrictions.items())
    )


def not_measured(manifest: Manifest) -> str | None:
    """The report's sweeps that could not run on this host, why, and the command that measures them; None when all
    ran."""
    if not manifest.not_measured:
        return None
    missing = "; ".join(f"the {code(profile)} sweep ({why})" for profile, why in manifest.not_measured.items())
    one = len(manifest.not_measured) == 1
    return (
        f"Not measured here: {missing}. So the report leaves out what only "
        f"{'that sweep shows' if one else 'those sweeps show'}. Run as root, {code('./inv report')} measures "
        f"{'it' if one else 'them'} too."
    )


def interrupted(manifest: Manifest) -> str | None:
    """That configurations are missing; None when the sweep completed."""
    if manifest.complete:
        return None
    return "The sweep did not complete; configurations after the interruption are missing."


def uncommitted_code(manifest: Manifest) -> str | None:
    """That the recorded commit is not the code that ran; None when the working tree was clean."""
    if not manifest.git.dirty:
        return None
    return "The code had uncommitted changes when the sweep ran, so the commit alone does not reproduce it."


# Calibrations of one host whose costs per byte differ by more than this are said to have drifted.
DRIFT = 0.10


def calibration_drift(sweeps: Sequence[Results]) -> str | None:
    """How far apart the copy calibrations of SWEEPS on one host put the cost of copying from memory: each sweep
    calibrates when it starts, and the answers use each sweep's own; and on how many hosts they ran.  None where
    the calibrations of each host agree within DRIFT and one host measured them all."""
    by_host: dict[tuple[str, str], dict[str, float]] = {}
    for sweep in sweeps:
        record, host = sweep.manifest.calibration, sweep.manifest.host
        found = region_costs(record).get("memory") if record is not None else None
        if found is not None:
            by_host.setdefault((host.hostname, host.cpu_model), {})[sweep.name] = found
    said = [
        f"on {md_escape(cpu)} the cost of a copy from memory came out as "
        + ", ".join(f"{fmt_num(cost)} ns/B ({code(name)})" for name, cost in costs.items())
        + f", {max(costs.values()) / min(costs.values()) - 1:.0%} apart"
        for (_, cpu), costs in by_host.items()
        if len(costs) > 1 and max(costs.values()) > (1 + DRIFT) * min(costs.values())
    ]
    hosts = (
        f" The sweeps ran on {len(by_host)} hosts ({', '.join(md_escape(cpu) for _, cpu in by_host)}), whose copy "
        "costs differ as their CPUs do."
        if len(by_host) > 1
        else ""
    )
    if not said and not hosts:
        return None
    drift = (
        f"Each sweep calibrated the copy cost when it started, on a host whose speed drifts: {'; '.join(said)}."
        if said
        else "Each sweep calibrated the copy cost when it started."
    )
    return drift + hosts + " Each answer uses the calibration of the sweep it rests on."
