"""The report's content, in order, from its analysed sweeps: the generic sections around each experiment's parts.

Setup and Method describe the main sweep (the first sweep of the main experiment); then the main experiment's
parts; then, for every other experiment, its parts for its first sweep, or what it says when the report has none;
then Limitations and Reproducing; then the further sweeps, each summed up by its experiment.  Figures are numbered
here, in the order they appear.  notebooks/20_report.ipynb only displays the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from copylab import experiments, sections
from copylab.errors import CopylabError
from copylab.results import Results


@dataclass(frozen=True)
class Markdown:
    text: str


@dataclass(frozen=True)
class Figure:
    """A figure the analysis drew, and its caption (numbered when composed)."""

    path: Path
    caption: str


Block = Markdown | Figure


@dataclass(frozen=True)
class ReportSweeps:
    """A report's sweeps by role: the main one (its study parts), one per other experiment (its section), and the
    others, summed up under "Further sweeps"."""

    main: Results
    sections: dict[str, Results]
    further: list[Results]


def arrange(sweeps: list[Results]) -> ReportSweeps:
    """The first sweep of the main experiment is the main one, the first of every other experiment gets its
    section; the rest follow as further sweeps."""
    main_experiment = experiments.main()
    first: dict[str, Results] = {}
    for sweep in sweeps:
        first.setdefault(sweep.manifest.parameters.experiment, sweep)
    if main_experiment.name not in first:
        raise CopylabError(
            f"a report needs a {main_experiment.name} sweep (./inv run-sweep): its study parts describe one"
        )
    main = first.pop(main_experiment.name)
    return ReportSweeps(main, first, [s for s in sweeps if s is not main and s not in first.values()])


def blocks(sweeps: ReportSweeps, generated: date) -> list[Block]:
    """The whole report, figures numbered."""
    content: list[Block] = [
        Markdown("# Setup"),
        Markdown(sections.front_matter(sweeps.main, generated)),
        Markdown("# Method"),
        Markdown(sections.method(sweeps.main)),
    ]
    content += experiments.get(sweeps.main.manifest.parameters.experiment).parts().parts(sweeps.main)
    for experiment in experiments.EXPERIMENTS.values():
        if experiment.main:
            continue
        module = experiment.parts()
        found = sweeps.sections.get(experiment.name)
        content += module.parts(found) if found is not None else module.absent()
    content += [
        Markdown("# Limitations"),
        Markdown(sections.limitations(sweeps.main)),
        Markdown("# Reproducing this report"),
        Markdown(sections.reproduce(sweeps.main)),
    ]
    if sweeps.further:
        content.append(Markdown("# Further sweeps"))
    for other in sweeps.further:
        summary = experiments.get(other.manifest.parameters.experiment).parts().summary(other)
        content += [
            Markdown(sections.sweep_heading(other)),
            Markdown(summary),
            Markdown("**Limitations.**\n\n" + sections.limitations(other)),
        ]
    return _numbered(content)


def _numbered(content: list[Block]) -> list[Block]:
    number = 0
    numbered: list[Block] = []
    for block in content:
        if isinstance(block, Figure):
            number += 1
            block = Figure(block.path, f"**Figure {number}.** {block.caption}")
        numbered.append(block)
    return numbered
