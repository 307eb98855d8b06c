"""The servers experiment's answers to its questions, in sentences computed from one servers sweep: from how many
connections one model beats another, which scales best, where a descriptor limit bites, who gets served; and the
helpers the section's captions share with them (copylab.report.experiments.servers.report)."""

from __future__ import annotations

import math

import pandas as pd

from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS
from copylab.experiments.servers import SERVERS
from copylab.formatting import code, fmt_num, fmt_pct, fmt_size, markdown_table
from copylab.report import prose
from copylab.report.prose import MODEL_ONLY, axis_value, model_clause, row_interval, short_verdict
from copylab.report.results import Results, metric_rows, present, select
from copylab.vocabulary import limits

QUESTIONS: tuple[str, ...] = (
    "From how many connections does one model beat another?",
    "Which model scales best here, and why?",
    "Where does a descriptor limit bite?",
    "Who gets served: fairness across connections",
)
# What the crossover table compares, in its column order.
CROSSOVER_METRICS = ("requests_per_s", "latency_p99_us", "snd_cpu_us_per_request")
# A side busier than this share of its window had no CPU to spare: it may be what limits requests per second.
SATURATED = limits.SATURATED
# Served fraction and Jain's index at or above this count as every connection served equally.
FAIR = 0.99
# How much faster a model's cost per request must grow than every other's to be called growing faster.
GROWTH_MARGIN = 0.10


def models(results: Results) -> list[str]:
    """The models the sweep measured, in registry order."""
    return present(results)


def baseline(results: Results) -> str | None:
    """The model the others are compared with (the registry's baseline they share), when the sweep measured it."""
    shared = implementations.baseline_of(SERVERS).name
    return shared if shared in models(results) else None


def focus(results: Results) -> tuple[int, str]:
    """(response size, pinning) most statements describe: the smallest size, the pinning the manifest lists first."""
    rows = metric_rows(results, "requests_per_s")
    listed = [p for p in results.manifest.parameters.pinning if p in set(rows["pinning"])]
    return int(rows["size_bytes"].min()), listed[0] if listed else str(rows["pinning"].iloc[0])


def least_idle(results: Results) -> int:
    """The fewest idle connections of the sweep: what every statement but the idle connections' is about."""
    return int(results.summary["idle_connections"].min()) if len(results.summary) else 0


def metric_at(results: Results, metric: str, **where: object) -> pd.DataFrame:
    size, pinning = focus(results)
    where = {"size_bytes": size, "pinning": pinning, "idle_connections": least_idle(results), **where}
    return metric_rows(results, metric, **where).sort_values(["implementation", "connections"])


def connection_counts(results: Results) -> list[int]:
    return sorted(int(c) for c in metric_at(results, "requests_per_s")["connections"].unique())


def most_common(results: Results) -> int:
    """The largest connection count every measured model reached."""
    rows = metric_at(results, "requests_per_s")
    everyone = rows.groupby("connections")["implementation"].nunique()
    return int(everyone[everyone == everyone.max()].index.max())


def value_at(results: Results, metric: str, model: str, connections: int) -> pd.Series | None:
    rows = metric_at(results, metric, implementation=model, connections=connections)
    return None if rows.empty else rows.iloc[0]


def connections_text(value: float) -> str:
    return axis_value(SERVERS.axis, value)


def setting(results: Results) -> str:
    size, pinning = focus(results)
    return f"{fmt_size(size)} responses, CPU pinning {code(pinning)}"


# ---------------------------------------------------------------- introduction and captions


def crossover_rows(results: Results, metric: str) -> pd.DataFrame:
    size, pinning = focus(results)
    return select(
        results.crossovers, metric=metric, size_bytes=size, pinning=pinning, idle_connections=least_idle(results)
    )


def _crossover_cell(row: pd.Series | None) -> str:
    if row is None:
        return "not compared"
    first = row["first_significant_at"]
    significant_from = "" if pd.isna(first) else f" (significant from {connections_text(first)})"
    if row["status"] in MODEL_ONLY:
        return short_verdict(row)
    if row["status"] == "crossover":
        return (
            f"better from {fmt_num(row['crossover_at'])} connections "
            f"[{fmt_num(row['ci_low'])}, {fmt_num(row['ci_high'])}]" + significant_from
        )
    return {
        "challenger_always_better": "never worse" + significant_from,
        "challenger_never_better": "never better",
        "indistinguishable": "no significant difference",
        "multiple_crossings": "better and worse at different counts",
    }[row["status"]]


def answer_crossovers(results: Results) -> str:
    """A table of every model against its baseline: where it starts to beat it, per metric."""
    base = baseline(results)
    members = results.manifest.parameters.members
    challengers = [name for name in models(results) if name != base and base in members[name].baselines]
    if base is None or not challengers:
        return "The sweep has no model together with its baseline, so no crossover can be stated."
    found = {metric: crossover_rows(results, metric) for metric in CROSSOVER_METRICS}
    rows = []
    for name in challengers:
        row = {"model": code(name)}
        for metric in CROSSOVER_METRICS:
            match = found[metric][(found[metric]["challenger"] == name) & (found[metric]["baseline"] == base)]
            row[f"{METRICS[metric].label} vs {code(base)}"] = _crossover_cell(None if match.empty else match.iloc[0])
        rows.append(row)
    lead = " ".join(_where_each_wins(results, found["requests_per_s"], base))
    starving = [name for name in _starving(results) if name in challengers]
    caveat = (
        f"\n\n{', '.join(map(code, starving))} served a single connection where it held several: its latency "
        "describes that connection only (see who gets served, below)."
        if starving
        else ""
    )
    return (
        f"{lead} Tested at {', '.join(str(c) for c in connection_counts(results))} connections ({setting(results)}). "
        'Per metric, against each count ("never worse": significantly better at some counts and not '
        "significantly worse at any):\n\n" + markdown_table(rows) + caveat
    )


def _where_each_wins(results: Results, crossovers: pd.DataFrame, base: str) -> list[str]:
    """Sentences on where each model starts to serve more requests per second than BASE."""
    counts = connection_counts(results)
    sentences = []
    groups: dict[tuple[str, float], list[str]] = {}
    for _, row in crossovers[crossovers["baseline"] == base].iterrows():
        if row["status"] == "crossover":
            sentences.append(
                f"{code(row['challenger'])} overtakes {code(base)} in requests per second from about "
                f"{connections_text(row['crossover_at'])} (95% interval {fmt_num(row['ci_low'])} to "
                f"{fmt_num(row['ci_high'])})."
            )
        elif row["status"] in MODEL_ONLY:
            span = f"{counts[0]} to {connections_text(counts[-1])}"
            sentences.append(f"{code(row['challenger'])} against {code(base)}: {model_clause(row, span)}.")
        else:
            first = row["first_significant_at"]
            groups.setdefault((row["status"], math.nan if pd.isna(first) else float(first)), []).append(
                row["challenger"]
            )
    for (status, first), names in groups.items():
        who = ", ".join(map(code, names))
        serve = "serves" if len(names) == 1 else "serve"
        if status == "challenger_always_better" and math.isfinite(first):
            below = [c for c in counts if c < first]
            where = (
                f": the change lies between {below[-1]} and {int(first)} connections, where this sweep has no count"
                if below
                else ""
            )
            sentences.append(
                f"{who} {serve} significantly more requests per second than "
                f"{code(base)} at every count from {connections_text(first)} on and no fewer below{where}."
            )
        elif status == "challenger_never_better":
            sentences.append(f"{who} never {serve} more than {code(base)} here.")
        elif status == "indistinguishable":
            sentences.append(f"{who} and {code(base)} are not significantly different at any count.")
        elif status == "challenger_always_better":
            sentences.append(f"{who} {serve} significantly more than {code(base)} at some counts and no fewer at any.")
        else:
            sentences.append(f"{who} {serve} more than {code(base)} at some counts and fewer at others.")
    return sentences


def _best(results: Results, metric: str, count: int) -> list[str]:
    """The models whose interval overlaps the best one's at COUNT connections (ties are named together)."""
    found = {m: value_at(results, metric, m, count) for m in models(results)}
    values = {m: v for m, v in found.items() if v is not None and math.isfinite(v["mean"])}
    if not values:
        return []
    higher = METRICS[metric].direction == "higher"
    best = max(values.values(), key=lambda v: v["mean"] if higher else -v["mean"])
    return [m for m, v in values.items() if v["ci_low"] <= best["ci_high"] and best["ci_low"] <= v["ci_high"]]


def _means(results: Results, metric: str, count: int) -> dict[str, float]:
    """Each measured model's mean of METRIC at COUNT connections."""
    return {m: float(v["mean"]) for m in models(results) if (v := value_at(results, metric, m, count)) is not None}


def answer_scaling(results: Results) -> str:
    """Which model serves the most at the largest common count, what a request costs each, and who was saturated."""
    count = most_common(results)
    table = []
    for model in models(results):
        cells = {"model": code(model)}
        for metric, unit in (
            ("requests_per_s", ""),
            ("latency_p99_us", "µs"),
            ("snd_cpu_us_per_request", "µs"),
            ("snd_ctx_per_request", ""),
            ("snd_busy", ""),
            ("rcv_busy", ""),
        ):
            cells[METRICS[metric].label] = row_interval(value_at(results, metric, model, count), unit)
        table.append(cells)
    best = _best(results, "requests_per_s", count)
    switches = _means(results, "snd_ctx_per_request", count)
    per_request = [m for m, v in switches.items() if v >= 0.5]
    batched = [m for m, v in switches.items() if v < 0.5]
    why = []
    if per_request and batched:
        why.append(
            f"The server of {', '.join(map(code, per_request))} switched context about once per request or more "
            f"({', '.join(fmt_num(switches[m]) for m in per_request)}): each request wakes the thread or process "
            "blocked on its connection, and the CPU switches to it and away again. "
            f"{', '.join(map(code, batched))} switched {', '.join(fmt_num(switches[m]) for m in batched)} times per "
            "request: one thread collects every ready connection in one wait and answers them in a row, so the "
            "wake-ups and switches are shared by many requests."
        )
    cpu = _means(results, "snd_cpu_us_per_request", count)
    if cpu:
        cheapest, dearest = min(cpu, key=cpu.__getitem__), max(cpu, key=cpu.__getitem__)
        why.append(
            f"A request cost the server {fmt_num(cpu[cheapest])} µs of CPU with {code(cheapest)} and "
            f"{fmt_num(cpu[dearest])} µs with {code(dearest)}. A thread or process per connection also costs a "
            "stack and a scheduler entity per connection, which copylab does not measure."
        )
    busy = {side: {m: value_at(results, f"{side}_busy", m, count) for m in models(results)} for side in ("snd", "rcv")}
    both = [
        m
        for m in models(results)
        if all((v := busy[s][m]) is not None and v["mean"] >= SATURATED for s in ("snd", "rcv"))
    ]
    if both:
        client = [value_at(results, "rcv_cpu_us_per_request", m, count) for m in both]
        spent = [float(v["mean"]) for v in client if v is not None]
        cost = f" (it spent {fmt_num(min(spent))} to {fmt_num(max(spent))} µs of CPU per request)" if spent else ""
        why.append(
            f"With {', '.join(map(code, both))} both the server and the client were on their CPU at least "
            f"{fmt_pct(SATURATED)} of the window. The client answers each response with the same work a server "
            f"does for a request, a receive and a send{cost}. So against the cheapest servers the client is "
            "saturated too. Their requests per second are what the pair could do, a lower bound of the server's own "
            "capacity; the server's CPU time per request is the comparison to trust."
        )
    over = [
        f"{code(m)}'s {'server' if side == 'snd' else 'client'} {fmt_num(float(v['mean']))}"
        for side in ("snd", "rcv")
        for m in models(results)
        if (v := busy[side][m]) is not None and v["mean"] > 1
    ]
    if over:
        why.append(
            f"A share of the window above 1 ({', '.join(over)}) is more than one CPU, which a process pinned to one "
            "CPU cannot spend on its own work. getrusage charges a process the interrupt work (softirq) that runs "
            "while it is on its CPU, the receive work for the peer's packets among it, and its sampled times have "
            "an error of their own; such a share is flagged here, not read as a cost."
        )
    lead = (
        f"At {connections_text(count)} ({setting(results)}), {', '.join(map(code, best))} served the most requests "
        "per second" + (" (their intervals overlap)." if len(best) > 1 else ".")
        if best
        else f"At {connections_text(count)} no model has a requests-per-second result."
    )
    return "\n\n".join([lead, *why, markdown_table(table)])


def answer_limits(results: Results) -> str:
    """Where a model's own connection limit lies, how far the sweep went, and how its cost grew on the way."""
    limited = [model for model in SERVERS.implementations if model.max_connections is not None]
    if not limited:
        return "No model in the registry has a connection limit of its own."
    counts = connection_counts(results)
    largest = counts[-1] if counts else 0
    parts = []
    for model in limited:
        name, limit = model.name, model.max_connections
        reach = (
            f"this sweep's largest count, {largest}, stayed below it"
            if largest <= (limit or 0)
            else f"this sweep went to {largest}"
        )
        parts.append(
            f"A {code(name)} server holds at most {limit} connections: its descriptor sets have room for "
            f"descriptors below FD_SETSIZE (1024), less the server's own. {reach[0].upper()}{reach[1:]}; a sweep "
            f"asking {code(name)} for more is refused before it runs, and the server itself refuses more than "
            f"{limit} with one line."
        )
        growth = _growth(results, name)
        if growth:
            parts.append(growth)
    return "\n\n".join(parts)


def _cost_changes(results: Results) -> tuple[dict[str, float], tuple[int, int]]:
    """Each model's relative change of server CPU time per request from the fewest connections that share the
    server (more than one, when the sweep has two such counts) to the most, and those two counts."""
    counts = connection_counts(results)
    if len(counts) < 2:
        return {}, (0, 0)
    shared = [count for count in counts if count > 1]
    low, high = (shared[0] if len(shared) >= 2 else counts[0]), counts[-1]
    changes = {}
    for model in models(results):
        before, after = (value_at(results, "snd_cpu_us_per_request", model, c) for c in (low, high))
        if before is not None and after is not None and before["mean"] > 0:
            changes[model] = float(after["mean"] / before["mean"] - 1)
    return changes, (low, high)


def _growth(results: Results, name: str) -> str:
    """How NAME's server CPU per request changed from few to many connections, against every other model's."""
    changes, (low, high) = _cost_changes(results)
    if name not in changes:
        return ""
    others = {m: change for m, change in changes.items() if m != name}
    listed = ", ".join(f"{code(m)} {change * 100:+.0f}%" for m, change in others.items())
    grew_faster = bool(others) and changes[name] > max(others.values()) + GROWTH_MARGIN
    head = (
        f"From {connections_text(low)} to {connections_text(high)}, {code(name)}'s server CPU time per request "
        f"changed by {changes[name] * 100:+.0f}% (others: {listed})"
    )
    if grew_faster:
        return (
            head + ": more than any other model's. Every call hands the kernel the whole set of descriptors and "
            "scans it, so its cost grows with the connections held, not with the ready ones."
        )
    return (
        head + ". Each call scans every held descriptor, but under this closed-loop load most of them are ready "
        "at each call, so the scan is shared by as many requests. The scan's cost would show with many "
        "connections held and few busy, which this load does not test."
    )


def answer_fairness(results: Results) -> str:
    """Per model, the connections served and Jain's index wherever not every connection was served equally."""
    lines = []
    equal = []
    for model in models(results):
        unfair = []
        for count in connection_counts(results):
            served = value_at(results, "served_fraction", model, count)
            fairness = value_at(results, "fairness", model, count)
            if served is None or fairness is None:
                continue
            if served["mean"] < FAIR or fairness["mean"] < FAIR:
                held = prose.count(round(served["mean"] * count, 2))
                unfair.append(
                    f"at {connections_text(count)} it served {held} of {prose.count(count)} on average "
                    f"(Jain's index {fmt_num(fairness['mean'])}; 1/{count} = {fmt_num(1 / count)})"
                )
        if unfair:
            lines.append(f"- {code(model)}: " + "; ".join(unfair) + ".")
        else:
            equal.append(model)
    starving = _starving(results)
    text = []
    if equal:
        text.append(
            f"{', '.join(map(code, equal))} served every connection, and about equally (Jain's index at least "
            f"{fmt_num(FAIR)}), at every count."
        )
    if lines:
        text.append("Not every connection was served, or not equally:\n\n" + "\n".join(lines))
    if starving:
        text.append(
            f"{', '.join(map(code, starving))} served a single connection in the whole window: the others waited "
            "in the accept queue while the client kept the first one busy. Its latency and requests per second "
            "describe that one connection only; the starved connections completed no round trip to time."
        )
    return "\n\n".join(text)


def _starving(results: Results) -> list[str]:
    """Models that served a single connection at some count of several: the others got nothing."""
    return [
        m
        for m in models(results)
        if any(
            (v := value_at(results, "served_fraction", m, c)) is not None and v["mean"] * c <= 1.5 and c > 1
            for c in connection_counts(results)
        )
    ]


def answers(results: Results) -> list[tuple[str, str]]:
    """(question, Markdown answer) for the section's questions, in order."""
    bodies = (answer_crossovers(results), answer_scaling(results), answer_limits(results), answer_fairness(results))
    return list(zip(QUESTIONS, bodies, strict=True))
