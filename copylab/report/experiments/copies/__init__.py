"""The copies experiment as the report sees it: its declaration (copylab.experiments.copies), its figures, its
captions and answers, and its parts of the report.

Its folders go from the bottom up: basics (what the answers and figures read a sweep's results with), answers (the
study's questions, answered from the results), figures (drawn from the results and the answers), then the
captions, the answers at a glance and the report parts beside this file."""

from __future__ import annotations

from copylab.experiments.copies import COPIES
from copylab.report.contract import ExperimentPlugin
from copylab.report.experiments.copies.figures import copies_figures
from copylab.report.experiments.copies.report import REPORT

PLUGIN = ExperimentPlugin(COPIES, copies_figures, REPORT)
