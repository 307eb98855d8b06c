"""A task run as the command line runs it: timed, and, when asked to record (COPYLAB_RECORD=1), its figures about
copylab itself written into docs/measured.json by copylab.measured: how long `./inv report`, `./inv test` and
`./inv calibrate` took, how many sweeps the report ran and what they weigh on disk, how many tests ran."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from copylab import measured
from copylab.paths import REFERENCES, REPORT, ROOT

OUTCOMES = ROOT / "test-artifacts"  # where each pytest session of ./inv test leaves its counts (tests/conftest.py)


def _mib(paths: list[Path]) -> float:
    files = [path for root in paths for path in ([root] if root.is_file() else root.rglob("*")) if path.is_file()]
    return sum(path.stat().st_size for path in files) / (1 << 20)


def _report(options: dict[str, Any], seconds: float) -> dict[str, measured.Figure]:
    from copylab.bench.figure import REPORT_BUDGET_S
    from copylab.study.handin import report_sweeps

    by = "./inv report" if options.get("data") is None else "./inv report --data ..."
    if options.get("data") is not None:
        rendered = {Path(path).resolve() for path in str(options["data"]).split(",")}
        if rendered != {path.resolve() for path in REFERENCES}:
            return {}  # only the render of every reference is a figure the docs quote
        return {"references_render_s": measured.figure(round(seconds), "s", "render of every reference", by)}
    stores = report_sweeps(REPORT / "report.ipynb")
    weight = _mib([*(s.directory for s in stores), *(s.figures_dir for s in stores), REPORT / "report.pdf"])
    # Only this run's executed notebooks: report/sweeps/ keeps those of every earlier run too.
    notebooks = [REPORT / "sweeps" / f"{store.directory.name}.ipynb" for store in stores]
    weight += _mib([REPORT / "report.html", REPORT / "report.ipynb", *(path for path in notebooks if path.exists())])
    goal = {"goal": f"<= {REPORT_BUDGET_S:g} s", "met": seconds <= REPORT_BUDGET_S}
    return {
        "report_s": measured.figure(round(seconds), "s", "./inv report from start to end", by, **goal),
        "report_sweeps": measured.figure(len(stores), "", "sweeps ./inv report ran", by),
        "report_mib": measured.figure(round(weight, 1), "MiB", "its sweeps, figures and report on disk", by),
    }


def _test(options: dict[str, Any], seconds: float, started: float) -> dict[str, measured.Figure]:
    if options.get("k") or options.get("passed_on"):
        return {}  # part of the suite: not the figure the docs quote
    counts: dict[str, int] = {}
    for path in OUTCOMES.glob("outcomes-*.json"):
        if path.stat().st_mtime >= started:
            for outcome, count in json.loads(path.read_text()).items():
                counts[outcome] = counts.get(outcome, 0) + count
    by = "./inv test"
    figures = {"test_s": measured.figure(round(seconds), "s", "./inv test, the whole suite", by)}
    figures |= {
        f"tests_{outcome}": measured.figure(count, "", f"tests {outcome} in that run", by)
        for outcome, count in counts.items()
    }
    if counts:
        figures["tests_total"] = measured.figure(sum(counts.values()), "", "tests in the suite", by)
    return figures


def run(command: Any, options: dict[str, Any]) -> int:
    """COMMAND's exit status for OPTIONS; its figures recorded when asked to and it succeeded."""
    if measured.recording():
        measured.STARTED_AT["commit"] = measured.this_commit()
    started_wall, started = time.time(), time.monotonic()
    status: int = command.run(**options)
    seconds = time.monotonic() - started
    recorders: dict[str, Callable[[], dict[str, measured.Figure]]] = {
        "report": lambda: _report(options, seconds),
        "test": lambda: _test(options, seconds, started_wall),
        "calibrate": lambda: {
            "calibration_s": measured.figure(round(seconds, 1), "s", "./inv calibrate", "./inv calibrate")
        },
    }
    if status == 0 and measured.recording() and command.name in recorders:
        measured.record(recorders[command.name]())
    return status


def record_bench(figures: list[Any], smoke: bool) -> None:
    """The bench's figures (copylab.bench.figure.BenchFigure), each a figure of its own keyed by its name, its goal
    and whether it was met; a smoke run measures nothing worth keeping."""
    if smoke:
        return
    measured.record(
        {
            f.name: measured.figure(
                f.measured, "", f.name, "./inv bench", goal="" if f.goal == "report" else f.goal, met=f.passed
            )
            for f in figures
        }
    )
