"""The servers experiment as the report sees it: its declaration (copylab.experiments.servers), its figures, its
answers and its parts of the report."""

from __future__ import annotations

from copylab.experiments.servers import SERVERS
from copylab.report.contract import ExperimentPlugin
from copylab.report.experiments.servers.figures import servers_figures
from copylab.report.experiments.servers.report import REPORT

PLUGIN = ExperimentPlugin(SERVERS, servers_figures, REPORT)
