"""The committed reference sweeps, analysed once for a whole test run.

The report's tests compose its text from these analyses again and again, and one analysis costs seconds (it draws
every figure). The first test that asks for a reference analyses it; every other test of the run, in any of
pytest-xdist's workers, loads the tables that analysis wrote."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from copylab.report.results import Results


@contextmanager
def _locked(path: Path, wait: bool = True) -> Iterator[bool]:
    """PATH held by this process alone: another worker asking for the same reference waits for its analysis.
    Without WAIT, whether it could be held at once (False: another worker holds it)."""
    with path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


class References:
    """Each call loads the results afresh, so that a test which changes what it got changes nothing for the next."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def directory(self, reference: Path) -> Path:
        """Where REFERENCE's copy and its analysis tables are."""
        return self.root / "data" / reference.name

    def many(self, references: Sequence[Path]) -> list[Results]:
        """Each of REFERENCES, in that order, those another worker is analysing asked for last: this worker
        analyses the others meanwhile rather than wait idle."""
        free = {reference: self._results(reference, wait=False) for reference in references}
        return [self(reference) if free[reference] is None else free[reference] for reference in references]

    def __call__(self, reference: Path) -> Results:
        results = self._results(reference, wait=True)
        assert results is not None  # waiting, this worker always gets the lock
        return results

    def _results(self, reference: Path, wait: bool) -> Results | None:
        """REFERENCE's results; without WAIT, None when another worker is analysing it now."""
        from copylab.record.store import SweepStore
        from copylab.report.results import load_results
        from tests.test_reference_report import _analysed

        done = self.root / f"{reference.name}.analysed"
        with _locked(self.root / f"{reference.name}.lock", wait) as held:
            if not held:
                return None
            if not done.exists():
                results = _analysed(self.root, reference)
                done.touch()
                return results
        store = SweepStore(self.directory(reference), figures_root=self.root / "figures", data_root=self.root / "data")
        return load_results(store)


@pytest.fixture(scope="session")
def references(tmp_path_factory: pytest.TempPathFactory) -> References:
    """The analysed references of this run (of all its workers: each worker's temporary directory is one of the
    run's)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "references"
    root.mkdir(exist_ok=True)
    return References(root)
