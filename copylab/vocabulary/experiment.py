"""What an experiment is to the rest of copylab: the record every experiment is declared with.

An experiment is a family of implementations measured against each other along one axis (copies: how bytes leave
user space, along message size; servers: how a server waits, along connections).  Generic code (settings, sweeps,
analysis, report, explorer) asks the declaration, never the experiment's name: what it compares along, which
metrics and settings it has, which comparisons decide its answers, its profiles and its implementations.

The design has one list and one folder per layer:

- copylab.experiments is the one list of experiments.  Each is a package, copylab/experiments/NAME/, that holds its
  declaration only, plain data: the Experiment in its __init__.py and its implementations in implementations.py
  (copylab.vocabulary.implementation records, each with its driver's spec, its copies, its colour in every figure
  and its paragraph in the report).  Declaring an experiment runs, draws and writes nothing, and imports only this
  vocabulary, so every layer above can read the list.
- copylab.report.experiments.NAME holds what the report makes of it: its figures, captions, answers and report
  parts, bundled in that package's PLUGIN.  copylab.report.plugins finds the plug-in by that rule, not by a second
  list; a test fails naming an experiment declared without one.

Adding an implementation is its program (a C file in csrc/) and one entry in its experiment's implementations.py.
Adding an experiment is its declaration package, one entry in copylab.experiments, and its report package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copylab.vocabulary.implementation import Implementation


@dataclass(frozen=True)
class Members:
    """A profile's choice among its experiment's implementations, made from the registry when a sweep is made:
    every one a profile may run (the bench's yardsticks are left to the bench), without the external tools unless
    REFERENCES, only the study's variants of ROLES when given, only those holding their message in memory when
    IN_MEMORY (what the sink path can send: it takes datagrams of a message, not a file or another tool's stream)."""

    references: bool = True
    roles: tuple[str, ...] | None = None
    in_memory: bool = False


@dataclass(frozen=True)
class Experiment:
    name: str
    question: str
    axis: str  # the trials.csv column its curves and crossovers run along
    axis_unit: str  # what the axis counts, as the prose says it: "byte" of a message, "request"
    noun: str  # what its implementations are called: "implementations", "models"
    metric: str  # the metric and workload of the curves that decide its answers (a budget goes to them)
    workload: str
    headline: Mapping[str, str]  # workload -> the metric shown first
    metrics: tuple[str, ...]  # copylab.declarations.metrics names that describe its trials
    # Its main metrics: those a comparison of two runs judges (./inv compare), each with a direction.
    compared: tuple[str, ...]
    # profile name -> sweep settings (copylab.declarations.settings names); Members stands for a list of implementations
    profiles: Mapping[str, Mapping[str, Any]]
    # its implementations, in the order of every table, legend and list (the registry sets their experiment)
    implementations: tuple[Implementation, ...]
    # Settings it has no use for, with the reason a sweep giving one is refused.
    refuses: Mapping[str, str] = field(default_factory=dict)
    # The only values it allows for some settings (the servers experiment: request/response, receiving by copy),
    # with the reason a sweep giving another is refused.
    allows: Mapping[str, tuple[tuple[Any, ...], str]] = field(default_factory=dict)
    calibrates: bool = False  # whether its sweeps measure the copy-cost calibration first
    main: bool = False  # a report's main experiment: its sweep is the one the study's parts describe
    explorer_axes: tuple[str, ...] = ()  # the x axes the explorer offers, first the default
    # Which (challenger, baseline) pairs decide its answers: "roles" (the study's variants against its baseline
    # variant) or "baselines" (every implementation against the baselines the registry gives it).
    deciding: str = "baselines"
    # The profiles `./inv report` runs, in order: the first is the sweep the experiment's parts describe, the others
    # sweeps its report module claims for parts of their own (copylab.report.sections.compose.arrange reads their
    # manifests).
    reported: tuple[str, ...] = ("quick",)
    # Those of the reported profiles whose verdicts (crossover, better, never better) its answers quote: the report's
    # extra time goes to their undecided comparisons first (copylab.study.budget).  The others' answers read means.
    verdicts_from: tuple[str, ...] = ("quick",)
