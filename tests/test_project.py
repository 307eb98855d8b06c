"""The project's own promises: pinned environments that agree, clean notebooks, a README that tells the truth."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copylab.paths import NOTEBOOKS, ROOT
from copylab.schema import COLUMN_NAMES


def requirement_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def environment_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.fullmatch(r"\s+- ([A-Za-z0-9_.-]+)\s*==?\s*([0-9][^\s#]*)\s*(#.*)?", line)
        if match and match.group(1) != "python":
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_requirements_and_environment_name_the_same_pinned_packages():
    requirements, environment = requirement_pins(), environment_pins()
    assert requirements, "requirements.txt pins nothing"
    assert requirements == environment


def test_every_requirement_is_pinned():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        assert not line or "==" in line, f"unpinned: {line}"


@pytest.mark.parametrize("notebook", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    assert all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in cells if cell["cell_type"] == "code")


def test_readme_documents_every_trials_column_and_both_commands():
    readme = (ROOT / "README.md").read_text()
    for column in COLUMN_NAMES:
        assert f"`{column}`" in readme, column
    assert "./inv report" in readme and "./inv test" in readme


def test_ci_runs_exactly_the_readme_test_command():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[-1].strip() in ("./inv test", "exec ./inv test")


def test_inv_is_idempotent_and_cheap_when_prepared():
    """A prepared ./inv installs nothing and costs little beside invoke itself (ratios in one run, medians)."""
    invoke = [str(Path(sys.executable).parent / "invoke"), "--list"]
    subprocess.run([str(ROOT / "inv"), "--list"], check=True, capture_output=True)
    ratios = []
    for _ in range(5):
        started = time.monotonic()
        result = subprocess.run([str(ROOT / "inv"), "--list"], capture_output=True, text=True)
        wrapped = time.monotonic() - started
        assert result.returncode == 0 and "run-sweep" in result.stdout
        assert result.stderr == ""  # nothing installed, nothing prepared
        started = time.monotonic()
        subprocess.run(invoke, check=True, capture_output=True)
        ratios.append(wrapped / (time.monotonic() - started))
    # The checks cost about as much as invoke's own start-up; a reinstall would cost dozens of times more.
    assert statistics.median(ratios) < 10
