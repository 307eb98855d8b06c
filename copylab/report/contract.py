"""What an experiment gives the report: its report module's one object, REPORT, that copylab.report.sections.compose and
copylab.report.sections call, with defaults for what an experiment may leave out; and its plug-in, which bundles
its declaration with its figures and that REPORT (copylab.report.plugins finds them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from copylab.analysis.analyze_sweep import DrawFigures
from copylab.report.blocks import Block
from copylab.report.results import Results
from copylab.vocabulary.experiment import Experiment

Companions = Mapping[str, Results]


def _no_blocks(*_: object) -> list[Block]:
    return []


def _claims_none(_: Results) -> str | None:
    return None


@dataclass(frozen=True)
class ExperimentReport:
    # its sections of a report, from its first sweep and the sweeps its main experiment claims beside it
    parts: Callable[[Results, Companions | None], list[Block]]
    # the lines that sum up a further sweep of it
    summary: Callable[[Results], str]
    # what limits a sweep of it beyond what every sweep's limitations say
    limitations: Callable[[Results, Companions | None], list[str]]
    # what the report says where none of its sweeps was given, per load measured
    absent: Callable[[frozenset[str]], list[Block]] = _no_blocks
    # the main experiment's front (the answers at a glance, Parts B and C) and back (the glossary)
    front: Callable[[Results, Companions | None], list[Block]] = _no_blocks
    back: Callable[[str], list[Block]] = _no_blocks  # given the report's text, to list only the words it uses
    # the part a sweep of the main experiment is for when it is not the main one (copies: "sink", "mmap", ...)
    companion: Callable[[Results], str | None] = _claims_none
    # the main experiment's sections beyond the study's parts, which go to the appendices after the graded report
    # (every other experiment's parts go there whole)
    appendices: Callable[[Results, Companions | None], list[Block]] = _no_blocks


@dataclass(frozen=True)
class ExperimentPlugin:
    """An experiment as the report sees it: its declaration, its figures and its parts of the report.  How they
    present each implementation (its colour, its paragraph) is declared with it (copylab.vocabulary.implementation)."""

    experiment: Experiment
    draw: DrawFigures
    report: ExperimentReport
