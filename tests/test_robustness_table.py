"""The robustness record's figures are computed or n/a: the outcome fixture refuses a number or list typed in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from copylab.paths import ROOT
from tests import robustness_table
from tests.robustness_table import (
    Counted,
    Looked,
    Outcome,
    cases,
    differences,
    load,
    look_for_paths,
    render,
    rows_due,
    rows_lost_from,
    save,
    trial_lines,
    trial_rows,
)

HEADER = "trial_id,status,throughput_gbps\n"


def _csv(path: Path, *lines: str) -> Path:
    path.write_text(HEADER + "".join(f"{line}\n" for line in lines))
    return path


@pytest.mark.parametrize("typed", [0, 3, 0.0, "0", [], ["namespace x"]])
def test_a_figure_typed_in_is_refused(typed):
    entry = Outcome(area="data", fault="x")
    with pytest.raises(TypeError, match="rows_lost must be counted"):
        entry["rows_lost"] = typed
    with pytest.raises(TypeError, match="rows_lost must be counted"):
        entry.update(rows_lost=typed)
    if isinstance(typed, list):
        with pytest.raises(TypeError, match="leftovers must be looked for"):
            entry.update(leftovers=typed)
        entry["leftovers"] = Looked([], "nowhere")
        with pytest.raises(TypeError, match="leftovers must be looked for"):
            entry["leftovers"] += typed
    assert "rows_lost" not in entry


def test_computed_figures_and_not_applicable_are_taken(tmp_path):
    entry = Outcome()
    entry.update(rows_lost=None, leftovers=None)
    entry.update(rows_lost=Counted(2, 0), leftovers=look_for_paths(tmp_path / "absent"))
    entry["leftovers"] += Looked(["process 7"], "processes")
    record = entry.record()
    assert (record["rows_lost"], record["rows_checked"], record["leftovers"]) == (0, 2, ["process 7"])
    assert str(tmp_path / "absent") in record["looked_for"] and "processes" in record["looked_for"]
    assert entry.unsaid() == [] and Outcome(area="x").unsaid() == ["rows_lost", "leftovers"]


def test_rows_lost_counts_rows_missing_or_changed(tmp_path):
    before = _csv(tmp_path / "before.csv", "a,ok,1.5", "b,failed,", "c,ok,2.5")
    lines, rows = trial_lines(before), trial_rows(before)
    assert rows_lost_from(lines, before) == rows_lost_from(rows, tmp_path / "before.csv") == Counted(3, 0)
    after = _csv(tmp_path / "after.csv", "a,ok,1.5", "c,ok,2.6", "d,ok,1.0")  # b missing, c changed
    assert rows_lost_from(lines, after) == rows_lost_from(rows, after) == Counted(3, 2)
    assert rows_lost_from(lines, tmp_path / "missing.csv") == Counted(3, 3)
    assert rows_lost_from([], after) == Counted(0, 0)
    assert rows_due(["a", "b", "c"], after) == Counted(3, 1)
    assert rows_due(["a", "b", "d"], before, status="ok") == Counted(3, 2)
    assert Counted(3, 1) + Counted(2, 0) == Counted(5, 1)


def test_the_table_says_what_was_counted_and_what_is_not_applicable():
    common = dict(area="data", result="passed", seconds=0.1, recorded_at="2026-01-01T00:00:00+00:00", host="h")
    entries = {
        "t::a": dict(common, test="t::a", fault="counted", rows_lost=0, rows_checked=8, leftovers=[]),
        "t::b": dict(common, test="t::b", fault="nothing written", rows_lost=None, leftovers=None),
        "t::c": dict(common, test="t::c", fault="an old record", rows_lost=0, leftovers=[]),
    }
    table = render(entries)
    assert "| counted | the test ended before recording it | 0 of 8 | 0 |" in table
    assert "| nothing written | the test ended before recording it | n/a | n/a |" in table
    assert "| an old record | the test ended before recording it | 0 (not counted) | 0 |" in table


CASES = """
from tests.robustness_table import Counted


def test_counted(outcome):
    outcome.update(area="data", fault="counted", rows_lost=Counted(1, 0), leftovers=None)


def test_silent(outcome):
    outcome.update(area="data", fault="says neither figure")


def test_typed_in(outcome):
    outcome.update(area="data", fault="a number typed in", rows_lost=0, leftovers=None)
"""


def test_a_case_that_types_a_figure_in_or_says_none_fails(tmp_path):
    """Through pytest itself: the fixture's checks fail the test they guard, and the record keeps the result."""
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "conftest.py").write_text("from tests.conftest import outcome, pytest_runtest_makereport  # noqa\n")
    record = tmp_path / "record.json"
    environment = {**os.environ, "COPYLAB_ROBUSTNESS_RECORD": str(record), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA", str(tmp_path)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=120,
    )
    summary = result.stdout
    assert "PASSED test_cases.py::test_counted" in summary, summary[-3000:]
    assert "ERROR at teardown of test_silent" in summary or "ERROR test_cases.py::test_silent" in summary, summary
    assert "did not say its rows_lost or leftovers" in summary
    assert "FAILED test_cases.py::test_typed_in" in summary and "rows_lost must be counted" in summary
    saved = json.loads(record.read_text())
    assert {test.split("::")[1]: entry["result"] for test, entry in saved.items()} == {
        "test_counted": "passed",
        "test_silent": "failed",
        "test_typed_in": "failed",
    }
    assert saved[next(t for t in saved if t.endswith("test_counted"))]["rows_checked"] == 1


def _entry(test: str, result: str = "passed", lost: int | None = 0, run: str = "r1", **changes) -> dict:
    entry = dict(
        area="data",
        test=test,
        fault=f"the fault of {test}",
        behaviour="measured 20.2 Gbit/s",
        rows_lost=lost,
        rows_checked=8,
        leftovers=[],
        result=result,
        seconds=1.5,
        recorded_at="2026-01-01T00:00:00+00:00",
        host="h",
        run=run,
    )
    return {**entry, **changes}


def test_the_record_holds_one_run_never_merged_with_an_older_one(tmp_path):
    record = tmp_path / "record.json"
    save(_entry("tests/a.py::test_old", run="r0"), record)
    save(_entry("tests/a.py::test_x", run="r1"), record)
    save(_entry("tests/a.py::test_y", run="r1"), record)
    assert set(load(record)) == {"tests/a.py::test_x", "tests/a.py::test_y"}


def test_a_case_whose_result_or_figures_change_is_a_difference_and_measured_values_are_not():
    committed = render({e["test"]: e for e in (_entry("tests/a.py::test_x"), _entry("tests/a.py::test_y[p|q]"))})
    assert cases(committed) == {
        "a.py::test_x": "passed, rows lost 0, leftovers 0",
        "a.py::test_y[p|q]": "passed, rows lost 0, leftovers 0",
    }
    same = render(
        {
            "tests/a.py::test_x": _entry("tests/a.py::test_x", behaviour="measured 3.1 Gbit/s", seconds=9.9),
            "tests/a.py::test_y[p|q]": _entry("tests/a.py::test_y[p|q]", rows_checked=2),
        }
    )
    assert differences(committed, same, whole=True) == []
    changed = render(
        {
            "tests/a.py::test_x": _entry("tests/a.py::test_x", result="skipped"),
            "tests/a.py::test_y[p|q]": _entry("tests/a.py::test_y[p|q]", lost=1),
        }
    )
    assert differences(committed, changed, whole=True) == [
        "a.py::test_x: ROBUSTNESS.md says passed, rows lost 0, leftovers 0; this run skipped, rows lost 0, leftovers 0",
        "a.py::test_y[p|q]: ROBUSTNESS.md says passed, rows lost 0, leftovers 0; this run passed, rows lost 1, "
        "leftovers 0",
    ]


def test_after_the_whole_suite_a_case_only_one_side_holds_is_a_difference():
    committed = render({"tests/a.py::test_x": _entry("tests/a.py::test_x")})
    written = render({"tests/a.py::test_new": _entry("tests/a.py::test_new")})
    assert differences(committed, written, whole=False) == [
        "a.py::test_new: passed, rows lost 0, leftovers 0 in this run; not in ROBUSTNESS.md"
    ]
    assert differences(committed, written, whole=True)[1] == (
        "a.py::test_x: in ROBUSTNESS.md (passed, rows lost 0, leftovers 0); not run"
    )


def test_the_check_writes_this_runs_table_and_fails_when_the_committed_one_differs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(robustness_table, "ARTIFACT", tmp_path / "record.json")
    monkeypatch.setattr(robustness_table, "WRITTEN", tmp_path / "artifacts" / "ROBUSTNESS.md")
    monkeypatch.setattr(robustness_table, "COMMITTED", tmp_path / "ROBUSTNESS.md")
    monkeypatch.setattr(robustness_table, "ROOT", tmp_path)
    save(_entry("tests/a.py::test_x"), tmp_path / "record.json")
    (tmp_path / "ROBUSTNESS.md").write_text(render({"tests/a.py::test_x": _entry("tests/a.py::test_x")}))
    assert robustness_table.main(["--run", "r1", "--whole"]) == 0
    assert (tmp_path / "artifacts" / "ROBUSTNESS.md").read_text() == (tmp_path / "ROBUSTNESS.md").read_text()
    save(_entry("tests/a.py::test_x", result="failed"), tmp_path / "record.json")
    monkeypatch.setattr(robustness_table.os, "geteuid", lambda: 0)
    assert robustness_table.main(["--run", "r1", "--whole"]) == 1
    said = capsys.readouterr().err
    assert "ROBUSTNESS.md differs from what this run wrote (artifacts/ROBUSTNESS.md) in 1 cases" in said
    assert "a.py::test_x: ROBUSTNESS.md says passed" in said and "this run failed" in said
    assert robustness_table.main(["--run", "r0", "--whole"]) == 1, "a whole run that recorded no case"


def test_the_committed_table_is_of_cases_the_suite_has():
    """ROBUSTNESS.md as committed: every row readable by the check, each of a test that exists."""
    committed = cases((ROOT / "ROBUSTNESS.md").read_text())
    assert committed
    for test in committed:
        path, _, name = test.partition("::")
        assert f"def {name.split('[')[0]}(" in (ROOT / "tests" / path).read_text(), test
