"""The robustness suite's record: what each test tried and what copylab did, rendered as ROBUSTNESS.md.

Tests take the ``outcome`` fixture, fill it in (area, fault, behaviour, rows_lost, leftovers) and, once
the test has ended, the entry is merged into test-artifacts/robustness.json under the test's id.

    python -m tests.robustness_table        # test-artifacts/robustness.json -> ROBUSTNESS.md
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import re
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from copylab.paths import ROOT

ARTIFACT = ROOT / "test-artifacts" / "robustness.json"
OUTPUT = ROOT / "ROBUSTNESS.md"
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


@pytest.fixture
def outcome(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A dict the test fills in; saved with the test's result once the test has ended."""
    entry: dict[str, Any] = {}
    failed_before = request.session.testsfailed
    started = time.monotonic()
    yield entry
    if not entry:
        return
    # The call phase's report is logged before teardown, so testsfailed already counts this test.
    failed = request.session.testsfailed > failed_before
    entry.update(
        test=request.node.nodeid,
        seconds=round(time.monotonic() - started, 1),
        result="skipped" if "skipped" in entry else "failed" if failed else "passed",
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=f"{platform.node()}, Linux {platform.release()}, {os.cpu_count()} CPUs",
    )
    save(entry)


def skip(entry: dict[str, Any], reason: str) -> None:
    """Records why the case could not be produced here, then skips the test."""
    entry["skipped"] = reason
    entry.setdefault("behaviour", f"not run: {reason}")
    pytest.skip(reason)


def save(entry: dict[str, Any], path: Path = ARTIFACT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = load(path)
        entries[entry["test"]] = entry
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)


def load(path: Path = ARTIFACT) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else {}


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
        "the table is generated from the suite's own record",
        f"(`{ARTIFACT.relative_to(ROOT)}`) by `python -m tests.robustness_table`: rerun the suite, then that.",
        "",
        "*Rows lost* counts trial rows that had been written (or were due) and were missing or changed",
        "afterwards; *leftovers* lists namespaces, veths, qdiscs, processes, fifos or temporary files of the",
        "case that remained after it. Both must be 0; n/a where the case writes no rows or creates nothing.",
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
            "| Fault or bad input | What copylab did | Rows lost | Leftovers | Test |",
            "|---|---|---|---|---|",
        ]
        for e in selected:
            behaviour = _cell(e.get("behaviour", "the test ended before recording it"))
            lines.append(
                f"| {_cell(e['fault'])} | {behaviour} | {_cell(e.get('rows_lost'))} | "
                f"{_cell(e.get('leftovers'))} | {e['result']}, {e['seconds']} s |"
            )
    return "\n".join(lines) + "\n"


def _still_a_test(node: str) -> bool:
    """Whether a recorded test id names a test that still exists (renamed or removed ones are not reported)."""
    path, _, name = node.partition("::")
    source = ROOT / path
    return source.exists() and f"def {name.split('[')[0]}(" in source.read_text()


def main() -> int:
    entries = {test: entry for test, entry in load().items() if _still_a_test(test)}
    if not entries:
        print(f"{ARTIFACT}: no record; run the robustness suite first", file=sys.stderr)
        return 2
    OUTPUT.write_text(render(entries))
    print(f"wrote {OUTPUT} from {len(entries)} recorded cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
