"""The report's section for a servers sweep under open load: each model's latency against the rate offered, and
the highest rate it serves within a latency target, with a bootstrap interval.

Under open load the client sends requests on a schedule whatever the server has answered, and times each round
trip from when its request was due (coordinated omission corrected, as wrk2 does).  A rate the client itself could
not offer fails its trials with that reason (csrc/load_client.c): such a rate is listed as the client's, and no
curve is judged beyond it.  Every number comes from the sweep's trials and summary; models come from the data.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from copylab.declarations import implementations
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, markdown_table
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.experiments.servers.figures import LATENCY_TARGET_US, OPEN_FIGURES, fmt_rate
from copylab.report.results import Results, present

HEADING = "# How a server waits under open load"
# What a report with a closed-loop servers sweep only says of open load.
# The commands are set apart, each line inside the margin: inline, the long one ran past it.
ABSENT = (
    "**Under open load.** This report's servers sweep kept every connection busy closed-loop, which hides "
    "queueing: its latency is that of a server never offered more than it answers. This command offers rates on a "
    "schedule and times each request from it:\n\n"
    "```\n./inv run-sweep --name open --experiment servers --load open \\\n"
    "    --rates 5000,10000,20000,40000,60000 --connections 100 --trials 3\n```\n\n"
    "and this one adds its section, each model's latency against the rate offered and the highest rate it serves "
    f"within a p99 of {LATENCY_TARGET_US / 1000:g} ms:\n\n"
    "```\n./inv report --data COPIES_DIR,SERVERS_DIR,data/open\n```"
)
METRIC = "latency_p99_us"
RESAMPLES = 2000
TARGET_QUESTION = f"The highest rate each model serves with a p99 within {LATENCY_TARGET_US / 1000:g} ms"
# The keys one model's curve along the rate holds fixed.
CURVE = ["implementation", "size_bytes", "connections", "idle_connections", "pinning"]


@dataclass(frozen=True)
class HighestRate:
    """Where one model's mean p99 (geometric, over trials) first exceeds the target along the rates offered.

    ``estimate`` interpolates log p99 linearly in log rate between the last rate within the target and the first
    beyond it; ``low`` and ``high`` bound it by a bootstrap over each rate's trials.  ``within_all``: no rate
    judged exceeded it (the answer is at least the highest judged); ``beyond_all``: the lowest already did."""

    estimate: float
    low: float
    high: float
    within_all: bool
    beyond_all: bool
    judged: tuple[int, ...]  # the rates judged, ascending: up to the first the client could not offer
    trials: int  # the fewest trials a judged rate rests on


def _crossing(rates: np.ndarray, log_p99: np.ndarray, target: float) -> float:
    """The rate where the mean log p99 first rises above log TARGET: the ends when it never does or always did."""
    beyond = np.flatnonzero(log_p99 > math.log(target))
    if beyond.size == 0:
        return float(rates[-1])
    first = int(beyond[0])
    if first == 0:
        return float(rates[0])
    x0, x1 = math.log(rates[first - 1]), math.log(rates[first])
    y0, y1 = log_p99[first - 1], log_p99[first]
    return float(math.exp(x0 + (math.log(target) - y0) * (x1 - x0) / (y1 - y0)))


def highest_rate(trials: pd.DataFrame, target: float = LATENCY_TARGET_US, seed: int = 0) -> HighestRate | None:
    """The highest rate within TARGET of one model's curve (its trials at every rate), or None when no rate was
    judged: rates are judged from the lowest up to the first where a trial never completed (at the edge of what
    the client can offer, the trials that completed are those it happened to keep up in); a trial that --resume
    ran again and completed counts."""
    values: list[np.ndarray] = []
    judged: list[int] = []
    for rate, rows in trials.groupby("offered_rate", sort=True):
        measured = rows.loc[rows["status"] == "ok", METRIC].dropna().to_numpy(dtype=float)
        measured = measured[measured > 0]
        if measured.size < rows["trial_id"].nunique():
            break
        judged.append(int(rate))
        values.append(np.log(measured))
    if not judged:
        return None
    rates = np.asarray(judged, dtype=float)
    means = np.array([v.mean() for v in values])
    rng = np.random.default_rng(zlib.crc32(repr((seed, judged)).encode()))
    resampled = np.column_stack([rng.choice(v, size=(RESAMPLES, v.size)).mean(axis=1) for v in values])
    crossings = np.array([_crossing(rates, row, target) for row in resampled])
    low, high = np.percentile(crossings, [2.5, 97.5])
    beyond = means > math.log(target)
    return HighestRate(
        estimate=_crossing(rates, means, target),
        low=float(low),
        high=float(high),
        within_all=not beyond.any(),
        beyond_all=bool(beyond[0]),
        judged=tuple(judged),
        trials=min(v.size for v in values),
    )


def curves(results: Results) -> list[tuple[tuple[object, ...], pd.DataFrame]]:
    """Each model's trials along the rate, one curve per size, busy and idle connections and pinning."""
    trials = results.trials[results.trials["offered_rate"] > 0]
    found = [(tuple(key), rows) for key, rows in trials.groupby(CURVE, sort=False)]
    order = {name: i for i, name in enumerate(implementations.ordered(trials["implementation"]))}
    return sorted(found, key=lambda item: (item[0][1:], order[str(item[0][0])]))


def _bound(rate: float) -> str:
    return f"{fmt_rate(rate)}/s"


def _highest_cell(found: HighestRate) -> str:
    top, bottom = found.judged[-1], found.judged[0]
    if found.within_all:
        return f"at least {_bound(top)} (every rate judged kept it)"
    if found.beyond_all:
        return f"below {_bound(bottom)} (the lowest rate exceeded it)"
    if found.trials < 2:
        return f"{_bound(found.estimate)} (one trial at a rate: no interval)"
    low = f"≤ {_bound(bottom)}" if found.low <= bottom else _bound(found.low)
    high = f"≥ {_bound(top)}" if found.high >= top else _bound(found.high)
    return f"{_bound(found.estimate)} [{low}, {high}]"


def _incomplete(results: Results) -> dict[tuple[object, ...], tuple[int, str]]:
    """Per curve, the lowest rate where a trial never completed, with its first failure's reason."""
    found: dict[tuple[object, ...], tuple[int, str]] = {}
    for key, rows in curves(results):
        for rate, at in rows.groupby("offered_rate", sort=True):
            completed = set(at.loc[at["status"] == "ok", "trial_id"])
            failed = at[~at["trial_id"].isin(completed)]
            if len(failed):
                found[key] = (int(rate), str(failed["error"].fillna("no reason recorded").iloc[0]))
                break
    return found


def answer_target(results: Results) -> str:
    """The table of each model's highest rate within the target, and how to read it."""
    incomplete = _incomplete(results)
    table = []
    crossed: list[str] = []
    kept: list[str] = []
    for key, rows in curves(results):
        model, size, busy, idle, pinning = key
        found = highest_rate(rows, seed=results.manifest.parameters.seed)
        if found is not None and not found.within_all:
            where = f"below {_bound(found.judged[0])}" if found.beyond_all else _bound(found.estimate)
            crossed.append(f"{code(str(model))} ({where})")
        elif found is not None:
            kept.append(f"{code(str(model))} (up to {_bound(found.judged[-1])})")
        lag = rows.loc[rows["status"] == "ok", "issue_lag_p99_us"].median()
        table.append(
            {
                "model": code(str(model)),
                "connections": f"{busy}" + (f" + {idle} idle" if idle else ""),
                "highest rate within the target": _highest_cell(found) if found else "no rate completed",
                "trials per rate": str(found.trials) if found else "0",
                "client lag p99 (µs)": fmt_num(lag) if np.isfinite(lag) else "—",
                "first rate not completed": _bound(incomplete[key][0]) if key in incomplete else "—",
            }
        )
    if not table:
        return "This sweep has no trial under open load."
    size, pinning = results.trials["size_bytes"].min(), results.trials["pinning"].iloc[0]
    lead = (
        f"For each model, the rate at which its mean p99 (geometric mean over trials) reaches "
        f"{fmt_num(LATENCY_TARGET_US)} µs, interpolated on log axes between the last rate within it and the first "
        "beyond, with a 95% bootstrap interval over each rate's trials; an interval end at a tested end means the "
        f"crossing may lie beyond it. {fmt_size(int(size))} responses, pinning {code(str(pinning))}."
    )
    why: dict[int, list[tuple[str, str]]] = {}
    for key, (rate, reason) in incomplete.items():
        why.setdefault(rate, []).append((str(key[0]), reason))
    notes = "".join(
        f"\n\n- {_bound(rate)} ({', '.join(code(m) for m, _ in failed)}), e.g. {failed[0][1]}"
        for rate, failed in sorted(why.items())
    )
    if notes:
        ends = "A rate where a trial never completed ends its curve: neither it nor any rate beyond is judged."
        notes = f"\n\n{ends} Why:{notes}"
    lags = results.trials.loc[results.trials["status"] == "ok", "issue_lag_p99_us"].dropna()
    worst = (
        f" The largest in any trial was {fmt_num(lags.max())} µs, {fmt_pct(lags.max() / LATENCY_TARGET_US)} of the "
        "target."
        if len(lags)
        else ""
    )
    verdict = "".join(
        [
            f" Reached the target within the rates judged: {', '.join(crossed)}." if crossed else "",
            f" Kept it at every rate judged: {', '.join(kept)}"
            + ("; this sweep does not tell them apart by this measure." if len(kept) > 1 else ".")
            if kept
            else "",
        ]
    )
    return (
        f"{lead}\n\n{markdown_table(table)}\n\n{verdict.strip()}\n\nThe client's lag is how late it sent a "
        "request against its schedule (median over trials of each trial's 99th percentile): it is part of every "
        f"latency above, the client's own share of it.{worst}{notes}"
    )


def introduction(results: Results) -> str:
    params = results.manifest.parameters
    rates = ", ".join(_bound(r) for r in params.rates)
    return (
        f"The question: *how much load does each model take before its tail latency gives way?* The load client "
        f"sends requests on a schedule at {rates} over all busy connections ({', '.join(map(str, params.connections))}"
        "), round robin, whether or not earlier ones were answered (open loop, as wrk2 offers load). Each round "
        "trip is timed from when its request was due, not from when it left, so a server that falls behind is "
        "charged the wait its backlog causes (coordinated omission corrected). A trial fails, with the reason, "
        "when the client was on its CPU for nearly all the window or its own lateness in sending made most of "
        "the tail it measured: that rate is the client's limit, not the server's. Requests served per second is "
        "the achieved rate: on the diagonal the model served what was offered."
    )


def caption(results: Results) -> str:
    title = OPEN_FIGURES["latency_vs_offered_rate"][0]
    return (
        f"{title}. A line per model ({', '.join(present(results))}); the dashed line is the "
        f"{fmt_num(LATENCY_TARGET_US)} µs target, the dotted one served = offered. Latency counts from each "
        "request's scheduled time."
    )


def parts(results: Results) -> list[Block]:
    """The section of a report whose servers sweep under open load RESULTS is."""
    return [
        Markdown(HEADING),
        Markdown(introduction(results)),
        *(Figure(results.store.figure_path(name), caption(results)) for name in OPEN_FIGURES),
        Markdown(f"## {TARGET_QUESTION}\n\n{answer_target(results)}"),
    ]


def summary(results: Results) -> str:
    """A further open-load sweep, summed up: each model's highest rate within the target."""
    return answer_target(results)
