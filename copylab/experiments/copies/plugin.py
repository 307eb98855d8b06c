"""The copies experiment as the report sees it: its declaration, its figures, its parts of the report
and how they present its implementations."""

from __future__ import annotations

from copylab.experiments.copies import COPIES
from copylab.experiments.copies.figures import copies_figures
from copylab.experiments.copies.presentation import COLORS, EXPLANATIONS
from copylab.experiments.copies.report import REPORT
from copylab.report.contract import ExperimentPlugin

PLUGIN = ExperimentPlugin(COPIES, copies_figures, REPORT, COLORS, EXPLANATIONS)
