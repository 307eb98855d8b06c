"""Each experiment's plug-in (its declaration, figures and report parts), in the order of copylab.experiments: what
the analysis draws a sweep's figures with and the report asks for an experiment's parts.

The declarations are listed apart (copylab.experiments), below everything that reads them; this list sits beside
the report's basics, which the experiments' figures and report parts are made of.  A test holds the two lists to
the same experiments.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from copylab.error_catalogue import UNKNOWN_CHOICE
from copylab.experiments.copies.plugin import PLUGIN as COPIES
from copylab.experiments.servers.plugin import PLUGIN as SERVERS
from copylab.record.manifest import Manifest
from copylab.report.contract import ExperimentPlugin

PLUGINS: dict[str, ExperimentPlugin] = {plugin.experiment.name: plugin for plugin in (COPIES, SERVERS)}


def get(name: str) -> ExperimentPlugin:
    try:
        return PLUGINS[name]
    except KeyError:
        raise UNKNOWN_CHOICE.error(label="experiment", value=name, choices=", ".join(PLUGINS)) from None


def colors() -> dict[str, str]:
    """Every implementation's colour in the figures, whichever experiment lists it."""
    return {name: color for plugin in PLUGINS.values() for name, color in plugin.colors.items()}


def draw(
    trials: pd.DataFrame, summary: pd.DataFrame, crossovers: pd.DataFrame, manifest: Manifest, confidence: float
) -> dict[str, Figure]:
    """The figures of one sweep, drawn by its experiment's plug-in (copylab.analysis.analyze_sweep.DrawFigures)."""
    return get(manifest.parameters.experiment).draw(trials, summary, crossovers, manifest, confidence)
