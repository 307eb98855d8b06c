"""The fleet's comparison report: the same study on several pairs of hosts, side by side.

Each pair is named by what may move its answers: the server's CPU model and kernel and the card that carried the
bytes.  The report gives each pair's answers at a glance, one figure of every crossover with its interval by pair,
whether the pairs' crossovers differ (their intervals do not overlap) and what is missing: a pair whose study did
not finish, with why and where what it measured is kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pandas as pd
from matplotlib.figure import Figure as MplFigure

from copylab import experiments
from copylab.formatting import code, fmt_size, markdown_table, md_escape
from copylab.record.origin import git_state, png_metadata
from copylab.record.store import SweepStore, save_pngs
from copylab.report import plugins
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.comparison import notebook_of
from copylab.report.hosts import real_link
from copylab.report.results import Results, load_results
from copylab.report.sections import compose

PDF_FILE = "fleet.pdf"
FIGURE_NAME = "crossovers_by_pair"
THROUGHPUT = "throughput_gbps"


@dataclass(frozen=True)
class PairStudy:
    """One pair's study: its analysed sweeps (the main one first), and what is missing of it, if anything."""

    name: str
    stores: list[SweepStore] = field(default_factory=list)
    missing: str | None = None  # why the study did not finish, where its measurements are kept


def sweeps_of(pairs: list[PairStudy]) -> dict[str, compose.ReportSweeps]:
    """Each pair's sweeps in their report roles (the main one, its companions), for the pairs that have any."""
    return {pair.name: compose.arrange([load_results(store) for store in pair.stores]) for pair in pairs if pair.stores}


def _named(results: Results) -> str:
    """A pair as the comparison names it: the server's CPU model, kernel and card."""
    ends = {end.role: end for end in results.manifest.ends}
    server = ends.get("server")
    if server is None:
        return "two hosts copylab could not describe"
    return f"{server.host.cpu_model}, kernel {server.host.kernel}, {real_link.card(server)}"


def crossovers(sweeps: dict[str, compose.ReportSweeps]) -> pd.DataFrame:
    """Every pair's stream throughput crossovers that were found, with their intervals: pair, curve, at, low, high."""
    rows = []
    for pair, found in sweeps.items():
        table = found.main.crossovers
        table = table[(table["status"] == "crossover") & (table["metric"] == THROUGHPUT)]
        for row in table.itertuples():
            curve = f"{row.challenger} over {row.baseline}, {row.pinning}, {row.threads} thread(s)"
            rows.append({"pair": pair, "curve": curve, "at": row.crossover_at, "low": row.ci_low, "high": row.ci_high})
    return pd.DataFrame(rows, columns=["pair", "curve", "at", "low", "high"])


def differences(found: pd.DataFrame, named: Mapping[str, str] | None = None) -> list[str]:
    """Per curve measured on two pairs or more: whether its crossover differs between them (two intervals that do
    not overlap) or not, each pair with what NAMED says of it (its CPU model, kernel and card)."""
    named = named or {}

    def label(pair: str) -> str:
        return md_escape(f"{pair} ({named[pair]})" if pair in named else pair)

    said = []
    for curve, rows in found.groupby("curve", sort=True):
        if len(rows) < 2:
            continue
        apart = [
            (a.pair, b.pair)
            for a in rows.itertuples()
            for b in rows.itertuples()
            if a.pair < b.pair and (a.high < b.low or b.high < a.low)
        ]
        if apart:
            listed = "; ".join(f"{label(a)} and {label(b)}" for a, b in apart)
            said.append(f"{code(str(curve))}: the crossover differs ({listed}: their intervals do not overlap).")
        else:
            pairs = ", ".join(label(pair) for pair in rows["pair"])
            said.append(f"{code(str(curve))}: no difference shown between {pairs} (their intervals overlap).")
    return said


def draw(found: pd.DataFrame) -> MplFigure:
    """The crossovers with their intervals, one row per pair and curve, message size on a log2 axis."""
    figure = MplFigure(figsize=(8, 1.2 + 0.45 * max(len(found), 1)))
    ax = figure.subplots()
    labels = []
    for index, row in enumerate(found.itertuples()):
        low = row.low if math.isfinite(row.low) else row.at
        high = row.high if math.isfinite(row.high) else row.at
        ax.errorbar([row.at], [index], xerr=[[row.at - low], [high - row.at]], fmt="o", capsize=4)
        labels.append(f"{row.pair}: {row.curve}")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(lambda value, _: fmt_size(value))
    ax.set_xlabel("message size where the challenger overtakes its baseline (95% interval)")
    ax.set_title("Stream throughput crossovers by pair")
    ax.invert_yaxis()
    figure.tight_layout()
    return figure


def _pairs_table(pairs: list[PairStudy], sweeps: dict[str, compose.ReportSweeps]) -> str:
    rows = []
    for pair in pairs:
        found = sweeps.get(pair.name)
        manifest = found.main.manifest if found else None
        rows.append(
            {
                "Pair": md_escape(pair.name),
                "Hosts and card": md_escape(real_link.name(manifest)) if manifest else "not measured",
                "Study": "complete" if pair.missing is None else "missing: " + md_escape(pair.missing),
            }
        )
    return markdown_table(rows)


def blocks(pairs: list[PairStudy], sweeps: dict[str, compose.ReportSweeps], figure: Path | None) -> list[Block]:
    """The comparison's content: the pairs, the crossovers by pair (FIGURE: their figure, None when no pair found
    one) and whether they differ, each pair's answers at a glance, and what is missing."""
    content: list[Block] = [Markdown("# The pairs"), Markdown(_pairs_table(pairs, sweeps)), Markdown("# Crossovers")]
    if figure is None:
        content.append(Markdown("No pair's sweeps found a stream throughput crossover."))
    else:
        named = {pair: _named(study.main) for pair, study in sweeps.items()}
        said = differences(crossovers(sweeps), named) or [
            "Each crossover was found on one pair only: nothing to compare."
        ]
        content += [
            Figure(figure, "Each pair's stream throughput crossovers, with their 95% intervals (crossovers.csv)."),
            Markdown("\n".join(f"- {line}" for line in said)),
        ]
    front = plugins.get(experiments.main().name).report.front
    for pair in pairs:
        study = sweeps.get(pair.name)
        if study is None:
            continue
        content.append(Markdown(f"# {md_escape(pair.name)}: {md_escape(_named(study.main))}"))
        # its answers at a glance, without the heading
        content += [block for block in front(study.main, study.companions) if isinstance(block, Markdown)][1:]
    missing = [pair for pair in pairs if pair.missing is not None]
    if missing:
        content.append(Markdown("# What is missing"))
        content.append(Markdown("\n".join(f"- {md_escape(pair.name)}: {md_escape(pair.missing)}" for pair in missing)))
    return content


def write_fleet_comparison(pairs: list[PairStudy], directory: Path) -> Path:
    """The comparison of PAIRS as DIRECTORY/fleet.pdf, with its figure and notebook beside it; the PDF's path."""
    from copylab.report.render import export_pdf

    directory.mkdir(parents=True, exist_ok=True)
    sweeps = sweeps_of(pairs)
    found = crossovers(sweeps)
    figure = None
    if not found.empty:
        metadata = png_metadata([study.main.origin for study in sweeps.values()], git_state())
        figure = save_pngs(directory / "figures", {FIGURE_NAME: draw(found)}, metadata)[0]
    notebook = directory / "fleet.ipynb"
    nbformat.write(notebook_of(blocks(pairs, sweeps, figure)), notebook)
    title = f"The same study on {len(pairs)} pairs of hosts, side by side"
    return export_pdf(notebook, directory / PDF_FILE, title=title)
