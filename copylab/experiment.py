"""What an experiment is to the rest of copylab: the plug-in interface every experiment declares.

An experiment is a family of implementations measured against each other along one axis (copylab.experiments.copies: how
bytes leave user space, along message size; copylab.experiments.servers: how a server waits, along connections).  Its
package declares one Experiment; copylab.experiments lists them.  Generic code (settings, sweeps, analysis,
report, explorer) asks the declaration, never the experiment's name: what it compares along, which metrics and
settings it has, which comparisons decide its answers, its profiles, its figures and its report parts.  The
figures ("module:function") and the report module are named by strings, so that declaring an experiment imports
no plotting or prose.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


def resolve(target: str) -> Callable[..., Any]:
    """The function a "package.module:function" string names."""
    module, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


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
    figures: str  # "module:function" drawing its figures from a sweep's tables
    # a module with parts(results), absent(loads), summary(results) and limitations(results, companions): its blocks
    # of the report
    report: str
    # "module:NAME" of its implementations (copylab.declarations.implementations.Implementation), in order
    implementations: str
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

    def draw(self) -> Callable[..., Any]:
        return resolve(self.figures)

    def members(self) -> tuple[Any, ...]:
        """Its implementations, loaded on first use so that declaring an experiment imports no driver."""
        module, _, name = self.implementations.partition(":")
        return tuple(getattr(importlib.import_module(module), name))

    def parts(self) -> Any:
        """What its report module gives the report: its REPORT, a copylab.report.contract.ExperimentReport (parts,
        summary, limitations, and what may be left out: absent, front, back, companion)."""
        return importlib.import_module(self.report).REPORT
