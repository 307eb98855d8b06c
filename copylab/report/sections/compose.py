"""The report's content, in order, from its analysed sweeps: the generic sections around each experiment's parts.

The main experiment's front (the answers at a glance) and parts come first, given the sweeps of that experiment its
report module claims for parts of their own (the copies experiment: the sink's and the mapping receiver's, found
from their manifests); then Limitations and the method in short: the graded report.  Then the appendices
(copylab.report.appendix letters them and links them both ways): the main experiment's further sections, every
other experiment's parts for its first sweep of each load (closed, open), or what it says when the report has none;
the further sweeps, each summed up by its experiment and compared with that experiment's first sweep of the same
load (copylab.analysis.two_runs); the setup, method and reproduction of the main sweep, and the glossary.  Figures
are numbered here, in the order they appear.  notebooks/20_report.ipynb only displays the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date

from copylab import experiments
from copylab.analysis import two_runs
from copylab.error_catalogue import REPORT_NEEDS_MAIN
from copylab.report import appendix, comparison, plugins, sections
from copylab.report.blocks import Block, Figure, Markdown
from copylab.report.results import Results, traced


@dataclass(frozen=True)
class ReportSweeps:
    """A report's sweeps by role: the main one (its study parts), one per other experiment (its section), and the
    others, summed up under "Further sweeps"."""

    main: Results
    sections: dict[tuple[str, str], Results]  # (experiment, load) -> its first sweep
    further: list[Results]
    # kind -> the first sweep of the main experiment its report module claims for a part of its own (the copies
    # experiment: "sink", "mmap"), found from the sweep's manifest, never its name
    companions: dict[str, Results] = field(default_factory=dict)


def arrange(sweeps: list[Results]) -> ReportSweeps:
    """The first sweep of the main experiment that its report module claims for no part of its own is the main one
    (failing that, its first sweep); the first it claims of each kind goes to that part; the first of every other
    experiment under each load gets its section; the rest follow as further sweeps."""
    main_experiment = experiments.main()
    ours = [sweep for sweep in sweeps if _role(sweep)[0] == main_experiment.name]
    if not ours:
        raise REPORT_NEEDS_MAIN.error(experiment=main_experiment.name)
    # the kind of part the main experiment's report module claims each sweep for, if it claims it
    claims = plugins.get(main_experiment.name).report.companion
    kinds = {id(sweep): claims(sweep) for sweep in ours}
    main = next((sweep for sweep in ours if kinds[id(sweep)] is None), ours[0])
    companions: dict[str, Results] = {}
    for sweep in ours:
        kind = kinds[id(sweep)]
        if sweep is not main and kind is not None:
            companions.setdefault(kind, sweep)
    claimed = [main, *companions.values()]
    first: dict[tuple[str, str], Results] = {}
    for sweep in sweeps:
        if _role(sweep)[0] != main_experiment.name:
            first.setdefault(_role(sweep), sweep)
    sections = dict(first)
    further = [s for s in sweeps if all(s is not c for c in claimed) and s not in sections.values()]
    return ReportSweeps(main, sections, further, companions)


def every_sweep(sweeps: ReportSweeps) -> list[Results]:
    """Every sweep of the report, in an order that arrange() gives the same roles again: the main one first."""
    return [sweeps.main, *sweeps.companions.values(), *sweeps.sections.values(), *sweeps.further]


def _role(sweep: Results) -> tuple[str, str]:
    parameters = sweep.manifest.parameters
    return parameters.experiment, parameters.load


def blocks(sweeps: ReportSweeps, generated: date) -> list[Block]:
    """The whole report, figures numbered: the graded report (the answers at a glance, the main experiment's parts,
    Limitations and the method in short), then its appendices, lettered."""
    main = plugins.get(sweeps.main.manifest.parameters.experiment).report
    content: list[Block] = list(main.front(sweeps.main, sweeps.companions))
    content += _traced(main.parts(sweeps.main, sweeps.companions), sweeps.main)
    content += [
        Markdown("# Limitations"),
        Markdown(sections.limitations(sweeps.main, sweeps.companions)),
        Markdown("# Method in short"),
        Markdown(sections.short_method(sweeps.main)),
    ]
    appendices = _traced(main.appendices(sweeps.main, sweeps.companions), sweeps.main)
    for plugin in plugins.every():
        if plugin.experiment.main:
            continue
        found = {load: sweep for (name, load), sweep in sweeps.sections.items() if name == plugin.experiment.name}
        for sweep in found.values():
            appendices += _traced(plugin.report.parts(sweep, None), sweep)
        appendices += plugin.report.absent(frozenset(found))
    appendices += _further(sweeps)
    appendices += [
        Markdown("# Setup"),
        Markdown(sections.front_matter(sweeps.main, generated)),
        Markdown("# Method"),
        Markdown(sections.method(sweeps.main, every_sweep(sweeps))),
        Markdown("# Reproducing this report"),
        Markdown(sections.reproduce(sweeps.main, every_sweep(sweeps))),
    ]
    glossary = main.back("\n".join(b.text if isinstance(b, Markdown) else b.caption for b in content + appendices))
    if glossary:
        appendices += [Markdown("# Glossary"), *glossary]
    lettered = appendix.lettered(appendices)
    return _numbered(appendix.cross_linked([*content, appendix.listing(lettered)], lettered))


def _further(sweeps: ReportSweeps) -> list[Block]:
    """Every further sweep, summed up by its experiment and compared with the first sweep of its role."""
    content: list[Block] = []
    if sweeps.further:
        content.append(Markdown("# Further sweeps"))
    for other in sweeps.further:
        experiment = other.manifest.parameters.experiment
        summary = plugins.get(experiment).report.summary(other)
        content += [
            Markdown(sections.sweep_heading(other)),
            Markdown(summary),
            Markdown("**Limitations.**\n\n" + sections.limitations(other)),
        ]
        first = sweeps.main if _role(other) == _role(sweeps.main) else sweeps.sections[_role(other)]
        content += _compared(first, other)
    return content


def _compared(first: Results, other: Results) -> list[Block]:
    """OTHER against the first sweep of its experiment (copylab.analysis.two_runs), its figures drawn beside the
    sweeps'."""
    result = two_runs.compare_runs(first.store, other.store)
    directory = first.store.figures_root / "comparisons" / f"{first.name}-vs-{other.name}"
    return comparison.blocks(result, comparison.save_figures(result, directory), level=2)


def _traced(content: list[Block], results: Results) -> list[Block]:
    """CONTENT with every figure's caption naming the data and code it was drawn from (copylab.record.origin), and
    the files themselves for the web page to link: the sweep's data and the executed notebook that drew it, where
    the analysis left one.  A figure that names its sources already was drawn from another sweep, which its caption
    names: it is left as it is."""
    return [traced(block, results) if isinstance(block, Figure) and not block.sources else block for block in content]


def _numbered(content: list[Block]) -> list[Block]:
    number = 0
    numbered: list[Block] = []
    for block in content:
        if isinstance(block, Figure):
            number += 1
            block = replace(block, caption=f"**Figure {number}.** {block.caption}")
        numbered.append(block)
    return numbered
