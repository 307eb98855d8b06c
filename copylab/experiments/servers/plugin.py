"""The servers experiment as the report sees it: its declaration with its figures and its parts of the report."""

from __future__ import annotations

from copylab.experiments.servers import SERVERS
from copylab.experiments.servers.figures import servers_figures
from copylab.experiments.servers.report import REPORT
from copylab.report.contract import ExperimentPlugin

PLUGIN = ExperimentPlugin(SERVERS, servers_figures, REPORT)
