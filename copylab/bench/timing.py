"""How long the study's steps take a user: the analysis notebook on a large sweep, the report, the explorer's
redraw and `./inv report` end to end."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from copylab import experiments
from copylab.bench.figure import ANALYSIS_BUDGET_S, REPORT_BUDGET_S, BenchFigure
from copylab.error_catalogue import BENCH_ONE_VALUE, BENCH_REPORT_FAILED
from copylab.paths import ROOT
from copylab.record.store import SweepStore


def report_time(smoke: bool) -> list[BenchFigure]:
    """The main job end to end, as a user runs it: ./inv report (build, the sweeps the experiments declare for it,
    analysis, PDF)."""
    if smoke:
        return []
    started = time.perf_counter()
    result = subprocess.run([str(ROOT / "inv"), "report"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise BENCH_REPORT_FAILED.error(error=(result.stderr.strip().splitlines() or ["?"])[-1])
    return [
        BenchFigure(
            f"./inv report (build, the declared sweeps: {_declared_sweeps()}; analysis, PDF)",
            f"<= {REPORT_BUDGET_S / 60:g} min",
            f"{seconds / 60:.1f} min",
            seconds <= REPORT_BUDGET_S,
        )
    ]


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _grown(trials: pd.DataFrame, rows: int) -> pd.DataFrame:
    """ROWS trials made of whole copies of TRIALS' blocks, each copy's repetitions numbered after the last copy's: a
    blocked analysis then pairs them as it pairs measured blocks (trials drawn at random would give a contender two
    trials in one block, which no sweep records)."""
    copies = -(-rows // len(trials))
    last = int(trials["repetition"].max())
    grown = [trials.assign(repetition=trials["repetition"] + copy * last) for copy in range(copies)]
    return pd.concat(grown, ignore_index=True).iloc[:rows].reset_index(drop=True)


def grown_sweep(reference: Path, rows: int, scratch: Path) -> SweepStore:
    """A sweep of ROWS trials grown from REFERENCE's by whole blocks (_grown), written inside SCRATCH, never among
    the project's data."""
    trials, manifest = SweepStore(reference).load()
    big = _grown(trials, rows)
    big["trial_id"] = [f"{tid}-b{i}" for i, tid in enumerate(big["trial_id"])]
    big["order_index"] = range(rows)
    big["sweep"] = "bench-analysis"
    store = SweepStore(scratch / "data" / "bench-analysis", figures_root=scratch / "figures")
    writer = store.writer()
    try:
        for row in big.to_dict("records"):
            writer.write(row)
    finally:
        writer.close()
    # It records as many blocks as its copies made: a fixed design of that many trials.
    parameters = dataclasses.replace(
        manifest.parameters, trials=int(big["repetition"].max()), budget_s=None, target_ci=None
    )
    store.write_manifest(
        dataclasses.replace(manifest, sweep="bench-analysis", parameters=parameters, complete=False, trials_sha256=None)
    )
    return store


def _declared_sweeps() -> str:
    """The sweeps ./inv report runs, as the experiments declare them: "quick, sink, ..., servers quick"."""

    return ", ".join(
        profile if experiment.main else f"{experiment.name} {profile}" for experiment, profile in experiments.reported()
    )


def analysis_and_report_time(reference: Path, rows: int, scratch: Path, smoke: bool = False) -> list[BenchFigure]:
    """The analysis notebook on a trials.csv of ROWS rows drawn from REFERENCE's, and the report rendered from the
    reference sweep (SMOKE: from those rows, already analysed, so that no second analysis runs)."""
    from copylab.analysis.analyze_sweep import run_analysis_notebook
    from copylab.report.render import render_report

    store = grown_sweep(reference, rows, scratch)
    analysis_s = _timed(lambda: run_analysis_notebook(store, output=scratch / "bench-analysis.ipynb"))
    reported = store
    if not smoke:  # the report of the reference sweep, analysed into the scratch directory first (not timed)
        reported = SweepStore(reference, figures_root=scratch / "figures")
        run_analysis_notebook(reported, output=scratch / "reference.ipynb")
    report_s = _timed(lambda: render_report([reported], scratch / "report.pdf"))
    return [
        BenchFigure(
            f"analysis notebook on a {rows:,}-row trials.csv",
            f"<= {ANALYSIS_BUDGET_S} s",
            f"{analysis_s:.1f} s",
            analysis_s <= ANALYSIS_BUDGET_S,
        ),
        BenchFigure("report rendered from existing data", "<= 60 s", f"{report_s:.1f} s", report_s <= 60),
    ]


def explorer_redraw_time(reference: Path, changes: int = 7) -> list[BenchFigure]:
    """Median time from moving the explorer's slider to a finished redraw, on the reference sweep."""
    from copylab.explore.explorer import Explorer

    with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel, the widgets' display() prints reprs
        explorer = Explorer(reference, roots=[reference.parent])
        values = [value for _, value in explorer.fixed.options]
        if len(values) < 2:
            raise BENCH_ONE_VALUE.error(name=reference.name, axis=explorer.fixed.description)
        explorer.fixed.value = values[0]
        # Cycling through the values: every change differs from the value before it, so each one redraws.
        times = [
            _timed(functools.partial(setattr, explorer.fixed, "value", value))
            for value in (values * changes)[1 : changes + 1]
        ]
    median = statistics.median(times)
    return [
        BenchFigure(
            f"explorer redraw after a slider change ({reference.name}, median of {len(times)})",
            "<= 0.5 s",
            f"{median:.2f} s",
            median <= 0.5,
        )
    ]
