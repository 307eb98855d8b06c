"""Two answers of the section "How a server waits" that need more than one curve along connections: where a
descriptor-scanning model pays (the server's CPU per request as silent connections are added), and each model
against a further baseline the registry gives it (io_uring against epoll), with intervals.

Every number comes from the sweep's summary and comparisons tables; models are found through the registry and
the data, never by name.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from copylab.analysis.stats import fieller
from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS
from copylab.formatting import code, fmt_interval, fmt_num, fmt_size, markdown_table
from copylab.report.results import Results, select
from copylab.vocabulary.values import FLOOR_PINNINGS

COST = "snd_cpu_us_per_request"
IDLE_QUESTION = "Where does a descriptor-scanning model pay? Idle connections"
FLOOR_QUESTION = "The host's own floor: what a round trip costs before any model"
# A model whose cost grows by at least this factor more than the least-growing model's "pays" for idle connections.
PAYS = 1.5


def answers(results: Results) -> list[tuple[str, str]]:
    """(question, Markdown answer) for what the sweep can answer: idle connections when it varied them, and every
    further baseline pair it ran."""
    found = []
    if results.manifest.host_floor:
        found.append((FLOOR_QUESTION, answer_floor(results)))
    if results.summary["idle_connections"].nunique() > 1:
        found.append((IDLE_QUESTION, answer_idle(results)))
    for challenger, baseline in further_pairs(results):
        found.append((f"{challenger} against {baseline}", answer_pair(results, challenger, baseline)))
    return found


def answer_floor(results: Results) -> str:
    """The minimal ping-pong's round trip per pinning, and each model's mean round trip at one connection above it."""
    floor = results.manifest.host_floor
    declared = results.manifest.parameters.declared
    model = next((implementation for implementation in declared.implementations if implementation.floor), None)
    named = code(model.name) if model else "the floor's server"
    measured = "; ".join(f"{fmt_num(value)} µs with CPU pinning {code(pinning)}" for pinning, value in floor.items())
    lead = (
        f"A minimal ping-pong ({named} at one connection: a blocking receive and send, one round trip at a time), "
        f"measured before the sweep's trials with the same window, took on average {measured}."
    )
    one_cpu, across = FLOOR_PINNINGS
    if floor.get(one_cpu) and floor.get(across, 0) > floor[one_cpu]:
        lead += (
            f" Across CPUs a round trip cost {fmt_num(floor[across] / floor[one_cpu])}× what it cost on one: "
            "the wake-up of the other CPU (an inter-processor interrupt, then the scheduler) is the host's, and no "
            "way of waiting that sleeps removes it. Busy polling does, by never sleeping: `SO_BUSY_POLL` on the "
            "socket (net/core/dev.c `napi_busy_loop()`) or an io_uring with `IORING_SETUP_SQPOLL`, whose kernel "
            "thread polls the ring; each trades a CPU spinning for the wake-up, and neither was measured here."
        )
    rows = select(results.summary, metric="latency_mean_us", connections=1)
    rows = rows[rows["pinning"].isin(list(floor)) & (rows["idle_connections"] == rows["idle_connections"].min())]
    if rows.empty:
        return lead + " The sweep ran no model at one connection with a pinning the floor was measured at."
    table = [
        {
            "Model": code(row.implementation),
            "CPU pinning": code(row.pinning),
            "Mean round trip [µs]": fmt_interval(row.mean, row.ci_low, row.ci_high),
            "Above the floor [µs]": fmt_num(row.mean - floor[row.pinning]),
        }
        for pinning in floor
        for row in rows[rows["pinning"] == pinning]
        .set_index("implementation")
        .loc[implementations.ordered(rows.loc[rows["pinning"] == pinning, "implementation"])]
        .reset_index()
        .itertuples()
    ]
    return "\n\n".join(
        [
            lead,
            f"At one connection ({fmt_size(rows['size_bytes'].min())} responses):",
            markdown_table(table),
            _within_the_floor(rows, floor, model.name if model else None),
        ]
    )


def _within_the_floor(rows: pd.DataFrame, floor: dict[str, float], floor_model: str | None) -> str:
    """How to read 'above the floor': the floor is one measurement without an interval, so a difference inside a
    model's own 95% interval is the spread between two measurements, not a cost (not even a negative one)."""
    inside = [row for row in rows.itertuples() if row.ci_low <= floor[row.pinning] <= row.ci_high]
    names = [code(row.implementation) for row in inside]
    text = "The floor is a single measurement taken before the trials, without an interval. " + (
        f"For {', '.join(names)} it lies inside the model's own 95% interval, so their distance from it, above "
        "or below, is the spread between measurements taken at different times, not a cost of waiting."
        if inside
        else "Every model's 95% interval lies above it: each distance is a cost of its way of waiting."
    )
    if floor_model is not None and floor_model in set(rows["implementation"]):
        text += (
            f" {code(floor_model)} at one connection runs the floor's own ping-pong, so its distance from the floor "
            "says how much two measurements of the same thing differ here."
        )
    return text


def _focus(results: Results) -> pd.DataFrame:
    """The summary rows of the server's cost per request at the sweep's smallest response size and first pinning."""
    rows = select(results.summary, metric=COST)
    rows = rows[rows["size_bytes"] == rows["size_bytes"].min()]
    return rows[rows["pinning"] == rows["pinning"].iloc[0]] if len(rows) else rows


def growth(results: Results) -> tuple[pd.DataFrame, int, int, int]:
    """Per model, the server's CPU per request with the most idle connections over that with the fewest, with
    Fieller's interval, at the largest busy count every model ran at both: (table, busy, fewest, most)."""
    rows = _focus(results)
    fewest, most = int(rows["idle_connections"].min()), int(rows["idle_connections"].max())
    ends = rows[rows["idle_connections"].isin([fewest, most])]
    both = ends.groupby(["implementation", "connections"])["idle_connections"].nunique()
    complete = both[both == 2].reset_index()
    counts = complete.groupby("connections")["implementation"].nunique()
    busy = int(counts[counts == counts.max()].index.max())
    table = []
    for model in implementations.ordered(complete.loc[complete["connections"] == busy, "implementation"]):
        low, high = (
            ends[
                (ends["implementation"] == model) & (ends["connections"] == busy) & (ends["idle_connections"] == n)
            ].iloc[0]
            for n in (fewest, most)
        )
        ratio, lo, hi = fieller(
            np.array([high["mean"]]),
            np.array([high["std"] ** 2]),
            np.array([high["n"]]),
            np.array([low["mean"]]),
            np.array([low["std"] ** 2]),
            np.array([low["n"]]),
        )
        table.append(
            {
                "model": model,
                "fewest": low["mean"],
                "most": high["mean"],
                "growth": ratio[0],
                "low": lo[0],
                "high": hi[0],
            }
        )
    return pd.DataFrame(table), busy, fewest, most


def answer_idle(results: Results) -> str:
    table, busy, fewest, most = growth(results)
    if table.empty:
        return "No model ran with both the fewest and the most idle connections at one busy count."
    unit = METRICS[COST].unit
    least = table.loc[table["growth"].idxmin()]
    rows = [
        {
            "Model": code(row.model),
            f"{fewest} idle [{unit}]": fmt_num(row.fewest),
            f"{most} idle [{unit}]": fmt_num(row.most),
            "Growth [95% CI]": _interval(row.growth, row.low, row.high),
            f"Against {least['model']}": fmt_num(row.growth / least["growth"]),
        }
        for row in table.itertuples()
    ]
    paying = [
        row.model
        for row in table.itertuples()
        if row.growth >= PAYS * least["growth"] and math.isfinite(row.low) and row.low > least["high"]
    ]
    lead = (
        f"With {busy} busy connections, the server's CPU time per request going from {fewest} to {most} idle "
        f"connections (the client opens them besides and never sends on them; the server holds them like the busy "
        f"ones). The least growth is {code(least['model'])}'s: {_interval(*least[['growth', 'low', 'high']])}."
    )
    if paying:
        verdict = (
            f"{', '.join(code(m) for m in paying)} pay for the idle connections: their cost per request grew at least "
            f"{fmt_num(PAYS)}× as much as {code(least['model'])}'s, with intervals apart. A model that hands the "
            "kernel every descriptor on each wait, and scans them all on return, pays per idle connection on every "
            "request; one whose kernel keeps the interest list pays only for the ready ones."
        )
    else:
        verdict = (
            f"No model's cost per request grew {fmt_num(PAYS)}× as much as {code(least['model'])}'s with intervals "
            "apart: on this host and at these counts, the idle connections did not set the models apart (the scan of "
            f"{most} descriptors per wait may cost little beside a wake-up, which is what a round trip costs here)."
        )
    return "\n\n".join([lead, markdown_table(rows), verdict])


def _interval(value: float, low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{fmt_num(value)}× (interval unbounded)"
    return fmt_interval(value, low, high, "×")


def further_pairs(results: Results) -> list[tuple[str, str]]:
    """(model, baseline) for every baseline the registry gives a model of the sweep besides the shared one."""
    present = set(results.summary["implementation"])
    parameters = results.manifest.parameters
    shared = implementations.baseline_of(parameters.declared).name
    return [
        (name, base)
        for name in implementations.ordered(present)
        for base in parameters.members[name].baselines
        if base != shared and base in present
    ]


def answer_pair(results: Results, challenger: str, baseline: str) -> str:
    rows = select(results.comparisons, challenger=challenger, baseline=baseline)
    least = int(rows["idle_connections"].min()) if len(rows) else 0
    rows = rows[rows["idle_connections"] == least]
    table = []
    for metric in ("requests_per_s", "latency_p99_us", COST):
        for row in select(rows, metric=metric).sort_values("connections").itertuples():
            verdict = (
                ("better" if row.challenger_better else "worse") if row.significant else "not significantly different"
            )
            table.append(
                {
                    "Metric": METRICS[metric].label,
                    "Connections": row.connections,
                    f"{challenger} / {baseline} [95% CI]": _interval(row.ratio, row.ratio_ci_low, row.ratio_ci_high),
                    "Verdict": verdict,
                }
            )
    if not table:
        return f"The sweep has no comparison of {code(challenger)} with {code(baseline)}."
    better = sum(1 for row in table if row["Verdict"] == "better")
    worse = sum(1 for row in table if row["Verdict"] == "worse")
    idle = f" ({least} idle connections)" if results.summary["idle_connections"].nunique() > 1 else ""
    lead = (
        f"{code(challenger)} against {code(baseline)}, point by point{idle}: significantly "
        f"better at {better} and worse at {worse} of {len(table)} points (Holm-corrected along connections)."
    )
    return "\n\n".join([lead, markdown_table(table)])
