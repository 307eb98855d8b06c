"""The report's sections around the experiments' parts: the Limitations, the short method after them, and the
appendices on the main sweep (its setup, its full method, how to reproduce it).

Markdown computed from a sweep's Results and its typed manifest; nothing here types in a result.  One module per
section: setup.py, methodology.py (with spending.py, where the measuring time went, and transport_prose.py, the
transport's settings), reproduction.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from copylab.report import limitation, plugins
from copylab.report.results import Results, every_trial
from copylab.report.sections.methodology import method, short_method
from copylab.report.sections.reproduction import remeasure_command, render_command, reproduce, sweep_heading
from copylab.report.sections.setup import front_matter

__all__ = [
    "front_matter",
    "limitations",
    "method",
    "remeasure_command",
    "render_command",
    "reproduce",
    "short_method",
    "sweep_heading",
]


def limitations(results: Results, companions: Mapping[str, Results] | None = None) -> str:
    """The sweep's limitations as a Markdown bullet list, each computed from its data or manifest and, for the main
    sweep, the sweeps its experiment claims beside it (COMPANIONS, copylab.report.sections.compose.arrange)."""
    main = limitation.main_metric(results.summary)
    unstable = main[main["unstable"]]
    manifest = results.manifest
    items = [
        limitation.failed_trials(every_trial(results)),
        limitation.unstable_means(main, unstable),
        limitation.trials_to_settle(unstable, results),
        limitation.trials_per_configuration(main),
        limitation.missing_counters(results),
        limitation.shared_machine(results),
        *plugins.get(manifest.parameters.experiment).report.limitations(results, companions),
        limitation.retransmits_seen(results),
        limitation.calibration_drift([results, *(companions or {}).values()]),
        limitation.without_root(manifest),
        limitation.not_measured(manifest),
        limitation.interrupted(manifest),
        limitation.uncommitted_code(manifest),
    ]
    return "\n".join(f"- {item}" for item in items if item is not None)
