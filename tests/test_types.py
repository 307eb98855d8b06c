"""copylab/ passes mypy as pyproject.toml configures it ([tool.mypy]: every function annotated, every body checked)."""

from __future__ import annotations

import subprocess
import sys

from copylab.paths import ROOT


def test_copylab_passes_the_type_checker():
    result = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-1000:]
