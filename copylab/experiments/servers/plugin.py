"""The servers experiment as the report sees it: its declaration, its figures, its parts of the report
and how they present its implementations."""

from __future__ import annotations

from copylab.experiments.servers import SERVERS
from copylab.experiments.servers.figures import servers_figures
from copylab.experiments.servers.presentation import COLORS, EXPLANATIONS
from copylab.experiments.servers.report import REPORT
from copylab.report.contract import ExperimentPlugin

PLUGIN = ExperimentPlugin(SERVERS, servers_figures, REPORT, COLORS, EXPLANATIONS)
