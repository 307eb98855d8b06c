"""Each committed reference holds the grid and method of the command that measures it today (a profile of
`./inv report`, by name, with more blocks), so that a teacher comparing a student's run with it compares like with
like; docs/sweeps.md gives those commands as copylab.record.references declares them."""

from __future__ import annotations

import json
import shutil

import pytest

from copylab.paths import REFERENCES, ROOT
from copylab.record import references
from copylab.record.references import REFERENCE_SWEEPS, Reference, departures


def test_every_committed_reference_has_its_command():
    assert sorted(reference.directory for reference in REFERENCE_SWEEPS) == sorted(REFERENCES)


@pytest.mark.parametrize("reference", REFERENCE_SWEEPS, ids=lambda reference: reference.directory.name)
def test_a_reference_holds_the_grid_and_method_its_command_measures_today(reference):
    found = [difference.text() for difference in departures(reference)]
    assert found == [], f"measure it again: {reference.command()}"


def test_a_reference_of_another_grid_or_method_is_caught(tmp_path):
    """Negative control: a reference that holds its command's grid, with one size and the warm-up changed."""
    holding = next(reference for reference in REFERENCE_SWEEPS if not departures(reference))
    planted = tmp_path / holding.directory.name
    shutil.copytree(holding.directory, planted)
    manifest = json.loads((planted / "manifest.json").read_text())
    parameters = manifest["parameters"]
    parameters["warmup_s"] = parameters["warmup_s"] * 2
    parameters["rr_sizes" if parameters["rr_sizes"] and not parameters["sizes"] else "sizes"] = [8]
    parameters["side_sizes"] = []  # a subset of the sizes, or the manifest does not load
    (planted / "manifest.json").write_text(json.dumps(manifest))
    moved = Reference(planted, holding.given)
    assert {difference.part for difference in departures(moved)} == {"grid", "method"}


def test_docs_sweeps_gives_each_reference_s_command():
    assert references.commands_table() in (ROOT / "docs" / "sweeps.md").read_text(), (
        "docs/sweeps.md: paste the table `python -m copylab.record.references` prints"
    )
