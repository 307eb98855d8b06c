"""The robustness suite's record: what each test tried and what copylab did, rendered as ROBUSTNESS.md.

Tests take the ``outcome`` fixture, fill it in (area, fault, behaviour, rows_lost, leftovers) and, once
the test has ended, the entry is saved in test-artifacts/robustness.json under the test's id.  The record holds
one run of the suite (its id in COPYLAB_TEST_RUN, which ./inv test gives both its parts): an entry of another
run is dropped, never merged, so a case that did not run this time cannot keep an old "passed".

Its two figures are computed, never typed in: ``rows_lost`` takes only a ``Counted`` (made by
``rows_lost_from``, which compares the rows written before with the file afterwards, or ``rows_due``, which
looks for a row of every trial due) or None, n/a: the case writes no rows; ``leftovers`` takes only a
``Looked`` (made by a helper that looked, naming where) or None, n/a: the case creates nothing.  A bare
number or list fails the test, and so does a case that ends without saying either.

    python -m tests.robustness_table [--run ID] [--whole]
        # test-artifacts/robustness.json -> test-artifacts/ROBUSTNESS.md, compared with the committed ROBUSTNESS.md

./inv test runs it after the suite: a case whose result, rows lost or leftovers differ from the committed file
(or, after the whole suite, a case only one of them holds) fails the run.  The committed file is a copy of what a
whole run in CI wrote.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
import platform
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from copylab.paths import ROOT

# The record; a test of this module points it elsewhere so that its made-up cases stay out of the real one.
ARTIFACT = Path(os.environ.get("COPYLAB_ROBUSTNESS_RECORD", ROOT / "test-artifacts" / "robustness.json"))
WRITTEN = ROOT / "test-artifacts" / "ROBUSTNESS.md"  # what this run wrote
COMMITTED = ROOT / "ROBUSTNESS.md"
RUN = "COPYLAB_TEST_RUN"  # the environment variable naming the run the record holds
AREAS = {
    "link": "Link faults",
    "process": "Process faults",
    "interruption": "Interruption",
    "environment": "Environment",
    "data": "Data files",
    "stress": "Correctness under stress",
    "fuzz": "Fuzzing",
    "security": "Security",
    "kernel copies": "Kernel copy accounting (BPF)",
    "two hosts": "Two hosts over SSH",
    "privilege": "Without root",
}


Row = Mapping[str, str] | str  # a trials.csv row, parsed or as its line


@dataclass(frozen=True)
class Counted:
    """Rows lost, as counted: of CHECKED rows that had been written (or were due), LOST were missing or changed
    afterwards.  Made by rows_lost_from or rows_due, never by hand."""

    checked: int
    lost: int

    def __add__(self, other: Counted) -> Counted:
        if not isinstance(other, Counted):
            return NotImplemented
        return Counted(self.checked + other.checked, self.lost + other.lost)


class Looked(list[str]):
    """Leftovers found by a helper that looked for them; WHERE says what it looked at."""

    def __init__(self, found: Iterable[str], where: str) -> None:
        super().__init__(found)
        self.where = where

    def __add__(self, other: list[str]) -> Looked:  # type: ignore[override]
        if not isinstance(other, Looked):
            return NotImplemented
        return Looked([*self, *other], f"{self.where}; {other.where}")

    def __iadd__(self, other: Iterable[str]) -> Looked:  # type: ignore[override]
        if not isinstance(other, Looked):
            raise TypeError(f"leftovers must be looked for, not typed in: {other!r}")
        self.extend(other)
        self.where = f"{self.where}; {other.where}"
        return self


def look_for_paths(*paths: Path) -> Looked:
    """Those of PATHS (files or directories a case must not leave) that exist."""
    found = [f"{'directory' if path.is_dir() else 'file'} {path}" for path in paths if path.exists()]
    return Looked(found, ", ".join(str(path) for path in paths))


def trial_rows(source: Path) -> list[dict[str, str]]:
    """The rows of a trials.csv (SOURCE, or SOURCE/trials.csv for a sweep's directory); none if it is absent."""
    path = source / "trials.csv" if source.is_dir() else source
    if not path.exists():
        return []
    with path.open(newline="", errors="replace") as stream:
        return list(csv.DictReader(stream))


def trial_lines(source: Path) -> list[str]:
    """The data lines of a trials.csv (or of a sweep's directory's), as written; none if it is absent."""
    path = source / "trials.csv" if source.is_dir() else source
    return path.read_text(errors="replace").splitlines()[1:] if path.exists() else []


def _key(row: Row) -> Any:
    return row if isinstance(row, str) else tuple(sorted(row.items()))


def rows_lost_from(before: Iterable[Row], after: Path | Iterable[Row]) -> Counted:
    """The rows of BEFORE (read before the fault) that AFTER (rows, or a trials.csv or sweep directory read now)
    no longer holds unchanged.  Rows as lines are compared as lines, parsed rows as parsed rows."""
    before = list(before)
    if isinstance(after, Path):
        after = trial_lines(after) if before and isinstance(before[0], str) else trial_rows(after)
    remaining = Counter(_key(row) for row in after)
    lost = 0
    for row in before:
        if remaining[_key(row)] > 0:
            remaining[_key(row)] -= 1
        else:
            lost += 1
    return Counted(len(before), lost)


def rows_due(trial_ids: Iterable[str], after: Path | Iterable[Mapping[str, str]], status: str | None = None) -> Counted:
    """The trials due (TRIAL_IDS) that have no row in AFTER (rows, or a trials.csv or sweep directory), or none
    with STATUS when given."""
    rows = trial_rows(after) if isinstance(after, Path) else list(after)
    present = {row.get("trial_id") for row in rows if status is None or row.get("status") == status}
    due = list(trial_ids)
    return Counted(len(due), sum(trial_id not in present for trial_id in due))


def _check(key: str, value: Any) -> None:
    if key == "rows_lost" and value is not None and not isinstance(value, Counted):
        raise TypeError(f"rows_lost must be counted (rows_lost_from, rows_due) or None (n/a), not {value!r}")
    if key == "leftovers" and value is not None and not isinstance(value, Looked):
        raise TypeError(f"leftovers must be looked for (a Looked from a helper) or None (n/a), not {value!r}")


class Outcome(dict[str, Any]):
    """A case's record: a dict that takes rows_lost and leftovers only as computed (see the module's doc)."""

    def __setitem__(self, key: str, value: Any) -> None:
        _check(key, value)
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def unsaid(self) -> list[str]:
        """The figures a case that ran has not given (computed, or None for n/a)."""
        return [key for key in ("rows_lost", "leftovers") if key not in self]

    def record(self) -> dict[str, Any]:
        """The entry as JSON: rows lost with the rows counted, leftovers with where they were looked for."""
        entry = dict(self)
        counted = entry.get("rows_lost")
        if isinstance(counted, Counted):
            entry.update(rows_lost=counted.lost, rows_checked=counted.checked)
        looked = entry.get("leftovers")
        if isinstance(looked, Looked):
            entry.update(leftovers=list(looked), looked_for=looked.where)
        return entry


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keeps each phase's report on its test, for the outcome fixture to read at teardown."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


def _result(item: pytest.Item, entry: Outcome) -> str:
    reports = item.stash.get(_REPORTS, {})
    if "skipped" in entry or any(report.skipped for report in reports.values()):
        return "skipped"
    return "failed" if any(report.failed for report in reports.values()) else "passed"


def start_run(config: pytest.Config) -> None:
    """Names this run, unless ./inv test did (its two parts are one run); xdist's workers inherit the name."""
    if not hasattr(config, "workerinput"):
        os.environ.setdefault(RUN, f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}")


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Iterator[Outcome]:
    """An Outcome the test fills in; saved with the test's result once the test has ended."""
    entry = Outcome()
    started = time.monotonic()
    yield entry
    if not entry:
        return
    record = entry.record()
    record.update(
        test=request.node.nodeid,
        seconds=round(time.monotonic() - started, 1),
        result=_result(request.node, entry),
        run=os.environ.get(RUN, ""),
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=f"{platform.node()}, Linux {platform.release()}, {os.cpu_count()} CPUs",
    )
    unsaid = entry.unsaid() if record["result"] == "passed" else []
    if unsaid:
        record["result"] = "failed"
    save(record)
    if unsaid:
        pytest.fail(f"the case did not say its {' or '.join(unsaid)}: a computed figure, or None (n/a)")


def skip(entry: Outcome, reason: str) -> None:
    """Records why the case could not be produced here, then skips the test."""
    entry["skipped"] = reason
    entry.setdefault("behaviour", f"not run: {reason}")
    pytest.skip(reason)


def save(entry: dict[str, Any], path: Path = ARTIFACT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = {test: kept for test, kept in load(path).items() if kept.get("run") == entry["run"]}
        entries[entry["test"]] = entry
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)


def load(path: Path = ARTIFACT) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else {}


def _rows_cell(entry: dict[str, Any]) -> str:
    lost = entry.get("rows_lost")
    if lost is None:
        return "n/a"
    # A record written before the figure was counted says so rather than pass for a measured zero.
    return f"{lost} of {entry['rows_checked']}" if "rows_checked" in entry else f"{lost} (not counted)"


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, list):
        return str(len(value)) + (f" ({'; '.join(map(str, value))})" if value else "")
    # Paths of the machine that ran the suite say nothing to the reader.
    text = re.sub(r"/tmp/pytest-of-[^/]+/pytest-\d+/[^/]+/", "", str(value)).replace(f"{ROOT}/", "")
    return text.replace("|", "\\|").replace("\n", " ")


def render(entries: dict[str, dict[str, Any]]) -> str:
    """ROBUSTNESS.md: a summary and one table row per fault or bad input, every figure from ENTRIES."""
    rows = sorted(entries.values(), key=lambda e: (list(AREAS).index(e["area"]), e["test"]))
    counted = [e for e in rows if e["result"] != "skipped"]
    lost = sum(e.get("rows_lost") or 0 for e in counted)
    left = sum(len(e["leftovers"]) for e in counted if e.get("leftovers") is not None)
    results = {name: sum(e["result"] == name for e in rows) for name in ("passed", "failed", "skipped")}
    recorded = sorted(e["recorded_at"] for e in rows)
    hosts = sorted({e["host"] for e in rows})
    lines = [
        "# Robustness",
        "",
        "What copylab does when the link, its programs, the operator, the environment or its input files",
        "misbehave. Every row below is one case of the robustness suite (`tests/test_robustness.py`,",
        "`tests/test_verifiers.py`, `tests/test_fuzz.py`, `tests/test_kernel_copies.py`, `tests/test_remote.py`,",
        "`tests/test_rootless.py`);",
        "the table is written by the suite from its own record of one run (`test-artifacts/robustness.json`):",
        "`./inv test` writes `test-artifacts/ROBUSTNESS.md` and fails when a case's result, rows lost or leftovers",
        "differ from this file's. This file is a copy of what a whole run in CI wrote.",
        "",
        "*Rows lost* counts trial rows that had been written (or were due) and were missing or changed",
        'afterwards, of the rows counted ("0 of 8": 8 rows read before the fault and found unchanged after it);',
        "*leftovers* lists namespaces, veths, qdiscs, processes, fifos or temporary files of the case that",
        "remained after it, looked for on every host the case used. Both must be 0; n/a where the case writes no",
        "rows or creates nothing.",
        "",
        f"Recorded {recorded[0]} to {recorded[-1]} on {', '.join(hosts)}: {len(rows)} cases, "
        f"{results['passed']} passed, {results['failed']} failed, {results['skipped']} not producible here; "
        f"rows lost in total: {lost}; leftovers in total: {left}.",
    ]
    for area, title in AREAS.items():
        selected = [e for e in rows if e["area"] == area]
        if not selected:
            continue
        lines += [
            "",
            f"## {title}",
            "",
            "| Fault or bad input | What copylab did | Rows lost | Leftovers | Test, its result |",
            "|---|---|---|---|---|",
        ]
        for e in selected:
            behaviour = _cell(e.get("behaviour", "the test ended before recording it"))
            lines.append(
                f"| {_cell(e['fault'])} | {behaviour} | {_rows_cell(e)} | "
                f"{_cell(e.get('leftovers'))} | `{_test(e['test'])}`: {e['result']}, {e['seconds']} s |"
            )
    return "\n".join(lines) + "\n"


def _test(node: str) -> str:
    return node.removeprefix("tests/").replace("`", "'")


# A table row as render writes it, read back: the figures a check compares, and the test the row is of.
_ROW = re.compile(
    r"\| (?P<rows>n/a|\d+ of \d+|\d+ \(not counted\)) \| (?P<leftovers>n/a|\d+)(?: \(.*\))? \| "
    r"`(?P<test>[^`]+)`: (?P<result>passed|failed|skipped), [0-9.]+ s \|$"
)


def cases(text: str) -> dict[str, str]:
    """Each case of a ROBUSTNESS.md TEXT (its test) and what a check holds it to: its result, the rows it lost and
    its leftovers (counts, not what was counted: the rows a case reads before a fault depend on timing)."""
    found = {}
    for line in text.splitlines():
        if match := _ROW.search(line):
            lost = match["rows"].split()[0]
            found[match["test"]] = f"{match['result']}, rows lost {lost}, leftovers {match['leftovers']}"
    return found


def differences(committed: str, written: str, whole: bool) -> list[str]:
    """How the cases of WRITTEN (this run's table) differ from COMMITTED; after a WHOLE run a case only one of them
    holds is a difference too (after part of the suite, the cases it did not run are not compared)."""
    before, now = cases(committed), cases(written)
    found = [
        f"{test}: ROBUSTNESS.md says {before[test]}; this run {result}"
        for test, result in now.items()
        if test in before and before[test] != result
    ]
    found += [f"{test}: {now[test]} in this run; not in ROBUSTNESS.md" for test in now if test not in before]
    if whole:
        found += [f"{test}: in ROBUSTNESS.md ({before[test]}); not run" for test in before if test not in now]
    return found


def main(arguments: list[str]) -> int:
    """Writes this run's table to test-artifacts/ROBUSTNESS.md and compares it with the committed ROBUSTNESS.md;
    1 when they differ (exit 0 without root: root's cases skip, and ./inv test has said so)."""
    whole = "--whole" in arguments
    run = arguments[arguments.index("--run") + 1] if "--run" in arguments else None
    entries = load(ARTIFACT)
    run = run or max((entry.get("run", "") for entry in entries.values()), default=None)
    entries = {test: entry for test, entry in entries.items() if entry.get("run") == run}
    if not entries:  # after part of the suite: none of its tests was a robustness case
        if whole:
            print("copylab: the whole suite ran, yet its record holds no robustness case", file=sys.stderr)
        return 1 if whole else 0
    WRITTEN.parent.mkdir(parents=True, exist_ok=True)
    WRITTEN.write_text(render(entries))
    found = differences(COMMITTED.read_text() if COMMITTED.exists() else "", WRITTEN.read_text(), whole)
    if not found:
        print(f"copylab: ROBUSTNESS.md holds what this run found in its {len(entries)} cases")
        return 0
    print(
        f"copylab: ROBUSTNESS.md differs from what this run wrote ({WRITTEN.relative_to(ROOT)}) in {len(found)} "
        "cases; if this run is right, copy that file over it:",
        file=sys.stderr,
    )
    for line in found:
        print(f"  {line}", file=sys.stderr)
    return 0 if os.geteuid() != 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
