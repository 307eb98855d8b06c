"""A comparison of two runs shown: one figure per compared metric (B/A along the experiment's axis, with its
interval), the blocks of a PDF or of a report section, and the files ./inv compare writes.

Every figure carries, in its caption and its PNG metadata, both sweeps' trials.csv sha256 and the copylab
commits that measured and drew them (copylab.record.origin).
"""

from __future__ import annotations

import base64
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D

from copylab.analysis import plotting
from copylab.analysis.two_runs import (
    HIGHER,
    LOWER,
    MOVED,
    ONLY_A,
    ONLY_B,
    SAME_STATUS,
    STATUS_CHANGED,
    VERDICTS,
    TwoRuns,
    direction_word,
)
from copylab.declarations import implementations
from copylab.declarations.metrics import METRICS
from copylab.formatting import code, fmt_num, fmt_size, markdown_table, md_escape
from copylab.record.origin import git_state, png_metadata
from copylab.record.store import save_pngs
from copylab.record.tables import CONFIG_KEYS, CONTENDER_KEYS
from copylab.report.blocks import Block, Figure, Markdown

if TYPE_CHECKING:
    import nbformat

CSV_FILE = "comparison.csv"
CROSSOVERS_FILE = "crossovers_compared.csv"
PDF_FILE = "comparison.pdf"
LISTED_CHANGES = 12  # significant changes listed in the PDF, largest first; comparison.csv has them all
PANEL_COLUMNS = 4


def _axis_label(axis: str) -> tuple[str, object]:
    return ("message size", fmt_size) if axis == "size_bytes" else (axis.replace("_", " "), lambda v: f"{v:g}")


def _contender(row: pd.Series) -> str:
    return implementations.contender(*(row[key] for key in CONTENDER_KEYS))


@plotting.literal_text
def ratio_figures(result: TwoRuns) -> dict[str, MplFigure]:
    """Per compared metric with a compared configuration: B/A with its interval along the experiment's axis, one
    panel per combination of the other settings, filled markers where the change is significant."""
    experiment, colors = result.experiment, plotting.colors()
    axis = experiment.axis
    title_axis, label = _axis_label(axis)
    others = [key for key in CONFIG_KEYS if key not in (axis, *CONTENDER_KEYS)]
    figures = {}
    for metric in experiment.compared:
        rows = result.comparison[(result.comparison["metric"] == metric) & result.comparison["ratio"].notna()]
        if rows.empty:
            continue
        varying = [key for key in others if rows[key].nunique() > 1] or ["workload"]
        panels = list(rows.groupby(varying, sort=True))
        ncols = min(PANEL_COLUMNS, len(panels))
        figure, axes = plotting.grid(
            f"{METRICS[metric].label}: {result.b.store.name} / {result.a.store.name}",
            _setup_line(result),
            math.ceil(len(panels) / ncols),
            ncols,
        )
        flat = [ax for row in axes for ax in row]
        for ax, (values, panel) in zip(flat, panels, strict=False):
            values = values if isinstance(values, tuple) else (values,)
            for _label, curve in panel.assign(contender=panel.apply(_contender, axis=1)).groupby("contender"):
                _ratio_curve(ax, curve.sort_values(axis), axis, colors[curve["implementation"].iloc[0]])
            ax.axhline(1.0, color="0.3", linewidth=0.8)
            plotting.log2_axis(ax, rows[axis], label, title_axis, 45 if axis == "size_bytes" else 0)
            ax.set_title(", ".join(f"{key} {value}" for key, value in zip(varying, values, strict=True)), fontsize=8)
            ax.set_ylabel(f"B / A ({METRICS[metric].unit} ratio)", fontsize=8)
        for ax in flat[len(panels) :]:
            ax.set_axis_off()
        handles = plotting.implementation_handles(rows["implementation"], colors)
        handles.append(
            Line2D(
                [], [], color="0.4", marker="o", markerfacecolor="white", linestyle="", label="no significant change"
            )
        )
        figure.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=8)
        figures[f"compare_{metric}"] = figure
    return figures


def _ratio_curve(ax: Axes, rows: pd.DataFrame, axis: str, color: str) -> None:
    x = rows[axis].to_numpy(dtype=float)
    ratio = rows["ratio"].to_numpy(dtype=float)
    low, high = rows["ratio_ci_low"].to_numpy(dtype=float), rows["ratio_ci_high"].to_numpy(dtype=float)
    bounded = np.isfinite(low) & np.isfinite(high)
    ax.plot(x, ratio, color=color, linewidth=1.2)
    ax.errorbar(
        x[bounded],
        ratio[bounded],
        yerr=[ratio[bounded] - low[bounded], high[bounded] - ratio[bounded]],
        color=color,
        linestyle="",
        capsize=2,
        linewidth=0.8,
    )
    significant = rows["verdict"].isin([HIGHER, LOWER]).to_numpy()
    ax.scatter(x[significant], ratio[significant], color=color, s=16, zorder=3)
    ax.scatter(x[~significant], ratio[~significant], facecolors="white", edgecolors=color, s=16, zorder=3)


def _setup_line(result: TwoRuns) -> str:
    return " · ".join(
        f"{side}: {run.store.name} ({run.manifest.host.kernel}, {run.origin.code()})"
        for side, run in (("A", result.a), ("B", result.b))
    )


def save_figures(result: TwoRuns, directory: Path) -> dict[str, Path]:
    """The ratio figures as DIRECTORY/NAME.png with both sweeps' origin in their metadata."""
    figures = ratio_figures(result)
    metadata = png_metadata([result.a.origin, result.b.origin], git_state())
    return dict(zip(figures, save_pngs(directory, figures, metadata), strict=True))


def blocks(result: TwoRuns, figure_paths: dict[str, Path], level: int = 1) -> list[Block]:
    """The comparison for a PDF (LEVEL 1 headings) or as a report section (LEVEL 2)."""
    h = "#" * level
    a, b = result.a.store.name, result.b.store.name
    content: list[Block] = [
        Markdown(f"{h} What changed from {code(a)} (A) to {code(b)} (B)"),
        Markdown(_introduction(result)),
        Markdown(_origins(result)),
    ]
    content += [Markdown(f"**Warning.** {md_escape(w)}.") for w in result.warnings()]
    content += [Markdown(f"{h}# Verdicts"), Markdown(_verdict_counts(result)), Markdown(_changes(result))]
    stamps = f"{result.a.origin.stamp()} {result.b.origin.stamp()}"
    for name, path in figure_paths.items():
        metric = name.removeprefix("compare_")
        caption = (
            f"{METRICS[metric].label}: B's mean over A's per configuration, with its 95% interval (Fieller); filled "
            f"where the change is significant (Welch, Holm over the metric's configurations). {stamps}"
        )
        content.append(Figure(path, caption))
    content += [Markdown(f"{h}# Crossovers"), Markdown(_crossovers(result))]
    content += [Markdown(f"{h}# What differs between the two manifests"), Markdown(_differences(result))]
    content += [Markdown(f"{h}# Configurations in one sweep only"), Markdown(_only_in(result))]
    return content


def _introduction(result: TwoRuns) -> str:
    compared = result.comparison[~result.comparison["verdict"].isin([ONLY_A, ONLY_B])]
    configurations = len(compared[list(CONFIG_KEYS)].drop_duplicates())
    return (
        f"Both sweeps ran the {result.experiment.name} experiment; {configurations} configurations are in both. "
        f"For each of them and each main metric, the ratio of B's mean to A's comes with its {result.confidence:.0%} "
        "interval (Fieller) and Welch's t-test, Holm-corrected over all configurations of the metric. The two runs "
        "share no blocks, so their trials are compared unpaired."
    )


def _origins(result: TwoRuns) -> str:
    """Which data and code each side is: a line each, the trials.csv sha256 in full."""
    lines = []
    for side, run in (("A", result.a), ("B", result.b)):
        origin, host = run.origin, run.manifest.host
        modified = " (**modified** since its sweep ended)" if origin.modified else ""
        lines.append(
            f"- **{side}**: {code(run.store.name)}, sweep {code(run.manifest.sweep)} measured by "
            f"{md_escape(origin.code())} on {md_escape(f'{host.hostname}, {host.cpu_model}, kernel {host.kernel}')}; "
            f"trials.csv sha256{modified}:\n  {code(origin.trials_sha256)}"
        )
    return "\n".join(lines)


def _short(metric: str) -> str:
    """A metric's label up to its first comma or parenthesis: narrow enough for a table's column."""
    return re.split(r"[,(]", METRICS[metric].label)[0].strip()


def _verdict_counts(result: TwoRuns) -> str:
    counts = result.comparison.groupby(["metric", "verdict"]).size().unstack(fill_value=0)
    rows = []
    for metric in counts.index:
        rows.append({"Metric": _short(metric), **{v: int(counts.loc[metric].get(v, 0)) for v in VERDICTS}})
    return markdown_table(rows)


def _changes(result: TwoRuns) -> str:
    changed = result.comparison[result.comparison["verdict"].isin([HIGHER, LOWER])].copy()
    if changed.empty:
        return "No configuration changed significantly in any main metric."
    changed["size"] = np.abs(np.log(changed["ratio"]))
    changed = changed.sort_values("size", ascending=False)
    varying = _varying(result)
    rows = [
        {
            "Metric": _short(r.metric),
            "Configuration": md_escape(_configuration(r, varying)),
            "A": fmt_num(r.mean_a),
            "B": fmt_num(r.mean_b),
            "B/A [95% CI]": f"{fmt_num(r.ratio)} [{fmt_num(r.ratio_ci_low)}, {fmt_num(r.ratio_ci_high)}]",
            "Verdict": f"{r.verdict} ({direction_word(r.metric, r.verdict)})",
        }
        for r in changed.head(LISTED_CHANGES).itertuples()
    ]
    more = len(changed) - LISTED_CHANGES
    tail = f"\n\n{more} more significant changes are in {code(CSV_FILE)}." if more > 0 else ""
    return f"The {min(len(changed), LISTED_CHANGES)} largest significant changes:\n\n" + markdown_table(rows) + tail


def _varying(result: TwoRuns) -> list[str]:
    """The configuration keys that tell the comparison's rows apart (the implementation always)."""
    frame = result.comparison
    return [key for key in CONFIG_KEYS if key == "implementation" or frame[key].nunique() > 1]


def _configuration(row: Any, keys: list[str]) -> str:
    return ", ".join(
        str(getattr(row, key)) if key == "implementation" else f"{key} {getattr(row, key)}" for key in keys
    )


def _crossovers(result: TwoRuns) -> str:
    frame = result.crossovers
    if frame.empty:
        return "Neither sweep has a crossover curve of a main metric."
    changed = frame[frame["change"] != SAME_STATUS]
    counts = ", ".join(f"{n} {change}" for change, n in frame["change"].value_counts().items())
    if changed.empty:
        return f"Every curve of a main metric has the same status in both runs ({counts})."

    def where(row: Any) -> str:
        if row.status_a == "crossover" or row.status_b == "crossover":
            return " → ".join(
                f"{fmt_num(at)} [{fmt_num(lo)}, {fmt_num(hi)}]" if isinstance(at, float) and math.isfinite(at) else "—"
                for at, lo, hi in (
                    (row.crossover_at_a, row.ci_low_a, row.ci_high_a),
                    (row.crossover_at_b, row.ci_low_b, row.ci_high_b),
                )
            )
        return ""

    rows = [
        {
            "Curve": md_escape(
                f"{row.challenger} vs {row.baseline}, {METRICS[row.metric].label}, {row.workload}, "
                + ", ".join(
                    f"{k} {getattr(row, k)}"
                    for k in ("threads", "connections", "size_bytes", "pinning")
                    if not pd.isna(getattr(row, k))
                )
            ),
            "A": str(row.status_a).replace("_", " "),
            "B": str(row.status_b).replace("_", " "),
            "Crossover A → B": where(row),
            "Change": row.change,
        }
        for row in changed.sort_values("change").itertuples()
    ]
    note = (
        f" {MOVED}: both are crossovers and their intervals do not overlap; {STATUS_CHANGED}: the curve's status "
        "differs between the runs."
    )
    return f"Curves: {counts}.{note}\n\n" + markdown_table(rows)


def _differences(result: TwoRuns) -> str:
    if not result.differences:
        return "None: the two manifests describe the same host, code, settings and calibration."
    return markdown_table(
        {"Field": code(name), "A": md_escape(a), "B": md_escape(b)} for name, a, b in result.differences
    )


def _only_in(result: TwoRuns) -> str:
    parts = []
    for side in ("A", "B"):
        only = result.only_in(side)
        if only.empty:
            parts.append(f"None only in {side}.")
        else:
            listed = "; ".join(md_escape(_configuration(row, list(CONFIG_KEYS))) for row in only.itertuples())
            parts.append(f"Only in {side} ({len(only)}): {listed}.")
    return "\n\n".join(parts)


def notebook_of(content: list[Block]) -> nbformat.NotebookNode:
    """CONTENT as a notebook nbconvert typesets: Markdown cells, and each figure as an image output."""
    # imported here: a report kernel imports this module for its figures and needs no notebook (1.2 s)
    import nbformat

    cells = []
    for block in content:
        if isinstance(block, Markdown):
            cells.append(nbformat.v4.new_markdown_cell(block.text))
        else:
            image = nbformat.v4.new_output("display_data", data={"image/png": _base64(block.path)})
            cells.append(nbformat.v4.new_code_cell("", outputs=[image]))
            cells.append(nbformat.v4.new_markdown_cell(block.caption))
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook(cells=cells)
    return notebook


def _base64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def write_comparison(result: TwoRuns, directory: Path) -> list[Path]:
    """comparison.csv, the crossovers of both runs, the figures and the PDF in DIRECTORY; the paths written."""
    import nbformat

    from copylab.report.render import export_pdf

    directory.mkdir(parents=True, exist_ok=True)
    csv_path = directory / CSV_FILE
    result.comparison.to_csv(csv_path, index=False, lineterminator="\n")
    crossovers_path = directory / CROSSOVERS_FILE
    result.crossovers.to_csv(crossovers_path, index=False, lineterminator="\n")
    figure_paths = save_figures(result, directory / "figures")
    notebook_path = directory / "comparison.ipynb"
    nbformat.write(notebook_of(blocks(result, figure_paths)), notebook_path)
    title = f"{result.b.store.name} against {result.a.store.name}: what changed"
    pdf = export_pdf(notebook_path, directory / PDF_FILE, title=title)
    return [csv_path, crossovers_path, *figure_paths.values(), pdf]
