"""The committed reference sweeps' report says the same things from the same data, refactoring after refactoring.

tests/golden/reference_report.md (the copies sweep), reference_servers_report.md (the servers sweep) and
reference_open_load_report.md (the servers sweep under open load) hold the Markdown of every data-driven section
as it was; a change to the prose or the statistics shows here as a diff.
When a change is intended, regenerate the files with
    python -m tests.test_reference_report
and commit them with the change that explains it.
"""

from __future__ import annotations

import shutil
import sys
from datetime import date
from pathlib import Path

from copylab.analysis.analyze_sweep import analyze
from copylab.experiments.copies import answers, captions, glance
from copylab.experiments.copies import report as copies_report
from copylab.experiments.servers import open_load
from copylab.experiments.servers import report as server_report
from copylab.paths import REFERENCE_DATA, REFERENCE_OPEN_LOAD_DATA, REFERENCE_SERVERS_DATA
from copylab.record.store import SweepStore
from copylab.report import sections
from copylab.report.results import Results, load_results

GOLDEN = Path(__file__).parent / "golden" / "reference_report.md"
GOLDEN_SERVERS = Path(__file__).parent / "golden" / "reference_servers_report.md"
GOLDEN_OPEN_LOAD = Path(__file__).parent / "golden" / "reference_open_load_report.md"


def _analysed(scratch: Path, reference: Path) -> Results:
    """A copy of a reference sweep inside SCRATCH, analysed there."""
    directory = scratch / "data" / reference.name
    directory.mkdir(parents=True)
    for name in ("trials.csv", "manifest.json"):
        shutil.copy(reference / name, directory / name)
    store = SweepStore(directory, figures_root=scratch / "figures", data_root=scratch / "data")
    analyze(store)
    return load_results(store)


def compose(scratch: Path, sweep: Path = REFERENCE_DATA) -> str:
    """A copies sweep's report sections (the reference's by default), as the notebook has them."""
    results = _analysed(scratch, sweep)
    parts = [glance.at_a_glance(results), glance.part_b(results), glance.part_c(results)]
    parts += [
        sections.front_matter(results, date(2026, 1, 1)),
        sections.method(results),
        answers.copy_evidence(results),
    ]
    parts += [captions.caption(kind, results) for kind in captions.CAPTIONS]
    parts.append(copies_report.copy_limit(results))
    parts += [f"## {question}\n\n{answer}" for question, answer in answers.answers(results)]
    parts.append(sections.limitations(results))
    return "\n\n----\n\n".join(parts)


def compose_servers(scratch: Path) -> str:
    """The servers reference's section "How a server waits", as the notebook has it."""
    results = _analysed(scratch, REFERENCE_SERVERS_DATA)
    parts = [server_report.introduction(results)]
    parts += [server_report.caption(name, results) for name in server_report.FIGURES]
    parts += [f"## {question}\n\n{answer}" for question, answer in server_report.answers(results)]
    parts.append(sections.limitations(results))
    return "\n\n----\n\n".join(parts)


def compose_open_load(scratch: Path) -> str:
    """The open-load reference's section "How a server waits under open load", as the notebook has it."""
    results = _analysed(scratch, REFERENCE_OPEN_LOAD_DATA)
    parts = [open_load.introduction(results), open_load.caption(results), open_load.answer_target(results)]
    return "\n\n----\n\n".join(parts)


def test_the_reference_report_says_what_it_said(tmp_path):
    assert compose(tmp_path) == GOLDEN.read_text()


def test_the_servers_section_says_what_it_said(tmp_path):
    assert compose_servers(tmp_path) == GOLDEN_SERVERS.read_text()


def test_the_open_load_section_says_what_it_said(tmp_path):
    assert compose_open_load(tmp_path) == GOLDEN_OPEN_LOAD.read_text()


if __name__ == "__main__":
    import tempfile

    for golden, composer in (
        (GOLDEN, compose),
        (GOLDEN_SERVERS, compose_servers),
        (GOLDEN_OPEN_LOAD, compose_open_load),
    ):
        with tempfile.TemporaryDirectory() as scratch:
            golden.write_text(composer(Path(scratch)))
    sys.exit(0)
