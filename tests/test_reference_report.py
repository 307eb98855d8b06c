"""The committed reference sweep's report says the same things from the same data, refactoring after refactoring.

tests/golden/reference_report.md holds the Markdown of every data-driven section as it was; a change to the
prose or the statistics shows here as a diff.  When a change is intended, regenerate the file with
    python -m tests.test_reference_report
and commit it with the change that explains it.
"""

from __future__ import annotations

import shutil
import sys
from datetime import date
from pathlib import Path

from copylab import answers, captions, sections
from copylab.analysis import analyze
from copylab.paths import REFERENCE_DATA
from copylab.results import load_results
from copylab.store import SweepStore

GOLDEN = Path(__file__).parent / "golden" / "reference_report.md"


def compose(scratch: Path) -> str:
    """Analyse a copy of the reference sweep inside SCRATCH and return its report's sections, as the notebook has."""
    directory = scratch / "data" / "reference"
    directory.mkdir(parents=True)
    for name in ("trials.csv", "manifest.json"):
        shutil.copy(REFERENCE_DATA / name, directory / name)
    store = SweepStore(directory, figures_root=scratch / "figures", data_root=scratch / "data")
    analyze(store)
    results = load_results(store)
    parts = [sections.front_matter(results, date(2026, 1, 1)), sections.method(results), answers.copy_evidence(results)]
    parts += [captions.caption(kind, results) for kind in captions.CAPTIONS]
    parts.append(sections.copy_limit(results))
    parts += [f"## {question}\n\n{answer}" for question, answer in answers.answers(results)]
    parts.append(sections.limitations(results))
    return "\n\n----\n\n".join(parts)


def test_the_reference_report_says_what_it_said(tmp_path):
    assert compose(tmp_path) == GOLDEN.read_text()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        GOLDEN.write_text(compose(Path(scratch)))
    sys.exit(0)
