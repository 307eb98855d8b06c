"""How to reproduce a report: the commands that render it again and measure its sweeps again, and the heading of
a further sweep."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from copylab.declarations import implementations, settings
from copylab.formatting import code, md_escape
from copylab.paths import ROOT
from copylab.report.results import (
    Results,
)
from copylab.report.sections.setup import sizes_text


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# What the printed command never repeats: the namespaces' names are the run's own (a second run picks free ones).
NOT_REPEATED = frozenset({"namespaces"})


def remeasure_command(results: Results) -> list[str]:
    """run-sweep's words that measure this sweep's grid again, under a new name (run-sweep refuses an existing one):
    every setting the manifest records, its budget and layout and receive arms included, so that the command plans
    the same configurations."""
    parameters = results.manifest.parameters.parameters()
    words = [f"--name {results.name}-again"]
    profiles = results.manifest.parameters.declared.profiles
    profile = profiles.get(results.manifest.profile, {})
    if results.manifest.profile in profiles:
        words.append(f"--profile {results.manifest.profile}")
    study_layout_only = list(parameters["layout"]) == [implementations.STUDY_LAYOUT] and not parameters["layout_for"]
    for setting in settings.SETTINGS:
        if setting.option is None or setting.name in NOT_REPEATED or (setting.name == "layout" and study_layout_only):
            continue
        word = settings.option_word(setting, parameters[setting.name], profile.get(setting.name, setting.default))
        if word is not None:
            words.append(word)
    return words


# The longest line of a command the PDF sets inside its margin (verbatim text does not wrap).
COMMAND_LINE = 66


def _wrapped(words: list[str], first: str) -> list[str]:
    """A shell command's words on lines of at most COMMAND_LINE characters, continued by '\\'.  A word longer than
    a line (an option's long list) is cut after a comma: a '\\' at a line's end with no space before it and none
    at the next line's start continues the word itself."""
    lines = [first]
    for word in words:
        if len(lines[-1]) + len(word) < COMMAND_LINE:
            lines[-1] += " " + word
            continue
        lines[-1] += " \\"
        lines.append("    " + word)
        while len(lines[-1]) > COMMAND_LINE and "," in lines[-1][: COMMAND_LINE - 1]:
            cut = lines[-1].rindex(",", 0, COMMAND_LINE - 1) + 1
            lines[-1:] = [lines[-1][:cut] + "\\", lines[-1][cut:]]
    return lines


def render_command(sweeps: Sequence[Results]) -> list[str]:
    """./inv report's command that renders a report from SWEEPS, the main one first, one directory a line: a
    backslash at a line's end continues the word, so the comma list stays one argument and inside the margin."""
    directories = [_relative(sweep.store.directory) for sweep in sweeps]
    return ["./inv report --data \\", *(f"{d},\\" for d in directories[:-1]), directories[-1]]


def reproduce(results: Results, sweeps: Sequence[Results] = ()) -> str:
    """The commands that re-render this report from every sweep it was built from (SWEEPS, the main one RESULTS
    first; RESULTS alone by default) and re-measure its main sweep, and the code version."""
    git = results.manifest.git
    return "\n".join(
        [
            "Re-render this report from the same data, every sweep it was built from (no root needed):",
            "",
            "```",
            *render_command(sweeps or [results]),
            "```",
            "",
            "Measure a new quick sweep of each experiment and report them in one command (no root needed: without "
            "root copylab creates the namespaces inside a user namespace):",
            "",
            "```",
            "./inv report",
            "```",
            "",
            "Measure this sweep's configurations again, with every setting it recorded, under a new name (no root "
            "needed either):",
            "",
            "```",
            *_wrapped(remeasure_command(results), "./inv run-sweep"),
            "```",
            "",
            f"Code version: commit `{git.commit}`"
            + (" (the working tree had uncommitted changes)." if git.dirty else "."),
        ]
    )


def sweep_heading(results: Results) -> str:
    """The heading and settings line of a further sweep in the report."""
    params, host = results.manifest.parameters, results.manifest.host
    grid = (
        f"{params.experiment} experiment; response sizes {sizes_text(params.rr_sizes)}; connections "
        + ", ".join(str(c) for c in params.connections)
        if params.connections
        else f"sizes {sizes_text(params.sizes)}"
    )
    return "\n".join(
        [
            f"## Sweep {code(results.name)}",
            "",
            f"Host {md_escape(host.hostname)} (kernel {md_escape(host.kernel)}, {host.cores} cores); {grid}; threads "
            + ", ".join(str(t) for t in params.threads)
            + f"; CPU pinning {', '.join(params.pinning)}; {params.trials} trials per configuration.",
        ]
    )
