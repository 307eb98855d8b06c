"""Every reason a test may skip, declared once with the hosts it applies to; under CI=true any other skip fails.

A skip hides a test: the run still exits 0.  So a test may skip only for a reason declared in DECLARED, and
under CI=true (CI runs as root, with Chromium and LaTeX) only for one whose hosts CI's may be: a skip for an
undeclared reason, or for one CI never meets, fails the run and is named with its reason.

    python -m tests.skips [pytest arguments]   # how many of those tests cannot run here, and why (./inv test)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Reason:
    """A reason to skip: the skip's text matches PATTERN; NEED says it in two words; HOSTS says where it applies;
    ON_CI whether CI's host may be one of them; FIXTURES skip for it when a test uses them (so it is known before
    the test runs)."""

    pattern: str
    need: str
    hosts: str
    on_ci: bool
    fixtures: tuple[str, ...] = ()

    def matches(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


DECLARED = (
    Reason(
        r"network namespaces need root|two hosts in namespaces need root",
        "need root",
        "an unprivileged user (namespaces, veths and qdiscs are made as root; CI runs as root)",
        on_ci=False,
        fixtures=("pair", "hosts"),
    ),
    Reason(r"this kernel has no netem", "need netem", "kernels built without sch_netem (CI's among them)", on_ci=True),
    Reason(r"needs Debian's chromium", "need Chromium", "hosts without /usr/bin/chromium (CI has it)", on_ci=False),
    Reason(r"needs valgrind", "need valgrind", "hosts without valgrind (./inv installs it, so CI has it)", on_ci=False),
    Reason(
        r"could not import 'playwright",
        "need playwright",
        "environments without playwright (CI installs it)",
        on_ci=False,
    ),
    Reason(
        r"needs texlive-xetex, pandoc and poppler-utils|needs poppler-utils",
        "need LaTeX",
        "hosts without LaTeX",
        on_ci=False,
    ),
    Reason(
        r"needs git and the project's history", "need git", "a copy of the project that is not a git clone", on_ci=False
    ),
    Reason(
        r"needs the committed reference sweep", "need the reference sweep", "a copy without data/reference", on_ci=False
    ),
    Reason(
        r"no copylab script on this environment's PATH",
        "need the copylab script",
        "an environment not made by ./inv",
        on_ci=False,
    ),
    Reason(
        r"the host's default is reno already",
        "need a default other than reno",
        "hosts whose TCP congestion control is reno",
        on_ci=False,
    ),
    Reason(
        r"this host counts hardware events",
        "need a VM",
        "bare metal, where perf counts cycles (CI is a VM)",
        on_ci=False,
    ),
    Reason(
        r"TCP_ZEROCOPY_RECEIVE mapped no page here",
        "need mapped receives",
        "kernels that map no received page",
        on_ci=False,
    ),
    Reason(
        r"a calibration was disturbed",
        "need a quiet core",
        "any host, while another process or VM shares the calibrated core (then nothing can be compared)",
        on_ci=True,
    ),
)


def declared(text: str) -> Reason | None:
    return next((reason for reason in DECLARED if reason.matches(text)), None)


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def reason_of(report: pytest.TestReport | pytest.CollectReport) -> str:
    """A skip's reason as given to pytest.skip or skipif ("Skipped: " cut off)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def refusal(text: str) -> str | None:
    """Why a skip for TEXT fails this run: undeclared, or (under CI=true) a reason CI's host never has."""
    reason = declared(text)
    if reason is None:
        return "undeclared"
    if in_ci() and not reason.on_ci:
        return f"CI is never such a host ({reason.hosts})"
    return None


_REFUSED = pytest.StashKey[list[str]]()  # under CI=true: these fail the run
_UNDECLARED = pytest.StashKey[list[str]]()  # elsewhere: named at the end


def _note(config: pytest.Config, report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    text = reason_of(report)
    why = refusal(text)
    if why:
        config.stash.setdefault(_REFUSED if in_ci() else _UNDECLARED, []).append(f"{report.nodeid}: {text} ({why})")


class Check:
    """The plugin: notes every skip (the controller's reports too, under xdist), names refused ones at the end,
    and fails the run for them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        _note(self.config, report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        _note(self.config, report)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        undeclared = self.config.stash.get(_UNDECLARED, [])
        refused = self.config.stash.get(_REFUSED, [])
        if undeclared:
            terminalreporter.write_sep("=", f"{len(undeclared)} skipped for a reason tests/skips.py does not declare")
            for line in undeclared:
                terminalreporter.write_line(line)
        if refused:
            terminalreporter.write_sep("=", f"CI=true: {len(refused)} skipped for a reason CI must not meet", red=True)
            for line in refused:
                terminalreporter.write_line(line)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # a run whose only module skipped collected nothing (5), which ./inv test takes for an empty part
        passing = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        if self.config.stash.get(_REFUSED, []) and session.exitstatus in passing:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    """Checks every skip in the process that reports (xdist's workers send it their reports)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Check(config), "copylab-declared-skips")


def _item_needs(item: pytest.Item) -> list[str]:
    """What ITEM lacks here, as far as is known before it runs (each a declared reason's NEED, or an undeclared
    reason's text): its skipif marks that hold, and the fixtures it uses that skip without root."""
    needs = []
    for mark in item.iter_markers("skipif"):
        condition = mark.args[0] if mark.args else mark.kwargs.get("condition")
        if isinstance(condition, bool) and condition:
            text = str(mark.kwargs.get("reason", ""))
            needs.append(reason.need if (reason := declared(text)) else text)
    if os.geteuid() != 0:
        needs += [reason.need for reason in DECLARED if set(reason.fixtures) & set(item.fixturenames)]
    return needs


class _Count:
    def __init__(self) -> None:
        self.items: list[pytest.Item] = []
        self.skipped_modules: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.items = list(session.items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:
            self.skipped_modules.append(f"{report.nodeid} ({reason_of(report)})")


def cannot_run(arguments: list[str]) -> str:
    """One line: how many of the tests ARGUMENTS select cannot run on this host, and why."""
    count = _Count()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(["--collect-only", "-q", "-p", "no:xdist", *arguments], plugins=[count])
    reasons: Counter[str] = Counter()
    for item in count.items:
        if needs := _item_needs(item):
            reasons[needs[0]] += 1
    stopped = sum(reasons.values())
    why = ", ".join(f"{number} {need}" for need, number in reasons.most_common())
    line = f"{stopped} of {len(count.items)} tests cannot run here and will skip" + (f": {why}" if why else "")
    if count.skipped_modules:
        line += f"; whole modules skipped: {', '.join(count.skipped_modules)}"
    return line


if __name__ == "__main__":
    print(f"copylab: {cannot_run(sys.argv[1:])}")
