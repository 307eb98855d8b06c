"""What an entry of the catalogue is (a message, its cause and what to do), and the page's sections."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from copylab.errors import CopylabError


class Line(str):
    """A catalogued message, filled in: what a function returns to say why something cannot run, for its caller to
    raise (`raise why.error()`) or to print."""

    def error(self) -> CopylabError:
        return CopylabError(self)


@dataclass(frozen=True)
class Entry:
    message: str  # a str.format template
    cause: str
    do: str
    section: str  # the heading the page lists it under
    kind: Literal["error", "note"] = "error"
    sample: Mapping[str, Any] = field(default_factory=dict)  # what the page fills MESSAGE in with

    def text(self, **values: Any) -> Line:
        return Line(self.message.format(**values))

    def error(self, kind: type[CopylabError] = CopylabError, /, **values: Any) -> CopylabError:
        """The exception to raise (a CopylabError, or KIND, one of its own kinds): its one line is MESSAGE filled
        in with VALUES."""
        return kind(self.text(**values))


SETUP, OPTIONS, FILES, SWEEP_FILES, NAMESPACES, PAGES, TRANSPORT, SERVERS, URING, COUNTERS = (
    "Before anything runs",
    "Settings and options",
    "Files and folders",
    "A sweep's files",
    "Network namespaces",
    "The sender's pages (`--sender-pages small`, profile `mmap-small`)",
    "The transport",
    "The servers experiment",
    "io_uring",
    "Counters: perf and bpftrace",
)
HOSTS, TRIALS, COMPARE, REPORT, EXPLORER, BENCH, LIBRARY = (
    "Two hosts, SSH and fleets",
    "When trials fail",
    "Comparing two sweeps",
    "The report and its notebooks",
    "The explorer",
    "`./inv bench`",
    "Calling copylab's functions (in a notebook)",
)
SECTIONS = (
    SETUP,
    OPTIONS,
    FILES,
    SWEEP_FILES,
    NAMESPACES,
    PAGES,
    TRANSPORT,
    SERVERS,
    URING,
    COUNTERS,
    HOSTS,
    TRIALS,
    COMPARE,
    REPORT,
    EXPLORER,
    BENCH,
    LIBRARY,
)

CHOWN = "sudo chown -R $USER .venv build data figures report"
