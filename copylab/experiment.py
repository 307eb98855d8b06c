"""What an experiment is to the rest of copylab: the plug-in interface every experiment declares.

An experiment is a family of implementations measured against each other along one axis (copylab.experiments.copies: how
bytes leave user space, along message size; copylab.experiments.servers: how a server waits, along connections).  Its
package declares one Experiment; copylab.experiments lists them.  Generic code (settings, sweeps, analysis,
report, explorer) asks the declaration, never the experiment's name: what it compares along, which metrics and
settings it has, which comparisons decide its answers, its profiles and its implementations.

A declaration is plain data, imported normally: it holds the records of its implementations
(copylab.declarations.implementation), whose drivers are specs that copylab.measure.running.drivers maps to the code
that runs them, so declaring an experiment runs, draws and writes nothing.  What an experiment gives the report, its
figures and its report parts, is made of the report's results and prose: the package's plug-in module
(copylab.experiments.NAME.plugin) bundles them with the declaration, and copylab.experiments.plugins lists the
plug-ins.

Adding an experiment is one package, copylab/experiments/NAME/: its declaration (__init__.py, with its
implementations.py), its figures, its report parts and its plug-in module; and one entry in each of two lists, the
declarations in copylab.experiments and the plug-ins in copylab.experiments.plugins.  Lower layers import only the
list of declarations, which is why there are two; a test fails naming an experiment missing from either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copylab.declarations.implementation import Implementation


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
    # sweeps its report module claims for parts of their own (copylab.report.compose.arrange reads their manifests).
    reported: tuple[str, ...] = ("quick",)
    # Those of the reported profiles whose verdicts (crossover, better, never better) its answers quote: the report's
    # extra time goes to their undecided comparisons first (copylab.study.budget).  The others' answers read means.
    verdicts_from: tuple[str, ...] = ("quick",)
