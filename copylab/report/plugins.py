"""Each experiment's plug-in (its declaration, figures and report parts), found by a rule rather than a second list:
the experiment declared as copylab.experiments.NAME has its report-layer package copylab.report.experiments.NAME,
whose PLUGIN is what the analysis draws a sweep's figures with and the report asks for the experiment's parts.

copylab.experiments is the one list of experiments; tests/test_structure.py holds every experiment it declares to
a package here that exposes its PLUGIN.
"""

from __future__ import annotations

import importlib

import pandas as pd
from matplotlib.figure import Figure

from copylab import experiments
from copylab.error_catalogue import UNKNOWN_CHOICE
from copylab.record.manifest import Manifest
from copylab.report.contract import ExperimentPlugin

# The package that holds each experiment's report-layer code, one folder an experiment named after it.
PACKAGE = "copylab.report.experiments"


def get(name: str) -> ExperimentPlugin:
    if name not in experiments.names():
        raise UNKNOWN_CHOICE.error(label="experiment", value=name, choices=", ".join(experiments.names()))
    plugin: ExperimentPlugin = importlib.import_module(f"{PACKAGE}.{name}").PLUGIN
    return plugin


def every() -> list[ExperimentPlugin]:
    """Every experiment's plug-in, in the order of copylab.experiments."""
    return [get(name) for name in experiments.names()]


def draw(
    trials: pd.DataFrame, summary: pd.DataFrame, crossovers: pd.DataFrame, manifest: Manifest, confidence: float
) -> dict[str, Figure]:
    """The figures of one sweep, drawn by its experiment's plug-in (copylab.analysis.analyze_sweep.DrawFigures)."""
    return get(manifest.parameters.experiment).draw(trials, summary, crossovers, manifest, confidence)
