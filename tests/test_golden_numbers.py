"""The golden texts, number by number, against what the analysis of their reference sweeps wrote: the copies
report's sections on the sender behind a sink and on the receiver's side (comparisons.csv, summary.csv, trials.csv,
manifest.json), the copy bound's table (the calibration in the manifest, summary.csv), question 2's savings (the
cache-level reference's trials.csv, paired by block and pooled by level), question 3's bullets (the thread
reference's summary.csv and trials.csv, its paired changes recomputed), question 6's table (its trials.csv,
recomputed), the open-load section (its trials.csv, recomputed) and every value the servers section gives with its
interval (a row of its summary, comparisons or crossovers): a numeric bug regenerated into a golden text with --write
fails here.  tests/test_reference_report.py holds questions 1, 4 and 5 and the limitations to their tables the same
way."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from copylab.declarations.implementations import STUDY_LAYOUT
from copylab.declarations.metrics import add_metrics
from copylab.paths import (
    REFERENCE_CACHES_DATA,
    REFERENCE_DATA,
    REFERENCE_MMAP_DATA,
    REFERENCE_MMAP_SMALL_DATA,
    REFERENCE_OPEN_LOAD_DATA,
    REFERENCE_SERVERS_DATA,
    REFERENCE_SINK_DATA,
    REFERENCE_THREADS_DATA,
)
from copylab.report.experiments.servers.figures import fmt_rate
from copylab.report.results import select
from copylab.vocabulary.values import NO_LAYOUT
from tests.reference_analyses import References
from tests.test_reference_report import (
    GOLDEN,
    GOLDEN_OPEN_LOAD,
    GOLDEN_SERVERS,
    THROUGHPUT,
    _close,
    _size,
)

_RATIO = re.compile(r"([\d.,]+) \[([\d.,]+),\s+([\d.,]+)\](?: (faster|slower))?")
_SPAN = r"([\d.]+)[×x](?:\s+to\s+([\d.]+)[×x])?"


@pytest.fixture(scope="module")
def analysed(references: References) -> dict[str, Path]:
    """The sink's and the mapping receiver's references, analysed: each name and its directory of tables."""
    chosen = (REFERENCE_SINK_DATA, REFERENCE_MMAP_DATA, REFERENCE_MMAP_SMALL_DATA)
    return {reference.name: references(reference).store.directory for reference in chosen}


def _part(heading: str) -> str:
    """The golden text under '## HEADING', its separators included, up to the next heading."""
    text = GOLDEN.read_text()
    start = text.index(f"## {heading}\n")
    end = re.compile(r"^#{1,2} ", re.M).search(text, start + 3)
    return text[start : end.start() if end else len(text)]


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each Markdown table of TEXT: its header's cells and its rows' cells."""
    found, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif block:
            found.append((block[0], block[2:]))
            block = []
    return found


def _check_ratio(cell: str, row: pd.Series) -> None:
    """A cell 'RATIO [LOW, HIGH] faster|slower' against its comparisons.csv ROW."""
    ratio, low, high, verdict = _RATIO.fullmatch(cell).groups()  # type: ignore[union-attr]
    assert _close(ratio, row["ratio"]) and _close(low, row["ratio_ci_low"]) and _close(high, row["ratio_ci_high"]), (
        cell,
        row.to_dict(),
    )
    expected = ("faster" if row["challenger_better"] else "slower") if row["significant"] else None
    assert verdict == expected, (cell, expected)


def _one(frame: pd.DataFrame, **values: object) -> pd.Series:
    rows = frame
    for column, value in values.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, values
    return rows.iloc[0]


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


def test_the_sink_sections_numbers_are_its_tables(analysed):
    directory = analysed["reference-sink"]
    text = _part("The sender behind a sink")
    trials = pd.read_csv(directory / "trials.csv", low_memory=False)
    comparisons, summary = (pd.read_csv(directory / f"{name}.csv") for name in ("comparisons", "summary"))
    parameters = _manifest(directory)["parameters"]
    checked = 0

    mtu, segment = re.search(r"MTU ([\d,]+) B; .*? segments of ([\d,]+) B", text).groups()  # type: ignore[union-attr]
    assert (_number(mtu), _number(segment)) == (parameters["mtu"], parameters["mtu"] - 28)
    dropped, count = re.search(r"shows ([\d,]+) datagrams dropped over ([\d,]+) trials", text).groups()  # type: ignore[union-attr]
    assert int(dropped.replace(",", "")) == trials["sink_datagrams"].sum() and int(count.replace(",", "")) == len(
        trials
    )
    distinct = re.search(r"cycled through ([\d,]+) distinct messages", text)
    assert distinct and _number(distinct[1]) == parameters["distinct_messages"]
    checked += 5

    for sender, share, completed in re.findall(r"`(\w+)`: the kernel copied ([\d.]+)% of its ([\d,]+) completed", text):
        sends = trials[(trials["implementation"] == sender) & (trials["status"] == "ok")]
        assert _number(completed) == sends["zc_completed"].sum(), sender
        assert _close(share, 100 * sends["zc_copied"].sum() / sends["zc_completed"].sum()), sender
        checked += 2
    assert checked == 9, "both zero-copy senders' shares were read"

    threads, pinning = re.search(r"\((\d+) threads?, (?:CPU )?pinning `([^`]+)`\)", text).groups()  # type: ignore[union-attr]
    where = dict(workload="stream", metric=THROUGHPUT, threads=int(threads), pinning=pinning)
    tables = _tables(text)
    assert tables
    for header, rows in tables:
        for cells in rows:
            size = _size(cells[0])
            for title, cell in zip(header[1:], cells[1:], strict=True):
                if cell == "n/a":  # a side contender, measured at --side-sizes only
                    assert size not in set(
                        comparisons["size_bytes"][comparisons["challenger"] == title[1:].split("`")[0]]
                    )
                    continue
                if pair := re.fullmatch(r"`(\w+)` / `(\w+)`", title):
                    _check_ratio(
                        cell, _one(comparisons, challenger=pair[1], baseline=pair[2], size_bytes=size, **where)
                    )
                else:
                    sender = re.fullmatch(r"`(\w+)` Gbit/s", title)[1]  # type: ignore[index]
                    row = _one(summary, implementation=sender, size_bytes=size, receive="copy", **where)
                    mean, low, high, _ = _RATIO.fullmatch(cell).groups()  # type: ignore[union-attr]
                    assert _close(mean, row["mean"]) and _close(low, row["ci_low"]) and _close(high, row["ci_high"])
                checked += 3
    # at least the deciding senders (two_copy, one_copy, zero_copy) at every size
    assert checked >= 9 + 3 * 5 * 3, checked


_SHARES = {"Mapped": "rx_mapped_bytes", "Copied in the call": "rx_copybuf_bytes", "Copied by recv()": "rx_copied_bytes"}


def _check_receiver_table(header: list[str], rows: list[list[str]], directory: Path) -> dict[str, list]:
    """One page size's table against its sweep's comparisons.csv and trials.csv; returns each sender's verdicts and
    shares mapped, as the table gives them."""
    comparisons = pd.read_csv(directory / "comparisons.csv")
    trials = pd.read_csv(directory / "trials.csv", low_memory=False)
    assert header[:3] == ["Sender", "Size", "Throughput mmap / copy"] and set(header[3:]) == set(_SHARES)
    said: dict[str, list] = {}
    for cells in rows:
        sender, size = cells[0].strip("`"), _size(cells[1])
        row = _one(comparisons, challenger=f"{sender}/mmap", baseline=sender, size_bytes=size, metric=THROUGHPUT)
        _check_ratio(cells[2], row)
        mapped = trials[
            (trials["implementation"] == sender)
            & (trials["size_bytes"] == size)
            & (trials["receive"] == "mmap")
            & (trials["status"] == "ok")
        ]
        whole = sum(mapped[column].fillna(0).sum() for column in _SHARES.values())
        for title, cell in zip(header[3:], cells[3:], strict=True):
            assert _close(cell.rstrip("%"), 100 * mapped[_SHARES[title]].fillna(0).sum() / whole), (sender, size, title)
        said.setdefault(sender, []).append((_RATIO.fullmatch(cells[2])[4], float(cells[3].rstrip("%"))))  # type: ignore[index]
    return said


def _median(trials: pd.DataFrame, sender: str, size: int, receive: str) -> float:
    rows = select(trials, implementation=sender, size_bytes=size, receive=receive, status="ok", workload="stream")
    return float(rows["throughput_gbps"].median())


def test_the_receivers_sections_numbers_are_its_tables(analysed):
    text = _part("The receiver's side")
    tables = _tables(text)
    assert len(tables) == 2, "a table per page size"
    # the tables' page sizes, as their lead sentences name them: the kernel's default (reference-mmap), then small
    labels = re.findall(r"^With (.+?): stream, ", text, re.M)
    assert len(labels) == 2 and "default" in labels[0], labels
    by_pages = dict(zip(labels, (analysed["reference-mmap"], analysed["reference-mmap-small"]), strict=True))
    short = next(block for block in text.split("\n\n") if block.startswith("**In short:**"))
    for (pages, directory), (header, rows) in zip(by_pages.items(), tables, strict=True):
        trials = pd.read_csv(directory / "trials.csv", low_memory=False)
        lead = re.search(rf"With {re.escape(pages)}: [^\n]*?; (\d+) trials", text)
        assert lead is None or int(lead[1]) == len(trials), pages
        said = _check_receiver_table(header, rows, directory)
        # the short answer, sender by sender: the verdicts counted and the span of the shares mapped in that table
        clauses = re.search(rf"With {re.escape(pages)}: (.*?)\.(?: |$)", short)
        assert clauses, (pages, short)
        for sender, found in said.items():
            clause = re.search(
                rf"`{sender}` faster at (\d+) of (\d+) sizes and slower at (\d+), with ([\d.]+)%(?: to ([\d.]+)%)?",
                clauses[1],
            )
            verdicts = [verdict for verdict, _ in found]
            assert clause, (sender, clauses[1])
            assert [int(clause[i]) for i in (1, 2, 3)] == [
                verdicts.count("faster"),
                len(found),
                verdicts.count("slower"),
            ]
            shares = [share for _, share in found]
            assert (float(clause[4]), float(clause[5] or clause[4])) == (min(shares), max(shares)), clause[0]

    # small pages against the kernel's default: medians of the two sweeps, for the copying senders both measured
    large, small = (pd.read_csv(d / "trials.csv", low_memory=False) for d in by_pages.values())
    copying = re.search(rf"Receiving by copy from `(\w+)`, the median throughput with small pages was {_SPAN}", text)
    mapping = re.search(rf"Receiving by mapping with small pages was {_SPAN}", text)
    assert copying and mapping, text
    sizes = sorted(set(small[small["implementation"] == copying[1]]["size_bytes"]))
    copy_ratios = [_median(small, copying[1], s, "copy") / _median(large, copying[1], s, "copy") for s in sizes]
    best_ratios = [_median(small, copying[1], s, "mmap") / _median(large, copying[1], s, "copy") for s in sizes]
    for match, ratios in ((copying, copy_ratios), (mapping, best_ratios)):
        low, high = match.groups()[-2:]
        assert _close(low, min(ratios)) and _close(high or low, max(ratios)), (match[0], ratios)


# ---------------------------------------------------------------- the open-load golden

TARGET_US = 1000.0  # the target the golden text states, read back below


def _rate(text: str) -> float:
    """A rate as the report prints it ('29.2k/s', '500/s')."""
    number = re.fullmatch(r"([\d.]+)(k?)/s", text.strip())
    assert number, text
    return float(number[1]) * (1000 if number[2] else 1)


def test_the_open_load_sections_numbers_are_its_trials(references):
    """Each model's row recomputed from the open-load reference's trials.csv: the geometric mean p99 at each rate,
    where it crosses the target (interpolated on log axes), the trials per rate and the client's lag."""
    text = GOLDEN_OPEN_LOAD.read_text()
    directory = references(REFERENCE_OPEN_LOAD_DATA).store.directory
    trials = pd.read_csv(directory / "trials.csv", low_memory=False)
    trials = trials[trials["offered_rate"] > 0]
    target = re.search(r"the dashed line is the ([\d,]+) µs target", text)
    assert target and _number(target[1]) == TARGET_US
    rates = sorted(trials["offered_rate"].unique())
    offered = re.search(r"on a schedule at (.*?) over all busy connections \((\d+)\)", text)
    assert offered and [_rate(r) for r in offered[1].split(", ")] == rates
    assert int(offered[2]) == trials["connections"].max()
    header, rows = _tables(text)[0]
    assert len(rows) == trials["implementation"].nunique() > 0
    for cells in rows:
        row = dict(zip(header, cells, strict=True))
        mine = trials[trials["implementation"] == row["model"].strip("`")]
        ok = mine[mine["status"] == "ok"]
        assert int(row["connections"]) == mine["connections"].iloc[0]
        assert int(row["trials per rate"]) == ok.groupby("offered_rate").size().min()
        assert _close(row["client lag p99 (µs)"], ok["issue_lag_p99_us"].median()), row
        means = np.log(ok["latency_p99_us"]).groupby(ok["offered_rate"]).mean()
        beyond = [rate for rate in rates if means[rate] > math.log(TARGET_US)]
        cell = row["highest rate within the target"]
        if not beyond:
            assert cell == f"at least {fmt_rate(rates[-1])}/s (every rate judged kept it)", cell
        elif beyond[0] == rates[0]:
            assert cell == f"below {fmt_rate(rates[0])}/s (the lowest rate exceeded it)", cell
        else:
            above = rates.index(beyond[0])
            x0, x1 = math.log(rates[above - 1]), math.log(rates[above])
            y0, y1 = means[rates[above - 1]], means[rates[above]]
            crossing = math.exp(x0 + (math.log(TARGET_US) - y0) * (x1 - x0) / (y1 - y0))
            assert _close(cell.split()[0].removesuffix("k/s"), crossing / 1000), (cell, crossing)
    lags = trials.loc[trials["status"] == "ok", "issue_lag_p99_us"]
    worst = re.search(r"The largest in any trial was ([\d,.]+) µs, ([\d.]+)% of the target", text)
    assert worst and _close(worst[1], lags.max()) and _close(worst[2], 100 * lags.max() / TARGET_US)


# ---------------------------------------------------------------- every interval of the servers golden

# A value with its 95% interval as the report prints it: "12,417 [11,660, 13,173]", "0.947 [0.860, 1.03]".
_INTERVAL = re.compile(r"(-?[\d.,]+)\s?\[(?:≤\s)?(-?[\d.,]+),\s+(?:≥\s)?(-?[\d.,]+)\]")


_WRITTEN = {
    "summary": ["mean", "ci_low", "ci_high"],
    "comparisons": ["ratio", "ratio_ci_low", "ratio_ci_high"],
    "crossovers": ["crossover_at", "ci_low", "ci_high"],
}


def _intervals_written(directories: list[Path]) -> np.ndarray:
    """Every (value, low, high) the analysis wrote into the sweeps' tables: summary.csv's means, comparisons.csv's
    ratios and crossovers.csv's crossing points, each with its interval."""
    found = [
        pd.read_csv(directory / f"{name}.csv")[columns].dropna().to_numpy(dtype=float)
        for directory in directories
        for name, columns in _WRITTEN.items()
    ]
    return np.concatenate(found)


def test_every_interval_in_the_servers_golden_is_one_the_analysis_wrote(references):
    """Each value the servers section prints with its interval is a row of a table the analysis of the servers
    reference wrote, all three numbers at once (a misstated or mislabelled one matches none)."""
    written = _intervals_written([references(REFERENCE_SERVERS_DATA).store.directory])
    text = GOLDEN_SERVERS.read_text()
    printed = _INTERVAL.findall(text)
    assert printed
    # as _close: the report prints about three significant digits
    unmatched = [
        triple
        for triple in printed
        if not np.isclose(written, [float(n.replace(",", "")) for n in triple], rtol=5e-3, atol=1e-12).all(1).any()
    ]
    assert not unmatched, f"{len(unmatched)} of {len(printed)} intervals match no table row: {unmatched[:10]}"


# ---------------------------------------------------------------- the copy bound


def _rounded(written: str, value: float) -> bool:
    """Whether WRITTEN is VALUE rounded to the decimals it shows (a share as '57%')."""
    decimals = len(written.partition(".")[2])
    return abs(float(written.replace(",", "")) - value) <= 0.5 * 10**-decimals + 1e-9


_AT = re.compile(r"([\d,]+\s(?:B|KiB|MiB)), (\d+) threads?")


def test_the_copy_bounds_numbers_are_the_calibration_and_the_summary(references):
    """The copy bound's table: memcpy's speed from the manifest's calibration, each bound that over the copies
    made, each best the highest stream throughput summary.csv holds for the sender and receive mode, where it was
    measured, and its share of the bound."""
    directory = references(REFERENCE_DATA).store.directory
    summary = pd.read_csv(directory / "summary.csv")
    memcpy = _manifest(directory)["calibration"]["memcpy_gbps"]
    text = GOLDEN.read_text()
    said = re.search(r"Single-core memcpy on this host copies ([\d.]+) Gbit/s from memory", text)
    assert said and _close(said[1], memcpy)
    header, rows = next((h, r) for h, r in _tables(text) if "Copies" in h and any("ound, Gbit/s" in c for c in h))
    assert rows
    # the columns by what they hold: the sender, receive mode and copies first, the share of the bound last
    best_column = next(c for c in header if c.startswith("Best"))
    bound_column = next(c for c in header if c.lower().endswith("bound, gbit/s"))
    for cells in rows:
        row = dict(zip(header, cells, strict=True))
        sender, receive, copies = cells[0].strip("`"), cells[1], int(cells[2])
        bound = memcpy / copies
        assert _close(row[bound_column], bound), row
        best, _, at = row[best_column].partition(" (")
        if "At size" in row:
            size, threads = row["At size"], row["Threads"]
        else:
            size, threads = _AT.fullmatch(row.get("At") or at.rstrip(")")).groups()  # type: ignore[union-attr]
        mine = summary[
            (summary["implementation"] == sender)
            & (summary["receive"] == receive)
            & (summary["workload"] == "stream")
            & (summary["metric"] == THROUGHPUT)
            & (summary["layout"].isin([STUDY_LAYOUT, NO_LAYOUT]))  # the study's messages, or none of a layout
        ]
        top = mine.loc[mine["mean"].idxmax()]
        assert (top["size_bytes"], top["threads"]) == (_size(size), int(threads)), (row, top.to_dict())
        assert _close(best, top["mean"]), row
        share = [c for c in header if "%" in c or "share" in c.lower()]
        assert not share or _rounded(row[share[0]].rstrip("%"), 100 * top["mean"] / bound), row


# ---------------------------------------------------------------- question 6


def test_question_6s_skb_table_is_the_references_trials(references):
    """Question 6's table recomputed from the reference's trials.csv (BPF counts) at the size the answer names: KiB
    per skb per trial with its Student-t 95% interval, fragments per skb and KiB per fragment pooled, pages pinned
    per message; each throughput a summary.csv row (whose threads and pinning the rest is computed at)."""
    directory = references(REFERENCE_DATA).store.directory
    trials = pd.read_csv(directory / "trials.csv", low_memory=False)
    summary = pd.read_csv(directory / "summary.csv")
    text = _part("Identify one unexpected result and explain it using OS or hardware concepts.")
    size = _size(re.search(r"\*\*Claim\.\*\* At ([\d,]+\s(?:B|KiB|MiB)) ", text)[1])  # type: ignore[index]
    # one table, or one split in two when its cells are wide: joined again by their first column
    parts = [(h, r) for h, r in _tables(text) if h[0] == "Sender, layout"]
    joined: dict[str, dict[str, str]] = {}
    for header, rows in parts:
        for cells in rows:
            joined.setdefault(cells[0], {}).update(zip(header, cells, strict=True))
    assert len(joined) == 3 and parts
    for row in joined.values():
        sender, layout = row["Sender, layout"].replace("`", "").split()
        speed = [float(n) for n in _INTERVAL.fullmatch(row["Throughput, Gbit/s"]).groups()]  # type: ignore[union-attr]
        at = summary[
            (summary["implementation"] == sender)
            & (summary["layout"] == layout)
            & (summary["size_bytes"] == size)
            & (summary["metric"] == THROUGHPUT)
            & (summary["workload"] == "stream")
            & (summary["receive"] == "copy")
        ]
        at = at[np.isclose(at[["mean", "ci_low", "ci_high"]].to_numpy(dtype=float), speed, rtol=5e-3).all(1)]
        assert len(at) == 1, (row, "no summary row holds this throughput")
        mine = trials[
            (trials["implementation"] == sender)
            & (trials["layout"] == layout)
            & (trials["size_bytes"] == size)
            & (trials["threads"] == at["threads"].iloc[0])
            & (trials["pinning"] == at["pinning"].iloc[0])
            & (trials["status"] == "ok")
            & (trials["workload"] == "stream")
            & (trials["receive"] == "copy")
            & (trials["snd_skbs"] > 0)
        ]
        per_skb = (mine["bytes"] / mine["snd_skbs"] / 1024).to_numpy(dtype=float)
        half = stats.t.ppf(0.975, per_skb.size - 1) * per_skb.std(ddof=1) / math.sqrt(per_skb.size)
        kib = [float(n) for n in _INTERVAL.fullmatch(row["KiB per skb (95% CI)"]).groups()]  # type: ignore[union-attr]
        assert np.isclose(kib, [per_skb.mean(), per_skb.mean() - half, per_skb.mean() + half], rtol=5e-3).all(), row
        frags = mine["snd_skb_frags"].sum() / mine["snd_skbs"].sum()
        assert _close(row["Fragments per skb"], frags) and _close(row["KiB per fragment"], per_skb.mean() / frags)
        pinned = row["Pages pinned per message"]
        assert pinned == "none" if sender != "zero_copy" else _close(pinned, mine["zc_pages_per_message"].mean())


# ---------------------------------------------------------------- question 3


def _t_interval(values: np.ndarray) -> tuple[float, float, float]:
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    return values.mean(), values.mean() - half, values.mean() + half


def test_question_3s_numbers_are_the_thread_references(references):
    """Each pinning's bullet recomputed from the thread reference: CPU per byte at the fewest and most threads (its
    summary.csv), each change against one thread paired by block (log ratios per repetition, a t interval), context
    switches per message and the time a message spends in the system (trials.csv)."""
    directory = references(REFERENCE_THREADS_DATA).store.directory
    summary = pd.read_csv(directory / "summary.csv")
    trials = add_metrics(pd.read_csv(directory / "trials.csv", low_memory=False))
    text = _part("How does thread count interact with cache contention?")
    bullets = re.findall(r"^- `(\w+)`: (.*)$", text, re.M)
    assert bullets
    for pinning, bullet in bullets:
        sender = re.search(r"The thread experiment: `(\w+)`", text)[1]  # type: ignore[index]
        mine = trials[
            (trials["implementation"] == sender)
            & (trials["pinning"] == pinning)
            & (trials["status"] == "ok")
            & (trials["workload"] == "stream")
        ]
        mine = mine[mine["size_bytes"] == mine["size_bytes"].max()]
        counts = sorted(mine["threads"].unique())
        costs = re.search(r"CPU per byte ([\d.]+) ns at (\d+) threads?, ([\d.]+) ns at (\d+);", bullet)
        assert costs and [int(costs[2]), int(costs[4])] == [counts[0], counts[-1]], bullet
        for written, count in ((costs[1], counts[0]), (costs[3], counts[-1])):
            row = _one(summary, implementation=sender, pinning=pinning, threads=count, metric="cpu_ns_per_byte")
            assert _close(written, row["mean"]), (bullet, count)
        blocks = mine.pivot_table(index="repetition", columns="threads", values="cpu_ns_per_byte", aggfunc="mean")
        changes = re.findall(r"(\d+): ([+-]\d+)% \[([+-]\d+)%, ([+-]\d+)%\]", bullet)
        assert [int(count) for count, *_ in changes] == counts[1:], bullet
        for count, *percents in changes:
            log_ratios = np.log(blocks[int(count)] / blocks[counts[0]]).dropna().to_numpy(dtype=float)
            expected = [100 * (math.exp(v) - 1) for v in _t_interval(log_ratios)]
            assert all(_rounded(p, e) for p, e in zip(percents, expected, strict=True)), (count, percents, expected)
        switches = re.search(r"Context switches per message ([\d.]+) to ([\d.]+)", bullet)
        at = {count: mine[mine["threads"] == count] for count in (counts[0], counts[-1])}
        assert switches and _close(switches[1], at[counts[0]]["ctx_switches_per_msg"].mean())
        assert _close(switches[2], at[counts[-1]]["ctx_switches_per_msg"].mean())
        residence = re.search(r"spends ([\d,]+) to ([\d,]+) µs in the system", bullet)
        assert residence
        for written, count in zip(residence.groups(), (counts[0], counts[-1]), strict=True):
            per_second = (at[count]["messages"] / at[count]["measured_s"]).mean()
            assert _close(written, count / per_second * 1e6), (bullet, count)


# ---------------------------------------------------------------- question 2

_SAVED = "snd_user_ns_per_byte"  # the sender's user-space CPU per byte: where the packing copy runs


def test_question_2s_savings_are_the_cache_references_blocks(references):
    """Question 2 recomputed from the cache-level reference's trials.csv: each size's saving (two_copy's sender
    user CPU per byte minus one_copy's, block by block, a t interval), the level the answer names (the blocks of
    the sizes whose working set overflows it, pooled) and its margin over the next (Welch's interval)."""
    directory = references(REFERENCE_CACHES_DATA).store.directory
    trials = add_metrics(pd.read_csv(directory / "trials.csv", low_memory=False))
    ok = trials[(trials["status"] == "ok") & (trials["workload"] == "stream")]
    blocks = ok.pivot_table(index=["size_bytes", "repetition"], columns="implementation", values=_SAVED)
    saving = (blocks["two_copy"] - blocks["one_copy"]).dropna()
    text = _part("Which cache level shows the most reduction in misses, and why?")
    header, rows = next((h, r) for h, r in _tables(text) if "Saving, ns/B (95% CI)" in h)
    overflows: dict[str, list[int]] = {}
    for cells in rows:
        row = dict(zip(header, cells, strict=True))
        size = _size(row["Message"])
        assert _size(row["Working set"]) == 2 * size, row
        written = [float(n.replace(",", "")) for n in _INTERVAL.fullmatch(row["Saving, ns/B (95% CI)"]).groups()]  # type: ignore[union-attr]
        expected = _t_interval(saving.loc[size].to_numpy(dtype=float))
        assert np.isclose(written, expected, rtol=5e-3, atol=1e-12).all(), (row, expected)
        overflows.setdefault(row["Misses it adds"], []).append(size)
    short = re.search(
        r"overflows (\w+): removing [^.]*?saved the sender (\S+) \[(\S+), (\S+)\] ns of user-space CPU per byte",
        text,
    )
    assert short, text[:500]
    pooled = {level: saving.loc[sizes].to_numpy(dtype=float) for level, sizes in overflows.items() if level != "none"}
    best = pooled[short[1]]
    assert np.isclose([float(v) for v in short.groups()[1:]], _t_interval(best), rtol=5e-3).all(), short[0]
    # every level's pooled saving, as the numbers give them
    levels = re.findall(r"overflowing (\w+) (\S+) \[(\S+), (\S+)\] ns", text)
    assert {level for level, *_ in levels} == set(pooled), levels
    for level, *values in levels:
        expected = _t_interval(pooled[level])
        assert np.isclose([float(v) for v in values], expected, rtol=5e-3).all(), (level, values, expected)
