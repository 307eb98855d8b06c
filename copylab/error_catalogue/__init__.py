"""Every line a user can meet when copylab refuses or cannot do something, declared once: the message, its cause
and what to do.  docs/troubleshooting.md is generated from this catalogue (`python -m copylab.cli.troubleshooting`);
a test holds the page to it, finds a catalogued message written out anywhere but here, and fails on a CopylabError
made anywhere but here.

An error is raised from here: `raise NOT_BUILT.error(path=..., command=...)`, and the command line prints it as
`copylab: error: MESSAGE`.  A function that says why something cannot run returns ENTRY.text(...), a Line its
caller raises (`raise why.error()`) or prints.  A note is a line a task prints and goes on (or stops with another
status): its message is the whole line, as printed, and it is declared here so that the page can explain it.  A
message is a str.format template; SAMPLE fills it in for the page, where a number the code computes is filled in by
the page's generator from the code itself.

The entries live in modules by concern (setup, options, records, host, hosts, results); all are importable from
here.
"""

from __future__ import annotations

from types import ModuleType

from copylab.error_catalogue import host, hosts, options, records, results, setup
from copylab.error_catalogue.entry import SECTIONS, Entry, Line
from copylab.error_catalogue.host import *  # noqa: F403
from copylab.error_catalogue.hosts import *  # noqa: F403
from copylab.error_catalogue.options import *  # noqa: F403
from copylab.error_catalogue.records import *  # noqa: F403
from copylab.error_catalogue.results import *  # noqa: F403
from copylab.error_catalogue.setup import *  # noqa: F403

MODULES: tuple[ModuleType, ...] = (setup, options, records, host, hosts, results)


def entries() -> dict[str, Entry]:
    """Every entry by its name, in the page's order (by section, then as declared)."""
    declared = {name: value for module in MODULES for name, value in vars(module).items() if isinstance(value, Entry)}
    return dict(sorted(declared.items(), key=lambda item: SECTIONS.index(item[1].section)))


__all__ = ["MODULES", "SECTIONS", "Entry", "Line", "entries", *entries()]
