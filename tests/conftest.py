"""Shared fixtures: the built programs and a namespace pair of the tests' own."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from copylab.paths import ROOT
from copylab.programs.build import build
from copylab.testbeds import netns
from tests import robustness_table, skips
from tests.reference_analyses import references
from tests.robustness_table import outcome, pytest_runtest_makereport

# the robustness record's fixture, for every test module, and the hook that tells it each test's result; the
# reference sweeps analysed once for the run
__all__ = ["outcome", "pytest_runtest_makereport", "references"]

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.fixture(scope="session", autouse=True)
def bin_dir() -> Path:
    """Built once before any test, so no test depends on which ran first (CI starts from a clean clone)."""
    return build() / "bin"


@pytest.fixture(scope="session")
def pair() -> Iterator[netns.NamespacePair]:
    """Namespaces named after this test run, so a sweep running beside it is never touched."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    tag = os.getpid() % 100000
    with netns.namespace_pair(netns.NamespacePair(f"cltest{tag}_srv", f"cltest{tag}_cli")) as created:
        yield created


def run_in(namespace: str, command: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*netns.exec_prefix(namespace), *command], capture_output=True, text=True, timeout=timeout)


def path_without(directory: Path, prefixes: tuple[str, ...]) -> Path:
    """A PATH directory of links to every program of the system's PATH but those whose name starts with one of
    PREFIXES (a host where they are not installed)."""
    directory.mkdir(parents=True, exist_ok=True)
    for system in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for tool in Path(system).iterdir() if Path(system).is_dir() else ():
            if not tool.name.startswith(prefixes) and not (directory / tool.name).exists():
                (directory / tool.name).symlink_to(tool)
    return directory


# The modules that take longest, in that order, run first: with workers taking a module at a time (./inv test's
# --dist loadfile), a long module drawn last keeps one worker busy while the others have nothing left. The order is
# by measured seconds (pytest --durations=0, setup and teardown included), longest first.
LONGEST_FIRST = (
    "test_robustness.py",
    "test_sweep.py",
    "test_report_without_root.py",
    "test_bench.py",
    "test_remote.py",
    "test_programs.py",
    "test_servers.py",
    "test_fleet.py",
    "test_report_pdf.py",
    "test_project.py",
    "test_error_rates.py",
    "test_cache_levels.py",
    "test_report_whole.py",
    "test_explorer_browser.py",
    "test_sink.py",
    "test_resident.py",
)


def pytest_configure(config: pytest.Config) -> None:
    skips.pytest_configure(config)  # every skip checked against the reasons tests/skips.py declares
    if hasattr(config.option, "loadscopereorder"):
        # pytest-xdist would hand out the modules by their number of tests, most first, whatever LONGEST_FIRST says:
        # the longest module, a single test, came last and ran alone for 90 s at the end of the shared part
        config.option.loadscopereorder = False
    robustness_table.start_run(config)  # the robustness record holds this run alone


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Within ./inv test, this session's counts by outcome, for the run's figures (copylab/cli/measuring.py)."""
    run = os.environ.get("COPYLAB_TEST_RUN")
    if not run or hasattr(config, "workerinput"):
        return
    counts = {outcome: len(terminalreporter.stats.get(outcome, [])) for outcome in ("passed", "failed", "skipped")}
    out = ROOT / "test-artifacts" / f"outcomes-{run}-{os.getpid()}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(counts))


def _serial_modules() -> Path | None:
    """Within ./inv test, where its shared part lists the modules that hold serial tests for its serial part."""
    listed = os.environ.get("COPYLAB_SERIAL_MODULES")
    return Path(listed) if listed else None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The serial part (-m serial) collects only the modules the shared part found serial tests in: collecting all
    of them would cost it about 10 s for its few tests."""
    listed = _serial_modules()
    if config.getoption("markexpr") != "serial" or listed is None or not listed.is_file():
        return None
    module = collection_path.suffix == ".py" and collection_path.name.startswith("test_")
    return True if module and collection_path.name not in listed.read_text().split() else None


@pytest.hookimpl(tryfirst=True)  # before -m deselects them, the serial tests are still among ITEMS
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = _serial_modules()
    if listed is not None and config.getoption("markexpr") == "not serial":
        modules = sorted({item.path.name for item in items if item.get_closest_marker("serial")})
        listed.parent.mkdir(exist_ok=True)
        written = listed.with_suffix(f".{os.getpid()}")  # each worker writes the same list: whole, or not at all
        written.write_text("\n".join(modules) + "\n")
        written.replace(listed)
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
